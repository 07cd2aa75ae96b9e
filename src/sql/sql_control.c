/*-------------------------------------------------------------------------
 *
 * sql_control.c
 *	  SQL functions that control jobs: cancel_ddl, pause_ddl, resume_ddl,
 *	  alter_ddl, wait_ddl and await_ddl (a procedure), and last_ddl_job.
 *
 * They check who may control a job, then hold it (session_control.c),
 * transactionally, like the submit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
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
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "tcop/pquery.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_shmem.h"
#include "engine/job_xact.h"
#include "engine/kind.h"
#include "pg/pg_compat.h"
#include "session/session_control.h"

/* The smallest rate limit (alter_ddl): a job is never held for ever */
#define JOB_MIN_RATE	1

PG_FUNCTION_INFO_V1(cancel_ddl);
PG_FUNCTION_INFO_V1(pause_ddl);
PG_FUNCTION_INFO_V1(resume_ddl);
PG_FUNCTION_INFO_V1(wait_ddl);
PG_FUNCTION_INFO_V1(await_ddl);
PG_FUNCTION_INFO_V1(complete_ddl);
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
	const KindRoutine *routine = KindRoutineForJob(job);
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
	int64		job_id;

	/* A standby shows the primary's jobs; only the primary controls them */
	PreventCommandDuringRecovery(psprintf("%s_ddl()", verb));
	job_id = JobIdArgument(fcinfo);
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
	JobXactNotify(job_id, JOB_STATE_PAUSED);
	routine = KindRoutineForJob(&job);
	if (routine->paused != NULL)
		routine->paused(&job);
	PG_RETURN_BOOL(true);
}

/*
 * alter_ddl(job_id, max_rate, batch_time, workers, max_replica_lag,
 * cutover, cutover_window): change the limits of a job that has not ended
 * (max_replica_lag => '0' lifts the server's background_ddl.max_replica_lag
 * for it), or when it publishes its result (cutover => 'manual': once
 * complete_ddl says so; 'auto': once it is built; cutover_window =>
 * '01:00-05:00': only then, '' at any time; cutover_max_writes => n: only
 * while fewer rows a second are written to the tables it reads, 0 whatever
 * the writes).  The job's workers read them after
 * every batch (and every second while the rate limit makes them wait, or
 * while they wait for complete_ddl); a cut-over already under way is not
 * stopped.  Returns false if the job has ended.
 */
Datum
alter_ddl(PG_FUNCTION_ARGS)
{
	BgddlJob	job;
	int64		job_id = ControlledJob(fcinfo, "alter", &job);
	double		max_rate = 0;
	int			batch_time_ms = 0;
	int			workers = 0;
	int			max_replica_lag_ms = -1;
	char	   *cutover = NULL;
	char	   *cutover_window = NULL;
	int			cutover_max_writes = -1;

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
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
	{
		Interval   *interval = PG_GETARG_INTERVAL_P(4);
		double		ms = (interval->time + (interval->day + interval->month * 30.0) *
						  USECS_PER_DAY) / 1000.0;

		if (ms < 0 || ms > INT_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_replica_lag must be between 0 and %d milliseconds", INT_MAX),
					 errhint("max_replica_lag => '0' lets the job run whatever the standbys' lag.")));
		max_replica_lag_ms = (int) ms;
	}
	if (PG_NARGS() > 5 && !PG_ARGISNULL(5))
	{
		cutover = text_to_cstring(PG_GETARG_TEXT_PP(5));
		if (strcmp(cutover, "auto") != 0 && strcmp(cutover, "manual") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for cutover: \"%s\"", cutover),
					 errhint("Available values: auto, manual.")));
	}
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
	{
		int			start;
		int			end;

		cutover_window = text_to_cstring(PG_GETARG_TEXT_PP(6));
		if (*cutover_window != '\0' && !SettingsWindowParse(cutover_window, &start, &end))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for cutover_window: \"%s\"", cutover_window),
					 errhint("A time of day window, 'HH:MM-HH:MM' (such as '01:00-05:00' or '22:00-02:00'), or '' for none.")));
	}
	if (PG_NARGS() > 7 && !PG_ARGISNULL(7))
	{
		cutover_max_writes = PG_GETARG_INT32(7);
		if (cutover_max_writes < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cutover_max_writes must not be negative"),
					 errhint("cutover_max_writes => 0 lets the job cut over whatever the writes.")));
	}
	if (((cutover != NULL && strcmp(cutover, "manual") == 0) ||
		 (cutover_window != NULL && *cutover_window != '\0') || cutover_max_writes > 0) &&
		!KindRoutineForJob(&job)->cut_over_publishes)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the cut-over of background DDL job %lld cannot wait", (long long) job_id),
				 errdetail("What a %s job makes is in use before its cut-over.", job.kind),
				 errhint("The jobs of REINDEX and of an index on a distributed table do not wait for complete_ddl or a cut-over window; the others do.")));
	if (JobStateIsFinal(job.state) || job.state == JOB_STATE_CANCELLING)
		PG_RETURN_BOOL(false);
	CatalogJobSetLimits(job_id, max_rate, batch_time_ms, workers, max_replica_lag_ms, cutover,
						cutover_window, cutover_max_writes);
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
	JobXactNotify(job_id, JOB_STATE_QUEUED);
	JobXactWakeScheduler();
	PG_RETURN_BOOL(true);
}

/* The timeout argument argno as a deadline; 0 if NULL (no timeout) */
static TimestampTz
DeadlineArgument(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		return 0;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(GetCurrentTimestamp()),
												   IntervalPGetDatum(PG_GETARG_INTERVAL_P(argno))));
}

/*
 * wait_ddl(job_id, timeout): a function that waits until the job ends and
 * returns its final state.  Its statement keeps its snapshot while it
 * waits, as any function's does; a job that waits for older snapshots
 * itself (an index build), or that starts after such a job, would wait for
 * it, so such a job is refused at once: await_ddl waits for it.
 */
Datum
wait_ddl(PG_FUNCTION_ARGS)
{
	int64		job_id = JobIdArgument(fcinfo);
	TimestampTz deadline = DeadlineArgument(fcinfo, 1);
	BgddlJob	job;
	ListCell   *lc;

	CatalogRequire();
	JobLoadOrError(job_id, &job);
	foreach(lc, JobStateIsFinal(job.state) ? NIL : CatalogJobsAwaited(job_id))
	{
		BgddlJob	awaited;

		if (CatalogJobLoad(*(int64 *) lfirst(lc), &awaited, true) &&
			KindRoutineForJob(&awaited)->waits_for_older_snapshots)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("wait_ddl() cannot wait for background DDL job %lld", (long long) job_id),
					 awaited.id == job_id ?
					 errdetail("The job waits for the transactions whose snapshots are older than its own, as CREATE INDEX CONCURRENTLY does: it would wait for this one, which keeps its snapshot while it waits.") :
					 errdetail("It starts after job %lld, which waits for the transactions whose snapshots are older than its own, as CREATE INDEX CONCURRENTLY does: that would wait for this one, which keeps its snapshot while it waits.",
							   (long long) awaited.id),
					 errhint("CALL await_ddl(%lld) waits without holding a snapshot.", (long long) job_id)));
	}
	SessionWaitForJob(job_id, deadline, false, &job, "wait_ddl()");
	PG_RETURN_TEXT_P(cstring_to_text(CatalogStateName(job.state)));
}

/*
 * Wait, in a procedure, until the job has ended, committing between the
 * looks at it (SessionWaitForJob), and end as the blocking statement would
 * have (SessionRaiseJobEnd).  In a transaction block, where it cannot
 * commit, it is refused (hint: what waits there).
 */
static void
AwaitJobEnd(FunctionCallInfo fcinfo, int64 job_id, const char *for_what, const char *hint)
{
	TimestampTz deadline = DeadlineArgument(fcinfo, 1);
	CallContext *call = (CallContext *) fcinfo->context;
	MemoryContext outer_context = CurrentMemoryContext;
	BgddlJob	job;

	if (call == NULL || !IsA(call, CallContext) || call->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("%s cannot run inside a transaction block", for_what),
				 errdetail("It commits between its looks at the job."),
				 errhint("%s", hint)));
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect_ext failed");
	SessionWaitForJob(job_id, deadline, true, &job, for_what);
	/* What is reported of the ended job outlives the SPI connection */
	MemoryContextSwitchTo(outer_context);
	job.error = job.error ? pstrdup(job.error) : NULL;
	job.error_sqlstate = job.error_sqlstate ? pstrdup(job.error_sqlstate) : NULL;
	job.error_detail = job.error_detail ? pstrdup(job.error_detail) : NULL;
	job.error_hint = job.error_hint ? pstrdup(job.error_hint) : NULL;
	SPI_finish();

	SessionRaiseJobEnd(&job);
}

/*
 * await_ddl(job_id, timeout): a procedure that waits until the job ends,
 * committing between its looks at the job, so that it holds no snapshot
 * while it waits (nothing waits for it, and VACUUM is not held back).  It
 * ends as the blocking statement would have: quietly if the job succeeded,
 * with the job's error (its SQLSTATE, message, detail and hint) if it
 * failed; an error if it was cancelled.  In a transaction block (where it
 * cannot commit), it is refused: wait_ddl waits there.
 */
Datum
await_ddl(PG_FUNCTION_ARGS)
{
	int64		job_id = JobIdArgument(fcinfo);

	CatalogRequire();
	AwaitJobEnd(fcinfo, job_id, "await_ddl()", "CALL it on its own, or use wait_ddl().");
	PG_RETURN_VOID();
}

/*
 * complete_ddl(job_id, timeout): a procedure that lets a job whose
 * cut-over is manual publish its result, and waits as await_ddl until it
 * has: it returns once the job has succeeded, or fails with the reason it
 * could not.  Its first commit makes the job's cutover 'completed' (and
 * lifts its cut-over window and write limit: the operator says now); the
 * job's worker sees it at its next look (within a second).  A paused job
 * is refused: it would not cut over until resumed.  In a transaction block,
 * alter_ddl(job_id, cutover => 'auto') lets it publish.
 */
Datum
complete_ddl(PG_FUNCTION_ARGS)
{
	BgddlJob	job;
	int64		job_id = ControlledJob(fcinfo, "complete", &job);

	if (job.state == JOB_STATE_PAUSED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("background DDL job %lld is paused", (long long) job_id),
				 errhint("resume_ddl(%lld) resumes it; complete_ddl then publishes it.",
						 (long long) job_id)));
	if (!JobStateIsFinal(job.state) && (job.manual_cutover || job.cutover_window[0] != '\0' ||
									 job.cutover_max_writes > 0))
	{
		CatalogJobSetLimits(job_id, 0, 0, 0, -1, "completed", "", 0);
		JobXactWakeScheduler();
	}
	AwaitJobEnd(fcinfo, job_id, "complete_ddl()",
				psprintf("SELECT alter_ddl(%lld, cutover => 'auto') lets the job publish its result when the transaction commits.",
						 (long long) job_id));
	PG_RETURN_VOID();
}

Datum
last_ddl_job(PG_FUNCTION_ARGS)
{
	int64		job_id = JobXactLastJob();

	if (job_id == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(job_id);
}

