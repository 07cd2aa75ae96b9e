/*-------------------------------------------------------------------------
 *
 * job_control.c
 *	  SQL functions: cancel_ddl, wait_ddl, last_ddl_job.
 *
 * cancel_ddl is transactional, like the submit: it stops the worker (SIGINT,
 * which aborts the running batch), waits on the job lock until the worker
 * has exited, and then, holding that lock so that no new worker can take
 * the job, drops the placeholder, deletes the checkpoints and marks the job
 * cancelled in the caller's transaction.  If the caller rolls back, the job
 * simply resumes from its last checkpoint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "background_ddl.h"
#include "cutover.h"
#include "job_catalog.h"
#include "job_control.h"
#include "shared_state.h"
#include "submit.h"

PG_FUNCTION_INFO_V1(cancel_ddl);
PG_FUNCTION_INFO_V1(wait_ddl);
PG_FUNCTION_INFO_V1(last_ddl_job);

static bool
JobStateIsFinal(const char *state)
{
	return strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
		strcmp(state, "cancelled") == 0;
}

/* Load a job of this database (latest committed state) or error out */
static void
JobLoadOrError(int64 job_id, BgddlJob *job)
{
	if (!JobLoad(job_id, job, true))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("background DDL job " INT64_FORMAT " does not exist", job_id),
				 errhint("pg_stat_background_ddl lists the jobs of this database.")));
}

/*
 * The job's submitter, a member of pg_signal_backend, or a superuser may
 * cancel a job; a superuser's job only a superuser.
 */
static void
CheckCancelPermission(const BgddlJob *job)
{
	Oid			userid = GetUserId();

	if (superuser())
		return;
	if (!superuser_arg(job->owner_oid) &&
		(has_privs_of_role(userid, job->owner_oid) ||
		 has_privs_of_role(userid, ROLE_PG_SIGNAL_BACKEND)))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to cancel background DDL job " INT64_FORMAT, job->id),
			 errdetail("Only the role that submitted the job, members of pg_signal_backend and superusers may cancel it; only superusers may cancel a superuser's job.")));
}

/*
 * Cancel an unfinished job in the current transaction: stop its worker,
 * wait until it has let go of the job, then remove the checkpoints, the
 * placeholder (unless the caller is dropping it anyway) and mark the job
 * cancelled with the given reason.  Returns false if the job had already
 * ended.  Caller has checked the permission.
 */
bool
JobCancel(int64 job_id, bool drop_placeholder, const char *reason)
{
	BgddlJob	job;
	BgddlWorkerSlot *slot;
	pid_t		worker_pid = 0;
	LOCKTAG		job_lock;

	/* Interrupt the worker, if any; see BgddlWorkerMain for the ordering */
	LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
	slot = BgddlFindWorkerSlot(MyDatabaseId, job_id);
	if (slot != NULL)
	{
		slot->cancel_requested = true;
		worker_pid = slot->pid;
	}
	LWLockRelease(BgddlShared->lock);
	if (worker_pid != 0)
		(void) kill(worker_pid, SIGINT);

	/* Wait for the worker to let go; keep new ones off until we commit */
	JobLockTagSet(&job_lock, MyDatabaseId, job_id);
	(void) LockAcquire(&job_lock, ExclusiveLock, false, false);

	/* The worker may have finished the job before it saw the cancel */
	JobLoadOrError(job_id, &job);
	if (JobStateIsFinal(job.state))
		return false;

	if (drop_placeholder)
		DropPlaceholder(job.target_oid);
	JobDeleteChunks(job_id);
	JobFinish(job_id, "cancelled", reason, false, -1);
	/* Capture triggers take strong locks to drop: the scheduler does it */
	if (job.capture_relids != NIL)
	{
		JobSetCleanupPending(job_id, true);
		SubmitWakeAtCommit();
	}
	return true;
}

Datum
cancel_ddl(PG_FUNCTION_ARGS)
{
	int64		job_id = PG_GETARG_INT64(0);
	BgddlJob	job;

	JobLoadOrError(job_id, &job);
	CheckCancelPermission(&job);
	if (JobStateIsFinal(job.state))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(JobCancel(job_id, true, NULL));
}

Datum
wait_ddl(PG_FUNCTION_ARGS)
{
	int64		job_id;
	TimestampTz deadline = 0;
	BgddlJob	job;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	job_id = PG_GETARG_INT64(0);
	if (!PG_ARGISNULL(1))
	{
		Interval   *timeout = PG_GETARG_INTERVAL_P(1);

		deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														   TimestampTzGetDatum(GetCurrentTimestamp()),
														   IntervalPGetDatum(timeout)));
	}

	if (SubmitJobIsUncommitted(job_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("background DDL job " INT64_FORMAT " was submitted in the current transaction",
						job_id),
				 errdetail("The job starts when the transaction commits."),
				 errhint("Call wait_ddl() after COMMIT.")));

	for (;;)
	{
		JobLoadOrError(job_id, &job);
		if (JobStateIsFinal(job.state))
			break;
		if (deadline != 0 && GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("timed out waiting for background DDL job " INT64_FORMAT, job_id),
					 errdetail("The job is still %s.", job.state)));
		/* Workers broadcast when they exit; the timeout bounds any miss */
		(void) ConditionVariableTimedSleep(&BgddlShared->job_finished, 100,
										   PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	PG_RETURN_TEXT_P(cstring_to_text(job.state));
}

Datum
last_ddl_job(PG_FUNCTION_ARGS)
{
	int64		job_id = SubmitLastJobId();

	if (job_id == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(job_id);
}
