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

#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "nodes/nodes.h"

#if PG_VERSION_NUM >= 160000
#define PgRelationOwnerCheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#define PgExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
/* Privileges a plan's range table entry requires */
#define PgRequiredPerms(plannedstmt, rte) \
	((rte)->perminfoindex == 0 ? 0 : \
	 getRTEPermissionInfo((plannedstmt)->permInfos, (rte))->requiredPerms)
#else
#define PgRelationOwnerCheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#define PgExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#define PgRequiredPerms(plannedstmt, rte) ((rte)->requiredPerms)
#endif

/* PostgreSQL 16 renamed relfilenodes to relfilenumbers */
#if PG_VERSION_NUM >= 160000
#define PgRelFileNumber(rel) ((rel)->rd_locator.relNumber)
#define PgSetNewRelFileNumber(rel, persistence) \
	RelationSetNewRelfilenumber((rel), (persistence))
#else
#define PgRelFileNumber(rel) ((rel)->rd_node.relNode)
#define PgSetNewRelFileNumber(rel, persistence) \
	RelationSetNewRelfilenode((rel), (persistence))
#endif

#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

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
