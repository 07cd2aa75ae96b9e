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

/* How Citus distributes a table (PgCitusDistribution) */
#define CITUS_HASH_DISTRIBUTED	'h'
#define CITUS_REFERENCE			'r'
extern char PgCitusDistribution(Oid relid, char **column_name);

#endif							/* BGDDL_CITUS_H */
