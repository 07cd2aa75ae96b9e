/*-------------------------------------------------------------------------
 *
 * scheduler.c
 *	  The per-database scheduler: starts a worker for every unfinished job,
 *	  up to background_ddl.max_workers over the whole server.
 *
 * A job is "unfinished" while its row says queued or running.  A running
 * job without a live worker is one whose worker died (crash, restart,
 * transient error): the scheduler starts a new worker, which resumes it from
 * its last checkpoint.  Each restart of the same job waits twice as long as
 * the one before (up to a minute), and the worker itself fails a job that
 * has been started more than background_ddl.max_attempts times, so a job
 * that crashes its worker cannot loop forever.
 *
 * The scheduler exits as soon as its database has no unfinished job and no
 * worker, following the wake-up protocol of shared_state.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "background_ddl.h"
#include "job_catalog.h"
#include "launcher.h"
#include "shared_state.h"

#define RESTART_BACKOFF_MAX_MS	60000

/* What this scheduler remembers of a job it has started */
typedef struct JobLaunchHistory
{
	int64		job_id;
	int			launches;
	TimestampTz not_before;		/* earliest time for the next start */
} JobLaunchHistory;

static BgddlDatabaseSlot *my_database_slot = NULL;
static BackgroundWorkerHandle **worker_handles;	/* by worker slot index */
static List *launch_history = NIL;

static void
SchedulerDetach(int code, Datum arg)
{
	/*
	 * Only reached on an error exit (a clean exit detaches itself under the
	 * lock).  scheduler_running stays set: the launcher sees our worker
	 * stopped, and restarts a scheduler after a delay.
	 */
	LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
	if (my_database_slot != NULL && my_database_slot->scheduler_latch == MyLatch)
		my_database_slot->scheduler_latch = NULL;
	LWLockRelease(BgddlShared->lock);
	if (BgddlShared->launcher_latch)
		SetLatch(BgddlShared->launcher_latch);
}

static JobLaunchHistory *
LaunchHistoryFor(int64 job_id)
{
	ListCell   *lc;
	JobLaunchHistory *history;
	MemoryContext old_context;

	foreach(lc, launch_history)
	{
		history = lfirst(lc);
		if (history->job_id == job_id)
			return history;
	}
	old_context = MemoryContextSwitchTo(TopMemoryContext);
	history = palloc0(sizeof(JobLaunchHistory));
	history->job_id = job_id;
	launch_history = lappend(launch_history, history);
	MemoryContextSwitchTo(old_context);
	return history;
}

/*
 * Free the worker slots of our workers that have stopped.  Returns the
 * number still alive.
 */
static int
ReapWorkers(void)
{
	int			alive = 0;

	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		pid_t		pid;
		BgddlWorkerSlot *slot = &BgddlShared->workers[i];

		if (worker_handles[i] == NULL)
			continue;
		if (GetBackgroundWorkerPid(worker_handles[i], &pid) != BGWH_STOPPED)
		{
			alive++;
			continue;
		}
		LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
		if (slot->in_use && slot->database_oid == MyDatabaseId)
			slot->in_use = false;
		LWLockRelease(BgddlShared->lock);
		pfree(worker_handles[i]);
		worker_handles[i] = NULL;
	}
	return alive;
}

/*
 * Start a worker for a job, if a worker slot is free and the job's restart
 * backoff has passed.  Returns true if a worker was started.
 */
static bool
LaunchWorker(int64 job_id)
{
	BackgroundWorker worker;
	JobLaunchHistory *history = LaunchHistoryFor(job_id);
	TimestampTz now = GetCurrentTimestamp();
	int			slot_index = -1;
	BgddlWorkerSlot *slot;
	MemoryContext old_context;
	bool		started;

	if (now < history->not_before)
		return false;

	LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
	if (BgddlFindWorkerSlot(MyDatabaseId, job_id) != NULL)
	{
		LWLockRelease(BgddlShared->lock);
		return false;			/* already running */
	}
	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		if (!BgddlShared->workers[i].in_use)
		{
			slot_index = i;
			break;
		}
	}
	if (slot_index < 0)
	{
		LWLockRelease(BgddlShared->lock);
		return false;			/* all busy; a worker exit wakes us */
	}
	slot = &BgddlShared->workers[slot_index];
	memset(slot, 0, sizeof(BgddlWorkerSlot));
	slot->in_use = true;
	slot->database_oid = MyDatabaseId;
	slot->job_id = job_id;
	LWLockRelease(BgddlShared->lock);

	BgddlWorkerDescribe(&worker, "BgddlWorkerMain", "background_ddl worker",
						Int32GetDatum(slot_index), true);
	snprintf(worker.bgw_name, BGW_MAXLEN, "background_ddl worker for job " INT64_FORMAT,
			 job_id);

	old_context = MemoryContextSwitchTo(TopMemoryContext);
	started = RegisterDynamicBackgroundWorker(&worker, &worker_handles[slot_index]);
	MemoryContextSwitchTo(old_context);
	if (!started)
	{
		LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
		slot->in_use = false;
		LWLockRelease(BgddlShared->lock);
		worker_handles[slot_index] = NULL;
		ereport(LOG,
				(errmsg("background_ddl could not start a worker for job " INT64_FORMAT, job_id),
				 errhint("Consider increasing max_worker_processes.")));
		history->not_before = TimestampTzPlusMilliseconds(now, 1000);
		return false;
	}

	history->not_before =
		TimestampTzPlusMilliseconds(now, Min(RESTART_BACKOFF_MAX_MS,
											 history->launches == 0 ? 0 :
											 1000L << Min(history->launches - 1, 16)));
	history->launches++;
	return true;
}

/*
 * One scan of the job table: purge old history and start workers for
 * unfinished jobs.  Returns the number of unfinished jobs.
 */
static int
ScheduleJobs(void)
{
	List	   *job_ids = NIL;
	ListCell   *lc;
	int			unfinished;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "scanning background DDL jobs");

	if (JobCatalogExists())
	{
		JobPurgeHistory(background_ddl_history_retention_s);
		job_ids = JobListUnfinished();
	}
	unfinished = list_length(job_ids);
	foreach(lc, job_ids)
		(void) LaunchWorker(*(int64 *) lfirst(lc));

	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return unfinished;
}

void
BgddlSchedulerMain(Datum main_arg)
{
	Oid			database_oid = DatumGetObjectId(main_arg);

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnectionByOid(database_oid, InvalidOid, 0);
	pgstat_report_appname("background_ddl scheduler");

	worker_handles = MemoryContextAllocZero(TopMemoryContext,
											sizeof(BackgroundWorkerHandle *) * background_ddl_max_workers);

	LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
	my_database_slot = BgddlFindDatabaseSlot(database_oid, true);
	if (my_database_slot == NULL)
	{
		LWLockRelease(BgddlShared->lock);
		proc_exit(1);
	}
	my_database_slot->scheduler_running = true;
	my_database_slot->scheduler_latch = MyLatch;
	LWLockRelease(BgddlShared->lock);
	before_shmem_exit(SchedulerDetach, (Datum) 0);

	for (;;)
	{
		int			unfinished;
		int			alive;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* Clear before scanning: a submit committed after this re-wakes us. */
		LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
		my_database_slot->wake_pending = false;
		LWLockRelease(BgddlShared->lock);

		alive = ReapWorkers();
		unfinished = ScheduleJobs();
		alive = ReapWorkers();

		if (unfinished == 0 && alive == 0)
		{
			LWLockAcquire(BgddlShared->lock, LW_EXCLUSIVE);
			if (!my_database_slot->wake_pending)
			{
				my_database_slot->scheduler_running = false;
				my_database_slot->scheduler_latch = NULL;
				LWLockRelease(BgddlShared->lock);
				proc_exit(0);
			}
			LWLockRelease(BgddlShared->lock);
			continue;
		}

		/*
		 * Our workers' start and exit set our latch (bgw_notify_pid); the
		 * timeout covers a worker slot freed in another database and a
		 * restart backoff running out.
		 */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
