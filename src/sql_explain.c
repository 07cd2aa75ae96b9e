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

#include "fmgr.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"

#include "catalog_access.h"
#include "kind.h"

PG_FUNCTION_INFO_V1(explain_ddl);

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
			 errmsg("explain_ddl takes one %s statement, or a query", KindNames())));
}

/* explain_ddl(statement text) returns text: each kind explains its own */
Datum
explain_ddl(PG_FUNCTION_ARGS)
{
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	List	   *statements;
	const char *strategy = NULL;
	ErrorContextCallback error_context;

	CatalogRequire();
	error_context.callback = ExplainErrorCallback;
	error_context.arg = sql;
	error_context.previous = error_context_stack;
	error_context_stack = &error_context;
	statements = pg_parse_query(sql);
	if (list_length(statements) == 1)
		strategy = KindExplain(linitial_node(RawStmt, statements)->stmt, sql);
	if (strategy == NULL)
		RefuseStatement();
	error_context_stack = error_context.previous;
	PG_RETURN_TEXT_P(cstring_to_text(strategy));
}
