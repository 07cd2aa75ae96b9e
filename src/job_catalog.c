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

#include "background_ddl.h"
#include "job_catalog.h"

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
	"chunks_done, attempts, progress, started_at "

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
				   "WHERE state IN ('queued', 'running') AND database_oid = $1 ORDER BY id",
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
	claimed = CatalogExecute("UPDATE background_ddl.job SET state = 'running', "
							 "attempts = attempts + 1, pid = $2, "
							 "started_at = coalesce(started_at, now()), "
							 "phase = coalesce(phase, 'starting') "
							 "WHERE id = $1 AND state IN ('queued', 'running')",
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
	Oid			chunk_types[] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT4OID, FLOAT8OID};
	Datum		chunk_values[] = {Int64GetDatum(job->id), Int64GetDatum(job->chunks_done),
		Int64GetDatum(chunk->start_block), Int64GetDatum(chunk->end_block),
		Int64GetDatum(chunk->rows), Int32GetDatum(job->attempts),
	Float8GetDatum(chunk->seconds)};
	char		chunk_nulls[] = {' ', ' ', ' ', chunk->end_block >= 0 ? ' ' : 'n', ' ', ' ', ' '};
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
				   "(job_id, chunk_no, start_block, end_block, rows_done, attempt, duration) "
				   "VALUES ($1, $2, $3, $4, $5, $6, make_interval(secs => $7))",
				   7, chunk_types, chunk_values, chunk_nulls, SPI_OK_INSERT);
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
				   "phase = NULL, pid = NULL, finished_at = clock_timestamp(), "
				   "eta = NULL, rows_done = coalesce($5, rows_done), "
				   "progress = CASE WHEN $2 = 'succeeded' THEN 100 ELSE progress END, "
				   "chunks_done = CASE WHEN $2 = 'succeeded' AND driving_oid IS NULL "
				   "  THEN 1 ELSE chunks_done END, "
				   "cutover_snapshot = CASE WHEN $4 THEN pg_current_snapshot()::text END, "
				   "cutover_at = CASE WHEN $2 = 'succeeded' THEN clock_timestamp() END "
				   "WHERE id = $1",
				   5, argtypes, values, nulls, SPI_OK_UPDATE);
	CatalogAccessEnd(&access);
}

/* Remove a job's checkpoints (on cancel: nothing may be left behind) */
void
JobDeleteChunks(int64 job_id)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};

	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.chunk WHERE job_id = $1",
				   1, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogAccessEnd(&access);
}

/* Forget jobs of this database that ended longer ago than the retention */
void
JobPurgeHistory(int retention_seconds)
{
	CatalogAccess access;
	Oid			argtypes[] = {OIDOID, FLOAT8OID};
	Datum		values[] = {ObjectIdGetDatum(MyDatabaseId), Float8GetDatum(retention_seconds)};

	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.job WHERE database_oid = $1 "
				   "AND state IN ('succeeded', 'failed', 'cancelled') "
				   "AND finished_at < now() - make_interval(secs => $2)",
				   2, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogAccessEnd(&access);
}
