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
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "pgstat.h"
#include "rewrite/rewriteHandler.h"
#include "storage/bufmgr.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "background_ddl.h"
#include "backfill.h"
#include "compat.h"
#include "job_catalog.h"
#include "tid_map.h"

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

	/*
	 * With track_sources, the query has one more column than the target:
	 * the driving row's ctid.  Each output row's (source, output) tuple ids
	 * are collected in pairs, for the catch-up to find a source's outputs.
	 */
	bool		track_sources;
	MemoryContext pairs_context;	/* the caller's: outlives the executor */
	TupleTableSlot *output_slot;
	TidPair    *pairs;
	int			npairs;
	int			pairs_capacity;
} TargetInsertReceiver;

static void
TargetInsertStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	TargetInsertReceiver *receiver = (TargetInsertReceiver *) self;

	receiver->output_cid = GetCurrentCommandId(true);
	receiver->bistate = GetBulkInsertState();
	receiver->rows = 0;
	if (receiver->track_sources)
	{
		receiver->output_slot = MakeSingleTupleTableSlot(RelationGetDescr(receiver->target),
														 &TTSOpsVirtual);
		receiver->pairs_capacity = 1024;
		receiver->pairs = MemoryContextAllocHuge(receiver->pairs_context,
												 sizeof(TidPair) * receiver->pairs_capacity);
		receiver->npairs = 0;
	}

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
	ItemPointerData source;

	if (receiver->track_sources)
	{
		TupleTableSlot *output = receiver->output_slot;
		int			natts = output->tts_tupleDescriptor->natts;
		bool		isnull;
		Datum		source_datum;

		/* The target's columns, without the trailing source ctid */
		slot_getallattrs(slot);
		ExecClearTuple(output);
		memcpy(output->tts_values, slot->tts_values, sizeof(Datum) * natts);
		memcpy(output->tts_isnull, slot->tts_isnull, sizeof(bool) * natts);
		ExecStoreVirtualTuple(output);
		source_datum = slot_getattr(slot, natts + 1, &isnull);
		Assert(!isnull);
		ItemPointerCopy((ItemPointer) DatumGetPointer(source_datum), &source);
		slot = output;
	}

	table_tuple_insert(receiver->target, slot, receiver->output_cid,
					   TABLE_INSERT_SKIP_FSM, receiver->bistate);
	if (receiver->track_sources)
	{
		if (receiver->npairs == receiver->pairs_capacity)
		{
			receiver->pairs_capacity *= 2;
			receiver->pairs = repalloc_huge(receiver->pairs,
											sizeof(TidPair) * receiver->pairs_capacity);
		}
		receiver->pairs[receiver->npairs].source = source;
		receiver->pairs[receiver->npairs].output = slot->tts_tid;
		receiver->npairs++;
	}
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
	if (receiver->output_slot != NULL)
	{
		ExecDropSingleTupleTableSlot(receiver->output_slot);
		receiver->output_slot = NULL;
	}
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
	receiver->pairs_context = CurrentMemoryContext;
	return receiver;
}

/* Can the capture trigger see every change of this relation? */
static bool
IsCapturableRelation(RangeTblEntry *rte)
{
	if (rte->relkind == RELKIND_PARTITIONED_TABLE)
		return true;			/* row triggers are cloned to its partitions */
	if (rte->relkind != RELKIND_RELATION)
		return false;			/* views are expanded; matviews, foreign tables: no */
	/* An inheritance parent read with its children: those would need triggers too */
	return !(rte->inh && has_subclass(rte->relid));
}

/* Can this range table entry drive a chunked backfill? */
static bool
IsChunkableRelation(RangeTblEntry *rte)
{
	Relation	rel;
	bool		chunkable;

	if (rte->rtekind != RTE_RELATION || rte->tablesample != NULL ||
		rte->relkind != RELKIND_RELATION || !IsCapturableRelation(rte))
		return false;
	/* ctid ranges and TID scans are heap features */
	rel = table_open(rte->relid, NoLock);
	chunkable = rel->rd_rel->relam == HEAP_TABLE_AM_OID;
	table_close(rel, NoLock);
	return chunkable;
}

/* Walker state: every relation a query reads, anywhere in it */
typedef struct BaseRelationsContext
{
	List	   *relids;			/* distinct */
	int			occurrences_of_driving;
	Oid			driving_oid;
	Oid			target_oid;		/* ignored: the view rule's OLD and NEW entries */
	bool		all_capturable;
} BaseRelationsContext;

static bool
BaseRelationsWalker(Node *node, BaseRelationsContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION && rte->relid != context->target_oid)
		{
			if (!IsCapturableRelation(rte))
				context->all_capturable = false;
			if (rte->relid == context->driving_oid)
				context->occurrences_of_driving++;
			context->relids = list_append_unique_oid(context->relids, rte->relid);
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, BaseRelationsWalker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, BaseRelationsWalker, context);
}

/*
 * The relations a query reads (driving table first; the target itself, which
 * its view rule names, excluded), or NIL if a change to
 * one of them could escape the capture triggers, or if the driving table is
 * read twice (a change to it would then also be a change to "another"
 * table, which only a full recompute handles).
 */
List *
BackfillBaseRelations(Query *query, Oid driving_oid, Oid target_oid)
{
	BaseRelationsContext context = {NIL, 0, driving_oid, target_oid, true};

	(void) query_tree_walker(query, BaseRelationsWalker, &context, QTW_EXAMINE_RTES_BEFORE);
	if (!context.all_capturable || context.occurrences_of_driving != 1)
		return NIL;
	context.relids = list_delete_oid(context.relids, driving_oid);
	return lcons_oid(driving_oid, context.relids);
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
 * not decomposable.  With required_relid, take that relation instead (a
 * resumed job must keep the driving table it started with, even if relative
 * sizes changed).
 */
static Index
BackfillFindDrivingTable(Query *query, Oid target_oid, Oid required_relid)
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
		if (BackfillBaseRelations(query, relid, target_oid) == NIL)
			continue;
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

static Var *
MakeCtidVar(Index rtindex)
{
	return makeVar(rtindex, SelfItemPointerAttributeNumber, TIDOID, -1, InvalidOid, 0);
}

/* "ctid <op> '(block,0)'" on the driving table */
static Expr *
MakeCtidBound(Index rtindex, Oid opno, int64 block)
{
	ItemPointer tid = palloc(sizeof(ItemPointerData));
	Const	   *bound;

	ItemPointerSet(tid, (BlockNumber) block, 0);
	bound = makeConst(TIDOID, -1, InvalidOid, sizeof(ItemPointerData),
					  PointerGetDatum(tid), false, false);
	return make_opclause(opno, BOOLOID, false, (Expr *) MakeCtidVar(rtindex), (Expr *) bound,
						 InvalidOid, InvalidOid);
}

static void
AddQual(Query *query, Expr *qual)
{
	List	   *quals = NIL;

	if (query->jointree->quals != NULL)
		quals = lappend(quals, query->jointree->quals);
	quals = lappend(quals, qual);
	query->jointree->quals = (Node *) make_andclause(quals);
}

/* Restrict the query to blocks [start_block, end_block) of its driving table */
static void
RestrictToBlocks(Query *query, Index rtindex, int64 start_block, int64 end_block)
{
	AddQual(query, MakeCtidBound(rtindex, TIDGreaterEqOperator, start_block));
	if (end_block >= 0)
		AddQual(query, MakeCtidBound(rtindex, TIDLessOperator, end_block));
}

/* Restrict the query to the given driving rows: "ctid = ANY('{...}')", a TID scan */
static void
RestrictToTids(Query *query, Index rtindex, ItemPointer tids, int ntids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(ntids, 1));
	ScalarArrayOpExpr *saop = makeNode(ScalarArrayOpExpr);

	for (int i = 0; i < ntids; i++)
		elems[i] = PointerGetDatum(&tids[i]);
	saop->opno = TIDEqualOperator;
	saop->opfuncid = InvalidOid;
	saop->useOr = true;
	saop->inputcollid = InvalidOid;
	saop->args = list_make2(MakeCtidVar(rtindex),
							makeConst(TIDARRAYOID, -1, InvalidOid, -1,
									  PointerGetDatum(construct_array(elems, ntids, TIDOID,
																	  sizeof(ItemPointerData),
																	  false, TYPALIGN_SHORT)),
									  false, false));
	AddQual(query, (Expr *) saop);
}

/* Make the query also return the driving row's ctid, as a last column */
static void
AppendSourceColumn(Query *query, Index rtindex)
{
	query->targetList = lappend(query->targetList,
								makeTargetEntry((Expr *) MakeCtidVar(rtindex),
												list_length(query->targetList) + 1,
												pstrdup("background_ddl_source"), false));
}

static int
TidPairCompare(const void *a, const void *b)
{
	int			by_source = ItemPointerCompare(&((TidPair *) a)->source, &((TidPair *) b)->source);

	return by_source != 0 ? by_source :
		ItemPointerCompare(&((TidPair *) a)->output, &((TidPair *) b)->output);
}

/*
 * Run a (restricted) query and insert its rows into the target.  Caller is
 * in a transaction with an active snapshot and holds RowExclusiveLock on the
 * target.  With pairs non-NULL the query carries a source column (see
 * AppendSourceColumn) and *pairs receives the (source, output) tuple ids,
 * sorted by source.  Returns the number of rows inserted.
 */
static uint64
RunIntoTarget(Relation target, Query *query, int cursor_options,
			  TidPair **pairs, int *npairs)
{
	PlannedStmt *plan;
	QueryDesc  *query_desc;
	TargetInsertReceiver *receiver;
	uint64		rows;

	/* An xid before a parallel plan starts: parallel mode cannot assign one */
	(void) GetCurrentTransactionId();

	plan = pg_plan_query(query, "background_ddl backfill", cursor_options, NULL);
	receiver = TargetInsertReceiverCreate(target);
	receiver->track_sources = (pairs != NULL);
	query_desc = CreateQueryDesc(plan, "background_ddl backfill", GetActiveSnapshot(),
								 InvalidSnapshot, (DestReceiver *) receiver, NULL, NULL, 0);
	ExecutorStart(query_desc, 0);
	ExecutorRun(query_desc, ForwardScanDirection, 0L, true);
	ExecutorFinish(query_desc);
	ExecutorEnd(query_desc);
	rows = receiver->rows;
	FreeQueryDesc(query_desc);
	if (pairs != NULL)
	{
		qsort(receiver->pairs, receiver->npairs, sizeof(TidPair), TidPairCompare);
		*pairs = receiver->pairs;
		*npairs = receiver->npairs;
	}
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
	Index		driving_rtindex = BackfillFindDrivingTable(query, job->target_oid, InvalidOid);

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
	Index		driving_rtindex = BackfillFindDrivingTable(query, job->target_oid, job->driving_oid);
	BgddlChunkResult chunk;
	instr_time	start_time;
	instr_time	duration;
	double		target_seconds = background_ddl_batch_time_ms / 1000.0;
	double		scale;
	int64		remaining_blocks;
	TidPair    *pairs;
	int			npairs;

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
	AppendSourceColumn(query, driving_rtindex);
	chunk.rows = RunIntoTarget(target, query, 0, &pairs, &npairs);
	chunk.tid_map = TidMapEncode(pairs, npairs);
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
	return (int64) RunIntoTarget(target, query, CURSOR_OPT_PARALLEL_OK, NULL, NULL);
}

/*
 * Compute the output rows of the given driving rows (sorted tuple ids) as of
 * the current snapshot, insert them into the target and return their
 * (source, output) pairs, sorted.  Caller is in a transaction, as the job's
 * role, and holds RowExclusiveLock on the target.
 */
TidPair *
BackfillRecompute(BgddlJob *job, Relation target, ItemPointer sources, int nsources,
				  int *npairs)
{
	Query	   *query = BackfillJobQuery(target);
	Index		driving_rtindex = BackfillFindDrivingTable(query, job->target_oid, job->driving_oid);
	TidPair    *pairs;

	if (driving_rtindex == 0)
		elog(ERROR, "driving table of background DDL job " INT64_FORMAT " not found", job->id);
	RestrictToTids(query, driving_rtindex, sources, nsources);
	AppendSourceColumn(query, driving_rtindex);
	(void) RunIntoTarget(target, query, 0, &pairs, npairs);
	return pairs;
}
