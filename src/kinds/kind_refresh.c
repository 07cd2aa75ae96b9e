/*-------------------------------------------------------------------------
 *
 * kind_refresh.c
 *	  Background REFRESH MATERIALIZED VIEW [CONCURRENTLY].
 *
 * At submit, the blocking statement's checks: ownership, a materialized
 * view, CONCURRENTLY's conditions (populated, a usable unique index), no
 * other job refreshing or building it, and the view's query as its owner
 * would run it (privileges, row security).
 *
 * The worker computes the new content into a hidden heap (pg_heap_swap.c) in
 * checkpointed batches, capturing changes like any query job
 * (query_job.c), while the old content stays readable.  With or without
 * CONCURRENTLY written, the view is never locked against readers during
 * the build.  As REFRESH does, the query runs as the view's owner under
 * SECURITY_RESTRICTED_OPERATION.
 *
 * The cut-over transaction finishes the content, builds copies of the
 * view's indexes on the hidden heap (readers still see the old content),
 * then takes ACCESS EXCLUSIVE on the view (LockViewForSwap: readers never
 * wait behind it longer than the lock timeout) and swaps the storage
 * (pg_heap_swap.c): a time independent of the view's size.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "commands/matview.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "catalog/pg_am.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "parser/parser.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "citus/pg_citus.h"
#include "engine/job_step.h"
#include "kinds/kind_placeholder.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_heap_swap.h"
#include "query/query_estimate.h"
#include "query/query_job.h"
#include "query/query_submit.h"

/* How long the cut-over asks for the view's lock without queueing */
#define SWAP_LOCK_PATIENCE_MS	30000

/* REFRESH ... WITH DATA; in the session if the view reads a Citus table */
static KindAcceptance
RefreshAccepts(Node *parsetree, const char **reason)
{
	RefreshMatViewStmt *stmt;
	Oid			relid;
	Oid			citus_table = InvalidOid;

	if (!IsA(parsetree, RefreshMatViewStmt) || ((RefreshMatViewStmt *) parsetree)->skipData)
		return KIND_NOT_ACCEPTED;
	stmt = (RefreshMatViewStmt *) parsetree;
	if (!PgCitusInstalled())
		return KIND_ACCEPTED;
	relid = RangeVarGetRelid(stmt->relation, AccessShareLock, true);
	if (OidIsValid(relid) && get_rel_relkind(relid) == RELKIND_MATVIEW)
	{
		Relation	matview = table_open(relid, NoLock);

		citus_table = PgCitusTableInQuery(get_view_query(matview));
		table_close(matview, NoLock);
	}
	if (!OidIsValid(citus_table))
		return KIND_ACCEPTED;
	*reason = PgCitusInSessionReason(citus_table);
	return KIND_IN_SESSION;
}

/*
 * Does the view have the unique index REFRESH ... CONCURRENTLY needs (as
 * matview.c judges it): a valid, immediate, btree unique index on plain
 * columns, without a predicate?
 */
static bool
HasUsableUniqueIndex(Relation matview)
{
	ListCell   *lc;
	bool		found = false;

	foreach(lc, RelationGetIndexList(matview))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = index->rd_index;
		bool		plain_columns = form->indnatts > 0;

		for (int i = 0; i < form->indnatts; i++)
			plain_columns &= form->indkey.values[i] > 0;
		if (form->indisunique && form->indimmediate && form->indisvalid &&
			index->rd_rel->relam == BTREE_AM_OID && plain_columns &&
			RelationGetIndexPredicate(index) == NIL)
			found = true;
		index_close(index, AccessShareLock);
	}
	return found;
}

/*
 * The view and the statement's checks, in the blocking statement's order;
 * in *after the job creating the view, if it is still building it (the
 * view is populated when the REFRESH starts, after it)
 */
static Relation
OpenRefreshedView(KindSubmit *submit, int64 *after)
{
	RefreshMatViewStmt *stmt = CheckedNode(RefreshMatViewStmt, submit->pstmt->utilityStmt);
	Oid			relid = RangeVarGetRelidExtended(stmt->relation, AccessShareLock, 0,
												 RangeVarCallbackOwnsTable, NULL);
	Relation	matview = table_open(relid, NoLock);

	if (matview->rd_rel->relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a materialized view", RelationGetRelationName(matview))));
	KindCheckPlaceholderRefresh(stmt, after);
	if (stmt->concurrent && !RelationIsPopulated(matview) && *after == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("CONCURRENTLY cannot be used when the materialized view is not populated")));
	if (stmt->concurrent && !HasUsableUniqueIndex(matview))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot refresh materialized view \"%s\" concurrently",
						quote_qualified_identifier(get_namespace_name(RelationGetNamespace(matview)),
												   RelationGetRelationName(matview))),
				 errhint("Create a unique index with no WHERE clause on one or more columns of the materialized view.")));
	return matview;
}

static void
RefreshValidate(KindSubmit *submit)
{
	int64		after;
	Relation	matview = OpenRefreshedView(submit, &after);
	PlannedStmt *plan;
	Oid			saved_userid;
	int			saved_sec_context;
	int			guc_nest_level;

	/* The query, as its owner runs it in REFRESH */
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(matview->rd_rel->relowner,
						   saved_sec_context | SECURITY_RESTRICTED_OPERATION);
	guc_nest_level = NewGUCNestLevel();
	plan = QueryJobValidate(get_view_query(matview), submit->query_string, submit->params,
							submit->query_env);
	submit->sources = KindQuerySources(plan, get_view_query(matview));
	submit->source_effects = KIND_QUERY_SOURCE_EFFECTS;
	submit->strategy = QueryJobStrategyAtSubmit(get_view_query(matview), RelationGetRelid(matview),
												&submit->one_batch_reason);
	AtEOXact_GUC(false, guc_nest_level);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	table_close(matview, NoLock);
	if (after != 0)
		submit->after = lappend(submit->after, memcpy(palloc(sizeof(int64)), &after, sizeof(int64)));
}

/* Nothing to reserve: the view exists; its job makes a second REFRESH fail */
static void
RefreshReserve(KindSubmit *submit)
{
	RefreshMatViewStmt *stmt = CheckedNode(RefreshMatViewStmt, submit->pstmt->utilityStmt);
	Oid			relid = RangeVarGetRelid(stmt->relation, AccessShareLock, false);

	submit->target_oid = relid;
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 get_rel_name(relid));
}

/*
 * REFRESH runs the view's query as the view's owner, into the hidden heap
 * (made now, the first time)
 */
static void
RefreshStart(JobRun *run)
{
	QueryJobStartReplacing(run, "refresh", NIL);
}

/*
 * ACCESS EXCLUSIVE on the view, to swap its storage: in a worker, as a job
 * takes a lock that others use (JobStepLockRelation), so that readers of
 * the view never wait behind the cut-over longer than the lock timeout.
 * The cut-over has done its work by then, so it asks without queueing for
 * as long as SWAP_LOCK_PATIENCE_MS (which costs nobody but the snapshot it
 * holds) before it queues briefly; if the lock does not come, the worker
 * gives its slot back and the cut-over is done again later.  In the
 * submitting session, as REFRESH takes it.
 */
static void
LockViewForSwap(Oid relid)
{
	JobStepLockRelation(relid, AccessExclusiveLock, SWAP_LOCK_PATIENCE_MS);
}

/* Did the user write REFRESH ... CONCURRENTLY? */
static bool
WrittenConcurrently(const BgddlJob *job)
{
	RawStmt    *raw = linitial_node(RawStmt, raw_parser(job->command, RAW_PARSE_DEFAULT));

	return CheckedNode(RefreshMatViewStmt, raw->stmt)->concurrent;
}

/*
 * REFRESH ... CONCURRENTLY's check of the new content (matview.c's, in its
 * words): no two rows alike without a null column, or the error names the
 * first.  The statement is prepared as the catalog role (the hidden heap
 * lives in our schema) and run as the view's owner, under
 * SECURITY_RESTRICTED_OPERATION: reading the rows and printing one (the
 * types' output functions) is the owner's doing, as in REFRESH.
 */
static void
CheckNoDuplicateRows(JobRun *run, Relation matview)
{
	QueryRun   *q = QueryRunOf(run);
	char	   *hidden = quote_qualified_identifier(get_namespace_name(get_rel_namespace(q->content_oid)),
													get_rel_name(q->content_oid));
	CatalogAccess access;
	SPIPlanPtr	plan;
	char	   *duplicate = NULL;

	CatalogAccessBegin(&access);
	plan = SPI_prepare(psprintf("SELECT newdata.*::%s FROM %s newdata "
								"WHERE newdata.* IS NOT NULL AND EXISTS "
								"(SELECT 1 FROM %s newdata2 WHERE newdata2.* IS NOT NULL "
								"AND newdata2.* OPERATOR(pg_catalog.*=) newdata.* "
								"AND newdata2.ctid OPERATOR(pg_catalog.<>) newdata.ctid)",
								hidden, hidden, hidden), 0, NULL);
	if (plan == NULL)
		elog(ERROR, "could not prepare the duplicate check of background DDL job %lld",
			 (long long) run->job.id);
	JobQueryBegin(q->query_role, false);
	/* Not read-only: it must see the rows this transaction just wrote */
	if (SPI_execute_plan(plan, NULL, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "the duplicate check of background DDL job %lld failed",
			 (long long) run->job.id);
	if (SPI_processed > 0)
		duplicate = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	JobQueryEnd();
	CatalogAccessEnd(&access);
	if (duplicate != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("new data for materialized view \"%s\" contains duplicate rows without any null columns",
						RelationGetRelationName(matview)),
				 errdetail("Row: %s", duplicate)));
}

/*
 * What REFRESH ... CONCURRENTLY checks when it publishes, as the user wrote
 * it: the new content has no duplicate rows, and the view still has the
 * unique index it needs (one may have been dropped since the submit).
 */
static void
CheckConcurrentRefresh(JobRun *run, Relation matview)
{
	CheckNoDuplicateRows(run, matview);
	/* PostgreSQL's own text and SQLSTATE (an elog in refresh_by_match_merge) */
	if (!HasUsableUniqueIndex(matview))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not find suitable unique index on materialized view")));
}

/*
 * In the cut-over transaction (query_job.c), once the content is complete:
 * build the view's indexes on the hidden heap, then swap the storage under
 * a short ACCESS EXCLUSIVE lock, and the job succeeded.
 */
static void
RefreshPublish(JobRun *run, int64 rows)
{
	Relation	matview;
	Relation	hidden;
	List	   *old_indexes;
	List	   *new_indexes;
	bool		concurrently = WrittenConcurrently(&run->job);

	JobRunRecordPhase(run, JOB_PHASE_BUILDING_INDEXES);
	LockRelationOid(run->job.target_oid, ShareUpdateExclusiveLock);
	matview = table_open(run->job.target_oid, NoLock);
	if (concurrently)
		CheckConcurrentRefresh(run, matview);
	hidden = table_open(QueryRunOf(run)->content_oid, AccessExclusiveLock);
	PgHeapBuildIndexCopies(matview, hidden, NIL, NIL, concurrently, false, &old_indexes,
						   &new_indexes);
	table_close(hidden, NoLock);
	table_close(matview, NoLock);

	JobRunRecordPhase(run, JOB_PHASE_CUTTING_OVER);
	LockViewForSwap(run->job.target_oid);
	PgHeapSwap(run->job.target_oid, QueryRunOf(run)->content_oid, old_indexes, new_indexes,
			   "REFRESH MATERIALIZED VIEW", false);
	matview = table_open(run->job.target_oid, NoLock);
	/* As REFRESH counts a swap of the view's storage */
	pgstat_count_truncate(matview);
	pgstat_count_heap_insert(matview, rows);
	if (!RelationIsPopulated(matview))
		SetMatViewPopulatedState(matview, true);
	JobRunSucceeded(run, run->job.target_oid, true, rows);
	table_close(matview, NoLock);
}

static JobStepResult
RefreshCutOver(JobRun *run)
{
	return QueryJobCutOver(run, RefreshPublish);
}

static JobStepResult
RefreshCutOverPublish(JobRun *run)
{
	return QueryJobCutOverPublish(run, RefreshPublish);
}

static Oid
RefreshBuildHere(const BgddlJob *job)
{
	return QueryJobBuildHereReplacing(job, "refresh", AccessShareLock, NIL, RefreshPublish);
}

/* explain_ddl: REFRESH MATERIALIZED VIEW */
static const char *
RefreshExplain(Node *raw_statement, const char *query_string)
{
	Relation	matview;
	char	   *strategy;
	char	   *reason;

	if (!IsA(raw_statement, RefreshMatViewStmt))
		return NULL;
	matview = table_openrv(((RefreshMatViewStmt *) raw_statement)->relation, AccessShareLock);
	if (matview->rd_rel->relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a materialized view", RelationGetRelationName(matview))));
	strategy = QueryJobStrategyAtSubmit(get_view_query(matview), RelationGetRelid(matview),
										&reason);
	table_close(matview, NoLock);
	return strategy;
}

/*
 * The job of a REFRESH, estimated as its job runs the view's query: as the
 * view's owner (whom the caller must be or act for), in the job's query
 * context (JobQueryEnter)
 */
static bool
RefreshEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	Oid			relid;
	Relation	matview;
	JobQueryContext context;

	if (!IsA(raw_statement, RefreshMatViewStmt))
		return false;
	relid = RangeVarGetRelidExtended(((RefreshMatViewStmt *) raw_statement)->relation,
									 AccessShareLock, 0, RangeVarCallbackOwnsTable, NULL);
	matview = table_open(relid, NoLock);
	if (matview->rd_rel->relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a materialized view", RelationGetRelationName(matview))));
	JobQueryEnter(matview->rd_rel->relowner, &context, false);
	QueryJobEstimate(copyObject(get_view_query(matview)), relid, false, estimate);
	JobQueryLeave(&context);
	table_close(matview, NoLock);
	return true;
}

const KindRoutine kind_refresh_routine = {
	.name = "REFRESH MATERIALIZED VIEW",
	.cut_over_publishes = true,
	.stands_for = OBJECT_MATVIEW,
	.accepts = RefreshAccepts,
	.validate = RefreshValidate,
	.reserve = RefreshReserve,
	.explain = RefreshExplain,
	.estimate = RefreshEstimate,
	.start = RefreshStart,
	.plan = QueryJobPlan,
	.backfill_step = QueryJobBackfillStep,
	.help_step = QueryJobHelpStep,
	.catch_up = QueryJobCatchUp,
	.writes_to_sources = QueryJobWritesToSources,
	.cut_over = RefreshCutOver,
	.cut_over_lock = QueryJobCutOverLock,
	.cut_over_publish = RefreshCutOverPublish,
	.restart_build = QueryJobRestartBuild,
	.paused = QueryJobPaused,
	.progress = QueryJobProgress,
	.keeps_on_table_of = QueryJobKeepsOnTableOf,
	.housekeeping = QueryJobHousekeeping,
	.cleanup = QueryJobCleanup,
	.discard = QueryJobDiscardHiddenHeap,
	.build_here = RefreshBuildHere,
};
