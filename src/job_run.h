/*-------------------------------------------------------------------------
 *
 * job_run.h
 *	  A job as its worker runs it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_RUN_H
#define BGDDL_JOB_RUN_H

#include "datatype/timestamp.h"
#include "nodes/plannodes.h"

#include "catalog_job.h"

struct KindRoutine;

/* What a worker knows of the job it runs; lives in JobContext() */
typedef struct JobRun
{
	BgddlJob	job;			/* the row, kept current by the worker */
	const struct KindRoutine *routine;
	Oid			rule_relid;		/* whose view rule is the query (query kinds) */
	Oid			content_oid;	/* the relation that receives the rows */
	Oid			query_role;		/* whose privileges the query runs with */
	int64		next_block;		/* first driving block no chunk has reached */
	List	   *holes;			/* ChunkRanges below it that no chunk covers */
	uint32		build_generation;	/* of the chunk claims; 0: not open */
	bool		helper;			/* only takes chunks (query_job.c) */
	int64		marks_logged;	/* a helper's last look at CaptureMarksLogged */
	TimestampTz marks_logged_at;
	int32		catchup_batch_blocks;	/* adaptive size of a catch-up batch */
	bool		whole_table_marked; /* this worker recorded a whole_table mark */
	bool		claimed;		/* this worker has taken the job (CatalogJobClaim) */
	bool		attempts_exhausted; /* ... after max_attempts unclean ends */
	char	   *discard_error;	/* why the target could not be removed */
	const char *gone_reason;	/* JOB_STEP_TARGET_GONE: why (NULL: dropped) */
	uint64		chunk_rows;		/* this worker's last chunk: rows, for the rate limit */
	double		chunk_seconds;	/* ... and how long it took */
	double		paced_rate;		/* the rate limit: this worker's share being kept */
	TimestampTz paced_since;	/* ... since when */
	double		paced_rows;		/* ... and the rows made since then */
} JobRun;

/* What a step of a phase found */
typedef enum JobStepResult
{
	JOB_STEP_MORE,				/* call again */
	JOB_STEP_DONE,				/* the phase is over */
	JOB_STEP_RESTART,			/* the build starts over (a rewrite) */
	JOB_STEP_TARGET_GONE		/* the target was dropped: the job is over */
} JobStepResult;

typedef void (*LockingStep) (JobRun *run);

extern void JobRunLockingStep(JobRun *run, LockingStep step, JobPhase phase,
							  const char *activity);
extern bool JobRunTargetExists(const JobRun *run);
extern void JobRunSucceeded(const JobRun *run, Oid object_oid, bool record_cutover_snapshot,
							int64 rows);

struct KindSubmit;
extern void JobRunUtility(struct KindSubmit *submit, PlannedStmt *pstmt);

#endif							/* BGDDL_JOB_RUN_H */
