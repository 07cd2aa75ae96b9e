/*-------------------------------------------------------------------------
 *
 * placeholder.h
 *	  Guards on the placeholder of an unfinished job.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PLACEHOLDER_H
#define BGDDL_PLACEHOLDER_H

#include "nodes/parsenodes.h"

extern void PlaceholderHookInstall(void);
extern void PlaceholderCheckRefresh(RefreshMatViewStmt *stmt);
extern void PlaceholderCancelDroppedJobs(DropStmt *stmt);

#endif							/* BGDDL_PLACEHOLDER_H */
