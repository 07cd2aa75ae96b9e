/*-------------------------------------------------------------------------
 *
 * sql_monitor.c
 *	  SQL functions behind what pg_stat_background_ddl shows: live_jobs
 *	  (the workers' live state, from shared memory), kind_progress (what
 *	  a job's kind adds to it) and ddl_messages (the messages a job's
 *	  statements raised).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_launcher.h"
#include "engine/job_shmem.h"
#include "engine/kind.h"
#include "pg/pg_lock.h"

PG_FUNCTION_INFO_V1(live_jobs);
PG_FUNCTION_INFO_V1(kind_progress);
PG_FUNCTION_INFO_V1(ddl_messages);
PG_FUNCTION_INFO_V1(restart_not_before);

/* A job of this database that has workers now, as shared memory shows it */
typedef struct LiveJob
{
	int64		job_id;
	pid_t		pid;			/* one of its workers' */
	int			workers;
	int64		rows_done;
	int64		chunks_done;
	int			phase;
	Oid			lock_relid;
	int			lock_mode;
	char		waiting_for[JOB_WAITING_FOR_LEN];
	char		waiting_standby[NAMEDATALEN];
} LiveJob;

/*
 * The pids of the sessions whose locks on a relation stop a job's worker
 * (pid) from taking one in mode, as a list for the view; NULL if none.
 */
static char *
LockHolders(Oid relid, LOCKMODE mode, pid_t pid)
{
	LOCKTAG		tag;
	int			count;
	VirtualTransactionId *holders;
	StringInfoData list;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	holders = GetLockConflicts(&tag, mode, &count);
	initStringInfo(&list);
	for (int i = 0; i < count; i++)
	{
		PGPROC	   *proc = BackendIdGetProc(holders[i].backendId);

		if (proc != NULL && proc->pid != 0 && proc->pid != pid)
			appendStringInfo(&list, "%s%d", list.len > 0 ? ", " : "", (int) proc->pid);
	}
	return list.len > 0 ? list.data : NULL;
}

/*
 * Does a process that blocks this one (a lock it queues for: the
 * transaction of a job's step that commits) wait for the synchronous
 * standby?
 */
static bool
BlockedBySyncRep(pid_t pid)
{
	ListCell   *lc;

	foreach(lc, PgBlockingPids(pid))
	{
		PGPROC	   *blocker = BackendPidGetProc(lfirst_int(lc));

		if (blocker != NULL && *(volatile uint32 *) &blocker->wait_event_info == WAIT_EVENT_SYNC_REP)
			return true;
	}
	return false;
}

/*
 * What a job's worker waits for, as the reader may see it: a standby is
 * named only to those who may read pg_stat_replication's replay positions
 * (pg_read_all_stats), as PostgreSQL shows them
 */
static char *
WaitingFor(const LiveJob *job)
{
	if (job->waiting_standby[0] == '\0')
		return pstrdup(job->waiting_for);
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		return psprintf("standby \"%s\": %s", job->waiting_standby, job->waiting_for);
	return psprintf("a standby: %s", job->waiting_for);
}

/*
 * The jobs of this database that have workers now: one worker's pid, the
 * number of workers, their rows and chunks so far (rows of batches not yet
 * committed included) and phase, the lock its first worker asks for, with the pids
 * of the sessions that hold it, what else that worker waits for, and its
 * wait event (every role reads these here; pg_stat_activity shows another
 * role's only to privileged roles).
 */
Datum
live_jobs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	LiveJob    *jobs = palloc0(sizeof(LiveJob) * background_ddl_max_workers);
	int			njobs = 0;

	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(JobShared->lock, LW_SHARED);
	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobSlot    *slot = &JobShared->jobs[i];
		LiveJob    *job = &jobs[njobs];

		if (slot->database_oid != MyDatabaseId || slot->workers == 0)
			continue;
		for (int w = 0; w < background_ddl_max_workers; w++)
		{
			JobWorkerSlot *worker = &JobShared->workers[w];

			if (worker->in_use && worker->pid != 0 && worker->database_oid == MyDatabaseId &&
				worker->job_id == slot->job_id)
			{
				if (job->pid == 0)
					job->pid = worker->pid;
				job->workers++;
			}
		}
		if (job->workers == 0)
			continue;
		job->workers += slot->parallel_workers;
		job->job_id = slot->job_id;
		job->rows_done = (int64) pg_atomic_read_u64(&slot->rows_done);
		job->chunks_done = slot->chunks_done;
		job->phase = slot->phase;
		job->lock_relid = slot->lock_relid;
		job->lock_mode = slot->lock_mode;
		strlcpy(job->waiting_for, slot->waiting_for, JOB_WAITING_FOR_LEN);
		strlcpy(job->waiting_standby, slot->waiting_standby, NAMEDATALEN);
		njobs++;
	}
	LWLockRelease(JobShared->lock);

	for (int i = 0; i < njobs; i++)
	{
		LiveJob    *job = &jobs[i];
		Datum		values[11];
		bool		nulls[11] = {0};
		const char *phase = CatalogPhaseName((JobPhase) job->phase);
		char	   *holders;
		PGPROC	   *proc = BackendPidGetProc(job->pid);
		const char *wait_event = proc != NULL ?
			pgstat_get_wait_event(*(volatile uint32 *) &proc->wait_event_info) : NULL;

		/* One that waits for a transaction that waits for the synchronous standby waits for it too */
		if (proc != NULL && BlockedBySyncRep(job->pid))
			wait_event = pgstat_get_wait_event(WAIT_EVENT_SYNC_REP);

		values[0] = Int64GetDatum(job->job_id);
		values[1] = Int32GetDatum(job->pid);
		values[2] = Int32GetDatum(job->workers);
		values[3] = Int64GetDatum(job->rows_done);
		values[4] = Int64GetDatum(job->chunks_done);
		values[5] = phase != NULL ? CStringGetTextDatum(phase) : (Datum) 0;
		nulls[5] = phase == NULL;
		nulls[6] = nulls[7] = nulls[8] = true;
		if (OidIsValid(job->lock_relid))
		{
			values[6] = ObjectIdGetDatum(job->lock_relid);
			values[7] = CStringGetTextDatum(GetLockmodeName(DEFAULT_LOCKMETHOD, job->lock_mode));
			nulls[6] = nulls[7] = false;
			holders = LockHolders(job->lock_relid, job->lock_mode, job->pid);
			values[8] = holders != NULL ? CStringGetTextDatum(holders) : (Datum) 0;
			nulls[8] = holders == NULL;
		}
		values[9] = job->waiting_for[0] != '\0' ?
			CStringGetTextDatum(WaitingFor(job)) : (Datum) 0;
		nulls[9] = job->waiting_for[0] == '\0';
		values[10] = wait_event != NULL ? CStringGetTextDatum(wait_event) : (Datum) 0;
		nulls[10] = wait_event == NULL;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * kind_progress(kind, kind_state, rows_done, rows_total, pid): what a job's
 * kind adds to its progress in the view (KindProgress), given the job
 * row's columns and its worker's pid (NULL: none now)
 */
Datum
kind_progress(PG_FUNCTION_ARGS)
{
	BgddlJob	job = {0};
	KindProgress progress;
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8];

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	job.kind = text_to_cstring(PG_GETARG_TEXT_PP(0));
	job.kind_state = PG_GETARG_JSONB_P(1);
	job.rows_done = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
	job.rows_total = PG_ARGISNULL(3) ? -1 : PG_GETARG_INT64(3);
	KindJobProgress(&job, PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4), &progress);

	values[0] = progress.phase != NULL ? CStringGetTextDatum(progress.phase) : (Datum) 0;
	nulls[0] = progress.phase == NULL;
	values[1] = Float8GetDatum(progress.percent);
	nulls[1] = progress.percent < 0;
	values[2] = Int64GetDatum(progress.rows_done);
	nulls[2] = progress.rows_done < 0;
	values[3] = Int64GetDatum(progress.rows_total);
	nulls[3] = progress.rows_total < 0;
	values[4] = Int64GetDatum(progress.chunks_total);
	nulls[4] = progress.chunks_total < 0;
	values[5] = progress.waiting_for != NULL ? CStringGetTextDatum(progress.waiting_for) : (Datum) 0;
	nulls[5] = progress.waiting_for == NULL;
	values[6] = Int32GetDatum((int32) progress.catchup_passes);
	nulls[6] = progress.catchup_passes < 0;
	values[7] = Int64GetDatum(progress.rows_recomputed);
	nulls[7] = progress.rows_recomputed < 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
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
	int64		job_id = PG_GETARG_INT64(0);
	BgddlJob	job;
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		args[] = {Int64GetDatum(job_id)};

	CatalogRequire();
	if (!CatalogJobLoad(job_id, &job, true))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("background DDL job %lld does not exist", (long long) job_id),
				 errhint("pg_stat_background_ddl lists the jobs of this database.")));
	if (!has_privs_of_role(GetUserId(), job.identity.owner_oid) &&
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the messages of background DDL job %lld",
						(long long) job_id),
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

/*
 * restart_not_before(attempt_started_at, attempts): when the scheduler
 * starts a job again whose worker died in that attempt (NULL: at once)
 */
Datum
restart_not_before(PG_FUNCTION_ARGS)
{
	TimestampTz not_before = JobRestartNotBefore(PG_GETARG_TIMESTAMPTZ(0), PG_GETARG_INT32(1));

	if (not_before == 0)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(not_before);
}
