/*-------------------------------------------------------------------------
 *
 * constraint_rows.c
 *	  Checking the rows of a range of a table's blocks against a constraint,
 *	  in one process or in several (parallel workers).
 *
 * A check constraint's rows are read by a sequential scan of the blocks and
 * its expression evaluated by PostgreSQL's executor, with the statement's
 * error for a row that fails it; a foreign key's, by its query
 * (foreign_key_check.c).
 *
 * One chunk of a job (CheckChunk) may be checked by several processes: the
 * job's worker, as leader, and parallel workers that PostgreSQL starts for
 * it (max_parallel_maintenance_workers, as CREATE INDEX uses them), all in
 * the leader's transaction, with its snapshot and as its role.  The chunk's
 * blocks are cut into slices that each process takes, one at a time, from
 * a shared counter, until none is left.  The chunk is still one unit of
 * work: its checkpoint is recorded by the leader after every slice is
 * checked, in the same transaction, so a crash loses the chunk, never a
 * part of it.  A worker that finds a violating row raises the statement's
 * error, which PostgreSQL passes on to the leader (its message, detail and
 * SQLSTATE as they were).  A foreign key's unmatched rows (the query finds
 * them; there are none unless the key is violated, or a referenced row
 * appeared meanwhile) are only collected there: the leader checks them
 * after the parallel workers are done, as the check function takes a row
 * lock that a parallel worker may not take.
 *
 * Parallel workers run only what a parallel plan would let them run: a
 * check whose expression (PgExpressionParallelSafe) or a foreign key whose
 * query (ForeignKeyParallelSafe) is parallel safe; otherwise, and for a
 * chunk of one block, the leader checks the chunk alone.  (The caller
 * decides whether a chunk is worth starting processes for.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_constraint.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog/settings.h"
#include "engine/job_shmem.h"
#include "kinds/constraint_rows.h"
#include "kinds/foreign_key_check.h"
#include "pg/pg_parallel.h"

/* The key of a chunk's shared state in its parallel context's table of contents */
#define PARALLEL_KEY_CHUNK		UINT64CONST(0xB6DD0C4EC4000001)

/* A slice: the chunk's blocks / (processes * SLICES_PER_PROCESS), at least one block */
#define SLICES_PER_PROCESS		8

/* A foreign key's unmatched rows that the processes collect at most */
#define FOUND_MAX				1024

/* A chunk checked by several processes: what it checks, and what they found */
typedef struct SharedChunk
{
	Oid			relid;
	Oid			conoid;
	bool		foreign_key;
	CheckViolation violation;
	int			nnot_null;
	AttrNumber	not_null[INDEX_MAX_KEYS];
	BlockNumber start;
	BlockNumber end;
	BlockNumber slice;
	pg_atomic_uint32 next;		/* the next slice's first block, after start */
	pg_atomic_uint64 rows;		/* rows checked */
	slock_t		mutex;			/* protects what follows */
	bool		found_overflow; /* more unmatched rows than found[] holds */
	int			nfound;
	ItemPointerData found[FOUND_MAX];
} SharedChunk;

/* The expression of a check constraint */
Node *
CheckExpression(HeapTuple constraint)
{
	bool		isnull;
	Datum		conbin = SysCacheGetAttr(CONSTROID, constraint, Anum_pg_constraint_conbin, &isnull);

	if (isnull)
		elog(ERROR, "null conbin for constraint %u",
			 ((Form_pg_constraint) GETSTRUCT(constraint))->oid);
	return stringToNode(TextDatumGetCString(conbin));
}

/* The check of constraint (a table's row of pg_constraint), with that error */
void
RowCheckOfConstraint(RowCheck *check, HeapTuple constraint, bool foreign_key,
					 CheckViolation violation, List *not_null_columns)
{
	check->constraint = constraint;
	check->foreign_key = foreign_key;
	check->expr = foreign_key ? NULL : CheckExpression(constraint);
	check->name = NameStr(((Form_pg_constraint) GETSTRUCT(constraint))->conname);
	check->violation = violation;
	check->not_null_columns = not_null_columns;
}

/*
 * Fail with the statement's error for a row of rel (in slot) that violates
 * check: for NOT NULL, the first of its columns that is null, as
 * PostgreSQL's scan names it
 */
static void
ReportViolation(Relation rel, const RowCheck *check, TupleTableSlot *slot)
{
	ListCell   *lc;

	switch (check->violation)
	{
		case VIOLATES_NOT_NULL:
			foreach(lc, check->not_null_columns)
			{
				if (slot_attisnull(slot, lfirst_int(lc)))
					ereport(ERROR,
							(errcode(ERRCODE_NOT_NULL_VIOLATION),
							 errmsg("column \"%s\" of relation \"%s\" contains null values",
									get_attname(RelationGetRelid(rel), lfirst_int(lc), false),
									RelationGetRelationName(rel)),
							 errtablecol(rel, lfirst_int(lc))));
			}
			/* (its columns changed: the check's own error) */
			/* FALLTHROUGH */
		case VIOLATES_CHECK:
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("check constraint \"%s\" of relation \"%s\" is violated by some row",
							check->name, RelationGetRelationName(rel)),
					 errtableconstraint(rel, check->name)));
			break;
		case VIOLATES_PARTITION:
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("partition constraint of relation \"%s\" is violated by some row",
							RelationGetRelationName(rel)),
					 errtable(rel)));
			break;
		case VIOLATES_DEFAULT_PARTITION:
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("updated partition constraint for default partition \"%s\" would be violated by some row",
							RelationGetRelationName(rel)),
					 errtable(rel)));
			break;
	}
}

/*
 * Check the rows of blocks [start, end) that snapshot sees against check (a
 * check constraint), as ALTER TABLE checks them (its executor, its error);
 * returns the rows checked.  With violations, count the rows that violate
 * it there instead of failing.  Read-only.
 */
uint64
CheckBlocks(Relation rel, const RowCheck *row_check, Snapshot snapshot, BlockNumber start,
			BlockNumber end, uint64 *violations)
{
	EState	   *estate;
	ExprState  *check;
	ExprContext *econtext;
	TupleTableSlot *slot;
	TableScanDesc scan;
	uint64		rows = 0;

	Assert(!row_check->foreign_key);
	if (end <= start)
		return 0;
	estate = CreateExecutorState();
	check = ExecPrepareExpr((Expr *) row_check->expr, estate);
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(rel, NULL);
	econtext->ecxt_scantuple = slot;

	/*
	 * A sequential scan of the blocks, with a bulk-read ring as ALTER
	 * TABLE's (a TID range scan was 1.7 times slower per row)
	 */
	scan = table_beginscan_strat(rel, snapshot, 0, NULL, true, false);
	heap_setscanlimits(scan, start, end - start);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		if (!ExecCheck(check, econtext))
		{
			if (violations == NULL)
				ReportViolation(rel, row_check, slot);
			(*violations)++;
		}
		ResetExprContext(econtext);
		rows++;
		CHECK_FOR_INTERRUPTS();
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	return rows;
}

/* Keep what a process's query found of a foreign key's unmatched rows */
static void
AddFound(SharedChunk *shared, const ItemPointerData *found, int nfound)
{
	if (nfound == 0)
		return;
	SpinLockAcquire(&shared->mutex);
	if (shared->nfound + nfound > FOUND_MAX)
		shared->found_overflow = true;
	else
	{
		memcpy(&shared->found[shared->nfound], found, sizeof(ItemPointerData) * nfound);
		shared->nfound += nfound;
	}
	SpinLockRelease(&shared->mutex);
}

/* Take the chunk's slices, one at a time, until none is left, and check them */
static void
CheckSlices(Relation rel, const RowCheck *check, SharedChunk *shared, Snapshot snapshot)
{
	BlockNumber blocks = shared->end - shared->start;
	ForeignKeyScan *unmatched = NULL;

	/* (ForeignKeyParallelSafe said the role may run the query) */
	if (check->foreign_key &&
		(unmatched = ForeignKeyScanBegin(rel, check->constraint, snapshot, blocks)) == NULL)
		elog(ERROR, "foreign key \"%s\" cannot be checked by its query", check->name);
	for (;;)
	{
		uint32		offset = pg_atomic_fetch_add_u32(&shared->next, shared->slice);
		BlockNumber first;
		BlockNumber last;
		uint64		rows;

		if (offset >= blocks)
			break;
		first = shared->start + offset;
		last = first + Min(shared->slice, blocks - offset);
		if (check->foreign_key)
		{
			ItemPointerData *found;
			int			nfound;

			rows = ForeignKeyScanBlocks(unmatched, first, last, &found, &nfound);
			AddFound(shared, found, nfound);
			pfree(found);
		}
		else
			rows = CheckBlocks(rel, check, snapshot, first, last, NULL);
		pg_atomic_fetch_add_u64(&shared->rows, rows);
	}
	if (unmatched != NULL)
		ForeignKeyScanEnd(unmatched);
}

/* A parallel worker of a chunk: the leader's check, on the slices it takes */
void
CheckChunkWorkerMain(dsm_segment *seg, shm_toc *toc)
{
	SharedChunk *shared = shm_toc_lookup(toc, PARALLEL_KEY_CHUNK, false);
	Relation	rel = table_open(shared->relid, AccessShareLock);
	HeapTuple	constraint = SearchSysCacheCopy1(CONSTROID, ObjectIdGetDatum(shared->conoid));
	List	   *not_null_columns = NIL;
	RowCheck	check;

	if (!HeapTupleIsValid(constraint))
		elog(ERROR, "cache lookup failed for constraint %u", shared->conoid);
	for (int i = 0; i < shared->nnot_null; i++)
		not_null_columns = lappend_int(not_null_columns, shared->not_null[i]);
	RowCheckOfConstraint(&check, constraint, shared->foreign_key, shared->violation,
						 not_null_columns);
	CheckSlices(rel, &check, shared, GetActiveSnapshot());
	table_close(rel, AccessShareLock);
}

/* May parallel workers check these rows? */
static bool
ParallelSafe(Relation rel, const RowCheck *check)
{
	if (list_length(check->not_null_columns) > INDEX_MAX_KEYS)
		return false;
	return check->foreign_key ? ForeignKeyParallelSafe(rel, check->constraint) :
		PgExpressionParallelSafe(check->expr);
}

/* The chunk checked by the caller alone, with the latest snapshot */
static uint64
CheckChunkAlone(Relation rel, const RowCheck *check, BlockNumber start, BlockNumber end)
{
	Snapshot	snapshot;
	uint64		rows;

	if (check->foreign_key)
		return ForeignKeyCheckBlocks(rel, check->constraint, start, end);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	rows = CheckBlocks(rel, check, snapshot, start, end, NULL);
	UnregisterSnapshot(snapshot);
	return rows;
}

/*
 * Check the rows of blocks [start, end) of rel against check, with a new
 * snapshot, as the current role, by up to processes processes (the caller
 * and parallel workers; *processes_used, how many did); returns the rows
 * checked (a foreign key's: as the statistics count them).  The caller is
 * in a transaction, holds a lock on rel that keeps its rows where they are
 * (ACCESS SHARE), and writes nothing before this returns.
 */
uint64
CheckChunk(Relation rel, const RowCheck *check, BlockNumber start, BlockNumber end,
		   int processes, int *processes_used)
{
	Snapshot	snapshot;
	ParallelContext *pcxt;
	SharedChunk *shared;
	ItemPointerData *found = NULL;
	int			nfound = 0;
	bool		found_overflow;
	uint64		rows;
	ListCell   *lc;

	/* VACUUM may have truncated empty blocks at the end: nothing to check there */
	end = Min(end, RelationGetNumberOfBlocks(rel));
	*processes_used = 1;
	if (end <= start)
		return 0;
	if (processes < 2 || end - start < 2 || !ParallelSafe(rel, check))
		return CheckChunkAlone(rel, check, start, end);

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	PushActiveSnapshot(snapshot);
	EnterParallelMode();
	pcxt = CreateParallelContext(BGDDL_EXTENSION_NAME, "CheckChunkWorkerMain", processes - 1);
	shm_toc_estimate_chunk(&pcxt->estimator, sizeof(SharedChunk));
	shm_toc_estimate_keys(&pcxt->estimator, 1);
	InitializeParallelDSM(pcxt);
	shared = shm_toc_allocate(pcxt->toc, sizeof(SharedChunk));
	memset(shared, 0, offsetof(SharedChunk, found));
	shared->relid = RelationGetRelid(rel);
	shared->conoid = ((Form_pg_constraint) GETSTRUCT(check->constraint))->oid;
	shared->foreign_key = check->foreign_key;
	shared->violation = check->violation;
	foreach(lc, check->not_null_columns)
		shared->not_null[shared->nnot_null++] = (AttrNumber) lfirst_int(lc);
	shared->start = start;
	shared->end = end;
	shared->slice = Max(1, (end - start) / (processes * SLICES_PER_PROCESS));
	pg_atomic_init_u32(&shared->next, 0);
	pg_atomic_init_u64(&shared->rows, 0);
	SpinLockInit(&shared->mutex);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_CHUNK, shared);

	LaunchParallelWorkers(pcxt);
	JobPublishParallelWorkers(pcxt->nworkers_launched);
	CheckSlices(rel, check, shared, snapshot);
	WaitForParallelWorkersToFinish(pcxt);
	JobPublishParallelWorkers(0);

	*processes_used = 1 + pcxt->nworkers_launched;
	rows = pg_atomic_read_u64(&shared->rows);
	found_overflow = shared->found_overflow;
	if (shared->nfound > 0 && !found_overflow)
	{
		nfound = shared->nfound;
		found = palloc(sizeof(ItemPointerData) * nfound);
		memcpy(found, shared->found, sizeof(ItemPointerData) * nfound);
	}
	DestroyParallelContext(pcxt);
	ExitParallelMode();
	PopActiveSnapshot();
	UnregisterSnapshot(snapshot);

	/* A foreign key's unmatched rows: checked one by one, out of parallel mode */
	if (found_overflow)
	{
		ereport(DEBUG1,
				(errmsg_internal("more than %d rows of blocks %u to %u of \"%s\" have no referenced row; checked again by one process",
								 FOUND_MAX, start, end, RelationGetRelationName(rel))));
		(void) ForeignKeyCheckBlocks(rel, check->constraint, start, end);
	}
	else if (nfound > 0)
		ForeignKeyCheckRows(rel, check->constraint, found, nfound);
	return rows;
}
