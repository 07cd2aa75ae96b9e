/*-------------------------------------------------------------------------
 *
 * placeholder.c
 *	  Guards on the placeholder of an unfinished job.
 *
 * From submit until success, the target of a CREATE MATERIALIZED VIEW job
 * is an unpopulated materialized view: it reserves the name and holds the
 * view rule, and nobody may use it.  PostgreSQL already refuses to scan it;
 * here we make that refusal say which job builds it, and close the two ways
 * around it:
 *
 *	- REFRESH MATERIALIZED VIEW is refused: it would publish the view before
 *	  the job has built it (and the job would then overwrite it).
 *	- DROP MATERIALIZED VIEW by its owner cancels the job first, in the same
 *	  transaction, so the worker never races the drop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "compat.h"
#include "job_catalog.h"
#include "job_control.h"
#include "placeholder.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;

static void PlaceholderExecutorStart(QueryDesc *queryDesc, int eflags);

void
PlaceholderHookInstall(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = PlaceholderExecutorStart;
}

/* Is this relation an unpopulated materialized view? */
static bool
IsUnpopulatedMatView(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		unpopulated = false;

	if (HeapTupleIsValid(tuple))
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tuple);

		unpopulated = form->relkind == RELKIND_MATVIEW && !form->relispopulated;
		ReleaseSysCache(tuple);
	}
	return unpopulated;
}

/*
 * Before the executor refuses to scan an unpopulated materialized view
 * (with a hint to REFRESH it, which is wrong here), say that a job builds it.
 * Costs nothing for queries that read no materialized view.  Unlike the
 * executor, which complains only when it opens a scan, this also refuses a
 * query whose plan dropped its (useless) join to the placeholder.
 */
static void
PlaceholderExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
	{
		ListCell   *lc;

		foreach(lc, queryDesc->plannedstmt->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);
			int64		job_id;

			/*
			 * Only relations the query reads (a view rule's OLD and NEW
			 * entries, for one, are never scanned and need no privilege).
			 */
			if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_MATVIEW ||
				(BgddlRequiredPerms(queryDesc->plannedstmt, rte) & ACL_SELECT) == 0 ||
				!IsUnpopulatedMatView(rte->relid) || !JobCatalogExists())
				continue;
			job_id = JobFindUnfinishedByTarget(rte->relid);
			if (job_id != 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("materialized view \"%s\" is being built by background DDL job " INT64_FORMAT,
								get_rel_name(rte->relid), job_id),
						 errdetail("It can be used once the job succeeds."),
						 errhint("Use wait_ddl(" INT64_FORMAT ") to wait for it; pg_stat_background_ddl shows its progress.",
								 job_id)));
		}
	}

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/* Refuse REFRESH of a materialized view that a job is still building */
void
PlaceholderCheckRefresh(RefreshMatViewStmt *stmt)
{
	Oid			target_oid;
	int64		job_id;

	if (!JobCatalogExists())
		return;
	target_oid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(target_oid))
		return;					/* the normal path reports it */
	job_id = JobFindUnfinishedByTarget(target_oid);
	if (job_id != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("materialized view \"%s\" is being built by background DDL job " INT64_FORMAT,
						stmt->relation->relname, job_id),
				 errdetail("It becomes populated when the job succeeds."),
				 errhint("Use wait_ddl(" INT64_FORMAT ") to wait for it, or cancel_ddl(" INT64_FORMAT ") to stop it.",
						 job_id, job_id)));
}

/*
 * DROP MATERIALIZED VIEW of a placeholder cancels its job, in the dropping
 * transaction.  Only for the owner: anyone else gets the normal permission
 * error from the DROP itself, without disturbing the job.
 */
void
PlaceholderCancelDroppedJobs(DropStmt *stmt)
{
	ListCell   *lc;

	if (stmt->removeType != OBJECT_MATVIEW || !JobCatalogExists())
		return;
	foreach(lc, stmt->objects)
	{
		RangeVar   *name = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			target_oid = RangeVarGetRelid(name, NoLock, true);
		int64		job_id;

		if (!OidIsValid(target_oid) || !BgddlRelationOwnerCheck(target_oid, GetUserId()))
			continue;
		job_id = JobFindUnfinishedByTarget(target_oid);
		if (job_id != 0)
			(void) JobCancel(job_id, false, "the materialized view was dropped");
	}
}
