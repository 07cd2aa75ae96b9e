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
 * then takes ACCESS EXCLUSIVE on the view -- with the short lock timeout,
 * retried, so that readers queued behind it wait no longer than that --
 * and swaps the storage: a time independent of the view's size.
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
#include "parser/parser.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "background_ddl.h"
#include "catalog_access.h"
#include "pg_citus.h"
#include "pg_heap_swap.h"
#include "kind.h"
#include "job_step.h"
#include "kind_placeholder.h"
#include "query_job.h"

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

/* The view and the statement's checks, in the blocking statement's order */
static Relation
OpenRefreshedView(KindSubmit *submit)
{
	RefreshMatViewStmt *stmt = CheckedNode(RefreshMatViewStmt, submit->pstmt->utilityStmt);
	Oid			relid = RangeVarGetRelidExtended(stmt->relation, AccessShareLock, 0,
												 RangeVarCallbackOwnsTable, NULL);
	Relation	matview = table_open(relid, NoLock);

	if (matview->rd_rel->relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a materialized view", RelationGetRelationName(matview))));
	if (stmt->concurrent && !RelationIsPopulated(matview))
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
	KindCheckPlaceholderRefresh(stmt);
	return matview;
}

static void
RefreshValidate(KindSubmit *submit)
{
	Relation	matview = OpenRefreshedView(submit);
	Oid			saved_userid;
	int			saved_sec_context;
	int			guc_nest_level;

	/* The query, as its owner runs it in REFRESH */
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(matview->rd_rel->relowner,
						   saved_sec_context | SECURITY_RESTRICTED_OPERATION);
	guc_nest_level = NewGUCNestLevel();
	(void) QueryJobValidate(get_view_query(matview), submit->query_string, submit->params,
							submit->query_env);
	submit->strategy = QueryJobStrategyAtSubmit(get_view_query(matview), RelationGetRelid(matview),
												&submit->one_batch_reason);
	AtEOXact_GUC(false, guc_nest_level);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	table_close(matview, NoLock);
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
 * The view's owner (REFRESH runs the query as the owner), and the hidden
 * heap, made now if it is not there yet (unless helper).  Caller is in a
 * transaction.
 */
static void
PrepareRefresh(JobRun *run, bool helper)
{
	Relation	matview = table_open(run->job.target_oid, AccessShareLock);

	run->query_role = matview->rd_rel->relowner;
	if (!helper &&
		(!OidIsValid(run->job.hidden_oid) ||
		 !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(run->job.hidden_oid))))
	{
		run->job.hidden_oid = PgHeapCreateLike(matview, CatalogRequire()->schema_oid,
											   psprintf("refresh_%u", run->job.target_oid));
		CatalogJobRecordHidden(run->job.id, run->job.hidden_oid);
	}
	table_close(matview, NoLock);
	run->rule_relid = run->job.target_oid;
	run->content_oid = run->job.hidden_oid;
}

static void
RefreshStart(JobRun *run)
{
	JobStepBegin("background_ddl: preparing the refresh", STEP_READ_COMMITTED);
	PrepareRefresh(run, run->helper);
	JobStepEnd();
	QueryJobResume(run);
}

/*
 * ACCESS EXCLUSIVE on the view: in a worker, in attempts of lock_timeout,
 * retried; in the submitting session, as REFRESH takes it.
 */
static void
LockViewForSwap(Oid relid)
{
	volatile long delay_ms = 10;

	if (!IsBackgroundWorker)
	{
		LockRelationOid(relid, AccessExclusiveLock);
		return;
	}

	for (;;)
	{
		MemoryContext context = CurrentMemoryContext;
		volatile bool locked = true;

		BeginInternalSubTransaction(NULL);
		(void) set_config_option("lock_timeout", psprintf("%d", background_ddl_lock_timeout_ms),
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
		PG_TRY();
		{
			LockRelationOid(relid, AccessExclusiveLock);
		}
		PG_CATCH();
		{
			ErrorData  *error;

			MemoryContextSwitchTo(context);
			error = CopyErrorData();
			if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
				PG_RE_THROW();
			FlushErrorState();
			locked = false;
		}
		PG_END_TRY();
		if (locked)
		{
			/* The subtransaction's lock passes to the cut-over's transaction */
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(context);
			return;
		}
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		JobStepSleep(delay_ms);
		delay_ms = Min(delay_ms * 2, 1000);
	}
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
	char	   *hidden = quote_qualified_identifier(get_namespace_name(get_rel_namespace(run->content_oid)),
													get_rel_name(run->content_oid));
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
		elog(ERROR, "could not prepare the duplicate check of background DDL job " INT64_FORMAT,
			 run->job.id);
	JobQueryBegin(run->query_role, false);
	/* Not read-only: it must see the rows this transaction just wrote */
	if (SPI_execute_plan(plan, NULL, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "the duplicate check of background DDL job " INT64_FORMAT " failed",
			 run->job.id);
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
	if (!HasUsableUniqueIndex(matview))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not find suitable unique index on materialized view \"%s\"",
						RelationGetRelationName(matview))));
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

	CatalogJobSetPhase(run->job.id, JOB_PHASE_BUILDING_INDEXES);
	LockRelationOid(run->job.target_oid, ShareUpdateExclusiveLock);
	matview = table_open(run->job.target_oid, NoLock);
	if (concurrently)
		CheckConcurrentRefresh(run, matview);
	hidden = table_open(run->content_oid, AccessExclusiveLock);
	PgHeapBuildIndexCopies(matview, hidden, concurrently, &old_indexes, &new_indexes);
	table_close(hidden, NoLock);
	table_close(matview, NoLock);

	CatalogJobSetPhase(run->job.id, JOB_PHASE_CUTTING_OVER);
	LockViewForSwap(run->job.target_oid);
	PgHeapSwap(run->job.target_oid, run->content_oid, old_indexes, new_indexes);
	matview = table_open(run->job.target_oid, NoLock);
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

static Oid
RefreshBuildHere(const BgddlJob *job)
{
	JobRun		run = {.job = *job};

	PrepareRefresh(&run, false);
	QueryJobBuildHere(&run, RefreshPublish);
	return job->target_oid;
}

/* The view itself is never dropped: only the hidden heap */
static void
RefreshDiscard(const BgddlJob *job, bool keep_target)
{
	if (OidIsValid(job->hidden_oid))
		PgRelationDrop(job->hidden_oid);
}

const KindRoutine kind_refresh_routine = {
	.stands_for = OBJECT_MATVIEW,
	.kind = JOB_KIND_REFRESH_MATVIEW,
	.accepts = RefreshAccepts,
	.validate = RefreshValidate,
	.reserve = RefreshReserve,
	.start = RefreshStart,
	.plan = QueryJobPlan,
	.backfill_step = QueryJobBackfillStep,
	.help_step = QueryJobHelpStep,
	.catch_up = QueryJobCatchUp,
	.cut_over = RefreshCutOver,
	.discard = RefreshDiscard,
	.build_here = RefreshBuildHere,
};
