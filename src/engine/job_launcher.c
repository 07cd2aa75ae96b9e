/*-------------------------------------------------------------------------
 *
 * job_launcher.c
 *	  The launcher: one static background worker, connected to no database,
 *	  that keeps a scheduler running for every database with work.
 *
 * A background worker can only read the tables of the database it is
 * connected to, so the launcher cannot see jobs itself.  At start (which
 * includes every restart after a crash) it therefore asks every database
 * that allows connections, by starting a scheduler there; a scheduler that
 * finds no unfinished job exits at once, so it never sits on a database
 * (which would block DROP DATABASE and CREATE DATABASE ... TEMPLATE).
 * Afterwards, a committed submit marks its database wake_pending and sets
 * the launcher's latch, and the launcher starts a scheduler if none runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/settings.h"
#include "engine/job_launcher.h"
#include "engine/job_shmem.h"

/* A scheduler that died is not restarted sooner than this */
#define SCHEDULER_RESTART_DELAY_MS	5000

/* Per database slot: the scheduler we started, and when one that died may be restarted */
static BackgroundWorkerHandle *scheduler_handles[BGDDL_MAX_DATABASES];
static TimestampTz scheduler_retry_at[BGDDL_MAX_DATABASES];

/*
 * Describe one of our background workers: function_name is its entry point,
 * type its bgw_type ("background_ddl ..."); a dynamic worker is never
 * restarted by the postmaster and notifies the process that starts it.
 */
void
JobWorkerDescribe(BackgroundWorker *worker, const char *function_name,
					const char *type, Datum main_arg, bool dynamic)
{
	memset(worker, 0, sizeof(BackgroundWorker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker->bgw_restart_time = dynamic ? BGW_NEVER_RESTART : 5;
	snprintf(worker->bgw_library_name, BGW_MAXLEN, BGDDL_EXTENSION_NAME);
	snprintf(worker->bgw_function_name, BGW_MAXLEN, "%s", function_name);
	snprintf(worker->bgw_name, BGW_MAXLEN, "%s", type);
	snprintf(worker->bgw_type, BGW_MAXLEN, "%s", type);
	worker->bgw_main_arg = main_arg;
	worker->bgw_notify_pid = dynamic ? MyProcPid : 0;
}

/* Register the launcher; called from _PG_init in the postmaster */
void
JobLauncherRegister(void)
{
	BackgroundWorker worker;

	JobWorkerDescribe(&worker, "JobLauncherMain", "background_ddl launcher",
						(Datum) 0, false);
	RegisterBackgroundWorker(&worker);
}

static void
LauncherDetach(int code, Datum arg)
{
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	JobShared->launcher_pid = 0;
	JobShared->launcher_latch = NULL;
	LWLockRelease(JobShared->lock);
}

/* Oids of all databases that accept connections (from pg_database) */
static List *
ListConnectableDatabases(void)
{
	List	   *database_oids = NIL;
	MemoryContext caller_context = CurrentMemoryContext;
	Relation	pg_database;
	TableScanDesc scan;
	HeapTuple	tuple;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	pg_database = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(pg_database, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database database = (Form_pg_database) GETSTRUCT(tuple);
		MemoryContext xact_context;

		if (!database->datallowconn)
			continue;
		xact_context = MemoryContextSwitchTo(caller_context);
		database_oids = lappend_oid(database_oids, database->oid);
		MemoryContextSwitchTo(xact_context);
	}
	table_endscan(scan);
	table_close(pg_database, AccessShareLock);
	CommitTransactionCommand();

	return database_oids;
}

static bool
DatabaseExists(Oid database_oid)
{
	bool		exists;

	StartTransactionCommand();
	exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(database_oid));
	CommitTransactionCommand();
	return exists;
}

static BackgroundWorkerHandle *
StartScheduler(Oid database_oid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	JobWorkerDescribe(&worker, "JobSchedulerMain", "background_ddl scheduler",
						ObjectIdGetDatum(database_oid), true);
	snprintf(worker.bgw_name, BGW_MAXLEN, "background_ddl scheduler for database %u",
			 database_oid);

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;
	return handle;
}

/*
 * One pass over the database slots: notice schedulers that died, start the
 * ones that are needed, free slots nobody needs.  databases_to_check holds
 * databases of the start-up scan that did not fit into a slot yet.
 */
static List *
LauncherPass(List *databases_to_check)
{
	TimestampTz now = GetCurrentTimestamp();
	List	   *unknown_slots = NIL;
	ListCell   *lc;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);

	while (databases_to_check != NIL)
	{
		Oid			database_oid = linitial_oid(databases_to_check);

		if (JobDatabaseSlotFind(database_oid, true) == NULL)
			break;				/* full; try again on a later pass */
		JobDatabaseSlotFind(database_oid, false)->wake_pending = true;
		databases_to_check = list_delete_first(databases_to_check);
	}

	for (int i = 0; i < BGDDL_MAX_DATABASES; i++)
	{
		JobDatabaseSlot *slot = &JobShared->databases[i];
		pid_t		pid;

		if (slot->database_oid == InvalidOid)
			continue;

		/* A scheduler that stopped without detaching died; retry later. */
		if (slot->scheduler_running && scheduler_handles[i] != NULL &&
			GetBackgroundWorkerPid(scheduler_handles[i], &pid) == BGWH_STOPPED)
		{
			slot->scheduler_running = false;
			slot->scheduler_latch = NULL;
			slot->wake_pending = true;
			scheduler_retry_at[i] = TimestampTzPlusMilliseconds(now, SCHEDULER_RESTART_DELAY_MS);
			unknown_slots = lappend_int(unknown_slots, i);
		}

		if (slot->wake_pending && !slot->scheduler_running && !slot->leaving &&
			now >= scheduler_retry_at[i])
		{
			if (scheduler_handles[i] != NULL)
				pfree(scheduler_handles[i]);
			scheduler_handles[i] = StartScheduler(slot->database_oid);
			if (scheduler_handles[i] != NULL)
				slot->scheduler_running = true;
			else				/* no free background worker slot */
				scheduler_retry_at[i] = TimestampTzPlusMilliseconds(now, 1000);
		}
		else if (!slot->wake_pending && !slot->scheduler_running && !slot->leaving)
		{
			slot->database_oid = InvalidOid;
			scheduler_retry_at[i] = 0;
		}
	}
	LWLockRelease(JobShared->lock);

	/* Forget databases that were dropped, or their scheduler would loop. */
	foreach(lc, unknown_slots)
	{
		int			i = lfirst_int(lc);
		Oid			database_oid = JobShared->databases[i].database_oid;

		if (OidIsValid(database_oid) && !DatabaseExists(database_oid))
		{
			LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
			if (JobShared->databases[i].database_oid == database_oid &&
				!JobShared->databases[i].scheduler_running)
				JobShared->databases[i].database_oid = InvalidOid;
			LWLockRelease(JobShared->lock);
		}
	}
	list_free(unknown_slots);
	return databases_to_check;
}

void
JobLauncherMain(Datum main_arg)
{
	List	   *databases_to_check;

	/* A clean stop (or DROP DATABASE) ends the loop quietly: no FATAL in the log */
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	/* No database: we only read the shared catalog pg_database. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	JobShared->launcher_pid = MyProcPid;
	JobShared->launcher_latch = MyLatch;
	LWLockRelease(JobShared->lock);
	on_shmem_exit(LauncherDetach, (Datum) 0);

	pgstat_report_activity(STATE_RUNNING, "looking for databases with background DDL jobs");
	databases_to_check = ListConnectableDatabases();
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(0);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		databases_to_check = LauncherPass(databases_to_check);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
