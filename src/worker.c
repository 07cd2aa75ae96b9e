/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The job worker: one dynamic background worker per running job.
 *
 * A worker takes its job by locking it (a session-level lock on the job id,
 * held until exit; cancel_ddl waits on the same lock) and marking it running,
 * then goes through the phases, each restartable from the job row alone:
 *
 *	planning     decide between chunks and one batch (recorded once)
 *	backfilling  one transaction per chunk, each one a checkpoint
 *	cutting over one transaction: populated + succeeded
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

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "background_ddl.h"
#include "backfill.h"
#include "cutover.h"
#include "job_catalog.h"
#include "job_control.h"
#include "launcher.h"
#include "shared_state.h"
#include "worker.h"

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
 * in the error and keep it.
 */
static void
FailJob(int64 job_id, Oid target_oid, const char *message)
{
	MemoryContext context = CurrentMemoryContext;
	char	   *error = pstrdup(message);

	JobStepBegin("background_ddl: recording failure");
	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		DropPlaceholder(target_oid);
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
	JobFinish(job_id, "failed", error, false, -1);
	JobStepEnd();
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
	if (claimed && job.attempts > background_ddl_max_attempts)
	{
		char	   *error = psprintf("the job was started %d times without finishing",
									 job.attempts - 1);

		JobStepEnd();
		FailJob(job_id, job.target_oid, error);
		return;
	}
	if (claimed && TargetDropped(&job))
	{
		JobDeleteChunks(job_id);
		JobFinish(job_id, "cancelled", "the materialized view was dropped", false, -1);
		claimed = false;
	}
	JobStepEnd();
	if (!claimed)
		return;

	if (!job.planned)
	{
		JobRoleContext role;

		JobStepBegin("background_ddl: planning");
		MemoryContextSwitchTo(job_context);
		JobSetPhase(job_id, "planning");
		JobRoleEnter(&job, &role);
		BackfillPlan(&job);
		JobRoleLeave(&role);
		JobStepEnd();
	}

	JobStepBegin("background_ddl: backfilling");
	JobSetPhase(job_id, "backfilling");
	JobStepEnd();

	/* A chunked backfill; a single batch runs inside the cut-over */
	if (OidIsValid(job.driving_oid))
	{
		bool		more = true;

		while (more)
		{
			JobRoleContext role;

			CHECK_FOR_INTERRUPTS();
			if (WorkerCancelRequested())
				proc_exit(0);

			JobStepBegin("background_ddl: backfilling a chunk");
			MemoryContextSwitchTo(job_context);
			if (TargetDropped(&job))
			{
				JobDeleteChunks(job_id);
				JobFinish(job_id, "cancelled", "the materialized view was dropped", false, -1);
				JobStepEnd();
				return;
			}
			JobRoleEnter(&job, &role);
			more = BackfillNextChunk(&job);
			JobRoleLeave(&role);
			JobStepEnd();
		}
	}

	CutoverMatView(&job);
	ereport(LOG,
			(errmsg("background DDL job " INT64_FORMAT " for %s succeeded",
					job_id, job.target_name)));
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
		if (!JobLoad(my_job_id, &job, false))
			job.target_oid = InvalidOid;
		JobStepEnd();
		FailJob(my_job_id, job.target_oid, error->message);
	}
	PG_END_TRY();

	proc_exit(0);
}
