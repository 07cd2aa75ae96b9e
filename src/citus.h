/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  Tables of the Citus distributed engine, recognised at run time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CITUS_H
#define BGDDL_CITUS_H

#include "nodes/parsenodes.h"

extern bool CitusInstalled(void);
extern bool CitusTable(Oid relid);
extern Oid	CitusTableInQuery(Query *query);
extern const char *CitusInSessionReason(Oid relid);

#endif							/* BGDDL_CITUS_H */
