/*-------------------------------------------------------------------------
 *
 * job_step.c
 *	  A step of a job: one transaction of a job worker, with everything that
 *	  must be set up and torn down around it.
 *
 * Every unit of a job's work (a chunk, a catch-up batch, the cut-over, a
 * catalog update) is a step:
 *
 *	JobStepBegin	start a transaction (READ COMMITTED or REPEATABLE READ),
 *					push a snapshot, switch to the step's memory context,
 *					report the activity; refuse to start while a cancel_ddl
 *					or pause_ddl waits for the job's workers to let go
 *	JobQueryBegin	(inside a step) become the job's role for its own
 *					statements: see job_identity.c
 *	JobStepEnd		commit (after the worker's commit hook), reset the
 *					step's memory context
 *	JobStepAbort	after an error: abort, reset, disarm the timeout
 *
 * The step's memory context is reset after every step, so a worker's memory
 * stays the size of one step, whatever the size of the table: whatever must
 * outlive a step is copied into JobContext(), which holds only what lives
 * for the whole job.
 *
 * This module is the bottom layer of the worker: it knows transactions,
 * snapshots, memory, identity and shared memory, and nothing of jobs'
 * phases or kinds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "catalog/settings.h"
#include "engine/job_messages.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "pg/pg_lock.h"

volatile sig_atomic_t JobShutdownRequested = false;
volatile sig_atomic_t JobCancelSignalled = false;
JobGiveBack JobGivingBack = {false, 0, NULL, JOB_WAIT_NONE, false};

static int64 step_job_id = 0;
static JobStepCommitHook before_commit = NULL;
static MemoryContext job_context = NULL;
static MemoryContext step_context = NULL;
static bool step_in_progress = false;
static bool query_in_progress = false;
static JobQueryContext query_context;
static uint64 acknowledged_generation = 0;
static bool job_stopping = false;	/* only the steps that record the stop remain */
static bool step_recording = false; /* JobStepBeginRecording's step: interrupts held */
static bool lock_wait_failed = false;	/* JobStepLockRelation gave up in this step */

/*
 * Create the job's and the steps' memory contexts; once per worker.
 * commit_hook runs in every step's transaction just before it commits (the
 * worker writes the step's messages there).
 */
void
JobStepsInit(int64 job_id, JobStepCommitHook commit_hook)
{
	step_job_id = job_id;
	before_commit = commit_hook;
	job_context = AllocSetContextCreate(TopMemoryContext, "background_ddl job",
										ALLOCSET_DEFAULT_SIZES);
	step_context = AllocSetContextCreate(job_context, "background_ddl step",
										 ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(job_context);
	JobControlAcknowledge();
}

/*
 * The worker is stopping (shutdown, or giving its slot back): the steps that
 * record it must run, whatever asked it to stop.
 */
void
JobStepsStopping(void)
{
	job_stopping = true;
}

/* Memory that lives for the whole job */
MemoryContext
JobContext(void)
{
	return job_context;
}

/*
 * Has a cancel_ddl or pause_ddl asked this job's workers to let go since
 * this worker last did (JobControlAcknowledge)?  A request that has already
 * ended still counts: its interrupt may be what stopped us.  With
 * outstanding_only, only requests whose transactions are still running.
 */
static bool
ControlRequested(bool outstanding_only)
{
	JobSlot *slot = MyJobSlot;
	bool		requested;

	if (slot == NULL)
		return false;
	LWLockAcquire(JobShared->lock, LW_SHARED);
	requested = slot->control_requests > 0 ||
		(!outstanding_only && slot->control_generation != acknowledged_generation);
	LWLockRelease(JobShared->lock);
	return requested;
}

bool
JobControlPending(void)
{
	return ControlRequested(false);
}

bool
JobControlOutstanding(void)
{
	return ControlRequested(true);
}

/* This worker has let go and come back: the requests so far are answered */
void
JobControlAcknowledge(void)
{
	if (MyJobSlot == NULL)
		return;
	LWLockAcquire(JobShared->lock, LW_SHARED);
	acknowledged_generation = MyJobSlot->control_generation;
	LWLockRelease(JobShared->lock);
}

/* Is the worker waiting for something it published (JobStepWaitingFor)? */
static bool published_waiting = false;

bool
JobStepIsWaiting(void)
{
	return published_waiting;
}

/*
 * Say what the job waits for, and why (a standby, the rate limit, a Citus
 * node), in pg_stat_background_ddl.waiting_on and the worker's activity,
 * until the next call; NULL: nothing any more.  The job's first worker
 * counts the time in the job's waits (pg_stat_background_ddl.waited).
 */
static void
PublishWaiting(JobWaitReason reason, const char *what, const char *standby)
{
	char		activity[JOB_WAITING_FOR_LEN + 32];

	published_waiting = what != NULL;
	if (what != NULL)
	{
		snprintf(activity, sizeof(activity), "background_ddl: waiting for %s", what);
		pgstat_report_activity(STATE_RUNNING, activity);
	}
	if (JobIsFirstWorker())
	{
		if (what != NULL)
			CatalogJobWaitBegin(reason);
		else
			CatalogJobWaitEnd();
	}
	JobPublishWaiting(what, standby);
}

void
JobStepWaitingFor(JobWaitReason reason, const char *what)
{
	PublishWaiting(reason, what, NULL);
}

/* The same, waiting for a standby (its name is shown to fewer readers) */
void
JobStepWaitingForStandby(const char *what, const char *standby)
{
	PublishWaiting(JOB_WAIT_REPLICA_LAG, what, standby);
}

/*
 * Start a step.  Errors out (before starting anything) if the job must let
 * go: a control request is pending, or the server is shutting down.
 */
void
JobStepBegin(const char *activity, JobStepIsolation isolation)
{
	bool		for_work;

	Assert(!step_in_progress);
	CHECK_FOR_INTERRUPTS();
	if (!job_stopping && !step_recording && (JobShutdownRequested || JobControlPending()))
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("background DDL job %lld is letting go of its work",
						(long long) step_job_id)));
	if (!job_stopping && !step_recording && JobGiveBackRequested(&for_work))
	{
		if (!for_work)
			CatalogJobCountRetry(JOB_RETRY_FAIR_SHARE);
		JobStepGiveBack(GetCurrentTimestamp(), for_work ? JOB_READY_YIELD_REASON : JOB_FAIR_SHARE_REASON,
						JOB_WAIT_NONE, false);
	}

	lock_wait_failed = false;
	JobCancelSignalled = false;

	/* As a backend between statements: a reload reaches the next step */
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (isolation == STEP_REPEATABLE_READ || isolation == STEP_REPEATABLE_READ_LATER)
		XactIsoLevel = XACT_REPEATABLE_READ;
	if (isolation == STEP_READ_COMMITTED || isolation == STEP_REPEATABLE_READ)
		JobStepTakeSnapshot();
	MemoryContextSwitchTo(step_context);
	pgstat_report_activity(STATE_RUNNING, activity);
	step_in_progress = true;
}

/*
 * Start a step that records work the job has already done outside its own
 * transactions (a job submitted on another server), which must not be
 * lost: a pending control request, give-back or shutdown does not stop it,
 * and interrupts wait until JobStepEnd.  The next step lets go.
 */
void
JobStepBeginRecording(const char *activity)
{
	HOLD_INTERRUPTS();
	step_recording = true;
	JobStepBegin(activity, STEP_READ_COMMITTED);
}

/*
 * Take the step's snapshot (the transaction's, in REPEATABLE READ), for a
 * step begun without one.  A step that locks what it reads first takes it
 * after its locks: TRUNCATE and table rewrites are not MVCC-safe, so a
 * snapshot taken before waiting behind one would see the relation empty.
 */
void
JobStepTakeSnapshot(void)
{
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* Commit the step and forget its memory */
void
JobStepEnd(void)
{
	Assert(step_in_progress && !query_in_progress);
	if (before_commit != NULL)
		before_commit(step_job_id);
	/* A utility that commits inside (CREATE INDEX CONCURRENTLY) pops its own */
	if (ActiveSnapshotSet())
		PopActiveSnapshot();
	CommitTransactionCommand();
	JobLiveRowsCommitted();
	JobClaimSettled();
	step_in_progress = false;
	/*
	 * The worker's statistics (rows written, WAL, I/O) reach the server's
	 * views and autovacuum as a backend's do between its transactions (at
	 * most once a second), not only when it exits
	 */
	pgstat_report_stat(false);
	MemoryContextSwitchTo(job_context);
	MemoryContextReset(step_context);
	pgstat_report_activity(STATE_IDLE, NULL);
	if (step_recording)
	{
		step_recording = false;
		RESUME_INTERRUPTS();
	}
}

/*
 * End a step that a crash may cost (a chunk of the backfill), pipelined:
 * its commit does not wait for the WAL to be flushed (synchronous_commit =
 * off), but the commit of the step before it that ended so is flushed
 * first (the WAL writer has mostly done it meanwhile), so that a crash
 * loses this step at most, as with a flush at every commit.  A step that
 * changed what pg_stat_background_ddl shows (shown: it wrote the job row)
 * ends with a flush, as other sessions see its commit before any flush:
 * what the view showed is never lost with a crash.  Where commits wait for
 * a synchronous standby, or already do not wait for the flush, a plain
 * JobStepEnd.
 */
void
JobStepEndPipelined(bool shown)
{
	static XLogRecPtr last_commit = InvalidXLogRecPtr;

	if (shown || synchronous_commit < SYNCHRONOUS_COMMIT_LOCAL_FLUSH ||
		(SyncRepRequested() && SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0'))
	{
		JobStepEnd();
		return;
	}
	if (!XLogRecPtrIsInvalid(last_commit))
		XLogFlush(last_commit);
	(void) set_config_option("synchronous_commit", "off", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	JobStepEnd();
	last_commit = XactLastCommitEnd;
}

/*
 * Clean up after an error raised in (or between) steps; the caller has
 * copied the error data out of the step's memory.
 */
void
JobStepAbort(void)
{
	disable_all_timeouts(false);
	JobMessagesDiscard();
	QueryCancelPending = false;
	HOLD_INTERRUPTS();
	AbortOutOfAnyTransaction();
	RESUME_INTERRUPTS();
	/*
	 * The worker's own role again: a step that committed transactions
	 * inside (CREATE INDEX CONCURRENTLY, run as the job's role) began the
	 * one that failed as that role, and the abort restored that
	 */
	SetUserIdAndSecContext(GetSessionUserId(), 0);
	JobLiveRowsAborted();
	JobClaimSettled();
	JobPublishParallelWorkers(0);
	/* What it waited for is no longer what it waits for (an ERROR resets the interrupt holdoff) */
	JobPublishWaiting(NULL, NULL);
	JobPublishLockWait(InvalidOid, NoLock);
	JobPublishSnapshotWait(InvalidTransactionId);
	CatalogJobWaitEnd();
	step_recording = false;
	step_in_progress = false;
	query_in_progress = false;
	MemoryContextSwitchTo(job_context);
	MemoryContextReset(step_context);
	pgstat_report_activity(STATE_IDLE, NULL);
}

bool
JobStepInProgress(void)
{
	return step_in_progress;
}

/* Did the look in progress begin a step of its own? */
static bool look_in_own_step = false;

/*
 * Begin a short look at the catalogs (the job's limits, the standbys): in a
 * step of its own between steps (doing activity), or in the caller's step,
 * under a snapshot for the look alone (a step that cannot be cut in
 * batches, and holds no snapshot while it waits).  JobStepLookEnd ends it.
 */
void
JobStepLookBegin(const char *activity)
{
	look_in_own_step = !step_in_progress;
	if (look_in_own_step)
		JobStepBegin(activity, STEP_READ_COMMITTED);
	else
		PushActiveSnapshot(GetTransactionSnapshot());
}

void
JobStepLookEnd(void)
{
	if (look_in_own_step)
		JobStepEnd();
	else
		PopActiveSnapshot();
}

/*
 * Lock a relation that other roles' sessions use, in a job's step, without
 * making them wait for us more than background_ddl.lock_timeout: asked for
 * without queueing, again and again, for as long as patience_ms or until
 * the transactions that held it have all ended while others hold it now
 * (PgLockRelationWithin: a steady stream of short transactions, which never
 * leaves it free); then in the queue, for at most lock_timeout (so such a
 * stream cannot starve the job, and nobody queued behind it waits longer
 * than that).  If it
 * still does not come, the step fails with ERRCODE_LOCK_NOT_AVAILABLE and
 * JobStepLockWaitFailed() says so: the caller tries again later
 * (JobRunLockingStep), or the worker gives its slot back.  The job shows
 * the lock it asks for, and who holds it (pg_stat_background_ddl).  Outside
 * a job's step (a session that cleans up for a job: DROP EXTENSION, a DROP
 * of a job's object), the lock is asked for the same way, and the statement
 * fails with ERRCODE_LOCK_NOT_AVAILABLE if it does not come: a session of
 * ours never queues for a lock on a user's table longer than lock_timeout.
 */
void
JobStepLockRelation(Oid relid, LOCKMODE mode, long patience_ms)
{
	bool		counts_wait = step_in_progress && JobIsFirstWorker();

	if (step_in_progress)
		JobPublishLockWait(relid, mode);
	if (counts_wait)
		CatalogJobWaitBegin(JOB_WAIT_LOCK);
	if (!PgLockRelationWithin(relid, mode, patience_ms, true))
	{
		int			nest_level = NewGUCNestLevel();

		(void) set_config_option("lock_timeout", psprintf("%d", background_ddl_lock_timeout_ms),
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		lock_wait_failed = step_in_progress;
		LockRelationOid(relid, mode);
		lock_wait_failed = false;
		AtEOXact_GUC(true, nest_level);
	}
	if (step_in_progress)
		JobPublishLockWait(InvalidOid, NoLock);
	if (counts_wait)
		CatalogJobWaitEnd();
}

/*
 * Lock a partitioned table and every partitioned table below it, parents
 * before children (find_all_inheritors' order, PostgreSQL's), each as
 * JobStepLockRelation locks; anything else (a plain table, a relation
 * gone) is not locked here.  A caller that then locks partitions in mode
 * holds their parents first: a session reaching a partition through the
 * parent (a writer moving a row, a reader, DETACH PARTITION) either got
 * there before us, and we wait for it at the parent, or waits for us
 * there, holding no partition; no cycle.
 */
void
JobStepLockTree(Oid relid, LOCKMODE mode, long patience_ms)
{
	ListCell   *lc;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return;
	JobStepLockRelation(relid, mode, patience_ms);
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		if (lfirst_oid(lc) != relid &&
			get_rel_relkind(lfirst_oid(lc)) == RELKIND_PARTITIONED_TABLE)
			JobStepLockRelation(lfirst_oid(lc), mode, patience_ms);
	}
}

/* Did the step fail because JobStepLockRelation could not get its lock? */
bool
JobStepLockWaitFailed(void)
{
	return lock_wait_failed;
}

/*
 * Run the job's own statements from here to JobQueryEnd (same step, or
 * same transaction of the submitting session), as role (the submit's
 * current user; a materialized view's owner for REFRESH).
 */
void
JobQueryBegin(Oid role, bool small_batches)
{
	Assert(!query_in_progress);
	JobQueryEnter(role, &query_context, small_batches);
	JobMessagesCatch(true);
	query_in_progress = true;
}

void
JobQueryEnd(void)
{
	Assert(query_in_progress);
	JobMessagesCatch(false);
	JobQueryLeave(&query_context);
	query_in_progress = false;
}

/* The worker gives its slot back (see JobStepGiveBack), once it has stopped */
void
JobStepGivingBack(TimestampTz until, const char *why, JobWaitReason waits_for)
{
	JobGivingBack.giving_back = true;
	JobGivingBack.until = until;
	JobGivingBack.why = MemoryContextStrdup(job_context, why);
	JobGivingBack.waits_for = waits_for;
	JobGivingBack.said_before = false;
}

/*
 * Give the worker slot back, between steps: the job is queued again, and no
 * worker starts on it before until (it would only wait: for its rate limit,
 * a lock; or the scheduler wants the slot for another role's job).  Raises
 * an error that the worker's loop recognises (JobGivingBack): it records
 * this as a clean stop, not an attempt, and exits.
 */
void
JobStepGiveBack(TimestampTz until, const char *why, JobWaitReason waits_for, bool said_before)
{
	JobStepGivingBack(until, why, waits_for);
	JobGivingBack.said_before = said_before;
	ereport(ERROR,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("background DDL job %lld gives its worker back: %s",
					(long long) step_job_id, why)));
}

/* Sleep between steps, waking for interrupts, control requests and shutdown */
void
JobStepSleep(long milliseconds)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 milliseconds, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

static void HoldHere(const char *point);

/*
 * A point where tests can hold the worker (or a session, at a point of
 * its own, "statement: before its wait"): when
 * background_ddl.test_hold_point names it, wait for a shared lock on the
 * advisory lock that pg_advisory_lock(BGDDL_TEST_HOLD_KEY) takes, so that a
 * test session holding that lock keeps the worker exactly here.
 */
void
JobStepHoldPoint(const char *point)
{
	if (background_ddl_test_hold_point == NULL ||
		strcmp(background_ddl_test_hold_point, point) != 0)
		return;
	HoldHere(point);
}

/* Does background_ddl.test_fault ask this worker to simulate this fault? */
bool
JobStepTestFault(const char *fault)
{
	return background_ddl_test_fault != NULL && strcmp(background_ddl_test_fault, fault) == 0;
}

/*
 * The hold point "chunk N": before the first chunk this worker takes once N
 * chunks are done (helpers add theirs, so the count can pass N between two
 * of this worker's chunks).  Once per worker.
 */
void
JobStepHoldAtChunk(int64 chunks_done)
{
	static bool held = false;
	long		chunk;
	char	   *end;

	if (held || background_ddl_test_hold_point == NULL ||
		strncmp(background_ddl_test_hold_point, "chunk ", 6) != 0)
		return;
	chunk = strtol(background_ddl_test_hold_point + 6, &end, 10);
	if (*end != '\0' || chunks_done < chunk)
		return;
	held = true;
	HoldHere(background_ddl_test_hold_point);
}

/*
 * Wait there for as long as the test holds the lock: without the
 * lock_timeout that a step taking its locks as others use them sets
 * (JobRunLockingStep), which would undo the step held
 */
static void
HoldHere(const char *point)
{
	LOCKTAG		tag;
	int			saved_timeout = LockTimeout;

	if (IsBackgroundWorker)
		ereport(LOG,
				(errmsg("background DDL job %lld reached test hold point \"%s\"",
						(long long) step_job_id, point)));
	else
		ereport(LOG,
				(errmsg("a session reached test hold point \"%s\"", point)));
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, BGDDL_TEST_HOLD_KEY, 1);
	LockTimeout = 0;
	PG_TRY();
	{
		(void) LockAcquire(&tag, ShareLock, true, false);
	}
	PG_FINALLY();
	{
		LockTimeout = saved_timeout;
	}
	PG_END_TRY();
	LockRelease(&tag, ShareLock, true);
}
