/*-------------------------------------------------------------------------
 *
 * pg_lock.c
 *	  Taking a relation lock without queueing for it; who a process waits
 *	  for; waiting for older snapshots rather than for their transactions.
 *
 * A request that waits in a lock queue makes every later request that
 * conflicts with it wait too: a job that queued for ACCESS EXCLUSIVE on a
 * busy table (to drop a trigger) would stall the table's writers behind
 * it.  So a job first asks as autovacuum does before it truncates a table:
 * with ConditionalLockRelationOid, and while the lock is held by others,
 * again a little later, until its patience runs out.  Meanwhile nobody
 * waits for a lock the job has not got.  (What it does then is the
 * caller's: job_step.c queues for a short while.)
 *
 * Under a steady stream of short writes the lock is never free when asked:
 * some writer always holds it, though none for long.  Asking again is then
 * no use, and queueing costs the writers behind the job only what is left
 * of the transactions that hold it.  So a caller may ask to give up as soon
 * as every transaction that held the lock at the first try has ended while
 * others hold it now (holders that come and go), instead of at the end of
 * its patience.
 *
 * An index build waits until the transactions whose snapshots are older
 * than its validation's no longer hold them (PgWaitForOlderSnapshots).
 * PostgreSQL's WaitForOlderSnapshots waits for such a transaction to end;
 * a session that waits for the build sets its snapshot aside but, in a
 * transaction block, cannot end its transaction: a wait for the snapshot
 * is all the index needs (PostgreSQL drops from its list a transaction
 * whose snapshot has moved on), and it ends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg/pg_lock.h"

/* The first pause between two requests, and the longest */
#define LOCK_RETRY_FIRST_MS		1
#define LOCK_RETRY_LONGEST_MS	100

/*
 * The transactions that hold a lock on relid conflicting with mode, or NULL
 * if there are none.
 */
static VirtualTransactionId *
LockHolders(Oid relid, LOCKMODE mode)
{
	LOCKTAG		tag;
	VirtualTransactionId *holders;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	holders = GetLockConflicts(&tag, mode, NULL);
	return VirtualTransactionIdIsValid(holders[0]) ? holders : NULL;
}

/* Have all of these transactions ended? (The array ends with an invalid one) */
static bool
AllEnded(VirtualTransactionId *transactions)
{
	for (; VirtualTransactionIdIsValid(*transactions); transactions++)
		if (!VirtualXactLock(*transactions, false))
			return false;
	return true;
}

/*
 * Take a lock on a relation if it comes free within patience_ms: asked for
 * without queueing, again after 1, 2, 4 ... (at most 100) milliseconds.
 * Returns false if it never came free; and, with until_holders_change, as
 * soon as every transaction that held it at the first try has ended while
 * the lock is still taken (by others).  Interrupts are served meanwhile.
 */
bool
PgLockRelationWithin(Oid relid, LOCKMODE mode, long patience_ms, bool until_holders_change)
{
	TimestampTz give_up_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), patience_ms);
	long		pause_ms = LOCK_RETRY_FIRST_MS;
	VirtualTransactionId *first_holders = NULL;

	while (!ConditionalLockRelationOid(relid, mode))
	{
		long		left_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), give_up_at);

		if (left_ms <= 0)
			return false;
		if (until_holders_change)
		{
			if (first_holders == NULL)
				first_holders = LockHolders(relid, mode);
			else if (AllEnded(first_holders))
				return false;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(pause_ms, left_ms), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		pause_ms = Min(pause_ms * 2, LOCK_RETRY_LONGEST_MS);
	}
	return true;
}

/* The processes that process pid waits for (pg_blocking_pids), as a list of pids */
List *
PgBlockingPids(int pid)
{
	ArrayType  *blockers = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids,
																  Int32GetDatum(pid)));
	Datum	   *values;
	bool	   *nulls;
	int			count;
	List	   *pids = NIL;

	deconstruct_array(blockers, INT4OID, sizeof(int32), true, TYPALIGN_INT,
					  &values, &nulls, &count);
	for (int i = 0; i < count; i++)
		if (!nulls[i])
			pids = lappend_int(pids, DatumGetInt32(values[i]));
	return pids;
}

/*
 * The transactions that hold a snapshot as old as limit_xmin, as
 * WaitForOlderSnapshots finds them (*count of them)
 */
VirtualTransactionId *
PgOlderSnapshotHolders(TransactionId limit_xmin, int *count)
{
	return GetCurrentVirtualXIDs(limit_xmin, true, false,
								 PROC_IS_AUTOVACUUM | PROC_IN_VACUUM | PROC_IN_SAFE_IC, count);
}

/* The process of a transaction, or 0 (none now, or a prepared transaction) */
int
PgTransactionPid(VirtualTransactionId transaction)
{
	PGPROC	   *proc = BackendIdGetProc(transaction.backendId);

	return proc != NULL ? proc->pid : 0;
}

/*
 * Of the processes in pids and those they wait for (pg_blocking_pids, and
 * so on, added to pids up to max_pids in all), the first found waiting for
 * process target; 0 if none is
 */
int
PgWaitChainReaches(List *pids, int target, int max_pids)
{
	ListCell   *lc;

	/* pids grows while it is walked */
	foreach(lc, pids)
	{
		ListCell   *blocker;

		foreach(blocker, PgBlockingPids(lfirst_int(lc)))
		{
			if (lfirst_int(blocker) == target)
				return lfirst_int(lc);
			if (list_length(pids) < max_pids)
				pids = list_append_unique_int(pids, lfirst_int(blocker));
		}
	}
	return 0;
}

/* Processes a wait for older snapshots follows at most, to find itself */
#define SNAPSHOT_WAIT_MAX_PROCESSES	64

/*
 * Wait until none of the transactions that hold a snapshot as old as
 * limit_xmin now (as WaitForOlderSnapshots finds them) holds one any
 * more: each has ended, or let go of its snapshots or taken newer ones.
 * Looks again after 1, 2, 4 ... (at most 100) milliseconds.  While one of
 * them waits for a lock that this process holds (a DETACH PARTITION that
 * holds its snapshot while it waits for the table), its transaction is
 * waited for as PostgreSQL does, in the lock manager, so that the deadlock
 * detector sees the cycle.  Caller holds no snapshot.
 */
void
PgWaitForOlderSnapshots(TransactionId limit_xmin)
{
	int			count;
	VirtualTransactionId *older = PgOlderSnapshotHolders(limit_xmin, &count);
	long		pause_ms = LOCK_RETRY_FIRST_MS;
	MemoryContext look_context = AllocSetContextCreate(CurrentMemoryContext,
													   "background_ddl older snapshots",
													   ALLOCSET_SMALL_SIZES);
	MemoryContext caller_context = MemoryContextSwitchTo(look_context);

	/* (each look's lists go with it: a wait may last for hours) */
	while (count > 0)
	{
		VirtualTransactionId *now_older;
		int			now_count;
		int			kept = 0;

		MemoryContextReset(look_context);
		for (int i = 0; i < count; i++)
		{
			PGPROC	   *proc = BackendIdGetProc(older[i].backendId);

			/* (waitLock read without its lock: a look again sees what this one missed) */
			if (proc != NULL && proc->waitLock != NULL &&
				PgWaitChainReaches(list_make1_int(proc->pid), MyProcPid,
								   SNAPSHOT_WAIT_MAX_PROCESSES) != 0)
				(void) VirtualXactLock(older[i], true);
		}
		now_older = PgOlderSnapshotHolders(limit_xmin, &now_count);
		for (int i = 0; i < count; i++)
		{
			for (int j = 0; j < now_count; j++)
			{
				if (VirtualTransactionIdEquals(older[i], now_older[j]))
				{
					older[kept++] = older[i];
					break;
				}
			}
		}
		count = kept;
		if (count == 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, pause_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		pause_ms = Min(pause_ms * 2, LOCK_RETRY_LONGEST_MS);
	}
	MemoryContextSwitchTo(caller_context);
	MemoryContextDelete(look_context);
	pfree(older);
}
