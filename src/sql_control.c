/*-------------------------------------------------------------------------
 *
 * sql_control.c
 *	  SQL functions that control jobs: cancel_ddl, pause_ddl, resume_ddl,
 *	  alter_ddl, wait_ddl and last_ddl_job.
 *
 * They check who may control a job, then hold it (session_control.c),
 * transactionally, like the submit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/plannodes.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog_access.h"
#include "catalog_job.h"
#include "job_shmem.h"
#include "job_xact.h"
#include "kind.h"
#include "session_control.h"
#include "settings.h"

/* The smallest rate limit (alter_ddl): a job is never held for ever */
#define JOB_MIN_RATE	1

PG_FUNCTION_INFO_V1(cancel_ddl);
PG_FUNCTION_INFO_V1(pause_ddl);
PG_FUNCTION_INFO_V1(resume_ddl);
PG_FUNCTION_INFO_V1(wait_ddl);
PG_FUNCTION_INFO_V1(last_ddl_job);
PG_FUNCTION_INFO_V1(alter_ddl);

/* The job id argument, which must not be NULL */
static int64
JobIdArgument(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("background DDL job id must not be null")));
	return PG_GETARG_INT64(0);
}

/* Load a job (latest committed state) or error out */
static void
JobLoadOrError(int64 job_id, BgddlJob *job)
{
	if (!CatalogJobLoad(job_id, job, true))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("background DDL job %lld does not exist", (long long) job_id),
				 errhint("pg_stat_background_ddl lists the jobs of this database.")));
}

/*
 * The job's role (the current user at submit, pg_stat_background_ddl's
 * usename) or a role with its privileges, a member of pg_signal_backend, or
 * a superuser may control a job; a superuser's job only a superuser.  A
 * job may keep something on tables of other roles (capture triggers, with
 * their TRIGGER privilege) that their owners cannot drop: the owner of such
 * a table may cancel the job (captured_owner_may).
 */
static void
CheckControlPermission(const BgddlJob *job, const char *verb, bool captured_owner_may)
{
	const KindRoutine *routine = KindRoutineFor(job->kind);
	Oid			userid = GetUserId();
	Oid			owner = job->identity.owner_oid;

	if (superuser())
		return;
	if (!superuser_arg(owner) &&
		(has_privs_of_role(userid, owner) ||
		 has_privs_of_role(userid, ROLE_PG_SIGNAL_BACKEND) ||
		 (captured_owner_may && routine->keeps_on_table_of != NULL &&
		  routine->keeps_on_table_of(job, userid))))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s background DDL job %lld", verb, (long long) job->id),
			 captured_owner_may ?
			 errdetail("Only the role that submitted the job, members of pg_signal_backend, superusers and the owners of the tables whose changes it captures may %s it; only superusers may %s a superuser's job.",
					   verb, verb) :
			 errdetail("Only the role that submitted the job, members of pg_signal_backend and superusers may %s it; only superusers may %s a superuser's job.",
					   verb, verb)));
}

/* The job a control function is called for, if the caller may control it */
static int64
ControlledJob(FunctionCallInfo fcinfo, const char *verb, BgddlJob *job)
{
	int64		job_id = JobIdArgument(fcinfo);

	CatalogRequire();
	JobLoadOrError(job_id, job);
	CheckControlPermission(job, verb, strcmp(verb, "cancel") == 0);
	return job_id;
}

Datum
cancel_ddl(PG_FUNCTION_ARGS)
{
	BgddlJob	job;
	int64		job_id = ControlledJob(fcinfo, "cancel", &job);

	if (JobStateIsFinal(job.state) || job.state == JOB_STATE_CANCELLING)
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(SessionCancelJob(job_id, NULL, false));
}

Datum
pause_ddl(PG_FUNCTION_ARGS)
{
	BgddlJob	job;
	int64		job_id = ControlledJob(fcinfo, "pause", &job);
	const KindRoutine *routine;

	if (job.state != JOB_STATE_QUEUED && job.state != JOB_STATE_RUNNING)
		PG_RETURN_BOOL(false);
	if (!SessionHoldJob(job_id, &job) || job.state == JOB_STATE_PAUSED)
		PG_RETURN_BOOL(false);
	CatalogJobSetState(job_id, JOB_STATE_PAUSED);
	routine = KindRoutineFor(job.kind);
	if (routine->paused != NULL)
		routine->paused(&job);
	PG_RETURN_BOOL(true);
}

/*
 * alter_ddl(job_id, max_rate, batch_time, workers): change the limits of a
 * job that has not ended.  The job's workers read them after every batch
 * (and every second while the rate limit makes them wait).  Returns false
 * if the job has ended.
 */
Datum
alter_ddl(PG_FUNCTION_ARGS)
{
	BgddlJob	job;
	int64		job_id = ControlledJob(fcinfo, "alter", &job);
	double		max_rate = 0;
	int			batch_time_ms = 0;
	int			workers = 0;

	if (!PG_ARGISNULL(1))
	{
		max_rate = PG_GETARG_FLOAT8(1);
		if (isnan(max_rate) || max_rate < JOB_MIN_RATE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_rate must be at least %d row per second", JOB_MIN_RATE),
					 errhint("To stop a job for a while, use pause_ddl(%lld); max_rate => 'infinity' lifts the limit.",
							 (long long) job_id)));
		if (isinf(max_rate))
			max_rate = -1;
	}
	if (!PG_ARGISNULL(2))
	{
		Interval   *interval = PG_GETARG_INTERVAL_P(2);
		double		ms = (interval->time + (interval->day + interval->month * 30.0) *
						  USECS_PER_DAY) / 1000.0;

		if (ms < BGDDL_BATCH_TIME_MIN_MS || ms > BGDDL_BATCH_TIME_MAX_MS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch_time must be between %d milliseconds and %d hour",
							BGDDL_BATCH_TIME_MIN_MS, BGDDL_BATCH_TIME_MAX_MS / 3600000),
					 errdetail("background_ddl.batch_time has the same range.")));
		batch_time_ms = (int) ms;
	}
	if (!PG_ARGISNULL(3))
	{
		workers = PG_GETARG_INT32(3);
		if (workers < 1 || workers > background_ddl_max_workers)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("workers must be between 1 and background_ddl.max_workers (%d)",
							background_ddl_max_workers),
					 errhint("To stop a job for a while, use pause_ddl(%lld).", (long long) job_id)));
	}
	if (JobStateIsFinal(job.state) || job.state == JOB_STATE_CANCELLING)
		PG_RETURN_BOOL(false);
	CatalogJobSetLimits(job_id, max_rate, batch_time_ms, workers);
	JobXactWakeScheduler();
	PG_RETURN_BOOL(true);
}

Datum
resume_ddl(PG_FUNCTION_ARGS)
{
	BgddlJob	job;
	int64		job_id = ControlledJob(fcinfo, "resume", &job);

	if (job.state != JOB_STATE_PAUSED || !SessionHoldJob(job_id, &job) ||
		job.state != JOB_STATE_PAUSED)
		PG_RETURN_BOOL(false);
	CatalogJobSetState(job_id, JOB_STATE_QUEUED);
	JobXactWakeScheduler();
	PG_RETURN_BOOL(true);
}

/*
 * May wait_ddl stop advertising an xmin while it sleeps?  Only when nothing
 * will read with the snapshot its statement runs under: the statement is
 * SELECT wait_ddl(...) alone (a Result plan whose one column is this very
 * call, its arguments already evaluated), at the top level of a READ
 * COMMITTED transaction, with no open cursor.
 */
static bool
CanReleaseSnapshot(FunctionCallInfo fcinfo)
{
	PlannedStmt *statement;
	Plan	   *plan;

	if (IsolationUsesXactSnapshot() || ActivePortal == NULL ||
		list_length(ActivePortal->stmts) != 1 || !ThereAreNoReadyPortals())
		return false;
	statement = linitial(ActivePortal->stmts);
	if (!IsA(statement, PlannedStmt) || statement->commandType != CMD_SELECT)
		return false;
	plan = statement->planTree;
	return plan != NULL && IsA(plan, Result) && plan->lefttree == NULL &&
		((Result *) plan)->resconstantqual == NULL &&
		list_length(plan->targetlist) == 1 &&
		(Node *) ((TargetEntry *) linitial(plan->targetlist))->expr == fcinfo->flinfo->fn_expr;
}

/* Stop advertising an xmin: nothing reads with our snapshot any more */
static void
ReleaseXmin(void)
{
	InvalidateCatalogSnapshot();
	MyProc->xmin = InvalidTransactionId;
}

Datum
wait_ddl(PG_FUNCTION_ARGS)
{
	int64		job_id = JobIdArgument(fcinfo);
	TimestampTz deadline = 0;
	bool		release_snapshot = CanReleaseSnapshot(fcinfo);
	MemoryContext poll_context;
	MemoryContext caller_context = CurrentMemoryContext;
	char	   *final_state = NULL;

	CatalogRequire();
	if (!PG_ARGISNULL(1))
	{
		Interval   *timeout = PG_GETARG_INTERVAL_P(1);

		deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														   TimestampTzGetDatum(GetCurrentTimestamp()),
														   IntervalPGetDatum(timeout)));
	}

	if (JobXactIsSubmitted(job_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("background DDL job %lld was submitted in the current transaction",
						(long long) job_id),
				 errdetail("The job starts when the transaction commits."),
				 errhint("Call wait_ddl() after COMMIT.")));

	poll_context = AllocSetContextCreate(CurrentMemoryContext, "wait_ddl poll",
										 ALLOCSET_SMALL_SIZES);
	while (final_state == NULL)
	{
		BgddlJob	job;

		MemoryContextSwitchTo(poll_context);
		JobLoadOrError(job_id, &job);
		if (release_snapshot)
			ReleaseXmin();
		if (JobStateIsFinal(job.state))
		{
			final_state = MemoryContextStrdup(caller_context, CatalogStateName(job.state));
			break;
		}
		if (deadline != 0 && GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("timed out waiting for background DDL job %lld", (long long) job_id),
					 errdetail("The job is still %s.", CatalogStateName(job.state))));
		MemoryContextSwitchTo(caller_context);
		MemoryContextReset(poll_context);
		/* Workers broadcast when they exit; the timeout bounds any miss */
		(void) ConditionVariableTimedSleep(&JobShared->job_finished, 100,
										   PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	MemoryContextSwitchTo(caller_context);
	MemoryContextDelete(poll_context);
	PG_RETURN_TEXT_P(cstring_to_text(final_state));
}

Datum
last_ddl_job(PG_FUNCTION_ARGS)
{
	int64		job_id = JobXactLastJob();

	if (job_id == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(job_id);
}

