/*-------------------------------------------------------------------------
 *
 * job_scheduler.c
 *	  The per-database scheduler: starts a worker for every job that needs
 *	  one, up to background_ddl.max_workers over the whole server, and
 *	  helpers for jobs whose backfill has chunks left, up to
 *	  background_ddl.max_workers_per_job per job, while no job waits for a
 *	  worker.
 *
 * A job needs a worker while its row says queued, running or cancelling,
 * or while capture triggers of an ended job are left to drop.  A running
 * job without a live worker is one whose worker died (crash, restart,
 * transient error): the scheduler starts a new worker, which resumes it from
 * its last checkpoint.  If the worker before did not let go cleanly
 * (in_flight), the new start waits 1 s, 2 s, 4 s ... (up to a minute) after
 * the last one, and the worker itself fails a job that has been started more
 * than background_ddl.max_attempts times, so a job that crashes its worker
 * cannot loop forever.  Everything the scheduler decides comes from the job
 * rows, so it remembers nothing between passes.
 *
 * Workers are shared fairly between roles: a job of the role with the
 * fewest workers starts first, and while a job waits for a worker, a role
 * that runs two jobs more than the waiting job's role is asked to give one
 * worker back (at that job's next step; it is queued again, in its place).
 * A worker that would only wait (for its rate limit, for a lock) gives its
 * slot back too, with a time before which the job needs none.
 *
 * The scheduler exits as soon as its database has no job that needs a
 * worker and no worker, following the wake-up protocol of job_shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

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

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_launcher.h"
#include "engine/job_shmem.h"
#include "engine/job_xact.h"
#include "engine/kind.h"

#define RESTART_BACKOFF_MAX_MS	60000

static JobDatabaseSlot *my_database_slot = NULL;
static BackgroundWorkerHandle **worker_handles;	/* by worker slot index */

static void
SchedulerDetach(int code, Datum arg)
{
	/*
	 * Only reached on an error exit (a clean exit detaches itself under the
	 * lock).  scheduler_running stays set: the launcher sees our worker
	 * stopped, and restarts a scheduler after a delay.
	 */
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	if (my_database_slot != NULL && my_database_slot->scheduler_latch == MyLatch)
		my_database_slot->scheduler_latch = NULL;
	LWLockRelease(JobShared->lock);
	if (JobShared->launcher_latch)
		SetLatch(JobShared->launcher_latch);
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
		JobWorkerSlot *slot = &JobShared->workers[i];

		if (worker_handles[i] == NULL)
			continue;
		if (GetBackgroundWorkerPid(worker_handles[i], &pid) != BGWH_STOPPED)
		{
			alive++;
			continue;
		}
		LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
		if (slot->in_use && slot->database_oid == MyDatabaseId)
			slot->in_use = false;
		LWLockRelease(JobShared->lock);
		pfree(worker_handles[i]);
		worker_handles[i] = NULL;
	}
	return alive;
}

/*
 * When a job whose last worker died (in its attempt-th attempt, started
 * then) may be started again: one second after the first, doubling up to a
 * minute.  The view says the same (restart_not_before).
 */
TimestampTz
JobRestartNotBefore(TimestampTz attempt_started_at, int32 attempts)
{
	if (attempts <= 0)
		return 0;
	return TimestampTzPlusMilliseconds(attempt_started_at,
									   Min(RESTART_BACKOFF_MAX_MS, 1000L << Min(attempts - 1, 16)));
}

static TimestampTz
RestartNotBefore(const JobScheduleEntry *entry)
{
	return entry->in_flight ? JobRestartNotBefore(entry->attempt_started_at, entry->attempts) : 0;
}

/* Does a job of any database wait for a worker slot?  Caller holds the lock. */
static bool
AnyJobStarved(void)
{
	for (int i = 0; i < BGDDL_MAX_DATABASES; i++)
	{
		if (JobShared->databases[i].database_oid != InvalidOid &&
			JobShared->databases[i].jobs_starved)
			return true;
	}
	return false;
}

/*
 * May the job have one more worker?  Its first one, if it has none and its
 * restart backoff has passed; a helper, if its first worker has opened its
 * chunk claims with blocks left, it has fewer than max_workers_per_job
 * workers, no helper left it lately because its tables were busy, and no
 * job is waiting for a worker.  Caller holds the lock.
 */
static bool
WantsWorker(const JobScheduleEntry *entry, bool helper)
{
	bool		has_first = false;
	int			workers = 0;
	JobSlot *job_slot;

	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobWorkerSlot *slot = &JobShared->workers[i];

		if (slot->in_use && slot->database_oid == MyDatabaseId && slot->job_id == entry->id)
		{
			workers++;
			has_first |= !slot->helper;
		}
	}
	if (!helper)
		return !has_first;
	job_slot = JobSlotFind(MyDatabaseId, entry->id, false);
	return has_first && job_slot != NULL && job_slot->claims_open &&
		job_slot->claim_next_block < job_slot->claim_end_block &&
		GetCurrentTimestamp() >= job_slot->helpers_resume_at &&
		workers < (entry->max_workers > 0 ? entry->max_workers : background_ddl_max_workers_per_job) &&
		!AnyJobStarved();
}

/*
 * Start a worker for a job (its first, or a helper), if it wants one and a
 * worker slot is free.  Returns false if no slot was free.
 */
static bool
LaunchWorker(const JobScheduleEntry *entry, bool helper)
{
	BackgroundWorker worker;
	int			slot_index = -1;
	JobWorkerSlot *slot;
	MemoryContext old_context;
	bool		started;

	if (!helper && GetCurrentTimestamp() < Max(RestartNotBefore(entry), entry->not_before))
		return true;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	if (!WantsWorker(entry, helper))
	{
		LWLockRelease(JobShared->lock);
		return true;
	}
	for (int i = 0; i < background_ddl_max_workers && slot_index < 0; i++)
	{
		if (!JobShared->workers[i].in_use)
			slot_index = i;
	}
	if (slot_index < 0)
	{
		LWLockRelease(JobShared->lock);
		return false;			/* all busy; a worker exit wakes us */
	}
	slot = &JobShared->workers[slot_index];
	memset(slot, 0, sizeof(JobWorkerSlot));
	slot->in_use = true;
	slot->helper = helper;
	slot->database_oid = MyDatabaseId;
	slot->job_id = entry->id;
	slot->role_oid = entry->owner_oid;
	LWLockRelease(JobShared->lock);

	JobWorkerDescribe(&worker, "JobWorkerMain", "background_ddl worker",
						Int32GetDatum(slot_index), true);
	snprintf(worker.bgw_name, BGW_MAXLEN, "background_ddl %s for job %lld",
			 helper ? "helper" : "worker", (long long) entry->id);

	old_context = MemoryContextSwitchTo(TopMemoryContext);
	started = RegisterDynamicBackgroundWorker(&worker, &worker_handles[slot_index]);
	MemoryContextSwitchTo(old_context);
	if (!started)
	{
		LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
		slot->in_use = false;
		LWLockRelease(JobShared->lock);
		worker_handles[slot_index] = NULL;
		ereport(LOG,
				(errmsg("background_ddl could not start a worker for job %lld", (long long) entry->id),
				 errhint("Consider increasing max_worker_processes.")));
	}
	return true;
}

/* Note whether a job of ours found no free worker slot (helpers give theirs up) */
static void
SetJobsStarved(bool starved)
{
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	my_database_slot->jobs_starved = starved;
	LWLockRelease(JobShared->lock);
}

/*
 * The first workers (helpers aside) of a role's jobs running now, in any
 * database.  Caller holds the lock.
 */
static int
RoleWorkers(Oid role_oid)
{
	int			workers = 0;

	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobWorkerSlot *slot = &JobShared->workers[i];

		workers += slot->in_use && !slot->helper && slot->role_oid == role_oid;
	}
	return workers;
}

/*
 * The job to start a first worker for next: of those that need one, a job
 * with work to do before one that is ready (it only keeps caught up while
 * it waits for its cut-over); then the job of the role with the fewest
 * workers now, oldest first among equals (a role's jobs keep their order).
 */
static JobScheduleEntry *
NextJob(List *candidates)
{
	JobScheduleEntry *next = NULL;
	int			next_workers = INT_MAX;
	ListCell   *lc;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	foreach(lc, candidates)
	{
		JobScheduleEntry *entry = lfirst(lc);
		int			workers = RoleWorkers(entry->owner_oid);

		if (next == NULL || (next->ready && !entry->ready) ||
			(next->ready == entry->ready && workers < next_workers))
		{
			next = entry;
			next_workers = workers;
		}
	}
	LWLockRelease(JobShared->lock);
	return next;
}

/*
 * Ask a worker to give its slot back at its next step (JobStepBegin); for_work:
 * its job is ready, and a job with work to do waits.  Caller holds the lock.
 */
static void
AskToGiveBack(JobWorkerSlot *slot, bool for_work)
{
	slot->give_back = true;
	slot->give_back_for_work = for_work;
	slot->give_back_asked_at = GetCurrentTimestamp();
	slot->give_back_forced = false;
	if (slot->latch != NULL)
		SetLatch(slot->latch);
}

/*
 * Every worker slot is taken and the job waits: if another role runs at
 * least two jobs more than the waiting job's role, ask the newest of them to
 * give its slot back at its next step (JobStepGiveBack; it is queued again,
 * in its place).  So no role runs more than its fair share of the workers
 * while another role's job waits.
 */
static void
AskForFairShare(const JobScheduleEntry *waiting)
{
	JobWorkerSlot *newest = NULL;
	int			waiting_workers;
	int			newest_role_workers = 0;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	waiting_workers = RoleWorkers(waiting->owner_oid);
	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobWorkerSlot *slot = &JobShared->workers[i];
		int			role_workers;

		if (!slot->in_use || slot->helper || slot->role_oid == waiting->owner_oid)
			continue;
		if (slot->give_back)
		{
			/* One is giving its slot back already; or has no step to do it at */
			if (!slot->give_back_forced && slot->pid != 0 &&
				TimestampDifferenceExceeds(slot->give_back_asked_at, GetCurrentTimestamp(),
										   JOB_GIVE_BACK_FORCE_SECONDS * 1000))
			{
				slot->give_back_forced = true;
				kill(slot->pid, SIGINT);
				ereport(LOG,
						(errmsg("background_ddl interrupts the worker of job %lld, which has not given its slot back for job %lld of another role",
								(long long) slot->job_id, (long long) waiting->id),
						 errdetail("The job runs in one batch, or builds an index, with no step to stop at; it is queued again and starts that over when it has a worker.")));
			}
			newest = NULL;
			break;
		}
		role_workers = RoleWorkers(slot->role_oid);
		if (role_workers >= waiting_workers + 2 &&
			(newest == NULL || role_workers > newest_role_workers ||
			 (role_workers == newest_role_workers && slot->job_id > newest->job_id)))
		{
			newest = slot;
			newest_role_workers = role_workers;
		}
	}
	if (newest != NULL)
	{
		AskToGiveBack(newest, false);
		ereport(LOG,
				(errmsg("background_ddl asks the worker of job %lld to give its slot back, for job %lld of another role",
						(long long) newest->job_id, (long long) waiting->id)));
	}
	LWLockRelease(JobShared->lock);
}

/*
 * Every worker slot is taken and a job with work to do waits (not one that
 * is ready itself): ask the worker of a ready job (built and caught up, it
 * waits for complete_ddl, its window or fewer writes) to give its slot back
 * at its next look, a second at most; it is queued again, after the jobs
 * with work to do (NextJob), and catches up when it has a worker again.
 * False if no worker runs a ready job.
 */
static bool
AskReadyToYield(const JobScheduleEntry *waiting, List *entries)
{
	JobWorkerSlot *yielding = NULL;
	ListCell   *lc;

	if (waiting->ready)
		return false;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < background_ddl_max_workers && yielding == NULL; i++)
	{
		JobWorkerSlot *slot = &JobShared->workers[i];

		if (!slot->in_use || slot->helper || slot->database_oid != MyDatabaseId)
			continue;
		foreach(lc, entries)
		{
			JobScheduleEntry *entry = lfirst(lc);

			if (entry->id == slot->job_id && entry->ready)
				yielding = slot;
		}
	}
	if (yielding != NULL && !yielding->give_back)
	{
		AskToGiveBack(yielding, true);
		ereport(LOG,
				(errmsg("background_ddl asks the worker of job %lld, which is ready and waits for its cut-over, to give its slot back, for job %lld",
						(long long) yielding->job_id, (long long) waiting->id)));
	}
	LWLockRelease(JobShared->lock);
	return yielding != NULL;
}

/*
 * One scan of the job table: purge old history and start workers for the
 * jobs that need one.  Returns the number of such jobs.
 */
static int
ScheduleJobs(void)
{
	List	   *entries = NIL;
	List	   *candidates = NIL;
	ListCell   *lc;
	int			waiting = 0;
	bool		starved = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "scanning background DDL jobs");

	if (CatalogLookup() != NULL)
	{
		CatalogJobsPurge(background_ddl_history_retention_s);
		KindsHousekeeping();
		entries = CatalogJobsSchedulable();
	}
	/*
	 * Every job its first worker, the roles with the fewest workers first,
	 * each role's jobs oldest first; then helpers
	 */
	foreach(lc, entries)
	{
		JobScheduleEntry *entry = lfirst(lc);

		if (entry->needs_worker)
			candidates = lappend(candidates, entry);
	}
	waiting = list_length(candidates);
	while (candidates != NIL)
	{
		JobScheduleEntry *next = NextJob(candidates);

		if (!LaunchWorker(next, false))
		{
			starved = true;
			if (!AskReadyToYield(next, entries))
				AskForFairShare(next);
			break;
		}
		candidates = list_delete_ptr(candidates, next);
	}
	SetJobsStarved(starved);
	foreach(lc, entries)
	{
		JobScheduleEntry *entry = lfirst(lc);

		if (entry->needs_worker && !starved)
			(void) LaunchWorker(entry, true);
	}

	PopActiveSnapshot();
	CommitTransactionCommand();

	/* In a transaction of its own: a job row it raises stays locked no longer */
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (CatalogLookup() != NULL)
		KindsRecordLiveProgress();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return waiting;
}

void
JobSchedulerMain(Datum main_arg)
{
	Oid			database_oid = DatumGetObjectId(main_arg);
	MemoryContext pass_context;

	/* A clean stop (or DROP DATABASE) ends the loop quietly: no FATAL in the log */
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnectionByOid(database_oid, InvalidOid, 0);
	pgstat_report_appname("background_ddl scheduler");

	worker_handles = MemoryContextAllocZero(TopMemoryContext,
											sizeof(BackgroundWorkerHandle *) * background_ddl_max_workers);
	pass_context = AllocSetContextCreate(TopMemoryContext, "background_ddl scheduler pass",
										 ALLOCSET_DEFAULT_SIZES);

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	my_database_slot = JobDatabaseSlotFind(database_oid, true);
	if (my_database_slot == NULL || my_database_slot->leaving)
	{
		if (my_database_slot != NULL)
			my_database_slot->scheduler_running = false;
		LWLockRelease(JobShared->lock);
		proc_exit(my_database_slot == NULL ? 1 : 0);
	}
	my_database_slot->scheduler_running = true;
	my_database_slot->scheduler_latch = MyLatch;
	my_database_slot->scheduler_pid = MyProcPid;
	LWLockRelease(JobShared->lock);
	before_shmem_exit(SchedulerDetach, (Datum) 0);

	for (;;)
	{
		int			waiting;
		int			alive;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(0);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* Clear before scanning: a submit committed after this re-wakes us. */
		LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
		my_database_slot->wake_pending = false;
		LWLockRelease(JobShared->lock);
		JobXactSendNotices();

		MemoryContextSwitchTo(pass_context);
		(void) ReapWorkers();
		waiting = ScheduleJobs();
		alive = ReapWorkers();
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(pass_context);

		if (waiting == 0 && alive == 0)
		{
			LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
			if (!my_database_slot->wake_pending)
			{
				my_database_slot->scheduler_running = false;
				my_database_slot->scheduler_latch = NULL;
				LWLockRelease(JobShared->lock);
				proc_exit(0);
			}
			LWLockRelease(JobShared->lock);
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
