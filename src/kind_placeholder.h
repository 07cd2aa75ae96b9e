/*-------------------------------------------------------------------------
 *
 * kind_placeholder.h
 *	  The objects a job reserves before it is done, and the guards on them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PLACEHOLDER_H
#define BGDDL_PLACEHOLDER_H

#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "utils/relcache.h"

extern void KindPlaceholderHooksInstall(void);
extern void KindCheckPlaceholderReads(PlannedStmt *plan);
extern void KindCheckPlaceholderRefresh(RefreshMatViewStmt *stmt);
extern void KindCheckPlaceholderChange(Node *parsetree);
extern bool KindPlaceholderOfUnfinishedJob(Oid relid);
extern void PgRelationTruncate(Relation rel);
extern void PgRelationDrop(Oid relid);
extern void KindPlaceholderLock(Oid relid);

#endif							/* BGDDL_PLACEHOLDER_H */
