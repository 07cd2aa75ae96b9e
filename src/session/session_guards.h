/*-------------------------------------------------------------------------
 *
 * session_guards.h
 *	  The guards of a session on jobs' placeholders and targets.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SESSION_GUARDS_H
#define BGDDL_SESSION_GUARDS_H

#include "nodes/parsenodes.h"
#include "tcop/utility.h"

extern void SessionGuardsInstall(void);
extern void SessionDropStatement(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
								 ProcessUtilityContext context, ParamListInfo params,
								 QueryEnvironment *queryEnv, DestReceiver *dest,
								 QueryCompletion *qc, ProcessUtility_hook_type next);
extern void SessionCheckPlaceholderChange(Node *parsetree);
extern void SessionDropOwned(DropOwnedStmt *stmt);
extern void SessionKeepJobObjectPrivileges(void);

#endif							/* BGDDL_SESSION_GUARDS_H */
