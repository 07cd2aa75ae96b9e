/*-------------------------------------------------------------------------
 *
 * kind_placeholder.c
 *	  The placeholders that jobs reserve their targets with.
 *
 * From submit until success, the target of a CREATE MATERIALIZED VIEW job
 * is an unpopulated materialized view (the placeholder): it reserves the
 * name, holds the view rule, and nobody may use it.  CREATE TABLE AS and
 * CREATE INDEX jobs reserve their names with such a placeholder too, which
 * the real object replaces at the end.  PostgreSQL already refuses to scan
 * an unpopulated materialized view; here that refusal says which job builds
 * it, also for a plan that dropped its (useless) join to the placeholder
 * and at the submit of another job, and REFRESH of a view that a job is
 * building is refused (it would publish the view before the job has built
 * it).  The session's guards (session_guards.c) use these checks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "catalog_access.h"
#include "catalog_job.h"
#include "job_xact.h"
#include "kind.h"
#include "kind_placeholder.h"
#include "pg_compat.h"
#include "pg_relation.h"

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
 * The unfinished job whose placeholder this relation is, or 0: any
 * relation that a job builds is unpopulated until it is done.
 */
int64
KindPlaceholderJob(Oid relid)
{
	if (!OidIsValid(relid) || !IsUnpopulatedMatView(relid) || CatalogLookup() == NULL)
		return 0;
	return CatalogJobBuilding(relid);
}

/*
 * Refuse a plan that reads the placeholder of an unfinished job, naming the
 * job; with dependencies, return instead the jobs that build materialized
 * views the plan reads (those views are populated, under the same OID, when
 * their jobs succeed: a job that starts after them can read them).  Costs
 * nothing for plans that read no materialized view.
 */
static List *
PlaceholderReads(PlannedStmt *plan, bool dependencies)
{
	List	   *jobs = NIL;
	ListCell   *lc;

	foreach(lc, plan->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		int64		job_id;
		BgddlJob	job;

		/*
		 * Only relations the query reads (a view rule's OLD and NEW entries,
		 * for one, are never scanned and need no privilege).
		 */
		if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_MATVIEW ||
			(PgRequiredPerms(plan, rte) & ACL_SELECT) == 0 ||
			!IsUnpopulatedMatView(rte->relid) || CatalogLookup() == NULL)
			continue;
		job_id = CatalogJobBuilding(rte->relid);
		if (job_id == 0)
			continue;
		if (dependencies && CatalogJobLoad(job_id, &job, true) &&
			strcmp(job.kind, KIND_MATVIEW_NAME) == 0)
		{
			int64	   *id = palloc(sizeof(int64));

			*id = job_id;
			jobs = lappend(jobs, id);
			continue;
		}
		if (JobXactIsSubmitted(job_id))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("\"%s\" is being built by background DDL job %lld",
							get_rel_name(rte->relid), (long long) job_id),
					 errdetail("The job was submitted in this transaction; it starts when the transaction commits."),
					 errhint("Use it after COMMIT, once the job has succeeded.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is being built by background DDL job %lld",
						get_rel_name(rte->relid), (long long) job_id),
				 errdetail("It can be used once the job succeeds."),
				 errhint("Use wait_ddl(%lld) to wait for it; pg_stat_background_ddl shows its progress.",
						 (long long) job_id)));
	}
	return jobs;
}

void
KindCheckPlaceholderReads(PlannedStmt *plan)
{
	(void) PlaceholderReads(plan, false);
}

/*
 * For the query of a new job: the jobs whose materialized views it reads
 * while they are built (int64 *), which it starts after; the placeholders
 * of other jobs are refused as KindCheckPlaceholderReads refuses them.
 */
List *
KindPlaceholderDependencies(PlannedStmt *plan)
{
	return PlaceholderReads(plan, true);
}

/*
 * A job that failed or was cancelled: drop first the placeholders of the
 * jobs that start after it (and of those after them), which may depend on
 * its own (a view over its view): those jobs are cancelled when they see
 * why (job_worker.c).  Caller is in a transaction, and drops its own next.
 */
void
KindDropWaitingPlaceholders(int64 job_id)
{
	ListCell   *lc;

	foreach(lc, CatalogJobsWaitingFor(job_id))
	{
		int64		waiting = *(int64 *) lfirst(lc);
		BgddlJob	job;

		KindDropWaitingPlaceholders(waiting);
		if (CatalogJobLoad(waiting, &job, true) && KindPlaceholderJob(job.target_oid) == waiting)
			PgRelationDrop(job.target_oid);
	}
}

/*
 * The table that will take a placeholder's place: a CREATE TABLE AS job's
 * hidden table (under its OID), with in *job_id the job; InvalidOid if the
 * relation is no such placeholder
 */
Oid
KindPlaceholderFutureTable(Oid relid, int64 *job_id)
{
	BgddlJob	job;

	*job_id = KindPlaceholderJob(relid);
	if (*job_id == 0 || !CatalogJobLoad(*job_id, &job, true) || strcmp(job.kind, KIND_CTAS_NAME) != 0)
		return InvalidOid;
	return (Oid) CatalogKindStateInt(job.kind_state, KIND_CTAS_HIDDEN_OID);
}

/* Refuse REFRESH of a materialized view that a job is still building */
void
KindCheckPlaceholderRefresh(RefreshMatViewStmt *stmt)
{
	Oid			target_oid;
	int64		job_id;

	if (CatalogLookup() == NULL)
		return;
	target_oid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(target_oid))
		return;					/* the normal path reports it */
	job_id = CatalogJobBuilding(target_oid);
	if (job_id != 0 && JobXactIsSubmitted(job_id) &&
		OidIsValid(KindBuildHere(job_id, "refreshed it")))
		return;
	if (job_id != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("materialized view \"%s\" is being built by background DDL job %lld",
						stmt->relation->relname, (long long) job_id),
				 errdetail("Its new content becomes visible when the job succeeds."),
				 errhint("Use wait_ddl(%lld) to wait for it, or cancel_ddl(%lld) to stop it.",
						 (long long) job_id, (long long) job_id)));
}

/*
 * Take ACCESS EXCLUSIVE on a placeholder to publish it.  Caller already
 * holds a weaker lock on it (it filled it): a plain request then goes ahead
 * of sessions that queued behind us (a RENAME, say), where a conditional one
 * would fail for as long as they wait.  Readers of a placeholder fail at
 * once, so the lock comes free quickly.
 */
void
KindPlaceholderLock(Oid relid)
{
	LockRelationOid(relid, AccessExclusiveLock);
}
