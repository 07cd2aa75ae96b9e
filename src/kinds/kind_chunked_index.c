/*-------------------------------------------------------------------------
 *
 * kind_chunked_index.c
 *	  Background CREATE INDEX built by our own build (index_chunked.c),
 *	  checkpointed chunk by chunk: a variant of the index kind
 *	  (kind_index.c), which its submit chooses for a btree that is not
 *	  unique, on a heap table.
 *
 * The steps, and what each commits (the stage in the job's kind_state):
 *
 *	creating		the placeholder dropped; the index created, not ready, not
 *					valid, from PostgreSQL's own definition of it (a dry run
 *					of DefineIndex); its OID with the job (STAGE_CREATED)
 *	waiting			for the transactions that could write the table without
 *					knowing the index; the table's size then, the blocks to
 *					scan (STAGE_SCANNING)
 *	scanning		a chunk of blocks per step, under its own snapshot: its
 *					index entries, sorted, persisted with its checkpoint (a
 *					row of background_ddl.chunk); its size follows
 *					batch_time and max_rate, and pause_ddl stops the job
 *					between two chunks.  Helpers (max_workers_per_job) take
 *					chunks too (job_chunks.c).
 *	writing			every chunk's entries merged into the index's build,
 *					which is then ready for inserts; the entries deleted
 *					(STAGE_READY)
 *	validating		once every writer inserts into it, the rows no chunk's
 *					snapshot saw added (validate_index), and its reference
 *					snapshot's xmin kept (STAGE_VALIDATED)
 *	marking valid	once the transactions older than that have ended; an
 *					expression index's statistics collected
 *
 * A crash or a restart resumes at the stage, the scan after its last
 * chunk, with the gaps below it (a helper's chunk lost) scanned first.
 * From the first step to the last, the first worker holds the table's
 * SHARE UPDATE EXCLUSIVE lock (a session lock, as CREATE INDEX CONCURRENTLY
 * does): VACUUM cannot reclaim the rows whose tids the persisted entries
 * hold.  A worker that did not hold it (a new one, after a crash, a pause,
 * an error) takes it again, and starts the scan over if VACUUM ran
 * meanwhile or the table was rewritten.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "capture/capture_log.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_chunks.h"
#include "engine/job_replica_lag.h"
#include "engine/job_run.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "index/index_chunked.h"
#include "kinds/kind_index.h"
#include "kinds/kinds.h"
#include "pg/pg_lock.h"
#include "pg/pg_relation.h"

/* The job's kind_state: its stage, and what the stages record */
#define STATE_STAGE			"stage"
#define STATE_BLOCKS		"blocks"	/* to scan */
#define STATE_FILENODE		"filenode"	/* the table's, when the scan began */
#define STATE_SCAN_SINCE	"scan_since"	/* when it began */
#define STATE_SCAN_XMIN		"scan_xmin"	/* of a snapshot taken before its blocks
										 * were counted */
#define STATE_LIMIT_XMIN	"limit_xmin"	/* of validate_index's snapshot */
#define STATE_ENTRIES		"entries"	/* how the chunks persist their entries */

/*
 * The chunks' entries sorted, in compressed segments (IndexChunkedScan);
 * a job whose chunks an earlier version persisted otherwise (none, "sorted"
 * whole values) starts its scan over
 */
#define ENTRIES_SEGMENTED	2

typedef enum ChunkedStage
{
	STAGE_NONE,					/* the target is a placeholder (or an invalid
								 * index that a rebuild replaces) */
	STAGE_CREATED,
	STAGE_SCANNING,
	STAGE_READY,
	STAGE_VALIDATED
} ChunkedStage;

/*
 * The first chunk's blocks; then chunks follow batch_time and max_rate,
 * within 128 MB of the table, and 64 MB of entries (an expression's can be
 * larger than the row)
 */
#define CHUNK_BLOCKS_FIRST	256
#define CHUNK_BLOCKS_MAX	(1 << 14)
#define CHUNK_ENTRIES_MAX	(64 * 1024 * 1024)

/* A worker's own state of the job */
typedef struct ChunkedRun
{
	double		chunk_blocks;	/* the next chunk's */
	JobChunks	chunks;			/* of the scan, over the job's workers */
	bool		scanned;		/* committed chunks cover every block */
} ChunkedRun;

static ChunkedStage
Stage(const BgddlJob *job)
{
	return (ChunkedStage) CatalogKindStateInt(job->kind_state, STATE_STAGE);
}

/* Go on to the next stage: recorded in the current step's transaction */
static void
SetStage(JobRun *run, ChunkedStage stage)
{
	JobRunSetStateInt(run, STATE_STAGE, stage);
	CatalogJobRecordKindState(&run->job);
}

/*
 * Does the worker hold the table's session lock (between steps: its steps'
 * own locks are gone)?  A transaction that aborts releases it too.
 */
static bool
HoldsTable(Oid table_oid)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, table_oid);
	return LockHeldByMe(&tag, ShareUpdateExclusiveLock);
}

/*
 * Release the table's session lock, if held: once the index is valid, and
 * at the worker's exit (a process that exits between transactions would
 * leave a session lock behind in the lock table)
 */
static void
ReleaseTable(int code, Datum table_oid)
{
	LockRelId	relid = {.relId = DatumGetObjectId(table_oid), .dbId = MyDatabaseId};

	if (HoldsTable(relid.relId))
		UnlockRelationIdForSession(&relid, ShareUpdateExclusiveLock);
}

/*
 * Hold the table's session lock: true if the worker held it already (since
 * before this step), false if it takes it now (waiting for it)
 */
static bool
HoldTableForSession(Oid table_oid)
{
	static bool release_registered = false;
	LockRelId	relid = {.relId = table_oid, .dbId = MyDatabaseId};

	if (HoldsTable(table_oid))
		return true;
	if (!release_registered)
	{
		before_shmem_exit(ReleaseTable, ObjectIdGetDatum(table_oid));
		release_registered = true;
	}
	LockRelationIdForSession(&relid, ShareUpdateExclusiveLock);
	return false;
}

/*
 * The scan (re)starts: at block 0 of the table as it is now.  Caller has
 * taken the active snapshot before it opened the table.
 */
static void
BeginScan(JobRun *run, Relation heap)
{
	JobRunSetStateInt(run, STATE_SCAN_XMIN, GetActiveSnapshot()->xmin);
	JobRunSetStateInt(run, STATE_BLOCKS, RelationGetNumberOfBlocks(heap));
	JobRunSetStateInt(run, STATE_FILENODE, heap->rd_node.relNode);
	JobRunSetStateInt(run, STATE_SCAN_SINCE, GetCurrentTimestamp());
	JobRunSetStateInt(run, STATE_ENTRIES, ENTRIES_SEGMENTED);
	JobRunSetStateInt(run, STATE_STAGE, STAGE_SCANNING);
	run->job.work_total = RelationGetNumberOfBlocks(heap);
}

/*
 * May VACUUM have reclaimed rows of the table since the scan began?  It
 * cannot while the job holds the table's lock; a VACUUM that ended after
 * the scan began ran when it did not.  The statistics say when VACUUM ran,
 * if they are counted (after a crash they start empty, and say so of any
 * VACUUM since).
 */
static bool
VacuumedSinceScan(const BgddlJob *job, Oid table_oid)
{
	TimestampTz since = (TimestampTz) CatalogKindStateInt(job->kind_state, STATE_SCAN_SINCE);
	PgStat_StatTabEntry *stats;

	if (!pgstat_track_counts)
		return true;
	stats = pgstat_fetch_stat_tabentry(table_oid);
	return stats != NULL &&
		(stats->vacuum_timestamp > since || stats->autovac_vacuum_timestamp > since);
}

/*
 * Before a step of the scan or the write: hold the table's lock across
 * steps; if the worker did not, take it (in a step of its own, without a
 * snapshot, which another index build on the table may be waiting for),
 * and start the scan over if the persisted entries may name rows that are
 * no longer theirs: VACUUM ran meanwhile, or the table was rewritten.
 * False if the scan starts over.
 */
static bool
KeepTableLocked(JobRun *run)
{
	ChunkedRun *c = run->kind_run;
	Oid			table_oid = IndexedTable(&run->job);
	Relation	heap;
	bool		rewritten;
	bool		vacuumed;
	bool		other_format;

	if (HoldsTable(table_oid))
		return true;
	/* Helpers may still scan the chunks this worker let them claim */
	JobChunksClose(&c->chunks, false);
	JobStepBegin("background_ddl: locking the table", STEP_NO_SNAPSHOT);
	(void) HoldTableForSession(table_oid);
	PushActiveSnapshot(GetTransactionSnapshot());
	heap = table_open(table_oid, NoLock);
	rewritten = heap->rd_node.relNode != (Oid) CatalogKindStateInt(run->job.kind_state,
																   STATE_FILENODE);
	vacuumed = !rewritten && run->job.work_done > 0 && VacuumedSinceScan(&run->job, table_oid);
	other_format = CatalogKindStateInt(run->job.kind_state, STATE_ENTRIES) != ENTRIES_SEGMENTED;
	if (rewritten || vacuumed || other_format)
	{
		ereport(LOG,
				(errmsg("background DDL job %lld: the scan of table \"%s\" for index \"%s\" starts over",
						(long long) run->job.id, RelationGetRelationName(heap),
						get_rel_name(run->job.target_oid)),
				 errdetail(rewritten ? "The table was rewritten." :
						   vacuumed ? "VACUUM may have reclaimed rows of the table while the job did not hold its lock." :
						   "Its chunks were persisted by an earlier version of background_ddl.")));
		CaptureForget(run->job.id, true);
		BeginScan(run, heap);
		CatalogJobRestartBuild(&run->job);
	}
	JobChunksResume(&c->chunks, CaptureChunkRanges(run->job.id));
	c->scanned = false;
	table_close(heap, NoLock);
	PopActiveSnapshot();
	JobStepEnd();
	return !(rewritten || vacuumed || other_format);
}

/*
 * The index, created in the placeholder's place as CREATE INDEX
 * CONCURRENTLY's first transaction creates it, from the definition that
 * PostgreSQL's DefineIndex gives the statement now, as the job's role (a
 * dry run, rolled back); its OID recorded with the job.
 */
static JobStepResult
CreateStep(JobRun *run)
{
	Oid			table_oid = IndexedTable(&run->job);
	IndexStmt  *stmt;
	IndexDefinition *definition;
	Relation	heap;
	Oid			index_oid;
	char	   *name;
	Oid			saved_userid;
	int			saved_sec_context;

	/* As BuildIndex: the lock first, and no snapshot while waiting for it */
	JobStepBegin("background_ddl: creating the index", STEP_NO_SNAPSHOT);
	(void) HoldTableForSession(table_oid);
	if (!IndexTableExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	PushActiveSnapshot(GetTransactionSnapshot());
	name = get_rel_name(run->job.target_oid);
	stmt = IndexStatementToRun(&run->job, name);
	PgRelationDrop(run->job.target_oid);
	CommandCounterIncrement();
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(run->job.identity.owner_oid,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	definition = IndexDryRunDefinition(table_oid, stmt);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	index_oid = IndexBuildNewOid(table_oid, stmt->tableSpace);
	heap = table_open(table_oid, NoLock);
	IndexDefinitionCreate(heap, definition, name, index_oid);
	table_close(heap, NoLock);
	run->job.target_oid = index_oid;
	CatalogJobRecordTarget(run->job.id, index_oid);
	SetStage(run, STAGE_CREATED);
	PopActiveSnapshot();
	JobStepEnd();
	return JOB_STEP_MORE;
}

/* Wait, as CREATE INDEX CONCURRENTLY waits, for the writers of the table */
static void
WaitForWriters(Oid table_oid, const char *what)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, table_oid);
	JobStepWaitingFor(JOB_WAIT_TRANSACTIONS, what);
	WaitForLockers(tag, ShareLock, false);
	JobStepWaitingFor(JOB_WAIT_TRANSACTIONS, NULL);
}

/*
 * Once no transaction can write the table without knowing the index (no
 * new HOT chain breaks its key), the scan begins: its blocks are the
 * table's now; rows added after are validate_index's.
 */
static JobStepResult
WaitStep(JobRun *run)
{
	Oid			table_oid = IndexedTable(&run->job);
	Relation	heap;

	JobStepBegin("background_ddl: waiting for the writers of the table", STEP_NO_SNAPSHOT);
	(void) HoldTableForSession(table_oid);
	WaitForWriters(table_oid, "transactions that write the table without knowing the index");
	PushActiveSnapshot(GetTransactionSnapshot());
	heap = table_open(table_oid, NoLock);
	BeginScan(run, heap);
	CatalogJobRecordKindState(&run->job);
	table_close(heap, NoLock);
	PopActiveSnapshot();
	JobStepEnd();
	return JOB_STEP_MORE;
}

/*
 * Scan a chunk of blocks under the step's snapshot, checkpoint it with its
 * entries, and end the step; the worker's next chunk grows or shrinks
 * toward batch_time, and the rate limit paces it.  Caller has begun the
 * step and locked the table and the index.
 */
static JobStepResult
ScanChunkStep(JobRun *run, const ChunkRange *range)
{
	ChunkedRun *c = run->kind_run;
	Relation	heap = table_open(IndexedTable(&run->job), NoLock);
	Relation	index = index_open(run->job.target_oid, NoLock);
	bytea	   *entries;
	int64		rows;
	double		seconds;
	instr_time	start_time;
	instr_time	duration;

	INSTR_TIME_SET_CURRENT(start_time);
	entries = IndexChunkedScan(heap, index, (BlockNumber) range->start_block,
							   (BlockNumber) range->end_block, &rows);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);
	CaptureChunkRecordEntries(run->job.id, range, rows, seconds, entries);
	JobRunChunkDone(run, &c->chunk_blocks, CHUNK_BLOCKS_MAX, rows,
					range->end_block - range->start_block, seconds);
	if (VARSIZE(entries) > CHUNK_ENTRIES_MAX)
		c->chunk_blocks = Max(1.0, Min(c->chunk_blocks,
									   (double) (range->end_block - range->start_block) *
									   CHUNK_ENTRIES_MAX / VARSIZE(entries)));
	pfree(entries);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	JobStepEnd();
	JobRunPace(run, rows, seconds);
	return JOB_STEP_MORE;
}

/*
 * Once no block is left to claim: wait for the helpers' chunks, then is
 * every block covered?  If not (a helper gave its chunk up), the first
 * worker scans what is left.
 */
static JobStepResult
SettleScan(JobRun *run)
{
	ChunkedRun *c = run->kind_run;

	JobChunksClose(&c->chunks, false);
	JobStepBegin("background_ddl: checking the chunks", STEP_READ_COMMITTED);
	c->scanned = JobChunksSettle(&c->chunks, CaptureChunkRanges(run->job.id),
								 CatalogKindStateInt(run->job.kind_state, STATE_BLOCKS));
	/* The job row's counts lag behind the chunks' (CatalogJobRecordChunk) */
	CaptureRecordBackfillTotals(&run->job, false);
	JobStepEnd();
	return JOB_STEP_MORE;
}

/*
 * The first worker's next chunk of blocks, under a snapshot of its own,
 * with its checkpoint; its claims opened to helpers first
 */
static JobStepResult
ScanStep(JobRun *run)
{
	ChunkedRun *c = run->kind_run;
	ChunkRange	range;

	JobChunksOpen(&c->chunks, CatalogKindStateInt(run->job.kind_state, STATE_BLOCKS));
	JobStepHoldAtChunk(run->job.chunks_done);
	JobStepBegin("background_ddl: scanning a chunk of the table", STEP_READ_COMMITTED);
	if (!JobChunksTake(&c->chunks, (int32) JobRunChunkBlocks(&run->job, c->chunk_blocks),
					   &range))
	{
		JobStepEnd();
		return SettleScan(run);
	}
	LockRelationOid(run->job.target_oid, AccessShareLock);
	return ScanChunkStep(run, &range);
}

/*
 * A helper's chunk, while the first worker's claims are open.  The first
 * worker's session lock keeps VACUUM away; the helper's own locks are
 * taken only if granted at once: a helper must never wait in a lock queue
 * that the first worker, waiting for its chunk, holds up.  Whatever it
 * cannot do, the first worker does.
 */
static JobStepResult
ChunkedIndexHelpStep(JobRun *run)
{
	ChunkedRun *c = run->kind_run;
	Oid			table_oid = IndexedTable(&run->job);
	ChunkRange	range;

	if (Stage(&run->job) != STAGE_SCANNING || JobHelpersShouldLeave() ||
		(run->job.max_workers > 0 && JobWorkerCount() > run->job.max_workers) ||
		!JobChunksJoin(&c->chunks))
		return JOB_STEP_DONE;
	JobStepBegin("background_ddl: scanning a chunk of the table (helping)", STEP_READ_COMMITTED);
	if (!ConditionalLockRelationOid(table_oid, AccessShareLock) ||
		!ConditionalLockRelationOid(run->job.target_oid, AccessShareLock) ||
		!JobChunksTake(&c->chunks, (int32) JobRunChunkBlocks(&run->job, c->chunk_blocks),
					   &range))
	{
		JobStepEnd();
		return JOB_STEP_DONE;
	}
	JobStepHoldPoint("helping");
	return ScanChunkStep(run, &range);
}

/*
 * The write's pace: the job's max_replica_lag and max_rate, read again
 * every second (alter_ddl takes effect then) and waited for in the write's
 * transaction (it holds no snapshot; a pause or cancel interrupts it, and
 * the write is done again after a resume)
 */
static void
PaceWrite(void *arg, uint64 entries, double seconds)
{
	static TimestampTz limits_read_at = 0;
	JobRun	   *run = arg;

	if (TimestampDifferenceExceeds(limits_read_at, GetCurrentTimestamp(), 1000))
	{
		JobRunReadLimits(run, "background_ddl: writing the index (reading the limits)");
		limits_read_at = GetCurrentTimestamp();
	}
	JobRunWaitForStandbys(run);
	JobRunPace(run, entries, seconds);
	pgstat_report_activity(STATE_RUNNING, "background_ddl: writing the index");
}

/*
 * Every chunk's entries, sorted into the index, which is then ready for
 * inserts; the entries are deleted in the same transaction
 */
static JobStepResult
WriteStep(JobRun *run)
{
	Oid			table_oid = IndexedTable(&run->job);
	Relation	heap;
	Relation	index;
	List	   *chunks;

	JobStepHoldPoint("writing the index");
	JobStepBegin("background_ddl: writing the index", STEP_NO_SNAPSHOT);
	PushActiveSnapshot(GetTransactionSnapshot());
	chunks = CaptureChunkRanges(run->job.id);
	PopActiveSnapshot();
	heap = table_open(table_oid, NoLock);
	index = index_open(run->job.target_oid, RowExclusiveLock);
	(void) IndexChunkedWrite(heap, index, chunks, run->job.id, CaptureChunkEntries,
							 PaceWrite, run);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	PushActiveSnapshot(GetTransactionSnapshot());
	CaptureForget(run->job.id, true);
	SetStage(run, STAGE_READY);
	PopActiveSnapshot();
	JobStepEnd();
	return JOB_STEP_MORE;
}

/*
 * Once every writer of the table inserts into the index, add what no
 * chunk's snapshot saw (validate_index), and keep its snapshot's xmin
 */
static JobStepResult
ValidateStep(JobRun *run)
{
	Oid			table_oid = IndexedTable(&run->job);
	TransactionId limit_xmin;
	int64		inserted;
	bool		whole_table = false;

	JobStepHoldPoint("validating the index");
	JobStepBegin("background_ddl: validating the index", STEP_NO_SNAPSHOT);
	if (!HoldTableForSession(table_oid))
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		whole_table = VacuumedSinceScan(&run->job, table_oid);
		PopActiveSnapshot();
	}
	WaitForWriters(table_oid, "transactions that write the table without inserting into the index");
	limit_xmin = IndexChunkedValidate(table_oid, run->job.target_oid, whole_table,
									  (TransactionId) CatalogKindStateInt(run->job.kind_state,
																		  STATE_SCAN_XMIN),
									  &inserted);
	ereport(DEBUG1,
			(errmsg_internal("background DDL job %lld: validation added " INT64_FORMAT " rows to index \"%s\"%s",
							 (long long) run->job.id, Max(inserted, 0),
							 get_rel_name(run->job.target_oid),
							 inserted < 0 ? " (validate_index)" : "")));
	PushActiveSnapshot(GetTransactionSnapshot());
	JobRunSetStateInt(run, STATE_LIMIT_XMIN, limit_xmin);
	SetStage(run, STAGE_VALIDATED);
	PopActiveSnapshot();
	JobStepEnd();
	return JOB_STEP_MORE;
}

/*
 * Wait until no transaction holds a snapshot older than validate_index's
 * (they could miss rows it did not add), saying so to the view and to the
 * sessions that wait for the job; caller is in a step without a snapshot
 */
static void
AwaitOlderSnapshots(JobRun *run)
{
	TransactionId limit_xmin = (TransactionId) CatalogKindStateInt(run->job.kind_state,
																   STATE_LIMIT_XMIN);

	InvalidateCatalogSnapshot();
	JobStepWaitingFor(JOB_WAIT_TRANSACTIONS, "transactions with snapshots older than the index");
	JobPublishSnapshotWait(limit_xmin);
	PgWaitForOlderSnapshots(limit_xmin);
	JobPublishSnapshotWait(InvalidTransactionId);
	JobStepWaitingFor(JOB_WAIT_TRANSACTIONS, NULL);
}

/*
 * Once the transactions whose snapshots are older than validate_index's
 * have ended (they could miss rows it did not add), mark the index valid,
 * and collect an expression index's statistics
 */
static JobStepResult
MarkValidStep(JobRun *run)
{
	Oid			table_oid = IndexedTable(&run->job);

	JobStepBegin("background_ddl: marking the index valid", STEP_NO_SNAPSHOT);
	(void) HoldTableForSession(table_oid);
	AwaitOlderSnapshots(run);
	IndexBuildSetValid(run->job.target_oid, table_oid);
	IndexBuildAnalyzeExpressions(&run->job, table_oid, run->job.target_oid);
	JobStepEnd();
	return JOB_STEP_MORE;
}

/*
 * A job whose cut-over publishes later (a group's, or one that waits for
 * complete_ddl, a window or fewer writes: JobRunPublishesLater) leaves the
 * index invalid for its cut-over, once the transactions older than
 * validate_index's snapshot have ended (then anyone may use it as soon as
 * it is valid); its worker lets go of the table.  Taken again by every
 * worker of the job until the group is published: a wait for nothing once
 * they have ended.
 */
static JobStepResult
AwaitOlderSnapshotsStep(JobRun *run)
{
	Oid			table_oid = IndexedTable(&run->job);

	JobStepBegin("background_ddl: waiting for older transactions", STEP_NO_SNAPSHOT);
	AwaitOlderSnapshots(run);
	JobStepEnd();
	ReleaseTable(0, ObjectIdGetDatum(table_oid));
	return JOB_STEP_DONE;
}

/*
 * A group's publication (IndexCutOverLock): the index, built and validated,
 * marked valid in the group's transaction, with its expression statistics
 */
static JobStepResult
ChunkedIndexCutOverPublish(JobRun *run)
{
	bool		marked;
	JobStepResult result = IndexPublishHeld(run, Stage(&run->job) == STAGE_VALIDATED, &marked);

	if (marked)
		IndexBuildAnalyzeExpressions(&run->job, IndexedTable(&run->job), run->job.target_oid);
	return result;
}

/* The next step of the stage the job is at, until the index is valid */
static JobStepResult
ChunkedIndexBackfillStep(JobRun *run)
{
	bool		valid;
	bool		is_index;

	if (!IndexCheck(run, &is_index, &valid))
		return JOB_STEP_TARGET_GONE;
	if (is_index && valid)
	{
		/* The table's lock is not needed for the cut-over (nor held into it) */
		ReleaseTable(0, ObjectIdGetDatum(IndexedTable(&run->job)));
		return JOB_STEP_DONE;
	}
	switch (Stage(&run->job))
	{
		case STAGE_NONE:
			JobStepHoldPoint("chunk 0");
			if (!is_index)
				return CreateStep(run);
			JobRunLockingStep(run, IndexRestartBuildStep, NULL, JOB_PHASE_BACKFILLING,
							  "background_ddl: dropping an invalid index");
			return JOB_STEP_MORE;
		case STAGE_CREATED:
			return WaitStep(run);
		case STAGE_SCANNING:
			if (!KeepTableLocked(run))
				return JOB_STEP_MORE;
			if (!((ChunkedRun *) run->kind_run)->scanned)
				return ScanStep(run);
			return WriteStep(run);
		case STAGE_READY:
			return ValidateStep(run);
		case STAGE_VALIDATED:
			return JobRunPublishesLater(&run->job) ? AwaitOlderSnapshotsStep(run) :
				MarkValidStep(run);
	}
	elog(ERROR, "background DDL job %lld is at an unknown stage", (long long) run->job.id);
}

/*
 * A worker's start.  The first worker's progress is its committed chunks'
 * (the job row's counts may lag behind); where its scan goes on, and the
 * gaps below it, KeepTableLocked reads before its first chunk (a new worker
 * does not hold the table's lock).
 */
static void
ChunkedIndexStart(JobRun *run)
{
	ChunkedRun *c = MemoryContextAllocZero(JobContext(), sizeof(ChunkedRun));

	c->chunk_blocks = CHUNK_BLOCKS_FIRST;
	run->kind_run = c;
	if (Stage(&run->job) != STAGE_SCANNING || run->helper)
		return;
	JobStepBegin("background_ddl: reading the checkpoint", STEP_READ_COMMITTED);
	CaptureRecordBackfillTotals(&run->job, false);
	JobStepEnd();
}

/* The view's phase of a running job: its stage (its blocks are the job row's progress) */
static void
ChunkedIndexProgress(const BgddlJob *job, pid_t pid, KindProgress *progress)
{
	static const char *const stages[] = {
		[STAGE_NONE] = "creating the index",
		[STAGE_CREATED] = "waiting for writers that do not know the index",
		[STAGE_SCANNING] = "scanning the table",
		[STAGE_READY] = "validating the index",
		[STAGE_VALIDATED] = "waiting for older snapshots",
	};
	ChunkedStage stage = Stage(job);

	/* Only while a worker runs it: the job row says what a finished job did */
	if (pid == 0 || stage > STAGE_VALIDATED)
		return;
	progress->phase = pstrdup(stage == STAGE_SCANNING && job->work_total > 0 &&
							  job->work_done >= job->work_total ?
							  "writing the index" : stages[stage]);
}

/* Drop the index (or the placeholder), and the chunks' entries */
static void
ChunkedIndexDiscard(const BgddlJob *job, bool keep_target)
{
	CaptureForget(job->id, true);
	if (!keep_target)
		IndexBuildDrop(job->target_oid);
}

const KindRoutine kind_chunked_index_routine = {
	.name = "CREATE INDEX",
	.variant_key = INDEX_STATE_CHUNKED,
	.stands_for = OBJECT_INDEX,
	.replaces_placeholder = true,
	.waits_for_older_snapshots = true,
	.cut_over_publishes = true,
	.start = ChunkedIndexStart,
	.plan = IndexPlan,
	.backfill_step = ChunkedIndexBackfillStep,
	.help_step = ChunkedIndexHelpStep,
	.cut_over = IndexCutOver,
	.cut_over_lock = IndexCutOverLock,
	.cut_over_publish = ChunkedIndexCutOverPublish,
	.writes_to_sources = IndexWritesToTable,
	.progress = ChunkedIndexProgress,
	.gone_reason = IndexGoneReason,
	.discard = ChunkedIndexDiscard,
	.discards_in_any_transaction = IndexDiscardsInAnyTransaction,
	.build_here = IndexBuildHere,
};
