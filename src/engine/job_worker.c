/*-------------------------------------------------------------------------
 *
 * job_worker.c
 *	  The job worker: one dynamic background worker per running job.
 *
 * A worker drives its job's kind (kind.h) through one life cycle, each
 * phase restartable from the job row alone:
 *
 *	planning	 decide how the content is computed (recorded once)
 *	backfilling  the kind's backfill steps
 *	catching up  the kind's catch-up passes, if it has any
 *	cutting over one transaction: the result becomes visible, succeeded
 *	cleaning up  what the kind left to clean up after the end
 *
 * and, for a job that fails or is cancelled, has its kind remove
 * everything the job created (what it cleans up first, then its objects)
 * before marking it failed or cancelled: a terminal state other than
 * succeeded means that nothing of the job is left.  The worker knows no
 * kind: only the routines of kind.h.
 *
 * The worker is connected as the bootstrap superuser (on PostgreSQL 15 a
 * worker cannot connect as a NOLOGIN role), and becomes the submitter's
 * session at once (job_identity.c).
 *
 * How a worker stops working on its job:
 *	- cancel_ddl, pause_ddl, a DROP of the target: the worker lets go (its
 *	  transaction aborts, it releases the job lock), waits for the
 *	  controlling transaction to end, and reloads the job: if the control
 *	  rolled back it goes on from its last checkpoint, in the same process,
 *	  so this costs no attempt;
 *	- SIGTERM (server shutdown, pg_terminate_backend): what it runs is
 *	  interrupted (as a query is cancelled), its step rolls back, and it
 *	  records that it let go cleanly and exits; the next start is not an
 *	  attempt either;
 *	- SIGINT that no control function sent (pg_cancel_backend): its step
 *	  rolls back and it gives its worker back at once, so that the job goes
 *	  on from its last checkpoint in a new worker; not an attempt (a
 *	  statement_timeout, also SQLSTATE 57014, is an error of the job);
 *	- SIGHUP: the configuration file is read again before the next step;
 *	- a wait that would only hold a worker (a rate limit, a lock that does
 *	  not come free, a deadlock with a user's statement, in which the job
 *	  gives way, a fair share for another role): it gives its worker back,
 *	  recording when the job may have one again; not an attempt;
 *	- an error a retry may cure (serialization failure, lock timeout, a
 *	  full disk, too many connections): the error is recorded and the
 *	  worker exits; the scheduler starts another with backoff, and
 *	  that counts as an attempt, as a crash does;
 *	- any other error fails the job, with the error's message, SQLSTATE,
 *	  detail and hint; if what the job created cannot all be removed then
 *	  (an object of the user's depends on it), the job fails at once with
 *	  both errors and what stayed;
 *	- after background_ddl.max_attempts attempts the job fails with the
 *	  last error it met.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"
#include "utils/memutils.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/job_identity.h"
#include "catalog/settings.h"
#include "engine/job_group.h"
#include "engine/job_messages.h"
#include "engine/job_replica_lag.h"
#include "engine/job_run.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "engine/job_worker.h"
#include "engine/job_xact.h"
#include "engine/kind.h"

static int	my_worker_slot = -1;

static void
WorkerSigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	JobShutdownRequested = true;
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * SIGINT from another process (a control request, pg_cancel_backend), or
 * from our own statement_timeout (handle_sig_alarm sets the indicator
 * before its handler signals us), which is an error of the job.
 */
static void
WorkerSigint(SIGNAL_ARGS)
{
	if (!get_timeout_indicator(STATEMENT_TIMEOUT, false) &&
		!get_timeout_indicator(LOCK_TIMEOUT, false))
		JobCancelSignalled = true;
	StatementCancelHandler(postgres_signal_arg);
}

static void
WorkerDetach(int code, Datum arg)
{
	JobWorkerSlot *slot = &JobShared->workers[my_worker_slot];

	JobClaimSettled();
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	if (slot->in_use && slot->pid == MyProcPid)
		slot->in_use = false;
	MyWorkerSlot = NULL;
	if (MyJobSlot != NULL && !slot->helper)
	{
		MyJobSlot->lock_relid = InvalidOid;
		MyJobSlot->snapshot_limit = InvalidTransactionId;
		MyJobSlot->waiting_for[0] = '\0';
		MyJobSlot->waiting_standby[0] = '\0';
	}
	if (MyJobSlot != NULL && --MyJobSlot->workers <= 0)
		MyJobSlot->database_oid = InvalidOid;
	MyJobSlot = NULL;
	LWLockRelease(JobShared->lock);
	ConditionVariableBroadcast(&JobShared->job_finished);
}

/*
 * Errors that a later attempt may not meet again.  Of the lack of resources
 * (class 53), a full disk and too many connections may pass; out of memory
 * and a configured limit (temp_file_limit, max_locks_per_transaction) will
 * be met again by the same work, so they fail the job at once.
 */
static bool
ErrorIsTransient(const ErrorData *error)
{
	int			sqlclass = ERRCODE_TO_CATEGORY(error->sqlerrcode);

	return sqlclass == ERRCODE_TRANSACTION_ROLLBACK ||
		error->sqlerrcode == ERRCODE_DISK_FULL ||
		error->sqlerrcode == ERRCODE_TOO_MANY_CONNECTIONS ||
		error->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		error->sqlerrcode == ERRCODE_CANNOT_CONNECT_NOW ||
		/*
		 * A catalog row that another session updated meanwhile without a
		 * lock (GRANT updates pg_class so, where the job's CREATE TRIGGER
		 * sets relhastriggers): PostgreSQL's elog, which a retry does not
		 * meet again
		 */
		(error->sqlerrcode == ERRCODE_INTERNAL_ERROR && error->message != NULL &&
		 strcmp(error->message, "tuple concurrently updated") == 0);
}

/* What the worker does after an error raised in a job's steps */
typedef enum WorkerVerdict
{
	WORKER_GIVES_BACK_FOR_LOCK, /* a lock that others keep busy: not an attempt */
	WORKER_GIVES_WAY,			/* a deadlock with a user's statement: not an attempt */
	WORKER_GIVES_FAIR_SHARE,	/* the scheduler interrupted it, for another role's job */
	WORKER_CANCELLED,			/* pg_cancel_backend: this worker stops, the job goes on */
	WORKER_STOPS,				/* a shutdown, or a give-back asked for in a step */
	WORKER_YIELDS,				/* a control function waits: let go, go on from the
								 * last checkpoint */
	WORKER_FAILS_LEAVING_REMAINS,	/* the failed job's objects could not be removed */
	WORKER_EXITS_UNENDED,		/* could not end the job or clean up after it: a
								 * later worker does */
	WORKER_RETRIES,				/* transient: exit, the job is retried (an attempt) */
	WORKER_FAILS_JOB			/* the job fails: remove what it created, and end it */
} WorkerVerdict;

/*
 * Classify an error raised in a job's steps (ending: while the worker was
 * ending the job as failed).  The first verdicts stop the worker cleanly,
 * the job going on later; the others decide the job's fate.
 */
static WorkerVerdict
ClassifyError(const ErrorData *error, const JobRun *run, bool ending)
{
	bool		running = !ending && run->claimed && !JobStateIsFinal(run->job.state);
	bool		cancelled = error->sqlerrcode == ERRCODE_QUERY_CANCELED && JobCancelSignalled;

	/* Given back by the step itself, which counted it (not again if a SIGINT came too) */
	if (JobGivingBack.giving_back)
		return WORKER_STOPS;
	if (error->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE && JobStepLockWaitFailed())
		return WORKER_GIVES_BACK_FOR_LOCK;
	if (error->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED && running)
		return WORKER_GIVES_WAY;
	if (cancelled && running && JobGiveBackRequested(NULL))
		return WORKER_GIVES_FAIR_SHARE;
	if (cancelled && running && !JobControlPending() && !JobShutdownRequested)
		return WORKER_CANCELLED;
	if (JobShutdownRequested)
		return WORKER_STOPS;
	if (JobControlPending())
		return WORKER_YIELDS;
	if (ending)
		return ErrorIsTransient(error) ? WORKER_EXITS_UNENDED : WORKER_FAILS_LEAVING_REMAINS;
	if (!run->claimed || JobStateIsFinal(run->job.state))
		return WORKER_EXITS_UNENDED;
	return ErrorIsTransient(error) ? WORKER_RETRIES : WORKER_FAILS_JOB;
}

/*
 * A worker gives its slot back (a verdict of ClassifyError): counted as a
 * retry, for how long, and why
 */
static const char *
GiveBack(WorkerVerdict verdict, int *delay_ms)
{
	*delay_ms = 0;
	switch (verdict)
	{
		case WORKER_GIVES_BACK_FOR_LOCK:
			CatalogJobCountRetry(JOB_RETRY_LOCK);
			*delay_ms = 1000;
			return "a lock (asked for without queueing, then for a short lock_timeout, and asked again)";
		case WORKER_GIVES_WAY:
			CatalogJobCountRetry(JOB_RETRY_DEADLOCK);
			*delay_ms = 1000;
			return "a lock held by a statement that waited for the job (a deadlock, in which the job gave way)";
		case WORKER_GIVES_FAIR_SHARE:
			CatalogJobCountRetry(JOB_RETRY_FAIR_SHARE);
			return JOB_FAIR_SHARE_REASON;
		default:
			CatalogJobCountRetry(JOB_RETRY_CANCELLED_WORKER);
			return "its worker was cancelled (pg_cancel_backend)";
	}
}

/* A JobError (in JobContext()) from an ErrorData */
static JobError *
JobErrorFrom(const ErrorData *error)
{
	MemoryContext old_context = MemoryContextSwitchTo(JobContext());
	JobError   *job_error = palloc0(sizeof(JobError));

	job_error->message = pstrdup(error->message ? error->message : "unknown error");
	job_error->sqlstate = pstrdup(unpack_sql_state(error->sqlerrcode));
	job_error->detail = error->detail ? pstrdup(error->detail) : NULL;
	job_error->hint = error->hint ? pstrdup(error->hint) : NULL;
	MemoryContextSwitchTo(old_context);
	return job_error;
}

static void
CleanupStep(JobRun *run, void *arg)
{
	run->routine->cleanup(&run->job);
}

/*
 * After the end (success, or a cancel that removed the rest): what the
 * kind left to clean up (capture triggers), in a locking step.
 */
static void
CleanUp(JobRun *run)
{
	if (run->routine->cleanup != NULL)
	{
		JobStepHoldPoint("cleaning up");
		JobRunLockingStep(run, CleanupStep, NULL, JOB_PHASE_CLEANING_UP,
						  "background_ddl: cleaning up");
	}
	JobStepBegin("background_ddl: cleaning up", STEP_READ_COMMITTED);
	CatalogJobSetCleanupPending(run->job.id, false);
	JobStepEnd();
	run->job.cleanup_pending = false;
}

/* arg: keep the target (a bool) */
static void
DiscardStep(JobRun *run, void *arg)
{
	run->routine->discard(&run->job, *(bool *) arg);
}

/*
 * Remove what the job created, in locking steps (dropping an index locks
 * its table).  If the user built something on the target, RESTRICT keeps
 * it: the reason is recorded, and the rest is removed without it.
 */
static void
Discard(JobRun *run)
{
	MemoryContext job_context = CurrentMemoryContext;
	volatile bool removed = false;
	bool		keep_target = false;

	run->discard_error = NULL;
	JobStepHoldPoint("removing what the job created");
	PG_TRY();
	{
		JobRunLockingStep(run, DiscardStep, &keep_target, JOB_PHASE_CLEANING_UP,
						  "background_ddl: removing what the job created");
		removed = true;
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(job_context);
		error = CopyErrorData();
		if (!JobStepInProgress() || JobShutdownRequested || JobGivingBack.giving_back ||
			JobControlPending())
			PG_RE_THROW();
		FlushErrorState();
		JobStepAbort();
		run->discard_error = MemoryContextStrdup(JobContext(), error->message);
		FreeErrorData(error);
	}
	PG_END_TRY();
	if (!removed)
	{
		keep_target = true;
		JobRunLockingStep(run, DiscardStep, &keep_target, JOB_PHASE_CLEANING_UP,
						  "background_ddl: removing what the job created, but its target");
	}
}

/* The job fails or is cancelled: so is its group, first */
static void
CancelGroup(JobRun *run, JobState final_state)
{
	if (run->job.group_id == 0)
		return;
	JobStepBegin("background_ddl: cancelling its group", STEP_READ_COMMITTED);
	JobGroupCancel(&run->job, final_state, run->job.id);
	JobStepEnd();
}

/*
 * End the job as failed or cancelled, leaving nothing behind: what its
 * kind cleans up (capture triggers), then what it created (if the user
 * built something on it, it is kept and the error says so).
 */
static void
EndJob(JobRun *run, JobState final_state, const JobError *error)
{
	JobError	final_error;

	/*
	 * Why it ends, and its phase, before its group is cancelled: the group's
	 * other jobs, ending in turn, leave its reason alone (CatalogGroupCancel)
	 */
	JobStepBegin("background_ddl: ending the job", STEP_READ_COMMITTED);
	if (error != NULL)
		CatalogJobRecordError(run->job.id, error, true);
	JobRunRecordPhase(run, JOB_PHASE_CLEANING_UP);
	JobStepEnd();
	CancelGroup(run, final_state);

	if (run->job.cleanup_pending)
		CleanUp(run);
	Discard(run);

	if (error != NULL)
		final_error = *error;
	else
		memset(&final_error, 0, sizeof(final_error));
	if (run->discard_error != NULL)
		final_error.message = psprintf("%s (the target was kept: %s)",
									   final_error.message ? final_error.message :
									   CatalogStateName(final_state),
									   run->discard_error);
	JobStepBegin("background_ddl: ending the job", STEP_READ_COMMITTED);
	CatalogJobSetCleanupPending(run->job.id, false);
	CatalogJobFinish(run->job.id, final_state, final_error.message ? &final_error : NULL,
					 false, -1, NULL);
	JobXactNotify(run->job.id, final_state);
	JobStepEnd();
	ereport(LOG,
			(errmsg("background DDL job %lld for %s %s%s%s",
					(long long) run->job.id, run->job.target_name,
					CatalogStateName(final_state),
					final_error.message ? ": " : "",
					final_error.message ? final_error.message : "")));
}

/*
 * What a failing job created could not all be removed, for a reason that a
 * retry would meet again (an object of the user's depends on it): end the
 * job failed at once, saying what stayed and why, rather than retry its
 * removal without end.  Exits.
 */
static void
FailLeavingRemains(JobRun *run, const JobError *failure, const ErrorData *removal_error)
{
	JobError	final_error = *failure;

	final_error.message = psprintf("%s (what the job created could not all be removed: %s)",
								   failure->message, removal_error->message);
	CancelGroup(run, JOB_STATE_FAILED);
	JobStepBegin("background_ddl: ending the job", STEP_READ_COMMITTED);
	CatalogJobFinish(run->job.id, JOB_STATE_FAILED, &final_error, false, -1, NULL);
	JobXactNotify(run->job.id, JOB_STATE_FAILED);
	JobStepEnd();
	ereport(LOG,
			(errmsg("background DDL job %lld for %s failed: %s",
					(long long) run->job.id, run->job.target_name, final_error.message)));
	proc_exit(0);
}

/* The job was started too often: fail it with the last error it met */
static void
GiveUp(JobRun *run)
{
	JobError	error;
	char	   *started = psprintf("The job was started %d times without finishing.",
								   run->job.attempts);

	if (run->job.error != NULL)
	{
		error.message = run->job.error;
		error.sqlstate = run->job.error_sqlstate;
		error.detail = run->job.error_detail ?
			psprintf("%s %s", run->job.error_detail, started) : started;
		error.hint = run->job.error_hint;
	}
	else
	{
		error.message = psprintf("the job was started %d times without finishing",
								 run->job.attempts);
		error.sqlstate = NULL;
		error.detail = NULL;
		error.hint = "Its worker or the server stopped each time; the server log says why.";
	}
	EndJob(run, JOB_STATE_FAILED, &error);
}

/*
 * Take the job (the first time) or read it again (after letting go), and
 * become its submitter's session (once).  Returns false if there is
 * nothing to do.
 */
static bool
LoadJob(JobRun *run)
{
	static bool identity_done = false;
	bool		loaded;
	bool		state_changed = false;

	JobStepBegin("background_ddl: starting job", STEP_READ_COMMITTED);
	if (CatalogLookup() == NULL)
	{
		JobStepEnd();
		return false;			/* the extension was dropped */
	}
	MemoryContextSwitchTo(JobContext());
	loaded = run->claimed ? CatalogJobLoad(run->job.id, &run->job, true) :
		CatalogJobClaim(run->job.id, background_ddl_max_attempts, &run->job, &run->attempts_exhausted,
						&state_changed);
	if (state_changed)
		JobXactNotify(run->job.id, run->job.state);
	if (loaded)
	{
		run->claimed = true;
		run->routine = KindRoutineForJob(&run->job);
		if (!identity_done && !JobStateIsFinal(run->job.state))
		{
			JobIdentityBecome(&run->job.identity, run->job.id);
			identity_done = true;
		}
	}
	JobStepEnd();
	return loaded;
}

/*
 * A round of the job's phases (backfill, catch-up, cut-over) in which no
 * step did work and the cut-over neither ended the job nor said what it
 * waits for: after a restart of the build one such round can come (the
 * cut-over found the tables rewritten); this many in a row is a loop that
 * would spin for ever, and fails the job instead.
 */
#define JOB_IDLE_ROUNDS_MAX 5

/* How often a job whose cut-over is manual looks for complete_ddl, and catches up */
#define JOB_READY_LOOK_MS	1000

/*
 * The rows written to the tables a job captures, counted at its last looks
 * (WRITE_LOOKS of them, at least a second apart, one a second while it
 * waits to cut over): their rate is taken over those seconds, as writers
 * report their statistics about once a second.  (The wait between looks
 * can end early, when the job's workers are woken: a look less than a
 * second after the last one is not counted, or a rate over a fraction of a
 * second could miss every writer's report.)
 */
#define WRITE_LOOKS	5

typedef struct WriteLooks
{
	int			nlooks;
	int64		writes[WRITE_LOOKS];
	TimestampTz at[WRITE_LOOKS];
} WriteLooks;

/* Rows written a second to the job's captured tables; -1 until known */
static double
CapturedWritesPerSecond(const JobRun *run, WriteLooks *looks)
{
	TimestampTz now = GetCurrentTimestamp();
	int			last;
	double		seconds;

	if (looks->nlooks == 0 ||
		TimestampDifferenceExceeds(looks->at[looks->nlooks - 1], now, JOB_READY_LOOK_MS))
	{
		if (looks->nlooks == WRITE_LOOKS)
		{
			memmove(&looks->writes[0], &looks->writes[1], sizeof(int64) * (WRITE_LOOKS - 1));
			memmove(&looks->at[0], &looks->at[1], sizeof(TimestampTz) * (WRITE_LOOKS - 1));
			looks->nlooks--;
		}
		JobStepBegin("background_ddl: counting the writes to its tables", STEP_READ_COMMITTED);
		looks->writes[looks->nlooks] = run->routine->writes_to_sources(&run->job);
		JobStepEnd();
		looks->at[looks->nlooks++] = now;
	}
	if (looks->nlooks < 3)
		return -1;
	last = looks->nlooks - 1;
	seconds = (looks->at[last] - looks->at[0]) / 1000000.0;
	return (looks->writes[last] - looks->writes[0]) / seconds;
}

/*
 * What the job's cut-over waits for now: complete_ddl (a manual cut-over),
 * its cut-over window (the time of day in the worker's TimeZone, which is
 * the submitting session's), or fewer writes to its tables; NULL if
 * nothing
 */
static char *
CutOverWaitsFor(const JobRun *run, WriteLooks *looks)
{
	double		rate;

	if (run->job.manual_cutover)
		return psprintf("complete_ddl(%lld) to publish it", (long long) run->job.id);
	if (!SettingsWindowOpen(run->job.cutover_window))
		return psprintf("its cut-over window, %s (%s), or complete_ddl(%lld)",
						run->job.cutover_window, pg_get_timezone_name(session_timezone),
						(long long) run->job.id);
	if (run->job.cutover_max_writes <= 0 || run->routine->writes_to_sources == NULL)
		return NULL;
	rate = CapturedWritesPerSecond(run, looks);
	if (rate >= 0 && rate < run->job.cutover_max_writes)
		return NULL;
	if (rate < 0)
		return psprintf("fewer than %d rows written a second to its tables (counting), or complete_ddl(%lld)",
						run->job.cutover_max_writes, (long long) run->job.id);
	return psprintf("fewer than %d rows written a second to its tables (%.0f now), or complete_ddl(%lld)",
					run->job.cutover_max_writes, rate, (long long) run->job.id);
}

/*
 * A job whose cut-over is manual (background_ddl.cutover, alter_ddl) waits
 * for complete_ddl before its cut-over, one with a cut-over window for the
 * window, one with cutover_max_writes for fewer writes: in phase ready,
 * saying so in waiting_on, it reads its job row every JOB_READY_LOOK_MS,
 * and after each look its catch-up makes one pass, so that the cut-over
 * has about one look's writes left to apply.
 * Between the passes it holds no snapshot and no lock; a pause, a cancel or
 * a shutdown ends the wait as any step.  Returns JOB_STEP_DONE once it may
 * cut over, or the catch-up's JOB_STEP_TARGET_GONE or JOB_STEP_RESTART.
 */
static JobStepResult
AwaitCompletion(JobRun *run)
{
	JobStepResult result = JOB_STEP_DONE;
	bool		ready = false;
	char	   *waiting_for;
	WriteLooks	looks = {0};

	for (;;)
	{
		JobRunReadLimits(run, "background_ddl: looking for complete_ddl");
		if (run->job.published_by != 0)
			break;				/* its group is being published */
		waiting_for = CutOverWaitsFor(run, &looks);
		if (waiting_for == NULL && run->job.group_id != 0)
			JobGroupReady(run); /* returns once its group is being published */
		if (waiting_for == NULL)
			break;
		if (!ready)
			JobRunSetPhase(run, JOB_PHASE_READY);
		ready = true;
		JobStepWaitingFor(JOB_WAIT_CUTOVER, waiting_for);
		pfree(waiting_for);		/* (shown from shared memory: a wait of days leaks nothing) */
		JobStepSleep(JOB_READY_LOOK_MS);
		if (run->routine->catch_up == NULL)
			continue;
		run->keeping_up = true;
		result = run->routine->catch_up(run);
		run->keeping_up = false;
		if (result == JOB_STEP_TARGET_GONE || result == JOB_STEP_RESTART)
			break;
		result = JOB_STEP_DONE;
	}
	if (ready)
		JobStepWaitingFor(JOB_WAIT_CUTOVER, NULL);
	return result;
}

/* Take the job through what is left of its life; returns when the worker may exit */
static void
RunJob(JobRun *run)
{
	JobStepResult result;
	bool		target_exists;
	char	   *dependency_ended;

	if (!LoadJob(run))
		return;
	if (JobStateIsFinal(run->job.state))
	{
		if (run->job.cleanup_pending)
			CleanUp(run);
		return;
	}
	if (run->job.state == JOB_STATE_PAUSED)
		return;
	if (run->job.state == JOB_STATE_CANCELLING)
	{
		JobError	reason = {run->job.error, NULL, NULL, NULL};

		EndJob(run, JOB_STATE_CANCELLED, run->job.error ? &reason : NULL);
		return;
	}
	if (run->attempts_exhausted)
	{
		GiveUp(run);
		return;
	}

	JobStepBegin("background_ddl: checking the job", STEP_READ_COMMITTED);
	target_exists = JobRunTargetExists(run);
	if (!target_exists && run->routine->gone_reason != NULL)
		run->gone_reason = run->routine->gone_reason(&run->job);
	/* A job it starts after failed or was cancelled: it never starts */
	dependency_ended = CatalogJobEndedDependency(run->job.id);
	if (dependency_ended != NULL)
		dependency_ended = MemoryContextStrdup(JobContext(), dependency_ended);
	JobStepEnd();
	if (dependency_ended != NULL)
	{
		JobError	reason = {dependency_ended, NULL, NULL, NULL};

		EndJob(run, JOB_STATE_CANCELLED, &reason);
		return;
	}
	if (!target_exists)
		goto target_gone;

	if (run->routine->start != NULL)
		run->routine->start(run);
	if (!run->job.planned)
		run->routine->plan(run);

	for (int idle_rounds = 0;; idle_rounds++)
	{
		JobRunSetPhase(run, JOB_PHASE_BACKFILLING);
		JobRunWaitForStandbys(run);
		while ((result = run->routine->backfill_step(run)) == JOB_STEP_MORE)
		{
			idle_rounds = 0;
			JobRunWaitForStandbys(run);
		}
		if (result == JOB_STEP_TARGET_GONE)
			goto target_gone;
		while (run->routine->catch_up != NULL &&
			   (result = run->routine->catch_up(run)) == JOB_STEP_MORE)
		{
			idle_rounds = 0;
			JobRunWaitForStandbys(run);
		}
		if (result == JOB_STEP_TARGET_GONE)
			goto target_gone;
		if (result == JOB_STEP_RESTART)
			continue;
		result = AwaitCompletion(run);
		if (result == JOB_STEP_TARGET_GONE)
			goto target_gone;
		if (result == JOB_STEP_RESTART)
			continue;
		if (run->job.published_by != 0 && run->job.published_by != run->job.id)
		{
			JobGroupHandOver(run);
			return;
		}
		JobRunWaitForStandbys(run);
		if (JobStepTestFault("cut-over without work"))
			result = JOB_STEP_MORE; /* (a test of the guard below) */
		else if (run->job.published_by == run->job.id)
			result = JobGroupPublish(run);
		else
			result = run->routine->cut_over(run);
		if (result == JOB_STEP_TARGET_GONE)
			goto target_gone;
		if (result == JOB_STEP_DONE)
			break;
		if (JobStepIsWaiting())
			idle_rounds = 0;	/* the kind waits, and says for what (a Citus node) */
		else if (idle_rounds >= JOB_IDLE_ROUNDS_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("background DDL job %lld makes no progress", (long long) run->job.id),
					 result == JOB_STEP_RESTART ?
					 errdetail("Its cut-over was tried %d times in a row without a batch of work in between; the last one restarted the build.",
							   idle_rounds + 1) :
					 errdetail("Its cut-over was tried %d times in a row without a batch of work in between; the last one asked for one more step.",
							   idle_rounds + 1),
					 errhint("This is a bug of background_ddl; the server log has what the job did. Submitting the statement again starts over.")));
	}
	run->job.state = JOB_STATE_SUCCEEDED;
	ereport(LOG,
			(errmsg("background DDL job %lld for %s succeeded",
					(long long) run->job.id, run->job.target_name)));
	if (run->job.cleanup_pending)
		CleanUp(run);
	return;

target_gone:
	{
		JobError	reason = {run->gone_reason ? run->gone_reason : "the target was dropped",
		NULL, NULL, NULL};

		EndJob(run, JOB_STATE_CANCELLED, &reason);
	}
}

/* In PG_CATCH: the error, copied into the job's memory, and the step undone */
static ErrorData *
CatchJobError(void)
{
	ErrorData  *error;

	MemoryContextSwitchTo(JobContext());
	error = CopyErrorData();
	FlushErrorState();
	JobStepAbort();
	return error;
}

/*
 * A helper takes chunks of a job whose first worker runs it, while that
 * worker's claims are open (query_job.c).  It records nothing but its
 * chunks: whatever stops it (no chunk left, an error, a control function,
 * a shutdown), it exits, and the first worker takes what it left.
 */
static void
RunHelper(JobRun *run)
{
	bool		loaded = false;

	run->helper = true;
	JobStepBegin("background_ddl: joining a job", STEP_READ_COMMITTED);
	if (CatalogLookup() != NULL)
	{
		MemoryContextSwitchTo(JobContext());
		loaded = CatalogJobLoad(run->job.id, &run->job, true) &&
			run->job.state == JOB_STATE_RUNNING && run->job.planned;
	}
	if (loaded)
	{
		run->routine = KindRoutineForJob(&run->job);
		JobIdentityBecome(&run->job.identity, run->job.id);
	}
	JobStepEnd();
	if (!loaded || run->routine->help_step == NULL)
		return;
	if (run->routine->start != NULL)
		run->routine->start(run);
	/* before every chunk, its first too: it may join a job that waits */
	do
		JobRunWaitForStandbys(run);
	while (run->routine->help_step(run) == JOB_STEP_MORE);
}

static void
HelperMain(JobRun *run)
{
	PG_TRY();
	{
		RunHelper(run);
	}
	PG_CATCH();
	{
		ErrorData  *error = CatchJobError();

		/*
		 * A helper stops whenever the job's first worker or a control
		 * function wants it to (a pause or cancel interrupts it), and the
		 * first worker redoes what it left: only what neither explains is
		 * worth the log, in the DBA's words
		 */
		if (JobShutdownRequested || JobGivingBack.giving_back || JobControlPending() ||
			(error->sqlerrcode == ERRCODE_QUERY_CANCELED && JobCancelSignalled))
			ereport(DEBUG1,
					(errmsg("background DDL job %lld: a helper stopped: %s",
							(long long) run->job.id, error->message)));
		else if (error->sqlerrcode == ERRCODE_UNDEFINED_TABLE ||
				 (error->sqlerrcode == ERRCODE_INTERNAL_ERROR &&
				  strncmp(error->message, "could not open relation", 23) == 0))
			ereport(LOG,
					(errmsg("background DDL job %lld: a helper stopped: a table the job reads was dropped",
							(long long) run->job.id),
					 errdetail("The job's first worker decides what that means for the job.")));
		else
			ereport(LOG,
					(errmsg("background DDL job %lld: a helper stopped: %s",
							(long long) run->job.id, error->message),
					 errdetail("The job's first worker takes over the chunk it was computing.")));
	}
	PG_END_TRY();

	/* What it wrote since it last added it goes to the job's costs, if it can */
	JobStepsStopping();
	PG_TRY();
	{
		JobStepBegin("background_ddl: adding what a helper wrote", STEP_READ_COMMITTED);
		CatalogJobAddCosts();
		JobStepEnd();
	}
	PG_CATCH();
	{
		FreeErrorData(CatchJobError());
	}
	PG_END_TRY();
	proc_exit(0);
}

/*
 * Let go of the job until the controlling transactions (cancel_ddl,
 * pause_ddl, a DROP) have ended, then come back to it.
 */
static void
YieldJob(LOCKTAG *job_lock)
{
	LockRelease(job_lock, JOB_LOCK_WORKER, true);
	pgstat_report_activity(STATE_IDLE, "background_ddl: letting a control function decide");
	while (JobControlOutstanding())
	{
		if (JobShutdownRequested)
			ereport(ERROR,
					(errcode(ERRCODE_ADMIN_SHUTDOWN),
					 errmsg("background DDL job worker stopping for shutdown")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		QueryCancelPending = false;
	}
	(void) LockAcquire(job_lock, JOB_LOCK_WORKER, true, false);
	JobControlAcknowledge();
}

/*
 * Record a clean stop (not an attempt) and exit; given back (JobGivingBack),
 * with when the job may have a worker again, and why.
 */
static void
ExitCleanly(int64 job_id, bool job_ended)
{
	/*
	 * Nothing cancels the recording of the stop: neither a cancel left
	 * pending by a stop noticed outside ProcessInterrupts, nor the second
	 * SIGTERM of a shutdown (the postmaster signals the process and its
	 * group).
	 */
	HOLD_CANCEL_INTERRUPTS();
	JobStepsStopping();
	if (JobShutdownRequested && JobDatabaseLeaving(MyDatabaseId))
		ereport(LOG,
				(errmsg("background DDL job %lld stops: its database is being dropped",
						(long long) job_id),
				 errdetail("If DROP DATABASE fails, the job goes on from its last checkpoint; this is not an attempt.")));
	else if (JobShutdownRequested)
		ereport(LOG,
				(errmsg("background DDL job %lld stops: its worker was asked to exit (a server shutdown or pg_terminate_backend)",
						(long long) job_id),
				 errdetail("The job goes on from its last checkpoint when it has a worker again; this is not an attempt.")));
	else if (JobGivingBack.why != NULL)
		/*
		 * (an ended job's clean-up that waits for a lock says so in the view,
		 * not every time here; nor a throttled job every time it looks)
		 */
		ereport(job_ended || JobGivingBack.said_before ? DEBUG1 : LOG,
				(errmsg("background DDL job %lld gives its worker back until %s: %s",
						(long long) job_id, timestamptz_to_str(JobGivingBack.until), JobGivingBack.why)));
	PG_TRY();
	{
		JobStepBegin("background_ddl: stopping", STEP_READ_COMMITTED);
		if (CatalogLookup() != NULL)
			CatalogJobLetGo(job_id, JobGivingBack.why != NULL ? JobGivingBack.until : 0,
							JobGivingBack.why, JobGivingBack.waits_for);
		JobStepEnd();
	}
	PG_CATCH();
	{
		/* Too late to record it; the next start counts as an attempt */
		ErrorData  *error = CopyErrorData();

		FlushErrorState();
		ereport(LOG,
				(errmsg("background DDL job %lld could not record that it stopped cleanly: %s",
						(long long) job_id, error->message)));
	}
	PG_END_TRY();
	proc_exit(0);
}

/*
 * Record an error a later attempt may not meet, and exit for a restart.  Its
 * detail (for a deadlock: the processes and the locks) goes to the log and
 * stays with the job's messages (ddl_messages), also once it has succeeded
 * (its error is cleared then).
 */
static void
ExitForRetry(int64 job_id, const JobError *error)
{
	char	   *text = psprintf("interrupted, will be retried: %s", error->message);

	ereport(LOG,
			(errmsg("background DDL job %lld %s", (long long) job_id, text),
			 error->detail ? errdetail_internal("%s", error->detail) : 0));
	HOLD_CANCEL_INTERRUPTS();
	PG_TRY();
	{
		JobStepBegin("background_ddl: recording an error", STEP_READ_COMMITTED);
		JobMessagesNote(WARNING, text, error->detail);
		if (CatalogLookup() != NULL)
			CatalogJobRecordRetry(job_id, error);
		JobStepEnd();
	}
	PG_CATCH();
	{
		/* The attempt counts anyway */
	}
	PG_END_TRY();
	proc_exit(1);
}

/*
 * Keep the memory the worker frees for its next batch: each batch takes
 * about as much memory as the one before (a chunk's sort, its rows, its
 * entries), and memory returned to the operating system costs a page fault
 * per page when taken again (a quarter of an index chunk's time, measured).
 * glibc's malloc is told to serve blocks of up to 32 MB from its heap and to
 * keep up to twice maintenance_work_mem, plus 256 MB, free at its top.
 */
static void
KeepFreedMemory(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
	(void) mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	(void) mallopt(M_TRIM_THRESHOLD,
				   (int) Min((double) INT_MAX, 2.0 * maintenance_work_mem * 1024L + 256 * 1024 * 1024));
#endif
}

/* How often a worker adds what it wrote to its job's costs, at the least */
#define JOB_COSTS_INTERVAL_MS	1000

/*
 * Each step, before it commits: the messages its statements raised go with
 * the job, and, once a second, what the worker wrote and what the job's
 * capture cost writers (a worker that writes the job's row adds it there
 * more often: CatalogJobCountCosts)
 */
static void
WriteStepMessages(int64 job_id)
{
	static TimestampTz costs_added_at = 0;
	int64		uncaught;
	List	   *messages = JobMessagesPending(&uncaught);

	CatalogJobAppendMessages(job_id, messages, uncaught);
	JobMessagesDiscard();
	if (TimestampDifferenceExceeds(costs_added_at, GetCurrentTimestamp(), JOB_COSTS_INTERVAL_MS))
	{
		int64		capture_samples;
		int64		capture_ns;

		JobCaptureCostTake(&capture_samples, &capture_ns);
		CatalogJobCountCaptureCost(capture_samples, capture_ns);
		CatalogJobAddCosts();
		costs_added_at = GetCurrentTimestamp();
	}
}

void
JobWorkerMain(Datum main_arg)
{
	JobWorkerSlot *slot;
	Oid			database_oid;
	int64		job_id;
	LOCKTAG		job_lock;
	JobRun	   *run;
	bool		helper;
	volatile bool yield = false;
	JobError   *volatile failure = NULL;

	pqsignal(SIGTERM, WorkerSigterm);
	pqsignal(SIGINT, WorkerSigint);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	KeepFreedMemory();

	my_worker_slot = DatumGetInt32(main_arg);
	slot = &JobShared->workers[my_worker_slot];
	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot->pid = MyProcPid;
	slot->latch = MyLatch;
	database_oid = slot->database_oid;
	job_id = slot->job_id;
	helper = slot->helper;
	MyJobSlot = JobSlotFind(database_oid, job_id, true);
	MyWorkerSlot = slot;
	if (MyJobSlot != NULL)
		MyJobSlot->workers++;
	LWLockRelease(JobShared->lock);
	on_shmem_exit(WorkerDetach, (Datum) 0);
	if (MyJobSlot == NULL)
		proc_exit(1);

	JobIdentitySaveServerSettings();
	BackgroundWorkerInitializeConnectionByOid(database_oid, InvalidOid, 0);
	pgstat_report_appname(psprintf("background_ddl job %lld", (long long) job_id));

	JobStepsInit(job_id, WriteStepMessages);
	CatalogJobCountCosts(job_id);
	JobMessagesInstall();
	run = MemoryContextAllocZero(JobContext(), sizeof(JobRun));
	run->job.id = job_id;

	/* Wait for a control function that holds the job to decide */
	JobLockTagSet(&job_lock, database_oid, job_id);
	(void) LockAcquire(&job_lock, JOB_LOCK_WORKER, true, false);
	if (helper)
		HelperMain(run);

	for (;;)
	{
		bool		done = false;

		PG_TRY();
		{
			if (yield)
			{
				yield = false;
				YieldJob(&job_lock);
			}
			if (failure != NULL)
				EndJob(run, JOB_STATE_FAILED, failure);
			else
				RunJob(run);
			done = true;
		}
		PG_CATCH();
		{
			ErrorData  *error = CatchJobError();

			WorkerVerdict verdict = ClassifyError(error, run, failure != NULL);
			int			delay_ms;
			const char *why;

			switch (verdict)
			{
				case WORKER_GIVES_WAY:
					JobRunGaveWay(job_id, error);
					/* FALLTHROUGH */
				case WORKER_GIVES_BACK_FOR_LOCK:
				case WORKER_GIVES_FAIR_SHARE:
				case WORKER_CANCELLED:
					why = GiveBack(verdict, &delay_ms);
					JobStepGivingBack(TimestampTzPlusMilliseconds(GetCurrentTimestamp(), delay_ms),
									  why, delay_ms > 0 ? JOB_WAIT_LOCK : JOB_WAIT_NONE);
					/* FALLTHROUGH */
				case WORKER_STOPS:
					ExitCleanly(job_id, JobStateIsFinal(run->job.state));
					break;
				case WORKER_YIELDS:
					yield = true;	/* try again from the last checkpoint */
					break;
				case WORKER_FAILS_LEAVING_REMAINS:
					FailLeavingRemains(run, failure, error);
					break;
				case WORKER_EXITS_UNENDED:
					ereport(LOG,
							(errmsg("background DDL job %lld could not be ended: %s",
									(long long) job_id, error->message)));
					proc_exit(1);
					break;
				case WORKER_RETRIES:
					ExitForRetry(job_id, JobErrorFrom(error));
					break;
				case WORKER_FAILS_JOB:
					ereport(LOG,
							(errmsg("background DDL job %lld failed: %s",
									(long long) job_id, error->message)));
					failure = JobErrorFrom(error);
					break;
			}
			FreeErrorData(error);
		}
		PG_END_TRY();
		if (done)
			break;
	}
	proc_exit(0);
}
