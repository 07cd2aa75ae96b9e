/*-------------------------------------------------------------------------
 *
 * session_order.h
 *	  A session sees its own jobs as done: its later statements wait for
 *	  them, build them in the submitting transaction, or start after them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SESSION_ORDER_H
#define BGDDL_SESSION_ORDER_H

#include "parser/parse_node.h"

#include "engine/job_estimate.h"
#include "engine/job_xact.h"

extern void SessionOrderInstall(void);
extern void SessionOrderUtility(Node *parsetree);
extern void SessionOrderAwaitChecks(const struct KindRoutine *routine, Node *parsetree);
extern List *SessionOrderJobsBefore(Node *parsetree);
extern void SessionOrderSubmitted(const JobOrder *order);
extern bool SessionOrderChecks(bool on);
extern bool SessionOrderFreeEstimate(Node *raw_statement, const char *query_string,
									 JobEstimate *estimate);

#endif							/* BGDDL_SESSION_ORDER_H */
