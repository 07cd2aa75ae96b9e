/*-------------------------------------------------------------------------
 *
 * query_submit.c
 *	  What the submitting session does with the query of a query job (a
 *	  materialized view, a CREATE TABLE AS, a REFRESH): check it as the
 *	  blocking statement's executor would, bind its parameters, and say
 *	  which strategy its job would use (the NOTICE at submit, explain_ddl).
 *	  The job's worker runs it (query_job.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "jit/jit.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/tcopprot.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "query/query_decompose.h"
#include "query/query_functions.h"
#include "query/query_submit.h"
#include "query/query_view_pullup.h"

/*
 * Check everything the blocking statement's executor would check before
 * producing its first row: rewrite, plan and start the executor in
 * EXPLAIN-only mode (privileges on tables and columns, row security, EXECUTE
 * on functions).  Returns the plan.  Caller has an active snapshot.
 */
PlannedStmt *
QueryJobValidate(Query *query, const char *query_string, ParamListInfo params,
				 QueryEnvironment *query_env)
{
	List	   *rewritten = QueryRewrite(copyObject(query));
	PlannedStmt *plan;
	QueryDesc  *query_desc;

	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for a background DDL query");

	plan = pg_plan_query(linitial_node(Query, rewritten), query_string, 0, params);
	/* Nothing runs: compiling the expressions (at executor start) is waste */
	plan->jitFlags = PGJIT_NONE;
	query_desc = CreateQueryDesc(plan, query_string, GetActiveSnapshot(),
								 InvalidSnapshot, None_Receiver, params, query_env, 0);
	ExecutorStart(query_desc, EXEC_FLAG_EXPLAIN_ONLY);
	ExecutorEnd(query_desc);
	FreeQueryDesc(query_desc);
	return plan;
}

/* Replace external parameters by their values in params (see QueryBindParams) */
static Node *
BindParamsMutator(Node *node, ParamListInfo params)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
	{
		Param	   *param = (Param *) node;
		ParamExternData workspace;
		ParamExternData *value = NULL;
		int16		typlen;
		bool		typbyval;
		Datum		datum = (Datum) 0;

		if (params != NULL && param->paramid > 0 && param->paramid <= params->numParams)
			value = params->paramFetch != NULL ?
				params->paramFetch(params, param->paramid, false, &workspace) :
				&params->params[param->paramid - 1];
		if (value == NULL || value->ptype != param->paramtype)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_PARAMETER),
					 errmsg("there is no parameter $%d", param->paramid)));
		get_typlenbyval(param->paramtype, &typlen, &typbyval);
		if (!value->isnull)
			datum = typlen == -1 ? PointerGetDatum(PG_DETOAST_DATUM_COPY(value->value)) :
				datumCopy(value->value, typbyval, typlen);
		return (Node *) makeConst(param->paramtype, param->paramtypmod, param->paramcollid,
								  typlen, datum, value->isnull, typbyval);
	}
	if (IsA(node, Query))
		return (Node *) query_tree_mutator((Query *) node, BindParamsMutator, params, 0);
	return expression_tree_mutator(node, BindParamsMutator, params);
}

/*
 * A copy of the query with every external parameter (CREATE TABLE ... AS
 * EXECUTE's, a PL/pgSQL variable) replaced by its value in params, as a
 * constant, bound once as the blocking statement binds them: a job's query
 * must stand on its own in another session.
 */
Query *
QueryBindParams(Query *query, ParamListInfo params)
{
	return (Query *) BindParamsMutator((Node *) copyObject(query), params);
}

/*
 * An analysed query as QueryOfRule gives it to the worker: rewritten, its
 * simple views pulled up, now() and its relatives pinned (any time decides
 * alike at submit)
 */
Query *
QueryJobRewritten(Query *query)
{
	List	   *rewritten = QueryRewrite(copyObject(query));
	Query	   *rewritten_query;

	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for a background DDL query");
	rewritten_query = linitial_node(Query, rewritten);
	QueryPullUpViews(rewritten_query);
	return QueryPinJobStart(rewritten_query, GetCurrentTransactionStartTimestamp());
}

/*
 * The strategy a job would use for a query, as the submitting role: for the
 * NOTICE at submit.  The worker decides again when it plans (privileges
 * may change meanwhile).
 */
char *
QueryJobStrategyAtSubmit(Query *query, Oid rule_relid, char **one_batch_reason)
{
	QueryDecomposition decomposition;

	QueryDecompose(QueryJobRewritten(query), rule_relid, GetUserId(), InvalidOid, false,
				   &decomposition);
	*one_batch_reason = decomposition.reason;
	return QueryStrategy(&decomposition);
}

/*
 * explain_ddl of a query (the SELECT of a statement, not analysed yet): the
 * strategy its job would use, as the calling role; NULL if it is not a
 * plain SELECT.
 */
const char *
QueryJobExplain(Node *raw_select, const char *query_string)
{
	RawStmt    *raw = makeNode(RawStmt);
	Query	   *query;
	char	   *reason;

	if (raw_select == NULL || !IsA(raw_select, SelectStmt))
		return NULL;
	/* SELECT ... INTO is CREATE TABLE AS */
	raw_select = copyObject(raw_select);
	((SelectStmt *) raw_select)->intoClause = NULL;
	raw->stmt = raw_select;
	query = parse_analyze_fixedparams(raw, query_string, NULL, 0, NULL);
	if (query->commandType != CMD_SELECT || query->utilityStmt != NULL)
		return NULL;
	return QueryJobStrategyAtSubmit(query, InvalidOid, &reason);
}
