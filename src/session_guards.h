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

extern void SessionGuardsInstall(void);
extern void SessionCheckPlaceholderChange(Node *parsetree);

#endif							/* BGDDL_SESSION_GUARDS_H */
