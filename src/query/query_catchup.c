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
 *	4. delete the marks for T that were read at a snapshot S0 before S: their
 *	   changes are now reflected.  Later marks stay, and T is processed again
 *	   in a later pass.
 *
 * A pass reads the job's marks with one scan of the log (at most
 * PASS_MAX_MARKS of them; the rest wait for the next pass), sorts them by
 * source, and processes them in batches of short transactions in driving
 * table order, so that each changed source is recomputed once per pass
 * however many marks it has, and a pass costs at most one backfill.  The
 * cut-over runs the last pass inside its own transaction (REPEATABLE READ,
 * so that the marks it reads and the rows it recomputes share one
 * snapshot): after it, every source's rows are the query at the cut-over
 * snapshot, which is the result of the blocking statement at that snapshot.
 * A chunk of which a twentieth of the rows changed is recomputed whole, as
 * a range, which costs less than that many TID scans; a pass that would
 * recompute most of the table so leaves it to the cut-over, whose whole
 * query costs less still (QueryCatchUpPassCostsMore).
 *
 * Other marks:
 *	- a join mark (a changed row of a joined table, by its join key k) stands
 *	  for the driving rows whose join column equals k at the pass's start:
 *	  the pass recomputes them, found by a query on the driving table (an
 *	  index scan where there is an index).  A driving row that changed its
 *	  key since has marks of its own.
 *	- a whole_table mark makes the pass recompute everything, chunk by
 *	  chunk, each in its own short transaction: every row is then recomputed
 *	  after the change.
 *	- an uncaptured mark (changes may have gone unlogged) leaves it all to
 *	  the cut-over, which recomputes the whole result (query_job.c).
 *
 * For partial aggregation (query_partial_agg.c) a chunk's rows come from all
 * of its driving rows at once, so the unit of recomputation is a block
 * range: the first time a change touches a chunk, the chunk is recomputed as
 * UNITS_PER_CHUNK units, each with its own partial rows, whose source is the
 * unit's first tuple id; from then on a change recomputes its unit only.  So
 * changes in a few places of the table cost a few units, and the staging
 * relation holds a few times the groups per chunk at most (and never more
 * than a row per driving row).  Changes spread over the whole table make
 * every unit dirty: recomputing them all costs more than the whole query,
 * which the cut-over then runs instead (QueryCatchUpPassCostsMore, and
 * during the backfill already QueryCatchUpChangesSpread).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "storage/bufmgr.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/rel.h"

#include "capture/capture_log.h"
#include "engine/job_step.h"
#include "query/query_backfill.h"
#include "query/query_catchup.h"
#include "query/query_decompose.h"
#include "query/query_partial_agg.h"

/*
 * Partial aggregation: a recomputed chunk is split into this many units, of
 * at least UNIT_MIN_BLOCKS blocks; beyond the chunks, units have
 * BEYOND_UNIT_BLOCKS blocks
 */
#define UNITS_PER_CHUNK		8
#define UNIT_MIN_BLOCKS		16
#define BEYOND_UNIT_BLOCKS	64

/* Row by row: a chunk with a changed row in this many is recomputed whole */
#define CHUNK_RECOMPUTE_SHARE	20
/* Driving rows per block when the statistics do not say */
#define DEFAULT_ROWS_PER_BLOCK	50
/* A pass reads at most this many marks; the rest wait for the next pass */
#define PASS_MAX_MARKS		1000000

/* Is mark i (of marks sorted by source) the first of its source, from mark first on? */
static inline bool
NewSource(DirtyMark *rows, int i, int first)
{
	return i == first || !ItemPointerEquals(&rows[i - 1].source, &rows[i].source);
}

/* The blocks of each unit of a chunk of partial aggregation [lower, upper) */
static inline int64
ChunkUnitBlocks(int64 lower, int64 upper)
{
	return Max(UNIT_MIN_BLOCKS, (upper - lower + UNITS_PER_CHUNK - 1) / UNITS_PER_CHUNK);
}

static int	UnitOf(const QueryCatchUpPass *pass, int64 block, int64 *start, int64 *end);
static bool ChunkMostlyChanged(const QueryCatchUpPass *pass, int chunk, int first, int *next);

/*
 * Load the tid map of the chunk that covers a source tuple id into the
 * pass, unless it is loaded already (sources come in order: each chunk's
 * map is decoded once per pass).  False if no chunk covers the source (a
 * row added after the backfill began).
 */
static bool
ChunkMapFor(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, ItemPointer source)
{
	int64		start;
	int64		end;
	int			chunk = UnitOf(pass, ItemPointerGetBlockNumber(source), &start, &end);
	bytea	   *raw;

	if (chunk < 0)
		return false;
	if (chunk == pass->map_chunk)
		return true;
	if (pass->map_pairs != NULL)
		pfree(pass->map_pairs);
	pass->map_pairs = NULL;
	pass->map_npairs = 0;
	pass->map_chunk = chunk;
	raw = CaptureChunkTidMap(target->job_id, pass->chunks[chunk].start_block);
	if (raw != NULL)
	{
		MemoryContext old_context = MemoryContextSwitchTo(pass->context);

		pass->map_pairs = CaptureTidMapDecode(raw, &pass->map_npairs);
		MemoryContextSwitchTo(old_context);
		pfree(raw);
	}
	return true;
}

/*
 * Append the outputs the loaded chunk map records for source (pairs sorted
 * by source), making room for them
 */
static int
ChunkMapOutputs(const QueryCatchUpPass *pass, ItemPointer source, ItemPointer *outputs,
				int *capacity, int noutputs)
{
	int			low = 0;
	int			high = pass->map_npairs;

	while (low < high)
	{
		int			middle = low + (high - low) / 2;

		if (ItemPointerCompare(&pass->map_pairs[middle].source, source) < 0)
			low = middle + 1;
		else
			high = middle;
	}
	for (; low < pass->map_npairs && ItemPointerEquals(&pass->map_pairs[low].source, source); low++)
	{
		if (noutputs == *capacity)
			*outputs = repalloc_huge(*outputs, sizeof(ItemPointerData) * (*capacity *= 2));
		(*outputs)[noutputs++] = pass->map_pairs[low].output;
	}
	return noutputs;
}

/*
 * The output rows currently stored for the given sources (sorted, unique):
 * recomputed rows where a source was recomputed, the chunk map otherwise.
 * The recomputed rows' record is forgotten (CaptureRecomputedTake): the
 * caller records the sources' new outputs; but in the last pass, which
 * records nothing, it is only read.
 */
static ItemPointer
TakeCurrentOutputs(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, ItemPointer sources,
				   int nsources, int *noutputs)
{
	int			nrecomputed;
	TidPair    *recomputed = pass->last ?
		CaptureRecomputedRead(target->job_id, sources, nsources, &nrecomputed) :
		CaptureRecomputedTake(target->job_id, sources, nsources, &nrecomputed);
	int			capacity = nrecomputed + nsources + 16;
	ItemPointer outputs = palloc(sizeof(ItemPointerData) * capacity);
	int			count = 0;
	int			r = 0;

	for (int s = 0; s < nsources; s++)
	{
		bool		was_recomputed = false;

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
		if (!was_recomputed && ChunkMapFor(target, pass, &sources[s]))
			count = ChunkMapOutputs(pass, &sources[s], &outputs, &capacity, count);
	}
	*noutputs = count;
	return outputs;
}


/*
 * Steps 1 to 3 for a batch of sources (sorted, unique), in the current
 * transaction, at its snapshot.  Returns how many rows the result gained
 * (negative: lost); *recomputed gets the rows computed.  The last pass
 * does not record the sources' new outputs: no later pass looks them up,
 * nor a later batch of its own (its batch row by row takes every mark
 * left, see BatchSources), and the job forgets them when it ends.
 */
static int64
RecomputeSources(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, ItemPointer sources,
				 int nsources, int64 *recomputed)
{
	int			noutputs;
	ItemPointer outputs = TakeCurrentOutputs(target, pass, sources, nsources, &noutputs);
	TidPair    *pairs;
	int			npairs;
	Query	   *query;

	for (int i = 0; i < noutputs; i++)
		simple_table_tuple_delete(target->content, &outputs[i], GetActiveSnapshot());
	CommandCounterIncrement();

	JobQueryBegin(target->query_role, true);
	query = QueryOfRule(target->rule_relation, target->column_changes, target->query_role, target->job_start);
	pairs = QueryRecompute(target->content, query, target->driving,
						   QueryDrivingRtindex(query, target->driving->relid),
						   sources, nsources, &npairs);
	JobQueryEnd();

	if (!pass->last)
		CaptureRecomputedRecord(target->job_id, sources, nsources, pairs, npairs);
	*recomputed += npairs;
	return (int64) npairs - noutputs;
}

/*
 * Partial aggregation: recompute the units [starts[i], ends[i]) (sorted),
 * each its own partial rows, replacing the rows stored for them (for the
 * unit at the start of a chunk not split yet, the chunk's rows).  The
 * chunks that split_starts start are recorded as split (a recomputed row
 * with no output).
 */
static int64
RecomputeUnits(const QueryCatchUpTarget *target, const int64 *starts, const int64 *ends,
			   int nunits, ItemPointer split_starts, int nsplit, int64 *recomputed)
{
	ItemPointer sources = palloc(sizeof(ItemPointerData) * Max(nunits, 1));
	int64		deleted;
	uint64		rows;
	Query	   *query;

	for (int i = 0; i < nunits; i++)
		ItemPointerSet(&sources[i], (BlockNumber) starts[i], 0);
	deleted = QueryPartialAggDeleteSources(target->content, sources, nunits);
	CommandCounterIncrement();

	JobQueryBegin(target->query_role, true);
	query = QueryOfRule(target->rule_relation, target->column_changes, target->query_role, target->job_start);
	rows = QueryBackfillRanges(target->content, QueryPartialAggChunk(query), target->driving,
							   QueryDrivingRtindex(query, target->driving->relid),
							   starts, ends, nunits);
	JobQueryEnd();

	if (nsplit > 0)
		CaptureRecomputedReplace(target->job_id, split_starts, nsplit, NULL, 0);
	*recomputed += rows;
	return (int64) rows - deleted;
}

/*
 * Row by row: recompute every row of driving blocks [start_block, end_block),
 * a whole chunk (chunk_start >= 0: its tid map is replaced) or blocks beyond
 * the chunks (their rows are recorded as recomputed).
 */
static int64
RecomputeRange(const QueryCatchUpTarget *target, int64 chunk_start, int64 start_block,
			   int64 end_block, int64 *recomputed)
{
	int			nreplaced;
	TidPair    *replaced = CaptureRecomputedTakeRange(target->job_id, start_block, end_block,
													  &nreplaced);
	int64		deleted = 0;
	TidPair    *pairs;
	int			npairs;
	Query	   *query;

	/* The rows of sources recomputed before, then the chunk's other rows */
	for (int i = 0; i < nreplaced; i++)
	{
		if (!ItemPointerIsValid(&replaced[i].output))
			continue;
		simple_table_tuple_delete(target->content, &replaced[i].output, GetActiveSnapshot());
		deleted++;
	}
	if (chunk_start >= 0)
	{
		bytea	   *raw = CaptureChunkTidMap(target->job_id, chunk_start);
		int			nmap = 0;
		TidPair    *map = raw != NULL ? CaptureTidMapDecode(raw, &nmap) : NULL;
		int			r = 0;

		for (int i = 0; i < nmap; i++)
		{
			while (r < nreplaced && ItemPointerCompare(&replaced[r].source, &map[i].source) < 0)
				r++;
			if (r < nreplaced && ItemPointerEquals(&replaced[r].source, &map[i].source))
				continue;
			simple_table_tuple_delete(target->content, &map[i].output, GetActiveSnapshot());
			deleted++;
		}
	}
	CommandCounterIncrement();

	JobQueryBegin(target->query_role, true);
	query = QueryOfRule(target->rule_relation, target->column_changes, target->query_role, target->job_start);
	(void) QueryBackfillBlocks(target->content, query, target->driving,
							   QueryDrivingRtindex(query, target->driving->relid), false, false,
							   start_block, end_block, &pairs, &npairs);
	JobQueryEnd();

	if (chunk_start >= 0)
		CaptureChunkReplaceTidMap(target->job_id, chunk_start, CaptureTidMapEncode(pairs, npairs));
	else
	{
		ItemPointer sources = palloc(sizeof(ItemPointerData) * Max(npairs, 1));
		int			nsources = 0;

		for (int i = 0; i < npairs; i++)
		{
			if (nsources == 0 || !ItemPointerEquals(&sources[nsources - 1], &pairs[i].source))
				sources[nsources++] = pairs[i].source;
		}
		CaptureRecomputedReplace(target->job_id, sources, nsources, pairs, npairs);
	}
	*recomputed += npairs;
	return (int64) npairs - deleted;
}

/*
 * The driving rows that join to the changed keys of one joined table, as
 * the job's role sees them now: "SELECT ctid FROM driving WHERE column op
 * ANY(keys)", the driving table's entry copied from the job's query (its
 * row security and privileges with it).
 */
static ItemPointer
JoinedSources(Query *query, const QueryDriving *driving, Index driving_rtindex,
			  const QueryJoinKey *key, List *marks, int *nsources)
{
	Query	   *tids = makeNode(Query);
	RangeTblRef *ref = makeNode(RangeTblRef);
	RangeTblEntry *rte;
	Oid			key_type;
	int32		key_typmod;
	Oid			key_collation;
	Oid			input_function;
	Oid			ioparam;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *keys = palloc(sizeof(Datum) * Max(list_length(marks), 1));
	int			nkeys = 0;
	ScalarArrayOpExpr *saop = makeNode(ScalarArrayOpExpr);
	Oid			driving_type;
	int32		driving_typmod;
	Oid			driving_collation;
	ListCell   *lc;

	get_atttypetypmodcoll(key->relid, key->attnum, &key_type, &key_typmod, &key_collation);
	getTypeInputInfo(key_type, &input_function, &ioparam);
	get_typlenbyvalalign(key_type, &typlen, &typbyval, &typalign);
	foreach(lc, marks)
	{
		JoinKeyMark *mark = lfirst(lc);

		if (mark->relid == key->relid)
			keys[nkeys++] = OidInputFunctionCall(input_function, mark->key, ioparam, key_typmod);
	}
	get_atttypetypmodcoll(rt_fetch(driving_rtindex, query->rtable)->relid, key->driving_attnum,
						  &driving_type, &driving_typmod, &driving_collation);
	saop->opno = key->opno;
	saop->opfuncid = get_opcode(key->opno);
	saop->useOr = true;
	saop->inputcollid = key->collation;
	saop->args = list_make2(makeVar(1, key->driving_attnum, driving_type, driving_typmod,
									driving_collation, 0),
							makeConst(get_array_type(key_type), -1, InvalidOid, -1,
									  PointerGetDatum(construct_array(keys, nkeys, key_type,
																	  typlen, typbyval,
																	  typalign)),
									  false, false));
	ref->rtindex = 1;
	tids->commandType = CMD_SELECT;
	tids->querySource = QSRC_ORIGINAL;
	tids->canSetTag = true;
	rte = copyObject(rt_fetch(driving_rtindex, query->rtable));
	/* Its row security quals follow it to its new place */
	ChangeVarNodes((Node *) rte->securityQuals, driving_rtindex, 1, 0);
	tids->rtable = list_make1(rte);
	tids->jointree = makeFromExpr(list_make1(ref), (Node *) saop);
	tids->targetList = list_make1(makeTargetEntry((Expr *) makeVar(1, SelfItemPointerAttributeNumber,
																   TIDOID, -1, InvalidOid, 0),
												  1, pstrdup("ctid"), false));
	return QueryTids(tids, driving, 1, nsources);
}

/*
 * Add to the pass's row marks the driving rows its join marks stand for
 * (with no mark of their own to delete).  A join mark of a table that is no
 * longer joined on a key (it cannot happen while the query is the same)
 * makes the pass recompute everything.
 */
static void
AddJoinedSources(const QueryCatchUpTarget *target, QueryCatchUpPass *pass)
{
	Query	   *query;
	Index		driving_rtindex;
	List	   *join_keys;
	List	   *done = NIL;
	ListCell   *lc;

	JobQueryBegin(target->query_role, false);
	query = QueryOfRule(target->rule_relation, target->column_changes, target->query_role, target->job_start);
	driving_rtindex = QueryDrivingRtindex(query, target->driving->relid);
	join_keys = QueryJoinKeys(query, driving_rtindex);
	foreach(lc, pass->marks.join_keys)
	{
		JoinKeyMark *mark = lfirst(lc);
		QueryJoinKey *key = QueryJoinKeyOf(join_keys, mark->relid);
		ItemPointer sources;
		int			nsources;
		int			capacity = pass->marks.nrows;

		if (list_member_oid(done, mark->relid))
			continue;
		done = lappend_oid(done, mark->relid);
		if (key == NULL)
		{
			pass->marks.whole_table = true;
			continue;
		}
		sources = JoinedSources(query, target->driving, driving_rtindex, key,
								pass->marks.join_keys, &nsources);
		if ((int64) capacity + nsources > PASS_MAX_MARKS)
		{
			/* More rows than a pass holds: recompute them all, in batches */
			pass->marks.whole_table = true;
			continue;
		}
		pass->marks.rows = repalloc_huge(pass->marks.rows,
										 sizeof(DirtyMark) * Max(capacity + nsources, 1));
		for (int i = 0; i < nsources; i++)
		{
			pass->marks.rows[pass->marks.nrows].source = sources[i];
			ItemPointerSetInvalid(&pass->marks.rows[pass->marks.nrows].mark.tid);
			pass->marks.nrows++;
		}
	}
	JobQueryEnd();
	CaptureMarksSort(pass->marks.rows, pass->marks.nrows);
}

/*
 * Start a pass: read the job's marks visible now (see CapturedMarks) and its
 * chunks, into a memory context of its own under parent.  Caller is in a
 * step, not as the job's role, and holds the locks of the job's sources
 * (ACCESS SHARE on the driving table).  If pass->marks.uncaptured, the pass
 * has nothing to do: the cut-over recomputes everything.
 */
void
QueryCatchUpPassBegin(const QueryCatchUpTarget *target, QueryCatchUpPass *pass,
					  MemoryContext parent)
{
	MemoryContext old_context;
	List	   *chunks;
	ListCell   *lc;
	ItemPointer starts;
	TidPair    *split;
	int			nsplit;
	memset(pass, 0, sizeof(QueryCatchUpPass));
	pass->map_chunk = -1;
	pass->keeps_order = target->keeps_order;
	pass->context = AllocSetContextCreate(parent, "background_ddl catch-up pass",
										  ALLOCSET_DEFAULT_SIZES);
	old_context = MemoryContextSwitchTo(pass->context);
	CaptureMarksScan(target->job_id, PASS_MAX_MARKS, &pass->marks);
	if (pass->marks.uncaptured)
	{
		MemoryContextSwitchTo(old_context);
		return;
	}
	if (pass->marks.join_keys != NIL)
		AddJoinedSources(target, pass);
	for (int i = 0; i < pass->marks.nrows; i++)
	{
		if (NewSource(pass->marks.rows, i, 0))
			pass->sources++;
	}

	chunks = CaptureChunkRanges(target->job_id);
	pass->chunks = palloc(sizeof(ChunkRange) * Max(list_length(chunks), 1));
	pass->split = palloc0(sizeof(bool) * Max(list_length(chunks), 1));
	starts = palloc(sizeof(ItemPointerData) * Max(list_length(chunks), 1));
	foreach(lc, chunks)
	{
		pass->chunks[pass->nchunks] = *(ChunkRange *) lfirst(lc);
		ItemPointerSet(&starts[pass->nchunks], (BlockNumber) pass->chunks[pass->nchunks].start_block, 0);
		pass->nchunks++;
	}
	if (target->partial)
	{
		/* A chunk was split once its first unit was recomputed */
		split = CaptureRecomputedRead(target->job_id, starts, pass->nchunks, &nsplit);
		for (int i = 0, c = 0; i < nsplit; i++)
		{
			while (c < pass->nchunks &&
				   ItemPointerCompare(&starts[c], &split[i].source) < 0)
				c++;
			if (c < pass->nchunks && ItemPointerEquals(&starts[c], &split[i].source))
				pass->split[c] = true;
		}
	}
	pass->beyond = QueryDrivingBeyond(target->driving, &pass->nbeyond);
	pass->end_block = target->driving->blocks;
	for (int i = 0; i < pass->nbeyond; i++)
		pass->end_block += pass->beyond[i].end_block - pass->beyond[i].start_block;
	pass->rows_per_block = QueryDrivingRowsPerBlock(target->driving, DEFAULT_ROWS_PER_BLOCK);
	MemoryContextSwitchTo(old_context);
}

/* The pass is over: free what it read */
void
QueryCatchUpPassEnd(QueryCatchUpPass *pass)
{
	MemoryContextDelete(pass->context);
	pass->context = NULL;
}

/*
 * The unit of partial aggregation that holds a driving block: its range,
 * and the chunk it is in (-1: beyond the chunks).  A chunk has
 * UNITS_PER_CHUNK units (of at least UNIT_MIN_BLOCKS blocks); beyond the
 * chunks, units are BEYOND_UNIT_BLOCKS blocks.
 */
static int
UnitOf(const QueryCatchUpPass *pass, int64 block, int64 *start, int64 *end)
{
	int			low = 0;
	int			high = pass->nchunks;
	int64		lower = 0;
	int64		upper = PG_INT64_MAX;
	int64		unit_blocks = BEYOND_UNIT_BLOCKS;

	/* The first chunk that starts after the block */
	while (low < high)
	{
		int			middle = low + (high - low) / 2;

		if (pass->chunks[middle].start_block <= block)
			low = middle + 1;
		else
			high = middle;
	}
	if (low > 0)
		lower = pass->chunks[low - 1].end_block;
	if (low < pass->nchunks)
		upper = pass->chunks[low].start_block;
	if (low > 0 && block < pass->chunks[low - 1].end_block)
	{
		lower = pass->chunks[low - 1].start_block;
		upper = pass->chunks[low - 1].end_block;
		unit_blocks = ChunkUnitBlocks(lower, upper);
		*start = lower + (block - lower) / unit_blocks * unit_blocks;
		*end = Min(*start + unit_blocks, upper);
		return low - 1;
	}
	*start = Max(block - block % unit_blocks, lower);
	*end = Min(block - block % unit_blocks + unit_blocks, upper);
	return -1;
}

/*
 * Partial aggregation: how many driving blocks the pass recomputes (a chunk
 * not split yet, whole), about
 */
static int64
PassWorkBlocks(const QueryCatchUpPass *pass)
{
	int64		blocks = 0;
	int64		covered = -1;	/* the end of the last range counted */

	if (pass->marks.whole_table)
		return pass->end_block;
	for (int i = 0; i < pass->marks.nrows; i++)
	{
		int64		block = ItemPointerGetBlockNumber(&pass->marks.rows[i].source);
		int64		start;
		int64		end;
		int			chunk;

		if (block < covered)
			continue;
		chunk = UnitOf(pass, block, &start, &end);
		if (chunk >= 0 && !pass->split[chunk])
		{
			start = pass->chunks[chunk].start_block;
			end = pass->chunks[chunk].end_block;
		}
		blocks += end - start;
		covered = end;
	}
	return blocks;
}

/*
 * Would recomputing the whole result cost less than this pass?  When the
 * pass recomputes more than half of the driving table as whole ranges
 * (units of partial aggregation, or chunks that ChunkMostlyChanged): the
 * whole query reads it once, in parallel, and keeps no staging rows or tid
 * maps.  (A pass after a whole_table mark recomputes every chunk, in
 * batches: the cut-over does not take that on.)
 */
bool
QueryCatchUpPassCostsMore(const QueryCatchUpTarget *target, const QueryCatchUpPass *pass)
{
	int64		blocks = 0;

	if (pass->marks.whole_table)
		return false;			/* recomputed in batches all the same */
	if (target->partial)
		return PassWorkBlocks(pass) * 2 > Max(pass->end_block, 1);
	for (int i = 0; i < pass->marks.nrows;)
	{
		int64		start;
		int64		end;
		int			chunk = UnitOf(pass, ItemPointerGetBlockNumber(&pass->marks.rows[i].source),
								   &start, &end);
		int			next;

		if (chunk < 0)
			break;				/* beyond the chunks: row by row */
		if (ChunkMostlyChanged(pass, chunk, i, &next))
			blocks += pass->chunks[chunk].end_block - pass->chunks[chunk].start_block;
		i = next;
	}
	return blocks * 2 > Max(pass->end_block, 1);
}

/*
 * Partial aggregation: will the units be mostly dirty at the end of the
 * backfill?  Judged from the marks anywhere in the table, not only in the
 * backfilled chunks (many more of them: the projection is sure sooner), in
 * units of the size that the rest of the backfill's chunks will have (the
 * next chunk's, or the last one's if larger).  Dirtied at a rate l per
 * unit, a unit is dirty after a time t with the probability 1 - exp(-l t);
 * units backfilled evenly over the backfill's time T are then dirty at its
 * end in a share 1 - (1 - exp(-l T)) / (l T), above a half once l T >
 * SPREAD_LAMBDA_T.  With the backfill at the same pace since the capture
 * began, l T is l t * table / backfilled.  l t, the changes a unit has had
 * so far, is counted from the changed rows, a sample of the writers' pace:
 * two standard deviations fewer (of a Poisson count), so that a few early
 * marks do not decide it; and where the dirty units say fewer (the changes
 * are clustered: a few hot rows), from them, -ln(1 - share dirty now).
 * (From the dirty units alone, with the same margin, a backfill whose units
 * had grown to a sixteenth of the table never found them spread, every unit
 * dirty, and recomputed the whole query at its cut-over after it.)
 */
#define SPREAD_LAMBDA_T			1.594
/* The chunks done before the changes' spread is judged (QueryCatchUpChangesSpread) */
#define SPREAD_MIN_CHUNKS		4

static bool
UnitsSpread(const QueryCatchUpTarget *target, const QueryCatchUpPass *pass, int64 backfilled)
{
	const ChunkRange *last = &pass->chunks[pass->nchunks - 1];
	int64		unit_blocks = ChunkUnitBlocks(0, Max(last->end_block - last->start_block,
													 target->chunk_blocks));
	int64		units = Max(pass->end_block, backfilled) / unit_blocks + 1;
	int64		dirty = 0;
	int64		changed = 0;
	int64		last_unit = -1;
	double		per_unit;

	for (int i = 0; i < pass->marks.nrows; i++)
	{
		int64		unit = ItemPointerGetBlockNumber(&pass->marks.rows[i].source) / unit_blocks;

		if (unit != last_unit)
			dirty++;
		last_unit = unit;
		if (NewSource(pass->marks.rows, i, 0))
			changed++;
	}
	per_unit = Max(changed - 2.0 * sqrt(changed), 0.0) / units;
	if (dirty < units)
		per_unit = Min(per_unit, -log(1.0 - (double) dirty / units));
	return per_unit * Max(pass->end_block, backfilled) / backfilled > SPREAD_LAMBDA_T;
}

/*
 * During the backfill: will the writers' changes have made most of the table
 * dirty by the end, so that the whole query at the cut-over costs less than
 * the rest of the backfill and its catch-up?  Projected from the backfilled
 * chunks, whose changes go on at the same pace while the rest is backfilled:
 *
 *	- partial aggregation: see UnitsSpread;
 *	- row by row: if a share f of their driving rows changed, about
 *	  f * table / backfilled of the table's will have by its end.  Its
 *	  catch-up recomputes them in one worker, a row costing about as much as
 *	  CHUNK_RECOMPUTE_SHARE rows of the backfill (which is why a chunk with a
 *	  changed row in that many is recomputed whole): in a share c = f * table
 *	  / backfilled * CHUNK_RECOMPUTE_SHARE * w of the backfill's time T, w its
 *	  workers, were the writers to stop.  They go on, changing rows at c
 *	  times the pace the catch-up recomputes them, so that it ends after
 *	  c / (1 - c) of T (never, from c = 1 on): longer than the whole query,
 *	  which reads the table about as fast as the backfill, once c > 1/2.
 *	  (The changed rows of a joined table's changed row count too: a join
 *	  whose joined table changes keeps a catch-up busy most.)
 *
 * At least SPREAD_MIN_CHUNKS chunks must be done: before, *too_early is
 * set.  Caller is in a step, not as the job's role.
 */
bool
QueryCatchUpChangesSpread(const QueryCatchUpTarget *target, bool *too_early)
{
	QueryCatchUpPass pass;
	int64		backfilled = 0;
	int64		dirty = 0;
	bool		spread = false;

	QueryCatchUpPassBegin(target, &pass, CurrentMemoryContext);
	for (int i = 0; i < pass.nchunks; i++)
		backfilled += pass.chunks[i].end_block - pass.chunks[i].start_block;
	*too_early = pass.nchunks < SPREAD_MIN_CHUNKS || backfilled == 0;
	if (!pass.marks.uncaptured && !*too_early)
	{
		if (target->partial)
			spread = UnitsSpread(target, &pass, backfilled);
		else
		{
			for (int i = 0; i < pass.marks.nrows; i++)
			{
				int64		start;
				int64		end;

				if (UnitOf(&pass, ItemPointerGetBlockNumber(&pass.marks.rows[i].source),
						   &start, &end) >= 0 && NewSource(pass.marks.rows, i, 0))
					dirty++;
			}
			spread = (double) dirty / (backfilled * pass.rows_per_block) *
				Max(pass.end_block, backfilled) / backfilled * CHUNK_RECOMPUTE_SHARE *
				Max(target->workers, 1) > 0.5;
		}
	}
	QueryCatchUpPassEnd(&pass);
	return spread;
}

/*
 * After a pass recomputed every row: was the job block among those it
 * recomputed (the chunks, or blocks beyond them the table had at the pass's
 * start)?
 */
static bool
Recomputed(const QueryCatchUpTarget *target, const QueryCatchUpPass *pass, int64 block)
{
	if (block < target->driving->blocks)
		return true;
	for (int i = 0; i < pass->nbeyond; i++)
	{
		if (block >= pass->beyond[i].start_block && block < pass->beyond[i].end_block)
			return true;
	}
	return false;
}

/* The marks that a batch recomputed, which it deletes at its end */
typedef struct DoneMarks
{
	MarkId	   *marks;
	int			count;
	int			capacity;
} DoneMarks;

static void
AddMark(DoneMarks *done, const MarkId *mark)
{
	if (!ItemPointerIsValid(&mark->tid))
		return;
	if (done->count == done->capacity)
		done->marks = repalloc_huge(done->marks, sizeof(MarkId) * (done->capacity *= 2));
	done->marks[done->count++] = *mark;
}

/*
 * Take the pass's next marks, those of sources before end_block (recomputed
 * now), into the marks to delete
 */
static void
TakeMarksBefore(QueryCatchUpPass *pass, int64 end_block, DoneMarks *done)
{
	DirtyMark  *rows = pass->marks.rows;

	for (; pass->next < pass->marks.nrows &&
		 ItemPointerGetBlockNumber(&rows[pass->next].source) < end_block; pass->next++)
	{
		if (NewSource(rows, pass->next, 0))
			pass->sources_done++;
		AddMark(done, &rows[pass->next].mark);
	}
}

/*
 * Row by row: have changes touched so many of the driving rows of a chunk
 * (a twentieth, as the statistics count its rows), from mark first on, that
 * recomputing the whole chunk costs less than recomputing them one by one,
 * with a TID scan each?  *next gets the first mark beyond the chunk.
 */
static bool
ChunkMostlyChanged(const QueryCatchUpPass *pass, int chunk, int first, int *next)
{
	int64		changed = 0;
	int			i;

	for (i = first; i < pass->marks.nrows &&
		 ItemPointerGetBlockNumber(&pass->marks.rows[i].source) < pass->chunks[chunk].end_block; i++)
	{
		if (NewSource(pass->marks.rows, i, first))
			changed++;
	}
	*next = i;
	/* (in an index's order, a chunk recomputed whole would lose it: row by row) */
	return !pass->keeps_order && changed * CHUNK_RECOMPUTE_SHARE >
		(pass->chunks[chunk].end_block - pass->chunks[chunk].start_block) * pass->rows_per_block;
}

/* Does the pass's next mark lie in a chunk that ChunkMostlyChanged? */
static bool
NextChunkMostlyChanged(QueryCatchUpPass *pass)
{
	int64		start;
	int64		end;
	int			chunk = UnitOf(pass, ItemPointerGetBlockNumber(&pass->marks.rows[pass->next].source),
							   &start, &end);
	int			next;

	return chunk >= 0 && ChunkMostlyChanged(pass, chunk, pass->next, &next);
}

/*
 * Partial aggregation: append the units that cover blocks [from, to) to
 * *starts and *ends (of *capacity, grown as needed), which hold nunits;
 * returns how many they hold then
 */
static int
AppendUnits(const QueryCatchUpPass *pass, int64 from, int64 to, int64 **starts, int64 **ends,
			int nunits, int *capacity)
{
	for (int64 block = from; block < to; block = (*ends)[nunits - 1])
	{
		if (nunits == *capacity)
		{
			*starts = repalloc(*starts, sizeof(int64) * (*capacity *= 2));
			*ends = repalloc(*ends, sizeof(int64) * *capacity);
		}
		(void) UnitOf(pass, block, &(*starts)[nunits], &(*ends)[nunits]);
		nunits++;
	}
	return nunits;
}

/*
 * A batch after a whole_table mark: whole chunks, then the blocks beyond
 * them, up to budget blocks.  Once all are recomputed, so is every row the
 * pass's marks name (but those beyond the blocks: see below).  Returns
 * whether chunks or blocks are left.
 */
static bool
BatchWholeTable(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, int64 budget,
				DoneMarks *done, int64 *rows_gained, int64 *recomputed)
{
	CapturedMarks *marks = &pass->marks;
	int64		cost = 0;

	while (cost < budget && pass->next_chunk < pass->nchunks)
	{
		int			c = pass->next_chunk++;
		ChunkRange *chunk = &pass->chunks[c];

		if (target->partial)
		{
			int			capacity = (chunk->end_block - chunk->start_block) / UNIT_MIN_BLOCKS + 2;
			int64	   *starts = palloc(sizeof(int64) * capacity);
			int64	   *ends = palloc(sizeof(int64) * capacity);
			int			nunits = AppendUnits(pass, chunk->start_block, chunk->end_block,
											 &starts, &ends, 0, &capacity);
			ItemPointerData split_start;

			ItemPointerSet(&split_start, (BlockNumber) chunk->start_block, 0);
			*rows_gained += RecomputeUnits(target, starts, ends, nunits, &split_start,
										   pass->split[c] ? 0 : 1, recomputed);
			pass->split[c] = true;
		}
		else
			*rows_gained += RecomputeRange(target, chunk->start_block, chunk->start_block,
										   chunk->end_block, recomputed);
		cost += chunk->end_block - chunk->start_block;
	}
	while (cost < budget && pass->next_chunk == pass->nchunks && pass->next_beyond < pass->nbeyond)
	{
		ChunkRange *area = &pass->beyond[pass->next_beyond];
		int64		start;
		int64		end;

		pass->next_block = Max(pass->next_block, area->start_block);
		if (target->partial)
		{
			(void) UnitOf(pass, pass->next_block, &start, &end);
			*rows_gained += RecomputeUnits(target, &start, &end, 1, NULL, 0, recomputed);
		}
		else
		{
			start = pass->next_block;
			end = Min(area->end_block, start + Max(budget - cost, 1));
			*rows_gained += RecomputeRange(target, -1, start, end, recomputed);
		}
		cost += end - start;
		pass->next_block = end;
		if (pass->next_block >= area->end_block)
			pass->next_beyond++;
	}
	if (pass->next_chunk < pass->nchunks || pass->next_beyond < pass->nbeyond)
		return true;
	/*
	 * Every row was recomputed after every mark the pass read, but for marks
	 * beyond the blocks it recomputed (the table was longer once: vacuum
	 * truncated it): those rows' outputs are the next pass's to delete, so
	 * their marks stay
	 */
	for (int i = 0; i < marks->nrows; i++)
	{
		if (Recomputed(target, pass, ItemPointerGetBlockNumber(&marks->rows[i].source)))
			AddMark(done, &marks->rows[i].mark);
	}
	marks->nrows = 0;
	pass->sources_done = pass->sources;
	return false;
}

/*
 * A batch of partial aggregation: the units of the next marks, up to budget
 * blocks (a chunk not split into units yet, as all of its units)
 */
static void
BatchUnits(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, int64 budget,
		   DoneMarks *done, int64 *rows_gained, int64 *recomputed)
{
	CapturedMarks *marks = &pass->marks;
	int			unit_capacity = 64;
	int64	   *starts = palloc(sizeof(int64) * unit_capacity);
	int64	   *ends = palloc(sizeof(int64) * unit_capacity);
	int			nunits = 0;
	ItemPointer split_starts = palloc(sizeof(ItemPointerData) * Max(pass->nchunks, 1));
	int			nsplit = 0;
	int64		cost = 0;

	while (pass->next < marks->nrows)
	{
		int64		start;
		int64		end;
		int			chunk = UnitOf(pass, ItemPointerGetBlockNumber(&marks->rows[pass->next].source),
								   &start, &end);
		bool		whole_chunk = chunk >= 0 && !pass->split[chunk];

		if (whole_chunk)
		{
			start = pass->chunks[chunk].start_block;
			end = pass->chunks[chunk].end_block;
		}
		if (nunits > 0 && cost + (end - start) > budget)
			break;
		cost += end - start;
		nunits = AppendUnits(pass, start, end, &starts, &ends, nunits, &unit_capacity);
		if (whole_chunk)
		{
			pass->split[chunk] = true;
			/* ItemPointerSet evaluates its pointer more than once */
			ItemPointerSet(&split_starts[nsplit], (BlockNumber) pass->chunks[chunk].start_block, 0);
			nsplit++;
		}
		TakeMarksBefore(pass, ends[nunits - 1], done);
	}
	if (nunits > 0)
		*rows_gained = RecomputeUnits(target, starts, ends, nunits, split_starts, nsplit,
									  recomputed);
}

/* A batch of the chunk of the next mark, recomputed as a whole (ChunkMostlyChanged) */
static void
BatchChunk(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, DoneMarks *done,
		   int64 *rows_gained, int64 *recomputed)
{
	int64		start;
	int64		end;
	int			chunk = UnitOf(pass, ItemPointerGetBlockNumber(&pass->marks.rows[pass->next].source),
							   &start, &end);

	*rows_gained = RecomputeRange(target, pass->chunks[chunk].start_block,
								  pass->chunks[chunk].start_block,
								  pass->chunks[chunk].end_block, recomputed);
	pass->map_chunk = -1;		/* its tid map was replaced */
	TakeMarksBefore(pass, pass->chunks[chunk].end_block, done);
}

/* A batch row by row: the next budget sources, each recomputed with a TID scan */
static void
BatchSources(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, int64 budget,
			 DoneMarks *done, int64 *rows_gained, int64 *recomputed)
{
	CapturedMarks *marks = &pass->marks;
	ItemPointer sources = palloc(sizeof(ItemPointerData) * Max(Min(budget, marks->nrows), 1));
	int			nsources = 0;

	while (pass->next < marks->nrows)
	{
		ItemPointer source = &marks->rows[pass->next].source;

		if (nsources == 0 || !ItemPointerEquals(&sources[nsources - 1], source))
		{
			if (nsources >= budget)
				break;
			sources[nsources++] = *source;
		}
		AddMark(done, &marks->rows[pass->next].mark);
		pass->next++;
	}
	/* (the last pass's budget has no bound: RecomputeSources records nothing) */
	Assert(!pass->last || pass->next >= marks->nrows);
	pass->sources_done += nsources;
	if (nsources > 0)
		*rows_gained = RecomputeSources(target, pass, sources, nsources, recomputed);
}

/*
 * One batch of a pass, in the current transaction (REPEATABLE READ, see
 * QueryCatchUpTarget), at its snapshot: the next sources, or units of
 * partial aggregation, or a chunk mostly changed, or (after a whole_table
 * mark) chunks, in driving table order, about budget of them (rows, or
 * blocks), at least one; their marks are deleted.  The last batch deletes
 * the pass's other marks.  Returns false once the pass is done.
 * *rows_gained says how the result's row count moved, *recomputed counts
 * the rows computed again.
 */
bool
QueryCatchUpBatch(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, int64 budget,
				  int64 *rows_gained, int64 *recomputed)
{
	CapturedMarks *marks = &pass->marks;
	DoneMarks	done = {palloc(sizeof(MarkId) * 64), 0, 64};

	Assert(IsolationUsesXactSnapshot());
	*rows_gained = 0;
	if (marks->whole_table)
	{
		if (BatchWholeTable(target, pass, budget, &done, rows_gained, recomputed))
			return true;
	}
	else if (target->partial)
		BatchUnits(target, pass, budget, &done, rows_gained, recomputed);
	else if (pass->next < marks->nrows && NextChunkMostlyChanged(pass))
		BatchChunk(target, pass, &done, rows_gained, recomputed);
	else
		BatchSources(target, pass, budget, &done, rows_gained, recomputed);
	if (pass->next >= marks->nrows)
	{
		/* Their driving rows were all recomputed since the pass began */
		for (int i = 0; i < marks->nothers; i++)
			AddMark(&done, &marks->others[i]);
		marks->nothers = 0;
	}
	CaptureMarksDelete(target->job_id, done.marks, done.count);
	return pass->next < marks->nrows;
}

/* The changed sources of the pass not yet recomputed */
int64
QueryCatchUpBacklog(const QueryCatchUpPass *pass)
{
	return Max(pass->sources - pass->sources_done, 0);
}
