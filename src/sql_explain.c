/*-------------------------------------------------------------------------
 *
 * sql_explain.c
 *	  explain_ddl(): how a statement would run in the background, without
 *	  submitting it.
 *
 * The strategy is the one the submit NOTICE announces and the strategy
 * column of pg_stat_background_ddl shows ("ctid chunks", "partial
 * aggregation", "concurrent index build", or "one batch: <reason>"), decided
 * the same way (query_decompose.c) for the calling role: its TRIGGER privileges
 * decide whether changes to the base tables can be captured.  The worker
 * decides again when the job starts, so a change of privileges or of the
 * tables in between can change it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "catalog_access.h"
#include "query_decompose.h"
#include "query_job.h"

PG_FUNCTION_INFO_V1(explain_ddl);

/* The SELECT of a statement that computes a query (or of a plain SELECT) */
static Node *
StatementSelect(Node *statement)
{
	if (IsA(statement, CreateTableAsStmt))
		return ((CreateTableAsStmt *) statement)->query;
	if (IsA(statement, SelectStmt))
	{
		/* SELECT ... INTO is CREATE TABLE AS */
		((SelectStmt *) statement)->intoClause = NULL;
		return statement;
	}
	return NULL;
}

/* Point a syntax or analysis error into the statement, not the call */
static void
ExplainErrorCallback(void *arg)
{
	int			position = geterrposition();

	if (position > 0)
	{
		errposition(0);
		internalerrposition(position);
		internalerrquery((const char *) arg);
	}
}

pg_attribute_noreturn()
static void
RefuseStatement(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("explain_ddl takes one CREATE MATERIALIZED VIEW, CREATE TABLE AS, SELECT INTO, REFRESH MATERIALIZED VIEW or CREATE INDEX statement, or a query")));
}

/* explain_ddl(statement text) returns text */
Datum
explain_ddl(PG_FUNCTION_ARGS)
{
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	List	   *statements;
	Node	   *statement;
	Node	   *select;
	const char *strategy;
	char	   *reason;
	ErrorContextCallback error_context;

	CatalogRequire();
	error_context.callback = ExplainErrorCallback;
	error_context.arg = sql;
	error_context.previous = error_context_stack;
	error_context_stack = &error_context;
	statements = pg_parse_query(sql);
	if (list_length(statements) != 1)
		RefuseStatement();
	statement = linitial_node(RawStmt, statements)->stmt;

	if (IsA(statement, IndexStmt))
		strategy = STRATEGY_CONCURRENT_INDEX;
	else if (IsA(statement, RefreshMatViewStmt))
	{
		Relation	matview = table_openrv(((RefreshMatViewStmt *) statement)->relation,
										   AccessShareLock);

		if (matview->rd_rel->relkind != RELKIND_MATVIEW)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not a materialized view",
							RelationGetRelationName(matview))));
		strategy = QueryJobStrategyAtSubmit(get_view_query(matview), RelationGetRelid(matview),
											&reason);
		table_close(matview, NoLock);
	}
	else if ((select = StatementSelect(statement)) != NULL && IsA(select, SelectStmt))
	{
		RawStmt    *raw = makeNode(RawStmt);
		Query	   *query;

		raw->stmt = select;
		query = parse_analyze_fixedparams(raw, sql, NULL, 0, NULL);
		if (query->commandType != CMD_SELECT || query->utilityStmt != NULL)
			RefuseStatement();
		strategy = QueryJobStrategyAtSubmit(query, InvalidOid, &reason);
	}
	else
		RefuseStatement();
	error_context_stack = error_context.previous;
	PG_RETURN_TEXT_P(cstring_to_text(strategy));
}
