/*-------------------------------------------------------------------------
 *
 * pg_relation.c
 *	  Emptying, dropping, and hiding a relation from logical decoding and
 *	  from pg_dump, transactionally.
 *
 * What the jobs create (placeholders, hidden and staging relations) is
 * emptied as TRUNCATE empties a table, and dropped as DROP ... RESTRICT
 * drops it, both inside the caller's transaction.
 *
 * Logical decoding.  PostgreSQL 15 publishes every permanent table to a FOR
 * ALL TABLES publication, with no way to leave one out; but logical
 * decoding skips the row changes of the transient heaps that table
 * rewrites create, which it knows by pg_class.relrewrite
 * (ReorderBufferProcessTXN).  Our own relations carry that mark, so that no
 * change of theirs is ever sent to a subscriber; a relation that becomes
 * the user's loses it in the transaction that hands it over.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_inherits.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "pg/pg_compat.h"
#include "pg/pg_relation.h"

/*
 * The rows written (inserted, updated, deleted) to a table and the tables
 * below it, as the cumulative statistics count them now
 */
int64
PgTableTreeWrites(Oid relid)
{
	int64		writes = 0;
	ListCell   *lc;

	pgstat_clear_snapshot();
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		PgStat_StatTabEntry *entry = pgstat_fetch_stat_tabentry(lfirst_oid(lc));

		if (entry != NULL)
			writes += entry->tuples_inserted + entry->tuples_updated + entry->tuples_deleted;
	}
	return writes;
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
 * Drop a relation if it exists, RESTRICT: if something else depends on it,
 * the error says what.  A relation that belongs to an extension (a job's
 * object, PgRelationSetExtensionMember) is dropped too.  Caller is in a
 * transaction.
 */
void
PgRelationDrop(Oid relid)
{
	ObjectAddress relation;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return;
	ObjectAddressSet(relation, RelationRelationId, relid);
	performDeletion(&relation, DROP_RESTRICT,
					PERFORM_DELETION_INTERNAL | PERFORM_DELETION_SKIP_EXTENSIONS);
	CommandCounterIncrement();
}

/* Set a relation's relrewrite; returns its TOAST table */
static Oid
SetRelrewrite(Relation pg_class, Oid relid, Oid relrewrite)
{
	HeapTuple	tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	Oid			toast_oid;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	form = (Form_pg_class) GETSTRUCT(tuple);
	toast_oid = form->reltoastrelid;
	if (form->relrewrite != relrewrite)
	{
		form->relrewrite = relrewrite;
		CatalogTupleUpdate(pg_class, &tuple->t_self, tuple);
	}
	heap_freetuple(tuple);
	return toast_oid;
}

/*
 * Make a role the owner of a relation that the current transaction created
 * and drops again (estimate_ddl's copy of a sample), so that what runs on
 * it as its owner (an index build's expressions and operator classes) runs
 * as that role.  Only pg_class changes: nothing else of the relation is
 * used before it goes.
 */
void
PgRelationSetOwnerTransient(Oid relid, Oid owner)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	((Form_pg_class) GETSTRUCT(tuple))->relowner = owner;
	CatalogTupleUpdate(pg_class, &tuple->t_self, tuple);
	heap_freetuple(tuple);
	table_close(pg_class, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Let logical decoding see the row changes of a relation and its TOAST
 * table, or not (marked as a transient heap of itself: see above)
 */
void
PgRelationSetDecoded(Oid relid, bool decoded)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	Oid			toast_oid = SetRelrewrite(pg_class, relid, decoded ? InvalidOid : relid);

	if (OidIsValid(toast_oid))
		SetRelrewrite(pg_class, toast_oid, decoded ? InvalidOid : toast_oid);
	table_close(pg_class, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Make a relation a member of an extension, or no longer one.  pg_dump
 * leaves extension members out of a dump: what a job creates (placeholders,
 * hidden and staging relations) belongs to the extension until it is the
 * user's, so that a dump taken while the job runs holds only the committed
 * user-visible state.  Its privileges then are its initial ones, which
 * pg_dump does not dump either.
 */
void
PgRelationSetExtensionMember(Oid relid, Oid extension_oid, bool member)
{
	ObjectAddress relation;
	ObjectAddress extension;

	ObjectAddressSet(relation, RelationRelationId, relid);
	ObjectAddressSet(extension, ExtensionRelationId, extension_oid);
	if (member && getExtensionOfObject(RelationRelationId, relid) != extension_oid)
	{
		recordDependencyOn(&relation, &extension, DEPENDENCY_EXTENSION);
		recordExtObjInitPriv(relid, RelationRelationId);
	}
	else if (!member &&
			 deleteDependencyRecordsForSpecific(RelationRelationId, relid, DEPENDENCY_EXTENSION,
												ExtensionRelationId, extension_oid) > 0)
		removeExtObjInitPriv(relid, RelationRelationId);
	CommandCounterIncrement();
}
