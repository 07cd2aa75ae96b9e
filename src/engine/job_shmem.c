/*-------------------------------------------------------------------------
 *
 * job_shmem.c
 *	  The small shared memory area of background_ddl.
 *
 * Nothing durable lives here: the job catalog tables are the truth, and this
 * area only says who is running what, who must be woken, and how far the
 * running jobs have got since their last checkpoint.  It is rebuilt empty
 * after every crash restart, which is fine because the launcher then
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

#include <signal.h>

#include "access/transam.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lockdefs.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "catalog/settings.h"
#include "engine/job_shmem.h"

JobSharedState *JobShared = NULL;
JobSlot *MyJobSlot = NULL;
JobWorkerSlot *MyWorkerSlot = NULL;

/* Rows this worker inserted in its current (uncommitted) step */
static int64 live_rows_uncommitted = 0;

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static void BgddlSharedStateStartup(void);

static Size
BgddlSharedStateSize(void)
{
	Size		size = offsetof(JobSharedState, workers);

	size = add_size(size, mul_size(sizeof(JobWorkerSlot), background_ddl_max_workers));
	size = MAXALIGN(size);
	return add_size(size, mul_size(sizeof(JobSlot), background_ddl_max_workers));
}

/* Reserve our shared memory and lock; called from the shmem_request_hook */
void
JobShmemRequest(void)
{
	RequestAddinShmemSpace(BgddlSharedStateSize());
	RequestNamedLWLockTranche(BGDDL_EXTENSION_NAME, 1);
}

/* Install the startup hook that attaches to (or creates) the area */
void
JobShmemInit(void)
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
	JobShared = ShmemInitStruct("background_ddl", BgddlSharedStateSize(), &found);
	if (!found)
	{
		memset(JobShared, 0, BgddlSharedStateSize());
		JobShared->lock = &(GetNamedLWLockTranche(BGDDL_EXTENSION_NAME))->lock;
		ConditionVariableInit(&JobShared->job_finished);
	}
	/* A pointer into the area, valid in every process (same mapping) */
	JobShared->jobs = (JobSlot *)
		((char *) JobShared +
		 MAXALIGN(offsetof(JobSharedState, workers) +
				  sizeof(JobWorkerSlot) * background_ddl_max_workers));
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Find the slot of a database, optionally creating it.  Caller holds the
 * lock (exclusively when create is true).  Returns NULL if not found, or if
 * all slots are taken.
 */
JobDatabaseSlot *
JobDatabaseSlotFind(Oid database_oid, bool create)
{
	JobDatabaseSlot *free_slot = NULL;

	for (int i = 0; i < BGDDL_MAX_DATABASES; i++)
	{
		JobDatabaseSlot *slot = &JobShared->databases[i];

		if (slot->database_oid == database_oid)
			return slot;
		if (slot->database_oid == InvalidOid && free_slot == NULL)
			free_slot = slot;
	}
	if (create && free_slot != NULL)
	{
		memset(free_slot, 0, sizeof(JobDatabaseSlot));
		free_slot->database_oid = database_oid;
		return free_slot;
	}
	return NULL;
}

/* Signal the scheduler and workers of a database to exit; returns how many are left */
static int
SignalDatabaseProcesses(Oid database_oid)
{
	JobDatabaseSlot *slot;
	pid_t	   *pids = palloc(sizeof(pid_t) * (background_ddl_max_workers + 1));
	int			npids = 0;
	int			left = 0;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot = JobDatabaseSlotFind(database_oid, false);
	if (slot != NULL)
	{
		slot->leaving = true;
		/* One that is registered but not up yet exits when it sees leaving */
		if (slot->scheduler_latch != NULL)
		{
			pids[npids++] = slot->scheduler_pid;
			left++;
		}
	}
	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobWorkerSlot *worker = &JobShared->workers[i];

		if (!worker->in_use || worker->database_oid != database_oid)
			continue;
		left++;
		if (worker->pid != 0)
			pids[npids++] = worker->pid;
	}
	LWLockRelease(JobShared->lock);
	for (int i = 0; i < npids; i++)
		(void) kill(pids[i], SIGTERM);
	pfree(pids);
	return left;
}

/*
 * Leave a database that DROP DATABASE is about to drop, as autovacuum
 * workers do: its scheduler and job workers are asked to exit (a worker
 * records that it let go, not an attempt), no scheduler is started for it
 * until JobDatabaseLeft, and this waits (at most 10 s) until they are gone.
 * The jobs are dropped with the database; if the DROP fails, they go on.
 */
void
JobDatabaseLeave(Oid database_oid)
{
	for (int waited_ms = 0; SignalDatabaseProcesses(database_oid) > 0 && waited_ms < 10000;
		 waited_ms += 10)
	{
		CHECK_FOR_INTERRUPTS();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* Is a DROP DATABASE of this database asking our processes to leave it? */
bool
JobDatabaseLeaving(Oid database_oid)
{
	JobDatabaseSlot *slot;
	bool		leaving;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	slot = JobDatabaseSlotFind(database_oid, false);
	leaving = slot != NULL && slot->leaving;
	LWLockRelease(JobShared->lock);
	return leaving;
}

/* The DROP DATABASE that JobDatabaseLeave was for ended: dropped, or not */
void
JobDatabaseLeft(Oid database_oid, bool dropped)
{
	JobDatabaseSlot *slot;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot = JobDatabaseSlotFind(database_oid, false);
	if (slot != NULL && dropped && !slot->scheduler_running)
		memset(slot, 0, sizeof(JobDatabaseSlot));
	else if (slot != NULL)
	{
		slot->leaving = false;
		slot->wake_pending = !dropped;
	}
	LWLockRelease(JobShared->lock);
	if (!dropped)
		JobWakeScheduler(database_oid);
}

/*
 * Queue the announcement of a committed state change for the database's
 * scheduler to send (then wake it, JobWakeScheduler).  A NOTIFY in the
 * transaction that made the change would hold PostgreSQL's cluster-wide
 * notify lock while its commit waits for a synchronous standby, and so
 * make every other notifying session wait for that standby too.  The
 * announcement is a hint to look again: when more than the queue holds
 * wait, the oldest are dropped.
 */
void
JobNoticePost(Oid database_oid, int64 job_id, const char *state)
{
	JobDatabaseSlot *slot;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot = JobDatabaseSlotFind(database_oid, true);
	if (slot != NULL)
	{
		if (slot->notice_count == JOB_NOTICES_PER_DATABASE)
		{
			memmove(&slot->notices[0], &slot->notices[1],
					sizeof(JobNotice) * (JOB_NOTICES_PER_DATABASE - 1));
			slot->notice_count--;
		}
		slot->notices[slot->notice_count].job_id = job_id;
		strlcpy(slot->notices[slot->notice_count].state, state, sizeof(slot->notices[0].state));
		slot->notice_count++;
	}
	LWLockRelease(JobShared->lock);
}

/* Take the database's queued announcements (at most JOB_NOTICES_PER_DATABASE) */
int
JobNoticesTake(Oid database_oid, JobNotice *notices)
{
	JobDatabaseSlot *slot;
	int			count = 0;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot = JobDatabaseSlotFind(database_oid, false);
	if (slot != NULL)
	{
		count = slot->notice_count;
		memcpy(notices, slot->notices, sizeof(JobNotice) * count);
		slot->notice_count = 0;
	}
	LWLockRelease(JobShared->lock);
	return count;
}

/*
 * Tell the background side that a database has new work: called after the
 * transaction that created or changed a job has committed.
 */
void
JobWakeScheduler(Oid database_oid)
{
	JobDatabaseSlot *slot;
	Latch	   *scheduler_latch = NULL;
	Latch	   *launcher_latch;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot = JobDatabaseSlotFind(database_oid, true);
	if (slot != NULL)
	{
		slot->wake_pending = true;
		scheduler_latch = slot->scheduler_latch;
	}
	launcher_latch = JobShared->launcher_latch;
	LWLockRelease(JobShared->lock);

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

/*
 * The slot of a job, optionally taking a free one.  Caller holds the lock
 * (exclusively when create is true).  NULL if none (or none free).
 */
JobSlot *
JobSlotFind(Oid database_oid, int64 job_id, bool create)
{
	JobSlot *free_slot = NULL;

	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobSlot *slot = &JobShared->jobs[i];

		if (slot->database_oid == database_oid && slot->job_id == job_id)
			return slot;
		if (slot->database_oid == InvalidOid && free_slot == NULL)
			free_slot = slot;
	}
	if (create && free_slot != NULL)
	{
		memset(free_slot, 0, sizeof(JobSlot));
		free_slot->database_oid = database_oid;
		free_slot->job_id = job_id;
		free_slot->rows_total = -1;
		pg_atomic_init_u64(&free_slot->rows_done, 0);
		pg_atomic_init_u64(&free_slot->capture_samples, 0);
		pg_atomic_init_u64(&free_slot->capture_nanoseconds, 0);
		return free_slot;
	}
	return NULL;
}

/*
 * A job's live progress in its slot: its workers', or, for a job in one
 * batch, its rows so far over the plan's estimate.  Caller holds the lock.
 */
static double
JobSlotProgress(JobSlot *slot)
{
	double		progress = slot->progress;

	if (slot->one_batch && slot->rows_total > 0)
		progress = Max(progress, Min(99.0, 100.0 * (int64) pg_atomic_read_u64(&slot->rows_done) /
									 slot->rows_total));
	return progress;
}

/*
 * The jobs of a database that a first worker (not a helper) runs now, with
 * that worker's pid and the job's live progress (JobSlotProgress), into
 * job_ids, pids and progress (at most max_jobs; returns how many)
 */
int
JobsRunning(Oid database_oid, int64 *job_ids, pid_t *pids, double *progress, int max_jobs)
{
	int			count = 0;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	for (int i = 0; i < background_ddl_max_workers && count < max_jobs; i++)
	{
		JobWorkerSlot *worker = &JobShared->workers[i];
		JobSlot    *slot;

		if (!worker->in_use || worker->pid == 0 || worker->helper ||
			worker->database_oid != database_oid || worker->job_id == 0)
			continue;
		slot = JobSlotFind(database_oid, worker->job_id, false);
		job_ids[count] = worker->job_id;
		pids[count] = worker->pid;
		progress[count++] = slot != NULL ? JobSlotProgress(slot) : 0;
	}
	LWLockRelease(JobShared->lock);
	return count;
}

/*
 * The processes working on a job now, into pids (at most max_pids; returns
 * how many), the lock its first worker asks for (*lock_relid
 * InvalidOid: none), and the xmin as old as which it waits for snapshots
 * to go (*snapshot_limit; JobPublishSnapshotWait)
 */
int
JobWorkersOf(Oid database_oid, int64 job_id, pid_t *pids, int max_pids, Oid *lock_relid,
			 int *lock_mode, TransactionId *snapshot_limit)
{
	int			count = 0;
	JobSlot    *slot;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	for (int i = 0; i < background_ddl_max_workers; i++)
	{
		JobWorkerSlot *worker = &JobShared->workers[i];

		if (worker->in_use && worker->pid != 0 && worker->database_oid == database_oid &&
			worker->job_id == job_id && count < max_pids)
			pids[count++] = worker->pid;
	}
	slot = JobSlotFind(database_oid, job_id, false);
	*lock_relid = slot != NULL ? slot->lock_relid : InvalidOid;
	*lock_mode = slot != NULL ? slot->lock_mode : NoLock;
	*snapshot_limit = slot != NULL ? slot->snapshot_limit : InvalidTransactionId;
	LWLockRelease(JobShared->lock);
	return count;
}

/*
 * Wake the workers of a job (or only its helpers); with interrupt, also
 * cancel what they are running (SIGINT).  Caller does not hold the lock.
 */
static void
SignalJobWorkers(Oid database_oid, int64 job_id, bool helpers_only, bool interrupt)
{
	pid_t		pids[64];
	Latch	   *latches[64];
	int			count = 0;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	for (int i = 0; i < background_ddl_max_workers && count < lengthof(pids); i++)
	{
		JobWorkerSlot *slot = &JobShared->workers[i];

		if (slot->in_use && slot->database_oid == database_oid && slot->job_id == job_id &&
			slot->pid != 0 && (slot->helper || !helpers_only))
		{
			pids[count] = slot->pid;
			latches[count] = slot->latch;
			count++;
		}
	}
	LWLockRelease(JobShared->lock);

	for (int i = 0; i < count; i++)
	{
		if (interrupt)
			(void) kill(pids[i], SIGINT);
		if (latches[i] != NULL)
			SetLatch(latches[i]);
	}
}

/*
 * Wake every worker of a job; with interrupt, also cancel what it is
 * running, so that it notices a control request at once instead of at the
 * end of its batch
 */
void
JobSignalWorkers(Oid database_oid, int64 job_id, bool interrupt)
{
	SignalJobWorkers(database_oid, job_id, false, interrupt);
}

/*
 * Stop the helpers of this worker's job in their chunks: what they compute
 * is not wanted.  They stop as at a control request, quietly, and their
 * claims settle as they exit.  Caller closed the claims first.
 */
void
JobInterruptHelpers(void)
{
	SignalJobWorkers(MyDatabaseId, MyJobSlot->job_id, true, true);
}

/* A batch of this worker inserted rows (not committed yet) */
void
JobPublishLiveRows(int64 rows)
{
	if (MyJobSlot == NULL || rows == 0)
		return;
	pg_atomic_fetch_add_u64(&MyJobSlot->rows_done, (uint64) rows);
	live_rows_uncommitted += rows;
}

/* The step that inserted them committed */
void
JobLiveRowsCommitted(void)
{
	live_rows_uncommitted = 0;
}

/* The step that inserted them aborted: they no longer count */
void
JobLiveRowsAborted(void)
{
	if (MyJobSlot != NULL && live_rows_uncommitted != 0)
		pg_atomic_fetch_sub_u64(&MyJobSlot->rows_done, (uint64) live_rows_uncommitted);
	live_rows_uncommitted = 0;
}

/*
 * What the job's worker is doing now: the catalog's phase commits with the
 * step's transaction, too late for a long one (the cut-over).
 */
void
JobPublishPhase(int phase)
{
	if (MyJobSlot == NULL)
		return;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->phase = phase;
	LWLockRelease(JobShared->lock);
}

/*
 * The parallel workers this worker runs now (pg_stat_background_ddl.workers
 * counts them); 0 when they are done, and after an error (JobStepAbort)
 */
void
JobPublishParallelWorkers(int parallel_workers)
{
	if (MyJobSlot == NULL || MyJobSlot->parallel_workers == parallel_workers)
		return;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->parallel_workers = parallel_workers;
	LWLockRelease(JobShared->lock);
}

/*
 * A writer's session adds what its capture triggers cost a job (sampled:
 * capture_trigger.c) to the job's slot, if the job has workers now (else
 * the sample is lost: the job's cost is the workers' to keep)
 */
void
JobCaptureCostReport(int64 job_id, int64 samples, int64 nanoseconds)
{
	JobSlot    *slot;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	slot = JobSlotFind(MyDatabaseId, job_id, false);
	if (slot != NULL)
	{
		pg_atomic_fetch_add_u64(&slot->capture_samples, (uint64) samples);
		pg_atomic_fetch_add_u64(&slot->capture_nanoseconds, (uint64) nanoseconds);
	}
	LWLockRelease(JobShared->lock);
}

/* A worker of the job takes what the writers reported since it last took it */
void
JobCaptureCostTake(int64 *samples, int64 *nanoseconds)
{
	*samples = *nanoseconds = 0;
	if (MyJobSlot == NULL)
		return;
	*samples = (int64) pg_atomic_exchange_u64(&MyJobSlot->capture_samples, 0);
	*nanoseconds = (int64) pg_atomic_exchange_u64(&MyJobSlot->capture_nanoseconds, 0);
}

/* Is this process its job's first worker (not a helper, nor a session)? */
bool
JobIsFirstWorker(void)
{
	return MyJobSlot != NULL && !(MyWorkerSlot != NULL && MyWorkerSlot->helper);
}

/*
 * The lock the job's first worker is asking for, without queueing or in the
 * queue (InvalidOid: none), for pg_stat_background_ddl.waiting_on
 */
void
JobPublishLockWait(Oid relid, int mode)
{
	if (!JobIsFirstWorker())
		return;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->lock_relid = relid;
	MyJobSlot->lock_mode = mode;
	LWLockRelease(JobShared->lock);
}

/*
 * The snapshots the job's first worker waits to go, those as old as
 * limit_xmin (InvalidTransactionId: none), for the sessions that wait for
 * the job (session_control.c)
 */
void
JobPublishSnapshotWait(TransactionId limit_xmin)
{
	if (!JobIsFirstWorker())
		return;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->snapshot_limit = limit_xmin;
	LWLockRelease(JobShared->lock);
}

/*
 * What else the job's first worker waits for (a standby, the rate limit, a
 * Citus node), or NULL: nothing, for pg_stat_background_ddl.waiting_on;
 * with the name of the standby it waits for, or NULL.  Shared memory, not
 * the worker's activity: every role sees it, but the standby's name, which
 * live_jobs() shows only to those who may read pg_stat_replication.
 */
void
JobPublishWaiting(const char *what, const char *standby)
{
	int			length = what != NULL ? pg_mbcliplen(what, strlen(what), JOB_WAITING_FOR_LEN - 1) : 0;

	if (!JobIsFirstWorker())
		return;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	if (length > 0)
		memcpy(MyJobSlot->waiting_for, what, length);
	MyJobSlot->waiting_for[length] = '\0';
	strlcpy(MyJobSlot->waiting_standby, standby != NULL ? standby : "", NAMEDATALEN);
	LWLockRelease(JobShared->lock);
}

/* Does this worker hold a claimed chunk whose step has not ended? */
static bool my_claim_in_flight = false;

/*
 * The job's first worker lets the others take chunks from next_block on
 * (it takes them there too).  Returns the build's generation.
 */
uint32
JobClaimsOpen(int64 next_block, int64 end_block)
{
	uint32		generation;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->build_generation++;
	MyJobSlot->claims_open = true;
	MyJobSlot->claim_next_block = next_block;
	MyJobSlot->claim_end_block = end_block;
	generation = MyJobSlot->build_generation;
	LWLockRelease(JobShared->lock);
	return generation;
}

/* No more claims (the backfill is over, or starts over) */
void
JobClaimsClose(void)
{
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->claims_open = false;
	MyJobSlot->build_generation++;
	LWLockRelease(JobShared->lock);
}

/* The generation of the build whose chunks are claimed now (0: none) */
uint32
JobBuildGeneration(void)
{
	uint32		generation;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	generation = MyJobSlot->claims_open ? MyJobSlot->build_generation : 0;
	LWLockRelease(JobShared->lock);
	return generation;
}

/*
 * Take the next chunk of at most this many blocks, if claims are open for
 * that generation of the build and blocks are left.  The claim is in flight
 * until JobClaimSettled (the end of the step, either way).
 *
 * With several workers, a chunk is at most half of this worker's share of
 * the blocks left, and at least an eighth of what it asks for: the chunks
 * shrink toward the end, so that no worker computes a long last chunk while
 * the others have none (a 2,000,000-row aggregate's backfill took 250 ms,
 * the last 150 of them one worker's chunk of half the table, its chunks
 * grown four times at each).
 */
bool
JobClaimChunk(uint32 generation, int32 blocks, int64 *start_block, int64 *end_block)
{
	bool		claimed = false;

	Assert(!my_claim_in_flight);
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	if (MyJobSlot->claims_open && MyJobSlot->build_generation == generation &&
		MyJobSlot->claim_next_block < MyJobSlot->claim_end_block)
	{
		int64		left = MyJobSlot->claim_end_block - MyJobSlot->claim_next_block;
		int64		size = blocks;

		if (MyJobSlot->workers > 1)
			size = Max(Min(size, left / (2 * MyJobSlot->workers)), Max(blocks / 8, 1));
		*start_block = MyJobSlot->claim_next_block;
		*end_block = Min(*start_block + size, MyJobSlot->claim_end_block);
		MyJobSlot->claim_next_block = *end_block;
		MyJobSlot->chunks_in_flight++;
		my_claim_in_flight = true;
		claimed = true;
	}
	LWLockRelease(JobShared->lock);
	return claimed;
}

/* The step of this worker's claimed chunk ended (committed or not) */
void
JobClaimSettled(void)
{
	bool		last;

	if (!my_claim_in_flight || MyJobSlot == NULL)
		return;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->chunks_in_flight--;
	last = MyJobSlot->chunks_in_flight == 0 && !MyJobSlot->claims_open;
	LWLockRelease(JobShared->lock);
	my_claim_in_flight = false;
	/* (the job's first worker may wait for it: JobChunksClose) */
	if (last)
		SignalJobWorkers(MyDatabaseId, MyJobSlot->job_id, false, false);
}

/* How many claimed chunks are still being computed */
int
JobChunksInFlight(void)
{
	int			in_flight;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	in_flight = MyJobSlot->chunks_in_flight;
	LWLockRelease(JobShared->lock);
	return in_flight;
}

/* No helper for this worker's job before that time */
void
JobHelpersBackOff(TimestampTz until)
{
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->helpers_resume_at = until;
	LWLockRelease(JobShared->lock);
}

/* How many workers this worker's job has now */
int
JobWorkerCount(void)
{
	int			workers;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	workers = MyJobSlot->workers;
	LWLockRelease(JobShared->lock);
	return workers;
}

/*
 * A chunk committed: the job's totals as its row now says.  Its rows were
 * counted live already (several workers add theirs to rows_done).
 */
void
JobPublishChunkDone(int64 chunks_done, double progress)
{
	if (MyJobSlot == NULL)
		return;
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->chunks_done = Max(MyJobSlot->chunks_done, chunks_done);
	MyJobSlot->progress = Max(MyJobSlot->progress, progress);
	LWLockRelease(JobShared->lock);
}

/* A job is waiting for a worker slot: helpers should give theirs up */
bool
JobHelpersShouldLeave(void)
{
	bool		starved = false;

	LWLockAcquire(JobShared->lock, LW_SHARED);
	for (int i = 0; i < BGDDL_MAX_DATABASES; i++)
		starved |= JobShared->databases[i].database_oid != InvalidOid &&
			JobShared->databases[i].jobs_starved;
	LWLockRelease(JobShared->lock);
	return starved;
}

/*
 * Publish the job's committed progress (the build restarted: rows_done may
 * go down).  Rows of uncommitted steps keep counting on top.
 */
void
JobPublishProgress(int64 rows_done, int64 chunks_done, double progress,
					 int64 rows_total, bool one_batch)
{
	if (MyJobSlot == NULL)
		return;
	pg_atomic_write_u64(&MyJobSlot->rows_done, (uint64) (rows_done + live_rows_uncommitted));
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	MyJobSlot->chunks_done = chunks_done;
	MyJobSlot->progress = Max(MyJobSlot->progress, progress);
	MyJobSlot->rows_total = rows_total;
	MyJobSlot->one_batch = one_batch;
	LWLockRelease(JobShared->lock);
}

/*
 * Has the scheduler asked this worker to give its slot back: for fairness
 * between roles, or (*for_work, if not NULL) because its job is ready and
 * another job has work to do?
 */
bool
JobGiveBackRequested(bool *for_work)
{
	bool		requested;

	if (MyWorkerSlot == NULL)
		return false;
	LWLockAcquire(JobShared->lock, LW_SHARED);
	requested = MyWorkerSlot->give_back;
	if (for_work != NULL)
		*for_work = MyWorkerSlot->give_back_for_work;
	LWLockRelease(JobShared->lock);
	return requested;
}
