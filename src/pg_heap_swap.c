/*-------------------------------------------------------------------------
 *
 * pg_heap_swap.c
 *	  A hidden heap for a materialized view's new content, and the swap of
 *	  the view's storage (heap, TOAST table and indexes) with it.
 *
 * A background REFRESH builds the new content into a hidden heap while the
 * old content stays readable.  The hidden heap has the view's tuple
 * descriptor, owner, tablespace, access method and options; it lives in the
 * extension's schema, where nobody else can reach it.
 *
 * At the cut-over, copies of the view's indexes are built on the hidden
 * heap (the view stays readable meanwhile), and only then, under ACCESS
 * EXCLUSIVE on the view, the two relations swap their storage: heap files,
 * TOAST tables (by their links, as CLUSTER does when a TOAST table may
 * come or go), and each index's files with its copy's.  That takes the
 * same short time whatever the view's size: CLUSTER's finish_heap_swap
 * would rebuild the view's indexes under the lock instead.  The hidden heap
 * then holds the old storage and is dropped with it.
 *
 * relfrozenxid and relminmxid come with the heap: the view gets the hidden
 * heap's own, which are right for rows inserted by ordinary, earlier
 * transactions (never the cut-over's RecentXmin: that would be a lie about
 * rows written before it, and VACUUM and CLOG truncation would later
 * corrupt the view).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/heap.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/toasting.h"
#include "commands/tablecmds.h"
#include "common/string.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "pg_heap_swap.h"

/*
 * Create the hidden heap for a materialized view's new content, in the
 * given namespace, with its TOAST table.  Caller holds a lock on the view.
 */
Oid
PgHeapCreateLike(Relation matview, Oid namespace_oid, const char *name)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(RelationGetRelid(matview)));
	bool		isnull;
	Datum		reloptions;
	Oid			hidden_oid;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", RelationGetRelid(matview));
	reloptions = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
	if (isnull)
		reloptions = (Datum) 0;

	hidden_oid = heap_create_with_catalog(name, namespace_oid,
										  matview->rd_rel->reltablespace,
										  InvalidOid, InvalidOid, InvalidOid,
										  matview->rd_rel->relowner,
										  matview->rd_rel->relam,
										  CreateTupleDescCopy(RelationGetDescr(matview)),
										  NIL, RELKIND_RELATION,
										  matview->rd_rel->relpersistence,
										  false, false, ONCOMMIT_NOOP, reloptions,
										  false, true, true, RelationGetRelid(matview), NULL);
	ReleaseSysCache(tuple);
	CommandCounterIncrement();

	/* TOAST options are those of the view's TOAST table, if any */
	reloptions = (Datum) 0;
	if (OidIsValid(matview->rd_rel->reltoastrelid))
	{
		tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(matview->rd_rel->reltoastrelid));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for relation %u", matview->rd_rel->reltoastrelid);
		reloptions = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
		if (isnull)
			reloptions = (Datum) 0;
		ReleaseSysCache(tuple);
	}
	NewHeapCreateToastTable(hidden_oid, reloptions, AccessExclusiveLock, InvalidOid);
	CommandCounterIncrement();
	return hidden_oid;
}

/*
 * Build an index copy (a REINDEX builds it, and marks it ready and valid).
 * A unique violation is reported as the blocking REFRESH reports it: for
 * the view's own index, on the view; with as_merge, as REFRESH ...
 * CONCURRENTLY does, whose merge inserts the duplicate key.
 */
static void
BuildIndexCopy(Relation matview, Oid old_index, Relation hidden, Oid new_index, bool as_merge)
{
	MemoryContext context = CurrentMemoryContext;
	ReindexParams params = {0};

	PG_TRY();
	{
		reindex_index(new_index, false, hidden->rd_rel->relpersistence, &params);
	}
	PG_CATCH();
	{
		ErrorData  *error;
		char	   *index_name = get_rel_name(old_index);

		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		if (error->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			PG_RE_THROW();
		FlushErrorState();
		if (as_merge && error->detail != NULL &&
			pg_str_endswith(error->detail, " is duplicated."))
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("duplicate key value violates unique constraint \"%s\"", index_name),
					 errdetail_internal("%.*s already exists.",
										(int) strlen(error->detail) - (int) strlen(" is duplicated."),
										error->detail),
					 errtableconstraint(matview, index_name)));
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("could not create unique index \"%s\"", index_name),
				 error->detail ? errdetail_internal("%s", error->detail) : 0,
				 errtableconstraint(matview, index_name)));
	}
	PG_END_TRY();
	CommandCounterIncrement();
}

/*
 * Build, on the hidden heap, a copy of each index of the view, from the
 * hidden heap's content (for REFRESH ... CONCURRENTLY if concurrently).  Returns the pairs (view's index, copy) as two
 * parallel lists.  Caller holds ShareUpdateExclusive on the view (no index
 * comes or goes) and ACCESS EXCLUSIVE on the hidden heap.
 */
void
PgHeapBuildIndexCopies(Relation matview, Relation hidden, bool concurrently,
					   List **old_indexes, List **new_indexes)
{
	ListCell   *lc;

	*old_indexes = NIL;
	*new_indexes = NIL;
	foreach(lc, RelationGetIndexList(matview))
	{
		Oid			old_index = lfirst_oid(lc);
		Oid			new_index;

		new_index = index_concurrently_create_copy(hidden, old_index,
												   get_rel_tablespace(old_index),
												   psprintf("index_%u", old_index));
		CommandCounterIncrement();
		BuildIndexCopy(matview, old_index, hidden, new_index, concurrently);
		*old_indexes = lappend_oid(*old_indexes, old_index);
		*new_indexes = lappend_oid(*new_indexes, new_index);
	}
}

/*
 * Swap the storage of two relations' pg_class rows: relfilenode, size
 * statistics and, for a heap, the TOAST link and the hidden heap's
 * relfrozenxid and relminmxid (which the first relation takes).
 */
/* Exchange a field of form1 and form2 */
#define SWAP_FIELD(type, field) \
	do { \
		type		swapped_ = form1->field; \
		form1->field = form2->field; \
		form2->field = swapped_; \
	} while (0)

static void
SwapStorage(Relation pg_class, Oid relid1, Oid relid2, bool with_toast)
{
	HeapTuple	tuple1 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid1));
	HeapTuple	tuple2 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid2));
	Form_pg_class form1;
	Form_pg_class form2;
	CatalogIndexState indstate;

	if (!HeapTupleIsValid(tuple1) || !HeapTupleIsValid(tuple2))
		elog(ERROR, "cache lookup failed for relation %u or %u", relid1, relid2);
	form1 = (Form_pg_class) GETSTRUCT(tuple1);
	form2 = (Form_pg_class) GETSTRUCT(tuple2);
	if (form1->reltablespace != form2->reltablespace ||
		form1->relpersistence != form2->relpersistence || form1->relam != form2->relam)
		elog(ERROR, "relations %u and %u differ in tablespace, persistence or access method",
			 relid1, relid2);

	SWAP_FIELD(Oid, relfilenode);
	SWAP_FIELD(int32, relpages);
	SWAP_FIELD(float4, reltuples);
	SWAP_FIELD(int32, relallvisible);
	if (with_toast)
	{
		SWAP_FIELD(Oid, reltoastrelid);
		SWAP_FIELD(TransactionId, relfrozenxid);
		SWAP_FIELD(MultiXactId, relminmxid);
	}

	indstate = CatalogOpenIndexes(pg_class);
	CatalogTupleUpdateWithInfo(pg_class, &tuple1->t_self, tuple1, indstate);
	CatalogTupleUpdateWithInfo(pg_class, &tuple2->t_self, tuple2, indstate);
	CatalogCloseIndexes(indstate);
	heap_freetuple(tuple1);
	heap_freetuple(tuple2);
}

/* A relation's TOAST table, or InvalidOid */
static Oid
ToastOf(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			toast_oid;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	toast_oid = ((Form_pg_class) GETSTRUCT(tuple))->reltoastrelid;
	ReleaseSysCache(tuple);
	return toast_oid;
}

/* Rename a TOAST table and its index (name, name_index) */
static void
RenameToast(Oid toast_oid, const char *name)
{
	Relation	toast = table_open(toast_oid, AccessExclusiveLock);
	List	   *indexes = RelationGetIndexList(toast);

	table_close(toast, NoLock);
	RenameRelationInternal(toast_oid, name, true, false);
	if (indexes != NIL)
		RenameRelationInternal(linitial_oid(indexes), psprintf("%s_index", name), true, true);
	CommandCounterIncrement();
}

/*
 * Make a TOAST table depend (internally) on its new owner, and name it
 * after it, as is the convention.
 */
static void
RelinkToast(Oid toast_oid, Oid owner_oid)
{
	ObjectAddress toast;
	ObjectAddress owner;

	if (!OidIsValid(toast_oid))
		return;
	if (deleteDependencyRecordsFor(RelationRelationId, toast_oid, false) != 1)
		elog(ERROR, "expected one dependency record for TOAST table %u", toast_oid);
	ObjectAddressSet(toast, RelationRelationId, toast_oid);
	ObjectAddressSet(owner, RelationRelationId, owner_oid);
	recordDependencyOn(&toast, &owner, DEPENDENCY_INTERNAL);
	CommandCounterIncrement();
	RenameToast(toast_oid, psprintf("pg_toast_%u", owner_oid));
}

/*
 * Swap the storage of a materialized view and its indexes with the hidden
 * heap's and its index copies (from PgHeapBuildIndexCopies), then drop the
 * hidden heap, which now holds the old storage.  Caller holds ACCESS
 * EXCLUSIVE on both relations.
 */
void
PgHeapSwap(Oid matview_oid, Oid hidden_oid, List *old_indexes, List *new_indexes)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	Oid			matview_toast = ToastOf(matview_oid);
	Oid			hidden_toast = ToastOf(hidden_oid);
	ListCell   *old_cell;
	ListCell   *new_cell;
	ObjectAddress hidden;

	SwapStorage(pg_class, matview_oid, hidden_oid, true);
	forboth(old_cell, old_indexes, new_cell, new_indexes)
		SwapStorage(pg_class, lfirst_oid(old_cell), lfirst_oid(new_cell), false);
	table_close(pg_class, RowExclusiveLock);
	CommandCounterIncrement();

	/* The TOAST tables changed owners: their dependencies and names follow */
	if (OidIsValid(matview_toast))
		RenameToast(matview_toast, psprintf("pg_toast_%u_old", hidden_oid));
	RelinkToast(hidden_toast, matview_oid);
	RelinkToast(matview_toast, hidden_oid);

	ObjectAddressSet(hidden, RelationRelationId, hidden_oid);
	performDeletion(&hidden, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
}
