/*-------------------------------------------------------------------------
 *
 * submit.c
 *	  Submitting DDL as a background job: the ProcessUtility hook.
 *
 * While background_ddl is on, CREATE MATERIALIZED VIEW ... WITH DATA does
 * here everything the blocking statement would do except computing the
 * content:
 *
 *	1. Validate as the blocking statement would.  Parse analysis has already
 *	   run (syntax errors, missing tables and columns).  We then rewrite and
 *	   plan the query and start the executor in EXPLAIN-only mode, which
 *	   checks the privileges on every table and function the query uses,
 *	   with the same errors as the blocking statement.
 *	2. Create the placeholder: the same statement WITH NO DATA, through the
 *	   normal ProcessUtility chain.  That checks the name conflict and the
 *	   CREATE privilege on the schema, stores the view rule bound to OIDs
 *	   (so the job later runs with the name resolution of the submit),
 *	   records dependencies on the base tables, and leaves an unpopulated
 *	   materialized view that errors when queried.
 *	3. Persist the job row, in the same transaction: a rolled-back submit
 *	   leaves neither job nor placeholder.
 *	4. After commit, wake the scheduler of this database.
 *
 * REFRESH and DROP of a placeholder are handed to placeholder.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "background_ddl.h"
#include "job_catalog.h"
#include "placeholder.h"
#include "shared_state.h"
#include "submit.h"

/*
 * Settings of the submitting session that can change a query's result, and
 * that the worker therefore reapplies: output formats, locale-dependent
 * formatting, text search default, row security, search_path (for functions
 * that look up names at run time) and work_mem.
 */
static const char *const captured_settings[] = {
	"DateStyle", "IntervalStyle", "TimeZone", "extra_float_digits",
	"lc_monetary", "lc_numeric", "lc_time", "bytea_output", "xmlbinary",
	"xmloption", "default_text_search_config", "row_security", "search_path",
	"work_mem"
};

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Id of the last job this session submitted, for last_ddl_job() */
static int64 last_job_id = 0;
static int64 last_job_id_at_xact_start = 0;
static bool wake_at_commit = false;

/* Jobs submitted by the current transaction: they start when it commits */
static List *jobs_of_this_xact = NIL;

static void BgddlProcessUtility(PlannedStmt *pstmt, const char *queryString,
								bool readOnlyTree, ProcessUtilityContext context,
								ParamListInfo params, QueryEnvironment *queryEnv,
								DestReceiver *dest, QueryCompletion *qc);
static void SubmitXactCallback(XactEvent event, void *arg);

void
SubmitHookInstall(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = BgddlProcessUtility;
	RegisterXactCallback(SubmitXactCallback, NULL);
}

int64
SubmitLastJobId(void)
{
	return last_job_id;
}

/* Wake the scheduler when the current transaction commits */
void
SubmitWakeAtCommit(void)
{
	wake_at_commit = true;
}

/* Was this job submitted by the current (uncommitted) transaction? */
bool
SubmitJobIsUncommitted(int64 job_id)
{
	ListCell   *lc;

	foreach(lc, jobs_of_this_xact)
	{
		if (*(int64 *) lfirst(lc) == job_id)
			return true;
	}
	return false;
}

/* The submitting session's values of captured_settings, as name/value pairs */
static List *
SubmitCaptureSettings(void)
{
	List	   *settings = NIL;

	for (int i = 0; i < lengthof(captured_settings); i++)
	{
		settings = lappend(settings, pstrdup(captured_settings[i]));
		settings = lappend(settings,
						   GetConfigOptionByName(captured_settings[i], NULL, false));
	}
	return settings;
}

static void
CallNextProcessUtility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/*
 * Check everything the blocking statement's executor would check before
 * producing its first row: rewrite, plan and start the executor in
 * EXPLAIN-only mode (privileges on tables and columns, row security, EXECUTE
 * on functions).  Caller has an active snapshot.
 */
static void
ValidateQueryLikeExecutor(Query *query, const char *queryString,
						  ParamListInfo params, QueryEnvironment *queryEnv)
{
	List	   *rewritten = QueryRewrite(copyObject(query));
	PlannedStmt *plan;
	QueryDesc  *query_desc;

	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for CREATE MATERIALIZED VIEW");

	plan = pg_plan_query(linitial_node(Query, rewritten), queryString, 0, params);
	query_desc = CreateQueryDesc(plan, queryString, GetActiveSnapshot(),
								 InvalidSnapshot, None_Receiver, params, queryEnv, 0);
	ExecutorStart(query_desc, EXEC_FLAG_EXPLAIN_ONLY);
	ExecutorEnd(query_desc);
	FreeQueryDesc(query_desc);
}

/*
 * Submit CREATE MATERIALIZED VIEW ... WITH DATA as a job.  Returns false if
 * the statement is not one we take (it then runs normally).
 */
static bool
SubmitCreateMatView(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					QueryCompletion *qc)
{
	CreateTableAsStmt *stmt = (CreateTableAsStmt *) pstmt->utilityStmt;
	IntoClause *into = stmt->into;
	PlannedStmt *placeholder_stmt;
	CreateTableAsStmt *placeholder_ctas;
	BgddlJobSubmission submission;
	Oid			namespace_oid;
	Oid			target_oid;
	int64		job_id;

	if (stmt->objtype != OBJECT_MATVIEW || into->skipData)
		return false;

	namespace_oid = RangeVarGetCreationNamespace(into->rel);
	if (stmt->if_not_exists &&
		OidIsValid(get_relname_relid(into->rel->relname, namespace_oid)))
		return false;			/* the normal path says "already exists, skipping" */

	if (!JobCatalogExists())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						BGDDL_EXTENSION_NAME),
				 errdetail("background_ddl is on, so this statement would run as a background job."),
				 errhint("Run CREATE EXTENSION %s, or SET background_ddl = off.",
						 BGDDL_EXTENSION_NAME)));

	ValidateQueryLikeExecutor(castNode(Query, stmt->query), queryString,
							  params, queryEnv);

	/* The placeholder: the same statement WITH NO DATA */
	placeholder_stmt = copyObject(pstmt);
	placeholder_ctas = (CreateTableAsStmt *) placeholder_stmt->utilityStmt;
	placeholder_ctas->into->skipData = true;
	CallNextProcessUtility(placeholder_stmt, queryString, false, context, params,
						   queryEnv, None_Receiver, qc);
	CommandCounterIncrement();

	target_oid = get_relname_relid(into->rel->relname, namespace_oid);
	if (!OidIsValid(target_oid))
		elog(ERROR, "placeholder materialized view \"%s\" was not created",
			 into->rel->relname);

	submission.owner_oid = GetUserId();
	submission.kind = JOB_KIND_CREATE_MATVIEW;
	submission.target_oid = target_oid;
	submission.target_name =
		quote_qualified_identifier(get_namespace_name(namespace_oid),
								   into->rel->relname);
	submission.command = queryString;
	submission.settings = SubmitCaptureSettings();
	job_id = JobInsert(&submission);

	last_job_id = job_id;
	wake_at_commit = true;
	{
		MemoryContext old_context = MemoryContextSwitchTo(TopTransactionContext);
		int64	   *submitted = palloc(sizeof(int64));

		*submitted = job_id;
		jobs_of_this_xact = lappend(jobs_of_this_xact, submitted);
		MemoryContextSwitchTo(old_context);
	}

	ereport(NOTICE,
			(errmsg("background DDL job " INT64_FORMAT " submitted for %s",
					job_id, submission.target_name)));
	return true;
}

static void
BgddlProcessUtility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, CreateTableAsStmt) && background_ddl_enabled)
	{
		if (SubmitCreateMatView(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, qc))
			return;
	}
	else if (IsA(parsetree, RefreshMatViewStmt))
		PlaceholderCheckRefresh((RefreshMatViewStmt *) parsetree);
	else if (IsA(parsetree, DropStmt))
		PlaceholderCancelDroppedJobs((DropStmt *) parsetree);

	CallNextProcessUtility(pstmt, queryString, readOnlyTree, context, params,
						   queryEnv, dest, qc);
}

/*
 * A committed submit wakes the scheduler at once (no polling delay); an
 * aborted one forgets its job id.
 */
static void
SubmitXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			if (wake_at_commit)
				BgddlWakeDatabase(MyDatabaseId);
			wake_at_commit = false;
			last_job_id_at_xact_start = last_job_id;
			jobs_of_this_xact = NIL;	/* freed with TopTransactionContext */
			break;
		case XACT_EVENT_ABORT:
			wake_at_commit = false;
			last_job_id = last_job_id_at_xact_start;
			jobs_of_this_xact = NIL;
			break;
		default:
			break;
	}
}
