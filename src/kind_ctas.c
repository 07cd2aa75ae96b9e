/*-------------------------------------------------------------------------
 *
 * kind_ctas.c
 *	  Background CREATE TABLE ... AS and SELECT ... INTO.
 *
 * At submit, after the blocking statement's checks (the name, then the
 * query as its executor would check it), two relations are created, both as
 * the submitting role:
 *
 *	- the placeholder: a materialized view WITH NO DATA of the final name.
 *	  It reserves the name (a CREATE of it by anyone fails with the usual
 *	  "already exists" until the job ends), holds the query bound to OIDs
 *	  (the job's query, as for CREATE MATERIALIZED VIEW), cannot be read, and
 *	  records the dependencies on the base tables for the time of the job;
 *	- the hidden table: the statement itself WITH NO DATA under another
 *	  name, so that its columns, column names, UNLOGGED, WITH (...),
 *	  TABLESPACE and access method are exactly the blocking statement's, and
 *	  so are the privilege checks (CREATE on the schema and the tablespace).
 *	  It is then moved into the extension's schema, which nobody else can
 *	  use: nobody can see or change the partial content.
 *
 * The worker fills the hidden table (query_job.c).  The cut-over, in one
 * transaction, drops the placeholder and moves the hidden table into its
 * place under the placeholder's current name: an ordinary table owned by
 * the submitter, with no dependency on the base tables, as the blocking
 * statement leaves it.
 *
 * A CREATE TEMP TABLE ... AS, and a query that reads temporary tables or
 * uses parameters, cannot run in another session: they are refused in
 * background mode.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "commands/createas.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "background_ddl.h"
#include "capture.h"
#include "catalog_access.h"
#include "job_kind.h"
#include "placeholder.h"
#include "query_job.h"

static CreateTableAsStmt *
CreateStatement(JobSubmit *submit)
{
	return castNode(CreateTableAsStmt, submit->pstmt->utilityStmt);
}

/* CREATE TABLE ... AS / SELECT ... INTO, unless IF NOT EXISTS finds the name */
static bool
CtasAccepts(Node *parsetree)
{
	CreateTableAsStmt *stmt;
	Oid			namespace_oid;

	if (!IsA(parsetree, CreateTableAsStmt))
		return false;
	stmt = (CreateTableAsStmt *) parsetree;
	if (stmt->objtype != OBJECT_TABLE || stmt->into->skipData)
		return false;
	if (!stmt->if_not_exists || stmt->into->rel->relpersistence == RELPERSISTENCE_TEMP)
		return true;
	namespace_oid = RangeVarGetCreationNamespace(stmt->into->rel);
	return !OidIsValid(get_relname_relid(stmt->into->rel->relname, namespace_oid));
}

static bool
ContainsExternParam(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, ContainsExternParam, context, 0);
	return expression_tree_walker(node, ContainsExternParam, context);
}

/* What only the submitting session has cannot be computed in another */
static void
RefuseSessionBound(CreateTableAsStmt *stmt, Query *query)
{
	const char *why = NULL;

	if (stmt->into->rel->relpersistence == RELPERSISTENCE_TEMP)
		why = "a temporary table belongs to the session that creates it";
	else if (isQueryUsingTempRelation(query))
		why = "the query reads temporary tables, which only this session can see";
	else if (ContainsExternParam((Node *) query, NULL))
		why = "the query uses parameters, which only this session has";
	if (why != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot run as a background job",
						stmt->is_select_into ? "SELECT ... INTO" : "CREATE TABLE ... AS"),
				 errdetail("The job would run in another session, and %s.", why),
				 errhint("SET background_ddl = off to run it in this session.")));
}

/* The blocking statement's checks, in its order: the name, then the query */
static void
CtasValidate(JobSubmit *submit)
{
	CreateTableAsStmt *stmt = CreateStatement(submit);
	Query	   *query = castNode(Query, stmt->query);

	(void) CreateTableAsRelExists(stmt);
	RefuseSessionBound(stmt, query);
	PlaceholderCheckReads(QueryJobValidate(query, submit->query_string, submit->params,
										   submit->query_env));
}

/* Run a copy of the statement WITH NO DATA, as a table or a placeholder */
static Oid
CreateWithNoData(JobSubmit *submit, RangeVar *name, bool placeholder)
{
	PlannedStmt *pstmt = copyObject(submit->pstmt);
	CreateTableAsStmt *stmt = (CreateTableAsStmt *) pstmt->utilityStmt;
	IntoClause *into = stmt->into;
	Oid			namespace_oid = RangeVarGetCreationNamespace(name);
	Oid			relid;

	into->rel = name;
	into->skipData = true;
	stmt->if_not_exists = false;
	if (placeholder)
	{
		/* Only what reserves the name and holds the query */
		stmt->objtype = OBJECT_MATVIEW;
		stmt->is_select_into = false;
		into->rel->relpersistence = RELPERSISTENCE_PERMANENT;
		into->accessMethod = NULL;
		into->options = NIL;
		into->onCommit = ONCOMMIT_NOOP;
		into->tableSpaceName = NULL;
		into->viewQuery = copyObject(stmt->query);
	}
	submit->run_utility(submit, pstmt);
	CommandCounterIncrement();
	relid = get_relname_relid(name->relname, namespace_oid);
	if (!OidIsValid(relid))
		elog(ERROR, "relation \"%s\" was not created", name->relname);
	return relid;
}

/*
 * The placeholder of the final name, then the hidden table, which moves
 * into the extension's schema as ctas_<placeholder oid>.
 */
static void
CtasReserve(JobSubmit *submit)
{
	CreateTableAsStmt *stmt = CreateStatement(submit);
	RangeVar   *final_name = copyObject(stmt->into->rel);
	Oid			namespace_oid = RangeVarGetCreationNamespace(final_name);
	char	   *namespace_name = get_namespace_name(namespace_oid);
	RangeVar   *hidden_name;
	Relation	hidden;

	submit->target_oid = CreateWithNoData(submit, final_name, true);
	submit->target_name = quote_qualified_identifier(namespace_name, final_name->relname);

	hidden_name = makeRangeVar(namespace_name,
							   ChooseRelationName(final_name->relname, NULL, "bgddl",
												  namespace_oid, false),
							   -1);
	hidden_name->relpersistence = stmt->into->rel->relpersistence;
	submit->hidden_oid = CreateWithNoData(submit, hidden_name, false);
	hidden = table_open(submit->hidden_oid, AccessExclusiveLock);
	AlterTableNamespaceInternal(hidden, namespace_oid, CatalogRequire()->schema_oid,
								new_object_addresses());
	table_close(hidden, NoLock);
	CommandCounterIncrement();
	RenameRelationInternal(submit->hidden_oid, psprintf("ctas_%u", submit->target_oid),
						   true, false);
	CommandCounterIncrement();

	submit->strategy = QueryJobStrategyAtSubmit(castNode(Query, stmt->query), submit->target_oid,
												&submit->one_batch_reason);
}

static void
CtasStart(JobRun *run)
{
	run->rule_relid = run->job.target_oid;
	run->content_oid = run->job.hidden_oid;
	run->query_role = run->job.identity.owner_oid;
	QueryJobResume(run);
}

/*
 * In the cut-over transaction (query_job.c), once the content is complete:
 * the hidden table takes the placeholder's place and current name, and the
 * job succeeded.  The capture triggers are detached from the placeholder
 * first: dropping it must not lock the base tables.
 */
static void
CtasPublish(JobRun *run, int64 rows)
{
	CaptureTriggers triggers = {run->job.capture_triggers, run->job.capture_trigger_xmins};
	Oid			namespace_oid;
	char	   *name;
	Relation	content;

	PlaceholderLockExclusive(run->job.target_oid);
	namespace_oid = get_rel_namespace(run->job.target_oid);
	name = get_rel_name(run->job.target_oid);
	CaptureDetach(&triggers, run->job.target_oid);
	PlaceholderDrop(run->job.target_oid);

	content = table_open(run->content_oid, AccessExclusiveLock);
	AlterTableNamespaceInternal(content, RelationGetNamespace(content), namespace_oid,
								new_object_addresses());
	table_close(content, NoLock);
	CommandCounterIncrement();
	RenameRelationInternal(run->content_oid, name, true, false);
	CommandCounterIncrement();
	JobRunSucceeded(run, run->content_oid, true, rows);
}

static JobStepResult
CtasCutOver(JobRun *run)
{
	return QueryJobCutOver(run, CtasPublish);
}

static void
CtasDiscard(const BgddlJob *job, bool keep_target)
{
	if (!keep_target)
		PlaceholderDrop(job->target_oid);
	PlaceholderDrop(job->hidden_oid);
}

const JobKindRoutine ctas_kind_routine = {
	.stands_for = OBJECT_TABLE,
	.kind = JOB_KIND_CREATE_TABLE_AS,
	.accepts = CtasAccepts,
	.validate = CtasValidate,
	.reserve = CtasReserve,
	.start = CtasStart,
	.plan = QueryJobPlan,
	.backfill_step = QueryJobBackfillStep,
	.help_step = QueryJobHelpStep,
	.catch_up = QueryJobCatchUp,
	.cut_over = CtasCutOver,
	.discard = CtasDiscard,
};
