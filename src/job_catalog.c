/*-------------------------------------------------------------------------
 *
 * job_catalog.c
 *	  All reads and writes of the job catalog tables.
 *
 * Ordinary roles have no privilege on background_ddl.job and .chunk: they
 * submit jobs through the ProcessUtility hook and read them through
 * pg_stat_background_ddl.  So every access here runs as the bootstrap
 * superuser, under a fixed search_path, whatever the session around it has
 * set: a submitting role must not be able to redirect these statements to
 * objects of its own.  Only the statements below ever run that way; none of
 * them takes user-supplied SQL text, only values bound as parameters.
 *
 * Callers are inside a transaction with an active snapshot, except where a
 * function says otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "storage/itemptr.h"

#include "background_ddl.h"
#include "job_catalog.h"

#ifndef DatumGetItemPointer
#define DatumGetItemPointer(X)	((ItemPointer) DatumGetPointer(X))
#define ItemPointerGetDatum(X)	PointerGetDatum(X)
#endif

/* Saved state of the session around a catalog access */
typedef struct CatalogAccess
{
	Oid			saved_userid;
	int			saved_sec_context;
	int			guc_nest_level;
} CatalogAccess;

static void
CatalogAccessBegin(CatalogAccess *access)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GetUserIdAndSecContext(&access->saved_userid, &access->saved_sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   access->saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	access->guc_nest_level = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
}

static void
CatalogAccessEnd(CatalogAccess *access)
{
	AtEOXact_GUC(true, access->guc_nest_level);
	SetUserIdAndSecContext(access->saved_userid, access->saved_sec_context);
	SPI_finish();
}

/*
 * Run one catalog statement.  Errors out unless SPI reports expected_result;
 * returns the number of rows processed.
 */
static uint64
CatalogExecute(const char *sql, int nargs, Oid *argtypes, Datum *values,
			   const char *nulls, int expected_result)
{
	int			result;

	result = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	if (result != expected_result)
		elog(ERROR, "background_ddl catalog statement failed (%d): %s", result, sql);
	return SPI_processed;
}

/* Fetch column attno of the current SPI result row, or null_value */
static Datum
CatalogColumn(uint64 row, int attno, Datum null_value)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
									  attno, &isnull);

	return isnull ? null_value : value;
}

static char *
CatalogTextColumn(uint64 row, int attno)
{
	return TextDatumGetCString(CatalogColumn(row, attno,
											 CStringGetTextDatum("")));
}

/* An oid[] column as a List of Oids (NIL if NULL) */
static List *
CatalogOidListColumn(uint64 row, int attno)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
									  attno, &isnull);
	List	   *oids = NIL;
	Datum	   *elems;
	int			nelems;

	if (isnull)
		return NIL;
	deconstruct_array(DatumGetArrayTypeP(value), OIDOID, sizeof(Oid), true,
					  TYPALIGN_INT, &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
		oids = lappend_oid(oids, DatumGetObjectId(elems[i]));
	return oids;
}

static Datum
OidListDatum(List *oids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, oids)
		elems[i++] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(elems, i, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

static Datum
TidArrayDatum(ItemPointer tids, int ntids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(ntids, 1));

	for (int i = 0; i < ntids; i++)
		elems[i] = ItemPointerGetDatum(&tids[i]);
	return PointerGetDatum(construct_array(elems, ntids, TIDOID, sizeof(ItemPointerData),
										   false, TYPALIGN_SHORT));
}

/*
 * Does this database have the extension's catalog?  Callable without an
 * active snapshot; needs a transaction.
 */
bool
JobCatalogExists(void)
{
	Oid			namespace_oid = get_namespace_oid(BGDDL_SCHEMA_NAME, true);

	return OidIsValid(namespace_oid) &&
		OidIsValid(get_relname_relid("job", namespace_oid));
}

/* Persist a new job as queued; returns its id */
int64
JobInsert(const BgddlJobSubmission *submission)
{
	CatalogAccess access;
	Oid			argtypes[] = {OIDOID, OIDOID, TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		values[7];
	Datum	   *setting_datums;
	int			nsettings = list_length(submission->settings);
	int			i = 0;
	ListCell   *lc;
	int64		job_id;

	setting_datums = palloc(sizeof(Datum) * Max(nsettings, 1));
	foreach(lc, submission->settings)
		setting_datums[i++] = CStringGetTextDatum((char *) lfirst(lc));

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = ObjectIdGetDatum(submission->owner_oid);
	values[2] = CStringGetTextDatum(submission->kind);
	values[3] = ObjectIdGetDatum(submission->target_oid);
	values[4] = CStringGetTextDatum(submission->target_name);
	values[5] = CStringGetTextDatum(submission->command);
	values[6] = PointerGetDatum(construct_array(setting_datums, nsettings, TEXTOID,
												-1, false, TYPALIGN_INT));

	CatalogAccessBegin(&access);
	CatalogExecute("INSERT INTO background_ddl.job "
				   "(database_oid, owner_oid, kind, target_oid, target_name, command, settings) "
				   "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
				   7, argtypes, values, NULL, SPI_OK_INSERT_RETURNING);
	job_id = DatumGetInt64(CatalogColumn(0, 1, Int64GetDatum(0)));
	CatalogAccessEnd(&access);

	return job_id;
}

#define JOB_COLUMNS \
	"id, database_oid, owner_oid, kind, target_oid, target_name, state, settings, " \
	"driving_oid, blocks_total, next_block, chunk_blocks, rows_done, rows_total, " \
	"chunks_done, attempts, progress, started_at, capture_relids, capture_filenodes, " \
	"catchup_passes, cleanup_pending "

/* Copy row 0 of the current SPI result (JOB_COLUMNS) into *job */
static void
JobFromRow(BgddlJob *job)
{
	bool		isnull;
	Datum		settings;

	job->id = DatumGetInt64(CatalogColumn(0, 1, 0));
	job->database_oid = DatumGetObjectId(CatalogColumn(0, 2, 0));
	job->owner_oid = DatumGetObjectId(CatalogColumn(0, 3, 0));
	job->kind = CatalogTextColumn(0, 4);
	job->target_oid = DatumGetObjectId(CatalogColumn(0, 5, 0));
	job->target_name = CatalogTextColumn(0, 6);
	job->state = CatalogTextColumn(0, 7);

	job->settings = NIL;
	settings = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 8, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		int			nelems;

		deconstruct_array(DatumGetArrayTypeP(settings), TEXTOID, -1, false,
						  TYPALIGN_INT, &elems, NULL, &nelems);
		for (int i = 0; i < nelems; i++)
			job->settings = lappend(job->settings, TextDatumGetCString(elems[i]));
	}

	(void) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 10, &isnull);
	job->planned = !isnull;
	job->driving_oid = DatumGetObjectId(CatalogColumn(0, 9, ObjectIdGetDatum(InvalidOid)));
	job->blocks_total = DatumGetInt64(CatalogColumn(0, 10, Int64GetDatum(0)));
	job->next_block = DatumGetInt64(CatalogColumn(0, 11, Int64GetDatum(0)));
	job->chunk_blocks = DatumGetInt32(CatalogColumn(0, 12, Int32GetDatum(0)));
	job->rows_done = DatumGetInt64(CatalogColumn(0, 13, Int64GetDatum(0)));
	job->rows_total = DatumGetInt64(CatalogColumn(0, 14, Int64GetDatum(-1)));
	job->chunks_done = DatumGetInt64(CatalogColumn(0, 15, Int64GetDatum(0)));
	job->attempts = DatumGetInt32(CatalogColumn(0, 16, Int32GetDatum(0)));
	job->progress = DatumGetFloat8(CatalogColumn(0, 17, Float8GetDatum(0)));
	job->started_at = DatumGetTimestampTz(CatalogColumn(0, 18, TimestampTzGetDatum(0)));
	job->capture_relids = CatalogOidListColumn(0, 19);
	job->capture_filenodes = CatalogOidListColumn(0, 20);
	job->catchup_passes = DatumGetInt32(CatalogColumn(0, 21, Int32GetDatum(0)));
	job->cleanup_pending = DatumGetBool(CatalogColumn(0, 22, BoolGetDatum(false)));
}

/*
 * Read a job of this database into *job (allocated in the caller's memory
 * context).  With latest, read it under a fresh snapshot, so that a caller in
 * a REPEATABLE READ transaction still sees the job move.  Returns false if
 * there is no such job.
 */
bool
JobLoad(int64 job_id, BgddlJob *job, bool latest)
{
	CatalogAccess access;
	MemoryContext caller_context = CurrentMemoryContext;
	Oid			argtypes[] = {INT8OID, OIDOID};
	Datum		values[] = {Int64GetDatum(job_id), ObjectIdGetDatum(MyDatabaseId)};
	const char *sql = "SELECT " JOB_COLUMNS "FROM background_ddl.job "
		"WHERE id = $1 AND database_oid = $2";
	bool		found;

	CatalogAccessBegin(&access);
	if (latest)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, 2, argtypes);

		if (plan == NULL ||
			SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(),
								 InvalidSnapshot, true, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read background DDL job " INT64_FORMAT, job_id);
	}
	else
		CatalogExecute(sql, 2, argtypes, values, NULL, SPI_OK_SELECT);

	found = SPI_processed == 1;
	if (found)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(caller_context);

		JobFromRow(job);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return found;
}

/* Ids of the queued and running jobs of this database, oldest first */
List *
JobListUnfinished(void)
{
	CatalogAccess access;
	MemoryContext caller_context = CurrentMemoryContext;
	List	   *job_ids = NIL;
	Oid			argtypes[] = {OIDOID};
	Datum		values[] = {ObjectIdGetDatum(MyDatabaseId)};

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT id FROM background_ddl.job "
				   "WHERE (state IN ('queued', 'running') OR cleanup_pending) "
				   "AND database_oid = $1 ORDER BY id",
				   1, argtypes, values, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(caller_context);
		int64	   *job_id = palloc(sizeof(int64));

		*job_id = DatumGetInt64(CatalogColumn(row, 1, 0));
		job_ids = lappend(job_ids, job_id);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return job_ids;
}

/* The unfinished job that builds a relation, or 0 */
int64
JobFindUnfinishedByTarget(Oid target_oid)
{
	CatalogAccess access;
	Oid			argtypes[] = {OIDOID, OIDOID};
	Datum		values[] = {ObjectIdGetDatum(target_oid), ObjectIdGetDatum(MyDatabaseId)};
	int64		job_id = 0;

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT id FROM background_ddl.job WHERE target_oid = $1 "
				   "AND database_oid = $2 AND state IN ('queued', 'running')",
				   2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		job_id = DatumGetInt64(CatalogColumn(0, 1, 0));
	CatalogAccessEnd(&access);
	return job_id;
}

/*
 * A worker takes a job: if it is still queued or running, mark it running
 * under this process, count the attempt, and load it into *job.  Returns
 * false if the job has ended meanwhile.
 */
bool
JobClaim(int64 job_id, BgddlJob *job)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT4OID};
	Datum		values[] = {Int64GetDatum(job_id), Int32GetDatum(MyProcPid)};
	uint64		claimed;

	CatalogAccessBegin(&access);
	claimed = CatalogExecute("UPDATE background_ddl.job SET "
							 "state = CASE WHEN state = 'queued' THEN 'running' ELSE state END, "
							 "attempts = attempts + CASE WHEN state IN ('queued', 'running') THEN 1 ELSE 0 END, "
							 "pid = $2, started_at = coalesce(started_at, now()), "
							 "phase = CASE WHEN state IN ('queued', 'running') "
							 "  THEN coalesce(phase, 'starting') ELSE 'cleaning up' END "
							 "WHERE id = $1 AND (state IN ('queued', 'running') OR cleanup_pending)",
							 2, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);

	return claimed == 1 && JobLoad(job_id, job, false);
}

void
JobSetPhase(int64 job_id, const char *phase)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TEXTOID};
	Datum		values[] = {Int64GetDatum(job_id), CStringGetTextDatum(phase)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET phase = $2 WHERE id = $1",
				   2, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/*
 * Record how the backfill is split: the driving table (InvalidOid for one
 * batch) and its size in blocks, and the estimated number of rows.
 */
void
JobRecordPlan(int64 job_id, Oid driving_oid, int64 blocks_total,
			  int64 rows_total, int32 chunk_blocks)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, OIDOID, INT8OID, INT8OID, INT4OID};
	Datum		values[] = {Int64GetDatum(job_id), ObjectIdGetDatum(driving_oid),
		Int64GetDatum(blocks_total), Int64GetDatum(rows_total), Int32GetDatum(chunk_blocks)};
	char		nulls[] = {' ', OidIsValid(driving_oid) ? ' ' : 'n', ' ',
		rows_total >= 0 ? ' ' : 'n', ' '};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET driving_oid = $2, blocks_total = $3, "
				   "rows_total = $4, chunk_blocks = $5, next_block = 0, "
				   "chunks_total = CASE WHEN $2 IS NULL THEN 1 "
				   "  ELSE greatest(1, ceil($3::float8 / $5))::bigint END "
				   "WHERE id = $1",
				   5, argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/*
 * Checkpoint one chunk: its row in background_ddl.chunk and the job's
 * counters.  Must be called in the transaction that wrote the chunk's rows,
 * so that the rows and the checkpoint commit (or vanish) together.
 */
void
JobRecordChunk(const BgddlJob *job, const BgddlChunkResult *chunk)
{
	CatalogAccess access;
	Oid			chunk_types[] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT4OID, FLOAT8OID, BYTEAOID};
	Datum		chunk_values[] = {Int64GetDatum(job->id), Int64GetDatum(job->chunks_done),
		Int64GetDatum(chunk->start_block), Int64GetDatum(chunk->end_block),
		Int64GetDatum(chunk->rows), Int32GetDatum(job->attempts),
	Float8GetDatum(chunk->seconds), PointerGetDatum(chunk->tid_map)};
	char		chunk_nulls[] = {' ', ' ', ' ', chunk->end_block >= 0 ? ' ' : 'n', ' ', ' ', ' ',
	chunk->tid_map ? ' ' : 'n'};
	Oid			job_types[] = {INT8OID, INT8OID, INT8OID, INT4OID, INT8OID, FLOAT8OID,
	FLOAT8OID, FLOAT8OID};
	Datum		job_values[] = {Int64GetDatum(job->id),
		Int64GetDatum(chunk->end_block >= 0 ? chunk->end_block : job->blocks_total),
		Int64GetDatum(chunk->rows), Int32GetDatum(chunk->next_chunk_blocks),
		Int64GetDatum(chunk->chunks_total), Float8GetDatum(chunk->progress),
	Float8GetDatum(chunk->rate), Float8GetDatum(chunk->eta_seconds)};
	char		job_nulls[] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', chunk->eta_seconds >= 0 ? ' ' : 'n'};

	CatalogAccessBegin(&access);
	CatalogExecute("INSERT INTO background_ddl.chunk "
				   "(job_id, chunk_no, start_block, end_block, rows_done, attempt, duration, tid_map) "
				   "VALUES ($1, $2, $3, $4, $5, $6, make_interval(secs => $7), $8)",
				   8, chunk_types, chunk_values, chunk_nulls, SPI_OK_INSERT);
	CatalogExecute("UPDATE background_ddl.job SET next_block = $2, "
				   "rows_done = rows_done + $3, chunks_done = chunks_done + 1, "
				   "chunk_blocks = $4, chunks_total = $5, "
				   "progress = greatest(progress, $6), rate = $7, "
				   "eta = make_interval(secs => round($8)) WHERE id = $1",
				   8, job_types, job_values, job_nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/*
 * End a job: succeeded, failed or cancelled.  With record_cutover_snapshot,
 * the current transaction's snapshot is the one the result equals.
 */
void
JobFinish(int64 job_id, const char *state, const char *error,
		  bool record_cutover_snapshot, int64 rows_done)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TEXTOID, TEXTOID, BOOLOID, INT8OID};
	Datum		values[] = {Int64GetDatum(job_id), CStringGetTextDatum(state),
		error ? CStringGetTextDatum(error) : (Datum) 0,
		BoolGetDatum(record_cutover_snapshot), Int64GetDatum(rows_done)};
	char		nulls[] = {' ', ' ', error ? ' ' : 'n', ' ', rows_done >= 0 ? ' ' : 'n'};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET state = $2, error = $3, "
				   "phase = NULL, pid = NULL, finished_at = now_.t, "
				   "eta = NULL, rows_done = coalesce($5, rows_done), dirty_rows = 0, "
				   "progress = CASE WHEN $2 = 'succeeded' THEN 100 ELSE progress END, "
				   "chunks_done = CASE WHEN $2 = 'succeeded' AND driving_oid IS NULL "
				   "  THEN 1 ELSE chunks_done END, "
				   "cutover_snapshot = CASE WHEN $4 THEN pg_current_snapshot()::text END, "
				   "cutover_at = CASE WHEN $2 = 'succeeded' THEN now_.t END "
				   "FROM (SELECT clock_timestamp() AS t) now_ WHERE id = $1",
				   5, argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Run catalog statements whose only parameter ($1) is a job id */
static void
CatalogExecuteForJob(int64 job_id, int nstatements, const char *const *statements,
					 const int *expected_results)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};

	CatalogAccessBegin(&access);
	for (int i = 0; i < nstatements; i++)
		CatalogExecute(statements[i], 1, argtypes, values, NULL, expected_results[i]);
	CatalogAccessEnd(&access);
}

/* Remove a job's checkpoints (on cancel: nothing may be left behind) */
void
JobDeleteChunks(int64 job_id)
{
	static const char *const statements[] = {
		"DELETE FROM background_ddl.chunk WHERE job_id = $1"};
	static const int results[] = {SPI_OK_DELETE};

	CatalogExecuteForJob(job_id, lengthof(statements), statements, results);
}

/*
 * Forget jobs of this database that ended longer ago than the retention
 * (and whose capture triggers are gone).
 */
void
JobPurgeHistory(int retention_seconds)
{
	CatalogAccess access;
	Oid			argtypes[] = {OIDOID, FLOAT8OID};
	Datum		values[] = {ObjectIdGetDatum(MyDatabaseId), Float8GetDatum(retention_seconds)};

	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.job WHERE database_oid = $1 "
				   "AND state IN ('succeeded', 'failed', 'cancelled') AND NOT cleanup_pending "
				   "AND finished_at < now() - make_interval(secs => $2)",
				   2, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogAccessEnd(&access);
}

/* Record the base relations that now carry capture triggers */
void
JobRecordCapture(int64 job_id, List *relids, List *filenodes)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, OIDARRAYOID, OIDARRAYOID};
	Datum		values[] = {Int64GetDatum(job_id), OidListDatum(relids), OidListDatum(filenodes)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET capture_relids = $2, capture_filenodes = $3 "
				   "WHERE id = $1", 3, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Progress of the catch-up: rows in the result, changed rows waiting, passes */
void
JobSetCounters(int64 job_id, int64 rows_done, int64 dirty_rows, int32 catchup_passes)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID, INT8OID, INT4OID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(rows_done),
		Int64GetDatum(dirty_rows), Int32GetDatum(catchup_passes)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET rows_done = $2, dirty_rows = $3, "
				   "catchup_passes = $4 WHERE id = $1",
				   4, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Mark (or clear) that capture triggers of an ended job remain to be dropped */
void
JobSetCleanupPending(int64 job_id, bool pending)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, BOOLOID};
	Datum		values[] = {Int64GetDatum(job_id), BoolGetDatum(pending)};

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job SET cleanup_pending = $2, "
				   "phase = CASE WHEN state IN ('queued', 'running') THEN phase END, "
				   "pid = CASE WHEN state IN ('queued', 'running') THEN pid END "
				   "WHERE id = $1", 2, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/*
 * Start the backfill over (the driving table was rewritten: every tuple id
 * changed): forget chunks, marks and recomputed rows, keep the capture.
 */
void
JobResetBackfill(int64 job_id, int64 blocks_total, List *filenodes)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID, OIDARRAYOID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(blocks_total),
		OidListDatum(filenodes)};

	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.chunk WHERE job_id = $1",
				   1, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogExecute("DELETE FROM background_ddl.dirty WHERE job_id = $1",
				   1, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogExecute("DELETE FROM background_ddl.recomputed WHERE job_id = $1",
				   1, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogExecute("UPDATE background_ddl.job SET blocks_total = $2, capture_filenodes = $3, "
				   "next_block = 0, rows_done = 0, chunks_done = 0, dirty_rows = 0, "
				   "catchup_passes = 0 WHERE id = $1",
				   3, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* After the end of a job: drop its marks, recomputed rows and tid maps */
void
JobForgetCapturedChanges(int64 job_id)
{
	static const char *const statements[] = {
		"DELETE FROM background_ddl.dirty WHERE job_id = $1",
		"DELETE FROM background_ddl.recomputed WHERE job_id = $1",
		"UPDATE background_ddl.chunk SET tid_map = NULL WHERE job_id = $1 AND tid_map IS NOT NULL"};
	static const int results[] = {SPI_OK_DELETE, SPI_OK_DELETE, SPI_OK_UPDATE};

	CatalogExecuteForJob(job_id, lengthof(statements), statements, results);
}

static int
DirtyMarkCompare(const void *a, const void *b)
{
	return ItemPointerCompare(&((DirtyMark *) a)->source, &((DirtyMark *) b)->source);
}

/*
 * The dirty marks of a job visible to the current snapshot, sorted by
 * source tuple id; *whole_table tells whether a whole_table mark is among
 * them (those are not returned).  Allocated in the caller's context.
 */
DirtyMark *
DirtyMarksRead(int64 job_id, int *nmarks, bool *whole_table)
{
	CatalogAccess access;
	MemoryContext caller_context = CurrentMemoryContext;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};
	DirtyMark  *marks;
	int			count = 0;

	*whole_table = false;
	CatalogAccessBegin(&access);
	CatalogExecute("SELECT ctid, source_tid, whole_table FROM background_ddl.dirty "
				   "WHERE job_id = $1", 1, argtypes, values, NULL, SPI_OK_SELECT);
	marks = MemoryContextAlloc(caller_context, sizeof(DirtyMark) * Max(SPI_processed, 1));
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		if (DatumGetBool(CatalogColumn(row, 3, BoolGetDatum(false))))
		{
			*whole_table = true;
			continue;
		}
		ItemPointerCopy(DatumGetItemPointer(CatalogColumn(row, 2, 0)), &marks[count].source);
		ItemPointerCopy(DatumGetItemPointer(CatalogColumn(row, 1, 0)), &marks[count].mark);
		count++;
	}
	CatalogAccessEnd(&access);
	qsort(marks, count, sizeof(DirtyMark), DirtyMarkCompare);
	*nmarks = count;
	return marks;
}

/* Delete processed dirty marks, by their own tuple ids */
void
DirtyMarksDelete(ItemPointer marks, int nmarks)
{
	CatalogAccess access;
	Oid			argtypes[] = {TIDARRAYOID};
	Datum		values[1];

	if (nmarks == 0)
		return;
	values[0] = TidArrayDatum(marks, nmarks);
	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.dirty WHERE ctid = ANY($1)",
				   1, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogAccessEnd(&access);
}

/* Record a change that cannot be pinned to driving rows (a table rewrite) */
void
DirtyMarkWholeTable(int64 job_id)
{
	static const char *const statements[] = {
		"INSERT INTO background_ddl.dirty (job_id, whole_table) VALUES ($1, true)"};
	static const int results[] = {SPI_OK_INSERT};

	CatalogExecuteForJob(job_id, lengthof(statements), statements, results);
}

/* The block ranges of a job's chunks, as a List of ChunkRange */
List *
ChunkRangesRead(int64 job_id)
{
	CatalogAccess access;
	MemoryContext caller_context = CurrentMemoryContext;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};
	List	   *ranges = NIL;

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT chunk_no, start_block, end_block FROM background_ddl.chunk "
				   "WHERE job_id = $1 ORDER BY chunk_no", 1, argtypes, values, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(caller_context);
		ChunkRange *range = palloc(sizeof(ChunkRange));

		range->chunk_no = DatumGetInt64(CatalogColumn(row, 1, 0));
		range->start_block = DatumGetInt64(CatalogColumn(row, 2, 0));
		range->end_block = DatumGetInt64(CatalogColumn(row, 3, Int64GetDatum(-1)));
		ranges = lappend(ranges, range);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return ranges;
}

/* A chunk's tid map (detoasted, in the caller's context), or NULL */
bytea *
ChunkTidMapRead(int64 job_id, int64 chunk_no)
{
	CatalogAccess access;
	MemoryContext caller_context = CurrentMemoryContext;
	Oid			argtypes[] = {INT8OID, INT8OID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(chunk_no)};
	bytea	   *map = NULL;

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT tid_map FROM background_ddl.chunk WHERE job_id = $1 AND chunk_no = $2",
				   2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		Datum		value = CatalogColumn(0, 1, (Datum) 0);

		if (value != (Datum) 0)
		{
			MemoryContext spi_context = MemoryContextSwitchTo(caller_context);

			map = DatumGetByteaPCopy(value);
			MemoryContextSwitchTo(spi_context);
		}
	}
	CatalogAccessEnd(&access);
	return map;
}

/*
 * The recomputed outputs of those of the given sources that have been
 * recomputed; a pair with an invalid output means "recomputed, produced
 * nothing".  Allocated in the caller's context.
 */
TidPair *
RecomputedRead(int64 job_id, ItemPointer sources, int nsources, int *npairs)
{
	CatalogAccess access;
	MemoryContext caller_context = CurrentMemoryContext;
	Oid			argtypes[] = {INT8OID, TIDARRAYOID};
	Datum		values[] = {Int64GetDatum(job_id), TidArrayDatum(sources, nsources)};
	TidPair    *pairs;

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT source_tid, output_tid FROM background_ddl.recomputed "
				   "WHERE job_id = $1 AND source_tid = ANY($2)",
				   2, argtypes, values, NULL, SPI_OK_SELECT);
	pairs = MemoryContextAlloc(caller_context, sizeof(TidPair) * Max(SPI_processed, 1));
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum		output = CatalogColumn(row, 2, (Datum) 0);

		ItemPointerCopy(DatumGetItemPointer(CatalogColumn(row, 1, 0)), &pairs[row].source);
		if (output != (Datum) 0)
			ItemPointerCopy(DatumGetItemPointer(output), &pairs[row].output);
		else
			ItemPointerSetInvalid(&pairs[row].output);
	}
	*npairs = (int) SPI_processed;
	CatalogAccessEnd(&access);
	return pairs;
}

/*
 * Replace the recomputed outputs of the given sources (sorted) with pairs
 * (sorted by source); a source without a pair gets a "produced nothing" row.
 */
void
RecomputedReplace(int64 job_id, ItemPointer sources, int nsources,
				  TidPair *pairs, int npairs)
{
	CatalogAccess access;
	Oid			delete_types[] = {INT8OID, TIDARRAYOID};
	Datum		delete_values[] = {Int64GetDatum(job_id), TidArrayDatum(sources, nsources)};
	int			capacity = nsources + npairs;
	ItemPointerData *row_sources = palloc(sizeof(ItemPointerData) * Max(capacity, 1));
	Datum	   *row_outputs = palloc(sizeof(Datum) * Max(capacity, 1));
	bool	   *output_nulls = palloc(sizeof(bool) * Max(capacity, 1));
	int			nrows = 0;
	int			p = 0;
	Oid			insert_types[] = {INT8OID, TIDARRAYOID, TIDARRAYOID};
	Datum		insert_values[3];
	int			dims[1];
	int			lbs[1] = {1};

	for (int s = 0; s < nsources; s++)
	{
		bool		any = false;

		while (p < npairs && ItemPointerCompare(&pairs[p].source, &sources[s]) < 0)
			p++;
		for (; p < npairs && ItemPointerEquals(&pairs[p].source, &sources[s]); p++)
		{
			row_sources[nrows] = sources[s];
			row_outputs[nrows] = ItemPointerGetDatum(&pairs[p].output);
			output_nulls[nrows++] = false;
			any = true;
		}
		if (!any)
		{
			row_sources[nrows] = sources[s];
			row_outputs[nrows] = (Datum) 0;
			output_nulls[nrows++] = true;
		}
	}
	dims[0] = nrows;
	insert_values[0] = Int64GetDatum(job_id);
	insert_values[1] = TidArrayDatum(row_sources, nrows);
	insert_values[2] = PointerGetDatum(construct_md_array(row_outputs, output_nulls, 1, dims, lbs,
														  TIDOID, sizeof(ItemPointerData),
														  false, TYPALIGN_SHORT));

	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.recomputed WHERE job_id = $1 AND source_tid = ANY($2)",
				   2, delete_types, delete_values, NULL, SPI_OK_DELETE);
	CatalogExecute("INSERT INTO background_ddl.recomputed (job_id, source_tid, output_tid) "
				   "SELECT $1, s, o FROM unnest($2::tid[], $3::tid[]) AS u(s, o)",
				   3, insert_types, insert_values, NULL, SPI_OK_INSERT);
	CatalogAccessEnd(&access);
}
