/*-------------------------------------------------------------------------
 *
 * pg_parallel.c
 *	  What PostgreSQL lets a parallel worker evaluate: an expression or a
 *	  query is parallel safe when the planner would let a parallel worker
 *	  run every function and operator in it (max_parallel_hazard, the test
 *	  behind a parallel plan).  A function marked PARALLEL RESTRICTED or
 *	  UNSAFE, a domain with constraints, a row lock: not safe.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_proc.h"
#include "nodes/makefuncs.h"
#include "optimizer/clauses.h"
#include "parser/analyze.h"
#include "parser/parse_node.h"
#include "parser/parser.h"

#include "pg/pg_parallel.h"

/* May a parallel worker evaluate expr (a cooked expression, no sublinks)? */
bool
PgExpressionParallelSafe(Node *expr)
{
	Query	   *query = makeNode(Query);

	query->commandType = CMD_SELECT;
	query->targetList = list_make1(makeTargetEntry((Expr *) expr, 1, NULL, false));
	return max_parallel_hazard(query) == PROPARALLEL_SAFE;
}

/*
 * May a parallel worker run this query (one SELECT of tables, no
 * parameters)?  Analyzed only (no rewrite), without the hooks that follow
 * an analysis: it is never run.
 */
bool
PgQueryParallelSafe(const char *query_string)
{
	List	   *statements = raw_parser(query_string, RAW_PARSE_DEFAULT);
	ParseState *pstate = make_parsestate(NULL);
	Query	   *query;

	pstate->p_sourcetext = query_string;
	query = transformTopLevelStmt(pstate, linitial_node(RawStmt, statements));
	free_parsestate(pstate);
	return max_parallel_hazard(query) == PROPARALLEL_SAFE;
}
