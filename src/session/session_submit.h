/*-------------------------------------------------------------------------
 *
 * session_submit.h
 *	  The ProcessUtility hook that turns DDL into background jobs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SUBMIT_H
#define BGDDL_SUBMIT_H

#include "nodes/nodes.h"
#include "nodes/pg_list.h"

extern void SessionSubmitInstall(void);
extern int64 SessionSubmitGroup(void);
extern void SessionSubmitWith(const char *idempotency_key, List *after);
extern char *SessionStatementText(const char *query_string, int location, int length);

#endif							/* BGDDL_SUBMIT_H */
