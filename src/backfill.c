/*-------------------------------------------------------------------------
 *
 * backfill.c
 *	  Computing the content of a materialized view in short transactions.
 *
 * A blocking CREATE MATERIALIZED VIEW computes its content in one
 * transaction, which holds back VACUUM for the whole build and loses all of
 * it on a crash.  We split the work instead, when the query allows it:
 *
 * A query is decomposable when, after rewriting, some base table drives it:
 * every output row comes from exactly one row of that table, and whether and
 * how it appears depends on that row alone (plus other tables, read as they
 * are).  That holds for projections, filters, inner joins and left joins that
 * preserve the driving table.  It does not hold for aggregates, DISTINCT,
 * window functions, LIMIT/OFFSET, set operations, set-returning functions in
 * the target list, sublinks, CTEs, ORDER BY (the physical order would
 * differ), TABLESAMPLE, or for any non-immutable function: now() would differ
 * between batches, and a stable function may read other tables.
 *
 * A decomposable query is run chunk by chunk: chunk i adds the qual
 * "ctid >= '(start_i,0)' AND ctid < '(end_i,0)'" on the driving table (a TID
 * range scan), and its rows are inserted into the placeholder's own heap in
 * the same transaction that records the chunk in background_ddl.chunk and
 * advances the job's next_block.  That commit is the checkpoint: after a
 * crash the job restarts at next_block, and the rows of the interrupted
 * chunk are simply invisible (their transaction aborted), so at most one
 * chunk of work is lost and no row is ever computed twice.  The last chunk
 * has no upper bound, so it also covers pages added since the job started.
 *
 * The placeholder is unpopulated until the cut-over, so nobody can read the
 * partial content: the executor refuses to scan it.  Rows are inserted as
 * ordinary MVCC tuples of committed transactions (never frozen), so the
 * relation's relfrozenxid stays right without any swap.
 *
 * Chunk sizes adapt toward background_ddl.batch_time: each chunk's duration
 * scales the next one's block count (at most 4x up or down per step).
 *
 * Every statement here runs as the role that submitted the job, under
 * SECURITY_RESTRICTED_OPERATION and with its captured settings (worker.c
 * sets that up), so the executor checks that role's privileges on every
 * batch, and row security applies as it would to that role.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "pgstat.h"
#include "rewrite/rewriteHandler.h"
#include "storage/bufmgr.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "background_ddl.h"
#include "backfill.h"
#include "compat.h"
#include "job_catalog.h"

#define CHUNK_BLOCKS_INITIAL	64
#define CHUNK_BLOCKS_MAX		(1 << 20)

/* A DestReceiver that inserts into the placeholder and its indexes */
typedef struct TargetInsertReceiver
{
	DestReceiver pub;
	Relation	target;
	CommandId	output_cid;
	BulkInsertState bistate;
	EState	   *estate;			/* only if the target has indexes */
	ResultRelInfo *result_rel_info;
	uint64		rows;
} TargetInsertReceiver;

static void
TargetInsertStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	TargetInsertReceiver *receiver = (TargetInsertReceiver *) self;

	receiver->output_cid = GetCurrentCommandId(true);
	receiver->bistate = GetBulkInsertState();
	receiver->rows = 0;

	/*
	 * Users may create indexes on the placeholder while the job runs (a
	 * script usually does so right after CREATE MATERIALIZED VIEW): keep
	 * them up to date like INSERT would.
	 */
	if (receiver->target->rd_rel->relhasindex)
	{
		receiver->estate = CreateExecutorState();
		receiver->result_rel_info = makeNode(ResultRelInfo);
		InitResultRelInfo(receiver->result_rel_info, receiver->target, 1, NULL, 0);
		ExecOpenIndices(receiver->result_rel_info, false);
	}
}

static bool
TargetInsertReceive(TupleTableSlot *slot, DestReceiver *self)
{
	TargetInsertReceiver *receiver = (TargetInsertReceiver *) self;

	table_tuple_insert(receiver->target, slot, receiver->output_cid,
					   TABLE_INSERT_SKIP_FSM, receiver->bistate);
	if (receiver->result_rel_info != NULL &&
		receiver->result_rel_info->ri_NumIndices > 0)
	{
		(void) BgddlExecInsertIndexTuples(receiver->result_rel_info, slot,
										  receiver->estate);
		ResetPerTupleExprContext(receiver->estate);
	}
	receiver->rows++;
	return true;
}

static void
TargetInsertShutdown(DestReceiver *self)
{
	TargetInsertReceiver *receiver = (TargetInsertReceiver *) self;

	FreeBulkInsertState(receiver->bistate);
	table_finish_bulk_insert(receiver->target, TABLE_INSERT_SKIP_FSM);
	if (receiver->estate != NULL)
	{
		ExecCloseIndices(receiver->result_rel_info);
		FreeExecutorState(receiver->estate);
		receiver->estate = NULL;
		receiver->result_rel_info = NULL;
	}
}

static void
TargetInsertDestroy(DestReceiver *self)
{
	pfree(self);
}

static TargetInsertReceiver *
TargetInsertReceiverCreate(Relation target)
{
	TargetInsertReceiver *receiver = palloc0(sizeof(TargetInsertReceiver));

	receiver->pub.receiveSlot = TargetInsertReceive;
	receiver->pub.rStartup = TargetInsertStartup;
	receiver->pub.rShutdown = TargetInsertShutdown;
	receiver->pub.rDestroy = TargetInsertDestroy;
	receiver->pub.mydest = DestNone;
	receiver->target = target;
	return receiver;
}

/* Can this range table entry drive a chunked backfill? */
static bool
IsChunkableRelation(RangeTblEntry *rte)
{
	Relation	rel;
	bool		chunkable;

	if (rte->rtekind != RTE_RELATION || rte->tablesample != NULL)
		return false;
	if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW)
		return false;
	/* ctid ranges are per relation: an inheritance tree has several */
	if (rte->inh && has_subclass(rte->relid))
		return false;
	rel = table_open(rte->relid, NoLock);
	chunkable = rel->rd_rel->relam == HEAP_TABLE_AM_OID;
	table_close(rel, NoLock);
	return chunkable;
}

/*
 * Collect the range table indexes of the relations in a join tree node whose
 * every row reaches the output at most once per match, unfiltered by
 * another table's absence: both sides of inner joins, the preserved side of
 * outer joins.
 */
static void
CollectDrivingCandidates(Query *query, Node *node, List **candidates)
{
	if (node == NULL)
		return;
	if (IsA(node, RangeTblRef))
	{
		Index		rtindex = ((RangeTblRef *) node)->rtindex;

		if (IsChunkableRelation(rt_fetch(rtindex, query->rtable)))
			*candidates = lappend_int(*candidates, rtindex);
	}
	else if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			CollectDrivingCandidates(query, lfirst(lc), candidates);
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;

		if (join->jointype == JOIN_INNER || join->jointype == JOIN_LEFT)
			CollectDrivingCandidates(query, join->larg, candidates);
		if (join->jointype == JOIN_INNER || join->jointype == JOIN_RIGHT)
			CollectDrivingCandidates(query, join->rarg, candidates);
	}
}

/*
 * Find the driving table of a rewritten query: the range table index of the
 * largest relation that can drive a chunked backfill, or 0 if the query is
 * not decomposable.  With required_relid, take the first candidate that is
 * that relation instead (a resumed job must keep the driving table it
 * started with, even if relative sizes changed).
 */
Index
BackfillFindDrivingTable(Query *query, Oid required_relid)
{
	List	   *candidates = NIL;
	ListCell   *lc;
	Index		best = 0;
	BlockNumber best_pages = 0;

	if (query->commandType != CMD_SELECT || query->hasAggs ||
		query->groupClause != NIL || query->groupingSets != NIL ||
		query->havingQual != NULL || query->distinctClause != NIL ||
		query->hasWindowFuncs || query->hasTargetSRFs ||
		query->limitCount != NULL || query->limitOffset != NULL ||
		query->setOperations != NULL || query->hasSubLinks ||
		query->cteList != NIL || query->hasRecursive ||
		query->sortClause != NIL || query->rowMarks != NIL ||
		query->hasForUpdate)
		return 0;
	if (contain_mutable_functions((Node *) query))
		return 0;

	CollectDrivingCandidates(query, (Node *) query->jointree, &candidates);
	foreach(lc, candidates)
	{
		Index		rtindex = lfirst_int(lc);
		Oid			relid = rt_fetch(rtindex, query->rtable)->relid;
		Relation	rel;
		BlockNumber pages;

		if (OidIsValid(required_relid))
		{
			if (relid == required_relid)
				return rtindex;
			continue;
		}
		rel = table_open(relid, NoLock);
		pages = RelationGetNumberOfBlocks(rel);
		table_close(rel, NoLock);
		if (best == 0 || pages > best_pages)
		{
			best = rtindex;
			best_pages = pages;
		}
	}
	return best;
}

/*
 * The job's query, rewritten (row security of the current user applied) and
 * with its relations locked, from the placeholder's view rule: bound to
 * OIDs at submit, like REFRESH MATERIALIZED VIEW uses it.
 */
Query *
BackfillJobQuery(Relation target)
{
	Query	   *query = copyObject(get_view_query(target));
	List	   *rewritten;

	AcquireRewriteLocks(query, true, false);
	rewritten = QueryRewrite(query);
	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for materialized view \"%s\"",
			 RelationGetRelationName(target));
	return linitial_node(Query, rewritten);
}

/* "ctid <op> '(block,0)'" on the driving table */
static Expr *
MakeCtidBound(Index rtindex, Oid opno, int64 block)
{
	ItemPointer tid = palloc(sizeof(ItemPointerData));
	Var		   *ctid;
	Const	   *bound;

	ItemPointerSet(tid, (BlockNumber) block, 0);
	ctid = makeVar(rtindex, SelfItemPointerAttributeNumber, TIDOID, -1, InvalidOid, 0);
	bound = makeConst(TIDOID, -1, InvalidOid, sizeof(ItemPointerData),
					  PointerGetDatum(tid), false, false);
	return make_opclause(opno, BOOLOID, false, (Expr *) ctid, (Expr *) bound,
						 InvalidOid, InvalidOid);
}

/* Restrict the query to blocks [start_block, end_block) of its driving table */
static void
RestrictToBlocks(Query *query, Index rtindex, int64 start_block, int64 end_block)
{
	List	   *quals = NIL;

	if (query->jointree->quals != NULL)
		quals = lappend(quals, query->jointree->quals);
	quals = lappend(quals, MakeCtidBound(rtindex, TIDGreaterEqOperator, start_block));
	if (end_block >= 0)
		quals = lappend(quals, MakeCtidBound(rtindex, TIDLessOperator, end_block));
	query->jointree->quals = (Node *) make_andclause(quals);
}

/*
 * Run a (restricted) query and insert its rows into the target.  Caller is
 * in a transaction with an active snapshot and holds RowExclusiveLock on the
 * target.  Returns the number of rows inserted.
 */
static uint64
RunIntoTarget(Relation target, Query *query, int cursor_options)
{
	PlannedStmt *plan;
	QueryDesc  *query_desc;
	TargetInsertReceiver *receiver;
	uint64		rows;

	/* An xid before a parallel plan starts: parallel mode cannot assign one */
	(void) GetCurrentTransactionId();

	plan = pg_plan_query(query, "background_ddl backfill", cursor_options, NULL);
	receiver = TargetInsertReceiverCreate(target);
	query_desc = CreateQueryDesc(plan, "background_ddl backfill", GetActiveSnapshot(),
								 InvalidSnapshot, (DestReceiver *) receiver, NULL, NULL, 0);
	ExecutorStart(query_desc, 0);
	ExecutorRun(query_desc, ForwardScanDirection, 0L, true);
	ExecutorFinish(query_desc);
	ExecutorEnd(query_desc);
	rows = receiver->rows;
	FreeQueryDesc(query_desc);
	receiver->pub.rDestroy((DestReceiver *) receiver);
	return rows;
}

/* The planner's estimate of the query's row count */
static int64
EstimateRows(Query *query)
{
	PlannedStmt *plan = pg_plan_query(copyObject(query), "background_ddl estimate", 0, NULL);

	return (int64) plan->planTree->plan_rows;
}

/*
 * Decide how the job's backfill is split and record it in the job row.
 * Caller is in a transaction, as the job's role, and holds a lock on the
 * target.
 */
void
BackfillPlan(BgddlJob *job)
{
	Relation	target = table_open(job->target_oid, AccessShareLock);
	Query	   *query = BackfillJobQuery(target);
	Index		driving_rtindex = BackfillFindDrivingTable(query, InvalidOid);

	job->rows_total = EstimateRows(query);
	job->next_block = 0;
	job->chunk_blocks = CHUNK_BLOCKS_INITIAL;
	if (driving_rtindex > 0)
	{
		Relation	driving;

		job->driving_oid = rt_fetch(driving_rtindex, query->rtable)->relid;
		driving = table_open(job->driving_oid, NoLock);
		job->blocks_total = RelationGetNumberOfBlocks(driving);
		table_close(driving, NoLock);
	}
	else
	{
		job->driving_oid = InvalidOid;
		job->blocks_total = 0;
	}
	job->planned = true;
	table_close(target, NoLock);

	JobRecordPlan(job->id, job->driving_oid, job->blocks_total, job->rows_total,
				  job->chunk_blocks);
}

/*
 * Run the next chunk of a chunked backfill and checkpoint it.  Caller is in
 * a transaction with an active snapshot, as the job's role; the caller
 * commits.  Returns false when the chunk was the last one.
 */
bool
BackfillNextChunk(BgddlJob *job)
{
	Relation	target = table_open(job->target_oid, RowExclusiveLock);
	Query	   *query = BackfillJobQuery(target);
	Index		driving_rtindex = BackfillFindDrivingTable(query, job->driving_oid);
	BgddlChunkResult chunk;
	instr_time	start_time;
	instr_time	duration;
	double		target_seconds = background_ddl_batch_time_ms / 1000.0;
	double		scale;
	int64		remaining_blocks;

	if (driving_rtindex == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the query of \"%s\" can no longer be split into batches",
						RelationGetRelationName(target)),
				 errdetail("Its driving table changed while the job was running.")));

	chunk.start_block = job->next_block;
	chunk.end_block = job->next_block + job->chunk_blocks;
	if (chunk.end_block >= job->blocks_total)
		chunk.end_block = -1;	/* the last chunk: up to the end, however far */

	INSTR_TIME_SET_CURRENT(start_time);
	RestrictToBlocks(query, driving_rtindex, chunk.start_block, chunk.end_block);
	chunk.rows = RunIntoTarget(target, query, 0);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	chunk.seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);

	/* Adapt the chunk size toward the target batch time */
	scale = Min(4.0, Max(0.25, target_seconds / chunk.seconds));
	chunk.next_chunk_blocks = (int32) Min((double) CHUNK_BLOCKS_MAX,
										  Max(1.0, job->chunk_blocks * scale));

	remaining_blocks = chunk.end_block < 0 ? 0 : job->blocks_total - chunk.end_block;
	chunk.chunks_total = job->chunks_done + 1 +
		(remaining_blocks + chunk.next_chunk_blocks - 1) / chunk.next_chunk_blocks;
	chunk.progress = chunk.end_block < 0 || job->blocks_total == 0 ? 99.9 :
		Min(99.9, 100.0 * chunk.end_block / job->blocks_total);
	chunk.rate = chunk.rows / chunk.seconds;
	chunk.eta_seconds = remaining_blocks * chunk.seconds / job->chunk_blocks;

	JobRecordChunk(job, &chunk);
	table_close(target, NoLock);

	job->next_block = chunk.end_block < 0 ? job->blocks_total : chunk.end_block;
	job->chunk_blocks = chunk.next_chunk_blocks;
	job->rows_done += chunk.rows;
	job->chunks_done++;
	return chunk.end_block >= 0;
}

/*
 * Compute the whole content in the current transaction (a query that is not
 * decomposable).  Caller has an active snapshot and RowExclusiveLock on the
 * target.  Returns the number of rows.
 */
int64
BackfillAll(Relation target, Query *query)
{
	return (int64) RunIntoTarget(target, query, CURSOR_OPT_PARALLEL_OK);
}
