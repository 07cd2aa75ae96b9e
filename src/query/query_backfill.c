/*-------------------------------------------------------------------------
 *
 * query_backfill.c
 *	  Running a job's query, or a part of it, into its content relation.
 *
 * A blocking CREATE MATERIALIZED VIEW computes its content in one
 * transaction, which holds back VACUUM for the whole build and loses all of
 * it on a crash.  When the query allows it (query_decompose.c), a job computes
 * it in chunks instead: chunk i adds the qual
 * "ctid >= '(start_i,0)' AND ctid < '(end_i,0)'" on the driving table (a
 * TID range scan), and inserts its rows into the content relation in the
 * same transaction that checkpoints the chunk (query_job.c).  After a crash
 * the rows of an interrupted chunk are simply invisible (their transaction
 * aborted), so at most one chunk of work is lost and no row is ever
 * computed twice.
 *
 * Rows are inserted as ordinary MVCC tuples of committed transactions (never
 * frozen), so the content relation's relfrozenxid stays right without any
 * swap.  Each chunk also returns, for every output row, the driving row it
 * came from (capture_tid_map.c), which is what lets the catch-up (query_catchup.c)
 * replace the outputs of one changed source row.
 *
 * Every query here runs as the role that submitted the job, under
 * SECURITY_RESTRICTED_OPERATION with its settings (job_step.c:
 * JobQueryBegin), so the executor checks that role's privileges on every
 * batch, and row security applies as it would to that role.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/nbtree.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "jit/jit.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "commands/defrem.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteDefine.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "engine/job_shmem.h"
#include "pg/pg_compat.h"
#include "pg/pg_scan_ring.h"
#include "query/query_backfill.h"
#include "query/query_column_change.h"
#include "query/query_driving.h"
#include "query/query_functions.h"
#include "query/query_view_pullup.h"

/* How often a long batch publishes its row count */
#define LIVE_ROWS_EVERY		64

/*
 * Rows are inserted as COPY inserts them, several at a time
 * (table_multi_insert: one WAL record per page instead of one per row), up
 * to this many rows or bytes at once
 */
#define BUFFERED_ROWS_MAX	1000
#define BUFFERED_BYTES_MAX	65535

/* A DestReceiver that inserts into the content relation and its indexes */
typedef struct ContentInsertReceiver
{
	DestReceiver pub;
	Relation	content;
	CommandId	output_cid;
	BulkInsertState bistate;
	EState	   *estate;			/* only if the content relation has indexes */
	ResultRelInfo *result_rel_info;
	uint64		rows;

	/* the rows not inserted yet, and (with track_sources) their sources */
	TupleTableSlot *buffered[BUFFERED_ROWS_MAX];
	ItemPointerData buffered_sources[BUFFERED_ROWS_MAX];
	int			nbuffered;
	Size		buffered_bytes;

	/*
	 * With track_sources, the query has one more column than the content
	 * relation: the driving row's ctid.  Each output row's (source, output)
	 * tuple ids are collected in pairs, for the catch-up to find a source's
	 * outputs.
	 */
	bool		track_sources;
	const CaptureSegment *segment;	/* the sources' table, if not the job's blocks */
	bool		count_live;		/* publish the rows as they come (not a recompute) */
	MemoryContext pairs_context;	/* the caller's: outlives the executor */
	TidPair    *pairs;
	int			npairs;
	int			pairs_capacity;
	ItemPointerData last_source;	/* the last row's, as a tuple id of its table */

	/*
	 * Past this many rows (0: never), stop before the first row of another
	 * block than the last one's (stopped)
	 */
	uint64		stop_after;
	bool		stopped;
} ContentInsertReceiver;

static void
ContentInsertStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	ContentInsertReceiver *receiver = (ContentInsertReceiver *) self;

	receiver->output_cid = GetCurrentCommandId(true);
	receiver->bistate = GetBulkInsertState();
	receiver->rows = 0;
	if (receiver->track_sources)
	{
		receiver->pairs_capacity = 1024;
		receiver->pairs = MemoryContextAllocHuge(receiver->pairs_context,
												 sizeof(TidPair) * receiver->pairs_capacity);
		receiver->npairs = 0;
	}

	/*
	 * Users may create indexes on a materialized view's placeholder while the
	 * job runs (a script usually does so right after CREATE MATERIALIZED
	 * VIEW): keep them up to date like INSERT would.
	 */
	if (receiver->content->rd_rel->relhasindex)
	{
		receiver->estate = CreateExecutorState();
		receiver->result_rel_info = makeNode(ResultRelInfo);
		InitResultRelInfo(receiver->result_rel_info, receiver->content, 1, NULL, 0);
		ExecOpenIndices(receiver->result_rel_info, false);
	}
}

/*
 * Insert the buffered rows; then, as each has its tuple id, record its
 * (source, output) pair and insert its index entries
 */
static void
FlushContentRows(ContentInsertReceiver *receiver)
{
	if (receiver->nbuffered == 0)
		return;
	table_multi_insert(receiver->content, receiver->buffered, receiver->nbuffered,
					   receiver->output_cid, TABLE_INSERT_SKIP_FSM, receiver->bistate);
	for (int i = 0; i < receiver->nbuffered; i++)
	{
		TupleTableSlot *row = receiver->buffered[i];

		if (receiver->track_sources)
		{
			if (receiver->npairs == receiver->pairs_capacity)
			{
				receiver->pairs_capacity *= 2;
				receiver->pairs = repalloc_huge(receiver->pairs,
												sizeof(TidPair) * receiver->pairs_capacity);
			}
			receiver->pairs[receiver->npairs].source = receiver->buffered_sources[i];
			receiver->pairs[receiver->npairs].output = row->tts_tid;
			receiver->npairs++;
		}
		if (receiver->result_rel_info != NULL &&
			receiver->result_rel_info->ri_NumIndices > 0)
		{
			(void) PgExecInsertIndexTuples(receiver->result_rel_info, row,
											  receiver->estate);
			ResetPerTupleExprContext(receiver->estate);
		}
		ExecClearTuple(row);
	}
	receiver->nbuffered = 0;
	receiver->buffered_bytes = 0;
}

/*
 * A row may not hold a null where the content relation has NOT NULL: a
 * table's rewrite checks a changed column's new values as ALTER TABLE
 * checks them (QueryColumnChangesDesc), in the table's name (the hidden
 * heap's relrewrite)
 */
static void
CheckNotNull(Relation content, TupleTableSlot *slot)
{
	TupleDesc	desc = RelationGetDescr(content);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(desc, i);
		Oid			named = OidIsValid(content->rd_rel->relrewrite) ?
			content->rd_rel->relrewrite : RelationGetRelid(content);

		if (attribute->attnotnull && !attribute->attisdropped && slot->tts_isnull[i])
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("column \"%s\" of relation \"%s\" contains null values",
							NameStr(attribute->attname), get_rel_name(named)),
					 err_generic_string(PG_DIAG_SCHEMA_NAME,
										get_namespace_name(get_rel_namespace(named))),
					 err_generic_string(PG_DIAG_TABLE_NAME, get_rel_name(named)),
					 err_generic_string(PG_DIAG_COLUMN_NAME, NameStr(attribute->attname))));
	}
}

static bool
ContentInsertReceive(TupleTableSlot *slot, DestReceiver *self)
{
	ContentInsertReceiver *receiver = (ContentInsertReceiver *) self;
	TupleDesc	desc = RelationGetDescr(receiver->content);
	ItemPointerData source;
	TupleTableSlot *row;

	ItemPointerSetInvalid(&source);
	slot_getallattrs(slot);
	if (desc->constr != NULL && desc->constr->has_not_null)
		CheckNotNull(receiver->content, slot);
	if (receiver->track_sources)
	{
		bool		isnull;
		Datum		source_datum;

		/* The trailing column after the content's: the source ctid */
		source_datum = slot_getattr(slot, desc->natts + 1, &isnull);
		Assert(!isnull);
		ItemPointerCopy((ItemPointer) DatumGetPointer(source_datum), &source);
		if (receiver->stop_after > 0 && receiver->rows >= receiver->stop_after &&
			ItemPointerGetBlockNumber(&source) != ItemPointerGetBlockNumber(&receiver->last_source))
		{
			receiver->stopped = true;
			return false;
		}
		receiver->last_source = source;
		if (receiver->segment != NULL)
		{
			BlockNumber job_block;

			if (!CaptureSegmentJobBlock(receiver->segment, ItemPointerGetBlockNumber(&source),
										&job_block))
				elog(ERROR, "row (%u,%u) of \"%s\" is beyond the job's block space",
					 ItemPointerGetBlockNumber(&source), ItemPointerGetOffsetNumber(&source),
					 get_rel_name(receiver->segment->relid));
			ItemPointerSetBlockNumber(&source, job_block);
		}
	}

	/*
	 * A copy of the content's columns, in the content's slot type, until the
	 * next flush (materialized: the executor reuses the values' memory)
	 */
	if (receiver->buffered[receiver->nbuffered] == NULL)
		receiver->buffered[receiver->nbuffered] =
			MakeSingleTupleTableSlot(desc, table_slot_callbacks(receiver->content));
	row = receiver->buffered[receiver->nbuffered];
	ExecClearTuple(row);
	memcpy(row->tts_values, slot->tts_values, sizeof(Datum) * desc->natts);
	memcpy(row->tts_isnull, slot->tts_isnull, sizeof(bool) * desc->natts);
	ExecStoreVirtualTuple(row);
	receiver->buffered_bytes += heap_compute_data_size(desc, row->tts_values, row->tts_isnull);
	ExecMaterializeSlot(row);
	receiver->buffered_sources[receiver->nbuffered] = source;
	if (++receiver->nbuffered == BUFFERED_ROWS_MAX ||
		receiver->buffered_bytes >= BUFFERED_BYTES_MAX)
		FlushContentRows(receiver);
	receiver->rows++;
	if (receiver->count_live && receiver->rows % LIVE_ROWS_EVERY == 0)
		JobPublishLiveRows(LIVE_ROWS_EVERY);
	return true;
}

static void
ContentInsertShutdown(DestReceiver *self)
{
	ContentInsertReceiver *receiver = (ContentInsertReceiver *) self;

	FlushContentRows(receiver);
	for (int i = 0; i < BUFFERED_ROWS_MAX && receiver->buffered[i] != NULL; i++)
	{
		ExecDropSingleTupleTableSlot(receiver->buffered[i]);
		receiver->buffered[i] = NULL;
	}
	FreeBulkInsertState(receiver->bistate);
	table_finish_bulk_insert(receiver->content, TABLE_INSERT_SKIP_FSM);
	if (receiver->estate != NULL)
	{
		ExecCloseIndices(receiver->result_rel_info);
		FreeExecutorState(receiver->estate);
		receiver->estate = NULL;
		receiver->result_rel_info = NULL;
	}
}

static void
ContentInsertDestroy(DestReceiver *self)
{
	pfree(self);
}

static ContentInsertReceiver *
ContentInsertReceiverCreate(Relation content, bool track_sources)
{
	ContentInsertReceiver *receiver = palloc0(sizeof(ContentInsertReceiver));

	receiver->pub.receiveSlot = ContentInsertReceive;
	receiver->pub.rStartup = ContentInsertStartup;
	receiver->pub.rShutdown = ContentInsertShutdown;
	receiver->pub.rDestroy = ContentInsertDestroy;
	receiver->pub.mydest = DestNone;
	receiver->content = content;
	receiver->track_sources = track_sources;
	ItemPointerSetInvalid(&receiver->last_source);
	receiver->pairs_context = CurrentMemoryContext;
	return receiver;
}

/*
 * A table's rows as they are stored, for a rewrite of the table: "SELECT
 * every column FROM ONLY table", a dropped column's place kept by a null
 * (which takes no room in a row, whatever the column's type was), so that
 * the output's columns are the table's attribute numbers; a column that
 * changes (ALTER COLUMN ... TYPE: query_column_change.c) as its new value,
 * a column added (ADD COLUMN) after them.
 */
Query *
QueryOfTableRows(Relation table, List *column_changes)
{
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *item = addRangeTableEntryForRelation(pstate, table, AccessShareLock,
															 NULL, false, false);
	TupleDesc	desc = RelationGetDescr(table);
	Query	   *query = makeNode(Query);
	ListCell   *lc;

	Assert(item->p_rtindex == 1);	/* as the column changes' values have it */
	query->commandType = CMD_SELECT;
	query->canSetTag = true;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(desc, i);
		Expr	   *column;

		if (attribute->attisdropped)
			column = (Expr *) makeNullConst(INT4OID, -1, InvalidOid);
		else
		{
			Var		   *var = makeVar(item->p_rtindex, attribute->attnum, attribute->atttypid,
									  attribute->atttypmod, attribute->attcollation, 0);

			markVarForSelectPriv(pstate, var);
			column = QueryColumnChangedValue(column_changes, attribute->attnum);
			if (column == NULL)
				column = (Expr *) var;
		}
		query->targetList = lappend(query->targetList,
									makeTargetEntry(column, i + 1,
													pstrdup(NameStr(attribute->attname)),
													false));
	}
	foreach(lc, column_changes)
	{
		TargetEntry *change = lfirst_node(TargetEntry, lc);

		/* An added column (query_column_change.c: in the order of its number) */
		if (change->resno > desc->natts)
			query->targetList = lappend(query->targetList,
										makeTargetEntry(copyObject(change->expr), change->resno,
														pstrdup(change->resname), false));
	}
	query->rtable = pstate->p_rtable;
	PgQuerySetPermInfos(query, pstate);
	query->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), NULL);
	linitial_node(RangeTblRef, query->jointree->fromlist)->rtindex = item->p_rtindex;
	return query;
}

/*
 * The job's query, rewritten (row security of the current user applied) and
 * with its relations locked, from a relation's view rule (the placeholder's,
 * or the materialized view's): bound to OIDs at submit, as REFRESH
 * MATERIALIZED VIEW uses it; for a table, its rows (QueryOfTableRows, with
 * its column changes).  Its
 * privileges are checked as check_as_role (the relation cache marks them
 * for the relation's owner, who may have changed since the submit).  Simple
 * views are pulled up into it (query_view_pullup.c); now() and its
 * relatives are job_start (query_functions.c).
 */
Query *
QueryOfRule(Relation rule_relation, List *column_changes, Oid check_as_role,
			TimestampTz job_start)
{
	Query	   *query = rule_relation->rd_rel->relkind == RELKIND_RELATION ?
		QueryOfTableRows(rule_relation, column_changes) :
		copyObject(get_view_query(rule_relation));
	List	   *rewritten;

	setRuleCheckAsUser((Node *) query, check_as_role);
	AcquireRewriteLocks(query, true, false);
	rewritten = QueryRewrite(query);
	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for materialized view \"%s\"",
			 RelationGetRelationName(rule_relation));
	query = linitial_node(Query, rewritten);
	QueryPullUpViews(query);
	return QueryPinJobStart(query, job_start);
}

static Var *
MakeCtidVar(Index rtindex)
{
	return makeVar(rtindex, SelfItemPointerAttributeNumber, TIDOID, -1, InvalidOid, 0);
}

/* '(block,0)' */
static Expr *
MakeBlockTid(int64 block)
{
	ItemPointer tid = palloc(sizeof(ItemPointerData));

	ItemPointerSet(tid, (BlockNumber) block, 0);
	return (Expr *) makeConst(TIDOID, -1, InvalidOid, sizeof(ItemPointerData),
							  PointerGetDatum(tid), false, false);
}

/* The tid parameter $paramid */
static Expr *
MakeTidParam(int paramid)
{
	Param	   *param = makeNode(Param);

	param->paramkind = PARAM_EXTERN;
	param->paramid = paramid;
	param->paramtype = TIDOID;
	param->paramtypmod = -1;
	param->paramcollid = InvalidOid;
	param->location = -1;
	return (Expr *) param;
}

/* "ctid <op> bound" on the driving table */
static Expr *
MakeCtidBound(Index rtindex, Oid opno, Expr *bound)
{
	return make_opclause(opno, BOOLOID, false, (Expr *) MakeCtidVar(rtindex), bound,
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

/* "expression IS [NOT] NULL" */
static NullTest *
MakeNullTest(Expr *expression, NullTestType type)
{
	NullTest   *test = makeNode(NullTest);

	test->arg = expression;
	test->nulltesttype = type;
	test->argisrow = false;
	test->location = -1;
	return test;
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

/*
 * Make the query also return, as a last column, the driving row's ctid; or,
 * for a range of partial aggregation (whose rows come from many driving
 * rows), partial_source: the range's first tuple id, which stands for all of
 * its rows.
 */
static void
AppendSourceColumn(Query *query, Index rtindex, Expr *partial_source)
{
	Expr	   *source = partial_source != NULL ? partial_source : (Expr *) MakeCtidVar(rtindex);

	query->targetList = lappend(query->targetList,
								makeTargetEntry(source, list_length(query->targetList) + 1,
												pstrdup("background_ddl_source"), false));
}

static int
ItemPointerCompareQsort(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/*
 * Run a (restricted) query and insert its rows into the content relation.
 * Caller is in a transaction with an active snapshot, as the job's role, and
 * holds RowExclusiveLock on the content relation.  With pairs non-NULL the
 * query carries a source column (see AppendSourceColumn) and *pairs
 * receives the (source, output) tuple ids, sorted by source; with segment,
 * the sources are rows of its table, and become the job's tuple ids; with
 * last_source non-NULL, it gets the last row's source, as a tuple id of its
 * table (invalid if none).  With count_live, the rows count in the job's
 * live progress as they come.  With stop_after, the query stops past that
 * many rows, before the first row of another block than the last one's;
 * *stopped says whether it did.  Returns the number of rows inserted.
 */
static uint64
RunPlanIntoContent(Relation content, PlannedStmt *plan, ParamListInfo params, bool count_live,
				   const CaptureSegment *segment, TidPair **pairs, int *npairs,
				   ItemPointer last_source, uint64 stop_after, bool *stopped)
{
	QueryDesc  *query_desc;
	ContentInsertReceiver *receiver;
	uint64		rows;

	receiver = ContentInsertReceiverCreate(content, pairs != NULL);
	receiver->count_live = count_live;
	receiver->segment = segment;
	receiver->stop_after = stop_after;
	query_desc = CreateQueryDesc(plan, "background_ddl backfill", GetActiveSnapshot(),
								 InvalidSnapshot, (DestReceiver *) receiver, params, NULL, 0);
	ExecutorStart(query_desc, 0);
	PgTidRangeScansUseRing(query_desc->planstate);
	ExecutorRun(query_desc, ForwardScanDirection, 0L, true);
	ExecutorFinish(query_desc);
	ExecutorEnd(query_desc);
	rows = receiver->rows;
	if (count_live)
		JobPublishLiveRows(rows % LIVE_ROWS_EVERY);
	FreeQueryDesc(query_desc);
	if (pairs != NULL)
	{
		TidPairsSort(receiver->pairs, receiver->npairs);
		*pairs = receiver->pairs;
		*npairs = receiver->npairs;
	}
	if (last_source != NULL)
		*last_source = receiver->last_source;
	if (stopped != NULL)
		*stopped = receiver->stopped;
	receiver->pub.rDestroy((DestReceiver *) receiver);
	return rows;
}

static uint64
RunIntoContent(Relation content, Query *query, int cursor_options, bool count_live,
			   const CaptureSegment *segment, TidPair **pairs, int *npairs,
			   ItemPointer last_source)
{
	/* An xid before a parallel plan starts: parallel mode cannot assign one */
	(void) GetCurrentTransactionId();
	return RunPlanIntoContent(content, pg_plan_query(query, "background_ddl backfill",
													 cursor_options, NULL),
							  NULL, count_live, segment, pairs, npairs, last_source, 0, NULL);
}

/* Append pairs to *all (both sorted, the new ones after the others) */
static void
AppendPairs(TidPair **all, int *nall, TidPair *pairs, int npairs)
{
	if (*all == NULL)
	{
		*all = pairs;
		*nall = npairs;
		return;
	}
	if (npairs == 0)
		return;
	*all = repalloc_huge(*all, sizeof(TidPair) * (*nall + npairs));
	memcpy(*all + *nall, pairs, sizeof(TidPair) * npairs);
	*nall += npairs;
}

/*
 * Compute the rows of the driving table's job blocks [start_block,
 * end_block) (query_driving.c: for a partitioned table, the query runs on
 * each partition with blocks in the range) into the content relation;
 * *pairs gets their (source, output) tuple ids.  With partial, the query is
 * a chunk query of partial aggregation (query_partial_agg.c), the content
 * relation its staging relation, and every row's source, the range's first
 * tuple id, goes into the staging relation's last column (*pairs gets
 * nothing).  With count_live, the rows count in the job's live progress
 * (not for a recompute: the rows it replaces go at the same time).  Caller
 * as for RunIntoContent; query is a copy it gives away.
 */
uint64
QueryBackfillBlocks(Relation content, Query *query, const QueryDriving *driving, Index rtindex,
					bool partial, bool count_live, int64 start_block, int64 end_block,
					TidPair **pairs, int *npairs)
{
	int			npieces;
	DrivingPiece *pieces = QueryDrivingPieces(driving, start_block, end_block, &npieces);
	uint64		rows = 0;

	*pairs = NULL;
	*npairs = 0;
	for (int i = 0; i < npieces; i++)
	{
		const CaptureSegment *segment = &driving->segments[pieces[i].segment];
		Query	   *piece = QueryDrivingLeafQuery(i + 1 < npieces ? copyObject(query) : query,
												  rtindex, segment->relid);
		TidPair    *piece_pairs = NULL;
		int			piece_npairs = 0;

		AddQual(piece, MakeCtidBound(rtindex, TIDGreaterEqOperator, MakeBlockTid(pieces[i].start)));
		AddQual(piece, MakeCtidBound(rtindex, TIDLessOperator, MakeBlockTid(pieces[i].end)));
		AppendSourceColumn(piece, rtindex, partial ? MakeBlockTid(start_block) : NULL);
		rows += RunIntoContent(content, piece, 0, count_live, segment,
							   partial ? NULL : &piece_pairs, &piece_npairs, NULL);
		AppendPairs(pairs, npairs, piece_pairs, piece_npairs);
	}
	return rows;
}

/*
 * Compute the partial rows (query is a chunk query of partial aggregation,
 * content its staging relation) of each of the driving table's job block
 * ranges [starts[i], ends[i]) as their own group of rows, whose source is
 * the range's first tuple id: the query is planned once per partition, with
 * the source and the bounds as parameters, and run once per range and
 * partition.  Caller as for RunIntoContent; query is a copy it gives away.
 * Returns the number of rows.
 */
uint64
QueryBackfillRanges(Relation content, Query *query, const QueryDriving *driving, Index rtindex,
					const int64 *starts, const int64 *ends, int nranges)
{
	PlannedStmt **plans = palloc0(sizeof(PlannedStmt *) * driving->nsegments);
	ParamListInfo params = makeParamList(3);
	ItemPointerData values[3];
	uint64		rows = 0;

	params->numParams = 3;
	for (int i = 0; i < 3; i++)
	{
		params->params[i].ptype = TIDOID;
		params->params[i].isnull = false;
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].value = PointerGetDatum(&values[i]);
	}
	for (int i = 0; i < nranges; i++)
	{
		int			npieces;
		DrivingPiece *pieces = QueryDrivingPieces(driving, starts[i], ends[i], &npieces);

		for (int p = 0; p < npieces; p++)
		{
			int			segment = pieces[p].segment;

			if (plans[segment] == NULL)
			{
				Query	   *piece = QueryDrivingLeafQuery(copyObject(query), rtindex,
														  driving->segments[segment].relid);

				AddQual(piece, MakeCtidBound(rtindex, TIDGreaterEqOperator, MakeTidParam(2)));
				AddQual(piece, MakeCtidBound(rtindex, TIDLessOperator, MakeTidParam(3)));
				AppendSourceColumn(piece, rtindex, MakeTidParam(1));
				plans[segment] = pg_plan_query(piece, "background_ddl catch-up", 0, NULL);
			}
			ItemPointerSet(&values[0], (BlockNumber) starts[i], 0);
			ItemPointerSet(&values[1], pieces[p].start, 0);
			ItemPointerSet(&values[2], pieces[p].end, 0);
			rows += RunPlanIntoContent(content, plans[segment], params, false, NULL, NULL, NULL,
									   NULL, 0, NULL);
		}
	}
	return rows;
}

/*
 * Compute the whole content in the current transaction, with parallel query
 * allowed.  Caller as for RunIntoContent.  Returns the number of rows.
 */
uint64
QueryBackfillAll(Relation content, Query *query)
{
	return RunIntoContent(content, query, CURSOR_OPT_PARALLEL_OK, true, NULL, NULL, NULL, NULL);
}

/*
 * Plan what follows without a sequential scan (and, with bitmap_too, a
 * bitmap scan), until AtEOXact_GUC(true, the level returned); and without
 * JIT: a batch's plan runs once, on a batch's rows (compiling them took 9 %
 * of the worker's time in the catch-up of an 8-million-row join)
 */
static int
PlanWithoutScans(bool bitmap_too)
{
	int			nest_level = NewGUCNestLevel();

	(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (bitmap_too)
		(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	return nest_level;
}

/*
 * Can a table be read a chunk at a time in the order of this index
 * (QueryBackfillInOrder)?  A valid btree, not partial, whose keys are all
 * columns, all ascending or all descending, of their type's default
 * operator class and their own collation: then "ORDER BY" those columns is
 * the index's order, and "(columns) > (values)" (or "<") its continuation.
 * The keys are declared NOT NULL, or the index has one: its rows of a null
 * key, which no comparison continues, are copied on their own, a range of
 * blocks at a time (QueryBackfillNullKeys), before or after the others as
 * the index sorts them.  (A null in a key of several columns sorts among
 * the rows of the same first columns, which no chunk of a range of blocks
 * would follow.)
 */
bool
QueryIndexGivesOrder(Relation table, Relation index)
{
	Form_pg_index form = index->rd_index;
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);

	if (index->rd_rel->relam != BTREE_AM_OID || !form->indisvalid ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
		return false;
	for (int i = 0; i < nkeys; i++)
	{
		AttrNumber	attnum = form->indkey.values[i];
		Form_pg_attribute attribute;

		if (attnum <= 0)
			return false;
		attribute = TupleDescAttr(RelationGetDescr(table), attnum - 1);
		if ((!attribute->attnotnull && nkeys > 1) ||
			(index->rd_indoption[i] & INDOPTION_DESC) != (index->rd_indoption[0] & INDOPTION_DESC) ||
			index->rd_indcollation[i] != attribute->attcollation ||
			GetDefaultOpClass(attribute->atttypid, BTREE_AM_OID) != get_index_column_opclass(RelationGetRelid(index), i + 1))
			return false;
	}
	return true;
}

/* Does the index (QueryIndexGivesOrder) sort its rows in descending order? */
static bool
IndexDescends(Relation index)
{
	return (index->rd_indoption[0] & INDOPTION_DESC) != 0;
}

/*
 * May the table hold rows of a null key of the index (QueryIndexGivesOrder:
 * it has one key then)?  *first: whether the index sorts them first.
 */
bool
QueryIndexKeyNullable(Relation table, Relation index, bool *first)
{
	AttrNumber	attnum = index->rd_index->indkey.values[0];

	*first = (index->rd_indoption[0] & INDOPTION_NULLS_FIRST) != 0;
	return !TupleDescAttr(RelationGetDescr(table), attnum - 1)->attnotnull;
}

/* The btree operator family of a type's default operator class */
static Oid
DefaultBtreeFamily(Oid type)
{
	return get_opclass_family(GetDefaultOpClass(type, BTREE_AM_OID));
}

/* "column <op> value", op the strategy of the column type's default btree family */
static Expr *
CompareToValue(Var *column, int16 strategy, Expr *value)
{
	Oid			opno = get_opfamily_member(DefaultBtreeFamily(column->vartype), column->vartype,
										   column->vartype, strategy);

	return make_opclause(opno, BOOLOID, false, (Expr *) column, value, InvalidOid,
						 column->varcollid);
}

/*
 * Sort the query's rows by a column of its output (a Var), after those it
 * is sorted by already
 */
static void
AddSortColumn(Query *query, TargetEntry *column, bool descending, bool nulls_first)
{
	SortGroupClause *sort = makeNode(SortGroupClause);
	Oid			lt_op;
	Oid			eq_op;
	Oid			gt_op;
	bool		hashable;

	get_sort_group_operators(exprType((Node *) column->expr), true, true, true,
							 &lt_op, &eq_op, &gt_op, &hashable);
	column->ressortgroupref = list_length(query->sortClause) + 1;
	sort->tleSortGroupRef = column->ressortgroupref;
	sort->sortop = descending ? gt_op : lt_op;
	sort->eqop = eq_op;
	sort->nulls_first = nulls_first;
	sort->hashable = hashable;
	query->sortClause = lappend(query->sortClause, sort);
}

/*
 * Sort a table's rows (QueryOfTableRows) in the order of one of its
 * indexes (QueryIndexGivesOrder): by its key columns
 */
void
QuerySortByIndex(Query *query, Relation index)
{
	for (int i = 0; i < IndexRelationGetNumberOfKeyAttributes(index); i++)
		AddSortColumn(query, get_tle_by_resno(query->targetList, index->rd_index->indkey.values[i]),
					  IndexDescends(index),
					  (index->rd_indoption[i] & INDOPTION_NULLS_FIRST) != 0);
}

/*
 * "(columns) > (bound)", in the order of their types' default btree
 * operator classes (one column: "column > value"); descending, "<"
 */
static Expr *
AfterBound(List *columns, List *bound, bool descending)
{
	RowCompareExpr *compare = makeNode(RowCompareExpr);
	int16		strategy = descending ? BTLessStrategyNumber : BTGreaterStrategyNumber;
	ListCell   *column_cell;
	ListCell   *bound_cell;

	if (list_length(columns) == 1)
		return CompareToValue(linitial_node(Var, columns), strategy, linitial(bound));
	forboth(column_cell, columns, bound_cell, bound)
	{
		Var		   *column = lfirst_node(Var, column_cell);
		Oid			family = DefaultBtreeFamily(column->vartype);
		Oid			opno = get_opfamily_member(family, column->vartype, column->vartype, strategy);

		compare->opnos = lappend_oid(compare->opnos, opno);
		compare->opfamilies = lappend_oid(compare->opfamilies, family);
		compare->inputcollids = lappend_oid(compare->inputcollids, column->varcollid);
	}
	compare->rctype = descending ? ROWCOMPARE_LT : ROWCOMPARE_GT;
	compare->largs = columns;
	compare->rargs = bound;
	return (Expr *) compare;
}

/*
 * Does a btree index return the rows of equal keys in the order of their
 * blocks (a forward scan of an ascending index that sorts them by tuple id,
 * PostgreSQL 12's format; a HOT chain's rows are all in its root's block)?
 */
static bool
IndexSortsEqualKeysByBlock(Relation index)
{
	bool		heapkeyspace;
	bool		allequalimage;

	if (IndexDescends(index))
		return false;
	_bt_metaversion(index, &heapkeyspace, &allequalimage);
	return heapkeyspace;
}

/*
 * Does the plan read the rows in the order of their blocks, under a limit
 * at most: a forward scan of the index (IndexSortsEqualKeysByBlock: where
 * its keys are equal), or, with tid_range, a TID range scan?
 */
static bool
PlanReadsByBlock(PlannedStmt *plan, Relation index, bool tid_range)
{
	Plan	   *node = plan->planTree;

	if (IsA(node, Limit))
		node = outerPlan(node);
	if (tid_range && IsA(node, TidRangeScan))
		return true;
	return IsA(node, IndexScan) &&
		((IndexScan *) node)->indexid == RelationGetRelid(index) &&
		((IndexScan *) node)->indexorderdir == ForwardScanDirection;
}

/*
 * Run one query of a chunk in the index's order (QueryBackfillInOrder):
 * query has its quals and its source column, last; sorted_by_keys, whether
 * it is sorted by the index's keys (else its keys are all equal).  Where
 * the index gives rows of equal keys in the order of their blocks, and the
 * plan reads them that way (a TID range scan too, among rows of equal keys),
 * they are not sorted again: past limit rows the query ends at the next
 * change of block.  Otherwise they are sorted by tuple id too (not for a
 * unique index), and the query ends at limit rows.  *by_block says which;
 * *exhausted, whether no row is left after them.  Returns the rows' number;
 * pairs and last_source as for RunPlanIntoContent.
 */
static uint64
RunInOrder(Relation content, Query *query, const QueryDriving *driving, Relation index,
		   bool sorted_by_keys, int64 limit, TidPair **pairs, int *npairs,
		   ItemPointer last_source, bool *by_block, bool *exhausted)
{
	PlannedStmt *plan = NULL;
	bool		stopped = false;
	uint64		rows;

	*by_block = false;
	if (!index->rd_index->indisunique && IndexSortsEqualKeysByBlock(index))
	{
		Query	   *unsorted = copyObject(query);

		/* (the last block's rows fit under the limit: the scan stops before it) */
		unsorted->limitCount = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
												  Int64GetDatum(limit + MaxHeapTuplesPerPage + 1),
												  false, FLOAT8PASSBYVAL);
		plan = pg_plan_query(unsorted, "background_ddl backfill", 0, NULL);
		*by_block = PlanReadsByBlock(plan, index, !sorted_by_keys);
	}
	if (!*by_block)
	{
		if (!index->rd_index->indisunique)
			AddSortColumn(query, llast_node(TargetEntry, query->targetList),
						  IndexDescends(index), false);
		query->limitCount = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
											   Int64GetDatum(limit), false, FLOAT8PASSBYVAL);
		plan = pg_plan_query(query, "background_ddl backfill", 0, NULL);
	}
	rows = RunPlanIntoContent(content, plan, NULL, true, &driving->segments[0], pairs, npairs,
							  last_source, *by_block ? (uint64) limit : 0, &stopped);
	*exhausted = *by_block ? !stopped : (int64) rows < limit;
	Assert(!*by_block || stopped || (int64) rows <= limit + MaxHeapTuplesPerPage);
	return rows;
}

/*
 * "columns = values", in the order of their types' default btree operator
 * classes
 */
static Expr *
EqualToBound(List *columns, List *bound)
{
	List	   *equalities = NIL;
	ListCell   *column_cell;
	ListCell   *bound_cell;

	forboth(column_cell, columns, bound_cell, bound)
		equalities = lappend(equalities,
							 CompareToValue(copyObject(lfirst_node(Var, column_cell)),
											BTEqualStrategyNumber, lfirst(bound_cell)));
	return make_andclause(equalities);
}

/*
 * Index fetches cost about this many times a row read in a TID range scan
 * (a table of 1,000,000 rows in shared buffers, its rows of a key scattered:
 * 0.42 against 0.06 to 0.1 microseconds)
 */
#define INDEX_FETCH_ROW_READS	4

/*
 * Read the rest of a key's rows, after the bound's tuple id, by a TID range
 * scan rather than through the index (QueryBackfillInOrder)?  The index
 * gives them from the key's first row on: the position's key_rows, before
 * the bound, read again.  A TID range scan reads the table's rows from the
 * bound on until it has limit rows of the key: limit / density, the density
 * of the key's rows in the table before the bound.  (The planner prices the
 * rows read again as random pages, which they are not when in the buffers:
 * at 100 keys of 10,000 rows it chose TID range scans that read 100 rows
 * for each one copied.)
 */
static bool
RestByTidRange(const OrderPosition *position, int64 limit, double rows_per_block)
{
	ItemPointer tid = (ItemPointer) DatumGetPointer(llast_node(Const, position->bound)->constvalue);
	double		rows_before = Max(1.0, ItemPointerGetBlockNumber(tid) * rows_per_block);
	double		key_rows = (double) position->key_rows;

	return INDEX_FETCH_ROW_READS * key_rows * (key_rows + limit) > limit * rows_before;
}

/*
 * The next rows of a table's rewrite in the order of one of its indexes
 * (QueryIndexGivesOrder), its chunk of CLUSTER: about limit rows of keys
 * that are not null that sort after the position's bound, inserted into the
 * content relation in that order.  The order is the index's key columns,
 * then the row's tuple id (unless the index is unique; descending with
 * them), so that rows of equal keys are not split between chunks any other
 * way.  Rows of unchanged keys and place are each in exactly one chunk, a
 * row changed meanwhile in one or none, as with chunks of blocks, which the
 * catch-up then replaces.
 *
 * A chunk reads the rest of its bound's key first, "keys = values AND ctid
 * > tid": through the index, which reads the key's rows before the tuple
 * id again, or, where that would cost more (RestByTidRange), by a TID range
 * scan from the tuple id on (through the index only, a CLUSTER on a key of
 * 4 values and 1,000,000 rows, in chunks of 20 ms, took 63 s instead of
 * 2).  Then, while rows are wanted, the rows of the keys after it, through
 * the index ("keys > values").  Where the index returns the rows of equal
 * keys in the order of their blocks (IndexSortsEqualKeysByBlock), the rows
 * are not sorted by tuple id: a chunk ends at a change of block, its bound
 * the last row's keys and the end of its block (within a block, the rows
 * come in the order of their HOT chains' roots, not of their own tuple
 * ids, as PostgreSQL's CLUSTER through the index copies them; RunInOrder).
 *
 * The position moves past the chunk's rows.  *pairs gets their (source,
 * output) pairs, sorted by source.  Caller as for RunIntoContent; query is
 * a copy it gives away.  Returns the number of rows.
 */
uint64
QueryBackfillInOrder(Relation content, Query *query, const QueryDriving *driving, Index rtindex,
					 Relation table, Relation index, OrderPosition *position, int64 limit,
					 double rows_per_block, TidPair **pairs, int *npairs)
{
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	bool		unique = index->rd_index->indisunique;
	List	   *bound = position->bound;
	List	   *key_bound = list_truncate(list_copy(bound), nkeys); /* (no tuple id) */
	List	   *columns = NIL;
	ItemPointerData last_source;
	bool		by_block = false;
	bool		rest_done = true;
	uint64		rows = 0;
	int			nest_level;
	TupleTableSlot *slot;

	Assert(driving->nsegments == 1);	/* a plain table */
	AppendSourceColumn(query, rtindex, NULL);
	for (int i = 0; i < nkeys; i++)
		columns = lappend(columns, copyObject(get_tle_by_resno(query->targetList,
															   index->rd_index->indkey.values[i])->expr));
	nest_level = PlanWithoutScans(true);
	*pairs = NULL;
	*npairs = 0;
	if (bound != NIL && !unique)
	{
		Query	   *rest = copyObject(query);
		Oid			after_tid = IndexDescends(index) ? TIDLessOperator : TIDGreaterOperator;
		int			rest_level = NewGUCNestLevel();

		AddQual(rest, EqualToBound(columns, key_bound));
		AddQual(rest, MakeCtidBound(rtindex, after_tid, (Expr *) llast(bound)));
		/* (a TID range scan gives the order of a forward scan of the index only) */
		(void) set_config_option(IndexSortsEqualKeysByBlock(index) &&
								 RestByTidRange(position, limit, rows_per_block) ?
								 "enable_indexscan" : "enable_tidscan", "off",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		rows = RunInOrder(content, rest, driving, index, false, limit, pairs, npairs,
						  &last_source, &by_block, &rest_done);
		AtEOXact_GUC(true, rest_level);
		position->key_rows += rows;
	}
	position->done = false;
	if (rest_done)
	{
		TidPair    *more_pairs;
		int			more_npairs;
		ItemPointerData more_last_source;
		bool		more_by_block;
		uint64		more;

		QuerySortByIndex(query, index);
		for (int i = 0; i < nkeys; i++)
			if (!TupleDescAttr(RelationGetDescr(table),
							   index->rd_index->indkey.values[i] - 1)->attnotnull)
				AddQual(query, (Expr *) MakeNullTest(copyObject(list_nth(columns, i)),
													 IS_NOT_NULL));
		if (bound != NIL)
			AddQual(query, AfterBound(columns, key_bound, IndexDescends(index)));
		more = RunInOrder(content, query, driving, index, true, Max(limit - (int64) rows, 1),
						  &more_pairs, &more_npairs, &more_last_source, &more_by_block,
						  &position->done);
		if (more > 0)
		{
			last_source = more_last_source;
			by_block = more_by_block;
			position->key_rows = 0; /* (its last key's rows: not counted) */
		}
		AppendPairs(pairs, npairs, more_pairs, more_npairs);
		if (rows > 0 && more > 0)
			TidPairsSort(*pairs, *npairs);
		rows += more;
	}
	AtEOXact_GUC(true, nest_level);
	if (rows == 0)
		return rows;

	/* The last row's keys, as this snapshot sees them (it has not changed for it) */
	position->bound = NIL;
	slot = table_slot_create(table, NULL);
	if (!table_tuple_fetch_row_version(table, &last_source, GetActiveSnapshot(), slot))
		elog(ERROR, "the last row copied of \"%s\" is not visible", RelationGetRelationName(table));
	for (int i = 0; i < nkeys; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(RelationGetDescr(table),
													index->rd_index->indkey.values[i] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, attribute->attnum, &isnull);

		Assert(!isnull);
		value = attribute->attlen == -1 ? PointerGetDatum(PG_DETOAST_DATUM_COPY(value)) :
			datumCopy(value, attribute->attbyval, attribute->attlen);
		position->bound = lappend(position->bound,
								  makeConst(attribute->atttypid, attribute->atttypmod,
											attribute->attcollation, attribute->attlen, value,
											false, attribute->attbyval));
	}
	if (!unique)
	{
		ItemPointer tid = palloc(sizeof(ItemPointerData));

		*tid = last_source;
		if (by_block)
			ItemPointerSetOffsetNumber(tid, MaxOffsetNumber);
		position->bound = lappend(position->bound, makeConst(TIDOID, -1, InvalidOid,
															 sizeof(ItemPointerData),
															 PointerGetDatum(tid), false, false));
	}
	ExecDropSingleTupleTableSlot(slot);
	return rows;
}

/*
 * The rows of a table's rewrite in the order of one of its indexes
 * (QueryIndexGivesOrder) whose key is null, in blocks [start_block,
 * end_block), in the order of their tuple ids (as PostgreSQL's CLUSTER,
 * which has no order among them either); as QueryBackfillBlocks.
 */
uint64
QueryBackfillNullKeys(Relation content, Query *query, const QueryDriving *driving, Index rtindex,
					  Relation index, int64 start_block, int64 end_block,
					  TidPair **pairs, int *npairs)
{
	TargetEntry *key = get_tle_by_resno(query->targetList, index->rd_index->indkey.values[0]);

	Assert(IndexRelationGetNumberOfKeyAttributes(index) == 1);
	AddQual(query, (Expr *) MakeNullTest(copyObject(key->expr), IS_NULL));
	return QueryBackfillBlocks(content, query, driving, rtindex, false, true, start_block, end_block,
							   pairs, npairs);
}

/*
 * The most tuple ids of one TID scan of a segment's table: fewer than cost
 * the planner as much as reading its pages in sequence, counting a random
 * page each.  With more, it prefers another plan (with sequential scans off,
 * a whole index in its order, fetching every row of the table at random,
 * estimated lower than that: at 300,000 tuple ids of an 8-million-row table,
 * several times as long as TID scans of the same rows).  At least
 * TID_SCAN_MIN_TIDS: the whole of a small table is read fast.
 */
#define TID_SCAN_MIN_TIDS		1000

static int
TidScanMaxTids(Oid relid)
{
	Relation	table = table_open(relid, AccessShareLock);
	double		pages = RelationGetNumberOfBlocks(table);

	table_close(table, NoLock);
	return (int) Min(Max(pages * seq_page_cost / (random_page_cost + cpu_tuple_cost),
						 TID_SCAN_MIN_TIDS), INT_MAX);
}

/*
 * Compute the output rows of the given driving rows (sorted job tuple ids,
 * see query_driving.c) as of the current snapshot, insert them and return
 * their (source, output) pairs, sorted: a TID scan of each partition that
 * holds some.  Each piece is planned and run in a memory context of its
 * own, reset after it (planning a TID scan's thousands of tuple ids takes
 * megabytes: the pieces of a cut-over's last pass, all in one transaction,
 * took fresh memory each, a quarter of its time in page faults).  Caller
 * as for RunIntoContent.
 */
TidPair *
QueryRecompute(Relation content, Query *query, const QueryDriving *driving, Index rtindex,
			   ItemPointer sources, int nsources, int *npairs)
{
	ItemPointer tids = palloc(sizeof(ItemPointerData) * Max(nsources, 1));
	TidPair    *pairs = palloc(sizeof(TidPair));	/* (AppendPairs copies into it) */
	MemoryContext piece_context = AllocSetContextCreate(CurrentMemoryContext,
														"background_ddl recompute piece",
														ALLOCSET_DEFAULT_SIZES);
	MemoryContext caller_context;
	int			i = 0;

	*npairs = 0;
	while (i < nsources)
	{
		BlockNumber block;
		int			segment = QueryDrivingSegmentOf(driving, ItemPointerGetBlockNumber(&sources[i]),
													&block);
		int			max_tids = segment >= 0 ?
			TidScanMaxTids(driving->segments[segment].relid) : INT_MAX;
		int			ntids = 0;
		Query	   *piece;
		TidPair    *piece_pairs;
		int			piece_npairs;
		int			nest_level;

		/* The sources in this segment, as tuple ids of its table, up to max_tids */
		for (; i < nsources && ntids < max_tids; i++)
		{
			BlockNumber next_block;

			if (QueryDrivingSegmentOf(driving, ItemPointerGetBlockNumber(&sources[i]),
									  &next_block) != segment)
				break;
			ItemPointerSet(&tids[ntids], next_block, ItemPointerGetOffsetNumber(&sources[i]));
			ntids++;
		}
		if (segment < 0)
			continue;			/* in no segment: no row */
		caller_context = MemoryContextSwitchTo(piece_context);
		piece = QueryDrivingLeafQuery(copyObject(query), rtindex, driving->segments[segment].relid);
		RestrictToTids(piece, rtindex, tids, ntids);
		AppendSourceColumn(piece, rtindex, NULL);

		/*
		 * A TID scan: counting a random page per tuple id, the planner
		 * would read the whole table for a few thousand of them, once per
		 * batch (the rows are in a batch's few blocks, or cached: a catch-up
		 * follows the writers), so sequential scans are off; and a piece is
		 * at most TidScanMaxTids.  Not counted live: the rows it replaces go
		 * at the same time.
		 */
		nest_level = PlanWithoutScans(false);
		(void) RunIntoContent(content, piece, 0, false, &driving->segments[segment], &piece_pairs,
							  &piece_npairs, NULL);
		AtEOXact_GUC(true, nest_level);
		MemoryContextSwitchTo(caller_context);
		AppendPairs(&pairs, npairs, piece_pairs, piece_npairs);
		MemoryContextReset(piece_context);
	}
	MemoryContextDelete(piece_context);
	return pairs;
}

/* A DestReceiver that collects the tuple ids of a query's only column */
typedef struct TidCollector
{
	DestReceiver pub;
	ItemPointer tids;
	int			ntids;
	int			capacity;
} TidCollector;

static bool
TidCollectorReceive(TupleTableSlot *slot, DestReceiver *self)
{
	TidCollector *collector = (TidCollector *) self;
	bool		isnull;
	Datum		tid = slot_getattr(slot, 1, &isnull);

	if (isnull)
		return true;
	if (collector->ntids == collector->capacity)
		collector->tids = repalloc_huge(collector->tids,
										sizeof(ItemPointerData) * (collector->capacity *= 2));
	ItemPointerCopy((ItemPointer) DatumGetPointer(tid), &collector->tids[collector->ntids++]);
	return true;
}

static void
TidCollectorStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
TidCollectorShutdown(DestReceiver *self)
{
}

/*
 * Run a query on the driving table (rtindex) whose only column is its ctid,
 * once per segment (query_driving.c); returns the rows' job tuple ids,
 * sorted and unique.  Caller as for RunIntoContent; query is a copy it
 * gives away.
 */
ItemPointer
QueryTids(Query *query, const QueryDriving *driving, Index rtindex, int *ntids)
{
	TidCollector collector = {{TidCollectorReceive, TidCollectorStartup, TidCollectorShutdown,
	NULL, DestNone}, palloc(sizeof(ItemPointerData) * 64), 0, 64};
	int			unique = 0;

	for (int segment = 0; segment < driving->nsegments; segment++)
	{
		Query	   *piece = QueryDrivingLeafQuery(segment + 1 < driving->nsegments ?
												  copyObject(query) : query, rtindex,
												  driving->segments[segment].relid);
		PlannedStmt *plan = pg_plan_query(piece, "background_ddl catch-up", 0, NULL);
		QueryDesc  *query_desc;
		int			first = collector.ntids;

		plan->jitFlags = PGJIT_NONE;	/* (run once, as a batch's: PlanWithoutScans) */
		query_desc = CreateQueryDesc(plan, "background_ddl catch-up", GetActiveSnapshot(),
									 InvalidSnapshot, &collector.pub, NULL, NULL, 0);

		ExecutorStart(query_desc, 0);
		ExecutorRun(query_desc, ForwardScanDirection, 0L, true);
		ExecutorFinish(query_desc);
		ExecutorEnd(query_desc);
		FreeQueryDesc(query_desc);
		for (int i = first; i < collector.ntids; i++)
		{
			if (!QueryDrivingJobTid(driving, segment, &collector.tids[i]))
				ItemPointerSetInvalid(&collector.tids[i]);	/* logged as uncaptured */
		}
	}
	qsort(collector.tids, collector.ntids, sizeof(ItemPointerData), ItemPointerCompareQsort);
	for (int i = 0; i < collector.ntids; i++)
	{
		if (!ItemPointerIsValid(&collector.tids[i]))
			continue;
		if (unique == 0 || !ItemPointerEquals(&collector.tids[unique - 1], &collector.tids[i]))
			collector.tids[unique++] = collector.tids[i];
	}
	*ntids = unique;
	return collector.tids;
}

/* The planner's estimate of the query's row count */
int64
QueryEstimateRows(Query *query)
{
	PlannedStmt *plan = pg_plan_query(copyObject(query), "background_ddl estimate", 0, NULL);

	return (int64) plan->planTree->plan_rows;
}
