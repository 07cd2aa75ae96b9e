/*-------------------------------------------------------------------------
 *
 * query_estimate.c
 *	  estimate_ddl's measure of a query job before it runs: rows, bytes, WAL
 *	  and time, from a rolled-back run of a sample of its chunks.
 *
 * The query is decomposed as its job would decompose it (the strategy).  A
 * job computed in chunks is measured on a sample: SAMPLE_RANGES block ranges
 * spread over the driving table (its partitions, laid end to end), of two
 * sizes, a hundredth of its blocks in all (at least 640: small ranges of 32),
 * computed as the job computes its chunks (query_backfill.c), into a
 * relation like the job's content (its staging relation, for partial
 * aggregation), inside a subtransaction that
 * is rolled back: nothing stays.  The two sizes tell a chunk's cost per
 * block from its cost per chunk (an aggregate's groups, planning): the time
 * and WAL are scaled to the whole table in chunks of the size the batch
 * time gives, one after another: a second worker of the job shortens it
 * only where a core is free for it (bench/estimate.sh: on two cores, the
 * time divided between two workers was half the job's); rows and bytes
 * scale with the blocks.  For partial aggregation the rows and bytes of the result
 * are the planner's (the sample measures partial rows).  A job in one batch
 * cannot be sampled: its rows and bytes are the planner's, its time
 * unknown (NULL).
 *
 * The sample runs in the caller's session, as the caller: it reads what the
 * job would read, with the caller's privileges.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "capture/capture_tid_map.h"
#include "catalog/settings.h"
#include "pg/pg_subxact.h"
#include "query/query_backfill.h"
#include "query/query_decompose.h"
#include "query/query_driving.h"
#include "query/query_estimate.h"
#include "query/query_partial_agg.h"
#include "query/query_submit.h"

#define SAMPLE_RANGES		8		/* half small, half large */
#define LARGE_FACTOR		4		/* a large range's blocks, in small ranges' */

/* The locks a query job takes, and for how long */
static char *
QueryJobLocks(const QueryDecomposition *decomposition)
{
	if (decomposition->driving_rtindex == 0)
		return pstrdup("ACCESS SHARE on the tables it reads, for the whole build (one transaction); "
					   "ACCESS EXCLUSIVE on the new object when it is published (milliseconds)");
	return psprintf("SHARE ROW EXCLUSIVE on %s%s to install its capture triggers (milliseconds; "
					"asked for without queueing, then for at most background_ddl.lock_timeout); "
					"ACCESS SHARE on the tables it reads during each batch; ACCESS EXCLUSIVE on the "
					"new object when it is published, and on each captured table to drop its "
					"trigger at the end (milliseconds, asked for as the install)",
					decomposition->leaves != NIL ?
					psprintf("each of the %d partitions read", list_length(decomposition->leaves)) :
					psprintf("\"%s\"", get_rel_name(decomposition->driving_oid)),
					list_length(decomposition->relids) > 1 ? " and the other tables it reads" : "");
}

/* What a sample measured, per range of each of its two sizes */
typedef struct SampleCosts
{
	int64		small_blocks;	/* the size of the small ranges */
	double		seconds[2];		/* mean per range: small, large */
	double		wal[2];
	double		rows;			/* all ranges' */
	double		bytes;			/* the staging relation's */
	int64		sampled;		/* blocks, all ranges' */
} SampleCosts;

/* A sample to compute (RunSample) */
typedef struct SampleRun
{
	Query	   *chunk_query;
	bool		partial;		/* a chunk query of partial aggregation */
	Index		rtindex;
	const QueryDriving *driving;
	int			nranges;
	SampleCosts *costs;
} SampleRun;

/* The sample's ranges, each timed alone, into a staging relation */
static void
RunSampleRanges(void *arg)
{
	SampleRun  *sample = arg;
	SampleCosts *costs = sample->costs;
	const QueryDriving *driving = sample->driving;
	int			nranges = sample->nranges;
	Oid			staging_oid = QueryPartialAggCreateStaging(-(int64) MyProcPid, sample->chunk_query,
														   GetUserId(), InvalidOid, sample->partial);
	Relation	staging;
	TidPair    *warm_pairs;
	int			warm_npairs;

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	staging = table_open(staging_oid, RowExclusiveLock);
	/* A first range, not counted: caches, the staging relation's first pages */
	(void) QueryBackfillBlocks(staging, copyObject(sample->chunk_query), driving, sample->rtindex,
							   sample->partial, false, 0, costs->small_blocks, &warm_pairs,
							   &warm_npairs);
	CommandCounterIncrement();
	for (int i = 0; i < nranges; i++)
	{
		int			large = i % 2;
		int64		blocks = costs->small_blocks * (large ? LARGE_FACTOR : 1);
		int64		first = Max(0, (driving->blocks - blocks) * i / Max(nranges - 1, 1));
		XLogRecPtr	wal_start = GetXLogInsertRecPtr();
		instr_time	start;
		instr_time	duration;
		TidPair    *pairs;
		int			npairs;
		double		tid_map_bytes = 0;

		INSTR_TIME_SET_CURRENT(start);
		costs->rows += QueryBackfillBlocks(staging, copyObject(sample->chunk_query), driving,
										   sample->rtindex, sample->partial, false, first,
										   first + blocks, &pairs, &npairs);
		CommandCounterIncrement();
		/* The job encodes its tid map, and stores it with the chunk (out of line) */
		if (!sample->partial)
			tid_map_bytes = VARSIZE(CaptureTidMapEncode(pairs, npairs));
		INSTR_TIME_SET_CURRENT(duration);
		INSTR_TIME_SUBTRACT(duration, start);
		costs->seconds[large] += INSTR_TIME_GET_DOUBLE(duration) / (nranges / 2);
		costs->wal[large] += ((double) (GetXLogInsertRecPtr() - wal_start) + tid_map_bytes) /
			(nranges / 2);
		costs->sampled += blocks;
	}
	costs->bytes = (double) RelationGetNumberOfBlocks(staging) * BLCKSZ;
	table_close(staging, NoLock);
	PopActiveSnapshot();
}

/*
 * Compute the sample of a chunked job in a subtransaction, rolled back:
 * SAMPLE_RANGES / 2 small ranges of small_blocks and as many large ones of
 * LARGE_FACTOR times that, spread over the table, each timed alone.  A
 * chunk's cost is a part per block (reading, computing, inserting its rows)
 * and a part per chunk (its groups, for partial aggregation, planning,
 * starting the executor): two sizes tell them apart.
 */
static void
RunSample(Query *chunk_query, bool partial, Index rtindex, const QueryDriving *driving,
		  SampleCosts *costs)
{
	SampleRun	sample = {chunk_query, partial, rtindex, driving, SAMPLE_RANGES, costs};
	int64		target = Max(ESTIMATE_SAMPLE_MIN_BLOCKS, driving->blocks / ESTIMATE_SAMPLE_SHARE);
	int			ranges_of_small = (sample.nranges / 2) * (1 + LARGE_FACTOR);

	memset(costs, 0, sizeof(SampleCosts));
	/* small ranges of s blocks and large ones of LARGE_FACTOR * s */
	costs->small_blocks = Max(1, target / ranges_of_small);
	while (sample.nranges > 2 &&
		   (sample.nranges / 2) * (1 + LARGE_FACTOR) * costs->small_blocks > driving->blocks)
		sample.nranges -= 2;
	ranges_of_small = (sample.nranges / 2) * (1 + LARGE_FACTOR);
	if (ranges_of_small * costs->small_blocks > driving->blocks)
		costs->small_blocks = Max(1, driving->blocks / ranges_of_small);
	PgRunRolledBack(RunSampleRanges, &sample);
}

/*
 * The whole job's (seconds or WAL) from a cost per small and per large
 * range: a part per block and a part per chunk, with chunks of the size the
 * job's batch time gives (as query_job.c sizes them), or all of it in one.
 */
static double
ScaleCost(const SampleCosts *costs, const double *per_range, const double *seconds, int64 blocks)
{
	double		extra = (double) (LARGE_FACTOR - 1) * costs->small_blocks;
	double		per_block = Max(0.0, (per_range[1] - per_range[0]) / extra);
	double		per_chunk = Max(0.0, per_range[0] - per_block * costs->small_blocks);
	double		seconds_per_block = Max(1e-9, (seconds[1] - seconds[0]) / extra);
	double		seconds_per_chunk = Max(0.0, seconds[0] - seconds_per_block * costs->small_blocks);
	double		chunk_blocks = (background_ddl_batch_time_ms / 1000.0 - seconds_per_chunk) /
		seconds_per_block;

	chunk_blocks = Min(Max(chunk_blocks, 1.0), (double) blocks);
	return blocks * per_block + (blocks / chunk_blocks) * per_chunk;
}

/*
 * Estimate the job of an analysed query (a view's, a CREATE TABLE AS's, a
 * REFRESH's: the view it refreshes is target_oid; a table's rewrite's, which
 * copies_rows: QueryDecompose), as the calling role.  Caller is in a transaction with an
 * active snapshot.
 */
void
QueryJobEstimate(Query *query, Oid target_oid, bool copies_rows, JobEstimate *estimate)
{
	Query	   *job_query = QueryJobRewritten(query);
	QueryDecomposition decomposition;
	PlannedStmt *plan;
	QueryDriving *driving;
	SampleCosts costs;
	double		scale;

	QueryDecompose(job_query, target_oid, GetUserId(), InvalidOid, copies_rows, &decomposition);

	memset(estimate, 0, sizeof(JobEstimate));
	estimate->strategy = QueryStrategy(&decomposition);
	estimate->locks = QueryJobLocks(&decomposition);
	estimate->seconds = -1;
	plan = pg_plan_query(copyObject(job_query), "background_ddl estimate", 0, NULL);
	estimate->rows = (int64) plan->planTree->plan_rows;
	estimate->bytes = (int64) (plan->planTree->plan_rows * (plan->planTree->plan_width + 28));
	estimate->wal_bytes = estimate->bytes;
	if (decomposition.driving_rtindex == 0)
		return;

	driving = QueryDrivingMeasure(decomposition.driving_oid, decomposition.leaves, NIL);
	estimate->total_blocks = driving->blocks;
	if (driving->blocks == 0)
	{
		estimate->seconds = 0;
		return;
	}
	RunSample(decomposition.partial ? QueryPartialAggChunk(copyObject(job_query)) : job_query,
			  decomposition.partial, decomposition.driving_rtindex, driving, &costs);
	estimate->sampled_blocks = costs.sampled;
	scale = (double) driving->blocks / costs.sampled;
	if (!decomposition.partial)
	{
		estimate->rows = (int64) (costs.rows * scale);
		estimate->bytes = (int64) (costs.bytes * scale);
	}
	estimate->wal_bytes = (int64) ScaleCost(&costs, costs.wal, costs.seconds, driving->blocks);
	estimate->seconds = ScaleCost(&costs, costs.seconds, costs.seconds, driving->blocks);
}

/*
 * Estimate the job of a raw SELECT (a view's or a table's query, or a
 * SELECT ... INTO: its INTO is left out), analysed here as the caller
 */
void
QueryJobEstimateSelect(Node *raw_select, const char *query_string, JobEstimate *estimate)
{
	RawStmt    *raw = makeNode(RawStmt);
	SelectStmt *select = copyObject(castNode(SelectStmt, raw_select));

	select->intoClause = NULL;
	raw->stmt = (Node *) select;
	QueryJobEstimate(parse_analyze_fixedparams(raw, query_string, NULL, 0, NULL), InvalidOid,
					 false, estimate);
}
