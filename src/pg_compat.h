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

#endif							/* BGDDL_COMPAT_H */
