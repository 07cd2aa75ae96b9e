/*-------------------------------------------------------------------------
 *
 * catalog_job.c
 *	  All reads and writes of job rows (background_ddl.job).
 *
 * Every statement here goes through catalog_access.c: as the bootstrap
 * superuser, under a fixed search_path and SECURITY_RESTRICTED_OPERATION,
 * with values bound as parameters.  Callers are inside a transaction with
 * an active snapshot, and have checked that the extension is installed
 * (CatalogRequire), except where a function says otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/timestamp.h"

#include "background_ddl.h"
#include "catalog_access.h"
#include "catalog_job.h"
#include "job_xact.h"
#include "job_shmem.h"

/* The job's limits: max_rate, batch_time (ms), max_workers; 0 for none */
#define JOB_LIMIT_COLUMNS \
	"coalesce(max_rate, 0), coalesce(extract(epoch FROM batch_time) * 1000, 0)::integer, " \
	"coalesce(max_workers, 0) "

/* The columns JobFromRow reads, in order; JOB_COLUMN_COUNT of them */
#define JOB_COLUMN_COUNT 41
#define JOB_COLUMNS \
	"j.id, kind, state, session_user_oid, owner_oid, settings, target_oid, target_name, " \
	"hidden_oid, strategy, driving_oid, blocks_total, chunk_blocks, rows_done, rows_total, " \
	"chunks_done, attempts, in_flight, progress, progress_base, started_at, " \
	"attempt_started_at, capture_relids, capture_filenodes, capture_triggers, " \
	"capture_trigger_xmins, target_filenode, catchup_passes, cleanup_pending, " \
	"error, error_sqlstate, error_detail, error_hint, planned, command, utility_stmt, " \
	"staging_oid, capture_stopped, " JOB_LIMIT_COLUMNS

static char *
NullableTextColumn(uint64 row, int attno)
{
	return CatalogColumnIsNull(row, attno) ? NULL : CatalogTextColumn(row, attno);
}

/* The three JOB_LIMIT_COLUMNS of row 0, from column first_attno on */
static void
LimitsFromRow(BgddlJob *job, int first_attno)
{
	job->max_rate = DatumGetFloat8(CatalogColumn(0, first_attno, Float8GetDatum(0)));
	job->batch_time_ms = DatumGetInt32(CatalogColumn(0, first_attno + 1, Int32GetDatum(0)));
	job->max_workers = DatumGetInt32(CatalogColumn(0, first_attno + 2, Int32GetDatum(0)));
}

/* Copy row 0 of the current SPI result (JOB_COLUMNS) into *job */
static void
JobFromRow(BgddlJob *job)
{
	job->id = DatumGetInt64(CatalogColumn(0, 1, 0));
	job->kind = JobKindFromName(CatalogTextColumn(0, 2));
	job->state = CatalogStateFromName(CatalogTextColumn(0, 3));
	job->identity.session_user_oid = DatumGetObjectId(CatalogColumn(0, 4, 0));
	job->identity.owner_oid = DatumGetObjectId(CatalogColumn(0, 5, 0));
	job->identity.settings = CatalogTextListColumn(0, 6);
	job->target_oid = DatumGetObjectId(CatalogColumn(0, 7, 0));
	job->target_name = CatalogTextColumn(0, 8);
	job->hidden_oid = DatumGetObjectId(CatalogColumn(0, 9, ObjectIdGetDatum(InvalidOid)));
	job->strategy = NullableTextColumn(0, 10);
	job->driving_oid = DatumGetObjectId(CatalogColumn(0, 11, ObjectIdGetDatum(InvalidOid)));
	job->blocks_total = DatumGetInt64(CatalogColumn(0, 12, Int64GetDatum(0)));
	job->chunk_blocks = DatumGetInt32(CatalogColumn(0, 13, Int32GetDatum(0)));
	job->rows_done = DatumGetInt64(CatalogColumn(0, 14, Int64GetDatum(0)));
	job->rows_total = DatumGetInt64(CatalogColumn(0, 15, Int64GetDatum(-1)));
	job->chunks_done = DatumGetInt64(CatalogColumn(0, 16, Int64GetDatum(0)));
	job->attempts = DatumGetInt32(CatalogColumn(0, 17, Int32GetDatum(0)));
	job->in_flight = DatumGetBool(CatalogColumn(0, 18, BoolGetDatum(false)));
	job->progress = DatumGetFloat8(CatalogColumn(0, 19, Float8GetDatum(0)));
	job->progress_base = DatumGetFloat8(CatalogColumn(0, 20, Float8GetDatum(0)));
	job->started_at = DatumGetTimestampTz(CatalogColumn(0, 21, TimestampTzGetDatum(0)));
	job->attempt_started_at = DatumGetTimestampTz(CatalogColumn(0, 22, TimestampTzGetDatum(0)));
	job->capture_relids = CatalogOidListColumn(0, 23);
	job->capture_filenodes = CatalogOidListColumn(0, 24);
	job->capture_triggers = CatalogOidListColumn(0, 25);
	job->capture_trigger_xmins = CatalogOidListColumn(0, 26);
	job->target_filenode = DatumGetObjectId(CatalogColumn(0, 27, ObjectIdGetDatum(InvalidOid)));
	job->catchup_passes = DatumGetInt32(CatalogColumn(0, 28, Int32GetDatum(0)));
	job->cleanup_pending = DatumGetBool(CatalogColumn(0, 29, BoolGetDatum(false)));
	job->error = NullableTextColumn(0, 30);
	job->error_sqlstate = NullableTextColumn(0, 31);
	job->error_detail = NullableTextColumn(0, 32);
	job->error_hint = NullableTextColumn(0, 33);
	job->planned = DatumGetBool(CatalogColumn(0, 34, BoolGetDatum(false)));
	job->command = CatalogTextColumn(0, 35);
	job->utility_stmt = NullableTextColumn(0, 36);
	job->staging_oid = DatumGetObjectId(CatalogColumn(0, 37, ObjectIdGetDatum(InvalidOid)));
	job->capture_stopped = DatumGetBool(CatalogColumn(0, 38, BoolGetDatum(false)));
	LimitsFromRow(job, 39);
}

/* Read row 0 of the current SPI result into *job, in the caller's context */
static void
JobFromRowInto(CatalogAccess *access, BgddlJob *job)
{
	MemoryContext spi_context = MemoryContextSwitchTo(access->caller_context);

	JobFromRow(job);
	MemoryContextSwitchTo(spi_context);
}

/*
 * NOTIFY background_ddl, '<id> <state>': delivered to listeners when the
 * transaction that changed the job's state commits, never if it aborts.
 * job_xact.c adds the NOTIFY just before the commit (in every process:
 * a client's transaction may still be prepared).
 */
static void
JobNotifyState(int64 job_id, JobState state)
{
	JobXactNotify(job_id, CatalogStateName(state));
}

/* Persist a new job as queued; returns its id */
int64
CatalogJobInsert(const BgddlJobSubmission *submission)
{
	CatalogAccess access;
	Oid			argtypes[] = {OIDOID, OIDOID, OIDOID, TEXTOID, OIDOID, TEXTOID, OIDOID,
	TEXTOID, TEXTARRAYOID, TEXTOID, OIDOID, TEXTOID};
	Datum		values[12];
	char		nulls[] = {' ', ' ', ' ', ' ', ' ', ' ',
		OidIsValid(submission->hidden_oid) ? ' ' : 'n', ' ', ' ',
		submission->strategy ? ' ' : 'n', OidIsValid(submission->driving_oid) ? ' ' : 'n',
	submission->utility_stmt ? ' ' : 'n'};
	int64		job_id;

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = ObjectIdGetDatum(submission->identity.session_user_oid);
	values[2] = ObjectIdGetDatum(submission->identity.owner_oid);
	values[3] = CStringGetTextDatum(JobKindName(submission->kind));
	values[4] = ObjectIdGetDatum(submission->target_oid);
	values[5] = CStringGetTextDatum(submission->target_name);
	values[6] = ObjectIdGetDatum(submission->hidden_oid);
	values[7] = CStringGetTextDatum(submission->command);
	values[8] = CatalogTextArray(submission->identity.settings);
	values[9] = submission->strategy ? CStringGetTextDatum(submission->strategy) : (Datum) 0;
	values[10] = ObjectIdGetDatum(submission->driving_oid);
	values[11] = submission->utility_stmt ? CStringGetTextDatum(submission->utility_stmt) : (Datum) 0;

	CatalogAccessBegin(&access);
	CatalogExecute("INSERT INTO background_ddl.job "
				   "(database_oid, session_user_oid, owner_oid, kind, target_oid, target_name, "
				   " hidden_oid, command, settings, strategy, driving_oid, utility_stmt) "
				   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
				   lengthof(values), argtypes, values, nulls, SPI_OK_INSERT_RETURNING);
	job_id = DatumGetInt64(CatalogColumn(0, 1, Int64GetDatum(0)));
	CatalogAccessEnd(&access);

	JobNotifyState(job_id, JOB_STATE_QUEUED);
	return job_id;
}

/*
 * Read a job into *job (allocated in the caller's memory context).  With
 * latest, read it under a fresh snapshot, so that a caller in a REPEATABLE
 * READ transaction, or a waiting one, still sees the job move.  Returns
 * false if there is no such job.
 */
bool
CatalogJobLoad(int64 job_id, BgddlJob *job, bool latest)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};
	const char *sql = "SELECT " JOB_COLUMNS "FROM background_ddl.job j WHERE j.id = $1";
	bool		found;

	CatalogAccessBegin(&access);
	if (latest)
		CatalogExecuteLatest(sql, 1, argtypes, values, SPI_OK_SELECT);
	else
		CatalogExecute(sql, 1, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
		JobFromRowInto(&access, job);
	CatalogAccessEnd(&access);
	return found;
}

/*
 * The jobs that may need a worker (unfinished, or ended with capture
 * triggers left to drop), oldest first, as JobScheduleEntry; a paused job
 * is listed (it keeps the scheduler's database known) but needs none.
 */
List *
CatalogJobsSchedulable(void)
{
	CatalogAccess access;
	List	   *entries = NIL;

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT id, state <> 'paused', in_flight, attempts, attempt_started_at, "
				   "coalesce(max_workers, 0), owner_oid, coalesce(not_before, '-infinity') "
				   "FROM background_ddl.job "
				   "WHERE state IN ('queued', 'running', 'paused', 'cancelling') "
				   "   OR (state IN ('succeeded', 'failed', 'cancelled') AND cleanup_pending) "
				   "ORDER BY id", 0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access.caller_context);
		JobScheduleEntry *entry = palloc(sizeof(JobScheduleEntry));

		entry->id = DatumGetInt64(CatalogColumn(row, 1, 0));
		entry->needs_worker = DatumGetBool(CatalogColumn(row, 2, BoolGetDatum(false)));
		entry->in_flight = DatumGetBool(CatalogColumn(row, 3, BoolGetDatum(false)));
		entry->attempts = DatumGetInt32(CatalogColumn(row, 4, Int32GetDatum(0)));
		entry->attempt_started_at =
			DatumGetTimestampTz(CatalogColumn(row, 5, TimestampTzGetDatum(0)));
		entry->max_workers = DatumGetInt32(CatalogColumn(row, 6, Int32GetDatum(0)));
		entry->owner_oid = DatumGetObjectId(CatalogColumn(row, 7, ObjectIdGetDatum(InvalidOid)));
		entry->not_before = DatumGetTimestampTz(CatalogColumn(row, 8, TimestampTzGetDatum(0)));
		entries = lappend(entries, entry);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return entries;
}

/* The unfinished job that builds (or refreshes) a relation, or 0 */
int64
CatalogJobBuilding(Oid target_oid)
{
	CatalogAccess access;
	Oid			argtypes[] = {OIDOID};
	Datum		values[] = {ObjectIdGetDatum(target_oid)};
	int64		job_id = 0;

	CatalogAccessBegin(&access);
	CatalogExecuteLatest("SELECT id FROM background_ddl.job WHERE target_oid = $1 "
						 "AND state IN ('queued', 'running', 'paused', 'cancelling') "
						 "ORDER BY id DESC LIMIT 1",
						 1, argtypes, values, SPI_OK_SELECT);
	if (SPI_processed > 0)
		job_id = DatumGetInt64(CatalogColumn(0, 1, 0));
	CatalogAccessEnd(&access);
	return job_id;
}

/* Ids of the jobs that are not over (unfinished, or triggers left), as int64 List */
List *
CatalogJobsUnfinished(void)
{
	CatalogAccess access;
	List	   *ids = NIL;

	CatalogAccessBegin(&access);
	CatalogExecuteLatest("SELECT id FROM background_ddl.job "
						 "WHERE state IN ('queued', 'running', 'paused', 'cancelling') "
						 "OR cleanup_pending ORDER BY id", 0, NULL, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access.caller_context);
		int64	   *id = palloc(sizeof(int64));

		*id = DatumGetInt64(CatalogColumn(row, 1, 0));
		ids = lappend(ids, id);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return ids;
}

/*
 * Take a job for this worker and read it into *job.  A queued or running
 * job becomes running; it counts as a new attempt only if it is the first,
 * or if the worker before us did not let go of it cleanly (a crash, a
 * transient error), and not beyond max_attempts: *exhausted then says that
 * the job has had all its attempts.  Returns false if the job needs no
 * worker.  Caller holds the job lock.
 */
bool
CatalogJobClaim(int64 job_id, int32 max_attempts, BgddlJob *job, bool *exhausted)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT4OID};
	Datum		values[] = {Int64GetDatum(job_id), Int32GetDatum(max_attempts)};
	bool		found;

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job j SET "
				   "attempts = j.attempts + CASE WHEN j.state IN ('queued', 'running') "
				   "  AND (j.in_flight OR j.attempts = 0) AND j.attempts < $2 THEN 1 ELSE 0 END, "
				   "in_flight = j.state IN ('queued', 'running'), "
				   "started_at = CASE WHEN j.state IN ('queued', 'running') "
				   "  THEN coalesce(j.started_at, now()) ELSE j.started_at END, "
				   "attempt_started_at = now(), not_before = NULL, given_back_for = NULL, "
				   "phase = CASE WHEN j.state IN ('queued', 'running') THEN 'starting' ELSE j.phase END, "
				   "state = CASE WHEN j.state IN ('queued', 'running') THEN 'running' ELSE j.state END "
				   "FROM (SELECT in_flight AND attempts >= $2 AS exhausted, state AS old_state "
				   "      FROM background_ddl.job WHERE id = $1) old "
				   "WHERE j.id = $1 AND (j.state IN ('queued', 'running', 'cancelling') "
				   "  OR (j.state IN ('succeeded', 'failed', 'cancelled') AND j.cleanup_pending)) "
				   "RETURNING " JOB_COLUMNS ", old.exhausted, old.old_state <> j.state",
				   2, argtypes, values, NULL, SPI_OK_UPDATE_RETURNING);
	found = SPI_processed == 1;
	if (found)
	{
		JobFromRowInto(&access, job);
		*exhausted = DatumGetBool(CatalogColumn(0, JOB_COLUMN_COUNT + 1, BoolGetDatum(false)));
		if (DatumGetBool(CatalogColumn(0, JOB_COLUMN_COUNT + 2, BoolGetDatum(false))))
			JobNotifyState(job_id, job->state);
	}
	CatalogAccessEnd(&access);
	return found;
}

void
CatalogJobSetPhase(int64 job_id, JobPhase phase)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TEXTOID};
	const char *name = CatalogPhaseName(phase);
	Datum		values[] = {Int64GetDatum(job_id), name ? CStringGetTextDatum(name) : (Datum) 0};
	char		nulls[] = {' ', name ? ' ' : 'n'};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET phase = $2 WHERE id = $1",
				   2, argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
	JobPublishPhase(phase);
}

/*
 * Move a job to queued, paused or cancelling (a control function's doing):
 * its worker, if any, has let go cleanly.
 */
void
CatalogJobSetState(int64 job_id, JobState state)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TEXTOID};
	Datum		values[] = {Int64GetDatum(job_id), CStringGetTextDatum(CatalogStateName(state))};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET state = $2, in_flight = false, "
				   "phase = CASE WHEN $2 = 'cancelling' THEN 'cleaning up' END, eta = NULL, "
				   "error = NULL, error_sqlstate = NULL, error_detail = NULL, error_hint = NULL "
				   "WHERE id = $1", 2, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
	JobNotifyState(job_id, state);
}

/* Record how the job's content is computed */
void
CatalogJobRecordPlan(const BgddlJob *job)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TEXTOID, OIDOID, INT8OID, INT8OID, INT4OID, OIDOID};
	Datum		values[] = {Int64GetDatum(job->id), CStringGetTextDatum(job->strategy),
		ObjectIdGetDatum(job->driving_oid), Int64GetDatum(job->blocks_total),
		Int64GetDatum(job->rows_total), Int32GetDatum(job->chunk_blocks),
	ObjectIdGetDatum(job->target_filenode)};
	char		nulls[] = {' ', ' ', OidIsValid(job->driving_oid) ? ' ' : 'n', ' ',
		job->rows_total >= 0 ? ' ' : 'n', ' ', OidIsValid(job->target_filenode) ? ' ' : 'n'};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET planned = true, strategy = $2, driving_oid = $3, "
				   "blocks_total = $4, rows_total = $5, chunk_blocks = $6, target_filenode = $7 "
				   "WHERE id = $1", lengthof(values), argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/*
 * The job is built in the session that submitted it (the submitting
 * transaction used its target): strategy says so.
 */
void
CatalogJobRecordBuiltHere(int64 job_id, const char *strategy)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TEXTOID};
	Datum		values[] = {Int64GetDatum(job_id), CStringGetTextDatum(strategy)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET planned = true, strategy = $2, "
				   "started_at = now(), attempt_started_at = now() WHERE id = $1",
				   lengthof(values), argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Set one OID column of a job's row (column is a constant of ours) */
static void
RecordOid(int64 job_id, const char *column, Oid value)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, OIDOID};
	Datum		values[] = {Int64GetDatum(job_id), ObjectIdGetDatum(value)};

	CatalogAccessBegin(&access);
	CatalogExecute(psprintf("UPDATE background_ddl.job SET %s = $2 WHERE id = $1", column),
				   2, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Record the heap the job fills before its cut-over */
void
CatalogJobRecordHidden(int64 job_id, Oid hidden_oid)
{
	RecordOid(job_id, "hidden_oid", hidden_oid);
}

/* Record the object the job builds (an index job's placeholder, then its index) */
void
CatalogJobRecordTarget(int64 job_id, Oid target_oid)
{
	RecordOid(job_id, "target_oid", target_oid);
}

/*
 * Count a committed chunk of rows rows and blocks blocks in the job's row,
 * in the chunk's transaction (several workers add theirs), and read back
 * the job's totals into *job.  seconds_per_block is the job's pace (this
 * chunk's, shared by the job's workers), for the estimate of the time left.
 */
void
CatalogJobRecordChunk(BgddlJob *job, int64 rows, int64 blocks, double seconds_per_block)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID, INT8OID, INT4OID, FLOAT8OID};
	Datum		values[] = {Int64GetDatum(job->id), Int64GetDatum(rows), Int64GetDatum(blocks),
	Int32GetDatum(job->chunk_blocks), Float8GetDatum(seconds_per_block)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET rows_done = rows_done + $2, "
				   "chunks_done = chunks_done + 1, blocks_done = blocks_done + $3, "
				   "chunk_blocks = $4, "
				   "chunks_total = chunks_done + 1 + "
				   "  ceil(greatest(blocks_total - blocks_done - $3, 0) / $4::float8), "
				   "progress = greatest(progress, progress_base + (99.9 - progress_base) * "
				   "  least(1.0, (blocks_done + $3) / greatest(blocks_total, 1)::float8)), "
				   "rate = (rows_done + $2) / "
				   "  greatest(extract(epoch FROM clock_timestamp() - attempt_started_at), 0.001), "
				   "eta = make_interval(secs => round(greatest(blocks_total - blocks_done - $3, 0) * $5)) "
				   "WHERE id = $1 RETURNING rows_done, chunks_done, progress, " JOB_LIMIT_COLUMNS,
				   lengthof(values), argtypes, values, NULL, SPI_OK_UPDATE_RETURNING);
	job->rows_done = DatumGetInt64(CatalogColumn(0, 1, 0));
	job->chunks_done = DatumGetInt64(CatalogColumn(0, 2, 0));
	job->progress = DatumGetFloat8(CatalogColumn(0, 3, 0));
	LimitsFromRow(job, 4);
	CatalogAccessEnd(&access);
}

/*
 * Change a job's limits (alter_ddl): max_rate 0 keeps it, a negative one
 * lifts it; batch_time_ms and max_workers 0 keep them.  A job whose worker
 * was given back (waiting for its rate limit) may have one at once.
 */
void
CatalogJobSetLimits(int64 job_id, double max_rate, int batch_time_ms, int max_workers)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, FLOAT8OID, INT4OID, INT4OID};
	Datum		values[] = {Int64GetDatum(job_id), Float8GetDatum(max_rate),
		Int32GetDatum(batch_time_ms), Int32GetDatum(max_workers)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET "
				   "max_rate = CASE WHEN $2 < 0 THEN NULL WHEN $2 > 0 THEN $2 ELSE max_rate END, "
				   "batch_time = CASE WHEN $3 > 0 THEN $3 * interval '1 ms' ELSE batch_time END, "
				   "max_workers = CASE WHEN $4 > 0 THEN $4 ELSE max_workers END, "
				   /* a worker given back may be wanted now */
				   "not_before = NULL, given_back_for = NULL "
				   "WHERE id = $1", lengthof(values), argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Read the job's current limits into *job.  Caller is in a transaction. */
void
CatalogJobReadLimits(BgddlJob *job)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job->id)};

	CatalogAccessBegin(&access);
	CatalogExecuteLatest("SELECT " JOB_LIMIT_COLUMNS "FROM background_ddl.job WHERE id = $1",
						 1, argtypes, values, SPI_OK_SELECT);
	if (SPI_processed == 1)
		LimitsFromRow(job, 1);
	CatalogAccessEnd(&access);
}

static Datum
XminArray(List *xmins)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(xmins), 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, xmins)
		elems[i++] = Int64GetDatum((int64) lfirst_oid(lc));
	return PointerGetDatum(construct_array(elems, i, INT8OID, sizeof(int64),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* Record the capture: base relations, their relfilenodes, our triggers */
void
CatalogJobRecordCapture(const BgddlJob *job)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, OIDARRAYOID, OIDARRAYOID, OIDARRAYOID, INT8ARRAYOID,
	INT8OID, OIDOID};
	Datum		values[] = {Int64GetDatum(job->id), CatalogOidArray(job->capture_relids),
		CatalogOidArray(job->capture_filenodes), CatalogOidArray(job->capture_triggers),
		XminArray(job->capture_trigger_xmins), Int64GetDatum(job->blocks_total),
	ObjectIdGetDatum(job->staging_oid)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET capture_relids = $2, capture_filenodes = $3, "
				   "capture_triggers = $4, capture_trigger_xmins = $5, blocks_total = $6, "
				   "staging_oid = NULLIF($7, 0), cleanup_pending = cardinality($4) > 0 WHERE id = $1",
				   lengthof(values), argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Progress of the catch-up: rows in the result, changed rows waiting, passes */
void
CatalogJobSetCounters(int64 job_id, int64 rows_done, int64 dirty_rows, int32 catchup_passes)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID, INT8OID, INT4OID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(rows_done),
		Int64GetDatum(dirty_rows), Int32GetDatum(catchup_passes)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET rows_done = $2, dirty_rows = $3, "
				   "catchup_passes = $4 WHERE id = $1",
				   lengthof(values), argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Read the backfill's totals, which all the job's workers add to, into *job */
void
CatalogJobReadProgress(BgddlJob *job)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job->id)};

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT rows_done, chunks_done, progress FROM background_ddl.job WHERE id = $1",
				   1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		job->rows_done = DatumGetInt64(CatalogColumn(0, 1, 0));
		job->chunks_done = DatumGetInt64(CatalogColumn(0, 2, 0));
		job->progress = DatumGetFloat8(CatalogColumn(0, 3, 0));
	}
	CatalogAccessEnd(&access);
}

/*
 * The job's backlog outgrew its bound: its capture triggers log nothing
 * more for it (capture_trigger.c; capture_log.c logs the whole_table mark that
 * stands for every change).
 */
void
CatalogJobStopCapture(int64 job_id)
{
	static const char *const statements[] = {
		"UPDATE background_ddl.job SET capture_stopped = true, dirty_rows = 0 WHERE id = $1"};
	static const int results[] = {SPI_OK_UPDATE};

	CatalogExecuteForJob(job_id, lengthof(statements), statements, results);
}

/* Mark (or clear) that capture triggers of the job remain to be dropped */
void
CatalogJobSetCleanupPending(int64 job_id, bool pending)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, BOOLOID};
	Datum		values[] = {Int64GetDatum(job_id), BoolGetDatum(pending)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET cleanup_pending = $2, "
				   "capture_triggers = CASE WHEN $2 THEN capture_triggers END, "
				   "phase = CASE WHEN state IN ('queued', 'running') THEN phase "
				   "  WHEN $2 THEN 'cleaning up' END "
				   "WHERE id = $1", 2, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

static void
ErrorValues(const JobError *error, Datum *values, char *nulls)
{
	const char *fields[4];

	fields[0] = error ? error->message : NULL;
	fields[1] = error ? error->sqlstate : NULL;
	fields[2] = error ? error->detail : NULL;
	fields[3] = error ? error->hint : NULL;
	for (int i = 0; i < 4; i++)
	{
		values[i] = fields[i] ? CStringGetTextDatum(fields[i]) : (Datum) 0;
		nulls[i] = fields[i] ? ' ' : 'n';
	}
}

/*
 * Record an error the job met without ending (one a later attempt may not
 * meet); with in_flight false, the worker lets go cleanly (not an attempt).
 */
void
CatalogJobRecordError(int64 job_id, const JobError *error, bool in_flight)
{
	CatalogAccess access;
	Oid			argtypes[] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, BOOLOID};
	Datum		values[6];
	char		nulls[6];

	ErrorValues(error, values, nulls);
	values[4] = Int64GetDatum(job_id);
	nulls[4] = ' ';
	values[5] = BoolGetDatum(in_flight);
	nulls[5] = ' ';
	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET error = $1, error_sqlstate = $2, "
				   "error_detail = $3, error_hint = $4, in_flight = $6 WHERE id = $5",
				   lengthof(values), argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/*
 * The worker lets go of the job cleanly (shutdown, or it gives its worker
 * back): not an attempt.  With not_before (not 0), no worker starts on it
 * again before then; why says what it waits for meanwhile.
 */
void
CatalogJobLetGo(int64 job_id, TimestampTz not_before, const char *why)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TIMESTAMPTZOID, TEXTOID};
	Datum		values[] = {Int64GetDatum(job_id), TimestampTzGetDatum(not_before),
	why ? CStringGetTextDatum(why) : (Datum) 0};
	char		nulls[] = {' ', not_before != 0 ? ' ' : 'n', why ? ' ' : 'n'};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET in_flight = false, not_before = $2, "
				   "given_back_for = $3 WHERE id = $1",
				   lengthof(values), argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/*
 * End a job: succeeded, failed or cancelled.  With record_cutover_snapshot,
 * the current transaction's snapshot is the one the result equals.  A
 * successful job's rate becomes the whole build's; target_name (if not
 * NULL) is the object's name now.
 */
void
CatalogJobFinish(int64 job_id, JobState state, const JobError *error,
		  bool record_cutover_snapshot, int64 rows_done, const char *target_name)
{
	CatalogAccess access;
	Oid			argtypes[] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, BOOLOID,
	INT8OID, TEXTOID};
	Datum		values[9];
	char		nulls[9];

	Assert(JobStateIsFinal(state));
	ErrorValues(error, values, nulls);
	values[4] = Int64GetDatum(job_id);
	values[5] = CStringGetTextDatum(CatalogStateName(state));
	values[6] = BoolGetDatum(record_cutover_snapshot);
	values[7] = Int64GetDatum(rows_done);
	values[8] = target_name ? CStringGetTextDatum(target_name) : (Datum) 0;
	memset(nulls + 4, ' ', 5);
	nulls[7] = rows_done >= 0 ? ' ' : 'n';
	nulls[8] = target_name ? ' ' : 'n';

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET state = $6, error = $1, error_sqlstate = $2, "
				   "error_detail = $3, error_hint = $4, in_flight = false, "
				   "phase = CASE WHEN cleanup_pending THEN 'cleaning up' END, "
				   "finished_at = now_.t, eta = NULL, rows_done = coalesce($8, rows_done), "
				   "dirty_rows = 0, target_name = coalesce($9, target_name), "
				   "progress = CASE WHEN $6 = 'succeeded' THEN 100 ELSE progress END, "
				   "chunks_done = CASE WHEN $6 = 'succeeded' AND driving_oid IS NULL "
				   "  THEN 1 ELSE chunks_done END, "
				   "chunks_total = CASE WHEN $6 = 'succeeded' AND driving_oid IS NULL "
				   "  THEN 1 ELSE chunks_total END, "
				   "rate = CASE WHEN $6 = 'succeeded' THEN coalesce($8, rows_done) / "
				   "  greatest(extract(epoch FROM now_.t - started_at), 0.001) ELSE rate END, "
				   "cutover_snapshot = CASE WHEN $7 THEN pg_current_snapshot()::text END, "
				   "cutover_at = CASE WHEN $6 = 'succeeded' THEN now_.t END, "
				   /* the submitter's settings are needed no more: not kept in the history */
				   "settings = '{}' "
				   "FROM (SELECT clock_timestamp() AS t) now_ WHERE id = $5",
				   lengthof(values), argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
	JobNotifyState(job_id, state);
}

/*
 * Start the build over (the driving table or the content relation was
 * rewritten: every tuple id changed).  Progress keeps moving forward: the
 * new build covers what is left between the old progress and 100.
 */
void
CatalogJobRestartBuild(BgddlJob *job)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID, OIDARRAYOID, OIDOID};
	Datum		values[] = {Int64GetDatum(job->id), Int64GetDatum(job->blocks_total),
		CatalogOidArray(job->capture_filenodes), ObjectIdGetDatum(job->target_filenode)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET blocks_total = $2, capture_filenodes = $3, "
				   "target_filenode = $4, progress_base = progress, rows_done = 0, "
				   "chunks_done = 0, blocks_done = 0, dirty_rows = 0, catchup_passes = 0 "
				   "WHERE id = $1",
				   lengthof(values), argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
	job->progress_base = job->progress;
	job->rows_done = 0;
	job->chunks_done = 0;
	job->catchup_passes = 0;
}

/*
 * Forget jobs that ended longer ago than the retention (and whose capture
 * triggers are gone).
 */
void
CatalogJobsPurge(int retention_seconds)
{
	CatalogAccess access;
	Oid			argtypes[] = {FLOAT8OID};
	Datum		values[] = {Float8GetDatum(retention_seconds)};

	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.job "
				   "WHERE state IN ('succeeded', 'failed', 'cancelled') AND NOT cleanup_pending "
				   "AND finished_at < now() - make_interval(secs => $1)",
				   1, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogAccessEnd(&access);
}
