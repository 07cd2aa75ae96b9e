/*-------------------------------------------------------------------------
 *
 * query_catchup.c
 *	  Catch-up: recompute the output rows of source rows that changed.
 *
 * After the backfill, every chunk's rows reflect the base tables at that
 * chunk's snapshot.  The capture trigger (capture_trigger.c) has logged, since
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
 * go on (query_job.c); each batch handles the marks that lie in a range of
 * blocks of the dirty log, so it holds only those marks, and one chunk's
 * tid map at a time, in memory.  The final pass runs inside the cut-over
 * transaction (REPEATABLE READ, so that the marks it reads and the rows it
 * recomputes share one snapshot): after it, every source's rows are the
 * query at the cut-over snapshot, which is the result of the blocking
 * statement at that snapshot.  A source whose marks lie in two batches is
 * simply processed twice; each time is exact at its own snapshot.
 *
 * For partial aggregation (query_partial_agg.c) a chunk's rows come from all of
 * its driving rows at once, so the unit of recomputation is the chunk: a
 * changed source stands for the first tuple id of the chunk that covers it
 * (or, beyond the chunks, of the blocks added since the capture began), and
 * recomputing it recomputes the chunk's partial rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/rel.h"

#include "query_backfill.h"
#include "query_catchup.h"
#include "capture_log.h"
#include "query_decompose.h"
#include "job_step.h"
#include "query_partial_agg.h"

/* The tid map of the chunk that covers the current sources */
typedef struct LoadedChunkMap
{
	List	   *ranges;			/* all chunks of the job, ordered */
	ChunkRange *range;			/* the one loaded, or NULL */
	TidPair    *pairs;
	int			npairs;
} LoadedChunkMap;

/*
 * The chunk map that covers a source tuple id, loaded (the previous one is
 * freed: sources come in order); NULL if none (a row added after the
 * backfill began).
 */
static LoadedChunkMap *
ChunkMapFor(const QueryCatchUpTarget *target, LoadedChunkMap *map, ItemPointer source)
{
	BlockNumber block = ItemPointerGetBlockNumber(source);
	ListCell   *lc;

	if (map->range != NULL && block >= map->range->start_block && block < map->range->end_block)
		return map;
	if (map->pairs != NULL)
		pfree(map->pairs);
	map->range = NULL;
	map->pairs = NULL;
	map->npairs = 0;
	foreach(lc, map->ranges)
	{
		ChunkRange *range = lfirst(lc);
		bytea	   *raw;

		if (block < range->start_block || block >= range->end_block)
			continue;
		map->range = range;
		raw = CaptureChunkTidMap(target->job_id, range->start_block);
		if (raw != NULL)
		{
			map->pairs = CaptureTidMapDecode(raw, &map->npairs);
			pfree(raw);
		}
		return map;
	}
	return NULL;
}

/* Append the outputs a chunk map records for source (pairs sorted by source) */
static int
ChunkMapOutputs(LoadedChunkMap *map, ItemPointer source, ItemPointer outputs, int noutputs)
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

/*
 * The output rows currently stored for the given sources (sorted, unique):
 * recomputed rows where a source was recomputed, the chunk map otherwise.
 */
static ItemPointer
CurrentOutputs(const QueryCatchUpTarget *target, ItemPointer sources, int nsources, int *noutputs)
{
	int			nrecomputed;
	TidPair    *recomputed = CaptureRecomputedRead(target->job_id, sources, nsources, &nrecomputed);
	LoadedChunkMap map = {CaptureChunkRanges(target->job_id), NULL, NULL, 0};
	int			capacity = nrecomputed + 16;
	ItemPointer outputs = palloc(sizeof(ItemPointerData) * capacity);
	int			count = 0;
	int			r = 0;

	for (int s = 0; s < nsources; s++)
	{
		bool		was_recomputed = false;
		LoadedChunkMap *covering;

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
		if (was_recomputed || (covering = ChunkMapFor(target, &map, &sources[s])) == NULL)
			continue;
		/* A source's outputs in a chunk map are few: make room generously */
		if (count + covering->npairs > capacity)
		{
			capacity = count + covering->npairs + 16;
			outputs = repalloc_huge(outputs, sizeof(ItemPointerData) * capacity);
		}
		count = ChunkMapOutputs(covering, &sources[s], outputs, count);
	}
	*noutputs = count;
	return outputs;
}

/*
 * The first tuple ids of the chunks that cover the given sources (sorted,
 * unique): partial aggregation recomputes whole chunks.  Sources beyond the
 * chunks (added since the capture began) fall in one more range, from
 * blocks_total to the end of the table.
 */
static ItemPointer
ChunkStarts(const QueryCatchUpTarget *target, ItemPointer sources, int nsources, int *nstarts)
{
	List	   *ranges = CaptureChunkRanges(target->job_id);
	ItemPointer starts = palloc(sizeof(ItemPointerData) * Max(nsources, 1));
	int			count = 0;

	for (int s = 0; s < nsources; s++)
	{
		BlockNumber block = ItemPointerGetBlockNumber(&sources[s]);
		int64		start_block = target->blocks_total;
		ListCell   *lc;

		foreach(lc, ranges)
		{
			ChunkRange *range = lfirst(lc);

			if (block >= range->start_block && block < range->end_block)
				start_block = range->start_block;
		}
		if (count == 0 || ItemPointerGetBlockNumber(&starts[count - 1]) != start_block)
		{
			ItemPointerSet(&starts[count], (BlockNumber) start_block, 0);
			count++;
		}
	}
	list_free_deep(ranges);
	*nstarts = count;
	return starts;
}

/*
 * Recompute the partial rows of the chunks that start at the given tuple
 * ids (sorted, unique; see ChunkStarts) into the staging relation; returns
 * their (chunk start, row) pairs, sorted.  Caller is as the job's role.
 */
static TidPair *
RecomputeChunks(const QueryCatchUpTarget *target, Query *chunk_query, Index driving_rtindex,
				ItemPointer starts, int nstarts, int *npairs)
{
	List	   *ranges = CaptureChunkRanges(target->job_id);
	TidPair    *all_pairs = NULL;
	int			count = 0;

	for (int i = 0; i < nstarts; i++)
	{
		int64		start_block = ItemPointerGetBlockNumber(&starts[i]);
		int64		end_block = -1; /* beyond the chunks: to the end */
		TidPair    *pairs;
		int			chunk_pairs;
		ListCell   *lc;

		foreach(lc, ranges)
		{
			ChunkRange *range = lfirst(lc);

			if (range->start_block == start_block)
				end_block = range->end_block;
		}
		(void) QueryBackfillBlocks(target->content, copyObject(chunk_query), driving_rtindex, true,
							  false, start_block, end_block, &pairs, &chunk_pairs);
		all_pairs = all_pairs == NULL ?
			palloc(sizeof(TidPair) * Max(chunk_pairs, 1)) :
			repalloc_huge(all_pairs, sizeof(TidPair) * (count + chunk_pairs + 1));
		memcpy(all_pairs + count, pairs, sizeof(TidPair) * chunk_pairs);
		count += chunk_pairs;
		pfree(pairs);
	}
	*npairs = count;
	return all_pairs;
}

/*
 * Steps 1 to 3 for a batch of sources (sorted, unique), in the current
 * transaction, at its snapshot.  Returns how many rows the result gained
 * (negative: lost).
 */
static int64
RecomputeSources(const QueryCatchUpTarget *target, ItemPointer sources, int nsources)
{
	int			noutputs;
	ItemPointer outputs = CurrentOutputs(target, sources, nsources, &noutputs);
	TidPair    *pairs;
	int			npairs;
	Query	   *query;
	Index		driving_rtindex;

	for (int i = 0; i < noutputs; i++)
		simple_table_tuple_delete(target->content, &outputs[i], GetActiveSnapshot());
	CommandCounterIncrement();

	JobQueryBegin(target->query_role, true);
	query = QueryOfRule(target->rule_relation, target->query_role, target->job_start);
	driving_rtindex = QueryDrivingRtindex(query, target->driving_oid);
	if (target->partial)
		pairs = RecomputeChunks(target, QueryPartialAggChunk(query), driving_rtindex,
								sources, nsources, &npairs);
	else
		pairs = QueryRecompute(target->content, query, driving_rtindex,
								  sources, nsources, &npairs);
	JobQueryEnd();

	CaptureRecomputedReplace(target->job_id, sources, nsources, pairs, npairs);
	return (int64) npairs - noutputs;
}

/* Unique sources of marks sorted by source */
static ItemPointer
UniqueSources(DirtyMark *marks, int nmarks, int *nsources)
{
	ItemPointer sources = palloc(sizeof(ItemPointerData) * Max(nmarks, 1));
	int			count = 0;

	for (int i = 0; i < nmarks; i++)
	{
		if (count == 0 || !ItemPointerEquals(&sources[count - 1], &marks[i].source))
			sources[count++] = marks[i].source;
	}
	*nsources = count;
	return sources;
}

/*
 * Process the row marks of a job that lie in blocks [from_block, to_block)
 * of the dirty log, in the current transaction, at its snapshot.  Returns
 * the number of changed sources processed; *rows_gained says how the
 * result's row count moved.  Caller is in a REPEATABLE READ step (not as
 * the job's role): the marks it reads and deletes and the rows it
 * recomputes must share one snapshot, or a mark of a change committed in
 * between would be deleted unprocessed.  Caller holds RowExclusiveLock on
 * the content relation, and has checked that the sources are still what
 * the job captures.
 */
int
QueryCatchUpBlocks(const QueryCatchUpTarget *target, BlockNumber from_block,
					 BlockNumber to_block, int64 *rows_gained)
{
	int			nmarks;
	DirtyMark  *marks = CaptureMarksRead(target->job_id, from_block, to_block, &nmarks);
	int			nsources;
	ItemPointer sources = UniqueSources(marks, nmarks, &nsources);
	ItemPointer mark_tids;
	int			changed_sources = nsources;

	if (target->partial)
		sources = ChunkStarts(target, sources, nsources, &nsources);

	Assert(IsolationUsesXactSnapshot());
	*rows_gained = 0;
	if (nsources == 0)
		return 0;
	*rows_gained = RecomputeSources(target, sources, nsources);

	mark_tids = palloc(sizeof(ItemPointerData) * nmarks);
	for (int i = 0; i < nmarks; i++)
		mark_tids[i] = marks[i].mark;
	CaptureMarksDelete(mark_tids, nmarks);
	return changed_sources;
}
