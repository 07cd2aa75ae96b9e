/*-------------------------------------------------------------------------
 *
 * pg_relation.c
 *	  Emptying and dropping a relation, transactionally.
 *
 * What the jobs create (placeholders, hidden and staging relations) is
 * emptied as TRUNCATE empties a table, and dropped as DROP ... RESTRICT
 * drops it, both inside the caller's transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "pg_compat.h"
#include "pg_relation.h"

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
 * the error says what.  Caller is in a transaction.
 */
void
PgRelationDrop(Oid relid)
{
	ObjectAddress relation;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return;
	ObjectAddressSet(relation, RelationRelationId, relid);
	performDeletion(&relation, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
}
