/*-------------------------------------------------------------------------
 *
 * job_shmem.h
 *	  Shared memory through which submitters, the launcher, the schedulers,
 *	  the job workers and the control functions find and wake each other.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SHARED_STATE_H
#define BGDDL_SHARED_STATE_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "port/atomics.h"
#include "storage/lwlock.h"

/*
 * A worker asked to give its slot back to another role's job, that has not
 * (a job in one batch, an index build: no step ends meanwhile), is
 * interrupted this long after: its job is queued again and starts its batch
 * or build over when it has a worker again
 */
#define JOB_GIVE_BACK_FORCE_SECONDS	10
#define JOB_FAIR_SHARE_REASON	"a fair share of the workers for other roles"
#define JOB_READY_YIELD_REASON	"it is ready, waiting for its cut-over, and a job with work to do waits for a worker"

/* How many databases can have a scheduler at the same time */
#define BGDDL_MAX_DATABASES		64

/*
 * A job's state change to announce: NOTIFY background_ddl, '<id> <state>',
 * sent by the database's scheduler after the change committed (job_xact.c)
 */
#define JOB_NOTICES_PER_DATABASE 64
typedef struct JobNotice
{
	int64		job_id;
	char		state[16];
} JobNotice;

/* One database that has, or may have, unfinished jobs */
typedef struct JobDatabaseSlot
{
	Oid			database_oid;	/* InvalidOid: slot free */
	bool		wake_pending;	/* a job was committed since the last scan */
	bool		scheduler_running;	/* a scheduler is registered for it */
	bool		jobs_starved;	/* a job of it found no free worker slot */
	Latch	   *scheduler_latch;	/* NULL until the scheduler is up */
	pid_t		scheduler_pid;
	bool		leaving;		/* DROP DATABASE waits for us to leave it */
	int			notice_count;	/* the oldest are dropped when it is full */
	JobNotice	notices[JOB_NOTICES_PER_DATABASE];
} JobDatabaseSlot;

/* One job worker; the scheduler fills it in before starting the worker */
typedef struct JobWorkerSlot
{
	bool		in_use;
	Oid			database_oid;
	int64		job_id;
	bool		helper;			/* takes chunks of a job another worker runs */
	Oid			role_oid;		/* the job's role (fairness between roles) */
	bool		give_back;		/* asked to give the slot back (a fairer use) */
	bool		give_back_for_work; /* ... because its job is ready, another has work */
	TimestampTz give_back_asked_at;
	bool		give_back_forced;	/* interrupted: it had no step to give it back at */
	pid_t		pid;			/* 0 until the worker has started */
	Latch	   *latch;			/* NULL until the worker has started */
} JobWorkerSlot;

/*
 * A job that has workers.  control_requests counts the cancel_ddl and
 * pause_ddl calls (and DROPs of the target) whose transactions are in
 * progress: the job's workers let go of the job until it is back to zero.
 * The counters are the live progress of the job's workers.
 */
/* The longest reason a job's worker gives for waiting (JobPublishWaiting) */
#define JOB_WAITING_FOR_LEN	256

typedef struct JobSlot
{
	Oid			database_oid;	/* InvalidOid: slot free */
	int64		job_id;
	int			workers;		/* worker slots attached to it */
	int			parallel_workers;	/* parallel workers its first worker runs now */
	int			control_requests;
	uint64		control_generation; /* bumped by every request */
	/* live progress */
	pg_atomic_uint64 rows_done; /* committed rows, plus those of running batches */
	int64		chunks_done;
	int64		rows_total;		/* the planner's estimate; -1: unknown */
	bool		one_batch;		/* progress comes from rows_done / rows_total */
	double		progress;
	int			phase;			/* JobPhase, set before its transaction commits */

	/*
	 * Chunk claims: while claims_open, the job's workers take block ranges
	 * [claim_next_block, claim_end_block) of the driving table in turn.
	 * build_generation changes when the build starts over.
	 */
	bool		claims_open;
	uint32		build_generation;
	int64		claim_next_block;
	int64		claim_end_block;
	int			chunks_in_flight;	/* claimed, their step not ended yet */
	TimestampTz helpers_resume_at;	/* no helper before (the tables were busy) */
	/* the lock the job's first worker is asking for (JobStepLockRelation) */
	Oid			lock_relid;		/* InvalidOid: none */
	int			lock_mode;
	/* it waits until no snapshot as old as this xmin is held (invalid: none) */
	TransactionId snapshot_limit;
	/* what else the job's first worker waits for ("": nothing), for every role to see */
	char		waiting_for[JOB_WAITING_FOR_LEN];
	/* the standby it waits for, if so: only pg_stat_replication's readers see it */
	char		waiting_standby[NAMEDATALEN];
	/* its capture triggers' calls measured in writers' sessions, and their time */
	pg_atomic_uint64 capture_samples;
	pg_atomic_uint64 capture_nanoseconds;
} JobSlot;

/*
 * Where the WAL insert position was, and when, as the job workers saw it
 * (job_replica_lag.c): the WAL is the server's, so every worker, a helper
 * that has just started too, judges a standby's lag from all of them
 */
#define JOB_WAL_SAMPLES		256
typedef struct JobWalSample
{
	TimestampTz at;
	XLogRecPtr	lsn;
} JobWalSample;

typedef struct JobSharedState
{
	LWLock	   *lock;			/* protects everything below */
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	ConditionVariable job_finished; /* broadcast whenever a job's worker exits */
	JobDatabaseSlot databases[BGDDL_MAX_DATABASES];
	int			wal_sample_count;	/* thinned out when it is full */
	JobWalSample wal_samples[JOB_WAL_SAMPLES];	/* oldest first */
	JobSlot *jobs;			/* max_workers of them */
	JobWorkerSlot workers[FLEXIBLE_ARRAY_MEMBER];	/* max_workers of them */
} JobSharedState;

extern JobSharedState *JobShared;

extern void JobShmemRequest(void);
extern void JobShmemInit(void);
extern JobDatabaseSlot *JobDatabaseSlotFind(Oid database_oid, bool create);
extern void JobWakeScheduler(Oid database_oid);
extern void JobDatabaseLeave(Oid database_oid);
extern bool JobDatabaseLeaving(Oid database_oid);
extern void JobDatabaseLeft(Oid database_oid, bool dropped);
extern void JobNoticePost(Oid database_oid, int64 job_id, const char *state);
extern int	JobNoticesTake(Oid database_oid, JobNotice *notices);
extern JobSlot *JobSlotFind(Oid database_oid, int64 job_id, bool create);
extern void JobSignalWorkers(Oid database_oid, int64 job_id, bool interrupt);
extern void JobInterruptHelpers(void);
extern int	JobsRunning(Oid database_oid, int64 *job_ids, pid_t *pids, double *progress,
						int max_jobs);
extern int	JobWorkersOf(Oid database_oid, int64 job_id, pid_t *pids, int max_pids,
						 Oid *lock_relid, int *lock_mode, TransactionId *snapshot_limit);

/* The job slot of this worker's job, and its own slot (NULL outside job workers) */
extern JobSlot *MyJobSlot;
extern JobWorkerSlot *MyWorkerSlot;
extern bool JobGiveBackRequested(bool *for_work);
extern void JobPublishLiveRows(int64 rows);
extern void JobLiveRowsCommitted(void);
extern void JobLiveRowsAborted(void);
extern void JobPublishPhase(int phase);
extern void JobPublishParallelWorkers(int parallel_workers);
extern void JobPublishLockWait(Oid relid, int mode);
extern void JobPublishSnapshotWait(TransactionId limit_xmin);
extern void JobPublishWaiting(const char *what, const char *standby);
extern uint32 JobClaimsOpen(int64 next_block, int64 end_block);
extern void JobClaimsClose(void);
extern uint32 JobBuildGeneration(void);
extern bool JobClaimChunk(uint32 generation, int32 blocks, int64 *start_block,
							int64 *end_block);
extern void JobClaimSettled(void);
extern int	JobChunksInFlight(void);
extern bool JobHelpersShouldLeave(void);
extern bool JobIsFirstWorker(void);
extern void JobCaptureCostReport(int64 job_id, int64 samples, int64 nanoseconds);
extern void JobCaptureCostTake(int64 *samples, int64 *nanoseconds);
extern void JobHelpersBackOff(TimestampTz until);
extern int	JobWorkerCount(void);
extern void JobPublishChunkDone(int64 chunks_done, double progress);
extern void JobPublishProgress(int64 rows_done, int64 chunks_done, double progress,
								 int64 rows_total, bool one_batch);

#endif							/* BGDDL_SHARED_STATE_H */
