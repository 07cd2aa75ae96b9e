/*-------------------------------------------------------------------------
 *
 * placeholder.h
 *	  The objects a job reserves before it is done, and the guards on them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PLACEHOLDER_H
#define BGDDL_PLACEHOLDER_H

#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "utils/relcache.h"

extern void PlaceholderHookInstall(void);
extern void PlaceholderCheckReads(PlannedStmt *plan);
extern void PlaceholderCheckRefresh(RefreshMatViewStmt *stmt);
extern void PlaceholderCheckChange(Node *parsetree);
extern bool PlaceholderOfUnfinishedJob(Oid relid);
extern void PlaceholderTruncate(Relation rel);
extern void PlaceholderDrop(Oid relid);
extern void PlaceholderLockExclusive(Oid relid);

#endif							/* BGDDL_PLACEHOLDER_H */
