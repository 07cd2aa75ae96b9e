/*-------------------------------------------------------------------------
 *
 * session_statement.c
 *	  The statement the session runs: the utility statement it runs in,
 *	  whether the user wrote it, and whether it would become a job.
 *
 * The ProcessUtility hook (session_submit.c) keeps the enclosing utility
 * statement; the session's order (session_order.c) asks, in a statement's
 * parse analysis, what the hook will make of it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"

#include "catalog/settings.h"
#include "engine/kind.h"
#include "session/session_statement.h"

/*
 * The utility statement whose execution the current one runs in (NULL at
 * the top): see SessionStatementIsUsers.
 */
static Node *enclosing_utility = NULL;

/*
 * Did the user write this statement, at the top level or in a function or DO
 * block?  PostgreSQL runs statements of its own through ProcessUtility too:
 * the index of a PRIMARY KEY or UNIQUE constraint in CREATE TABLE, the
 * elements of CREATE SCHEMA, LIKE ... INCLUDING INDEXES, ALTER TABLE's
 * follow-up statements (all PROCESS_UTILITY_SUBCOMMAND), and whatever an
 * event trigger runs while another DDL statement executes.  Taken as a job,
 * such a statement would be lost (a constraint without its index), so only
 * a complete statement that runs at the top level, or from a function or
 * procedure called by a query, DO or CALL, may become one.
 */
bool
SessionStatementIsUsers(ProcessUtilityContext context, Node *outer_utility)
{
	if (context == PROCESS_UTILITY_TOPLEVEL)
		return true;
	if (context == PROCESS_UTILITY_SUBCOMMAND)
		return false;
	return outer_utility == NULL || IsA(outer_utility, DoStmt) ||
		IsA(outer_utility, CallStmt);
}

/* The utility statement whose execution the current statement runs in, or NULL */
Node *
SessionEnclosingUtility(void)
{
	return enclosing_utility;
}

/* The ProcessUtility hook, as it runs a utility statement and when it is done */
void
SessionSetEnclosingUtility(Node *utility)
{
	enclosing_utility = utility;
}

/*
 * Would this statement, if it ran now, become a job: the kind it would be,
 * or NULL?  (In its parse analysis, before the ProcessUtility hook decides:
 * session_order.c.)
 */
const KindRoutine *
SessionStatementWouldSubmit(Node *parsetree)
{
	const char *in_session_reason;

	if (!background_ddl_enabled || RecoveryInProgress() ||
		!SessionStatementIsUsers(PROCESS_UTILITY_QUERY, enclosing_utility))
		return NULL;
	return KindForStatement(parsetree, &in_session_reason);
}
