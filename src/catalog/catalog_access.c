/*-------------------------------------------------------------------------
 *
 * catalog_access.c
 *	  Finding the extension's catalog, and running statements on it safely.
 *
 * Ordinary roles have no privilege on the tables of schema background_ddl:
 * they submit jobs through the ProcessUtility hook and read them through
 * pg_stat_background_ddl.  So every catalog statement runs as the bootstrap
 * superuser, which makes two rules essential:
 *
 *	1. Trust nothing a non-superuser could have created.  The catalog is
 *	   found through pg_extension: the installed extension, the schema that
 *	   is a member of it, and the relations and function in that schema that
 *	   are members of it, each checked by OID.  Only a superuser can install
 *	   this extension or add members to it, and only the schema's owner (a
 *	   superuser) can create objects in it.  A database without the extension
 *	   has no catalog: every entry point is then a no-op or says that the
 *	   extension is not installed, whatever objects of that name exist.
 *	2. Run nothing a session could redirect: a fixed search_path (pg_catalog
 *	   first, pg_temp last), SECURITY_RESTRICTED_OPERATION, values bound as
 *	   parameters, and no user-supplied SQL text; and create nothing where
 *	   the session's settings would put it (default_tablespace and
 *	   default_table_access_method are pinned).
 *	3. Own nothing that holds a user's data: a relation we create for a job
 *	   belongs to the role whose query fills it (query_partial_agg.c), because
 *	   ANALYZE and autovacuum run a column type's code as its owner.
 *
 * The lookup is cached per backend and forgotten at any relcache
 * invalidation, so creating or dropping the extension is seen at the next
 * transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "catalog/settings.h"
#include "pg/pg_compat.h"

static BgddlCatalog cached_catalog;
static bool cached_catalog_valid = false;
static uint64 catalog_invalidations = 0;

static void
CatalogCacheInvalidate(Datum arg, Oid relid)
{
	cached_catalog_valid = false;
	catalog_invalidations++;
}

/* Register the invalidation callback; called from _PG_init */
void
CatalogCacheInstall(void)
{
	CacheRegisterRelcacheCallback(CatalogCacheInvalidate, (Datum) 0);
}

/* A relation of our schema that is a member of the extension, or InvalidOid */
static Oid
ExtensionRelation(const BgddlCatalog *catalog, const char *relname)
{
	Oid			relid = get_relname_relid(relname, catalog->schema_oid);

	if (!OidIsValid(relid) ||
		getExtensionOfObject(RelationRelationId, relid) != catalog->extension_oid)
		return InvalidOid;
	return relid;
}

/*
 * Is this relation (an extension member) one that the extension's script
 * creates: a catalog table, its sequence, or the view, rather than one a
 * job created?  By name: only the extension's script and its jobs create
 * members, and ordinary roles cannot create relations in our schema.
 */
bool
CatalogIsScriptRelation(Oid relnamespace, const char *relname, char relkind)
{
	static const char *const catalog_relations[] = {
		"job", "job_id_seq", "chunk", "capture", "dirty", "recomputed", "message"
	};

	if (relkind == RELKIND_VIEW)
		return strcmp(relname, BGDDL_VIEW_NAME) == 0;
	if (relnamespace != get_namespace_oid(BGDDL_SCHEMA_NAME, true))
		return false;
	for (int i = 0; i < lengthof(catalog_relations); i++)
		if (strcmp(relname, catalog_relations[i]) == 0)
			return true;
	return false;
}

/*
 * The installed extension's catalog, or NULL if the extension is not
 * installed in this database (or is being created or dropped).  Caller is in
 * a transaction.
 */
const BgddlCatalog *
CatalogLookup(void)
{
	BgddlCatalog catalog;
	uint64		invalidations_before = catalog_invalidations;

	if (cached_catalog_valid)
		return &cached_catalog;

	memset(&catalog, 0, sizeof(catalog));
	catalog.extension_oid = get_extension_oid(BGDDL_EXTENSION_NAME, true);
	if (!OidIsValid(catalog.extension_oid))
		return NULL;
	catalog.schema_oid = get_namespace_oid(BGDDL_SCHEMA_NAME, true);
	if (!OidIsValid(catalog.schema_oid) ||
		getExtensionOfObject(NamespaceRelationId, catalog.schema_oid) != catalog.extension_oid)
		return NULL;
	catalog.job_relid = ExtensionRelation(&catalog, "job");
	catalog.capture_relid = ExtensionRelation(&catalog, "capture");
	catalog.chunk_relid = ExtensionRelation(&catalog, "chunk");
	catalog.dirty_relid = ExtensionRelation(&catalog, "dirty");
	catalog.recomputed_relid = ExtensionRelation(&catalog, "recomputed");
	/* By name in our schema, without the caller's USAGE on it */
	catalog.capture_function_oid =
		GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum("capture_changes"),
						PointerGetDatum(buildoidvector(NULL, 0)),
						ObjectIdGetDatum(catalog.schema_oid));
	if (!OidIsValid(catalog.job_relid) || !OidIsValid(catalog.capture_relid) ||
		!OidIsValid(catalog.chunk_relid) ||
		!OidIsValid(catalog.dirty_relid) || !OidIsValid(catalog.recomputed_relid) ||
		!OidIsValid(catalog.capture_function_oid) ||
		getExtensionOfObject(ProcedureRelationId, catalog.capture_function_oid) != catalog.extension_oid)
		return NULL;			/* in the middle of CREATE or DROP EXTENSION */

	cached_catalog = catalog;
	/* An invalidation during the lookup may have made it stale already */
	cached_catalog_valid = (catalog_invalidations == invalidations_before);
	return &cached_catalog;
}

/* The catalog, or an error saying that the extension is not installed */
const BgddlCatalog *
CatalogRequire(void)
{
	const BgddlCatalog *catalog = CatalogLookup();

	if (catalog == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						BGDDL_EXTENSION_NAME),
				 errhint("Run CREATE EXTENSION %s.", BGDDL_EXTENSION_NAME)));
	return catalog;
}

/*
 * Enter the catalog's security context: the bootstrap superuser, under
 * SECURITY_RESTRICTED_OPERATION, with a fixed search_path in a new GUC nest
 * level.  A background worker also drops the job's lock and statement
 * timeouts here: they are the submitter's, meant for the job's own
 * statements.  Caller is in a transaction and has checked CatalogRequire().
 */
void
CatalogAccessBegin(CatalogAccess *access)
{
	access->caller_context = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GetUserIdAndSecContext(&access->saved_userid, &access->saved_sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   access->saved_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	access->guc_nest_level = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	/* What we create lands where we say, not where the session's settings say */
	(void) set_config_option("default_tablespace", "",
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	(void) set_config_option("default_table_access_method", DEFAULT_TABLE_ACCESS_METHOD,
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (IsBackgroundWorker)
	{
		(void) set_config_option("lock_timeout", "0", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("statement_timeout", "0", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
}

void
CatalogAccessEnd(CatalogAccess *access)
{
	AtEOXact_GUC(true, access->guc_nest_level);
	SetUserIdAndSecContext(access->saved_userid, access->saved_sec_context);
	SPI_finish();
}

/*
 * Run one catalog statement, inside CatalogAccessBegin/End.  Errors out
 * unless SPI reports expected_result; returns the number of rows processed.
 */
uint64
CatalogExecute(const char *sql, int nargs, Oid *argtypes, Datum *values,
			   const char *nulls, int expected_result)
{
	int			result;

	result = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	if (result != expected_result)
		elog(ERROR, "background_ddl catalog statement failed (%d): %s", result, sql);
	return SPI_processed;
}

/*
 * Run a catalog query under a fresh snapshot, so that a caller in a
 * REPEATABLE READ transaction (or a long wait) still sees the newest
 * committed state.
 */
uint64
CatalogExecuteLatest(const char *sql, int nargs, Oid *argtypes, Datum *values,
					 int expected_result)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL ||
		SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(),
							 InvalidSnapshot, true, false, 0) != expected_result)
		elog(ERROR, "background_ddl catalog statement failed: %s", sql);
	return SPI_processed;
}

/* Run one catalog statement in a catalog access of its own */
void
CatalogRun(const char *sql, int nargs, Oid *argtypes, Datum *values, const char *nulls,
		   int expected_result)
{
	CatalogAccess access;

	CatalogAccessBegin(&access);
	CatalogExecute(sql, nargs, argtypes, values, nulls, expected_result);
	CatalogAccessEnd(&access);
}

/* Run catalog statements whose only parameter ($1) is a job id */
void
CatalogExecuteForJob(int64 job_id, int nstatements, const char *const *statements,
					 const int *expected_results)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};

	CatalogAccessBegin(&access);
	for (int i = 0; i < nstatements; i++)
		CatalogExecute(statements[i], 1, argtypes, values, NULL, expected_results[i]);
	CatalogAccessEnd(&access);
}

/*
 * The first column of the first row of a catalog query whose only
 * parameter ($1) is a job id (a pass-by-value type), or null_value.
 */
Datum
CatalogValueForJob(const char *sql, int64 job_id, Datum null_value)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};
	Datum		value = null_value;

	CatalogAccessBegin(&access);
	CatalogExecute(sql, 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		value = CatalogColumn(0, 1, null_value);
	CatalogAccessEnd(&access);
	return value;
}

/*
 * Open one of our tables, and check that its columns are the ones this
 * library reads by attribute number (an extension script of another
 * version would have them elsewhere).
 */
static Relation
CatalogTableOpen(Oid relid, LOCKMODE lockmode, const char *const *columns, int ncolumns)
{
	Relation	rel = table_open(relid, lockmode);
	TupleDesc	desc = RelationGetDescr(rel);
	bool		matches = desc->natts == ncolumns;

	for (int i = 0; matches && i < ncolumns; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);

		matches = !attr->attisdropped && strcmp(NameStr(attr->attname), columns[i]) == 0;
	}
	if (!matches)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s.%s does not have the columns that the library of extension \"%s\" expects",
						BGDDL_SCHEMA_NAME, RelationGetRelationName(rel), BGDDL_EXTENSION_NAME),
				 errhint("Install the library that belongs to the installed version of the extension.")));
	return rel;
}

/* The tuple id of the version of the row with this key that snapshot sees */
static bool
CatalogRowFind(Relation rel, int64 key, Snapshot snapshot, ItemPointer tid)
{
	ScanKeyData scankey;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found;

	ScanKeyInit(&scankey, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(key));
	scan = systable_beginscan(rel, RelationGetPrimaryKeyIndex(rel), true, snapshot, 1, &scankey);
	tuple = systable_getnext(scan);
	found = HeapTupleIsValid(tuple);
	if (found)
		*tid = tuple->t_self;
	systable_endscan(scan);
	return found;
}

/* Fetch the row's columns out of its slot */
static void
CatalogRowDeform(CatalogRow *row)
{
	slot_getallattrs(row->slot);
	row->values = row->slot->tts_values;
	row->nulls = row->slot->tts_isnull;
}

/*
 * Read the row with this key (of the table relid, whose columns must be
 * columns): as the active snapshot sees it, or with latest as a fresh
 * snapshot does (a REPEATABLE READ transaction, or a long wait, still sees
 * the row move).  Returns false if there is none.  The values stay valid
 * until CatalogRowClose.  Caller is in a transaction.
 */
bool
CatalogRowRead(CatalogRow *row, Oid relid, const char *const *columns, int ncolumns,
			   int64 key, bool latest)
{
	Snapshot	snapshot = RegisterSnapshot(latest ? GetLatestSnapshot() : GetActiveSnapshot());
	ItemPointerData tid;
	bool		found;

	row->rel = CatalogTableOpen(relid, AccessShareLock, columns, ncolumns);
	row->slot = table_slot_create(row->rel, NULL);
	found = CatalogRowFind(row->rel, key, snapshot, &tid) &&
		table_tuple_fetch_row_version(row->rel, &tid, snapshot, row->slot);
	UnregisterSnapshot(snapshot);
	if (found)
		CatalogRowDeform(row);
	return found;
}

/*
 * Lock the latest version of the row with this key for an update, waiting
 * for a transaction that is updating it, as UPDATE does in READ COMMITTED
 * (whatever this transaction's isolation: our rows are bookkeeping, never
 * part of a snapshot's result).  Several workers of a job, and the control
 * functions, update a job's row concurrently.  Returns false if the row is
 * gone.  The lock lasts until the transaction ends.
 */
bool
CatalogRowLock(CatalogRow *row, Oid relid, const char *const *columns, int ncolumns,
			   int64 key)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ItemPointerData tid;
	TM_FailureData failure;
	TM_Result	result = TM_Deleted;

	row->rel = CatalogTableOpen(relid, RowExclusiveLock, columns, ncolumns);
	row->slot = table_slot_create(row->rel, NULL);
	if (CatalogRowFind(row->rel, key, snapshot, &tid))
		result = table_tuple_lock(row->rel, &tid, snapshot, row->slot,
								  GetCurrentCommandId(true), LockTupleNoKeyExclusive,
								  LockWaitBlock, TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &failure);
	UnregisterSnapshot(snapshot);
	if (result == TM_Deleted)
		return false;
	if (result != TM_Ok)
		elog(ERROR, "could not lock row %lld of %s (result %d)",
			 (long long) key, RelationGetRelationName(row->rel), (int) result);
	CatalogRowDeform(row);
	return true;
}

/* Change a column of a locked row (in memory, until CatalogRowWrite) */
void
CatalogRowSet(CatalogRow *row, AttrNumber attno, Datum value, bool isnull)
{
	row->values[attno - 1] = isnull ? (Datum) 0 : value;
	row->nulls[attno - 1] = isnull;
}

/*
 * Write a locked row back with its changed columns, and make the change
 * visible to the rest of the transaction.  Through the table access method
 * and the executor, as an UPDATE writes it: its CHECK and NOT NULL
 * constraints checked, every index (a partial or an expression one too)
 * maintained.  (CatalogTupleUpdate is for the system catalogs, which have
 * neither.)
 */
void
CatalogRowWrite(CatalogRow *row)
{
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *result_rel = makeNode(ResultRelInfo);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(row->rel),
													table_slot_callbacks(row->rel));
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes;
#else
	bool		update_indexes;
#endif

	/* (no range table: the executor asks it for nothing an update needs) */
	InitResultRelInfo(result_rel, row->rel, 0, NULL, 0);
	ExecOpenIndices(result_rel, false);
	ExecClearTuple(slot);
	memcpy(slot->tts_values, row->values, sizeof(Datum) * RelationGetDescr(row->rel)->natts);
	memcpy(slot->tts_isnull, row->nulls, sizeof(bool) * RelationGetDescr(row->rel)->natts);
	ExecStoreVirtualTuple(slot);
	if (row->rel->rd_att->constr != NULL)
		ExecConstraints(result_rel, slot, estate);
	/* The row is locked (CatalogRowLock): nobody else updates it meanwhile */
	simple_table_tuple_update(row->rel, &row->slot->tts_tid, slot, snapshot, &update_indexes);
#if PG_VERSION_NUM >= 160000
	if (update_indexes != TU_None && result_rel->ri_NumIndices > 0)
		(void) PgExecUpdateIndexTuples(result_rel, slot, estate, update_indexes == TU_Summarizing);
#else
	if (update_indexes && result_rel->ri_NumIndices > 0)
		(void) PgExecUpdateIndexTuples(result_rel, slot, estate, false);
#endif
	UnregisterSnapshot(snapshot);
	ExecCloseIndices(result_rel);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	CommandCounterIncrement();
}

void
CatalogRowClose(CatalogRow *row)
{
	ExecDropSingleTupleTableSlot(row->slot);
	table_close(row->rel, NoLock);
}

/* A text column of a row as a C string; NULL if null */
char *
CatalogRowText(const CatalogRow *row, AttrNumber attno)
{
	return row->nulls[attno - 1] ? NULL : TextDatumGetCString(row->values[attno - 1]);
}

/* An oid[] (or bigint[] of xids) column of a row as a List of Oids; NIL if null */
List *
CatalogRowOids(const CatalogRow *row, AttrNumber attno)
{
	return row->nulls[attno - 1] ? NIL : CatalogOidList(row->values[attno - 1]);
}

/* Column attno of row of the current SPI result, or null_value */
Datum
CatalogColumn(uint64 row, int attno, Datum null_value)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
									  attno, &isnull);

	return isnull ? null_value : value;
}

bool
CatalogColumnIsNull(uint64 row, int attno)
{
	bool		isnull;

	(void) SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, attno, &isnull);
	return isnull;
}

/* An oid[] (or bigint[] of xids, as CatalogXidArray makes) as a List of Oids */
List *
CatalogOidList(Datum array_datum)
{
	ArrayType  *array = DatumGetArrayTypeP(array_datum);
	List	   *oids = NIL;
	Datum	   *elems;
	int			nelems;

	if (ARR_ELEMTYPE(array) == INT8OID)
	{
		deconstruct_array(array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elems, NULL, &nelems);
		for (int i = 0; i < nelems; i++)
			oids = lappend_oid(oids, (Oid) DatumGetInt64(elems[i]));
		return oids;
	}
	deconstruct_array(array, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
					  &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
		oids = lappend_oid(oids, DatumGetObjectId(elems[i]));
	return oids;
}

/* A text[] as a List of C strings */
List *
CatalogTextList(Datum array)
{
	List	   *strings = NIL;
	Datum	   *elems;
	int			nelems;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
		strings = lappend(strings, TextDatumGetCString(elems[i]));
	return strings;
}

/* A List of Oids as an oid[], or (as_bigint) a bigint[] */
static Datum
OidListArray(List *oids, bool as_bigint)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, oids)
		elems[i++] = as_bigint ? Int64GetDatum((int64) lfirst_oid(lc)) :
			ObjectIdGetDatum(lfirst_oid(lc));
	if (as_bigint)
		return PointerGetDatum(construct_array(elems, i, INT8OID, sizeof(int64),
											   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	return PointerGetDatum(construct_array(elems, i, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

Datum
CatalogOidArray(List *oids)
{
	return OidListArray(oids, false);
}

Datum
CatalogTextArray(List *strings)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(strings), 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, strings)
		elems[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(elems, i, TEXTOID, -1, false, TYPALIGN_INT));
}

Datum
CatalogTidArray(ItemPointer tids, int ntids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(ntids, 1));

	for (int i = 0; i < ntids; i++)
		elems[i] = ItemPointerGetDatum(&tids[i]);
	return PointerGetDatum(construct_array(elems, ntids, TIDOID, sizeof(ItemPointerData),
										   false, TYPALIGN_SHORT));
}

/*
 * Transaction ids (as a List of Oids: trigger row versions) as a bigint[],
 * read back by CatalogOidList
 */
Datum
CatalogXidArray(List *xids)
{
	return OidListArray(xids, true);
}
