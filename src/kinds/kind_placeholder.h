/*-------------------------------------------------------------------------
 *
 * kind_placeholder.h
 *	  The placeholders that jobs reserve their targets with.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_KIND_PLACEHOLDER_H
#define BGDDL_KIND_PLACEHOLDER_H

#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

/* What DROP names a placeholder as (it is an unpopulated materialized view) */
#define KIND_PLACEHOLDER_OBJECT_TYPE	OBJECT_MATVIEW

extern bool KindIsPlaceholder(Oid relid);
extern int64 KindPlaceholderJob(Oid relid);
extern void KindCheckPlaceholderReads(PlannedStmt *plan);
extern List *KindPlaceholderDependencies(PlannedStmt *plan, Query *query);
extern void KindDropWaitingPlaceholders(int64 job_id);
extern Oid	KindPlaceholderFutureTable(Oid relid, int64 *job_id);
extern void KindCheckPlaceholderRefresh(RefreshMatViewStmt *stmt, int64 *after);
extern void KindPlaceholderLock(Oid relid);
extern int	KindRetargetQuery(Query *query, Oid placeholder, Oid table);

#endif							/* BGDDL_KIND_PLACEHOLDER_H */
