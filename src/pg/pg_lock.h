/*-------------------------------------------------------------------------
 *
 * pg_lock.h
 *	  Taking a relation lock without queueing for it; who a process waits
 *	  for; waiting for older snapshots rather than for their transactions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_LOCK_H
#define BGDDL_PG_LOCK_H

#include "nodes/pg_list.h"
#include "storage/lock.h"

extern bool PgLockRelationWithin(Oid relid, LOCKMODE mode, long patience_ms,
								 bool until_holders_change);
extern List *PgBlockingPids(int pid);
extern int	PgTransactionPid(VirtualTransactionId transaction);
extern int	PgWaitChainReaches(List *pids, int target, int max_pids);
extern VirtualTransactionId *PgOlderSnapshotHolders(TransactionId limit_xmin, int *count);
extern void PgWaitForOlderSnapshots(TransactionId limit_xmin);

#endif							/* BGDDL_PG_LOCK_H */
