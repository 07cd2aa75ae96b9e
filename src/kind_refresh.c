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
 * The worker computes the new content into a hidden heap (heap_swap.c) in
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
#include "miscadmin.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "background_ddl.h"
#include "catalog_access.h"
#include "heap_swap.h"
#include "job_kind.h"
#include "job_step.h"
#include "placeholder.h"
#include "query_job.h"

static bool
RefreshAccepts(Node *parsetree)
{
	return IsA(parsetree, RefreshMatViewStmt) && !((RefreshMatViewStmt *) parsetree)->skipData;
}

/* Does the view have the unique index REFRESH ... CONCURRENTLY needs? */
static bool
HasUsableUniqueIndex(Relation matview)
{
	ListCell   *lc;
	bool		found = false;

	foreach(lc, RelationGetIndexList(matview))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = index->rd_index;

		if (form->indisunique && form->indimmediate && form->indnatts > 0 &&
			RelationGetIndexExpressions(index) == NIL &&
			RelationGetIndexPredicate(index) == NIL)
			found = true;
		index_close(index, AccessShareLock);
	}
	return found;
}

/* The view and the statement's checks, in the blocking statement's order */
static Relation
OpenRefreshedView(JobSubmit *submit)
{
	RefreshMatViewStmt *stmt = castNode(RefreshMatViewStmt, submit->pstmt->utilityStmt);
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
	PlaceholderCheckRefresh(stmt);
	return matview;
}

static void
RefreshValidate(JobSubmit *submit)
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
RefreshReserve(JobSubmit *submit)
{
	RefreshMatViewStmt *stmt = castNode(RefreshMatViewStmt, submit->pstmt->utilityStmt);
	Oid			relid = RangeVarGetRelid(stmt->relation, AccessShareLock, false);

	submit->target_oid = relid;
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 get_rel_name(relid));
}

/* The view's owner (REFRESH runs the query as the owner), and the hidden heap */
static void
RefreshStart(JobRun *run)
{
	Relation	matview;

	JobStepBegin("background_ddl: preparing the refresh", STEP_READ_COMMITTED);
	matview = table_open(run->job.target_oid, AccessShareLock);
	run->query_role = matview->rd_rel->relowner;
	if (!run->helper &&
		(!OidIsValid(run->job.hidden_oid) ||
		 !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(run->job.hidden_oid))))
	{
		run->job.hidden_oid = HiddenHeapCreate(matview, CatalogRequire()->schema_oid,
											   psprintf("refresh_%u", run->job.target_oid));
		JobRecordHidden(run->job.id, run->job.hidden_oid);
	}
	table_close(matview, NoLock);
	JobStepEnd();
	run->rule_relid = run->job.target_oid;
	run->content_oid = run->job.hidden_oid;
	QueryJobResume(run);
}

/* ACCESS EXCLUSIVE on the view, in attempts of lock_timeout, retried */
static void
LockViewForSwap(Oid relid)
{
	volatile long delay_ms = 10;

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

	JobSetPhase(run->job.id, JOB_PHASE_BUILDING_INDEXES);
	LockRelationOid(run->job.target_oid, ShareUpdateExclusiveLock);
	matview = table_open(run->job.target_oid, NoLock);
	hidden = table_open(run->content_oid, AccessExclusiveLock);
	HiddenHeapBuildIndexes(matview, hidden, &old_indexes, &new_indexes);
	table_close(hidden, NoLock);
	table_close(matview, NoLock);

	JobSetPhase(run->job.id, JOB_PHASE_CUTTING_OVER);
	LockViewForSwap(run->job.target_oid);
	HiddenHeapSwap(run->job.target_oid, run->content_oid, old_indexes, new_indexes);
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

/* The view itself is never dropped: only the hidden heap */
static void
RefreshDiscard(const BgddlJob *job, bool keep_target)
{
	if (OidIsValid(job->hidden_oid))
		PlaceholderDrop(job->hidden_oid);
}

const JobKindRoutine refresh_kind_routine = {
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
};
