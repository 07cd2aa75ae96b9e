/*-------------------------------------------------------------------------
 *
 * job_step.h
 *	  A step of a job: one transaction of a job worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_STEP_H
#define BGDDL_JOB_STEP_H

#include <signal.h>

#include "datatype/timestamp.h"
#include "storage/lockdefs.h"

#include "catalog/catalog_job.h"
#include "catalog/job_identity.h"

/* What a step of a phase found */
typedef enum JobStepResult
{
	JOB_STEP_MORE,				/* call again */
	JOB_STEP_DONE,				/* the phase is over */
	JOB_STEP_RESTART,			/* the build starts over (a rewrite) */
	JOB_STEP_TARGET_GONE		/* the target was dropped: the job is over */
} JobStepResult;

/* How a step's transaction reads */
typedef enum JobStepIsolation
{
	STEP_READ_COMMITTED,
	STEP_REPEATABLE_READ,		/* everything it reads shares one snapshot */
	STEP_NO_SNAPSHOT,			/* read committed; the caller pushes one */
	STEP_REPEATABLE_READ_LATER	/* repeatable read, whose snapshot the caller
								 * takes with JobStepTakeSnapshot */
} JobStepIsolation;

/* What the worker does in each step's transaction, just before it commits */
typedef void (*JobStepCommitHook) (int64 job_id);

extern void JobStepsInit(int64 job_id, JobStepCommitHook commit_hook);
extern MemoryContext JobContext(void);
extern void JobStepsStopping(void);
extern void JobStepBegin(const char *activity, JobStepIsolation isolation);
extern void JobStepBeginRecording(const char *activity);
extern void JobStepTakeSnapshot(void);
extern void JobStepEnd(void);
extern void JobStepEndPipelined(bool shown);
extern void JobStepAbort(void);
extern bool JobStepInProgress(void);
extern void JobStepLookBegin(const char *activity);
extern void JobStepLookEnd(void);
extern void JobStepLockRelation(Oid relid, LOCKMODE mode, long patience_ms);
extern void JobStepLockTree(Oid relid, LOCKMODE mode, long patience_ms);
extern bool JobStepLockWaitFailed(void);
extern void JobQueryBegin(Oid role, bool small_batches);
extern void JobQueryEnd(void);
extern bool JobControlPending(void);
extern bool JobControlOutstanding(void);
extern void JobControlAcknowledge(void);
extern void JobStepSleep(long milliseconds);
extern void JobStepWaitingFor(JobWaitReason reason, const char *what);
extern void JobStepWaitingForStandby(const char *what, const char *standby);
extern bool JobStepIsWaiting(void);
extern void JobStepHoldPoint(const char *point);
extern bool JobStepTestFault(const char *fault);
extern void JobStepHoldAtChunk(int64 chunks_done);

/* Set by the worker's SIGTERM handler: stop cleanly at the next chance */
extern volatile sig_atomic_t JobShutdownRequested;
/* Set by its SIGINT handler (a control request, or pg_cancel_backend); reset per step */
extern volatile sig_atomic_t JobCancelSignalled;

/* A worker that gives its slot back (JobStepGiveBack): until when, and why */
typedef struct JobGiveBack
{
	bool		giving_back;
	TimestampTz until;
	const char *why;
	JobWaitReason waits_for;	/* the time until then counts as this wait */
	bool		said_before;	/* an earlier worker of the job logged the same reason */
} JobGiveBack;

extern JobGiveBack JobGivingBack;

/* A worker that would wait longer than this (a rate limit, a lock) gives its slot back */
#define JOB_GIVE_BACK_SECONDS	5

/*
 * A worker given back for its rate limit comes back at least this often, to
 * look whether the job may still run (its privileges), before the limit
 * lets it take its next batch
 */
#define JOB_RECHECK_SECONDS		10
extern void JobStepGiveBack(TimestampTz until, const char *why, JobWaitReason waits_for,
							bool said_before) pg_attribute_noreturn();
extern void JobStepGivingBack(TimestampTz until, const char *why, JobWaitReason waits_for);

#endif							/* BGDDL_JOB_STEP_H */
