/*-------------------------------------------------------------------------
 *
 * job_run.c
 *	  What the steps of a running job use, whatever its kind: a step that
 *	  needs locks on other roles' tables, the batch size and the rate limit,
 *	  and the end of a successful job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_messages.h"
#include "engine/job_run.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "engine/job_xact.h"

/*
 * The job gave way in a deadlock with another session (its worker looks for
 * one first, job_identity.c): not an error of the job, but what deadlocked
 * with it (PostgreSQL's detail: the processes and the locks) goes to the
 * log and stays with the job's messages (ddl_messages).
 */
void
JobRunGaveWay(int64 job_id, const ErrorData *error)
{
	ereport(LOG,
			(errmsg("background DDL job %lld gave way in a deadlock, and goes on: %s",
					(long long) job_id, error->message),
			 error->detail ? errdetail_internal("%s", error->detail) : 0));
	JobMessagesNote(WARNING, psprintf("gave way in a deadlock, and goes on: %s", error->message),
					error->detail);
}

/*
 * Run a step that locks base tables strongly (installing or dropping
 * triggers, dropping an index) in a transaction of its own.  Its locks are
 * taken as JobStepLockRelation takes them (without queueing first, then in
 * the queue for at most background_ddl.lock_timeout); if one does not come,
 * the step is undone and tried again after 10 ms, 20 ms, ... (at most a
 * second), so that no writer of the tables ever waits behind a request of
 * ours for longer than the lock timeout.  lock_timeout also bounds any lock
 * the step takes in passing.  The phase says "waiting for lock" meanwhile;
 * after JOB_GIVE_BACK_SECONDS the worker gives its slot back (the job asks
 * again later).  What the step records in run->job must be allocated in
 * JobContext(); a step that is undone leaves run->job as it found it (the
 * kind state too), and a kind sets its own run state (run->kind_run) only
 * once the step holds all its locks.
 */
void
JobRunLockingStep(JobRun *run, LockingStep step, void *arg, JobPhase phase,
				  const char *activity)
{
	volatile long delay_ms = 10;
	TimestampTz give_back_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   JOB_GIVE_BACK_SECONDS * 1000);
	MemoryContext job_context = CurrentMemoryContext;

	for (;;)
	{
		volatile bool done = false;
		BgddlJob	before = run->job;

		if (before.kind_state != NULL)
			before.kind_state = (Jsonb *) PG_DETOAST_DATUM_COPY(JsonbPGetDatum(before.kind_state));
		PG_TRY();
		{
			JobStepBegin(activity, STEP_READ_COMMITTED);
			JobRunRecordPhase(run, phase);
			(void) set_config_option("lock_timeout",
									 psprintf("%d", background_ddl_lock_timeout_ms),
									 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
			step(run, arg);
			JobStepEnd();
			done = true;
		}
		PG_CATCH();
		{
			ErrorData  *error;

			MemoryContextSwitchTo(job_context);
			error = CopyErrorData();
			if ((error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
				 error->sqlerrcode != ERRCODE_T_R_DEADLOCK_DETECTED) ||
				!JobStepInProgress() || JobControlPending())
				PG_RE_THROW();
			if (error->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED)
				JobRunGaveWay(run->job.id, error);
			CatalogJobCountRetry(error->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED ?
								 JOB_RETRY_DEADLOCK : JOB_RETRY_LOCK);
			FreeErrorData(error);
			FlushErrorState();
			JobStepAbort();
			run->job = before;
		}
		PG_END_TRY();
		if (done)
		{
			if (before.kind_state != NULL)
				pfree(before.kind_state);
			return;
		}

		JobStepBegin("background_ddl: waiting for a lock", STEP_READ_COMMITTED);
		JobRunRecordPhase(run, JOB_PHASE_WAITING_FOR_LOCK);
		JobStepEnd();
		if (GetCurrentTimestamp() >= give_back_at)
			JobStepGiveBack(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														JOB_GIVE_BACK_SECONDS * 1000),
							"a lock (asked for without queueing, then for a short lock_timeout, and asked again)",
							JOB_WAIT_LOCK, false);
		CatalogJobWaitBegin(JOB_WAIT_LOCK);
		JobStepSleep(delay_ms);
		CatalogJobWaitEnd();
		delay_ms = Min(delay_ms * 2, 1000);
	}
}

/* Set the job's phase, in a step of its own */
void
JobRunSetPhase(JobRun *run, JobPhase phase)
{
	JobStepBegin("background_ddl: starting a phase", STEP_READ_COMMITTED);
	JobRunRecordPhase(run, phase);
	JobStepEnd();
}

/*
 * Set the job's phase in the current step, and show it at once (shared
 * memory); the job's limits are read again (CatalogJobSetPhase)
 */
void
JobRunRecordPhase(JobRun *run, JobPhase phase)
{
	CatalogJobSetPhase(&run->job, phase);
	JobPublishPhase(phase);
}

/*
 * Is what the job builds held back until its cut-over publishes it (an
 * index left invalid once built)?  In a group, and when its cut-over waits
 * (for complete_ddl, a window, fewer writes)
 */
bool
JobRunPublishesLater(const BgddlJob *job)
{
	return job->group_id != 0 || job->manual_cutover || job->cutover_window[0] != '\0' ||
		job->cutover_max_writes > 0;
}

/* Does the job's target still exist?  Caller is in a transaction. */
bool
JobRunTargetExists(const JobRun *run)
{
	return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(run->job.target_oid));
}

/*
 * In the cut-over transaction: the job succeeded, and its object is now
 * this relation (under its name now: it may have been renamed).
 */
void
JobRunSucceeded(const JobRun *run, Oid object_oid, bool record_cutover_snapshot, int64 rows)
{
	CatalogJobFinish(run->job.id, JOB_STATE_SUCCEEDED, NULL, record_cutover_snapshot, rows,
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(object_oid)),
												get_rel_name(object_oid)));
	JobXactNotify(run->job.id, JOB_STATE_SUCCEEDED);
}

/*
 * Set a value in the job's kind_state, which lives as long as the job (the
 * state replaced is freed: a job may set values thousands of times)
 */
void
JobRunSetStateText(JobRun *run, const char *key, const char *value)
{
	char	   *current = CatalogKindStateText(run->job.kind_state, key);
	Jsonb	   *old_state = run->job.kind_state;
	MemoryContext old_context;

	if (current != NULL && strcmp(current, value) == 0)
		return;
	old_context = MemoryContextSwitchTo(JobContext());
	CatalogKindStateSetText(&run->job.kind_state, key, value);
	MemoryContextSwitchTo(old_context);
	if (old_state != NULL && old_state != run->job.kind_state)
		pfree(old_state);
}

void
JobRunSetStateInt(JobRun *run, const char *key, int64 value)
{
	Jsonb	   *old_state = run->job.kind_state;
	MemoryContext old_context;

	if (CatalogKindStateHas(old_state, key) && CatalogKindStateInt(old_state, key) == value)
		return;
	old_context = MemoryContextSwitchTo(JobContext());
	CatalogKindStateSetInt(&run->job.kind_state, key, value);
	MemoryContextSwitchTo(old_context);
	if (old_state != NULL && old_state != run->job.kind_state)
		pfree(old_state);
}

/* The job's target batch time: its own (alter_ddl), or the server's */
int
JobRunBatchTimeMs(const BgddlJob *job)
{
	return job->batch_time_ms > 0 ? job->batch_time_ms : background_ddl_batch_time_ms;
}

/*
 * How much bigger the next batch should be, after one that took seconds:
 * toward the batch time, by at most four times up or down a step.
 */
double
JobRunBatchScale(const BgddlJob *job, double seconds)
{
	return Min(4.0, Max(0.25, (JobRunBatchTimeMs(job) / 1000.0) / Max(seconds, 1e-6)));
}

/*
 * The size in blocks of a worker's next chunk, after it asked for asked
 * blocks and got a chunk of blocks blocks that took seconds: the blocks
 * that fit in the batch time at that chunk's pace, within a quarter and four
 * times what it asked for (JobRunBatchScale).  The chunk may be smaller
 * than asked for (JobClaimChunk): its pace, not its size, counts.
 */
double
JobRunNextChunkBlocks(const BgddlJob *job, double asked, int64 blocks, double seconds)
{
	double		fit = blocks * (JobRunBatchTimeMs(job) / 1000.0) / Max(seconds, 1e-6);

	return Max(1.0, Min(asked * 4.0, Max(asked / 4.0, fit)));
}

/*
 * The rows this worker may make in one batch under the job's rate limit
 * (0: none): its share of max_rate for the batch time, at least a quarter
 * of a second's (a throttled batch is quick to compute, and the fixed costs
 * of a batch, its commit first, must not eat the rate).
 */
double
JobRunRowsPerBatch(const BgddlJob *job)
{
	if (job->max_rate <= 0)
		return 0;
	return job->max_rate * Max(JobRunBatchTimeMs(job) / 1000.0, 0.25) /
		Max(JobWorkerCount(), 1);
}

/*
 * The size in blocks of a worker's next chunk, chunk_blocks, within the
 * rows that the job's rate limit allows in a batch, at the plan's rows per
 * block: a worker's first chunk keeps to the limit too (JobRunChunkDone
 * sizes the next ones from the rows found), rather than come as a burst
 * followed by a long pause
 */
double
JobRunChunkBlocks(const BgddlJob *job, double chunk_blocks)
{
	double		allowed_rows = JobRunRowsPerBatch(job);

	if (allowed_rows <= 0 || job->rows_total <= 0 || job->work_total <= 0)
		return chunk_blocks;
	return Max(1.0, Min(chunk_blocks, allowed_rows * job->work_total / job->rows_total));
}

/*
 * A chunk of blocks blocks and rows rows, that took seconds, is done (in the
 * current step): the next chunk's size grows or shrinks toward the batch
 * time (JobRunNextChunkBlocks), and the rows a rate limit allows, within
 * max_blocks (*chunk_blocks); the job row and the shared progress follow.
 */
void
JobRunChunkDone(JobRun *run, double *chunk_blocks, double max_blocks, int64 rows,
				int64 blocks, double seconds)
{
	double		allowed_rows = JobRunRowsPerBatch(&run->job);

	*chunk_blocks = Min(max_blocks, JobRunNextChunkBlocks(&run->job, *chunk_blocks, blocks,
														  seconds));
	if (allowed_rows > 0 && rows > 0)
		*chunk_blocks = Max(1.0, Min(*chunk_blocks, allowed_rows / ((double) rows / blocks)));
	CatalogJobRecordChunk(&run->job, rows, blocks, (int64) *chunk_blocks, seconds / blocks);
	JobPublishChunkDone(run->job.chunks_done, run->job.progress);
}

/*
 * Read the job's limits again (alter_ddl): in a step of its own (doing
 * activity), or in the caller's (JobStepLookBegin)
 */
void
JobRunReadLimits(JobRun *run, const char *activity)
{
	JobStepLookBegin(activity);
	CatalogJobReadLimits(&run->job);
	JobStepLookEnd();
}

/*
 * The rate limit (alter_ddl), after a batch of rows rows that took seconds:
 * the worker keeps a schedule, its share of max_rate from the moment that
 * share was set, and waits until the rows it made since then are due, so
 * that the time spent outside the batches (checkpoints, catalog updates)
 * counts too.  A worker that fell more than a second behind (it waited for
 * a lock) starts a new schedule rather than race to catch up.  The limits
 * are read again every second while it waits (alter_ddl takes effect at
 * once), and a control request (pause, cancel) ends the wait.  A worker
 * that would wait longer than JOB_GIVE_BACK_SECONDS gives its slot back
 * until then: a slow job must not hold a worker that other jobs could use;
 * but not in the middle of a step (one that cannot be cut in batches), where
 * it waits in place.
 */
void
JobRunPace(JobRun *run, uint64 rows, double seconds)
{
	bool		waited = false;

	for (;;)
	{
		double		share = run->job.max_rate / Max(JobWorkerCount(), 1);
		TimestampTz now = GetCurrentTimestamp();
		double		wait_seconds;
		char		reason[96];

		if (run->job.max_rate <= 0 || JobControlPending())
		{
			run->paced_rate = 0;
			break;
		}
		if (share != run->paced_rate)
		{
			run->paced_rate = share;
			run->paced_since = now - (TimestampTz) (seconds * 1000000.0);
			run->paced_rows = 0;
		}
		run->paced_rows += rows;
		rows = 0;
		wait_seconds = run->paced_rows / share - (now - run->paced_since) / 1000000.0;
		if (wait_seconds < -1.0)
		{
			run->paced_since = now;
			run->paced_rows = 0;
		}
		/* what an earlier worker of the job still owed when it gave its slot back */
		wait_seconds = Max(wait_seconds, (run->job.rate_not_before - now) / 1000000.0);
		if (wait_seconds <= 0)
			break;
		if (wait_seconds > JOB_GIVE_BACK_SECONDS && !JobStepInProgress())
		{
			TimestampTz until = TimestampTzPlusMilliseconds(now, (int64) (wait_seconds * 1000));
			/* this worker only came back to look (at most every JOB_RECHECK_SECONDS) */
			bool		came_to_look = run->job.rate_not_before > now;

			if (until > run->job.rate_not_before)
			{
				JobStepBegin("background_ddl: throttled by max_rate", STEP_READ_COMMITTED);
				CatalogJobSetRateNotBefore(run->job.id, until);
				JobStepEnd();
				run->job.rate_not_before = until;
			}
			JobStepGiveBack(Min(until, TimestampTzPlusMilliseconds(now, JOB_RECHECK_SECONDS * 1000)),
							psprintf("the rate limit of %g rows/s (alter_ddl)", run->job.max_rate),
							JOB_WAIT_RATE, came_to_look);
		}
		snprintf(reason, sizeof(reason), "the rate limit of %.15g rows/s (alter_ddl)",
				 run->job.max_rate);
		JobStepWaitingFor(JOB_WAIT_RATE, reason);
		waited = true;
		JobStepSleep((long) (Min(wait_seconds, 1.0) * 1000) + 1);
		JobRunReadLimits(run, "background_ddl: throttled by max_rate (reading the limits)");
	}
	if (waited)
		JobStepWaitingFor(JOB_WAIT_RATE, NULL);
}
