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

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "catalog/catalog_access.h"
#include "engine/kind.h"
#include "session/session_order.h"

PG_FUNCTION_INFO_V1(explain_ddl);
PG_FUNCTION_INFO_V1(estimate_ddl);

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

/*
 * Parse the one statement of sql, with errors pointed into it until the
 * caller pops error_context; NULL if there is not exactly one
 */
static pg_noinline Node *
ParseOneStatement(char *sql, ErrorContextCallback *error_context)
{
	List	   *statements;

	error_context->callback = ExplainErrorCallback;
	error_context->arg = sql;
	error_context->previous = error_context_stack;
	error_context_stack = error_context;
	statements = pg_parse_query(sql);
	return list_length(statements) == 1 ? linitial_node(RawStmt, statements)->stmt : NULL;
}

pg_attribute_noreturn()
static void
RefuseStatement(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("explain_ddl takes one %s statement, or a query", KindNames(false))));
}

/* explain_ddl(statement text) returns text: each kind explains its own */
Datum
explain_ddl(PG_FUNCTION_ARGS)
{
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Node	   *raw;
	const char *strategy = NULL;
	ErrorContextCallback error_context;

	volatile bool checks_were_on;

	CatalogRequire();
	raw = ParseOneStatement(sql, &error_context);
	/* Nothing runs: the session's order does not concern it */
	checks_were_on = SessionOrderChecks(false);
	PG_TRY();
	{
		if (raw != NULL)
			strategy = KindExplain(raw, sql);
	}
	PG_FINALLY();
	{
		(void) SessionOrderChecks(checks_were_on);
	}
	PG_END_TRY();
	if (strategy == NULL)
		RefuseStatement();
	error_context_stack = error_context.previous;
	PG_RETURN_TEXT_P(cstring_to_text(strategy));
}

/*
 * estimate_ddl(statement text): what the job of a CREATE MATERIALIZED VIEW,
 * CREATE TABLE AS (or SELECT ... INTO), REFRESH MATERIALIZED VIEW or of a
 * query would produce and cost, measured on a rolled-back sample of its
 * chunks (query_estimate.c); of a CREATE INDEX, on a rolled-back build on
 * a sample of the table (index_estimate.c): (strategy, rows, bytes,
 * wal_bytes, seconds, locks, sampled_blocks, total_blocks).
 */
Datum
estimate_ddl(PG_FUNCTION_ARGS)
{
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Node	   *raw;
	JobEstimate estimate;
	ErrorContextCallback error_context;
	TupleDesc	desc;
	Datum		values[8];
	bool		nulls[8] = {false};

	CatalogRequire();
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "estimate_ddl must return a record");
	raw = ParseOneStatement(sql, &error_context);
	if (raw == NULL || !SessionOrderFreeEstimate(raw, sql, &estimate))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("estimate_ddl takes one %s statement, or a query", KindNames(true)),
				 errhint("explain_ddl says how the other statements would run.")));
	error_context_stack = error_context.previous;

	values[0] = CStringGetTextDatum(estimate.strategy);
	values[1] = Int64GetDatum(estimate.rows);
	values[2] = Int64GetDatum(estimate.bytes);
	values[3] = Int64GetDatum(estimate.wal_bytes);
	values[4] = Float8GetDatum(estimate.seconds);
	nulls[4] = estimate.seconds < 0;
	values[5] = CStringGetTextDatum(estimate.locks);
	values[6] = Int64GetDatum(estimate.sampled_blocks);
	values[7] = Int64GetDatum(estimate.total_blocks);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
