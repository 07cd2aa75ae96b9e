/*-------------------------------------------------------------------------
 *
 * job_run.h
 *	  A job as its worker runs it, and what every kind's steps use.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_RUN_H
#define BGDDL_JOB_RUN_H

#include "datatype/timestamp.h"

#include "catalog/catalog_job.h"
#include "engine/job_step.h"

struct KindRoutine;

/* What a worker knows of the job it runs; lives in JobContext() */
typedef struct JobRun
{
	BgddlJob	job;			/* the row, kept current by the worker */
	const struct KindRoutine *routine;
	void	   *kind_run;		/* the kind's own state of this run */
	bool		helper;			/* only takes chunks of a job another worker runs */
	bool		claimed;		/* this worker has taken the job (CatalogJobClaim) */
	bool		attempts_exhausted; /* ... after max_attempts unclean ends */
	char	   *discard_error;	/* why the target could not be removed */
	const char *gone_reason;	/* JOB_STEP_TARGET_GONE: why (NULL: dropped) */
	/* the rate limit (JobRunPace) */
	double		paced_rate;		/* this worker's share being kept */
	TimestampTz paced_since;	/* ... since when */
	double		paced_rows;		/* ... and the rows made since then */
	/* its cut-over is manual, and its catch-up keeps it caught up meanwhile */
	bool		keeping_up;
} JobRun;

/* A step that JobRunLockingStep runs: arg is what its caller hands it */
typedef void (*LockingStep) (JobRun *run, void *arg);

extern void JobRunLockingStep(JobRun *run, LockingStep step, void *arg, JobPhase phase,
							  const char *activity);
extern void JobRunGaveWay(int64 job_id, const ErrorData *error);
extern void JobRunSetPhase(JobRun *run, JobPhase phase);
extern void JobRunRecordPhase(JobRun *run, JobPhase phase);
extern bool JobRunTargetExists(const JobRun *run);
extern bool JobRunPublishesLater(const BgddlJob *job);
extern void JobRunSucceeded(const JobRun *run, Oid object_oid, bool record_cutover_snapshot,
							int64 rows);
extern void JobRunSetStateText(JobRun *run, const char *key, const char *value);
extern void JobRunSetStateInt(JobRun *run, const char *key, int64 value);
extern int	JobRunBatchTimeMs(const BgddlJob *job);
extern double JobRunBatchScale(const BgddlJob *job, double seconds);
extern double JobRunNextChunkBlocks(const BgddlJob *job, double asked, int64 blocks,
									double seconds);
extern double JobRunRowsPerBatch(const BgddlJob *job);
extern double JobRunChunkBlocks(const BgddlJob *job, double chunk_blocks);
extern void JobRunChunkDone(JobRun *run, double *chunk_blocks, double max_blocks, int64 rows,
							int64 blocks, double seconds);
extern void JobRunReadLimits(JobRun *run, const char *activity);
extern void JobRunPace(JobRun *run, uint64 rows, double seconds);

#endif							/* BGDDL_JOB_RUN_H */
