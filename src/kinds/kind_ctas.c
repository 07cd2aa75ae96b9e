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
 * Parameters (CREATE TABLE ... AS EXECUTE, a PL/pgSQL function's variables)
 * are bound at submit, as the blocking statement binds them: the job's query
 * holds their values as constants.  A CREATE TEMP TABLE ... AS, and a query
 * that reads temporary tables, cannot run in another session: they run in
 * the submitting session, as if background_ddl were off.
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
#include "commands/prepare.h"
#include "executor/executor.h"
#include "commands/tablecmds.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "citus/pg_citus.h"
#include "kinds/kind_placeholder.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_relation.h"
#include "query/query_estimate.h"
#include "query/query_job.h"
#include "query/query_submit.h"

/* The hidden table's OID, in the job's kind_state */
#define STATE_HIDDEN_OID	"hidden_oid"

static CreateTableAsStmt *
CreateStatement(KindSubmit *submit)
{
	return CheckedNode(CreateTableAsStmt, submit->pstmt->utilityStmt);
}

/*
 * The prepared statement that CREATE TABLE ... AS EXECUTE runs, if it
 * exists and is a SELECT (otherwise PostgreSQL's own path reports it).
 */
static PreparedStatement *
PreparedSelect(ExecuteStmt *execute)
{
	PreparedStatement *prepared = FetchPreparedStatement(execute->name, false);

	if (prepared == NULL || prepared->plansource->raw_parse_tree == NULL ||
		!IsA(prepared->plansource->raw_parse_tree->stmt, SelectStmt))
		return NULL;
	return prepared;
}

/*
 * The EXECUTE of CREATE TABLE ... AS EXECUTE (which parse analysis leaves
 * as a utility Query around it), or NULL
 */
static ExecuteStmt *
StatementExecute(CreateTableAsStmt *stmt)
{
	Query	   *query = CheckedNode(Query, stmt->query);

	if (query->commandType == CMD_UTILITY && IsA(query->utilityStmt, ExecuteStmt))
		return (ExecuteStmt *) query->utilityStmt;
	return NULL;
}

/*
 * The analysed query of the statement: its own, or that of the prepared
 * statement it executes, analysed again as EXECUTE would (its parameters
 * still Params).  NULL if PostgreSQL's own path must report the statement.
 */
static Query *
StatementQuery(CreateTableAsStmt *stmt)
{
	ExecuteStmt *execute = StatementExecute(stmt);
	PreparedStatement *prepared;
	CachedPlanSource *source;

	if (execute == NULL)
		return CheckedNode(Query, stmt->query)->commandType == CMD_SELECT ?
			(Query *) stmt->query : NULL;
	if ((prepared = PreparedSelect(execute)) == NULL)
		return NULL;
	source = prepared->plansource;
	return parse_analyze_fixedparams(copyObject(source->raw_parse_tree), source->query_string,
									 source->param_types, source->num_params, NULL);
}

/*
 * CREATE TABLE ... AS / SELECT ... INTO (also AS EXECUTE), unless IF NOT
 * EXISTS finds the name.  What only this session has or sees (a temporary
 * table, made or read) runs here, and so does a query on Citus tables.
 */
static KindAcceptance
CtasAccepts(Node *parsetree, const char **reason)
{
	CreateTableAsStmt *stmt;
	Oid			namespace_oid;
	Query	   *query;
	Oid			citus_table;

	if (!IsA(parsetree, CreateTableAsStmt))
		return KIND_NOT_ACCEPTED;
	stmt = (CreateTableAsStmt *) parsetree;
	if (stmt->objtype != OBJECT_TABLE || stmt->into->skipData ||
		(query = StatementQuery(stmt)) == NULL)
		return KIND_NOT_ACCEPTED;
	if (stmt->if_not_exists && stmt->into->rel->relpersistence != RELPERSISTENCE_TEMP)
	{
		namespace_oid = RangeVarGetCreationNamespace(stmt->into->rel);
		if (OidIsValid(get_relname_relid(stmt->into->rel->relname, namespace_oid)))
			return KIND_NOT_ACCEPTED;
	}
	if (stmt->into->rel->relpersistence == RELPERSISTENCE_TEMP)
		*reason = "A temporary table belongs to the session that creates it.";
	else if (isQueryUsingTempRelation(query))
		*reason = "The query reads temporary tables, which only this session can see.";
	else if (OidIsValid(citus_table = PgCitusTableInQuery(query)))
		*reason = PgCitusInSessionReason(citus_table);
	return *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
}

/*
 * The values of the parameters of CREATE TABLE ... AS EXECUTE, evaluated
 * once, as EXECUTE evaluates them (its EvaluateParams is not exported);
 * or, for any other statement, the caller's (a PL/pgSQL function's
 * variables).  Values are copied into the current memory context.
 */
static ParamListInfo
StatementParams(KindSubmit *submit, CreateTableAsStmt *stmt)
{
	ExecuteStmt *execute;
	CachedPlanSource *source;
	ParseState *pstate;
	EState	   *estate;
	ParamListInfo values;
	int			i = 0;
	ListCell   *lc;

	if ((execute = StatementExecute(stmt)) == NULL)
		return submit->params;
	source = PreparedSelect(execute)->plansource;
	if (list_length(execute->params) != source->num_params)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("wrong number of parameters for prepared statement \"%s\"",
						execute->name),
				 errdetail("Expected %d parameters but got %d.",
						   source->num_params, list_length(execute->params))));
	if (source->num_params == 0)
		return NULL;
	pstate = make_parsestate(NULL);
	pstate->p_sourcetext = submit->query_string;
	estate = CreateExecutorState();
	values = makeParamList(source->num_params);
	foreach(lc, execute->params)
	{
		Node	   *expr = transformExpr(pstate, lfirst(lc), EXPR_KIND_EXECUTE_PARAMETER);
		Oid			given_type = exprType(expr);
		Node	   *coerced = coerce_to_target_type(pstate, expr, given_type,
													source->param_types[i], -1,
													COERCION_ASSIGNMENT,
													COERCE_IMPLICIT_CAST, -1);
		ParamExternData *value = &values->params[i];
		int16		typlen;
		bool		typbyval;

		if (coerced == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("parameter $%d of type %s cannot be coerced to the expected type %s",
							i + 1, format_type_be(given_type),
							format_type_be(source->param_types[i])),
					 errhint("You will need to rewrite or cast the expression."),
					 parser_errposition(pstate, exprLocation(lfirst(lc)))));
		assign_expr_collations(pstate, coerced);
		value->value = ExecEvalExprSwitchContext(ExecPrepareExpr((Expr *) coerced, estate),
												 GetPerTupleExprContext(estate),
												 &value->isnull);
		get_typlenbyval(source->param_types[i], &typlen, &typbyval);
		if (!value->isnull)
			value->value = datumCopy(value->value, typbyval, typlen);
		value->ptype = source->param_types[i];
		value->pflags = PARAM_FLAG_CONST;
		i++;
	}
	FreeExecutorState(estate);
	return values;
}

/*
 * The blocking statement's checks, in its order: the name, then the query.
 * The query's parameters become constants, bound once as the blocking
 * statement binds them, so that the job's query stands on its own: the
 * statement is rewritten to CREATE TABLE ... AS that query.
 */
static void
CtasValidate(KindSubmit *submit)
{
	CreateTableAsStmt *stmt = copyObject(CreateStatement(submit));
	Query	   *query;
	PlannedStmt *plan;

	(void) CreateTableAsRelExists(stmt);
	query = QueryBindParams(StatementQuery(stmt), StatementParams(submit, stmt));
	plan = QueryJobValidate(query, submit->query_string, NULL, submit->query_env);
	submit->after = KindPlaceholderDependencies(plan, query);
	submit->sources = KindQuerySources(plan, query);
	submit->source_effects = KIND_QUERY_SOURCE_EFFECTS;
	stmt->query = (Node *) query;
	submit->pstmt = copyObject(submit->pstmt);
	submit->pstmt->utilityStmt = (Node *) stmt;
}

/* Run a copy of the statement WITH NO DATA, as a table or a placeholder */
static Oid
CreateWithNoData(KindSubmit *submit, RangeVar *name, bool placeholder)
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
CtasReserve(KindSubmit *submit)
{
	CreateTableAsStmt *stmt = CreateStatement(submit);
	RangeVar   *final_name = copyObject(stmt->into->rel);
	Oid			namespace_oid = RangeVarGetCreationNamespace(final_name);
	char	   *namespace_name = get_namespace_name(namespace_oid);
	RangeVar   *hidden_name;
	Oid			hidden_oid;
	Relation	hidden;

	submit->target_oid = CreateWithNoData(submit, final_name, true);
	PgRelationSetExtensionMember(submit->target_oid, CatalogRequire()->extension_oid, true);
	submit->target_name = quote_qualified_identifier(namespace_name, final_name->relname);

	hidden_name = makeRangeVar(namespace_name,
							   ChooseRelationName(final_name->relname, NULL, "bgddl",
												  namespace_oid, false),
							   -1);
	hidden_name->relpersistence = stmt->into->rel->relpersistence;
	hidden_oid = CreateWithNoData(submit, hidden_name, false);
	hidden = table_open(hidden_oid, AccessExclusiveLock);
	AlterTableNamespaceInternal(hidden, namespace_oid, CatalogRequire()->schema_oid,
								new_object_addresses());
	table_close(hidden, NoLock);
	CommandCounterIncrement();
	RenameRelationInternal(hidden_oid, psprintf("ctas_%u", submit->target_oid), true, false);
	CommandCounterIncrement();
	PgRelationSetDecoded(hidden_oid, false);
	PgRelationSetExtensionMember(hidden_oid, CatalogRequire()->extension_oid, true);
	CatalogKindStateSetInt(&submit->kind_state, STATE_HIDDEN_OID, hidden_oid);

	submit->strategy = QueryJobStrategyAtSubmit(CheckedNode(Query, stmt->query), submit->target_oid,
												&submit->one_batch_reason);
}

/* The hidden table, which receives the rows */
static Oid
HiddenTable(const BgddlJob *job)
{
	return (Oid) CatalogKindStateInt(job->kind_state, STATE_HIDDEN_OID);
}

/* The placeholder holds the query; the hidden table receives its rows */
static void
CtasStart(JobRun *run)
{
	QueryJobStart(run, run->job.target_oid, HiddenTable(&run->job),
				  run->job.identity.owner_oid);
}

/*
 * In the cut-over transaction (query_job.c), once the content is complete:
 * the hidden table takes the placeholder's place and current name, and the
 * job succeeded.  (The capture triggers were detached from the placeholder
 * before: dropping it must not lock the base tables.)
 */
static void
CtasPublish(JobRun *run, int64 rows)
{
	Oid			content_oid = QueryRunOf(run)->content_oid;
	Oid			namespace_oid;
	char	   *name;
	Relation	content;

	KindPlaceholderLock(run->job.target_oid);
	QueryJobAnalyzeContent(content_oid, run->job.identity.owner_oid);
	namespace_oid = get_rel_namespace(run->job.target_oid);
	name = get_rel_name(run->job.target_oid);
	PgRelationDrop(run->job.target_oid);

	content = table_open(content_oid, AccessExclusiveLock);
	AlterTableNamespaceInternal(content, RelationGetNamespace(content), namespace_oid,
								new_object_addresses());
	table_close(content, NoLock);
	CommandCounterIncrement();
	RenameRelationInternal(content_oid, name, true, false);
	CommandCounterIncrement();
	PgRelationSetDecoded(content_oid, true);
	PgRelationSetExtensionMember(content_oid, CatalogRequire()->extension_oid, false);
	JobRunSucceeded(run, content_oid, true, rows);
}

static JobStepResult
CtasCutOver(JobRun *run)
{
	return QueryJobCutOver(run, CtasPublish);
}

static JobStepResult
CtasCutOverPublish(JobRun *run)
{
	return QueryJobCutOverPublish(run, CtasPublish);
}

/* The hidden table, filled here, takes the placeholder's place */
static Oid
CtasBuildHere(const BgddlJob *job)
{
	QueryJobBuildHere(job, job->target_oid, HiddenTable(job), job->identity.owner_oid,
					  CtasPublish);
	return HiddenTable(job);
}

static Oid
CtasResult(const BgddlJob *job)
{
	return HiddenTable(job);
}

static void
CtasDiscard(const BgddlJob *job, bool keep_target)
{
	QueryJobDiscard(job);
	/* The views of the jobs waiting for it read the hidden table */
	KindDropWaitingPlaceholders(job->id);
	if (!keep_target)
		PgRelationDrop(job->target_oid);
	PgRelationDrop(HiddenTable(job));
}

/* explain_ddl: CREATE TABLE ... AS query, SELECT ... INTO, or a query */
static const char *
CtasExplain(Node *raw_statement, const char *query_string)
{
	if (IsA(raw_statement, CreateTableAsStmt) &&
		((CreateTableAsStmt *) raw_statement)->objtype == OBJECT_TABLE)
		return QueryJobExplain(((CreateTableAsStmt *) raw_statement)->query, query_string);
	return QueryJobExplain(raw_statement, query_string);
}

/* A CREATE TABLE AS, a SELECT ... INTO, or a bare query (what its table would hold) */
static bool
CtasEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	if (IsA(raw_statement, CreateTableAsStmt) &&
		((CreateTableAsStmt *) raw_statement)->objtype == OBJECT_TABLE)
		raw_statement = ((CreateTableAsStmt *) raw_statement)->query;
	if (!IsA(raw_statement, SelectStmt))
		return false;
	QueryJobEstimateSelect(raw_statement, query_string, estimate);
	return true;
}

const KindRoutine kind_ctas_routine = {
	.name = "CREATE TABLE AS",
	.cut_over_publishes = true,
	.stands_for = OBJECT_TABLE,
	.replaces_placeholder = true,
	.accepts = CtasAccepts,
	.validate = CtasValidate,
	.reserve = CtasReserve,
	.explain = CtasExplain,
	.estimate = CtasEstimate,
	.start = CtasStart,
	.plan = QueryJobPlan,
	.backfill_step = QueryJobBackfillStep,
	.help_step = QueryJobHelpStep,
	.catch_up = QueryJobCatchUp,
	.writes_to_sources = QueryJobWritesToSources,
	.cut_over = CtasCutOver,
	.cut_over_lock = QueryJobCutOverLock,
	.cut_over_publish = CtasCutOverPublish,
	.restart_build = QueryJobRestartBuild,
	.paused = QueryJobPaused,
	.progress = QueryJobProgress,
	.keeps_on_table_of = QueryJobKeepsOnTableOf,
	.housekeeping = QueryJobHousekeeping,
	.cleanup = QueryJobCleanup,
	.discard = CtasDiscard,
	.build_here = CtasBuildHere,
	.result = CtasResult,
};
