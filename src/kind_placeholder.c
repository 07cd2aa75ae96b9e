/*-------------------------------------------------------------------------
 *
 * kind_placeholder.c
 *	  The objects a job reserves before it is done, and the guards on them.
 *
 * From submit until success, the target of a CREATE MATERIALIZED VIEW job
 * is an unpopulated materialized view (the placeholder): it reserves the
 * name, holds the view rule, and nobody may use it.  PostgreSQL already
 * refuses to scan it; here we make that refusal say which job builds it,
 * and close the ways around it:
 *
 *	- reading it fails at once, also from a plan that dropped its (useless)
 *	  join to the placeholder, and also at the submit of another job;
 *	- REFRESH MATERIALIZED VIEW of it is refused (it would publish the view
 *	  before the job has built it);
 *	- CREATE TABLE AS and CREATE INDEX jobs reserve their name with such a
 *	  placeholder too, which the real object replaces at the end: indexes,
 *	  ALTERs, grants and comments on it, which would be lost, are refused.
 *
 * (DROP of a job's target cancels the job: sql_control.c.)
 *
 * The helpers at the end empty, drop and lock placeholders for the worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "catalog_access.h"
#include "pg_compat.h"
#include "catalog_job.h"
#include "sql_control.h"
#include "parser/analyze.h"
#include "kind_placeholder.h"
#include "job_xact.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze = NULL;

static void PlaceholderExecutorStart(QueryDesc *queryDesc, int eflags);
static void PlaceholderPostParseAnalyze(ParseState *pstate, Query *query,
										JumbleState *jstate);

void
KindPlaceholderHooksInstall(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = PlaceholderExecutorStart;
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = PlaceholderPostParseAnalyze;
}

/* A target of a job of the current transaction that a statement uses */
typedef struct UsedTarget
{
	int64		job_id;
	Oid			target_oid;
	Oid			built_oid;		/* what stands for the target once built */
} UsedTarget;

/* What StatementRelationsWalker calls for each relation, with its argument */
typedef struct RelationVisit
{
	void		(*visit) (RangeTblEntry *rte, void *arg);
	void	   *arg;
} RelationVisit;

/*
 * Visit every relation entry of an analysed statement: in its subqueries,
 * and in the query that CREATE TABLE AS, EXPLAIN or DECLARE CURSOR holds
 * (other utility statements name relations, which they look up later).
 */
static bool
StatementRelationsWalker(Node *node, RelationVisit *visit)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		if (((RangeTblEntry *) node)->rtekind == RTE_RELATION)
			visit->visit((RangeTblEntry *) node, visit->arg);
		return false;
	}
	if (IsA(node, Query))
	{
		Node	   *utility = ((Query *) node)->utilityStmt;

		if (utility == NULL)
			return query_tree_walker((Query *) node, StatementRelationsWalker, visit,
									 QTW_EXAMINE_RTES_BEFORE);
		if (IsA(utility, CreateTableAsStmt))
			return StatementRelationsWalker(((CreateTableAsStmt *) utility)->query, visit);
		if (IsA(utility, ExplainStmt))
			return StatementRelationsWalker(((ExplainStmt *) utility)->query, visit);
		if (IsA(utility, DeclareCursorStmt))
			return StatementRelationsWalker(((DeclareCursorStmt *) utility)->query, visit);
		return false;
	}
	return expression_tree_walker(node, StatementRelationsWalker, visit);
}

/* Note a relation that is the target of a job of this transaction */
static void
NoteUsedTarget(RangeTblEntry *rte, void *arg)
{
	List	  **used = arg;
	int64		job_id = JobXactJobOf(rte->relid);
	UsedTarget *target;
	ListCell   *lc;

	if (job_id == 0)
		return;
	foreach(lc, *used)
	{
		if (((UsedTarget *) lfirst(lc))->job_id == job_id)
			return;
	}
	target = palloc0(sizeof(UsedTarget));
	target->job_id = job_id;
	target->target_oid = rte->relid;
	*used = lappend(*used, target);
}

/* Point a use of a built target to what now stands for it */
static void
Retarget(RangeTblEntry *rte, void *arg)
{
	List	   *built = arg;
	ListCell   *lc;

	foreach(lc, built)
	{
		UsedTarget *target = lfirst(lc);

		if (rte->relid != target->target_oid || target->built_oid == target->target_oid)
			continue;
		LockRelationOid(target->built_oid, rte->rellockmode);
		rte->relid = target->built_oid;
		rte->relkind = get_rel_relkind(target->built_oid);
		return;
	}
}

/*
 * A statement of the transaction that submitted a job uses the job's
 * target before COMMIT (PostgreSQL's own scripts create a materialized view
 * and read it in one transaction): the blocking statement would have built
 * it already, so it is built here, now (KindBuildHere), before the statement
 * is planned; a CREATE TABLE AS target is then a new relation, which the
 * statement is pointed to.  Costs nothing to a transaction that submitted
 * no job.
 */
static void
PlaceholderPostParseAnalyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	if (JobXactHasSubmitted())
	{
		List	   *used = NIL;
		RelationVisit note = {NoteUsedTarget, &used};
		RelationVisit retarget = {Retarget, NULL};
		ListCell   *lc;

		(void) StatementRelationsWalker((Node *) query, &note);
		/*
		 * The analysis keeps the target of an INSERT, UPDATE or DELETE open,
		 * which would forbid replacing it: it is no longer needed
		 */
		if (used != NIL && pstate->p_target_relation != NULL)
		{
			table_close(pstate->p_target_relation, NoLock);
			pstate->p_target_relation = NULL;
		}
		foreach(lc, used)
		{
			UsedTarget *target = lfirst(lc);

			target->built_oid = KindBuildHere(target->job_id, "read it");
			if (!OidIsValid(target->built_oid))
				target->built_oid = target->target_oid;
		}
		retarget.arg = used;
		if (used != NIL)
			(void) StatementRelationsWalker((Node *) query, &retarget);
	}
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
 * Refuse a plan that reads the placeholder of an unfinished job, naming the
 * job.  Costs nothing for plans that read no materialized view.
 */
void
KindCheckPlaceholderReads(PlannedStmt *plan)
{
	ListCell   *lc;

	foreach(lc, plan->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		int64		job_id;

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
		if (JobXactIsSubmitted(job_id))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("\"%s\" is being built by background DDL job " INT64_FORMAT,
							get_rel_name(rte->relid), job_id),
					 errdetail("The job was submitted in this transaction; it starts when the transaction commits."),
					 errhint("Use it after COMMIT, once the job has succeeded.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is being built by background DDL job " INT64_FORMAT,
						get_rel_name(rte->relid), job_id),
				 errdetail("It can be used once the job succeeds."),
				 errhint("Use wait_ddl(" INT64_FORMAT ") to wait for it; pg_stat_background_ddl shows its progress.",
						 job_id)));
	}
}

/*
 * Before the executor refuses to scan an unpopulated materialized view
 * (with a hint to REFRESH it, which is wrong here), say that a job builds it.
 * Unlike the executor, which complains only when it opens a scan, this also
 * refuses a query whose plan dropped its join to the placeholder.
 */
static void
PlaceholderExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		KindCheckPlaceholderReads(queryDesc->plannedstmt);

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
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
				 errmsg("materialized view \"%s\" is being built by background DDL job " INT64_FORMAT,
						stmt->relation->relname, job_id),
				 errdetail("Its new content becomes visible when the job succeeds."),
				 errhint("Use wait_ddl(" INT64_FORMAT ") to wait for it, or cancel_ddl(" INT64_FORMAT ") to stop it.",
						 job_id, job_id)));
}

/*
 * The unfinished job whose placeholder this relation is, if it stands for
 * an object other than itself (CREATE TABLE AS's table, CREATE INDEX's
 * index): what is attached to such a placeholder would be lost at the
 * job's end.  A CREATE MATERIALIZED VIEW job's placeholder becomes the
 * view, and a REFRESH job's target is the view itself: anything goes.
 */
static int64
JobReplacingPlaceholder(Oid relid)
{
	int64		job_id;
	BgddlJob	job;

	if (!OidIsValid(relid) || !IsUnpopulatedMatView(relid) || CatalogLookup() == NULL)
		return 0;
	job_id = CatalogJobBuilding(relid);
	if (job_id == 0 || !CatalogJobLoad(job_id, &job, true) ||
		job.kind == JOB_KIND_CREATE_MATVIEW || job.kind == JOB_KIND_REFRESH_MATVIEW)
		return 0;
	return job_id;
}

/* Is this relation a placeholder, for any kind of unfinished job? */
bool
KindPlaceholderOfUnfinishedJob(Oid relid)
{
	return OidIsValid(relid) && IsUnpopulatedMatView(relid) && CatalogLookup() != NULL &&
		CatalogJobBuilding(relid) != 0;
}

/*
 * If the relation is the placeholder of a job of the current transaction,
 * build the job here (KindBuildHere) and return true.
 */
static bool
BuildHereIfUncommitted(RangeVar *relation, const char *why)
{
	Oid			relid = relation != NULL ? RangeVarGetRelid(relation, NoLock, true) : InvalidOid;
	int64		job_id = OidIsValid(relid) ? JobXactJobOf(relid) : 0;

	return job_id != 0 && OidIsValid(KindBuildHere(job_id, why));
}

static void
RefuseChangeOfPlaceholder(RangeVar *relation, const char *statement)
{
	Oid			relid;
	int64		job_id;

	if (relation == NULL)
		return;
	relid = RangeVarGetRelid(relation, NoLock, true);
	job_id = JobReplacingPlaceholder(relid);
	if (job_id != 0 && BuildHereIfUncommitted(relation, psprintf("ran %s on it", statement)))
		return;
	if (job_id != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot run %s on \"%s\": it is being built by background DDL job " INT64_FORMAT,
						statement, relation->relname, job_id),
				 errdetail("Until the job succeeds, \"%s\" is a placeholder that reserves the name; what is changed on it would be lost.",
						   relation->relname),
				 errhint("Use wait_ddl(" INT64_FORMAT ") to wait for the job, then run the statement.",
						 job_id)));
}

/*
 * Refuse statements that would attach something to, or change, the
 * placeholder of a CREATE TABLE AS or CREATE INDEX job (which is replaced
 * by the real object at the job's end).  DROP cancels the job
 * (sql_control.c); RENAME and SET SCHEMA move the name, which the job
 * follows.
 */
void
KindCheckPlaceholderChange(Node *parsetree)
{
	ListCell   *lc;

	switch (nodeTag(parsetree))
	{
		case T_IndexStmt:
			RefuseChangeOfPlaceholder(((IndexStmt *) parsetree)->relation, "CREATE INDEX");
			break;
		case T_AlterTableStmt:
			RefuseChangeOfPlaceholder(((AlterTableStmt *) parsetree)->relation, "ALTER");
			break;
		case T_CreateStatsStmt:
			foreach(lc, ((CreateStatsStmt *) parsetree)->relations)
				if (IsA(lfirst(lc), RangeVar))
					RefuseChangeOfPlaceholder(lfirst(lc), "CREATE STATISTICS");
			break;
		case T_GrantStmt:
			{
				GrantStmt  *stmt = (GrantStmt *) parsetree;

				if (stmt->targtype == ACL_TARGET_OBJECT && stmt->objtype == OBJECT_TABLE)
					foreach(lc, stmt->objects)
						RefuseChangeOfPlaceholder(lfirst(lc), stmt->is_grant ? "GRANT" : "REVOKE");
				break;
			}
		case T_CommentStmt:
			{
				CommentStmt *stmt = (CommentStmt *) parsetree;
				List	   *names;

				if (stmt->objtype != OBJECT_TABLE && stmt->objtype != OBJECT_MATVIEW &&
					stmt->objtype != OBJECT_INDEX && stmt->objtype != OBJECT_COLUMN)
					break;
				names = castNode(List, stmt->object);
				if (stmt->objtype == OBJECT_COLUMN)
					names = list_truncate(list_copy(names), list_length(names) - 1);
				if (names != NIL)
					RefuseChangeOfPlaceholder(makeRangeVarFromNameList(names), "COMMENT");
				break;
			}
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN)
				RefuseChangeOfPlaceholder(((RenameStmt *) parsetree)->relation, "RENAME COLUMN");
			else if (((RenameStmt *) parsetree)->renameType == OBJECT_INDEX)
				BuildHereIfUncommitted(((RenameStmt *) parsetree)->relation, "renamed it");
			break;
		default:
			break;
	}
}

/*
 * Empty a relation, transactionally, as TRUNCATE does: a new relfilenode
 * for it and its TOAST table, and rebuilt (empty) indexes.  Caller holds
 * ACCESS EXCLUSIVE on it.
 */
void
PgRelationTruncate(Relation rel)
{
	Oid			toast_oid = rel->rd_rel->reltoastrelid;
	ReindexParams reindex_params = {0};

	PgSetNewRelFileNumber(rel, rel->rd_rel->relpersistence);
	if (OidIsValid(toast_oid))
	{
		Relation	toast = relation_open(toast_oid, AccessExclusiveLock);

		PgSetNewRelFileNumber(toast, toast->rd_rel->relpersistence);
		relation_close(toast, NoLock);
	}
	reindex_relation(RelationGetRelid(rel), REINDEX_REL_PROCESS_TOAST, &reindex_params);
	CommandCounterIncrement();
}

/*
 * Drop a job's placeholder (or hidden relation), RESTRICT: if the user built
 * something on it, the error says what.  Caller is in a transaction.
 */
void
PgRelationDrop(Oid relid)
{
	ObjectAddress placeholder;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return;
	ObjectAddressSet(placeholder, RelationRelationId, relid);
	performDeletion(&placeholder, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
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
