/*-------------------------------------------------------------------------
 *
 * query_decompose.c
 *	  Whether a job's query can be computed in batches, and how.
 *
 * A query is decomposable when, after rewriting, some base table drives it:
 * every output row comes from exactly one row of that table, and whether and
 * how it appears depends on that row alone (plus other tables, read as they
 * are).  That holds for projections, filters, inner joins and left joins that
 * preserve the driving table.  Aggregates and DISTINCT are computed from
 * per-chunk partial rows (query_partial_agg.c) when their aggregates combine
 * exactly.  Chunks do not work for window functions, LIMIT/OFFSET, set
 * operations, set-returning functions in the target list, sublinks, CTEs, ORDER BY (the physical order would
 * differ), TABLESAMPLE, or for functions whose result may differ between
 * batches (query_functions.c).
 *
 * Batches are only exact if every change to every relation the query reads
 * is captured (capture_trigger.c): so the driving table must be a plain heap
 * table, or a partitioned table whose partitions all are (query_driving.c:
 * its partitions read are captured and chunked one after the other), read
 * once, every other relation a plain table (no view left after rewriting,
 * matview, foreign table, partitioned table or inheritance parent), and the
 * job's role must be allowed to put triggers on all of them.  Otherwise the
 * job runs in one batch, and says why.
 *
 * Caller is in a transaction, as the job's role (planning may look at the
 * relations' sizes, and the privileges checked are that role's).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "capture/capture_trigger.h"
#include "query/query_decompose.h"
#include "query/query_driving.h"
#include "query/query_functions.h"
#include "query/query_partial_agg.h"

/* Walker state: every relation a query reads, anywhere in it */
typedef struct BaseRelationsContext
{
	List	   *relids;			/* distinct */
	int			occurrences_of_driving;
	Oid			driving_oid;
	Oid			target_oid;		/* ignored: a view rule's OLD and NEW entries */
	char	   *refusal;		/* why some relation cannot be captured */
} BaseRelationsContext;

/* Why changes to a relation could escape the capture, or NULL */
static char *
UncapturableReason(RangeTblEntry *rte)
{
	if (rte->relkind == RELKIND_MATVIEW)
		return psprintf("\"%s\" is a materialized view", get_rel_name(rte->relid));
	if (rte->relkind == RELKIND_FOREIGN_TABLE)
		return psprintf("\"%s\" is a foreign table", get_rel_name(rte->relid));
	if (rte->relkind == RELKIND_RELATION && rte->inh && has_subclass(rte->relid))
		return psprintf("\"%s\" has inheritance children", get_rel_name(rte->relid));
	return NULL;
}

static bool
BaseRelationsWalker(Node *node, BaseRelationsContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		/*
		 * After rewriting, a view's entry only carries the privilege checks of
		 * the role that reads it (its query was expanded, or pulled up)
		 */
		if (rte->rtekind == RTE_RELATION && rte->relid != context->target_oid &&
			rte->relkind != RELKIND_VIEW)
		{
			char	   *reason = UncapturableReason(rte);

			if (reason != NULL && context->refusal == NULL)
				context->refusal = reason;
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
 * The relations a query reads (driving table first; the target itself,
 * which its view rule names, excluded), or NIL with *refusal set if a change
 * to one of them could escape the capture triggers, or if the driving table
 * is read twice (a change to it would then also be a change to "another"
 * table, which only a full recompute handles).
 */
static List *
BaseRelations(Query *query, Oid driving_oid, Oid target_oid, Oid roleid, char **refusal)
{
	BaseRelationsContext context = {NIL, 0, driving_oid, target_oid, NULL};
	ListCell   *lc;

	(void) query_tree_walker(query, BaseRelationsWalker, &context, QTW_EXAMINE_RTES_BEFORE);
	if (context.refusal != NULL)
	{
		*refusal = context.refusal;
		return NIL;
	}
	if (context.occurrences_of_driving != 1)
	{
		*refusal = psprintf("table \"%s\" is read more than once", get_rel_name(driving_oid));
		return NIL;
	}
	foreach(lc, context.relids)
	{
		char	   *reason;

		/* A partitioned driving table's capture is on the partitions read */
		if (lfirst_oid(lc) == driving_oid &&
			get_rel_relkind(driving_oid) == RELKIND_PARTITIONED_TABLE)
			continue;
		reason = CaptureRefusal(lfirst_oid(lc), roleid);

		if (reason != NULL)
		{
			*refusal = reason;
			return NIL;
		}
	}
	context.relids = list_delete_oid(context.relids, driving_oid);
	return lcons_oid(driving_oid, context.relids);
}

/* Is the relation a plain heap table (ctid ranges and TID scans)? */
static bool
IsHeapTable(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	bool		heap = rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->rd_rel->relam == HEAP_TABLE_AM_OID;

	table_close(rel, NoLock);
	return heap;
}

/*
 * Can this range table entry drive a chunked backfill: a plain heap table,
 * or a partitioned table whose leaves all are (query_driving.c)?  Without
 * check, only whether it is a table or a partitioned table (a job that
 * already knows its driving table looks for it).
 */
static bool
IsChunkableRelation(RangeTblEntry *rte, bool check)
{
	ListCell   *lc;

	if (rte->rtekind != RTE_RELATION || rte->tablesample != NULL)
		return false;
	if (rte->relkind == RELKIND_PARTITIONED_TABLE && rte->inh)
	{
		if (!check)
			return true;
		foreach(lc, QueryDrivingTreeLeaves(rte->relid, AccessShareLock))
		{
			if (!IsHeapTable(lfirst_oid(lc)))
				return false;
		}
		return true;
	}
	return rte->relkind == RELKIND_RELATION && (!check || IsHeapTable(rte->relid));
}

/*
 * Collect the range table indexes of the relations in a join tree node whose
 * every row reaches the output at most once per match, unfiltered by
 * another table's absence: both sides of inner joins, the preserved side of
 * outer joins.
 */
static void
CollectDrivingCandidates(Query *query, Node *node, bool check, List **candidates)
{
	if (node == NULL)
		return;
	if (IsA(node, RangeTblRef))
	{
		Index		rtindex = ((RangeTblRef *) node)->rtindex;

		if (IsChunkableRelation(rt_fetch(rtindex, query->rtable), check))
			*candidates = lappend_int(*candidates, rtindex);
	}
	else if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			CollectDrivingCandidates(query, lfirst(lc), check, candidates);
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;

		if (join->jointype == JOIN_INNER || join->jointype == JOIN_LEFT)
			CollectDrivingCandidates(query, join->larg, check, candidates);
		if (join->jointype == JOIN_INNER || join->jointype == JOIN_RIGHT)
			CollectDrivingCandidates(query, join->rarg, check, candidates);
	}
}

/* Does a join tree node reference a subquery (a view that was not pulled up)? */
static bool
SubqueryInFrom(Query *query, Node *node)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblRef))
		return rt_fetch(((RangeTblRef *) node)->rtindex, query->rtable)->rtekind == RTE_SUBQUERY;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
		{
			if (SubqueryInFrom(query, lfirst(lc)))
				return true;
		}
		return false;
	}
	if (IsA(node, JoinExpr))
		return SubqueryInFrom(query, ((JoinExpr *) node)->larg) ||
			SubqueryInFrom(query, ((JoinExpr *) node)->rarg);
	return false;
}

/*
 * Why the shape of the query forbids batches, or NULL.  The functions it
 * calls must give the same result in every batch, but where it copies a
 * table's rows (copies_rows: a table's rewrite, whose every row's values,
 * a volatile default's too, are its own, computed when the row is copied,
 * as the blocking statement computes them for each row it rewrites).
 */
static char *
ShapeRefusal(Query *query, bool copies_rows)
{
	char	   *refusal;

	if (query->commandType != CMD_SELECT)
		return "it is not a plain SELECT";
	if (query->hasWindowFuncs)
		return "the query uses window functions";
	if (query->hasTargetSRFs)
		return "the query has set-returning functions in its target list";
	if (query->limitCount != NULL || query->limitOffset != NULL)
		return "the query uses LIMIT or OFFSET";
	if (query->setOperations != NULL)
		return "the query uses UNION, INTERSECT or EXCEPT";
	if (query->hasSubLinks)
		return "the query has subqueries in expressions";
	if (query->cteList != NIL || query->hasRecursive)
		return "the query uses WITH";
	if (query->sortClause != NIL && !query->hasDistinctOn)
		return "the query uses ORDER BY";
	if (query->rowMarks != NIL || query->hasForUpdate)
		return "the query locks rows";
	if (!copies_rows && (refusal = QueryFunctionRefusal(query)) != NULL)
		return refusal;
	if (QueryPartialAggApplies(query))
		return QueryPartialAggRefusal(query);
	return NULL;
}

/*
 * The partitions of the partitioned driving table (rtindex) that the query
 * reads, after pruning, or NIL with *refusal set if they cannot be captured
 * or read one by one: the job's role cannot put triggers on one of them, the
 * query reads one of the tree's tables elsewhere too, or reads the
 * partitioned table's rows as a whole (a partition's row type differs).
 */
static List *
PartitionsRead(Query *query, Index rtindex, List *relids, Oid roleid, char **refusal)
{
	Oid			relid = rt_fetch(rtindex, query->rtable)->relid;
	List	   *tree = find_all_inheritors(relid, AccessShareLock, NULL);
	List	   *leaves;
	ListCell   *lc;

	foreach(lc, relids)
	{
		if (lfirst_oid(lc) != relid && list_member_oid(tree, lfirst_oid(lc)))
		{
			*refusal = psprintf("partition \"%s\" of \"%s\" is read on its own too",
								get_rel_name(lfirst_oid(lc)), get_rel_name(relid));
			return NIL;
		}
	}
	if (QueryDrivingWholeRowUsed(query, rtindex))
	{
		*refusal = psprintf("the query reads whole rows of the partitioned table \"%s\"",
							get_rel_name(relid));
		return NIL;
	}
	leaves = QueryDrivingReadLeaves(query, relid);
	if (leaves == NIL)
	{
		*refusal = psprintf("the query reads no partition of \"%s\"", get_rel_name(relid));
		return NIL;
	}
	foreach(lc, leaves)
	{
		if ((*refusal = CaptureRefusal(lfirst_oid(lc), roleid)) != NULL)
			return NIL;
	}
	return leaves;
}

/*
 * Decide how a rewritten query is computed.  The driving table is the
 * largest relation that can drive a chunked backfill.  With
 * required_driving, take that relation or none (a resumed job keeps the
 * driving table it started with).  roleid is the role whose TRIGGER
 * privileges decide whether changes can be captured.  copies_rows: the
 * query copies a table's rows (ShapeRefusal).
 */
void
QueryDecompose(Query *query, Oid target_oid, Oid roleid, Oid required_driving, bool copies_rows,
			   QueryDecomposition *result)
{
	List	   *candidates = NIL;
	ListCell   *lc;
	BlockNumber best_pages = 0;
	char	   *refusal = ShapeRefusal(query, copies_rows);

	memset(result, 0, sizeof(QueryDecomposition));
	if (refusal == NULL)
		CollectDrivingCandidates(query, (Node *) query->jointree, true, &candidates);
	if (refusal == NULL && candidates == NIL)
		refusal = SubqueryInFrom(query, (Node *) query->jointree) ?
			"a view or subquery in FROM cannot be merged into the query (a security barrier, aggregates, DISTINCT, LIMIT...)" :
			"no plain table drives the query";
	foreach(lc, candidates)
	{
		Index		rtindex = lfirst_int(lc);
		Oid			relid = rt_fetch(rtindex, query->rtable)->relid;
		Relation	rel;
		BlockNumber pages;
		List	   *relids;
		List	   *leaves = NIL;
		ListCell   *leaf;
		char	   *candidate_refusal = NULL;

		if (OidIsValid(required_driving) && relid != required_driving)
			continue;
		relids = BaseRelations(query, relid, target_oid, roleid, &candidate_refusal);
		if (relids != NIL && get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
			leaves = PartitionsRead(query, rtindex, relids, roleid, &candidate_refusal);
		if (relids == NIL || candidate_refusal != NULL)
		{
			if (result->driving_rtindex == 0)
				refusal = candidate_refusal;
			continue;
		}
		pages = 0;
		foreach(leaf, leaves != NIL ? leaves : list_make1_oid(relid))
		{
			rel = table_open(lfirst_oid(leaf), NoLock);
			pages += RelationGetNumberOfBlocks(rel);
			table_close(rel, NoLock);
		}
		if (result->driving_rtindex == 0 || pages > best_pages)
		{
			result->driving_rtindex = rtindex;
			result->driving_oid = relid;
			result->relids = relids;
			result->leaves = leaves;
			best_pages = pages;
			refusal = NULL;
		}
	}
	if (result->driving_rtindex == 0)
		result->reason = refusal ? pstrdup(refusal) : pstrdup("the driving table changed");
	else
	{
		result->partial = QueryPartialAggApplies(query);
		result->join_keys = QueryJoinKeys(query, result->driving_rtindex);
	}
}

/* Walker state: how often a relation is read, anywhere in a query */
typedef struct OccurrencesContext
{
	Oid			relid;
	int			count;
} OccurrencesContext;

static bool
OccurrencesWalker(Node *node, OccurrencesContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION && rte->relid == context->relid)
			context->count++;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, OccurrencesWalker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, OccurrencesWalker, context);
}

/* A built-in operator: its semantics are PostgreSQL's */
#define IsBuiltIn(oid)	((oid) < FirstNormalObjectId)

/*
 * Can a join key of this type go through the dirty log as text, and come
 * back the same whatever the writer's settings (DateStyle, extra_float_digits,
 * lc_monetary...)?
 */
static bool
JoinKeyTypeLogged(Oid type)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case NUMERICOID:
		case BOOLOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case UUIDOID:
			return true;
		default:
			return false;
	}
}

/*
 * If qual is "driving.a = other.b" (either way round) with a built-in
 * equality operator, and other.b of a type whose text JoinKeyTypeLogged, the
 * join key it gives; else NULL.
 */
static QueryJoinKey *
JoinKeyOfQual(Query *query, Node *qual, Index driving_rtindex)
{
	OpExpr	   *op;
	Var		   *left;
	Var		   *right;
	Var		   *driving;
	Var		   *other;
	RangeTblEntry *other_rte;
	QueryJoinKey *key;
	Oid			opno;

	if (!IsA(qual, OpExpr) || list_length(((OpExpr *) qual)->args) != 2)
		return NULL;
	op = (OpExpr *) qual;
	left = linitial(op->args);
	right = lsecond(op->args);
	if (!IsA(left, Var) || !IsA(right, Var) || left->varlevelsup != 0 ||
		right->varlevelsup != 0 || left->varattno <= 0 || right->varattno <= 0)
		return NULL;
	if (left->varno == driving_rtindex && right->varno != driving_rtindex)
	{
		driving = left;
		other = right;
		opno = op->opno;
	}
	else if (right->varno == driving_rtindex && left->varno != driving_rtindex)
	{
		driving = right;
		other = left;
		opno = get_commutator(op->opno);
	}
	else
		return NULL;
	other_rte = rt_fetch(other->varno, query->rtable);
	if (!OidIsValid(opno) || !IsBuiltIn(opno) || !IsBuiltIn(op->opno) ||
		!op_mergejoinable(opno, driving->vartype) ||
		!JoinKeyTypeLogged(other->vartype) || other_rte->rtekind != RTE_RELATION)
		return NULL;
	key = palloc(sizeof(QueryJoinKey));
	key->relid = other_rte->relid;
	key->attnum = other->varattno;
	key->driving_attnum = driving->varattno;
	key->opno = opno;
	key->collation = op->inputcollid;
	return key;
}

/* Collect the join keys of the quals of a join tree node (see QueryJoinKeys) */
static void
CollectJoinKeys(Query *query, Node *node, Index driving_rtindex, List **keys)
{
	List	   *quals = NIL;
	ListCell   *lc;

	if (node == NULL || IsA(node, RangeTblRef))
		return;
	if (IsA(node, FromExpr))
	{
		foreach(lc, ((FromExpr *) node)->fromlist)
			CollectJoinKeys(query, lfirst(lc), driving_rtindex, keys);
		quals = make_ands_implicit((Expr *) ((FromExpr *) node)->quals);
	}
	else if (IsA(node, JoinExpr))
	{
		CollectJoinKeys(query, ((JoinExpr *) node)->larg, driving_rtindex, keys);
		CollectJoinKeys(query, ((JoinExpr *) node)->rarg, driving_rtindex, keys);
		quals = make_ands_implicit((Expr *) ((JoinExpr *) node)->quals);
	}
	foreach(lc, quals)
	{
		QueryJoinKey *key = JoinKeyOfQual(query, lfirst(lc), driving_rtindex);
		ListCell   *known;
		bool		duplicate = false;

		if (key == NULL)
			continue;
		foreach(known, *keys)
			duplicate |= ((QueryJoinKey *) lfirst(known))->relid == key->relid;
		if (!duplicate)
			*keys = lappend(*keys, key);
	}
}

/*
 * The tables of a chunked query whose changed rows can be pinned to driving
 * rows: read once, and joined to the driving table by an equality between
 * columns (an inner join, or the nullable side of a left join), so that a
 * changed row with join key k changes the output of the driving rows whose
 * column equals k, and no other.  A List of QueryJoinKey, at most one per
 * table.
 */
List *
QueryJoinKeys(Query *query, Index driving_rtindex)
{
	List	   *keys = NIL;
	List	   *once = NIL;
	ListCell   *lc;

	CollectJoinKeys(query, (Node *) query->jointree, driving_rtindex, &keys);
	foreach(lc, keys)
	{
		QueryJoinKey *key = lfirst(lc);
		OccurrencesContext context = {key->relid, 0};

		(void) query_tree_walker(query, OccurrencesWalker, &context, QTW_EXAMINE_RTES_BEFORE);
		if (context.count == 1)
			once = lappend(once, key);
	}
	return once;
}

/* The join key of a relation (QueryJoinKeys), or NULL */
QueryJoinKey *
QueryJoinKeyOf(List *join_keys, Oid relid)
{
	ListCell   *lc;

	foreach(lc, join_keys)
	{
		if (((QueryJoinKey *) lfirst(lc))->relid == relid)
			return lfirst(lc);
	}
	return NULL;
}

/*
 * The strategy as pg_stat_background_ddl shows it, with the joined tables
 * whose every change makes all rows recomputed
 */
char *
QueryStrategy(const QueryDecomposition *decomposition)
{
	StringInfoData strategy;
	ListCell   *lc;
	bool		first = true;

	if (decomposition->driving_rtindex == 0)
		return psprintf("one batch: %s", decomposition->reason);
	initStringInfo(&strategy);
	appendStringInfoString(&strategy, decomposition->partial ?
						   STRATEGY_PARTIAL_AGGREGATION : STRATEGY_CTID_CHUNKS);
	if (decomposition->leaves != NIL)
		appendStringInfo(&strategy, " of %d partitions of \"%s\"",
						 list_length(decomposition->leaves), get_rel_name(decomposition->driving_oid));
	foreach(lc, decomposition->relids)
	{
		Oid			relid = lfirst_oid(lc);

		if (relid == decomposition->driving_oid ||
			QueryJoinKeyOf(decomposition->join_keys, relid) != NULL)
			continue;
		appendStringInfo(&strategy, "%s\"%s\"", first ? "; a change to " : ", ",
						 get_rel_name(relid));
		first = false;
	}
	if (!first)
		appendStringInfoString(&strategy, " recomputes every row");
	return strategy.data;
}

/* The range table index of the driving table in a rewritten query, or 0 */
Index
QueryDrivingRtindex(Query *query, Oid driving_oid)
{
	Index		rtindex = 0;
	List	   *candidates = NIL;
	ListCell   *lc;

	CollectDrivingCandidates(query, (Node *) query->jointree, false, &candidates);
	foreach(lc, candidates)
	{
		if (rt_fetch(lfirst_int(lc), query->rtable)->relid == driving_oid)
			rtindex = lfirst_int(lc);
	}
	return rtindex;
}
