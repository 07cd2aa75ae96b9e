/*-------------------------------------------------------------------------
 *
 * kind_index.c
 *	  Background CREATE [UNIQUE] INDEX [CONCURRENTLY].
 *
 * The index is built as CREATE INDEX CONCURRENTLY builds it, so writers of
 * the table are never blocked, and the planner ignores it until it is
 * valid.
 *
 * At submit: the blocking statement's checks (ownership of the table, the
 * access method and what it supports, operator classes, immutable
 * expressions and predicate, the CREATE privilege on the schema and the
 * tablespace, the name), done with the statement transformed as
 * CREATE INDEX transforms it.  What name resolution decided is stored with
 * the job: the analysed expressions and predicate (bound to OIDs), and the
 * schema-qualified operator classes and collations; the worker parses the
 * statement again and puts these back, so that later search_path changes
 * or look-alike objects cannot change the index.  The index's
 * name, chosen as CREATE INDEX would choose it if none was given, is
 * reserved by a placeholder: an empty, unpopulated materialized view of
 * that name, which nobody can read.
 *
 * In the worker, one transaction drops the placeholder, records the OID the
 * index will have, and starts CREATE INDEX CONCURRENTLY with it
 * (DefineIndex), whose first phase commits all three together: the name is
 * never free, and the job always knows its index.  The build runs as the
 * submitting role, under statement_timeout; pg_stat_progress_create_index
 * shows it, and so does pg_stat_background_ddl.
 *
 * After a crash, the invalid index left behind is dropped and the name
 * reserved again in one transaction, and the build restarts.  An invalid
 * index that CREATE INDEX IF NOT EXISTS finds under its name, with the
 * statement's own definition (an interrupted CREATE INDEX CONCURRENTLY left
 * it), is the job's target from its submit, and rebuilt the same way.  A failed or
 * cancelled job drops the index (or the placeholder), with the short lock
 * timeout and retries, and leaves no invalid index.  On a partitioned table,
 * which CREATE INDEX CONCURRENTLY cannot index, the job is of the variant in
 * kind_partitioned_index.c, which IndexValidate chooses by setting its key.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/reloptions.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/heap.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_opclass.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_utilcmd.h"
#include "parser/parser.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/resowner.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "citus/pg_citus.h"
#include "engine/job_group.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "index/index_chunked.h"
#include "index/index_estimate.h"
#include "index/index_partitions.h"
#include "kinds/kind_index.h"
#include "kinds/kind_placeholder.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_lock.h"
#include "pg/pg_relation.h"

/* The strategy of an index job on a table */
#define STRATEGY_CONCURRENT_INDEX	"concurrent index build"

/* The job's kind_state: the indexed table, and the resolved parts */
#define STATE_TABLE_OID		"table_oid"
#define STATE_PARTS			"parts"
#define STATE_NAMESPACE_OID	"namespace_oid"	/* of a table that does not exist yet */
#define STATE_HELD			"held"		/* built, and held back for its group */

static IndexStmt *
IndexStatement(KindSubmit *submit)
{
	return CheckedNode(IndexStmt, submit->pstmt->utilityStmt);
}

/* The table the job's index is built on */
Oid
IndexedTable(const BgddlJob *job)
{
	return (Oid) CatalogKindStateInt(job->kind_state, STATE_TABLE_OID);
}

/*
 * KindSubmit.run_utility for a worker: run a statement the job derives (a
 * placeholder it reserves again) through the ProcessUtility chain, as the
 * current user, in the current transaction.
 */
static void
RunUtilityInWorker(KindSubmit *submit, PlannedStmt *pstmt)
{
	ProcessUtility(pstmt, submit->query_string, false, PROCESS_UTILITY_SUBCOMMAND,
				   NULL, NULL, None_Receiver, NULL);
}

/*
 * The index that CREATE INDEX IF NOT EXISTS finds under its name, if it is
 * an invalid index of the same table (not a partition's index, attached to
 * its parent's): what an interrupted CREATE INDEX CONCURRENTLY leaves, or,
 * on a partitioned table, the recipe of CREATE INDEX ON ONLY and a
 * concurrent build per partition left unfinished.  Whether it has the
 * statement's definition, validation decides.
 */
static Oid
InvalidIndexOfName(IndexStmt *stmt, Oid relid)
{
	Oid			existing;
	bool		valid;

	if (!stmt->if_not_exists || stmt->idxname == NULL)
		return InvalidOid;
	existing = get_relname_relid(stmt->idxname, get_rel_namespace(relid));
	if (!OidIsValid(existing) ||
		get_rel_relkind(existing) != (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE ?
									  RELKIND_PARTITIONED_INDEX : RELKIND_INDEX) ||
		!IndexBuildIsIndex(existing, &valid) || valid ||
		IndexGetRelation(existing, false) != relid || get_rel_relispartition(existing))
		return InvalidOid;
	return existing;
}

/*
 * CREATE INDEX, unless IF NOT EXISTS finds the name (but for an invalid
 * index to rebuild: InvalidIndexOfName), or the table is a
 * job's placeholder: empty, so the blocking statement is instant (and
 * kind_placeholder.c decides whether it may run at all).  In the session: an
 * index on a temporary table (the session's own), ON ONLY a partitioned
 * table (it builds nothing), or on a Citus table.
 */
static KindAcceptance
IndexAccepts(Node *parsetree, const char **reason)
{
	IndexStmt  *stmt;
	Oid			relid;
	int64		placeholder_job;

	if (!IsA(parsetree, IndexStmt))
		return KIND_NOT_ACCEPTED;
	stmt = (IndexStmt *) parsetree;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid))
		return KIND_ACCEPTED;	/* the validation reports it */
	/*
	 * On the table of a CREATE TABLE AS job still running: a job after it
	 * (IndexValidate); on another placeholder, in the session
	 */
	if (OidIsValid(KindPlaceholderFutureTable(relid, &placeholder_job)))
		return KIND_ACCEPTED;
	if (placeholder_job != 0 ||
		(stmt->if_not_exists && stmt->idxname != NULL &&
		 OidIsValid(get_relname_relid(stmt->idxname, get_rel_namespace(relid))) &&
		 !OidIsValid(InvalidIndexOfName(stmt, relid))))
		return KIND_NOT_ACCEPTED;
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		*reason = "The table is temporary: it belongs to this session.";
	else if (IsCatalogNamespace(get_rel_namespace(relid)))
		*reason = "The table is in schema pg_catalog, where no placeholder can reserve the index's name.";
	else if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE && !stmt->relation->inh)
		*reason = "CREATE INDEX ... ON ONLY a partitioned table builds nothing: the index stays invalid until an index of each partition is attached to it.";
	else if (PgCitusTable(relid))
		*reason = PgCitusInSessionReason(relid);
	return *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
}

/* The name CREATE INDEX chooses when none is given (as indexcmds.c does) */
static char *
ChooseIndexNameLikeCreateIndex(Relation rel, IndexStmt *stmt)
{
	List	   *elems = list_concat_copy(stmt->indexParams, stmt->indexIncludingParams);
	List	   *names = NIL;
	char		addition[NAMEDATALEN * 2] = "";
	ListCell   *lc;

	foreach(lc, elems)
	{
		IndexElem  *elem = lfirst(lc);
		const char *origname = elem->indexcolname ? elem->indexcolname :
			elem->name ? elem->name : "expr";
		char	   *name = pstrdup(origname);

		for (int i = 1; list_member(names, makeString(name)); i++)
		{
			char		suffix[NAMEDATALEN];

			snprintf(suffix, sizeof(suffix), "%d", i);
			name = psprintf("%.*s%s",
							pg_mbcliplen(origname, strlen(origname),
										 NAMEDATALEN - 1 - strlen(suffix)),
							origname, suffix);
		}
		names = lappend(names, makeString(name));
		if (strlen(addition) + strlen(name) + 1 >= NAMEDATALEN)
			break;
		if (addition[0] != '\0')
			strlcat(addition, "_", sizeof(addition));
		strlcat(addition, name, sizeof(addition));
	}
	if (stmt->primary)
		return ChooseRelationName(RelationGetRelationName(rel), NULL, "pkey",
								  RelationGetNamespace(rel), true);
	return ChooseRelationName(RelationGetRelationName(rel), addition, "idx",
							  RelationGetNamespace(rel), false);
}

/* A schema-qualified name list for a catalog object in a namespace */
static List *
QualifiedName(Oid namespace_oid, const char *name)
{
	return list_make2(makeString(get_namespace_name(namespace_oid)), makeString(pstrdup(name)));
}

/*
 * Qualify a key column's operator class and collation names, so that the
 * worker finds the same ones whatever its search_path.
 */
static void
QualifyKeyColumn(Relation rel, IndexElem *elem, Oid am_oid, const char *am_name)
{
	Oid			type = elem->expr != NULL ? exprType(elem->expr) :
		get_atttype(RelationGetRelid(rel), get_attnum(RelationGetRelid(rel), elem->name));
	Oid			opclass;
	HeapTuple	tuple;

	if (elem->collation != NIL)
	{
		tuple = SearchSysCache1(COLLOID,
								ObjectIdGetDatum(get_collation_oid(elem->collation, false)));
		if (HeapTupleIsValid(tuple))
		{
			Form_pg_collation form = (Form_pg_collation) GETSTRUCT(tuple);

			elem->collation = QualifiedName(form->collnamespace, NameStr(form->collname));
			ReleaseSysCache(tuple);
		}
	}
	if (elem->opclass == NIL)
		return;
	opclass = ResolveOpClass(elem->opclass, type, am_name, am_oid);
	tuple = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_opclass form = (Form_pg_opclass) GETSTRUCT(tuple);

		elem->opclass = QualifiedName(form->opcnamespace, NameStr(form->opcname));
		ReleaseSysCache(tuple);
	}
}

/*
 * A dry run of CREATE INDEX CONCURRENTLY's own definition code stops here:
 * DefineIndex has made every check it makes before building (those of
 * ComputeIndexAttrs, the privileges, the name) and index_create has made
 * the catalog entries (and its own checks) when it announces the new index
 * to object access hooks.  See DryRunDefineIndex.
 */
static object_access_hook_type prev_object_access_hook = NULL;
static bool dry_run_active = false;
static MemoryContext dry_run_context = NULL;
static char *dry_run_index_name = NULL;
static bool dry_run_wants_definition = false;
static char *dry_run_definition = NULL;
static bool dry_run_wants_copy = false;
static IndexDefinition *dry_run_copy = NULL;

/*
 * An index's definition as pg_get_indexdef_string prints it (the table
 * schema-qualified, the tablespace if not the database's), without its own
 * name: two indexes of a table are the same index under another name if and
 * only if these are equal.  NULL if the text is not as expected.
 */
static char *
DefinitionWithoutName(Oid index_oid)
{
	char	   *definition = pg_get_indexdef_string(index_oid);
	const char *name = quote_identifier(get_rel_name(index_oid));
	char	   *after_keyword = strstr(definition, " INDEX ");

	if (after_keyword == NULL ||
		strncmp(after_keyword + strlen(" INDEX "), name, strlen(name)) != 0)
		return NULL;
	return psprintf("%.*s%s", (int) (after_keyword - definition + strlen(" INDEX")),
					definition, after_keyword + strlen(" INDEX ") + strlen(name));
}

static void
StopDryRunAtIndex(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	Relation	index;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (!dry_run_active || access != OAT_POST_CREATE || classId != RelationRelationId ||
		subId != 0)
		return;
	dry_run_active = false;
	index = RelationIdGetRelation(objectId);
	dry_run_index_name = MemoryContextStrdup(dry_run_context, RelationGetRelationName(index));
	RelationClose(index);
	if (dry_run_wants_definition)
	{
		char	   *definition;

		/* (index_create makes its catalog rows visible so right after) */
		CommandCounterIncrement();
		definition = DefinitionWithoutName(objectId);
		if (definition != NULL)
			dry_run_definition = MemoryContextStrdup(dry_run_context, definition);
	}
	if (dry_run_wants_copy)
	{
		CommandCounterIncrement();
		dry_run_copy = IndexDefinitionCopy(objectId, dry_run_context);
	}
	ereport(ERROR,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("background_ddl: the definition of index \"%s\" was checked",
					dry_run_index_name)));
}

static void
IndexLoad(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = StopDryRunAtIndex;
}

/*
 * Run define(arg), code that creates an index (DefineIndex, or an ALTER
 * TABLE that adds a key), up to the index's catalog entries, in a
 * subtransaction that is rolled back: every error it raises before it
 * would read a row is raised here.  Returns the name the index was given,
 * or NULL with *error, the error define raised first.
 */
char *
IndexDryRun(void (*define) (void *arg), void *arg, ErrorData **error)
{
	MemoryContext caller_context = CurrentMemoryContext;
	ResourceOwner caller_owner = CurrentResourceOwner;

	dry_run_context = caller_context;
	dry_run_index_name = NULL;
	dry_run_definition = NULL;
	dry_run_copy = NULL;
	*error = NULL;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller_context);
	PG_TRY();
	{
		dry_run_active = true;
		define(arg);
		elog(ERROR, "the dry run of an index definition did not stop before building");
	}
	PG_CATCH();
	{
		dry_run_active = false;
		MemoryContextSwitchTo(caller_context);
		*error = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller_context);
		CurrentResourceOwner = caller_owner;
		pgstat_progress_end_command();
	}
	PG_END_TRY();
	return dry_run_index_name;
}

/* What DryRunDefineIndex runs */
typedef struct DefineIndexDryRun
{
	Oid			relid;
	IndexStmt  *stmt;
	bool		partitioned;
	bool		locked;
} DefineIndexDryRun;

static void
DefineIndexUntilCreated(void *arg)
{
	DefineIndexDryRun *dry = arg;

	if (!PgLockRelationWithin(dry->relid, dry->partitioned ? ShareLock : ShareUpdateExclusiveLock,
							  background_ddl_lock_timeout_ms, false))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not lock relation %u for a dry run", dry->relid)));
	dry->locked = true;
	(void) DefineIndex(dry->relid, dry->stmt, InvalidOid, InvalidOid, InvalidOid,
					   false, true, true, false, true);
}

/*
 * Run PostgreSQL's own definition code for the index (DefineIndex, as
 * CREATE INDEX CONCURRENTLY calls it) up to the catalog entries
 * (IndexDryRun): every error it raises is the blocking statement's, raised
 * at submit.  Returns the name it chose for the index.
 *
 * It needs SHARE UPDATE EXCLUSIVE on the table, which writers never wait
 * for, but which VACUUM, ANALYZE and every concurrent index build (another
 * job's among them) hold for as long as they run: it is tried without
 * queueing for it (a build waits for our snapshot: waiting for its lock
 * could deadlock), again every few milliseconds for as long as
 * background_ddl.lock_timeout, and if it never comes free, NULL (the caller
 * then checks what it can by itself).
 */
static char *
DryRunDefineIndex(Oid relid, IndexStmt *stmt, char **definition)
{
	DefineIndexDryRun dry = {.relid = relid, .stmt = copyObject(stmt)};
	ErrorData  *error;
	char	   *name;

	/*
	 * A partitioned table's index is defined as CREATE INDEX defines it (not
	 * concurrently, which PostgreSQL refuses: so does the dry run if the
	 * statement says CONCURRENTLY), under its SHARE lock, which writers wait
	 * for: it is tried without queueing only, and held for the dry run's
	 * few catalog entries.  The dry run stops at the parent's index, before
	 * PostgreSQL would recurse to the partitions.
	 */
	dry.partitioned = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE;
	dry.stmt->concurrent = dry.partitioned ? stmt->concurrent : true;
	dry.stmt->if_not_exists = false;
	dry_run_wants_definition = definition != NULL;
	name = IndexDryRun(DefineIndexUntilCreated, &dry, &error);
	dry_run_wants_definition = false;
	if (definition != NULL)
		*definition = dry_run_definition;
	if (name != NULL)
		return name;
	if (!dry.locked && error->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		return NULL;
	ReThrowError(error);
}

/*
 * In a job's worker: the index of the statement on the table (locked SHARE
 * UPDATE EXCLUSIVE), as PostgreSQL's DefineIndex defines it when run now as
 * the current user, copied from the catalog rows of its dry run (which is
 * rolled back), or the error it raises.
 */
IndexDefinition *
IndexDryRunDefinition(Oid relid, IndexStmt *stmt)
{
	DefineIndexDryRun dry = {.relid = relid, .stmt = copyObject(stmt)};
	ErrorData  *error;

	dry.stmt->concurrent = true;
	dry.stmt->if_not_exists = false;
	dry_run_wants_copy = true;
	(void) IndexDryRun(DefineIndexUntilCreated, &dry, &error);
	dry_run_wants_copy = false;
	if (dry_run_copy == NULL)
		ReThrowError(error);
	return dry_run_copy;
}

/* As DefineIndex: no system column in the columns, expressions or predicate */
static void
CheckNoSystemColumn(Relation rel, IndexStmt *stmt)
{
	Bitmapset  *attnos = NULL;
	bool		system_column = false;
	ListCell   *lc;

	foreach(lc, list_concat_copy(stmt->indexParams, stmt->indexIncludingParams))
	{
		IndexElem  *elem = lfirst(lc);

		if (elem->expr != NULL)
			pull_varattnos(elem->expr, 1, &attnos);
		else
			system_column |= get_attnum(RelationGetRelid(rel), elem->name) < 0;
	}
	pull_varattnos(stmt->whereClause, 1, &attnos);
	for (int attno = FirstLowInvalidHeapAttributeNumber + 1; attno < 0; attno++)
		system_column |= bms_is_member(attno - FirstLowInvalidHeapAttributeNumber, attnos);
	if (system_column)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index creation on system columns is not supported")));
}

/*
 * What the caller can check by itself when the dry run could not lock the
 * table: the checks of DefineIndex that reject definitions people write.
 * Returns the name CREATE INDEX would choose.
 */
static char *
CheckDefinitionAlone(Relation rel, IndexStmt *stmt)
{
	Oid			am_oid;
	IndexAmRoutine *am;
	ListCell   *lc;
	AclResult	aclresult;

	if (rel->rd_rel->relkind != RELKIND_RELATION && rel->rd_rel->relkind != RELKIND_MATVIEW &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot create index on relation \"%s\"", RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind)));
	/* (that a unique index holds the partition key, the worker's first step checks) */
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE && stmt->concurrent)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot create index on partitioned table \"%s\" concurrently",
						RelationGetRelationName(rel))));
	if (list_length(stmt->indexParams) + list_length(stmt->indexIncludingParams) > INDEX_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_COLUMNS),
				 errmsg("cannot use more than %d columns in an index", INDEX_MAX_KEYS)));
	aclresult = pg_namespace_aclcheck(RelationGetNamespace(rel), GetUserId(), ACL_CREATE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_SCHEMA, get_namespace_name(RelationGetNamespace(rel)));
	if (stmt->tableSpace != NULL)
	{
		Oid			tablespace = get_tablespace_oid(stmt->tableSpace, false);

		aclresult = pg_tablespace_aclcheck(tablespace, GetUserId(), ACL_CREATE);
		if (tablespace != MyDatabaseTableSpace && aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_TABLESPACE, stmt->tableSpace);
	}
	am_oid = get_index_am_oid(stmt->accessMethod, false);
	am = GetIndexAmRoutineByAmId(am_oid, false);
	if (stmt->unique && !am->amcanunique)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" does not support unique indexes", stmt->accessMethod)));
	if (stmt->indexIncludingParams != NIL && !am->amcaninclude)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" does not support included columns", stmt->accessMethod)));
	if (list_length(stmt->indexParams) > 1 && !am->amcanmulticol)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" does not support multicolumn indexes", stmt->accessMethod)));
	if (stmt->whereClause != NULL &&
		contain_mutable_functions_after_planning((Expr *) stmt->whereClause))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("functions in index predicate must be marked IMMUTABLE")));
	(void) index_reloptions(am->amoptions,
							transformRelOptions((Datum) 0, stmt->options, NULL, NULL, false, false),
							true);
	foreach(lc, stmt->indexParams)
	{
		IndexElem  *elem = lfirst(lc);
		Oid			type;

		if (elem->expr != NULL)
		{
			type = exprType(elem->expr);
			if (contain_mutable_functions_after_planning((Expr *) elem->expr))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("functions in index expression must be marked IMMUTABLE")));
			/* A type that may not be stored (a pseudo-type such as record) */
			CheckAttributeType(elem->indexcolname ? elem->indexcolname : "expr", type,
							   exprCollation(elem->expr), NIL, 0);
		}
		else
		{
			AttrNumber	attno = get_attnum(RelationGetRelid(rel), elem->name);

			if (attno == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column \"%s\" does not exist", elem->name)));
			type = get_atttype(RelationGetRelid(rel), attno);
		}
		if (!am->amcanorder && (elem->ordering != SORTBY_DEFAULT ||
								elem->nulls_ordering != SORTBY_NULLS_DEFAULT))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("access method \"%s\" does not support %s options",
							stmt->accessMethod,
							elem->ordering != SORTBY_DEFAULT ? "ASC/DESC" : "NULLS FIRST/LAST")));
		(void) ResolveOpClass(elem->opclass, type, stmt->accessMethod, am_oid);
	}
	CheckNoSystemColumn(rel, stmt);
	if (stmt->idxname == NULL)
		return ChooseIndexNameLikeCreateIndex(rel, stmt);
	if (OidIsValid(get_relname_relid(stmt->idxname, RelationGetNamespace(rel))))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", stmt->idxname)));
	return stmt->idxname;
}

/*
 * Does the statement define the invalid index that it finds under its name
 * (InvalidIndexOfName)?  The two definitions are compared without their
 * names, the statement's made by a dry run under a name of its own: every
 * error the statement would raise before it skipped the name, it raises
 * here.  If the dry run cannot lock the table (a VACUUM or another build
 * holds it for longer than lock_timeout), no, saying so: the statement then
 * skips the name, as PostgreSQL does.
 */
static bool
DefinesIndex(Oid relid, IndexStmt *stmt, Oid index_oid)
{
	IndexStmt  *unnamed = copyObject(stmt);
	char	   *definition = NULL;
	char	   *existing = DefinitionWithoutName(index_oid);

	unnamed->idxname = NULL;
	if (DryRunDefineIndex(relid, unnamed, &definition) == NULL)
	{
		ereport(NOTICE,
				(errmsg("invalid index \"%s\" is not rebuilt in the background",
						get_rel_name(index_oid)),
				 errdetail("Comparing its definition with the statement's needs the table's %s lock, which another session held for longer than background_ddl.lock_timeout.",
						   get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE ?
						   "SHARE" : "SHARE UPDATE EXCLUSIVE"),
				 errhint("Run the statement again when it is done.")));
		return false;
	}
	return definition != NULL && existing != NULL && strcmp(definition, existing) == 0;
}

/*
 * The blocking statement's checks, in its order: CONCURRENTLY outside a
 * transaction block, the table (owned by the caller), the statement as
 * CREATE INDEX transforms it, then everything DefineIndex checks (by
 * running it: DryRunDefineIndex).  Leaves the transformed statement, with
 * its name, in submit->pstmt.
 */
static void
IndexValidate(KindSubmit *submit)
{
	IndexStmt  *stmt = copyObject(IndexStatement(submit));
	Oid			relid;
	Relation	rel;
	Oid			am_oid;
	char	   *name;
	ListCell   *lc;
	Oid			future_table;
	int64		ctas_job;
	Oid			rebuilt;

	if (stmt->concurrent)
		PreventInTransactionBlock(submit->context == PROCESS_UTILITY_TOPLEVEL,
								  "CREATE INDEX CONCURRENTLY");

	/*
	 * ACCESS SHARE, not the build's SHARE UPDATE EXCLUSIVE: another job's
	 * build holds that for its whole length, and waits for our snapshot.
	 */
	relid = RangeVarGetRelidExtended(stmt->relation, AccessShareLock, 0,
									 RangeVarCallbackOwnsRelation, NULL);
	stmt = transformIndexStmt(relid, stmt, submit->query_string);
	rebuilt = InvalidIndexOfName(stmt, relid);
	if (OidIsValid(rebuilt))
	{
		if (!DefinesIndex(relid, stmt, rebuilt))
		{
			submit->declined = true;
			return;
		}
		CatalogKindStateSetInt(&submit->kind_state, INDEX_STATE_REBUILDS, rebuilt);
		name = stmt->idxname;
	}
	else
		name = DryRunDefineIndex(relid, stmt, NULL);
	rel = table_open(relid, NoLock);
	if (name == NULL)
		name = CheckDefinitionAlone(rel, stmt);
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		IndexPartitionsCheckSubmit(relid, stmt);
		CatalogKindStateSetInt(&submit->kind_state, INDEX_STATE_PARTITIONED, 1);
	}
	am_oid = get_index_am_oid(stmt->accessMethod, false);
	foreach(lc, stmt->indexParams)
		QualifyKeyColumn(rel, lfirst(lc), am_oid, stmt->accessMethod);
	stmt->idxname = name;
	stmt->relation = makeRangeVar(get_namespace_name(RelationGetNamespace(rel)),
								  pstrdup(RelationGetRelationName(rel)), -1);
	stmt->concurrent = true;
	stmt->if_not_exists = false;
	table_close(rel, NoLock);

	submit->pstmt = copyObject(submit->pstmt);
	submit->pstmt->utilityStmt = (Node *) stmt;

	/*
	 * On the placeholder of a CREATE TABLE AS job still running, checked
	 * as on the table (the same columns, in the same order): the index is
	 * built on the job's hidden table, which takes the placeholder's place
	 * (and keeps its OID), once the job has succeeded.  Its name is reserved
	 * in the placeholder's schema, where the table will be.
	 */
	future_table = KindPlaceholderFutureTable(relid, &ctas_job);
	if (OidIsValid(future_table))
	{
		int64	   *after = palloc(sizeof(int64));

		*after = ctas_job;
		submit->after = lappend(submit->after, after);
		CatalogKindStateSetInt(&submit->kind_state, STATE_NAMESPACE_OID, get_rel_namespace(relid));
		KindIndexSources(submit, relid, stmt->unique);
		relid = future_table;
	}
	CatalogKindStateSetInt(&submit->kind_state, STATE_TABLE_OID, relid);
	if (IndexChunkedBuilds(relid, stmt))
		CatalogKindStateSetInt(&submit->kind_state, INDEX_STATE_CHUNKED, 1);
	KindIndexSources(submit, relid, stmt->unique);
}

/*
 * What name resolution decided for a transformed statement, in a form that
 * PostgreSQL 15 can write and read back (utility statements it cannot):
 * per key column its expression, operator class and collation, and the
 * predicate.
 */
static char *
ResolvedParts(IndexStmt *stmt)
{
	List	   *exprs = NIL;
	List	   *opclasses = NIL;
	List	   *collations = NIL;
	ListCell   *lc;

	foreach(lc, stmt->indexParams)
	{
		IndexElem  *elem = lfirst(lc);

		exprs = lappend(exprs, elem->expr);
		opclasses = lappend(opclasses, elem->opclass);
		collations = lappend(collations, elem->collation);
	}
	return nodeToString(list_make4(exprs, stmt->whereClause, opclasses, collations));
}

/*
 * The statement the worker runs: the submitted one, parsed and transformed
 * again (against the table by OID), with the parts name resolution
 * decided at submit put back, named name, concurrent.
 */
IndexStmt *
IndexStatementToRun(const BgddlJob *job, const char *name)
{
	RawStmt    *raw = linitial_node(RawStmt, raw_parser(job->command, RAW_PARSE_DEFAULT));
	IndexStmt  *stmt = CheckedNode(IndexStmt, raw->stmt);
	List	   *parts = stringToNode(CatalogKindStateText(job->kind_state, STATE_PARTS));
	ListCell   *elem_cell;
	int			i = 0;

	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(IndexedTable(job))),
								  get_rel_name(IndexedTable(job)), -1);
	stmt->idxname = pstrdup(name);
	stmt->concurrent = true;
	stmt->if_not_exists = false;
	stmt = transformIndexStmt(IndexedTable(job), stmt, job->command);
	if (list_length(stmt->indexParams) != list_length(linitial(parts)))
		elog(ERROR, "the index of background DDL job %lld changed its columns",
			 (long long) job->id);
	foreach(elem_cell, stmt->indexParams)
	{
		IndexElem  *elem = lfirst(elem_cell);

		elem->expr = list_nth(linitial(parts), i);
		elem->opclass = list_nth(lthird(parts), i);
		elem->collation = list_nth(lfourth(parts), i);
		i++;
	}
	stmt->whereClause = lsecond(parts);
	return stmt;
}

/*
 * Reserve the name: an empty, unpopulated materialized view of that name in
 * the table's schema, made by running CREATE MATERIALIZED VIEW name AS
 * SELECT WITH NO DATA as the submitting role.  Like the invalid index that
 * takes its place, it goes with the table (an automatic dependency): DROP
 * TABLE drops it, and the job ends, cancelled.
 */
Oid
IndexReserveName(KindSubmit *submit, Oid table_oid, Oid namespace_oid, const char *name)
{
	ObjectAddress placeholder;
	ObjectAddress table;
	RawStmt    *raw = linitial_node(RawStmt, raw_parser("SELECT", RAW_PARSE_DEFAULT));
	Query	   *empty = parse_analyze_fixedparams(raw, "SELECT", NULL, 0, NULL);
	CreateTableAsStmt *ctas = makeNode(CreateTableAsStmt);
	PlannedStmt *pstmt = makeNode(PlannedStmt);
	Oid			relid;

	ctas->query = (Node *) empty;
	ctas->objtype = OBJECT_MATVIEW;
	ctas->into = makeNode(IntoClause);
	ctas->into->rel = makeRangeVar(get_namespace_name(namespace_oid), pstrdup(name), -1);
	ctas->into->skipData = true;
	ctas->into->viewQuery = (Node *) copyObject(empty);
	pstmt->commandType = CMD_UTILITY;
	pstmt->utilityStmt = (Node *) ctas;
	pstmt->stmt_location = -1;
	submit->run_utility(submit, pstmt);
	CommandCounterIncrement();
	relid = get_relname_relid(name, namespace_oid);
	if (!OidIsValid(relid))
		elog(ERROR, "placeholder \"%s\" was not created", name);
	ObjectAddressSet(placeholder, RelationRelationId, relid);
	ObjectAddressSet(table, RelationRelationId, table_oid);
	recordDependencyOn(&placeholder, &table, DEPENDENCY_AUTO);
	CommandCounterIncrement();
	PgRelationSetExtensionMember(relid, CatalogRequire()->extension_oid, true);
	return relid;
}

static void
IndexReserve(KindSubmit *submit)
{
	IndexStmt  *stmt = IndexStatement(submit);
	Oid			table_oid = (Oid) CatalogKindStateInt(submit->kind_state, STATE_TABLE_OID);
	Oid			namespace_oid = CatalogKindStateInt(submit->kind_state, STATE_NAMESPACE_OID) != 0 ?
		(Oid) CatalogKindStateInt(submit->kind_state, STATE_NAMESPACE_OID) :
		get_rel_namespace(table_oid);
	Oid			rebuilt = (Oid) CatalogKindStateInt(submit->kind_state, INDEX_STATE_REBUILDS);

	/*
	 * An invalid index to rebuild is the job's target from the start, as if
	 * the job's own build had been interrupted: its worker drops it and
	 * reserves its name again in one transaction, then builds it.
	 */
	submit->target_oid = OidIsValid(rebuilt) ? rebuilt :
		IndexReserveName(submit, table_oid, namespace_oid, stmt->idxname);
	submit->target_name = quote_qualified_identifier(get_namespace_name(namespace_oid),
													 stmt->idxname);
	if (CatalogKindStateInt(submit->kind_state, INDEX_STATE_CHUNKED) != 0)
		submit->strategy = pstrdup(!OidIsValid(rebuilt) ? STRATEGY_CHUNKED_INDEX :
								   STRATEGY_CHUNKED_REBUILD);
	else
		submit->strategy = pstrdup(!OidIsValid(rebuilt) ? STRATEGY_CONCURRENT_INDEX :
								   get_rel_relkind(rebuilt) == RELKIND_PARTITIONED_INDEX ?
								   STRATEGY_REBUILD_PARTITIONS : STRATEGY_REBUILD_INVALID_INDEX);
	CatalogKindStateSetText(&submit->kind_state, STATE_PARTS, ResolvedParts(stmt));
}

/* Nothing to decide: the statement says it all */
void
IndexPlan(JobRun *run)
{
	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	run->job.planned = true;
	CatalogJobRecordPlan(&run->job);
	JobStepEnd();
}

/*
 * In the worker, after a crash in the middle of a build: drop the invalid
 * index of the job on table_oid and reserve its name again
 * (IndexReserveName, as the job's role), in one transaction (a
 * LockingStep: dropping an index locks its table).  The placeholder's OID.
 */
Oid
IndexRestartBuild(const BgddlJob *job, Oid index, Oid table_oid)
{
	KindSubmit	reserve = {0};
	Oid			saved_userid;
	int			saved_sec_context;
	Oid			placeholder;
	char	   *name = get_rel_name(index);

	IndexBuildDrop(index);
	ereport(LOG,
			(errmsg("background DDL job %lld: dropped the invalid index \"%s\" left by an interrupted build; the build restarts",
					(long long) job->id, name)));

	reserve.query_string = job->command;
	reserve.run_utility = RunUtilityInWorker;
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(job->identity.owner_oid, saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	placeholder = IndexReserveName(&reserve, table_oid, get_rel_namespace(table_oid), name);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	return placeholder;
}

/* After a crash in the middle of the build (IndexRestartBuild) */
void
IndexRestartBuildStep(JobRun *run, void *arg)
{
	run->job.target_oid = IndexRestartBuild(&run->job, run->job.target_oid,
											IndexedTable(&run->job));
	CatalogJobRecordTarget(run->job.id, run->job.target_oid);
}

/* Why the index or its placeholder is gone: with its table, perhaps */
const char *
IndexGoneReason(const BgddlJob *job)
{
	return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(IndexedTable(job))) ?
		NULL : "the table was dropped";
}

/*
 * Is the indexed table still there?  If not, the job is over, and says so.
 * Caller is in a step; a lock on the table keeps the answer true.
 */
bool
IndexTableExists(JobRun *run)
{
	run->gone_reason = IndexGoneReason(&run->job);
	return run->gone_reason == NULL;
}

/*
 * In a step of its own: do the table and the job's target still exist, and
 * is the target an index yet (*is_index), and valid (*valid)?
 */
bool
IndexCheck(JobRun *run, bool *is_index, bool *valid)
{
	bool		exists;

	JobStepBegin("background_ddl: checking the index", STEP_READ_COMMITTED);
	exists = IndexTableExists(run) && JobRunTargetExists(run);
	*is_index = IndexBuildIsIndex(run->job.target_oid, valid);
	JobStepEnd();
	return exists;
}

/*
 * In a group, in the last transaction of CREATE INDEX CONCURRENTLY:
 * index_oid (of table_oid) held back invalid (IndexBuildHoldBack) until the
 * group's transaction (IndexMarkValid); its job knows it is held
 * (IndexHeld).
 */
void
IndexHoldBack(JobRun *run, Oid index_oid, Oid table_oid)
{
	IndexBuildHoldBack(index_oid, table_oid);
	JobRunSetStateInt(run, STATE_HELD, 1);
	CatalogJobRecordKindState(&run->job);
}

/* Is the job's index built, and held back for its group (IndexHoldBack)? */
bool
IndexHeld(const BgddlJob *job)
{
	return CatalogKindStateInt(job->kind_state, STATE_HELD) != 0;
}

/*
 * CREATE INDEX CONCURRENTLY with the stored statement.  Its first phase
 * commits the placeholder's drop, the index's OID in the job row and the
 * invalid index together.  Runs as the submitting role, with
 * statement_timeout armed for the whole build.
 */
static JobStepResult
BuildIndex(JobRun *run)
{
	IndexStmt  *stmt;
	Oid			index_oid;
	Oid			table_oid = IndexedTable(&run->job);

	/*
	 * Wait for other index builds on the table (CREATE INDEX CONCURRENTLY
	 * holds ShareUpdateExclusive throughout) before taking a snapshot: a
	 * build waits for older snapshots, so waiting for its lock with one
	 * would deadlock.
	 */
	JobStepBegin("background_ddl: building the index", STEP_NO_SNAPSHOT);
	LockRelationOid(table_oid, ShareUpdateExclusiveLock);
	if (!IndexTableExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	PushActiveSnapshot(GetTransactionSnapshot());
	/* The placeholder's name now: it may have been renamed */
	stmt = IndexStatementToRun(&run->job, get_rel_name(run->job.target_oid));
	PgRelationDrop(run->job.target_oid);
	index_oid = IndexBuildNewOid(table_oid, stmt->tableSpace);
	run->job.target_oid = index_oid;
	CatalogJobRecordTarget(run->job.id, index_oid);
	(void) IndexBuildDefine(&run->job, table_oid, stmt, index_oid, InvalidOid);
	if (JobRunPublishesLater(&run->job))
		IndexHoldBack(run, index_oid, table_oid);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/* The whole build is one step of the backfill */
static JobStepResult
IndexBackfillStep(JobRun *run)
{
	bool		valid;
	bool		is_index;

	JobStepHoldPoint("chunk 0");
	if (!IndexCheck(run, &is_index, &valid))
		return JOB_STEP_TARGET_GONE;
	if (is_index && (valid || IndexHeld(&run->job)))
		return JOB_STEP_DONE;
	if (is_index)
	{
		JobRunLockingStep(run, IndexRestartBuildStep, NULL, JOB_PHASE_BACKFILLING,
						  "background_ddl: dropping an invalid index");
		return JOB_STEP_MORE;
	}
	return BuildIndex(run);
}

/*
 * The index is valid (or, may_stay_invalid, as valid as it can be): the job
 * succeeded
 */
JobStepResult
IndexPublish(JobRun *run, bool may_stay_invalid)
{
	bool		valid;

	JobStepHoldPoint("cutting over");
	JobStepBegin("background_ddl: cutting over", STEP_READ_COMMITTED);
	if (!IndexTableExists(run) || !IndexBuildIsIndex(run->job.target_oid, &valid))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	if (!valid && !may_stay_invalid)
		elog(ERROR, "index %u of background DDL job %lld is not valid",
			 run->job.target_oid, (long long) run->job.id);
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/*
 * The cut-over: an index held back invalid once built (its cut-over waited,
 * or waits no more: JobRunPublishesLater at its build) is marked valid
 * now, by the parts of the cut-over (JobPublishAlone)
 */
JobStepResult
IndexCutOver(JobRun *run)
{
	bool		is_index;
	bool		valid;

	if (IndexCheck(run, &is_index, &valid) && is_index && !valid)
		return JobPublishAlone(run);
	return IndexPublish(run, false);
}

/* The rows written to the indexed table (background_ddl.cutover_max_writes), in a step */
int64
IndexWritesToTable(const BgddlJob *job)
{
	return PgTableTreeWrites(IndexedTable(job));
}

/* A group's publication: the index's table, as CREATE INDEX CONCURRENTLY holds it */
void
IndexCutOverLock(JobRun *run)
{
	JobStepLockRelation(IndexedTable(&run->job), ShareUpdateExclusiveLock,
						background_ddl_lock_timeout_ms);
}

/*
 * In a group's transaction: index_oid (of table_oid), held back invalid
 * once built (built: its job says so), marked valid.  False if it was valid
 * already (a rewrite of the table may have made it valid).
 */
bool
IndexMarkValid(const BgddlJob *job, Oid index_oid, Oid table_oid, bool built)
{
	bool		valid;

	if (IndexBuildIsIndex(index_oid, &valid) && valid)
		return false;
	if (!built)
		elog(ERROR, "index %u of background DDL job %lld is not built",
			 index_oid, (long long) job->id);
	IndexBuildSetValid(index_oid, table_oid);
	return true;
}

/*
 * ... and, in the group's transaction, the job's index marked valid
 * (IndexMarkValid; *marked: whether it was)
 */
JobStepResult
IndexPublishHeld(JobRun *run, bool built, bool *marked)
{
	bool		valid;

	*marked = false;
	JobRunRecordPhase(run, JOB_PHASE_CUTTING_OVER);
	if (!IndexTableExists(run) || !JobRunTargetExists(run) ||
		!IndexBuildIsIndex(run->job.target_oid, &valid))
		return JOB_STEP_TARGET_GONE;
	*marked = IndexMarkValid(&run->job, run->job.target_oid, IndexedTable(&run->job), built);
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	return JOB_STEP_DONE;
}

/* IndexPublishHeld of an index that CREATE INDEX CONCURRENTLY built (BuildIndex) */
static JobStepResult
IndexCutOverPublish(JobRun *run)
{
	bool		marked;

	return IndexPublishHeld(run, IndexHeld(&run->job), &marked);
}

/*
 * In the submitting transaction: the index, built as the blocking CREATE
 * INDEX builds it (in a transaction block, not concurrently), in the
 * placeholder's place.
 */
Oid
IndexBuildHere(const BgddlJob *job)
{
	IndexStmt  *stmt = IndexStatementToRun(job, get_rel_name(job->target_oid));
	JobRun		run = {.job = *job};
	Oid			saved_userid;
	int			saved_sec_context;
	ObjectAddress index;

	stmt->concurrent = false;
	LockRelationOid(IndexedTable(job), ShareLock);
	PgRelationDrop(job->target_oid);
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(job->identity.owner_oid,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	index = DefineIndex(IndexedTable(job), stmt, InvalidOid, InvalidOid, InvalidOid,
						false, true, true, false, true);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	CommandCounterIncrement();
	JobRunSucceeded(&run, index.objectId, false, -1);
	return index.objectId;
}

/* Drop the index (valid or not) or the placeholder */
static void
IndexDiscard(const BgddlJob *job, bool keep_target)
{
	if (!keep_target)
		IndexBuildDrop(job->target_oid);
}

/*
 * The view's progress of the job: its worker's build as
 * pg_stat_progress_create_index shows it (phase, tuples, a percentage of
 * CREATE INDEX CONCURRENTLY's phases), while it builds
 */
void
IndexProgress(const BgddlJob *job, pid_t pid, KindProgress *progress)
{
	IndexBuildProgress build;

	if (pid == 0 || !IndexBuildProgressOf(pid, &build))
		return;
	progress->phase = build.phase;
	if (build.waiting)
		progress->waiting_for = build.phase;
	progress->percent = build.percent;
	progress->rows_done = build.tuples_done;
	if (build.tuples_total > 0)
		progress->rows_total = build.tuples_total;
}

/* A placeholder can go in any transaction; an index needs its table locked */
bool
IndexDiscardsInAnyTransaction(const BgddlJob *job)
{
	char		relkind = get_rel_relkind(job->target_oid);

	return relkind != RELKIND_INDEX && relkind != RELKIND_PARTITIONED_INDEX;
}

/* explain_ddl: CREATE INDEX, on a table or a partitioned table */
static const char *
IndexExplain(Node *raw_statement, const char *query_string)
{
	Oid			relid;

	if (!IsA(raw_statement, IndexStmt))
		return NULL;
	relid = RangeVarGetRelid(((IndexStmt *) raw_statement)->relation, NoLock, true);
	if (OidIsValid(relid) && get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		return STRATEGY_PARTITIONS;
	return OidIsValid(relid) && IndexChunkedBuilds(relid, (IndexStmt *) raw_statement) ?
		STRATEGY_CHUNKED_INDEX : STRATEGY_CONCURRENT_INDEX;
}

/* estimate_ddl: a rolled-back build on a sample of the table (index_estimate.c) */
static bool
IndexEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	if (!IsA(raw_statement, IndexStmt))
		return false;
	IndexJobEstimate((IndexStmt *) raw_statement, query_string, estimate);
	estimate->strategy = pstrdup(KindExplain(raw_statement, query_string));
	return true;
}

const KindRoutine kind_index_routine = {
	.name = "CREATE INDEX",
	.stands_for = OBJECT_INDEX,
	.replaces_placeholder = true,
	.waits_for_older_snapshots = true,
	.cut_over_publishes = true,
	.load = IndexLoad,
	.accepts = IndexAccepts,
	.validate = IndexValidate,
	.reserve = IndexReserve,
	.explain = IndexExplain,
	.estimate = IndexEstimate,
	.plan = IndexPlan,
	.backfill_step = IndexBackfillStep,
	.cut_over = IndexCutOver,
	.cut_over_lock = IndexCutOverLock,
	.cut_over_publish = IndexCutOverPublish,
	.writes_to_sources = IndexWritesToTable,
	.progress = IndexProgress,
	.gone_reason = IndexGoneReason,
	.discard = IndexDiscard,
	.build_here = IndexBuildHere,
	.discards_in_any_transaction = IndexDiscardsInAnyTransaction,
};
