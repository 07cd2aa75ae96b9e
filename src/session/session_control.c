/*-------------------------------------------------------------------------
 *
 * session_control.c
 *	  Holding, cancelling and waiting for a job from a session: for
 *	  cancel_ddl, pause_ddl and resume_ddl, for a DROP of a job's target, and
 *	  for wait_ddl, await_ddl and the session's own statements that wait for
 *	  its jobs (session_order.c).
 *
 * cancel_ddl and pause_ddl are transactional, like the submit.  They ask the
 * job's workers to let go of it (job_xact.c: the request lasts until the end
 * of the caller's transaction), interrupting what they run, wait on the job
 * lock until they have, and then move the job to cancelling or paused in
 * the caller's transaction.  A worker that let go waits for the caller's
 * transaction to end: if it rolled back, the worker goes on from where it
 * was, and this costs the job no attempt; if it committed, the worker stops
 * (paused), or removes everything the job created and marks it cancelled.
 *
 * A session that waits for a job must never wait for itself: the job may
 * wait for the session's transaction (an index build waits for older
 * snapshots and for writers; a job asks for locks the transaction may
 * hold), directly or through the jobs it starts after and the processes
 * they wait for.  PostgreSQL's deadlock detector sees lock waits only, and
 * the session waits on a condition variable: so the wait looks at every
 * turn whether that is the case, and ends in an error if it is.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/lock.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "engine/job_group.h"
#include "engine/job_shmem.h"
#include "engine/job_xact.h"
#include "engine/kind.h"
#include "kinds/kind_placeholder.h"
#include "pg/pg_compat.h"
#include "pg/pg_lock.h"
#include "pg/pg_relation.h"
#include "session/session_control.h"

/*
 * Make the job's workers let go of it until the current transaction ends,
 * and wait until they have.  Returns the job as it is then in *job; false
 * if there is no such job, or it had ended or was being cancelled
 * meanwhile.
 */
bool
SessionHoldJob(int64 job_id, BgddlJob *job)
{
	LOCKTAG		job_lock;

	JobXactHold(job_id);
	JobLockTagSet(&job_lock, MyDatabaseId, job_id);
	(void) LockAcquire(&job_lock, JOB_LOCK_CONTROL, false, false);
	return CatalogJobLoad(job_id, job, true) && !JobStateIsFinal(job->state) &&
		job->state != JOB_STATE_CANCELLING;
}

/*
 * Cancel an unfinished job in the current transaction.  Where the kind
 * allows it, everything the job created is removed right here, but for
 * what its worker cleans up right after the commit (capture triggers: they
 * need strong locks on other roles' tables) and the job is cancelled;
 * otherwise it is cancelling until its worker has removed the rest.  reason
 * (may be NULL) is recorded as the job's error; with target_dropped, the
 * caller drops the target.  Returns false if the job had already ended or
 * was being cancelled.  Caller has checked the permission.
 */
bool
SessionCancelJob(int64 job_id, const char *reason, bool target_dropped)
{
	BgddlJob	job;
	const KindRoutine *routine;
	JobError	error = {reason, NULL, NULL, NULL};

	if (!SessionHoldJob(job_id, &job))
		return false;
	routine = KindRoutineForJob(&job);
	JobXactWakeScheduler();
	JobGroupCancel(&job, JOB_STATE_CANCELLED, 0);
	/* A job this session cancels: its later statements need not wait for it */
	JobXactForgetAtCommit(job_id);
	if (routine->discards_in_any_transaction != NULL &&
		!routine->discards_in_any_transaction(&job))
	{
		CatalogJobSetState(job_id, JOB_STATE_CANCELLING);
		JobXactNotify(job_id, JOB_STATE_CANCELLING);
		if (reason != NULL)
			CatalogJobRecordError(job_id, &error, false);
		return true;
	}
	routine->discard(&job, target_dropped);
	CatalogJobFinish(job_id, JOB_STATE_CANCELLED, reason ? &error : NULL, false, -1, NULL);
	JobXactNotify(job_id, JOB_STATE_CANCELLED);
	return true;
}

/*
 * The unfinished job whose target a DROP names, or 0, with the target in
 * *target_oid.  A target is locked (ACCESS SHARE, as a reader would) before
 * its job is cancelled, so that a concurrent rename cannot make the DROP
 * cancel one job and drop another object: the name is looked up again under
 * the lock.  Only the owner's DROP cancels (anyone else gets the DROP's own
 * permission error).
 */
static int64
DroppedTargetJob(RangeVar *name, Oid *target_oid)
{
	Oid			relid = RangeVarGetRelid(name, NoLock, true);

	*target_oid = InvalidOid;
	if (!OidIsValid(relid) || !PgRelationOwnerCheck(relid, GetUserId()) ||
		CatalogJobBuilding(relid) == 0)
		return 0;
	relid = RangeVarGetRelid(name, AccessShareLock, true);
	if (!OidIsValid(relid) || !PgRelationOwnerCheck(relid, GetUserId()))
		return 0;
	*target_oid = relid;
	return CatalogJobBuilding(relid);
}

/*
 * DROP of a job's target cancels its job, in the dropping transaction, and
 * the DROP drops the target.  A placeholder that stands for an object of
 * another type (a table or index being built) is a materialized view: if
 * every object the DROP names is such a placeholder, *stmt becomes a DROP
 * MATERIALIZED VIEW of them (the caller runs it through the rest of the
 * ProcessUtility chain, so that event triggers and pg_stat_statements see
 * it, with the command tag of the original); if only some are, those are
 * dropped with their jobs and taken out of it, which PostgreSQL would
 * otherwise refuse ("is not a table").  Returns false if the caller must
 * report the original command tag itself.
 */
bool
SessionCancelDroppedTargets(DropStmt **stmt)
{
	ListCell   *lc;
	List	   *left = NIL;
	List	   *placeholders = NIL;
	List	   *placeholder_jobs = NIL;

	if (!KindStandsFor((*stmt)->removeType) || CatalogLookup() == NULL)
		return false;
	foreach(lc, (*stmt)->objects)
	{
		Oid			target_oid;
		int64		job_id = DroppedTargetJob(makeRangeVarFromNameList((List *) lfirst(lc)),
											  &target_oid);
		BgddlJob	job;

		if (job_id != 0 && CatalogJobLoad(job_id, &job, true) &&
			KindRoutineForJob(&job)->replaces_placeholder &&
			KindRoutineForJob(&job)->stands_for == (*stmt)->removeType &&
			KindIsPlaceholder(target_oid))
		{
			placeholders = lappend(placeholders, lfirst(lc));
			placeholder_jobs = lappend(placeholder_jobs,
									   memcpy(palloc(sizeof(int64)), &job_id, sizeof(int64)));
			continue;
		}
		/* The DROP drops the target: no longer the extension's (pg_relation.c) */
		if (job_id != 0 && SessionCancelJob(job_id, "the target was dropped", true))
			PgRelationSetExtensionMember(target_oid, CatalogRequire()->extension_oid, false);
		left = lappend(left, lfirst(lc));
	}
	if (placeholders == NIL)
		return false;
	/* Every one a placeholder: the DROP drops them, as materialized views */
	foreach(lc, placeholder_jobs)
		(void) SessionCancelJob(*(int64 *) lfirst(lc), "the target was dropped", left == NIL);
	*stmt = copyObject(*stmt);
	if (left == NIL)
	{
		(*stmt)->removeType = KIND_PLACEHOLDER_OBJECT_TYPE;
		(*stmt)->concurrent = false;
		return true;
	}
	(*stmt)->objects = left;
	return false;
}

/* Processes a deadlock check follows at most (from a job's workers) */
#define WAIT_CHECK_MAX_PROCESSES	64

/* Does this transaction hold a lock on the relation that conflicts with mode? */
static bool
HoldsConflictingLock(Oid relid, LOCKMODE mode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	for (LOCKMODE held = AccessShareLock; held <= AccessExclusiveLock; held++)
	{
		if (DoLockModesConflict(mode, held) && LockHeldByMe(&tag, held))
			return true;
	}
	return false;
}

/* Add a process to follow, once */
static void
FollowProcess(List **pids, int pid)
{
	if (pid != 0 && pid != MyProcPid && list_length(*pids) < WAIT_CHECK_MAX_PROCESSES)
		*pids = list_append_unique_int(*pids, pid);
}

/* Add the processes that hold a lock on the relation conflicting with mode */
static void
FollowLockHolders(List **pids, Oid relid, LOCKMODE mode)
{
	LOCKTAG		tag;
	VirtualTransactionId *holders;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	holders = GetLockConflicts(&tag, mode, NULL);
	for (; VirtualTransactionIdIsValid(*holders); holders++)
		FollowProcess(pids, PgTransactionPid(*holders));
}

/*
 * Add the processes that hold a snapshot as old as limit_xmin, which a
 * job's index build waits to go (this one's, in the moment of its look at
 * the job, is no wait: the caller let go of its own, CheckMayWait)
 */
static void
FollowOlderSnapshotHolders(List **pids, TransactionId limit_xmin)
{
	int			count;
	VirtualTransactionId *holders = PgOlderSnapshotHolders(limit_xmin, &count);

	for (int i = 0; i < count; i++)
		FollowProcess(pids, PgTransactionPid(holders[i]));
}

/*
 * Does a wait for the job wait for this transaction?  The job, the jobs it
 * starts after and the processes that block their workers (the lock
 * queues, pg_blocking_pids; the lock a job asks for without queueing; the
 * older snapshots an index build waits to go) are followed; true if they
 * lead here, with *why saying how.
 */
static bool
WaitLeadsHere(int64 job_id, List *awaited_jobs, char **why)
{
	List	   *pids = NIL;
	ListCell   *lc;
	int			waiter;

	foreach(lc, awaited_jobs)
	{
		int64		awaited = *(int64 *) lfirst(lc);
		pid_t		workers[WAIT_CHECK_MAX_PROCESSES];
		Oid			lock_relid;
		int			lock_mode;
		TransactionId snapshot_limit;
		int			count = JobWorkersOf(MyDatabaseId, awaited, workers, lengthof(workers),
										 &lock_relid, &lock_mode, &snapshot_limit);

		if (OidIsValid(lock_relid) && HoldsConflictingLock(lock_relid, lock_mode))
		{
			*why = psprintf("Job %lld asks for a lock on \"%s\" that this transaction holds.",
							(long long) awaited, get_rel_name(lock_relid));
			return true;
		}
		for (int i = 0; i < count; i++)
			FollowProcess(&pids, workers[i]);
		if (OidIsValid(lock_relid))
			FollowLockHolders(&pids, lock_relid, lock_mode);
		if (TransactionIdIsValid(snapshot_limit))
			FollowOlderSnapshotHolders(&pids, snapshot_limit);
	}
	waiter = PgWaitChainReaches(pids, MyProcPid, WAIT_CHECK_MAX_PROCESSES);
	if (waiter != 0)
	{
		*why = psprintf("Process %d, which job %lld waits for, waits for this transaction.",
						waiter, (long long) job_id);
		return true;
	}
	return false;
}

/* Is a worker running the job now (shared memory only: no snapshot)? */
static bool
JobRunsNow(int64 job_id)
{
	pid_t		pid;
	Oid			lock_relid;
	int			lock_mode;
	TransactionId snapshot_limit;

	return JobWorkersOf(MyDatabaseId, job_id, &pid, 1, &lock_relid, &lock_mode,
						&snapshot_limit) > 0;
}

/*
 * Wait until the job has ended, and read it into *job (in memory of the
 * caller's memory context, which lives until it ends); an error if the
 * deadline (0: none) passes first, or if the job waits for this
 * transaction (WaitLeadsHere).  Each look at the job reads its row as
 * committed then.  With commit_between_looks (a procedure in a non-atomic
 * context, connected to SPI so), each look is a transaction of its own,
 * committed before the sleep: the caller then holds no snapshot while it
 * waits.  Otherwise the caller decides what it holds; a look holds a
 * snapshot only while it reads, and while a worker runs the job the row is
 * read only when a job's new state has committed (job_xact.c wakes the
 * waiting sessions then): an index build collects the transactions that
 * hold older snapshots at one moment, and waits for them to end, which the
 * caller's cannot while it waits.  for_what names the caller, for the
 * errors.
 */
void
SessionWaitForJob(int64 job_id, TimestampTz deadline, bool commit_between_looks, BgddlJob *job,
				  const char *for_what)
{
	MemoryContext caller_context = CurrentMemoryContext;
	MemoryContext look_context = AllocSetContextCreate(caller_context, "background_ddl wait",
													   ALLOCSET_SMALL_SIZES);
	List	   *awaited_jobs = NIL;
	bool		ended = false;
	bool		woken = true;

	if (JobXactIsSubmitted(job_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("background DDL job %lld was submitted in the current transaction",
						(long long) job_id),
				 errdetail("The job starts when the transaction commits."),
				 errhint("Call %s after COMMIT.", for_what)));
	for (;;)
	{
		char	   *why = NULL;

		MemoryContextSwitchTo(look_context);
		if (commit_between_looks || woken || !JobRunsNow(job_id))
		{
			if (commit_between_looks)
				PushActiveSnapshot(GetTransactionSnapshot());
			if (!CatalogJobLoad(job_id, job, true))
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("background DDL job %lld does not exist", (long long) job_id),
						 errhint("pg_stat_background_ddl lists the jobs of this database.")));
			ended = JobStateIsFinal(job->state);
			if (commit_between_looks)
			{
				PopActiveSnapshot();
				SPI_commit();
			}
			else if (awaited_jobs == NIL)
			{
				/* (the job and those it starts after: in the caller's context, read once) */
				MemoryContextSwitchTo(caller_context);
				awaited_jobs = CatalogJobsAwaited(job_id);
				MemoryContextSwitchTo(look_context);
			}
		}
		if (!ended && !commit_between_looks && WaitLeadsHere(job_id, awaited_jobs, &why))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
					 errmsg("%s cannot wait for background DDL job %lld: the job waits for this transaction",
							for_what, (long long) job_id),
					 errdetail_internal("%s", why),
					 errhint("End the transaction first, then wait with CALL await_ddl(%lld).",
							 (long long) job_id)));
		if (!commit_between_looks)
			InvalidateCatalogSnapshot();
		if (!ended && deadline != 0 && GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("timed out waiting for background DDL job %lld", (long long) job_id),
					 errdetail("The job is still %s.", CatalogStateName(job->state))));
		MemoryContextSwitchTo(caller_context);
		if (ended)
		{
			/* What the job changed in the catalogs is seen from here on */
			if (commit_between_looks)
				PushActiveSnapshot(GetTransactionSnapshot());
			CatalogJobWaitForLastWriter(job_id);
			if (commit_between_looks)
				PopActiveSnapshot();
			else
				InvalidateCatalogSnapshot();
			AcceptInvalidationMessages();
			/* Seen ended: the session's later statements need not wait for it */
			JobXactForget(job_id);
			break;
		}
		MemoryContextReset(look_context);
		/* A job's committed state change and a worker's exit wake us; the timeout bounds any miss */
		woken = !ConditionVariableTimedSleep(&JobShared->job_finished, 100, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
}

/*
 * End as the blocking statement would have, for a job that has ended:
 * quietly if it succeeded; with its error (SQLSTATE, message, detail, hint)
 * if it failed; with an error if it was cancelled.
 */
void
SessionRaiseJobEnd(const BgddlJob *job)
{
	if (job->state == JOB_STATE_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("background DDL job %lld was cancelled", (long long) job->id),
				 job->error ? errdetail("%s", job->error) : 0));
	if (job->state == JOB_STATE_FAILED)
		ereport(ERROR,
				(errcode(PgSqlstateCode(job->error_sqlstate)),
				 errmsg_internal("%s", job->error ? job->error : "background DDL job failed"),
				 job->error_detail ? errdetail_internal("%s", job->error_detail) : 0,
				 job->error_hint ? errhint("%s", job->error_hint) : 0));
}
