/*-------------------------------------------------------------------------
 *
 * session_statement.h
 *	  The statement the session runs, and what it is to us.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SESSION_STATEMENT_H
#define BGDDL_SESSION_STATEMENT_H

#include "engine/kind.h"
#include "nodes/nodes.h"
#include "tcop/utility.h"

extern Node *SessionEnclosingUtility(void);
extern void SessionSetEnclosingUtility(Node *utility);
extern bool SessionStatementIsUsers(ProcessUtilityContext context, Node *outer_utility);
extern const KindRoutine *SessionStatementWouldSubmit(Node *parsetree);

#endif							/* BGDDL_SESSION_STATEMENT_H */
