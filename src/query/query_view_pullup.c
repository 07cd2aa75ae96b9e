/*-------------------------------------------------------------------------
 *
 * query_view_pullup.c
 *	  Ordinary views that a job's query reads, pulled up into it.
 *
 * After rewriting, a view in FROM is a subquery.  The planner pulls simple
 * subqueries up into their parent, but the decomposition (query_decompose.c)
 * looks for the driving table in the query's own join tree, and the
 * backfill (query_backfill.c) restricts that table by ctid and returns its ctid:
 * both need the view's tables in the query itself.  So before either looks
 * at it, a simple view (a projection, filter or join of relations: no
 * aggregate, DISTINCT, window function, set operation, LIMIT, ORDER BY,
 * sublink, CTE or row lock, not a security barrier) is pulled up as the
 * planner would: its relations join the query's range table, its join
 * tree takes the place of its reference, and each reference to one of its
 * columns becomes the expression behind that column.
 *
 * Only a view that no outer join can null is pulled up (in the FROM list,
 * under an inner join, or on the preserved side of a left join): its
 * expressions would otherwise need the planner's placeholders to go NULL
 * with the view's row.  The view's own range table entries stay (the
 * rewriter's entries for the view that carry the privilege checks of the
 * role reading it); the subquery entry it leaves behind becomes an empty
 * RTE_RESULT that nothing references.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"

#include "query/query_view_pullup.h"

/* Can this subquery (an expanded view) be pulled up into its parent? */
static bool
IsSimpleView(RangeTblEntry *rte)
{
	Query	   *view = rte->subquery;

	return rte->rtekind == RTE_SUBQUERY && view != NULL && !rte->security_barrier &&
		!rte->lateral && view->commandType == CMD_SELECT && view->utilityStmt == NULL &&
		!view->hasAggs && !view->hasWindowFuncs && !view->hasTargetSRFs &&
		!view->hasSubLinks && !view->hasRecursive && !view->hasModifyingCTE &&
		!view->hasForUpdate && view->cteList == NIL && view->groupClause == NIL &&
		view->groupingSets == NIL && view->havingQual == NULL &&
		view->distinctClause == NIL && view->sortClause == NIL &&
		view->limitOffset == NULL && view->limitCount == NULL &&
		view->setOperations == NULL && view->rowMarks == NIL &&
		view->jointree != NULL && view->jointree->fromlist != NIL &&
		!contain_volatile_functions((Node *) view->targetList);
}

/*
 * The first range table index of a simple view that no outer join can null,
 * in a join tree node; 0 if none.
 */
static Index
PullableView(Query *query, Node *node)
{
	if (node == NULL)
		return 0;
	if (IsA(node, RangeTblRef))
	{
		Index		rtindex = ((RangeTblRef *) node)->rtindex;

		return IsSimpleView(rt_fetch(rtindex, query->rtable)) ? rtindex : 0;
	}
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
		{
			Index		rtindex = PullableView(query, lfirst(lc));

			if (rtindex != 0)
				return rtindex;
		}
		return 0;
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;
		Index		rtindex = 0;

		if (join->jointype == JOIN_INNER || join->jointype == JOIN_LEFT)
			rtindex = PullableView(query, join->larg);
		if (rtindex == 0 && join->jointype == JOIN_INNER)
			rtindex = PullableView(query, join->rarg);
		return rtindex;
	}
	return 0;
}

/* Replace the reference to rtindex in a join tree node by replacement */
static Node *
ReplaceReference(Node *node, Index rtindex, Node *replacement)
{
	if (IsA(node, RangeTblRef))
		return ((RangeTblRef *) node)->rtindex == rtindex ? replacement : node;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			lfirst(lc) = ReplaceReference(lfirst(lc), rtindex, replacement);
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;

		join->larg = ReplaceReference(join->larg, rtindex, replacement);
		join->rarg = ReplaceReference(join->rarg, rtindex, replacement);
	}
	return node;
}

/* Pull the view at rtindex up into the query (modified in place) */
static void
PullUp(Query *query, Index rtindex)
{
	RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
	Query	   *view = copyObject(rte->subquery);
	int			offset = list_length(query->rtable);
	Query	   *replaced;

	/* Views in the view first: the planner would pull them up too */
	QueryPullUpViews(view);
	OffsetVarNodes((Node *) view, offset, 0);
	query->rtable = list_concat(query->rtable, view->rtable);
	replaced = (Query *) ReplaceVarsFromTargetList((Node *) query, rtindex, 0, rte,
												   view->targetList, REPLACEVARS_REPORT_ERROR,
												   0, &query->hasSubLinks);
	*query = *replaced;
	query->hasRowSecurity |= view->hasRowSecurity;
	query->jointree = (FromExpr *) ReplaceReference((Node *) query->jointree, rtindex,
													(Node *) view->jointree);
	rte = rt_fetch(rtindex, query->rtable);
	rte->rtekind = RTE_RESULT;
	rte->subquery = NULL;
}

/*
 * Pull every simple view that the query reads (and those they read) up
 * into the query, in place.
 */
void
QueryPullUpViews(Query *query)
{
	Index		rtindex;

	while ((rtindex = PullableView(query, (Node *) query->jointree)) != 0)
		PullUp(query, rtindex);
}
