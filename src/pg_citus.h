/*-------------------------------------------------------------------------
 *
 * pg_citus.h
 *	  Tables of the Citus distributed engine, recognised at run time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CITUS_H
#define BGDDL_CITUS_H

#include "nodes/parsenodes.h"

extern bool PgCitusInstalled(void);
extern bool PgCitusTable(Oid relid);
extern Oid	PgCitusTableInQuery(Query *query);
extern const char *PgCitusInSessionReason(Oid relid);

#endif							/* BGDDL_CITUS_H */
