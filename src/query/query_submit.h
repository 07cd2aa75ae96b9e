/*-------------------------------------------------------------------------
 *
 * query_submit.h
 *	  What the submitting session does with the query of a query job.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_QUERY_SUBMIT_H
#define BGDDL_QUERY_SUBMIT_H

#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

extern PlannedStmt *QueryJobValidate(Query *query, const char *query_string,
									 ParamListInfo params, QueryEnvironment *query_env);
extern Query *QueryBindParams(Query *query, ParamListInfo params);
extern Query *QueryJobRewritten(Query *query);
extern char *QueryJobStrategyAtSubmit(Query *query, Oid rule_relid, char **one_batch_reason);
extern const char *QueryJobExplain(Node *raw_select, const char *query_string);

#endif							/* BGDDL_QUERY_SUBMIT_H */
