/*-------------------------------------------------------------------------
 *
 * compat.h
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
#define BgddlRelationOwnerCheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#define BgddlExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
/* Privileges a plan's range table entry requires */
#define BgddlRequiredPerms(plannedstmt, rte) \
	((rte)->perminfoindex == 0 ? 0 : \
	 getRTEPermissionInfo((plannedstmt)->permInfos, (rte))->requiredPerms)
#else
#define BgddlRelationOwnerCheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#define BgddlExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#define BgddlRequiredPerms(plannedstmt, rte) ((rte)->requiredPerms)
#endif

/* PostgreSQL 16 renamed relfilenodes to relfilenumbers */
#if PG_VERSION_NUM >= 160000
#define BgddlRelFileNumber(rel) ((rel)->rd_locator.relNumber)
#define BgddlSetNewRelFileNumber(rel, persistence) \
	RelationSetNewRelfilenumber((rel), (persistence))
#else
#define BgddlRelFileNumber(rel) ((rel)->rd_node.relNode)
#define BgddlSetNewRelFileNumber(rel, persistence) \
	RelationSetNewRelfilenode((rel), (persistence))
#endif

#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

#endif							/* BGDDL_COMPAT_H */
