/*-------------------------------------------------------------------------
 *
 * pg_lock.h
 *	  Taking a relation lock without queueing for it; who a process waits
 *	  for.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_LOCK_H
#define BGDDL_PG_LOCK_H

#include "nodes/pg_list.h"
#include "storage/lockdefs.h"

extern bool PgLockRelationWithin(Oid relid, LOCKMODE mode, long patience_ms,
								 bool until_holders_change);
extern List *PgBlockingPids(int pid);

#endif							/* BGDDL_PG_LOCK_H */
