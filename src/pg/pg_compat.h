/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  The few server APIs that differ between the PostgreSQL versions we
 *	  mean to compile on (14 to 17).  Only PostgreSQL 15 is tested.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_COMPAT_H
#define BGDDL_COMPAT_H

#include "access/genam.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "executor/executor.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "nodes/nodes.h"

#if PG_VERSION_NUM >= 160000
#define PgRelationOwnerCheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#define PgDatabaseOwnerCheck(dbid, roleid) \
	object_ownercheck(DatabaseRelationId, (dbid), (roleid))
#define PgExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#define PgExecUpdateIndexTuples(rri, slot, estate, summarizing_only) \
	ExecInsertIndexTuples((rri), (slot), (estate), true, false, NULL, NIL, (summarizing_only))
/* Privileges a plan's range table entry requires */
#define PgRequiredPerms(plannedstmt, rte) \
	((rte)->perminfoindex == 0 ? 0 : \
	 getRTEPermissionInfo((plannedstmt)->permInfos, (rte))->requiredPerms)
/* A query built from a parse state takes its permission entries too */
#define PgQuerySetPermInfos(query, pstate) \
	((query)->rteperminfos = (pstate)->p_rteperminfos)
#else
#define PgRelationOwnerCheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#define PgDatabaseOwnerCheck(dbid, roleid) \
	pg_database_ownercheck((dbid), (roleid))
#define PgExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#define PgExecUpdateIndexTuples(rri, slot, estate, summarizing_only) \
	ExecInsertIndexTuples((rri), (slot), (estate), true, false, NULL, NIL)
#define PgRequiredPerms(plannedstmt, rte) ((rte)->requiredPerms)
#define PgQuerySetPermInfos(query, pstate) ((void) 0)
#endif

/* PostgreSQL 16 renamed relfilenodes to relfilenumbers */
#if PG_VERSION_NUM >= 160000
#define PgRelFileNumber(rel) ((rel)->rd_locator.relNumber)
#define PgRelFileLocator(rel) ((rel)->rd_locator)
#define PgSetNewRelFileNumber(rel, persistence) \
	RelationSetNewRelfilenumber((rel), (persistence))
#else
#define PgRelFileNumber(rel) ((rel)->rd_node.relNode)
#define PgRelFileLocator(rel) ((rel)->rd_node)
#define PgSetNewRelFileNumber(rel, persistence) \
	RelationSetNewRelfilenode((rel), (persistence))
#endif

#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* The schema of an extension (its functions and views) */
#if PG_VERSION_NUM >= 160000
#define PgExtensionSchema(extension_oid) get_extension_schema(extension_oid)
#else
static inline Oid
PgExtensionSchema(Oid extension_oid)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			schema = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension_oid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)))
		schema = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return schema;
}
#endif

/*
 * The error code of a SQLSTATE in its text form (another server's error,
 * a job's recorded one); internal_error if it is not five characters
 */
static inline int
PgSqlstateCode(const char *sqlstate)
{
	if (sqlstate == NULL || strlen(sqlstate) != 5)
		return ERRCODE_INTERNAL_ERROR;
	return MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2], sqlstate[3], sqlstate[4]);
}

/*
 * A parse tree node of the expected type, or an error: castNode checks only
 * in assert-enabled builds, and a statement re-read as the wrong node is
 * undefined behaviour.
 */
static inline Node *
BgddlCheckNodeTag(Node *node, NodeTag tag, const char *type_name)
{
	if (node == NULL || nodeTag(node) != tag)
		elog(ERROR, "background_ddl: expected a %s node, found node type %d",
			 type_name, node != NULL ? (int) nodeTag(node) : 0);
	return node;
}

#define CheckedNode(type, node) \
	((type *) BgddlCheckNodeTag((Node *) (node), T_##type, #type))

#endif							/* BGDDL_COMPAT_H */
