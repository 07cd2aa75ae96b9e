/*-------------------------------------------------------------------------
 *
 * shared_state.c
 *	  The small shared memory area of background_ddl.
 *
 * Nothing durable lives here: the job catalog tables are the truth, and this
 * area only says who is running what and who must be woken.  It is rebuilt
 * empty after every crash restart, which is fine because the launcher then
 * rescans every database.
 *
 * The wake-up protocol that guarantees a committed job is never missed:
 * a submitter sets wake_pending for its database after its transaction
 * commits and sets the launcher's and the scheduler's latches.  A scheduler
 * clears wake_pending before it scans the job table, and may only exit after
 * finding, under the lock, that wake_pending is still clear.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "background_ddl.h"
#include "shared_state.h"

BgddlSharedState *BgddlShared = NULL;

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static void BgddlSharedStateStartup(void);

static Size
BgddlSharedStateSize(void)
{
	return add_size(offsetof(BgddlSharedState, workers),
					mul_size(sizeof(BgddlWorkerSlot), background_ddl_max_workers));
}

/* Reserve our shared memory and lock; called from the shmem_request_hook */
void
BgddlSharedStateRequest(void)
{
	RequestAddinShmemSpace(BgddlSharedStateSize());
	RequestNamedLWLockTranche(BGDDL_EXTENSION_NAME, 1);
}

/* Install the startup hook that attaches to (or creates) the area */
void
BgddlSharedStateInit(void)
{
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = BgddlSharedStateStartup;
}

static void
BgddlSharedStateStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	BgddlShared = ShmemInitStruct("background_ddl", BgddlSharedStateSize(), &found);
	if (!found)
	{
		memset(BgddlShared, 0, BgddlSharedStateSize());
		BgddlShared->lock = &(GetNamedLWLockTranche(BGDDL_EXTENSION_NAME))->lock;
		ConditionVariableInit(&BgddlShared->job_finished);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Find the slot of a database, optionally creating it.  Caller holds the
 * lock (exclusively when create is true).  Returns NULL if not found, or if
 * all slots are taken.
 */
BgddlDatabaseSlot *
BgddlFindDatabaseSlot(Oid database_oid, bool create)
{
	BgddlDatabaseSlot *free_slot = NULL;

	for (int i = 0; i < BGDDL_MAX_DATABASES; i++)
	{
		BgddlDatabaseSlot *slot = &BgddlShared->databases[i];

		if (slot->database_oid == database_oid)
			return slot;
		if (slot->database_oid == InvalidOid && free_slot == NULL)
			free_slot = slot;
	}
	if (create && free_slot != NULL)
	{
		memset(free_slot, 0, sizeof(BgddlDatabaseSlot));
		free_slot->database_oid = database_oid;
		return free_slot;
	}
	return NULL;
}

/*
 * Tell the background side that a database has new work: called after the
 * transaction that created or changed a job has committed.
 */
void
BgddlWakeDatabase(Oid database_oid)
{
	BgddlDatabaseSlot *slot;
	Latch	   *scheduler_latch = NULL;
	Latch	   *launcher_latch;

	LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
	slot = BgddlFindDatabaseSlot(database_oid, true);
	if (slot != NULL)
	{
		slot->wake_pending = true;
		scheduler_latch = slot->scheduler_latch;
	}
	launcher_latch = BgddlShared->launcher_latch;
	LWLockRelease(BgddlShared->lock);

	if (slot == NULL)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many databases with background DDL jobs"),
				 errdetail("At most %d databases can have background DDL jobs at once.",
						   BGDDL_MAX_DATABASES),
				 errhint("The job will start once another database has no more jobs, or at the next server restart.")));
	if (scheduler_latch)
		SetLatch(scheduler_latch);
	if (launcher_latch)
		SetLatch(launcher_latch);
}

/* Find the worker slot that runs a job; caller holds the lock */
BgddlWorkerSlot *
BgddlFindWorkerSlot(Oid database_oid, int64 job_id)
{
	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		BgddlWorkerSlot *slot = &BgddlShared->workers[i];

		if (slot->in_use && slot->database_oid == database_oid &&
			slot->job_id == job_id)
			return slot;
	}
	return NULL;
}
