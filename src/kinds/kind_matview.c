/*-------------------------------------------------------------------------
 *
 * kind_matview.c
 *	  Background CREATE MATERIALIZED VIEW ... AS ... [WITH DATA].
 *
 * At submit, the statement is checked in the blocking statement's order
 * (the name, then the query as its executor would check it), and the same
 * statement WITH NO DATA creates the placeholder through the normal
 * ProcessUtility chain: that checks the CREATE privilege on the schema,
 * stores the view rule bound to OIDs (the job's query, as REFRESH uses it),
 * records the dependencies on the base tables, and leaves an unpopulated
 * materialized view that nobody can read.
 *
 * The worker fills the placeholder's own heap (query_job.c): it is the
 * content relation, unreadable until the cut-over, where one transaction
 * takes ACCESS EXCLUSIVE on it (nobody can be using it), marks it populated
 * and marks the job succeeded.  Both commit together.  Rows are ordinary
 * MVCC tuples of committed transactions, so no heap swap is needed and
 * relfrozenxid stays right.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/createas.h"
#include "commands/matview.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "catalog/catalog_access.h"
#include "citus/pg_citus.h"
#include "kinds/kind_placeholder.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_relation.h"
#include "query/query_estimate.h"
#include "query/query_job.h"
#include "query/query_submit.h"

static CreateTableAsStmt *
CreateStatement(KindSubmit *submit)
{
	return CheckedNode(CreateTableAsStmt, submit->pstmt->utilityStmt);
}

/*
 * CREATE MATERIALIZED VIEW ... WITH DATA, unless IF NOT EXISTS finds the
 * name; in the session if it reads a Citus table.
 */
static KindAcceptance
MatviewAccepts(Node *parsetree, const char **reason)
{
	CreateTableAsStmt *stmt;
	Oid			namespace_oid;
	Oid			citus_table;

	if (!IsA(parsetree, CreateTableAsStmt))
		return KIND_NOT_ACCEPTED;
	stmt = (CreateTableAsStmt *) parsetree;
	if (stmt->objtype != OBJECT_MATVIEW || stmt->into->skipData ||
		CheckedNode(Query, stmt->query)->commandType != CMD_SELECT)
		return KIND_NOT_ACCEPTED;
	if (stmt->if_not_exists)
	{
		namespace_oid = RangeVarGetCreationNamespace(stmt->into->rel);
		if (OidIsValid(get_relname_relid(stmt->into->rel->relname, namespace_oid)))
			return KIND_NOT_ACCEPTED;
	}
	if (OidIsValid(citus_table = PgCitusTableInQuery((Query *) stmt->query)))
	{
		*reason = PgCitusInSessionReason(citus_table);
		return KIND_IN_SESSION;
	}
	return KIND_ACCEPTED;
}

/*
 * The blocking statement's checks, in its order: the name, then the query.
 * A query that reads the results of unfinished jobs starts after them.
 */
static void
MatviewValidate(KindSubmit *submit)
{
	CreateTableAsStmt *stmt;
	Query	   *query;
	PlannedStmt *plan;

	/* The statement may change: to read the tables of jobs it starts after */
	submit->pstmt = copyObject(submit->pstmt);
	stmt = CreateStatement(submit);
	query = CheckedNode(Query, stmt->query);
	(void) CreateTableAsRelExists(stmt);
	plan = QueryJobValidate(query, submit->query_string, submit->params, submit->query_env);
	submit->after = KindPlaceholderDependencies(plan, query);
	submit->sources = KindQuerySources(plan, query);
	submit->source_effects = KIND_QUERY_SOURCE_EFFECTS;
	/* The view rule is parse analysis's copy of the query */
	stmt->into->viewQuery = copyObject((Node *) query);
}

/* The placeholder: the same statement WITH NO DATA */
static void
MatviewReserve(KindSubmit *submit)
{
	PlannedStmt *placeholder_stmt = copyObject(submit->pstmt);
	CreateTableAsStmt *placeholder = (CreateTableAsStmt *) placeholder_stmt->utilityStmt;
	RangeVar   *name = placeholder->into->rel;
	Oid			namespace_oid;

	placeholder->into->skipData = true;
	submit->run_utility(submit, placeholder_stmt);
	CommandCounterIncrement();

	namespace_oid = RangeVarGetCreationNamespace(name);
	submit->target_oid = get_relname_relid(name->relname, namespace_oid);
	if (!OidIsValid(submit->target_oid))
		elog(ERROR, "placeholder materialized view \"%s\" was not created", name->relname);
	submit->target_name = quote_qualified_identifier(get_namespace_name(namespace_oid),
													 name->relname);
	PgRelationSetExtensionMember(submit->target_oid, CatalogRequire()->extension_oid, true);
	submit->strategy = QueryJobStrategyAtSubmit(CheckedNode(Query, CreateStatement(submit)->query),
												submit->target_oid, &submit->one_batch_reason);
}

/* The placeholder is the query's rule relation and the content relation */
static void
MatviewStart(JobRun *run)
{
	QueryJobStart(run, run->job.target_oid, run->job.target_oid,
				  run->job.identity.owner_oid);
}

/*
 * In the cut-over transaction (query_job.c), once the content is complete:
 * the placeholder becomes an ordinary populated materialized view, and the
 * job succeeded.  Nobody can be using the placeholder, so taking it whole
 * costs no one.
 */
static void
MatviewPublish(JobRun *run, int64 rows)
{
	Relation	target;

	KindPlaceholderLock(run->job.target_oid);
	QueryJobAnalyzeContent(run->job.target_oid, run->job.identity.owner_oid);
	target = table_open(run->job.target_oid, NoLock);
	SetMatViewPopulatedState(target, true);
	PgRelationSetExtensionMember(run->job.target_oid, CatalogRequire()->extension_oid, false);
	JobRunSucceeded(run, run->job.target_oid, true, rows);
	table_close(target, NoLock);
}

static JobStepResult
MatviewCutOver(JobRun *run)
{
	return QueryJobCutOver(run, MatviewPublish);
}

static JobStepResult
MatviewCutOverPublish(JobRun *run)
{
	return QueryJobCutOverPublish(run, MatviewPublish);
}

static Oid
MatviewBuildHere(const BgddlJob *job)
{
	QueryJobBuildHere(job, job->target_oid, job->target_oid, job->identity.owner_oid,
					  MatviewPublish);
	return job->target_oid;
}

static void
MatviewDiscard(const BgddlJob *job, bool keep_target)
{
	QueryJobDiscard(job);
	if (!keep_target)
	{
		KindDropWaitingPlaceholders(job->id);
		PgRelationDrop(job->target_oid);
	}
}

/* explain_ddl: CREATE MATERIALIZED VIEW ... AS query */
static const char *
MatviewExplain(Node *raw_statement, const char *query_string)
{
	CreateTableAsStmt *stmt;

	if (!IsA(raw_statement, CreateTableAsStmt) ||
		(stmt = (CreateTableAsStmt *) raw_statement)->objtype != OBJECT_MATVIEW)
		return NULL;
	return QueryJobExplain(stmt->query, query_string);
}

static bool
MatviewEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	if (!IsA(raw_statement, CreateTableAsStmt) ||
		((CreateTableAsStmt *) raw_statement)->objtype != OBJECT_MATVIEW)
		return false;
	QueryJobEstimateSelect(((CreateTableAsStmt *) raw_statement)->query, query_string, estimate);
	return true;
}

const KindRoutine kind_matview_routine = {
	.name = "CREATE MATERIALIZED VIEW",
	.cut_over_publishes = true,
	.populates_target = true,
	.stands_for = OBJECT_MATVIEW,
	.accepts = MatviewAccepts,
	.validate = MatviewValidate,
	.reserve = MatviewReserve,
	.explain = MatviewExplain,
	.estimate = MatviewEstimate,
	.start = MatviewStart,
	.plan = QueryJobPlan,
	.backfill_step = QueryJobBackfillStep,
	.help_step = QueryJobHelpStep,
	.catch_up = QueryJobCatchUp,
	.writes_to_sources = QueryJobWritesToSources,
	.cut_over = MatviewCutOver,
	.cut_over_lock = QueryJobCutOverLock,
	.cut_over_publish = MatviewCutOverPublish,
	.restart_build = QueryJobRestartBuild,
	.paused = QueryJobPaused,
	.progress = QueryJobProgress,
	.keeps_on_table_of = QueryJobKeepsOnTableOf,
	.housekeeping = QueryJobHousekeeping,
	.cleanup = QueryJobCleanup,
	.discard = MatviewDiscard,
	.build_here = MatviewBuildHere,
};
