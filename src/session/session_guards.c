/*-------------------------------------------------------------------------
 *
 * session_guards.c
 *	  The guards of a session on jobs' placeholders, and on the targets of
 *	  the jobs its transaction submitted.
 *
 *	- A plan that reads a job's placeholder fails at once, naming the job
 *	  (kind_placeholder.c), from the executor hook.
 *	- The placeholder of a CREATE TABLE AS or CREATE INDEX job is replaced
 *	  by the real object at the job's end: indexes, ALTERs, grants and
 *	  comments on it, which would be lost, are refused; RENAME and SET
 *	  SCHEMA move the name, which the job follows.
 *	- The session's own jobs are done before its later statements that
 *	  touch them (session_order.c), from the end of their parse analysis.
 *
 * (DROP of a job's target cancels the job: session_control.c.)
 *
 * What a job creates belongs to the extension while the job runs, so that
 * pg_dump leaves it out (pg_relation.c: PgRelationSetExtensionMember).  A
 * DROP that reaches such an object through a dependency (DROP TABLE of a
 * view's base table, DROP SCHEMA ... CASCADE) would then be turned by
 * PostgreSQL into a drop of the whole extension: SessionDropStatement runs
 * a DROP as the extension's own script would, so that the objects are
 * dropped as they would be without the membership (their jobs are
 * cancelled).  The object-access hook is the backstop: the extension, and
 * its catalog tables, are dropped by DROP EXTENSION only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_init_privs.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/evtcache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_xact.h"
#include "engine/kind.h"
#include "kinds/kind_placeholder.h"
#include "pg/pg_relation.h"
#include "session/session_guards.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static object_access_hook_type prev_object_access_hook = NULL;
static bool dropping_extension = false;	/* in a DROP EXTENSION statement */
static bool dropping_as_script = false; /* SessionDropStatement set creating_extension */

static void GuardExecutorStart(QueryDesc *queryDesc, int eflags);
static void GuardObjectAccess(ObjectAccessType access, Oid classId, Oid objectId, int subId,
							  void *arg);

void
SessionGuardsInstall(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = GuardExecutorStart;
	prev_object_access_hook = object_access_hook;
	object_access_hook = GuardObjectAccess;
}

/*
 * Is an extension member relation a job's object (a placeholder in the
 * user's schema, or a hidden or staging relation in ours) rather than one
 * of the extension's script?
 */
static bool
IsJobObject(Oid relnamespace, const char *relname, char relkind)
{
	return !CatalogIsScriptRelation(relnamespace, relname, relkind);
}

/*
 * The backstop: the extension, and the catalog tables in its schema, are
 * dropped by DROP EXTENSION (or an extension script) only, never as a side
 * effect of another statement.  (Not through CatalogLookup: while the
 * extension's objects are being dropped, it no longer finds them.)
 */
static void
GuardObjectAccess(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	Oid			extension_oid;
	bool		refuse = false;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || subId != 0 || dropping_extension ||
		(creating_extension && !dropping_as_script) ||
		(classId != ExtensionRelationId && classId != RelationRelationId) ||
		!OidIsValid(extension_oid = get_extension_oid(BGDDL_EXTENSION_NAME, true)))
		return;
	if (classId == ExtensionRelationId)
		refuse = objectId == extension_oid;
	else
	{
		char		relkind = get_rel_relkind(objectId);

		refuse = (relkind == RELKIND_RELATION || relkind == RELKIND_VIEW) &&
			!IsJobObject(get_rel_namespace(objectId), get_rel_name(objectId), relkind) &&
			getExtensionOfObject(RelationRelationId, objectId) == extension_oid;
	}
	if (refuse)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop extension %s or its catalog as a side effect of this statement",
						BGDDL_EXTENSION_NAME),
				 errdetail("The statement reaches an object that a background DDL job created, or the extension's catalog."),
				 errhint("Cancel the jobs first (cancel_ddl), or drop the extension with DROP EXTENSION.")));
}

/*
 * The relations that jobs created and that belong to the extension (not its
 * catalog), with their owners
 */
static List *
JobObjects(Oid extension_oid, List **owners)
{
	List	   *objects = NIL;
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	*owners = NIL;
	ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension_oid));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, keys);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend dependency = (Form_pg_depend) GETSTRUCT(tuple);
		HeapTuple	class_tuple;
		Form_pg_class form;

		if (dependency->classid != RelationRelationId ||
			dependency->deptype != DEPENDENCY_EXTENSION)
			continue;
		class_tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(dependency->objid));
		if (!HeapTupleIsValid(class_tuple))
			continue;
		form = (Form_pg_class) GETSTRUCT(class_tuple);
		if (IsJobObject(form->relnamespace, NameStr(form->relname), form->relkind))
		{
			objects = lappend_oid(objects, dependency->objid);
			*owners = lappend_oid(*owners, form->relowner);
		}
		ReleaseSysCache(class_tuple);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return objects;
}

/*
 * DROP OWNED drops the roles' objects at its top level, where PostgreSQL
 * refuses to drop an extension's member: the objects of the roles' jobs
 * stop being the extension's first (for this transaction), so that they go
 * as they would without the membership.  (Not SessionDropStatement's way:
 * DROP OWNED also revokes privileges, which inside an extension's script
 * would be recorded as initial privileges.)
 */
void
SessionDropOwned(DropOwnedStmt *stmt)
{
	Oid			extension_oid = get_extension_oid(BGDDL_EXTENSION_NAME, true);
	List	   *roles = NIL;
	List	   *objects;
	List	   *owners;
	ListCell   *lc;
	ListCell   *owner;

	if (!OidIsValid(extension_oid))
		return;
	foreach(lc, stmt->roles)
		roles = lappend_oid(roles, get_rolespec_oid(lfirst(lc), true));
	objects = JobObjects(extension_oid, &owners);
	forboth(lc, objects, owner, owners)
	{
		if (list_member_oid(roles, lfirst_oid(owner)))
			PgRelationSetExtensionMember(lfirst_oid(lc), extension_oid, false);
	}
}

/*
 * After a statement that may change privileges (GRANT, REVOKE, a change of
 * owner): a job's object keeps its current privileges as its initial ones,
 * which pg_dump compares an extension member's with, so that a dump taken
 * while the job runs has no GRANT on an object it leaves out.  The job's
 * result keeps the privileges (PgRelationSetExtensionMember).
 */
/* Do a relation's privileges differ from its initial ones (pg_init_privs)? */
static bool
PrivilegesChanged(Oid relid)
{
	HeapTuple	class_tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Relation	init_privs;
	ScanKeyData keys[3];
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		isnull;
	Datum		current;
	bool		changed;

	if (!HeapTupleIsValid(class_tuple))
		return false;
	current = SysCacheGetAttr(RELOID, class_tuple, Anum_pg_class_relacl, &isnull);
	init_privs = table_open(InitPrivsRelationId, AccessShareLock);
	ScanKeyInit(&keys[0], Anum_pg_init_privs_objoid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], Anum_pg_init_privs_classoid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&keys[2], Anum_pg_init_privs_objsubid, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(0));
	scan = systable_beginscan(init_privs, InitPrivsObjIndexId, true, NULL, 3, keys);
	tuple = systable_getnext(scan);
	if (!HeapTupleIsValid(tuple))
		changed = !isnull;
	else
	{
		bool		init_isnull;
		Datum		initial = heap_getattr(tuple, Anum_pg_init_privs_initprivs,
										   RelationGetDescr(init_privs), &init_isnull);

		changed = isnull || init_isnull ||
			!aclequal(DatumGetAclP(current), DatumGetAclP(initial));
	}
	systable_endscan(scan);
	table_close(init_privs, AccessShareLock);
	ReleaseSysCache(class_tuple);
	return changed;
}

void
SessionKeepJobObjectPrivileges(void)
{
	Oid			extension_oid = get_extension_oid(BGDDL_EXTENSION_NAME, true);
	List	   *owners;
	ListCell   *lc;

	if (!OidIsValid(extension_oid) || creating_extension)
		return;
	CommandCounterIncrement();
	foreach(lc, JobObjects(extension_oid, &owners))
	{
		if (PrivilegesChanged(lfirst_oid(lc)))
			recordExtObjInitPriv(lfirst_oid(lc), RelationRelationId);
	}
}

/*
 * Run a statement that drops objects (DropStmt, or an ALTER TABLE that only
 * drops columns or constraints) as the extension's script would: the
 * dependency of a job's objects on the extension is ignored, so that they
 * are dropped as if they were not its members.  Not while event triggers
 * may create objects during the statement (they would become the
 * extension's), nor inside another extension's script: then GuardObjectAccess
 * refuses such a DROP instead.
 */
void
SessionDropStatement(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					 ProcessUtilityContext context, ParamListInfo params,
					 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc,
					 ProcessUtility_hook_type next)
{
	const BgddlCatalog *catalog = CatalogLookup();
	bool		extension_drop = IsA(pstmt->utilityStmt, DropStmt) &&
		((DropStmt *) pstmt->utilityStmt)->removeType == OBJECT_EXTENSION;
	bool		as_script = catalog != NULL && !extension_drop && !creating_extension &&
		EventCacheLookup(EVT_DDLCommandStart) == NIL &&
		EventCacheLookup(EVT_DDLCommandEnd) == NIL && EventCacheLookup(EVT_SQLDrop) == NIL;
	bool		saved_dropping_extension = dropping_extension;

	if (as_script)
	{
		creating_extension = true;
		CurrentExtensionObject = catalog->extension_oid;
		dropping_as_script = true;
	}
	dropping_extension = extension_drop;
	PG_TRY();
	{
		next(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		if (as_script)
		{
			creating_extension = false;
			CurrentExtensionObject = InvalidOid;
			dropping_as_script = false;
		}
		dropping_extension = saved_dropping_extension;
	}
	PG_END_TRY();
}

/*
 * Before the executor refuses to scan an unpopulated materialized view
 * (with a hint to REFRESH it, which is wrong here), say that a job builds it.
 * Unlike the executor, which complains only when it opens a scan, this also
 * refuses a query whose plan dropped its join to the placeholder.
 */
static void
GuardExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		KindCheckPlaceholderReads(queryDesc->plannedstmt);

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/*
 * The unfinished job whose placeholder this relation is, if the placeholder
 * stands for another object (CREATE TABLE AS's table, CREATE INDEX's
 * index): what is attached to such a placeholder would be lost at the job's
 * end.  A CREATE MATERIALIZED VIEW job's placeholder becomes the view, and
 * a REFRESH job's target is the view itself: anything goes.
 */
static int64
JobReplacingPlaceholder(Oid relid)
{
	int64		job_id = KindPlaceholderJob(relid);
	BgddlJob	job;

	if (job_id == 0 || !CatalogJobLoad(job_id, &job, true) ||
		!KindRoutineForJob(&job)->replaces_placeholder)
		return 0;
	return job_id;
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
				 errmsg("cannot run %s on \"%s\": it is being built by background DDL job %lld",
						statement, relation->relname, (long long) job_id),
				 errdetail("Until the job succeeds, \"%s\" is a placeholder that reserves the name; what is changed on it would be lost.",
						   relation->relname),
				 errhint("Use wait_ddl(%lld) to wait for the job, then run the statement.",
						 (long long) job_id)));
}

/*
 * Refuse statements that would attach something to, or change, the
 * placeholder of a CREATE TABLE AS or CREATE INDEX job (which is replaced
 * by the real object at the job's end).  DROP cancels the job
 * (session_control.c); RENAME and SET SCHEMA move the name, which the job
 * follows.
 */
void
SessionCheckPlaceholderChange(Node *parsetree)
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
