/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The job worker: one dynamic background worker per running job.
 *
 * A worker takes its job by locking it (a session-level lock on the job id,
 * held until exit; cancel_ddl waits on the same lock) and marking it running,
 * then goes through the phases, each restartable from the job row alone:
 *
 *	planning           decide between chunks and one batch (recorded once)
 *	installing capture the change-capture triggers (capture.c), before any chunk
 *	backfilling        one transaction per chunk, each one a checkpoint
 *	catching up        recompute rows changed meanwhile (catchup.c)
 *	cutting over       one transaction: the last changes, populated, succeeded
 *	cleaning up        drop the triggers, forget the captured changes
 *
 * A rewrite of the driving table (VACUUM FULL, CLUSTER, ALTER TABLE ...
 * TYPE) changes every tuple id: the backfill starts over.
 *
 * The worker is connected as the bootstrap superuser (on PostgreSQL 15 a
 * worker cannot connect as a NOLOGIN role), but the job's SQL runs as the
 * role that submitted it, under SECURITY_RESTRICTED_OPERATION with a new GUC
 * nest level holding the submitter's captured settings, as REFRESH
 * MATERIALIZED VIEW does for the view's owner.
 *
 * Errors: one that a retry may cure (serialization failure, deadlock, lock
 * timeout, lack of resources, an administrator's cancel) ends the worker and
 * the scheduler starts another later; any other fails the job, records the
 * error and drops the placeholder, as a failed blocking statement would
 * leave nothing.  A cancel_ddl() interrupts the worker with SIGINT and then
 * does the clean-up itself, in its own transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "background_ddl.h"
#include "backfill.h"
#include "capture.h"
#include "catchup.h"
#include "compat.h"
#include "cutover.h"
#include "job_catalog.h"
#include "job_control.h"
#include "launcher.h"
#include "shared_state.h"
#include "worker.h"

/* Catch-up passes stop once a pass starts with at most this many changed rows */
#define CATCHUP_FINAL_BACKLOG	5000
/* ... or after this many passes: writes may outpace the worker */
#define CATCHUP_MAX_PASSES		5

static int	my_worker_slot = -1;
static int64 my_job_id = 0;

/*
 * Run as the job's role: SECURITY_RESTRICTED_OPERATION, and a new GUC nest
 * level with the submitter's settings.  Pair with JobRoleLeave in the same
 * transaction; an error unwinds both through transaction abort.
 */
void
JobRoleEnter(const BgddlJob *job, JobRoleContext *context)
{
	ListCell   *lc;

	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(job->owner_oid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role %u that submitted background DDL job " INT64_FORMAT " no longer exists",
						job->owner_oid, job->id)));

	GetUserIdAndSecContext(&context->saved_userid, &context->saved_sec_context);
	SetUserIdAndSecContext(job->owner_oid,
						   context->saved_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	context->guc_nest_level = NewGUCNestLevel();
	for (lc = list_head(job->settings); lc != NULL; lc = lnext(job->settings, lnext(job->settings, lc)))
	{
		const char *name = lfirst(lc);
		const char *value = lfirst(lnext(job->settings, lc));

		(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	/* Small batches only lose with parallel query; one big batch may gain. */
	if (OidIsValid(job->driving_oid))
		(void) set_config_option("max_parallel_workers_per_gather", "0",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
}

void
JobRoleLeave(JobRoleContext *context)
{
	AtEOXact_GUC(false, context->guc_nest_level);
	SetUserIdAndSecContext(context->saved_userid, context->saved_sec_context);
}

static void
WorkerDetach(int code, Datum arg)
{
	BgddlWorkerSlot *slot = &BgddlShared->workers[my_worker_slot];

	LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
	if (slot->in_use && slot->pid == MyProcPid)
		slot->in_use = false;
	LWLockRelease(BgddlShared->lock);
	ConditionVariableBroadcast(&BgddlShared->job_finished);
}

/* Has cancel_ddl asked this worker to stop? */
static bool
WorkerCancelRequested(void)
{
	bool		requested;

	LWLockAcquire(BgddlShared->lock, LW_SHARED);
	requested = BgddlShared->workers[my_worker_slot].cancel_requested;
	LWLockRelease(BgddlShared->lock);
	return requested;
}

/* Errors that a later attempt may not meet again */
static bool
ErrorIsTransient(int sqlerrcode)
{
	int			sqlclass = ERRCODE_TO_CATEGORY(sqlerrcode);

	return sqlclass == ERRCODE_TRANSACTION_ROLLBACK ||
		sqlclass == ERRCODE_INSUFFICIENT_RESOURCES ||
		sqlclass == ERRCODE_OPERATOR_INTERVENTION ||
		sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
}

/* Start a transaction for one step of the job */
static void
JobStepBegin(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

static void
JobStepEnd(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* The placeholder is gone (DROP, or DROP ... CASCADE of a base table) */
static bool
TargetDropped(const BgddlJob *job)
{
	return !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(job->target_oid));
}

/*
 * End the job as failed with the given message and remove its placeholder.
 * If the placeholder cannot be dropped (something was built on it), say so
 * in the error and keep it.  Capture triggers are left for the clean-up.
 */
static void
FailJob(BgddlJob *job, const char *message)
{
	MemoryContext context = CurrentMemoryContext;
	char	   *error = pstrdup(message);

	JobStepBegin("background_ddl: recording failure");
	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		DropPlaceholder(job->target_oid);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *drop_error;

		MemoryContextSwitchTo(context);
		drop_error = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		error = psprintf("%s (the placeholder was kept: %s)", message, drop_error->message);
	}
	PG_END_TRY();
	JobFinish(job->id, "failed", error, false, -1);
	if (job->capture_relids != NIL)
		JobSetCleanupPending(job->id, true);
	JobStepEnd();
}

/* End the job as cancelled because its placeholder was dropped; caller is in a step */
static void
CancelDroppedJob(BgddlJob *job)
{
	JobDeleteChunks(job->id);
	JobFinish(job->id, "cancelled", "the materialized view was dropped", false, -1);
	if (job->capture_relids != NIL)
		JobSetCleanupPending(job->id, true);
}

typedef void (*LockingStep) (BgddlJob *job);

/*
 * Run a step that takes strong locks on base tables (installing or dropping
 * triggers) in its own transaction with lock_timeout =
 * background_ddl.lock_timeout, retrying with backoff until it gets its
 * locks: a queued lock request then never stalls the tables' writers for
 * longer than that timeout.  The phase says "waiting for lock" meanwhile.
 */
static void
RunWithLockTimeout(BgddlJob *job, LockingStep step, const char *phase,
				   MemoryContext job_context)
{
	volatile long delay_ms = 10;

	for (;;)
	{
		volatile bool done = true;

		JobStepBegin(psprintf("background_ddl: %s", phase));
		MemoryContextSwitchTo(job_context);
		JobSetPhase(job->id, phase);
		(void) set_config_option("lock_timeout",
								 psprintf("%d", background_ddl_lock_timeout_ms),
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
		BeginInternalSubTransaction(NULL);
		/* What the step records in *job must outlive the subtransaction */
		MemoryContextSwitchTo(job_context);
		PG_TRY();
		{
			step(job);
			ReleaseCurrentSubTransaction();
		}
		PG_CATCH();
		{
			ErrorData  *error;

			MemoryContextSwitchTo(job_context);
			error = CopyErrorData();
			if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
				PG_RE_THROW();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			JobSetPhase(job->id, "waiting for lock");
			done = false;
		}
		PG_END_TRY();
		JobStepEnd();
		if (done)
			return;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 delay_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (WorkerCancelRequested())
			proc_exit(0);
		delay_ms = Min(delay_ms * 2, 1000);
	}
}

/*
 * The relfilenodes of the given relations, locking each in ACCESS SHARE
 * mode: a rewrite gives a relation a new one.
 */
static List *
RelationFileNumbers(List *relids)
{
	List	   *filenodes = NIL;
	ListCell   *lc;

	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), AccessShareLock);

		filenodes = lappend_oid(filenodes, BgddlRelFileNumber(rel));
		relation_close(rel, NoLock);
	}
	return filenodes;
}

/* Install the capture triggers and record them (a LockingStep) */
static void
InstallCaptureStep(BgddlJob *job)
{
	Relation	target = table_open(job->target_oid, AccessShareLock);
	JobRoleContext role;
	List	   *relids;
	List	   *filenodes;

	/* The relations as the job's role reads them (row security included) */
	JobRoleEnter(job, &role);
	relids = BackfillBaseRelations(BackfillJobQuery(target), job->driving_oid,
								   job->target_oid);
	JobRoleLeave(&role);
	table_close(target, NoLock);
	if (relids == NIL)
		elog(ERROR, "base relations of background DDL job " INT64_FORMAT " cannot be captured",
			 job->id);

	CaptureInstall(job, relids);
	filenodes = RelationFileNumbers(relids);
	JobRecordCapture(job->id, relids, filenodes);
	job->capture_relids = relids;
	job->capture_filenodes = filenodes;
}

/*
 * The driving table was rewritten: every tuple id changed, so start the
 * backfill over.  Caller is in a step; holds a lock on the driving table.
 */
static void
RestartBackfill(BgddlJob *job)
{
	Relation	target = table_open(job->target_oid, AccessExclusiveLock);
	Relation	driving = table_open(job->driving_oid, AccessShareLock);
	List	   *filenodes;

	ereport(LOG,
			(errmsg("background DDL job " INT64_FORMAT ": table \"%s\" was rewritten, restarting the backfill",
					job->id, RelationGetRelationName(driving))));
	TruncatePlaceholder(target);
	filenodes = RelationFileNumbers(job->capture_relids);
	job->blocks_total = RelationGetNumberOfBlocks(driving);
	JobResetBackfill(job->id, job->blocks_total, filenodes);
	table_close(driving, NoLock);
	table_close(target, NoLock);

	job->capture_filenodes = filenodes;
	job->next_block = 0;
	job->chunks_done = 0;
	job->rows_done = 0;
	job->catchup_passes = 0;
	CatchupForgetMaps();
}

/* Drop the triggers of an ended job and forget its captured changes */
static void
CleanUpJob(BgddlJob *job, MemoryContext job_context)
{
	RunWithLockTimeout(job, CaptureRemove, "cleaning up", job_context);
	JobStepBegin("background_ddl: cleaning up");
	JobForgetCapturedChanges(job->id);
	JobSetCleanupPending(job->id, false);
	JobStepEnd();
}

/*
 * Backfill chunk by chunk; returns false if the job ended meanwhile (its
 * placeholder was dropped).
 */
static bool
BackfillChunks(BgddlJob *job, MemoryContext job_context)
{
	bool		more = job->next_block < job->blocks_total || job->chunks_done == 0;

	while (more)
	{
		JobRoleContext role;
		BaseRelationChange change;

		CHECK_FOR_INTERRUPTS();
		if (WorkerCancelRequested())
			proc_exit(0);

		JobStepBegin("background_ddl: backfilling a chunk");
		MemoryContextSwitchTo(job_context);
		change = CatchupCheckBaseRelations(job);
		if (TargetDropped(job) || change == BASE_DROPPED)
		{
			CancelDroppedJob(job);
			JobStepEnd();
			return false;
		}
		if (change == BASE_DRIVING_REWRITTEN)
		{
			RestartBackfill(job);
			JobStepEnd();
			more = true;
			continue;
		}
		JobRoleEnter(job, &role);
		more = BackfillNextChunk(job);
		JobRoleLeave(&role);
		JobStepEnd();
	}
	return true;
}

/*
 * Catch-up passes until the backlog of changed rows is small, or after a
 * bounded number of passes (writes may outpace us: the final pass in the
 * cut-over then takes the rest).  Returns false if the job ended meanwhile
 * or must restart its backfill (*restart).
 */
static bool
CatchUp(BgddlJob *job, MemoryContext job_context, bool *restart)
{
	*restart = false;
	while (job->catchup_passes < CATCHUP_MAX_PASSES)
	{
		bool		whole_table;
		BaseRelationChange stopped_by;
		int			changed;

		job->catchup_passes++;
		JobStepBegin("background_ddl: catching up");
		JobSetPhase(job->id, "catching up");
		JobStepEnd();

		changed = CatchupPass(job, job_context, &whole_table, &stopped_by);
		if (changed < 0)
		{
			JobStepBegin("background_ddl: stopping the catch-up");
			MemoryContextSwitchTo(job_context);
			if (stopped_by == BASE_DRIVING_REWRITTEN && !TargetDropped(job))
			{
				RestartBackfill(job);
				*restart = true;
			}
			else
				CancelDroppedJob(job);
			JobStepEnd();
			return false;
		}
		if (whole_table || changed <= CATCHUP_FINAL_BACKLOG)
			break;
	}
	return true;
}

/* Take the job through its remaining phases */
static void
RunJob(int64 job_id, MemoryContext job_context)
{
	BgddlJob	job;
	bool		claimed;

	JobStepBegin("background_ddl: starting job");
	MemoryContextSwitchTo(job_context);
	claimed = JobClaim(job_id, &job);
	JobStepEnd();
	if (!claimed)
		return;

	/* An ended job whose capture triggers are left: only clean up */
	if (strcmp(job.state, "running") != 0)
	{
		CleanUpJob(&job, job_context);
		return;
	}
	if (job.attempts > background_ddl_max_attempts)
	{
		FailJob(&job, psprintf("the job was started %d times without finishing",
							   job.attempts - 1));
		return;
	}

	JobStepBegin("background_ddl: checking the job");
	MemoryContextSwitchTo(job_context);
	if (TargetDropped(&job))
	{
		CancelDroppedJob(&job);
		claimed = false;
	}
	else if (!job.planned)
	{
		JobRoleContext role;

		JobSetPhase(job_id, "planning");
		JobRoleEnter(&job, &role);
		BackfillPlan(&job);
		JobRoleLeave(&role);
	}
	JobStepEnd();
	if (!claimed)
		return;

	if (OidIsValid(job.driving_oid))
	{
		bool		restart = true;

		/* Capture first: every change after this is logged */
		if (job.capture_relids == NIL)
			RunWithLockTimeout(&job, InstallCaptureStep, "installing capture", job_context);

		while (restart)
		{
			JobStepBegin("background_ddl: backfilling");
			JobSetPhase(job_id, "backfilling");
			JobStepEnd();
			if (!BackfillChunks(&job, job_context))
				return;
			if (!CatchUp(&job, job_context, &restart) && !restart)
				return;
		}
	}
	else
	{
		JobStepBegin("background_ddl: backfilling");
		JobSetPhase(job_id, "backfilling");
		JobStepEnd();
	}

	CutoverMatView(&job);
	ereport(LOG,
			(errmsg("background DDL job " INT64_FORMAT " for %s succeeded",
					job_id, job.target_name)));
	if (job.capture_relids != NIL)
		CleanUpJob(&job, job_context);
}

void
BgddlWorkerMain(Datum main_arg)
{
	BgddlWorkerSlot *slot;
	Oid			database_oid;
	bool		cancel_requested;
	LOCKTAG		job_lock;
	MemoryContext job_context;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	my_worker_slot = DatumGetInt32(main_arg);
	slot = &BgddlShared->workers[my_worker_slot];

	/* Publish our pid before looking at cancel_requested: see cancel_ddl */
	LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
	slot->pid = MyProcPid;
	database_oid = slot->database_oid;
	my_job_id = slot->job_id;
	cancel_requested = slot->cancel_requested;
	LWLockRelease(BgddlShared->lock);
	on_shmem_exit(WorkerDetach, (Datum) 0);
	if (cancel_requested)
		proc_exit(0);

	BackgroundWorkerInitializeConnectionByOid(database_oid, InvalidOid, 0);
	pgstat_report_appname(psprintf("background_ddl job " INT64_FORMAT, my_job_id));

	/* One worker per job, and none while cancel_ddl cleans it up */
	JobLockTagSet(&job_lock, database_oid, my_job_id);
	if (LockAcquire(&job_lock, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		proc_exit(0);
	if (WorkerCancelRequested())
		proc_exit(0);

	job_context = AllocSetContextCreate(TopMemoryContext, "background_ddl job",
										ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		RunJob(my_job_id, job_context);
	}
	PG_CATCH();
	{
		ErrorData  *error;
		BgddlJob	job;
		bool		found;

		MemoryContextSwitchTo(job_context);
		error = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();

		if (WorkerCancelRequested())
			proc_exit(0);		/* cancel_ddl cleans up */

		if (ErrorIsTransient(error->sqlerrcode))
		{
			ereport(LOG,
					(errmsg("background DDL job " INT64_FORMAT " interrupted, will be retried: %s",
							my_job_id, error->message)));
			proc_exit(1);
		}

		ereport(LOG,
				(errmsg("background DDL job " INT64_FORMAT " failed: %s",
						my_job_id, error->message)));
		JobStepBegin("background_ddl: loading failed job");
		MemoryContextSwitchTo(job_context);
		found = JobLoad(my_job_id, &job, false);
		JobStepEnd();
		if (found && strcmp(job.state, "running") == 0)
			FailJob(&job, error->message);
	}
	PG_END_TRY();

	proc_exit(0);
}
