/*-------------------------------------------------------------------------
 *
 * query_functions.c
 *	  The functions a query may call and still be computed in batches, and
 *	  now() taken once per job.
 *
 * Batches run in many transactions, perhaps in several worker processes,
 * so a function may only be called in them if its result cannot change
 * from one batch to the next:
 *
 *	- immutable functions, of course;
 *	- built-in stable functions written in C whose result depends only on
 *	  their arguments, the settings (DateStyle, TimeZone, lc_time,
 *	  search_path...) and the role: the job has the submitter's role and
 *	  settings in every batch (job_identity.c), e.g. to_char, to_date,
 *	  date_trunc on timestamptz, casts between text and date/time types,
 *	  current_setting, current_user.  Not those that read the statistics,
 *	  the process or the session (pg_*, inet_*, txid_*, has_*_privilege),
 *	  nor built-in SQL functions (age(timestamp) reads current_date);
 *	- now(), transaction_timestamp(), statement_timestamp(),
 *	  CURRENT_TIMESTAMP, CURRENT_DATE and LOCALTIMESTAMP, which the worker
 *	  replaces by constants: the job's start (started_at), the same in every
 *	  batch and after a restart.  The blocking statement would use its
 *	  transaction's start; a background job is "as of" its start.
 *
 * Anything else (volatile functions, user-defined stable functions, which
 * may read tables whose changes are not captured, CURRENT_TIME and the
 * other time values with a precision) runs in one batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "query/query_functions.h"

/* Why a function cannot be called in batches, or NULL */
static char *
FunctionRefusal(Oid funcid)
{
	HeapTuple	tuple;
	Form_pg_proc proc;
	const char *name;
	char	   *refusal = NULL;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", funcid);
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	name = NameStr(proc->proname);
	if (proc->provolatile == PROVOLATILE_VOLATILE)
		refusal = psprintf("the query calls volatile function %s()", name);
	else if (proc->provolatile == PROVOLATILE_STABLE &&
			 (funcid >= FirstGenbkiObjectId || proc->prolang != INTERNALlanguageId ||
			  strncmp(name, "pg_", 3) == 0 || strncmp(name, "inet_", 5) == 0 ||
			  strncmp(name, "txid_", 5) == 0 || strncmp(name, "has_", 4) == 0))
		refusal = psprintf("the query calls stable function %s(), whose result may differ between batches",
						   name);
	ReleaseSysCache(tuple);
	return refusal;
}

static bool
FunctionRefused(Oid funcid, void *context)
{
	char	  **refusal = (char **) context;

	*refusal = FunctionRefusal(funcid);
	return *refusal != NULL;
}

static bool
RefusalWalker(Node *node, char **refusal)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, FunctionRefused, refusal))
		return true;
	if (IsA(node, SQLValueFunction))
	{
		switch (((SQLValueFunction *) node)->op)
		{
			case SVFOP_CURRENT_ROLE:
			case SVFOP_CURRENT_USER:
			case SVFOP_USER:
			case SVFOP_SESSION_USER:
			case SVFOP_CURRENT_CATALOG:
			case SVFOP_CURRENT_SCHEMA:
				break;			/* the job's role and settings: the same in every batch */
			default:
				*refusal = "the query uses CURRENT_TIME, LOCALTIME or a time value with a precision";
				return true;
		}
	}
	if (IsA(node, NextValueExpr))
	{
		*refusal = "the query calls nextval()";
		return true;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, RefusalWalker, refusal, 0);
	return expression_tree_walker(node, RefusalWalker, refusal);
}

/*
 * Why a query (with its time values pinned, see QueryPinJobStart) calls a
 * function whose result may differ between batches, or NULL.
 */
char *
QueryFunctionRefusal(Query *query)
{
	char	   *refusal = NULL;

	(void) query_tree_walker(query, RefusalWalker, &refusal, 0);
	return refusal;
}

static Const *
TimestampConst(Oid type, Datum value)
{
	return makeConst(type, -1, InvalidOid, sizeof(int64), value, false, FLOAT8PASSBYVAL);
}

static Node *
PinMutator(Node *node, TimestampTz *job_start)
{
	Datum		start = TimestampTzGetDatum(*job_start);

	if (node == NULL)
		return NULL;
	if (IsA(node, FuncExpr))
	{
		Oid			funcid = ((FuncExpr *) node)->funcid;

		if (funcid == F_NOW || funcid == F_TRANSACTION_TIMESTAMP ||
			funcid == F_STATEMENT_TIMESTAMP)
			return (Node *) TimestampConst(TIMESTAMPTZOID, start);
	}
	if (IsA(node, SQLValueFunction))
	{
		switch (((SQLValueFunction *) node)->op)
		{
			case SVFOP_CURRENT_TIMESTAMP:
				return (Node *) TimestampConst(TIMESTAMPTZOID, start);
			case SVFOP_LOCALTIMESTAMP:
				return (Node *) TimestampConst(TIMESTAMPOID,
											   DirectFunctionCall1(timestamptz_timestamp, start));
			case SVFOP_CURRENT_DATE:
				return (Node *) makeConst(DATEOID, -1, InvalidOid, sizeof(DateADT),
										  DirectFunctionCall1(timestamptz_date, start),
										  false, true);
			default:
				break;
		}
	}
	if (IsA(node, Query))
		return (Node *) query_tree_mutator((Query *) node, PinMutator, job_start, 0);
	return expression_tree_mutator(node, PinMutator, job_start);
}

/*
 * The query with now() and the current timestamp and date replaced by
 * job_start (CURRENT_DATE and LOCALTIMESTAMP in the current TimeZone: the
 * job's).  Returns a modified copy.
 */
Query *
QueryPinJobStart(Query *query, TimestampTz job_start)
{
	return query_tree_mutator(query, PinMutator, &job_start, 0);
}
