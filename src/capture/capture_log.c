/*-------------------------------------------------------------------------
 *
 * capture_log.c
 *	  Reads and writes of what a job records about its content and the
 *	  changes to its sources: its capture (the triggers, and the base
 *	  tables' relfilenodes), chunks (the backfill's checkpoints, each with
 *	  the tid map of its rows), dirty marks (written by the capture trigger,
 *	  read and deleted here) and recomputed rows.
 *
 * Like catalog_job.c, everything runs through catalog_access.c.  The
 * dirty log has no index: it is read by block ranges of its own heap (a
 * TID range scan), so that a catch-up batch holds the marks of a few
 * blocks in memory, never the whole log.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "capture/capture_log.h"
#include "capture/capture_trigger.h"
#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"

/* The columns of background_ddl.capture, in the order of its CREATE TABLE */
#define Anum_capture_job_id			1
#define Anum_capture_driving_oid	2
#define Anum_capture_relids			3
#define Anum_capture_filenodes		4
#define Anum_capture_triggers		5
#define Anum_capture_trigger_xmins	6
#define Anum_capture_stopped		7
#define Natts_capture				7

static const char *const capture_columns[Natts_capture] = {
	"job_id", "driving_oid", "relids", "filenodes", "triggers", "trigger_xmins", "stopped"
};

/* Record a job's capture, just installed */
void
CaptureRowInsert(const Capture *capture)
{
	Oid			argtypes[] = {INT8OID, OIDOID, OIDARRAYOID, OIDARRAYOID, OIDARRAYOID,
	INT8ARRAYOID};
	Datum		values[] = {Int64GetDatum(capture->job_id),
		ObjectIdGetDatum(capture->driving_oid), CatalogOidArray(capture->relids),
		CatalogOidArray(capture->filenodes), CatalogOidArray(capture->triggers),
	CatalogXidArray(capture->trigger_xmins)};

	CatalogRun("INSERT INTO background_ddl.capture "
			   "(job_id, driving_oid, relids, filenodes, triggers, trigger_xmins) "
			   "VALUES ($1, $2, $3, $4, $5, $6)",
			   lengthof(values), argtypes, values, NULL, SPI_OK_INSERT);
}

/*
 * Read a job's capture into *capture (in the caller's memory context);
 * false if it has none (never installed, or removed).
 */
bool
CaptureRowLoad(int64 job_id, Capture *capture)
{
	CatalogRow	row;
	bool		found = CatalogRowRead(&row, CatalogRequire()->capture_relid, capture_columns,
									   Natts_capture, job_id, true);

	memset(capture, 0, sizeof(Capture));
	if (found)
	{
		capture->job_id = job_id;
		capture->driving_oid = DatumGetObjectId(row.values[Anum_capture_driving_oid - 1]);
		capture->relids = CatalogRowOids(&row, Anum_capture_relids);
		capture->filenodes = CatalogRowOids(&row, Anum_capture_filenodes);
		capture->triggers = CatalogRowOids(&row, Anum_capture_triggers);
		capture->trigger_xmins = CatalogRowOids(&row, Anum_capture_trigger_xmins);
		capture->stopped = DatumGetBool(row.values[Anum_capture_stopped - 1]);
	}
	CatalogRowClose(&row);
	return found;
}

/* The base tables' relfilenodes now (one was rewritten) */
void
CaptureRowSetFilenodes(int64 job_id, List *filenodes)
{
	CatalogRow	row;

	if (CatalogRowLock(&row, CatalogRequire()->capture_relid, capture_columns, Natts_capture,
					   job_id))
	{
		CatalogRowSet(&row, Anum_capture_filenodes, CatalogOidArray(filenodes), false);
		CatalogRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * Whether the job's capture was stopped (CaptureStop), as the active
 * snapshot sees it or, with latest, a fresh one; false if it has none
 */
static bool
CaptureRowReadStopped(int64 job_id, bool latest, bool *stopped)
{
	CatalogRow	row;
	bool		found = CatalogRowRead(&row, CatalogRequire()->capture_relid, capture_columns,
									   Natts_capture, job_id, latest);

	if (found)
		*stopped = DatumGetBool(row.values[Anum_capture_stopped - 1]);
	CatalogRowClose(&row);
	return found;
}

/*
 * Does the job still capture changes: queued or running (not paused, ended
 * or being cancelled), and its capture not stopped (CaptureStop)?  For the
 * capture trigger, which fires, so its install has committed: read with a
 * fresh snapshot, not the writer's, which can be older than the writer's
 * lock on the table (an INSERT into a partitioned table locks the
 * partition it routes a row to after taking its snapshot; a REPEATABLE
 * READ transaction keeps its first one).  Such a writer may have waited
 * for the install's lock, then fire the trigger with a snapshot that sees
 * no capture, and its row would go unlogged.
 */
bool
CaptureRowCapturing(int64 job_id)
{
	bool		stopped = true;

	return CatalogJobIsActive(job_id) && CaptureRowReadStopped(job_id, true, &stopped) && !stopped;
}

/* Has the job's backlog outgrown its bound, which stopped its capture? */
bool
CaptureRowStopped(int64 job_id)
{
	bool		stopped = false;

	(void) CaptureRowReadStopped(job_id, false, &stopped);
	return stopped;
}

/* Forget a job's capture: its triggers are gone */
void
CaptureRowDelete(int64 job_id)
{
	static const char *const statements[] = {
		"DELETE FROM background_ddl.capture WHERE job_id = $1"};
	static const int results[] = {SPI_OK_DELETE};

	CatalogExecuteForJob(job_id, lengthof(statements), statements, results);
}

/*
 * The job's backlog outgrew its bound: its capture triggers log nothing
 * more for it (capture_trigger.c), and one uncaptured mark stands for every
 * change (the cut-over recomputes the whole result).
 */
void
CaptureStop(int64 job_id)
{
	CatalogRow	row;

	if (CatalogRowLock(&row, CatalogRequire()->capture_relid, capture_columns, Natts_capture,
					   job_id))
	{
		CatalogRowSet(&row, Anum_capture_stopped, BoolGetDatum(true), false);
		CatalogRowWrite(&row);
	}
	CatalogRowClose(&row);
	CaptureCoverAll(job_id);
	CatalogJobSetDirtyRows(job_id, 0);
}

/* Checkpoint a chunk: its range, rows, and tid map or index entries */
static void
ChunkRecord(int64 job_id, const ChunkRange *range, int64 rows, int32 attempt, double seconds,
			bytea *tid_map, bytea *index_entries)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID, INT8OID, INT8OID, INT4OID, FLOAT8OID, BYTEAOID,
	BYTEAOID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(range->start_block),
		Int64GetDatum(range->end_block), Int64GetDatum(rows), Int32GetDatum(attempt),
		Float8GetDatum(seconds), PointerGetDatum(tid_map), PointerGetDatum(index_entries)};
	char		nulls[] = {' ', ' ', ' ', ' ', ' ', ' ', tid_map ? ' ' : 'n',
	index_entries ? ' ' : 'n'};

	CatalogAccessBegin(&access);
	CatalogExecute("INSERT INTO background_ddl.chunk "
				   "(job_id, start_block, end_block, rows_done, attempt, duration, tid_map, "
				   "index_entries) "
				   "VALUES ($1, $2, $3, $4, $5, make_interval(secs => $6), $7, $8)",
				   lengthof(values), argtypes, values, nulls, SPI_OK_INSERT);
	CatalogAccessEnd(&access);
}

/* Checkpoint a chunk of a query's backfill: its range, rows, and tid map */
void
CaptureChunkRecord(int64 job_id, const ChunkRange *range, int64 rows, int32 attempt,
				   double seconds, bytea *tid_map)
{
	ChunkRecord(job_id, range, rows, attempt, seconds, tid_map, NULL);
}

/* Checkpoint a chunk of an index build: its range, rows, and index entries */
void
CaptureChunkRecordEntries(int64 job_id, const ChunkRange *range, int64 rows, double seconds,
						  bytea *index_entries)
{
	ChunkRecord(job_id, range, rows, 1, seconds, NULL, index_entries);
}

/* The block ranges of a job's chunks, ordered, as a List of ChunkRange */
List *
CaptureChunkRanges(int64 job_id)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};
	List	   *ranges = NIL;

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT start_block, end_block FROM background_ddl.chunk "
				   "WHERE job_id = $1 ORDER BY start_block", 1, argtypes, values, NULL,
				   SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access.caller_context);
		ChunkRange *range = palloc(sizeof(ChunkRange));

		range->start_block = DatumGetInt64(CatalogColumn(row, 1, 0));
		range->end_block = DatumGetInt64(CatalogColumn(row, 2, 0));
		ranges = lappend(ranges, range);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return ranges;
}

/*
 * The totals of a job's committed chunks (and of this transaction's): the
 * truth of the backfill's progress, which the job row follows at most a few
 * times a second (CatalogJobRecordChunk)
 */
void
CaptureChunkTotals(int64 job_id, int64 *chunks, int64 *rows, int64 *blocks)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};

	CatalogAccessBegin(&access);
	CatalogExecute("SELECT count(*), coalesce(sum(rows_done), 0), "
				   "coalesce(sum(end_block - start_block), 0) "
				   "FROM background_ddl.chunk WHERE job_id = $1", 1, argtypes, values, NULL,
				   SPI_OK_SELECT);
	*chunks = DatumGetInt64(CatalogColumn(0, 1, Int64GetDatum(0)));
	*rows = DatumGetInt64(DirectFunctionCall1(numeric_int8, CatalogColumn(0, 2, 0)));
	*blocks = DatumGetInt64(DirectFunctionCall1(numeric_int8, CatalogColumn(0, 3, 0)));
	CatalogAccessEnd(&access);
}

/*
 * The totals of the job's committed chunks into its row and *job
 * (CatalogJobSetBackfillTotals), or, with raise_only, where they are more
 * than the row's (CatalogJobRaiseBackfillTotals)
 */
void
CaptureRecordBackfillTotals(BgddlJob *job, bool raise_only)
{
	int64		chunks;
	int64		rows;
	int64		blocks;

	CaptureChunkTotals(job->id, &chunks, &rows, &blocks);
	if (raise_only)
		CatalogJobRaiseBackfillTotals(job, chunks, rows, blocks);
	else
		CatalogJobSetBackfillTotals(job, chunks, rows, blocks);
}

/*
 * A bytea column of a chunk, in the caller's context, or NULL: detoasted,
 * or as stored (a TOAST pointer, if it was moved out of line)
 */
static bytea *
ChunkColumn(int64 job_id, int64 start_block, const char *query, bool detoast)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(start_block)};
	bytea	   *column = NULL;

	CatalogAccessBegin(&access);
	CatalogExecute(query, 2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1 && !CatalogColumnIsNull(0, 1))
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access.caller_context);

		Datum		value = CatalogColumn(0, 1, (Datum) 0);

		column = detoast ? DatumGetByteaPCopy(value) : (bytea *) DatumGetPointer(datumCopy(value, false, -1));
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return column;
}

/* A chunk's tid map, or NULL */
bytea *
CaptureChunkTidMap(int64 job_id, int64 start_block)
{
	return ChunkColumn(job_id, start_block,
					   "SELECT tid_map FROM background_ddl.chunk WHERE job_id = $1 AND start_block = $2",
					   true);
}

/*
 * A chunk's index entries (an index build of our own), as stored: a TOAST
 * pointer if they were moved out of line, to be read in slices
 */
struct varlena *
CaptureChunkEntries(int64 job_id, int64 start_block)
{
	struct varlena *entries = ChunkColumn(job_id, start_block,
										  "SELECT index_entries FROM background_ddl.chunk "
										  "WHERE job_id = $1 AND start_block = $2", false);

	if (entries == NULL)
		elog(ERROR, "chunk at block " INT64_FORMAT " of background DDL job " INT64_FORMAT " has no index entries",
			 start_block, job_id);
	return entries;
}

/* Replace a chunk's tid map: its rows were all recomputed */
void
CaptureChunkReplaceTidMap(int64 job_id, int64 start_block, bytea *tid_map)
{
	Oid			argtypes[] = {INT8OID, INT8OID, BYTEAOID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(start_block),
	PointerGetDatum(tid_map)};

	CatalogRun("UPDATE background_ddl.chunk SET tid_map = $3 WHERE job_id = $1 AND start_block = $2",
			   lengthof(values), argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * The chunks of a backfill in an index's order (query_job.c, for CLUSTER)
 * are recorded under negative numbers, -1, -2, ...: each holds rows from
 * anywhere in the table.  The catch-up finds a source's outputs by the
 * chunk of blocks that covers it, so once they are all done their pairs
 * are regrouped into chunks of chunk_blocks blocks, as a backfill in blocks
 * would have recorded them, covering every block that a pair's source is
 * in (rows added since the backfill began included) and at least
 * [0, end_block).  One call makes the chunks of the next group_blocks
 * blocks, after those regrouped before (the chunks of blocks recorded),
 * decoding every ordered chunk's pairs once; the last one also deletes the
 * ordered chunks.  Returns true when the regrouping is done.
 */
bool
CaptureChunksRegroup(int64 job_id, int64 group_blocks, int64 chunk_blocks, int64 end_block)
{
	List	   *ranges = CaptureChunkRanges(job_id);
	int64		from_block = 0;
	int64		to_block;
	int64		covered_to = end_block;
	TidPair    *kept = NULL;
	int			nkept = 0;
	int			capacity = 1024;
	int			first = 0;
	ListCell   *lc;

	foreach(lc, ranges)
		from_block = Max(from_block, ((ChunkRange *) lfirst(lc))->end_block);
	to_block = from_block + group_blocks;
	kept = palloc(sizeof(TidPair) * capacity);
	foreach(lc, ranges)
	{
		ChunkRange *range = lfirst(lc);
		bytea	   *raw;
		TidPair    *pairs;
		int			npairs = 0;

		if (range->start_block >= 0)
			break;
		raw = CaptureChunkTidMap(job_id, range->start_block);
		pairs = raw != NULL ? CaptureTidMapDecode(raw, &npairs) : NULL;
		for (int i = 0; i < npairs; i++)
		{
			int64		block = ItemPointerGetBlockNumber(&pairs[i].source);

			covered_to = Max(covered_to, block + 1);
			if (block < from_block || block >= to_block)
				continue;
			if (nkept == capacity)
				kept = repalloc_huge(kept, sizeof(TidPair) * (capacity *= 2));
			kept[nkept++] = pairs[i];
		}
		if (pairs != NULL)
			pfree(pairs);
	}
	TidPairsSort(kept, nkept);
	to_block = Min(to_block, covered_to);
	for (int64 start = from_block; start < to_block; start += chunk_blocks)
	{
		ChunkRange	chunk = {start, Min(start + chunk_blocks, to_block)};
		int			last = first;

		while (last < nkept && ItemPointerGetBlockNumber(&kept[last].source) < chunk.end_block)
			last++;
		ChunkRecord(job_id, &chunk, last - first, 1, 0, CaptureTidMapEncode(kept + first, last - first),
					NULL);
		first = last;
	}
	if (to_block < covered_to)
		return false;
	CatalogRun("DELETE FROM background_ddl.chunk WHERE job_id = $1 AND start_block < 0", 1,
			   (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL, SPI_OK_DELETE);
	return true;
}

/*
 * Forget a job's captured changes: its marks, recomputed rows and tid maps;
 * with chunks_too, its chunks as well (the build starts over, or is
 * cancelled).
 */
void
CaptureForget(int64 job_id, bool chunks_too)
{
	static const char *const statements[] = {
		"DELETE FROM background_ddl.dirty WHERE job_id = $1",
		"DELETE FROM background_ddl.recomputed WHERE job_id = $1",
		"UPDATE background_ddl.chunk SET tid_map = NULL WHERE job_id = $1 AND tid_map IS NOT NULL",
		"DELETE FROM background_ddl.chunk WHERE job_id = $1"};
	static const int results[] = {SPI_OK_DELETE, SPI_OK_DELETE, SPI_OK_UPDATE, SPI_OK_DELETE};

	CatalogExecuteForJob(job_id, chunks_too ? 4 : 3, statements, results);
}

/*
 * Start over: forget a job's chunks and what it captured, except uncaptured
 * marks, which still stand (changes logged by nobody meanwhile, while the
 * capture was paused or stopped, are recomputed by the cut-over).
 */
void
CaptureRestart(int64 job_id)
{
	static const char *const statements[] = {
		"DELETE FROM background_ddl.dirty WHERE job_id = $1 AND NOT uncaptured",
		"DELETE FROM background_ddl.recomputed WHERE job_id = $1",
		"DELETE FROM background_ddl.chunk WHERE job_id = $1"};
	static const int results[] = {SPI_OK_DELETE, SPI_OK_DELETE, SPI_OK_DELETE};

	CatalogExecuteForJob(job_id, lengthof(statements), statements, results);
}

/*
 * From now on the job's changes may go unlogged: one uncaptured mark stands
 * for all of them (the cut-over recomputes the whole result), and its other
 * marks go.
 */
void
CaptureCoverAll(int64 job_id)
{
	static const char *const statements[] = {
		"DELETE FROM background_ddl.dirty WHERE job_id = $1 AND NOT uncaptured",
		"INSERT INTO background_ddl.dirty (job_id, whole_table, uncaptured) SELECT $1, true, true "
		"WHERE NOT EXISTS (SELECT FROM background_ddl.dirty WHERE job_id = $1 AND uncaptured)"};
	static const int results[] = {SPI_OK_DELETE, SPI_OK_INSERT};

	CatalogExecuteForJob(job_id, lengthof(statements), statements, results);
}

/*
 * Keep every job's dirty log bounded: writers may change rows faster than a
 * job recomputes them (a throttled job, one whose worker is gone for a
 * while).  A job whose row marks outnumber its bound (twice its driving
 * table's rows, or its leaf partitions' -- pg_partition_tree lists nothing
 * for a plain table -- and at least BACKLOG_MIN_BOUND) stops its capture
 * (CaptureStop): one uncaptured mark stands for every change, and its
 * cut-over recomputes the whole result.  Counting scans the log, so it is
 * done only once writers have logged a quarter of the smallest bound since
 * the last count (as the statistics say).  Called by the scheduler, in a
 * transaction; returns how many jobs stopped their capture.
 */
int
CaptureBoundBacklogs(void)
{
	static int64 logged_at_last_count = 0;
	int64		logged = CaptureMarksLogged();
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(BACKLOG_MIN_BOUND)};
	int64	   *stopped;
	int			nstopped;

	if (logged >= logged_at_last_count && logged - logged_at_last_count < BACKLOG_MIN_BOUND / 4)
		return 0;
	logged_at_last_count = logged;
	CatalogAccessBegin(&access);
	CatalogExecute("SELECT j.id, m.marks FROM background_ddl.job j "
				   "JOIN background_ddl.capture c ON c.job_id = j.id "
				   "JOIN (SELECT job_id, count(*) AS marks FROM background_ddl.dirty "
				   "      WHERE NOT uncaptured GROUP BY job_id) m ON m.job_id = j.id "
				   "WHERE NOT c.stopped AND j.state IN ('queued', 'running') "
				   "  AND m.marks > greatest($1, 2 * coalesce((SELECT sum(greatest(r.reltuples, 0)) "
				   "      FROM pg_catalog.pg_class r "
				   "      WHERE (r.oid = c.driving_oid AND r.relkind <> 'p') "
				   "         OR r.oid IN (SELECT t.relid FROM pg_catalog.pg_partition_tree(c.driving_oid) t "
				   "                      WHERE t.isleaf)), 0))",
				   1, argtypes, values, NULL, SPI_OK_SELECT);
	nstopped = (int) SPI_processed;
	stopped = MemoryContextAlloc(access.caller_context, sizeof(int64) * Max(nstopped, 1));
	for (int row = 0; row < nstopped; row++)
	{
		stopped[row] = DatumGetInt64(CatalogColumn(row, 1, 0));
		ereport(LOG,
				(errmsg("background DDL job %lld stops capturing changes: %lld of them wait, more than it may keep",
						(long long) stopped[row], (long long) DatumGetInt64(CatalogColumn(row, 2, 0))),
				 errdetail("Its cut-over will recompute the whole result.")));
	}
	CatalogAccessEnd(&access);
	for (int i = 0; i < nstopped; i++)
		CaptureStop(stopped[i]);
	return nstopped;
}

/*
 * How many marks writers have logged into the dirty log, all jobs together,
 * as the cumulative statistics say (writers report them about once a
 * second): a measure of how busy the captured tables are.
 */
int64
CaptureMarksLogged(void)
{
	PgStat_StatTabEntry *entry;

	pgstat_clear_snapshot();
	entry = pgstat_fetch_stat_tabentry(CatalogRequire()->dirty_relid);
	return entry != NULL ? entry->tuples_inserted : 0;
}

/*
 * How many rows have been written (inserted, updated, deleted) to the
 * tables of a job's capture, as the cumulative statistics say (writers
 * report them about once a second); 0 for a job without a capture
 */
int64
CaptureTablesWrites(int64 job_id)
{
	Oid			driving_oid;
	ListCell   *lc;
	int64		writes = 0;

	pgstat_clear_snapshot();
	foreach(lc, CaptureTables(job_id, &driving_oid))
	{
		PgStat_StatTabEntry *entry = pgstat_fetch_stat_tabentry(lfirst_oid(lc));

		if (entry != NULL)
			writes += entry->tuples_inserted + entry->tuples_updated + entry->tuples_deleted;
	}
	return writes;
}

static int
DirtyMarkCompare(const void *a, const void *b)
{
	return ItemPointerCompare(&((DirtyMark *) a)->source, &((DirtyMark *) b)->source);
}

/* Sort marks by source tuple id */
void
CaptureMarksSort(DirtyMark *marks, int nmarks)
{
	qsort(marks, nmarks, sizeof(DirtyMark), DirtyMarkCompare);
}

static int
TransactionIdCompare(const void *a, const void *b)
{
	TransactionId x = *(const TransactionId *) a;
	TransactionId y = *(const TransactionId *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* The columns of background_ddl.dirty, in the order of its CREATE TABLE */
#define Anum_dirty_job_id		1
#define Anum_dirty_source_tid	2
#define Anum_dirty_whole_table	3
#define Anum_dirty_join_relid	4
#define Anum_dirty_join_key		5
#define Anum_dirty_uncaptured	6
#define Natts_dirty				6

/*
 * Read the job's marks visible to the active snapshot, with one scan of the
 * dirty log: its row marks (at most max_marks of them, then *more is set;
 * sorted by source), its join marks, and the tuple ids of its whole_table
 * and join marks.  Allocated in the caller's context.  The log is bounded
 * (CaptureBoundBacklogs), and so is what this reads.
 */
void
CaptureMarksScan(int64 job_id, int max_marks, CapturedMarks *marks)
{
	Relation	dirty = table_open(CatalogRequire()->dirty_relid, AccessShareLock);
	TableScanDesc scan = table_beginscan(dirty, GetActiveSnapshot(), 0, NULL);
	int			capacity = 1024;
	int			other_capacity = 16;
	HeapTuple	tuple;

	memset(marks, 0, sizeof(CapturedMarks));
	marks->rows = palloc(sizeof(DirtyMark) * capacity);
	marks->others = palloc(sizeof(MarkId) * other_capacity);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Datum		values[Natts_dirty];
		bool		nulls[Natts_dirty];

		CHECK_FOR_INTERRUPTS();
		heap_deform_tuple(tuple, RelationGetDescr(dirty), values, nulls);
		if (DatumGetInt64(values[Anum_dirty_job_id - 1]) != job_id)
			continue;
		if (DatumGetBool(values[Anum_dirty_uncaptured - 1]))
		{
			marks->uncaptured = true;
			continue;
		}
		if (marks->nrows + marks->nothers >= max_marks)
		{
			marks->more = true;
			break;
		}
		if (!nulls[Anum_dirty_source_tid - 1])
		{
			if (marks->nrows == capacity)
				marks->rows = repalloc_huge(marks->rows, sizeof(DirtyMark) * (capacity *= 2));
			ItemPointerCopy(DatumGetItemPointer(values[Anum_dirty_source_tid - 1]),
							&marks->rows[marks->nrows].source);
			marks->rows[marks->nrows].mark.tid = tuple->t_self;
			marks->rows[marks->nrows++].mark.xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
			continue;
		}
		if (marks->nothers == other_capacity)
			marks->others = repalloc_huge(marks->others, sizeof(MarkId) * (other_capacity *= 2));
		marks->others[marks->nothers].tid = tuple->t_self;
		marks->others[marks->nothers++].xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
		if (DatumGetBool(values[Anum_dirty_whole_table - 1]))
			marks->whole_table = true;
		else if (!nulls[Anum_dirty_join_key - 1])
		{
			JoinKeyMark *key = palloc(sizeof(JoinKeyMark));

			key->relid = DatumGetObjectId(values[Anum_dirty_join_relid - 1]);
			key->key = TextDatumGetCString(values[Anum_dirty_join_key - 1]);
			marks->join_keys = lappend(marks->join_keys, key);
		}
	}
	table_endscan(scan);
	table_close(dirty, NoLock);
	CaptureMarksSort(marks->rows, marks->nrows);
}

/* How many source rows of the job have visible marks (the backlog) */
int64
CaptureBacklog(int64 job_id)
{
	return DatumGetInt64(CatalogValueForJob("SELECT count(DISTINCT source_tid) "
											"FROM background_ddl.dirty "
											"WHERE job_id = $1 AND source_tid IS NOT NULL",
											job_id, Int64GetDatum(0)));
}

/*
 * Delete processed dirty marks of a job, as a pass read them.  They were
 * read (CaptureMarksScan) in an earlier transaction, so a tuple id may hold
 * another mark by now (theirs was deleted, say by CaptureCoverAll, and the
 * space reused): a mark is deleted only if the job and a transaction that
 * wrote one of these marks are its own too.  A mark written later is never
 * written by one of those, which had committed when they were read.  The
 * transactions are those of these marks alone: a batch's few, not a pass's.
 * They count in the job's changes_caught_up.
 */
void
CaptureMarksDelete(int64 job_id, const MarkId *marks, int nmarks)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TIDARRAYOID, XIDARRAYOID};
	Datum		values[3];
	ItemPointer tids;
	TransactionId *xmins;
	Datum	   *xmin_datums;
	int			nxmins = 0;

	if (nmarks == 0)
		return;
	tids = palloc(sizeof(ItemPointerData) * nmarks);
	xmins = palloc(sizeof(TransactionId) * nmarks);
	for (int i = 0; i < nmarks; i++)
	{
		tids[i] = marks[i].tid;
		xmins[i] = marks[i].xmin;
	}
	qsort(xmins, nmarks, sizeof(TransactionId), TransactionIdCompare);
	xmin_datums = palloc(sizeof(Datum) * nmarks);
	for (int i = 0; i < nmarks; i++)
	{
		if (i == 0 || xmins[i] != xmins[i - 1])
			xmin_datums[nxmins++] = TransactionIdGetDatum(xmins[i]);
	}
	values[0] = Int64GetDatum(job_id);
	values[1] = CatalogTidArray(tids, nmarks);
	values[2] = PointerGetDatum(construct_array(xmin_datums, nxmins, XIDOID, sizeof(TransactionId),
												true, TYPALIGN_INT));
	CatalogAccessBegin(&access);
	CatalogJobCountChanges(CatalogExecute("DELETE FROM background_ddl.dirty "
										  "WHERE ctid = ANY($2) AND job_id = $1 AND xmin = ANY($3)",
										  lengthof(values), argtypes, values, NULL,
										  SPI_OK_DELETE));
	CatalogAccessEnd(&access);
	pfree(tids);
	pfree(xmins);
	pfree(xmin_datums);
}

/*
 * Record a change that cannot be pinned to driving rows (a joined table was
 * rewritten): every row is recomputed.  uncaptured: changes may go unlogged
 * from now on (a capture trigger was changed), and only the cut-over's
 * whole recomputation covers them.
 */
void
CaptureMarkWholeTable(int64 job_id, bool uncaptured)
{
	Oid			argtypes[] = {INT8OID, BOOLOID};
	Datum		values[] = {Int64GetDatum(job_id), BoolGetDatum(uncaptured)};

	CatalogRun("INSERT INTO background_ddl.dirty (job_id, whole_table, uncaptured) "
			   "VALUES ($1, true, $2)", lengthof(values), argtypes, values, NULL, SPI_OK_INSERT);
}

/*
 * The (source_tid, output_tid) rows of the last catalog statement as pairs,
 * in context; a NULL output_tid becomes an invalid output
 */
static TidPair *
RecomputedPairs(MemoryContext context, int *npairs)
{
	TidPair    *pairs = MemoryContextAlloc(context, sizeof(TidPair) * Max(SPI_processed, 1));

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		ItemPointerCopy(DatumGetItemPointer(CatalogColumn(row, 1, 0)), &pairs[row].source);
		if (!CatalogColumnIsNull(row, 2))
			ItemPointerCopy(DatumGetItemPointer(CatalogColumn(row, 2, 0)), &pairs[row].output);
		else
			ItemPointerSetInvalid(&pairs[row].output);
	}
	*npairs = (int) SPI_processed;
	return pairs;
}

/*
 * The columns of the recomputed rows of a job ($1) for source s.source_tid,
 * one index search per source: "source_tid = ANY($2)" would be a filter
 * over all of the job's rows (the planner's choice when the statistics
 * have not seen the table grow yet, as in a job's first passes), a time
 * that grows with the square of the rows recomputed.  OFFSET 0 keeps the
 * subquery from being pulled up into a join that could be hashed.
 */
#define RECOMPUTED_OF_SOURCE(columns) \
	"LATERAL (SELECT " columns " FROM background_ddl.recomputed " \
	"WHERE job_id = $1 AND source_tid = s.source_tid OFFSET 0) AS r"

/*
 * The pairs that sql (a job's $1, sources $2, returning source_tid and
 * output_tid) returns, allocated in the caller's context
 */
static TidPair *
RecomputedOfSources(const char *sql, int expected, int64 job_id, ItemPointer sources,
					int nsources, int *npairs)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TIDARRAYOID};
	Datum		values[] = {Int64GetDatum(job_id), CatalogTidArray(sources, nsources)};
	TidPair    *pairs;

	CatalogAccessBegin(&access);
	CatalogExecute(sql, 2, argtypes, values, NULL, expected);
	pairs = RecomputedPairs(access.caller_context, npairs);
	CatalogAccessEnd(&access);
	return pairs;
}

/*
 * The recomputed outputs of those of the given sources (sorted, distinct)
 * that have been recomputed; a pair with an invalid output means
 * "recomputed, produced nothing".  Allocated in the caller's context.
 */
TidPair *
CaptureRecomputedRead(int64 job_id, ItemPointer sources, int nsources, int *npairs)
{
	return RecomputedOfSources("SELECT r.source_tid, r.output_tid FROM unnest($2) AS s(source_tid), "
							   RECOMPUTED_OF_SOURCE("source_tid, output_tid") " ORDER BY r.source_tid",
							   SPI_OK_SELECT, job_id, sources, nsources, npairs);
}

/*
 * Forget the recomputed outputs of the sources in driving blocks
 * [start_block, end_block) (their rows are recomputed as a range), and
 * return them, sorted by source, as CaptureRecomputedRead does.
 */
TidPair *
CaptureRecomputedTakeRange(int64 job_id, int64 start_block, int64 end_block, int *npairs)
{
	CatalogAccess access;
	ItemPointerData bounds[2];
	Oid			argtypes[] = {INT8OID, TIDOID, TIDOID};
	Datum		values[3];
	TidPair    *pairs;

	ItemPointerSet(&bounds[0], (BlockNumber) start_block, 0);
	ItemPointerSet(&bounds[1], (BlockNumber) end_block, 0);
	values[0] = Int64GetDatum(job_id);
	values[1] = ItemPointerGetDatum(&bounds[0]);
	values[2] = ItemPointerGetDatum(&bounds[1]);
	CatalogAccessBegin(&access);
	CatalogExecute("DELETE FROM background_ddl.recomputed "
				   "WHERE job_id = $1 AND source_tid >= $2 AND source_tid < $3 "
				   "RETURNING source_tid, output_tid",
				   lengthof(values), argtypes, values, NULL, SPI_OK_DELETE_RETURNING);
	pairs = RecomputedPairs(access.caller_context, npairs);
	CatalogAccessEnd(&access);
	TidPairsSort(pairs, *npairs);
	return pairs;
}

/* Delete the recomputed rows of a job ($1) for the sources $2 */
#define DELETE_RECOMPUTED_OF_SOURCES \
	"DELETE FROM background_ddl.recomputed WHERE ctid = ANY (ARRAY(" \
	"SELECT r.ctid FROM unnest($2) AS s(source_tid), " RECOMPUTED_OF_SOURCE("ctid") "))"

/*
 * Forget the recomputed outputs of the given sources (sorted, distinct),
 * and return them, sorted by source, as CaptureRecomputedRead does: for a
 * batch that recomputes them (CaptureRecomputedRecord then records what it
 * made), one look-up of each source's rows instead of a read and a delete.
 */
TidPair *
CaptureRecomputedTake(int64 job_id, ItemPointer sources, int nsources, int *npairs)
{
	TidPair    *pairs = RecomputedOfSources(DELETE_RECOMPUTED_OF_SOURCES " RETURNING source_tid, output_tid",
											SPI_OK_DELETE_RETURNING, job_id, sources, nsources,
											npairs);

	TidPairsSort(pairs, *npairs);
	return pairs;
}

/*
 * Replace the recomputed outputs of the given sources (sorted) with pairs
 * (sorted by source): CaptureRecomputedRecord, after the sources' rows are
 * forgotten.
 */
void
CaptureRecomputedReplace(int64 job_id, ItemPointer sources, int nsources,
				  TidPair *pairs, int npairs)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TIDARRAYOID};
	Datum		values[] = {Int64GetDatum(job_id), CatalogTidArray(sources, nsources)};

	CatalogAccessBegin(&access);
	CatalogExecute(DELETE_RECOMPUTED_OF_SOURCES, 2, argtypes, values, NULL, SPI_OK_DELETE);
	CatalogAccessEnd(&access);
	CaptureRecomputedRecord(job_id, sources, nsources, pairs, npairs);
}

/*
 * Record the recomputed outputs of the given sources (sorted), which have
 * none recorded now: pairs (sorted by source); a source without a pair gets
 * a "produced nothing" row.
 */
void
CaptureRecomputedRecord(int64 job_id, ItemPointer sources, int nsources,
						TidPair *pairs, int npairs)
{
	CatalogAccess access;
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
	insert_values[1] = CatalogTidArray(row_sources, nrows);
	insert_values[2] = PointerGetDatum(construct_md_array(row_outputs, output_nulls, 1, dims, lbs,
														  TIDOID, sizeof(ItemPointerData),
														  false, TYPALIGN_SHORT));

	CatalogAccessBegin(&access);
	CatalogExecute("INSERT INTO background_ddl.recomputed (job_id, source_tid, output_tid) "
				   "SELECT $1, s, o FROM unnest($2::tid[], $3::tid[]) AS u(s, o)",
				   3, insert_types, insert_values, NULL, SPI_OK_INSERT);
	CatalogAccessEnd(&access);
}
