/*-------------------------------------------------------------------------
 *
 * pg_lock.h
 *	  Taking a relation lock without queueing for it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_LOCK_H
#define BGDDL_PG_LOCK_H

#include "storage/lockdefs.h"

extern bool PgLockRelationWithin(Oid relid, LOCKMODE mode, long patience_ms);

#endif							/* BGDDL_PG_LOCK_H */
