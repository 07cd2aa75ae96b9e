/*-------------------------------------------------------------------------
 *
 * sql_control.c
 *	  SQL functions: cancel_ddl, pause_ddl, resume_ddl, wait_ddl,
 *	  last_ddl_job, and live_jobs (for pg_stat_background_ddl).
 *
 * cancel_ddl and pause_ddl are transactional, like the submit.  They ask the
 * job's workers to let go of it (job_xact.c: the request lasts until the
 * end of the caller's transaction), interrupting what they run, wait on the
 * job lock until they have, and then move the job to cancelling or paused
 * in the caller's transaction.  A worker that let go waits for the
 * caller's transaction to end: if it rolled back, the worker goes on from
 * where it was, and this costs the job no attempt; if it committed, the
 * worker stops (paused), or removes everything the job created and marks
 * it cancelled.
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

#include "background_ddl.h"
#include "capture_trigger.h"
#include "catalog_access.h"
#include "capture_log.h"
#include "catalog_job.h"
#include "sql_control.h"
#include "kind.h"
#include "query_partial_agg.h"
#include "job_xact.h"
#include "job_shmem.h"
#include "pg_compat.h"

/* The smallest rate limit (alter_ddl): a job is never held for ever */
#define JOB_MIN_RATE	1

PG_FUNCTION_INFO_V1(cancel_ddl);
PG_FUNCTION_INFO_V1(pause_ddl);
PG_FUNCTION_INFO_V1(resume_ddl);
PG_FUNCTION_INFO_V1(wait_ddl);
PG_FUNCTION_INFO_V1(last_ddl_job);
PG_FUNCTION_INFO_V1(alter_ddl);
PG_FUNCTION_INFO_V1(live_jobs);
PG_FUNCTION_INFO_V1(ddl_messages);

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
				 errmsg("background DDL job " INT64_FORMAT " does not exist", job_id),
				 errhint("pg_stat_background_ddl lists the jobs of this database.")));
}

/* Does the current user own a table whose changes the job captures? */
static bool
OwnsCapturedTable(const BgddlJob *job)
{
	ListCell   *lc;

	foreach(lc, job->capture_relids)
	{
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(lfirst_oid(lc))) &&
			PgRelationOwnerCheck(lfirst_oid(lc), GetUserId()))
			return true;
	}
	return false;
}

/*
 * The job's role (the current user at submit, pg_stat_background_ddl's
 * usename) or a role with its privileges, a member of pg_signal_backend, or
 * a superuser may control a job; a superuser's job only a superuser.  A
 * job's capture triggers sit on tables of other roles (with their TRIGGER
 * privilege), whose owners cannot drop them: the owner of such a table may
 * cancel the job (captured_owner_may).
 */
static void
CheckControlPermission(const BgddlJob *job, const char *verb, bool captured_owner_may)
{
	Oid			userid = GetUserId();
	Oid			owner = job->identity.owner_oid;

	if (superuser())
		return;
	if (!superuser_arg(owner) &&
		(has_privs_of_role(userid, owner) ||
		 has_privs_of_role(userid, ROLE_PG_SIGNAL_BACKEND) ||
		 (captured_owner_may && OwnsCapturedTable(job))))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s background DDL job " INT64_FORMAT, verb, job->id),
			 captured_owner_may ?
			 errdetail("Only the role that submitted the job, members of pg_signal_backend, superusers and the owners of the tables whose changes it captures may %s it; only superusers may %s a superuser's job.",
					   verb, verb) :
			 errdetail("Only the role that submitted the job, members of pg_signal_backend and superusers may %s it; only superusers may %s a superuser's job.",
					   verb, verb)));
}

/*
 * Make the job's workers let go of it until the current transaction ends,
 * and wait until they have.  Returns the job as it is then; false if it had
 * ended meanwhile.
 */
static bool
HoldJob(int64 job_id, BgddlJob *job)
{
	LOCKTAG		job_lock;

	JobXactHold(job_id);
	JobLockTagSet(&job_lock, MyDatabaseId, job_id);
	(void) LockAcquire(&job_lock, JOB_LOCK_CONTROL, false, false);
	JobLoadOrError(job_id, job);
	return !JobStateIsFinal(job->state) && job->state != JOB_STATE_CANCELLING;
}

/*
 * Cancel an unfinished job in the current transaction.  Where the kind
 * allows it, everything the job created is removed right here (its capture
 * triggers, detached from the target, log nothing from now on and are
 * dropped by its worker right after the commit: they need strong locks on
 * the base tables) and the job is cancelled; otherwise it is cancelling
 * until its worker has removed the rest.  reason (may be NULL) is recorded
 * as the job's error; with target_dropped, the caller drops the target.
 * Returns false if the job had already ended or was being cancelled.
 * Caller has checked the permission.
 */
bool
SessionCancelJob(int64 job_id, const char *reason, bool target_dropped)
{
	BgddlJob	job;
	const KindRoutine *routine;
	JobError	error = {reason, NULL, NULL, NULL};

	if (!HoldJob(job_id, &job))
		return false;
	routine = KindRoutineFor(job.kind);
	JobXactWakeScheduler();
	if (routine->discards_in_any_transaction != NULL &&
		!routine->discards_in_any_transaction(&job))
	{
		CatalogJobSetState(job_id, JOB_STATE_CANCELLING);
		if (reason != NULL)
			CatalogJobRecordError(job_id, &error, false);
		return true;
	}
	if (job.capture_triggers != NIL)
	{
		CaptureTriggers triggers = {job.capture_triggers, job.capture_trigger_xmins};

		CaptureDetach(&triggers, job.target_oid);
	}
	routine->discard(&job, target_dropped);
	QueryPartialAggDropStaging(job.staging_oid);
	CaptureForget(job_id, true);
	CatalogJobFinish(job_id, JOB_STATE_CANCELLED, reason ? &error : NULL, false, -1, NULL);
	return true;
}

/*
 * DROP of a job's target cancels its job, in the dropping transaction.  A
 * placeholder that stands for an object of another type (a table or index
 * being built) is dropped with the cancel, and taken out of the statement,
 * which PostgreSQL would otherwise refuse ("is not a table").  Only for the
 * owner: anyone else gets the normal permission error from the DROP
 * itself, without disturbing the job.  Returns the objects that the
 * statement still has to drop (stmt->objects, or a shorter list).
 */
List *
SessionCancelDroppedTargets(DropStmt *stmt)
{
	ListCell   *lc;
	List	   *left = NIL;

	if ((stmt->removeType != OBJECT_MATVIEW && stmt->removeType != OBJECT_TABLE &&
		 stmt->removeType != OBJECT_INDEX) || CatalogLookup() == NULL)
		return stmt->objects;
	foreach(lc, stmt->objects)
	{
		RangeVar   *name = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			target_oid = RangeVarGetRelid(name, NoLock, true);
		int64		job_id = 0;
		BgddlJob	job;

		if (OidIsValid(target_oid) && PgRelationOwnerCheck(target_oid, GetUserId()))
			job_id = CatalogJobBuilding(target_oid);
		if (job_id != 0 && CatalogJobLoad(job_id, &job, true) &&
			KindRoutineFor(job.kind)->stands_for == stmt->removeType &&
			stmt->removeType != OBJECT_MATVIEW &&
			get_rel_relkind(target_oid) == RELKIND_MATVIEW)
		{
			(void) SessionCancelJob(job_id, "the target was dropped", false);
			continue;
		}
		if (job_id != 0)
			(void) SessionCancelJob(job_id, "the target was dropped", true);
		left = lappend(left, lfirst(lc));
	}
	return left;
}

/*
 * The transaction that submitted a job uses its target (why says how)
 * before committing: build the object here, now, as the blocking statement
 * would have (the job succeeds when the transaction commits, or leaves
 * nothing if it rolls back).  Returns the relation that now stands for the
 * target; InvalidOid if the job is not waiting for a worker (paused, or
 * cancelled in this transaction), and the target stays what it was.
 */
Oid
KindBuildHere(int64 job_id, const char *why)
{
	BgddlJob	job;

	JobLoadOrError(job_id, &job);
	if (job.state != JOB_STATE_QUEUED)
		return InvalidOid;
	ereport(NOTICE,
			(errmsg("background DDL job " INT64_FORMAT " is built in this session, now",
					job_id),
			 errdetail("The transaction that submitted it %s before COMMIT.", why)));
	CatalogJobRecordBuiltHere(job_id, psprintf("in the submitting transaction: it %s before COMMIT",
										why));
	return KindRoutineFor(job.kind)->build_here(&job);
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

	if (job.state != JOB_STATE_QUEUED && job.state != JOB_STATE_RUNNING)
		PG_RETURN_BOOL(false);
	if (!HoldJob(job_id, &job) || job.state == JOB_STATE_PAUSED)
		PG_RETURN_BOOL(false);
	CatalogJobSetState(job_id, JOB_STATE_PAUSED);

	/*
	 * A paused job costs writers nothing: its triggers log no change while
	 * it is paused (capture_trigger.c), and one whole_table mark stands for them all
	 */
	if (job.capture_triggers != NIL && !job.capture_stopped)
		CaptureCoverAll(job_id);
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
					 errhint("To stop a job for a while, use pause_ddl(" INT64_FORMAT "); max_rate => 'infinity' lifts the limit.",
							 job_id)));
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
					 errhint("To stop a job for a while, use pause_ddl(" INT64_FORMAT ").", job_id)));
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

	if (job.state != JOB_STATE_PAUSED || !HoldJob(job_id, &job) ||
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
				 errmsg("background DDL job " INT64_FORMAT " was submitted in the current transaction",
						job_id),
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
					 errmsg("timed out waiting for background DDL job " INT64_FORMAT, job_id),
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

/*
 * The jobs of this database that have workers now: one worker's pid, the
 * number of workers, and their live progress (rows of batches not yet
 * committed included) and phase.
 */
Datum
live_jobs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(JobShared->lock, LW_SHARED);
	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobSlot *slot = &JobShared->jobs[i];
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};
		const char *phase = CatalogPhaseName((JobPhase) slot->phase);
		pid_t		pid = 0;
		int			workers = 0;
		int64		rows_done;
		double		progress = slot->progress;

		if (slot->database_oid != MyDatabaseId || slot->workers == 0)
			continue;
		for (int w = 0; w < background_ddl_max_workers; w++)
		{
			JobWorkerSlot *worker = &JobShared->workers[w];

			if (worker->in_use && worker->pid != 0 && worker->database_oid == MyDatabaseId &&
				worker->job_id == slot->job_id)
			{
				if (pid == 0)
					pid = worker->pid;
				workers++;
			}
		}
		if (workers == 0)
			continue;
		rows_done = (int64) pg_atomic_read_u64(&slot->rows_done);
		if (slot->one_batch && slot->rows_total > 0)
			progress = Max(progress, Min(99.0, 100.0 * rows_done / slot->rows_total));
		values[0] = Int64GetDatum(slot->job_id);
		values[1] = Int32GetDatum(pid);
		values[2] = Int32GetDatum(workers);
		values[3] = Int64GetDatum(rows_done);
		values[4] = Int64GetDatum(slot->chunks_done);
		values[5] = Float8GetDatum(progress);
		if (phase != NULL)
			values[6] = CStringGetTextDatum(phase);
		else
			nulls[6] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(JobShared->lock);
	return (Datum) 0;
}

/*
 * ddl_messages(job_id): the messages the job's statements raised
 * (job_messages.c), for a role that may read the job's command, as in
 * pg_stat_background_ddl: the job's role or one with its privileges, or a
 * member of pg_read_all_stats.
 */
Datum
ddl_messages(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		job_id = JobIdArgument(fcinfo);
	BgddlJob	job;
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		args[] = {Int64GetDatum(job_id)};

	CatalogRequire();
	JobLoadOrError(job_id, &job);
	if (!has_privs_of_role(GetUserId(), job.identity.owner_oid) &&
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the messages of background DDL job " INT64_FORMAT,
						job_id),
				 errdetail("Only the role that submitted the job, roles with its privileges and members of pg_read_all_stats may read them.")));
	InitMaterializedSRF(fcinfo, 0);
	CatalogAccessBegin(&access);
	CatalogExecute("SELECT seq, raised_at, severity, message, detail, hint, context "
				   "FROM background_ddl.message WHERE job_id = $1 ORDER BY seq",
				   1, argtypes, args, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum		values[7];
		bool		nulls[7];

		for (int column = 0; column < 7; column++)
		{
			nulls[column] = CatalogColumnIsNull(row, column + 1);
			values[column] = CatalogColumn(row, column + 1, (Datum) 0);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	CatalogAccessEnd(&access);
	return (Datum) 0;
}
