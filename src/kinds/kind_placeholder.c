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
#include "nodes/nodeFuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "engine/job_xact.h"
#include "engine/kind.h"
#include "kinds/kind_placeholder.h"
#include "pg/pg_compat.h"
#include "pg/pg_relation.h"

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
 * Is this relation (a job's target) still a placeholder, not yet the object
 * that stands for it?
 */
bool
KindIsPlaceholder(Oid relid)
{
	return get_rel_relkind(relid) == RELKIND_MATVIEW;
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

/* A placeholder of a CREATE TABLE AS job, and the table that replaces it */
typedef struct PlaceholderRetarget
{
	Oid			placeholder;
	Oid			table;
	int			replaced;		/* range table entries changed */
} PlaceholderRetarget;

static bool
RetargetWalker(Node *node, PlaceholderRetarget *retarget)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION && rte->relid == retarget->placeholder)
		{
			rte->relid = retarget->table;
			rte->relkind = get_rel_relkind(retarget->table);
			retarget->replaced++;
		}
		return false;
	}
	if (IsA(node, Query))
	{
#if PG_VERSION_NUM >= 160000
		ListCell   *lc;

		foreach(lc, ((Query *) node)->rteperminfos)
		{
			RTEPermissionInfo *perminfo = lfirst(lc);

			if (perminfo->relid == retarget->placeholder)
				perminfo->relid = retarget->table;
		}
#endif
		return query_tree_walker((Query *) node, RetargetWalker, retarget,
								 QTW_EXAMINE_RTES_BEFORE);
	}
	return expression_tree_walker(node, RetargetWalker, retarget);
}

/*
 * Make an analysed query (or the query a CREATE TABLE AS, EXPLAIN or
 * DECLARE holds) read relation table instead of placeholder; returns how
 * many range table entries changed (none if it names the placeholder only
 * through a view, which cannot be changed).  The caller locks table.
 */
int
KindRetargetQuery(Query *query, Oid placeholder, Oid table)
{
	PlaceholderRetarget retarget = {placeholder, table, 0};

	if (query != NULL && query->utilityStmt != NULL)
		query = UtilityContainsQuery(query->utilityStmt);
	if (query == NULL || !OidIsValid(table))
		return 0;
	(void) query_tree_walker(query, RetargetWalker, &retarget, QTW_EXAMINE_RTES_BEFORE);
	return retarget.replaced;
}

/*
 * Make query read, instead of the placeholder of a CREATE TABLE AS job, the
 * job's hidden table, which takes the placeholder's place (under its own
 * OID) when the job succeeds.  False if the query names the placeholder
 * only through a view, which cannot be changed.
 */
static bool
RetargetToFutureTable(Query *query, Oid placeholder, Oid table)
{
	return KindRetargetQuery(query, placeholder, table) > 0;
}

static void
AddJob(List **jobs, int64 job_id)
{
	int64	   *id = palloc(sizeof(int64));

	*id = job_id;
	*jobs = lappend(*jobs, id);
}

/*
 * Refuse a plan that reads the placeholder of an unfinished job, naming the
 * job.  With a query (the query the plan was made from, of a new job),
 * return instead the jobs whose results it reads: materialized views are
 * populated, under the same OID, when their jobs succeed; the query is
 * changed to read a CREATE TABLE AS job's own table instead of its
 * placeholder.  A job that starts after them can read them.  Costs nothing
 * for plans that read no materialized view.
 */
static List *
PlaceholderReads(PlannedStmt *plan, Query *query)
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
		if (query != NULL && CatalogJobLoad(job_id, &job, true) &&
			(KindRoutineForJob(&job)->populates_target ||
			 (OidIsValid(KindFutureRelation(&job)) &&
			  RetargetToFutureTable(query, rte->relid, KindFutureRelation(&job)))))
		{
			AddJob(&jobs, job_id);
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
	(void) PlaceholderReads(plan, NULL);
}

/*
 * For the query of a new job, and its plan: the jobs whose materialized
 * views or tables it reads while they are built (int64 *), which it starts
 * after; query now reads those tables instead of their placeholders.  The
 * placeholders of other jobs are refused as KindCheckPlaceholderReads
 * refuses them.
 */
List *
KindPlaceholderDependencies(PlannedStmt *plan, Query *query)
{
	return PlaceholderReads(plan, query);
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
	if (*job_id == 0 || !CatalogJobLoad(*job_id, &job, true))
		return InvalidOid;
	return KindFutureRelation(&job);
}

/*
 * REFRESH of a materialized view that jobs are still building or
 * refreshing.  Jobs of this session are its own to order
 * (session_order.c: the REFRESH waits for them, or starts after them).
 * Otherwise it is refused, unless the only job is the one creating the
 * view and the REFRESH becomes a job itself (after is not NULL): that job
 * starts after it (*after, else 0).  A second REFRESH of another session
 * is refused, blocking or not.
 */
void
KindCheckPlaceholderRefresh(RefreshMatViewStmt *stmt, int64 *after)
{
	Oid			target_oid;
	List	   *jobs;
	ListCell   *lc;
	int64		creating = 0;
	int64		refreshing = 0;

	if (after != NULL)
		*after = 0;
	if (CatalogLookup() == NULL)
		return;
	target_oid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(target_oid))
		return;					/* the normal path reports it */
	jobs = CatalogJobsBuilding(target_oid);
	foreach(lc, jobs)
	{
		int64		job_id = *(int64 *) lfirst(lc);
		BgddlJob	job;

		if (JobXactIsSessionJob(job_id))
			return;
		if (!CatalogJobLoad(job_id, &job, true))
			continue;
		if (KindRoutineForJob(&job)->populates_target)
			creating = job_id;
		else if (refreshing == 0)
			refreshing = job_id;
	}
	if (refreshing == 0 && creating != 0 && after != NULL)
	{
		*after = creating;
		return;
	}
	if (refreshing != 0 || creating != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("materialized view \"%s\" is being built by background DDL job %lld",
						stmt->relation->relname, (long long) (refreshing != 0 ? refreshing : creating)),
				 errdetail("Its new content becomes visible when the job succeeds."),
				 errhint("Use wait_ddl(%lld) to wait for it, or cancel_ddl(%lld) to stop it.",
						 (long long) (refreshing != 0 ? refreshing : creating),
						 (long long) (refreshing != 0 ? refreshing : creating))));
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
