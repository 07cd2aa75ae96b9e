/*-------------------------------------------------------------------------
 *
 * catchup.c
 *	  Catch-up: recompute the output rows of source rows that changed.
 *
 * After the backfill, every chunk's rows reflect the base tables at that
 * chunk's snapshot.  The capture trigger (capture.c) has logged, since
 * before the first chunk, the tuple ids of every changed driving row.  For
 * a source tuple id T, the rows currently stored for it were computed at
 * some snapshot S_T, and every change to the tuple at T committed after S_T
 * left a mark for T that is still in the log.  So, in a transaction with
 * snapshot S, processing T means:
 *
 *	1. delete the output rows stored for T (found through the chunk's
 *	   tid_map, or through background_ddl.recomputed once T was recomputed);
 *	2. recompute T's output rows at S with a TID scan (nothing if the tuple
 *	   at T is not visible in S: deleted, or an old version);
 *	3. record them in background_ddl.recomputed;
 *	4. delete the marks for T that S sees: their changes are now reflected.
 *	   Marks committed after S stay, and T is processed again later.
 *
 * Catch-up passes do this in batches of short transactions while writers
 * go on; each pass handles the marks visible when it starts.  The final
 * pass runs inside the cut-over transaction (REPEATABLE READ, so that the
 * marks it reads and the rows it recomputes share one snapshot): after it,
 * every source's rows are the query at the cut-over snapshot, which is the
 * result of the blocking statement at that snapshot.
 *
 * Marks that cannot be pinned to rows (whole_table: a change to another
 * base table, a TRUNCATE, a rewrite of another table) make the final pass
 * recompute everything in the cut-over transaction instead.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "background_ddl.h"
#include "compat.h"
#include "backfill.h"
#include "catchup.h"
#include "job_catalog.h"
#include "tid_map.h"
#include "worker.h"

#define CATCHUP_BATCH_INITIAL	1000
#define CATCHUP_BATCH_MAX		100000

/* A chunk's tid map, loaded once (chunks never change after commit) */
typedef struct ChunkMap
{
	ChunkRange	range;
	TidPair    *pairs;			/* NULL until loaded */
	int			npairs;
} ChunkMap;

static MemoryContext maps_context = NULL;
static List *chunk_maps = NIL;	/* of ChunkMap, NIL until listed */
static int	batch_sources = CATCHUP_BATCH_INITIAL;

/* Forget the cached chunk maps (the backfill started over) */
void
CatchupForgetMaps(void)
{
	if (maps_context != NULL)
		MemoryContextReset(maps_context);
	chunk_maps = NIL;
}

/* The chunk map that covers a source tuple id, loaded; NULL if none */
static ChunkMap *
ChunkMapFor(BgddlJob *job, ItemPointer source)
{
	BlockNumber block = ItemPointerGetBlockNumber(source);
	ListCell   *lc;

	if (maps_context == NULL)
		maps_context = AllocSetContextCreate(TopMemoryContext, "background_ddl chunk maps",
											 ALLOCSET_DEFAULT_SIZES);
	if (chunk_maps == NIL)
	{
		MemoryContext old_context = MemoryContextSwitchTo(maps_context);
		List	   *ranges = ChunkRangesRead(job->id);

		foreach(lc, ranges)
		{
			ChunkMap   *map = palloc0(sizeof(ChunkMap));

			map->range = *(ChunkRange *) lfirst(lc);
			chunk_maps = lappend(chunk_maps, map);
		}
		MemoryContextSwitchTo(old_context);
	}

	foreach(lc, chunk_maps)
	{
		ChunkMap   *map = lfirst(lc);

		if (block < map->range.start_block ||
			(map->range.end_block >= 0 && block >= map->range.end_block))
			continue;
		if (map->pairs == NULL)
		{
			MemoryContext old_context = MemoryContextSwitchTo(maps_context);
			bytea	   *raw = ChunkTidMapRead(job->id, map->range.chunk_no);

			if (raw != NULL)
				map->pairs = TidMapDecode(raw, &map->npairs);
			else
				map->pairs = palloc0(sizeof(TidPair));
			MemoryContextSwitchTo(old_context);
		}
		return map;
	}
	return NULL;				/* beyond the backfill: a row added since */
}

/* Append the outputs a chunk map records for source (pairs sorted by source) */
static int
ChunkMapOutputs(ChunkMap *map, ItemPointer source, ItemPointer outputs, int noutputs)
{
	int			low = 0;
	int			high = map->npairs;

	while (low < high)
	{
		int			middle = low + (high - low) / 2;

		if (ItemPointerCompare(&map->pairs[middle].source, source) < 0)
			low = middle + 1;
		else
			high = middle;
	}
	for (; low < map->npairs && ItemPointerEquals(&map->pairs[low].source, source); low++)
		outputs[noutputs++] = map->pairs[low].output;
	return noutputs;
}

static int
TidPairSourceCompare(const void *a, const void *b)
{
	return ItemPointerCompare(&((TidPair *) a)->source, &((TidPair *) b)->source);
}

/*
 * The output rows currently stored for the given sources (sorted, unique):
 * recomputed rows where a source was recomputed, the chunk map otherwise.
 */
static ItemPointer
CurrentOutputs(BgddlJob *job, ItemPointer sources, int nsources, int *noutputs)
{
	int			nrecomputed;
	TidPair    *recomputed = RecomputedRead(job->id, sources, nsources, &nrecomputed);
	int			capacity = nrecomputed + 16;
	ItemPointer outputs = palloc(sizeof(ItemPointerData) * capacity);
	int			count = 0;
	int			r = 0;

	qsort(recomputed, nrecomputed, sizeof(TidPair), TidPairSourceCompare);
	for (int s = 0; s < nsources; s++)
	{
		bool		was_recomputed = false;
		ChunkMap   *map;

		while (r < nrecomputed && ItemPointerCompare(&recomputed[r].source, &sources[s]) < 0)
			r++;
		for (; r < nrecomputed && ItemPointerEquals(&recomputed[r].source, &sources[s]); r++)
		{
			was_recomputed = true;
			if (!ItemPointerIsValid(&recomputed[r].output))
				continue;
			if (count == capacity)
				outputs = repalloc_huge(outputs, sizeof(ItemPointerData) * (capacity *= 2));
			outputs[count++] = recomputed[r].output;
		}
		if (was_recomputed || (map = ChunkMapFor(job, &sources[s])) == NULL)
			continue;
		/* A source's outputs in a chunk map are few: make room generously */
		if (count + map->npairs > capacity)
		{
			capacity = count + map->npairs + 16;
			outputs = repalloc_huge(outputs, sizeof(ItemPointerData) * capacity);
		}
		count = ChunkMapOutputs(map, &sources[s], outputs, count);
	}
	*noutputs = count;
	return outputs;
}

/*
 * Steps 1 to 3 for a batch of sources (sorted, unique), in the current
 * transaction, at its snapshot.  Caller holds RowExclusiveLock on the
 * target.  Returns how many rows the result gained (negative: lost).
 */
static int64
RecomputeSources(BgddlJob *job, Relation target, ItemPointer sources, int nsources)
{
	int			noutputs;
	ItemPointer outputs = CurrentOutputs(job, sources, nsources, &noutputs);
	JobRoleContext role;
	TidPair    *pairs;
	int			npairs;

	for (int i = 0; i < noutputs; i++)
		simple_heap_delete(target, &outputs[i]);
	CommandCounterIncrement();

	JobRoleEnter(job, &role);
	pairs = BackfillRecompute(job, target, sources, nsources, &npairs);
	JobRoleLeave(&role);

	RecomputedReplace(job->id, sources, nsources, pairs, npairs);
	return (int64) npairs - noutputs;
}

/* Unique sources of sorted marks; *source_ends[i] is one past source i's last mark */
static ItemPointer
UniqueSources(DirtyMark *marks, int nmarks, int **source_ends, int *nsources)
{
	ItemPointer sources = palloc(sizeof(ItemPointerData) * Max(nmarks, 1));
	int		   *ends = palloc(sizeof(int) * Max(nmarks, 1));
	int			count = 0;

	for (int i = 0; i < nmarks; i++)
	{
		if (count == 0 || !ItemPointerEquals(&sources[count - 1], &marks[i].source))
			sources[count++] = marks[i].source;
		ends[count - 1] = i + 1;
	}
	*source_ends = ends;
	*nsources = count;
	return sources;
}

/* The tuple ids of marks [from, to) */
static ItemPointer
MarkTids(DirtyMark *marks, int from, int to)
{
	ItemPointer tids = palloc(sizeof(ItemPointerData) * Max(to - from, 1));

	for (int i = from; i < to; i++)
		tids[i - from] = marks[i].mark;
	return tids;
}

/*
 * Has a base relation been rewritten (new relfilenode: VACUUM FULL,
 * CLUSTER, ALTER TABLE ... TYPE) or dropped since the capture started?
 * Locks each one in ACCESS SHARE mode, so that the answer holds until the
 * end of the transaction.  A rewritten non-driving table is recorded as a
 * whole_table mark (in this transaction), and its new relfilenode noted.
 */
BaseRelationChange
CatchupCheckBaseRelations(BgddlJob *job)
{
	ListCell   *relid_cell;
	ListCell   *filenode_cell;
	BaseRelationChange change = BASE_UNCHANGED;
	List	   *filenodes = NIL;
	MemoryContext old_context;

	forboth(relid_cell, job->capture_relids, filenode_cell, job->capture_filenodes)
	{
		Oid			relid = lfirst_oid(relid_cell);
		Relation	rel = try_relation_open(relid, AccessShareLock);
		Oid			filenode;

		if (rel == NULL)
			return BASE_DROPPED;
		filenode = BgddlRelFileNumber(rel);
		relation_close(rel, NoLock);
		filenodes = lappend_oid(filenodes, filenode);
		if (filenode == lfirst_oid(filenode_cell))
			continue;
		if (relid == job->driving_oid)
			return BASE_DRIVING_REWRITTEN;
		change = BASE_OTHER_REWRITTEN;
	}
	if (change == BASE_OTHER_REWRITTEN)
	{
		/* Keep the new list as long as the job's */
		old_context = MemoryContextSwitchTo(GetMemoryChunkContext(job->capture_relids));
		filenodes = list_copy(filenodes);
		MemoryContextSwitchTo(old_context);
		ereport(LOG,
				(errmsg("background DDL job " INT64_FORMAT ": a base table was rewritten; the result will be recomputed at cut-over",
						job->id)));
		DirtyMarkWholeTable(job->id);
		JobRecordCapture(job->id, job->capture_relids, filenodes);
		job->capture_filenodes = filenodes;
	}
	return change;
}

/*
 * One catch-up pass over the marks visible when it starts, in batches of
 * short transactions.  Returns the number of changed sources found, or -1
 * if the pass had to stop: *stopped_by then says why (the driving table was
 * rewritten, or the target or a base table dropped).  *whole_table tells
 * whether a whole_table mark was seen, in which case nothing is processed
 * (the final pass recomputes everything).  Caller is outside any
 * transaction.
 */
int
CatchupPass(BgddlJob *job, MemoryContext job_context, bool *whole_table,
			BaseRelationChange *stopped_by)
{
	MemoryContext pass_context = AllocSetContextCreate(job_context, "background_ddl catch-up pass",
													   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old_context;
	DirtyMark  *marks;
	int			nmarks;
	ItemPointer sources;
	int		   *source_ends;
	int			nsources;
	int			done = 0;
	double		target_seconds = background_ddl_batch_time_ms / 1000.0;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	old_context = MemoryContextSwitchTo(pass_context);
	marks = DirtyMarksRead(job->id, &nmarks, whole_table);
	sources = UniqueSources(marks, nmarks, &source_ends, &nsources);
	MemoryContextSwitchTo(old_context);
	JobSetCounters(job->id, job->rows_done, nsources, job->catchup_passes);
	PopActiveSnapshot();
	CommitTransactionCommand();

	while (!*whole_table && done < nsources)
	{
		int			batch = Min(batch_sources, nsources - done);
		int			first_mark = done == 0 ? 0 : source_ends[done - 1];
		instr_time	start_time;
		instr_time	duration;
		double		seconds;
		Relation	target;
		BaseRelationChange change;

		CHECK_FOR_INTERRUPTS();
		INSTR_TIME_SET_CURRENT(start_time);
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "background_ddl: catching up");
		old_context = MemoryContextSwitchTo(pass_context);

		change = CatchupCheckBaseRelations(job);
		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(job->target_oid)))
			change = BASE_DROPPED;
		if (change == BASE_DRIVING_REWRITTEN || change == BASE_DROPPED)
		{
			*stopped_by = change;
			MemoryContextSwitchTo(old_context);
			PopActiveSnapshot();
			CommitTransactionCommand();
			MemoryContextDelete(pass_context);
			return -1;
		}
		if (change == BASE_OTHER_REWRITTEN)
			*whole_table = true;

		target = table_open(job->target_oid, RowExclusiveLock);
		job->rows_done += RecomputeSources(job, target, &sources[done], batch);
		table_close(target, NoLock);
		DirtyMarksDelete(MarkTids(marks, first_mark, source_ends[done + batch - 1]),
						 source_ends[done + batch - 1] - first_mark);
		done += batch;
		JobSetCounters(job->id, job->rows_done, nsources - done, job->catchup_passes);

		MemoryContextSwitchTo(old_context);
		PopActiveSnapshot();
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);

		/* Adapt the batch toward the target batch time, like chunks */
		INSTR_TIME_SET_CURRENT(duration);
		INSTR_TIME_SUBTRACT(duration, start_time);
		seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);
		batch_sources = (int) Min((double) CATCHUP_BATCH_MAX,
								  Max(10.0, batch * Min(4.0, Max(0.25, target_seconds / seconds))));
	}
	MemoryContextDelete(pass_context);
	return nsources;
}

/*
 * The final pass, inside the cut-over transaction (REPEATABLE READ): process
 * every mark visible to its snapshot.  Returns the number of rows the result
 * gained; *whole_table tells the caller to recompute everything instead
 * (then nothing was processed).  Caller holds RowExclusiveLock (or more) on
 * the target.
 */
int64
CatchupFinal(BgddlJob *job, Relation target, bool *whole_table)
{
	int			nmarks;
	DirtyMark  *marks = DirtyMarksRead(job->id, &nmarks, whole_table);
	int		   *source_ends;
	int			nsources;
	ItemPointer sources = UniqueSources(marks, nmarks, &source_ends, &nsources);
	int64		gained;

	if (*whole_table || nsources == 0)
		return 0;
	gained = RecomputeSources(job, target, sources, nsources);
	DirtyMarksDelete(MarkTids(marks, 0, nmarks), nmarks);
	return gained;
}
