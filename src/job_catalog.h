/*-------------------------------------------------------------------------
 *
 * job_catalog.h
 *	  Reading and writing job rows (background_ddl.job).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_CATALOG_H
#define BGDDL_JOB_CATALOG_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

#include "job_identity.h"
#include "job_types.h"

/* A job row, as the worker and the control functions see it */
typedef struct BgddlJob
{
	int64		id;
	JobKind		kind;
	JobState	state;
	JobIdentity identity;
	Oid			target_oid;
	char	   *target_name;
	char	   *command;
	char	   *utility_stmt;	/* NULL: none */
	Oid			hidden_oid;		/* InvalidOid: none */
	Oid			staging_oid;	/* partial aggregation's rows; InvalidOid: none */
	char	   *strategy;		/* as guessed at submit, until planned */
	bool		planned;		/* the worker has decided the strategy */
	Oid			driving_oid;	/* InvalidOid: not chunked */
	int64		blocks_total;
	int32		chunk_blocks;
	int64		rows_done;
	int64		rows_total;		/* -1: unknown */
	int64		chunks_done;
	int32		attempts;
	bool		in_flight;
	double		progress;
	double		progress_base;
	TimestampTz started_at;
	TimestampTz attempt_started_at;
	List	   *capture_relids; /* base relations with capture triggers */
	List	   *capture_filenodes;	/* their relfilenodes when captured */
	List	   *capture_triggers;	/* our triggers' oids */
	List	   *capture_trigger_xmins;	/* their pg_trigger rows' xmins */
	Oid			target_filenode;	/* content relation's, when the backfill began */
	int32		catchup_passes;
	bool		cleanup_pending;
	bool		capture_stopped;	/* its backlog outgrew its bound */
	char	   *error;			/* NULL: none recorded */
	char	   *error_sqlstate;
	char	   *error_detail;
	char	   *error_hint;
	/* the job's own limits (alter_ddl); 0: none, or the server's setting */
	double		max_rate;		/* rows per second */
	int			batch_time_ms;
	int			max_workers;
} BgddlJob;

/* What the submit hook knows about a new job */
typedef struct BgddlJobSubmission
{
	JobKind		kind;
	JobIdentity identity;
	Oid			target_oid;
	const char *target_name;
	Oid			hidden_oid;
	Oid			driving_oid;	/* the table an index is built on */
	const char *command;
	const char *utility_stmt;	/* NULL: none */
	const char *strategy;		/* NULL: decided by the worker */
} BgddlJobSubmission;

/* What the scheduler needs to know of an unfinished job */
typedef struct JobScheduleEntry
{
	int64		id;
	bool		needs_worker;	/* false: paused, nothing to do */
	bool		in_flight;		/* its last worker died */
	int32		attempts;
	TimestampTz attempt_started_at;
	int			max_workers;	/* 0: background_ddl.max_workers_per_job */
	Oid			owner_oid;		/* whose job it is (fairness between roles) */
	TimestampTz not_before;		/* no worker before (it gave its worker back) */
} JobScheduleEntry;

/* The error a job ended with (or last met) */
typedef struct JobError
{
	const char *message;
	const char *sqlstate;		/* NULL: none */
	const char *detail;
	const char *hint;
} JobError;

extern int64 JobInsert(const BgddlJobSubmission *submission);
extern bool JobLoad(int64 job_id, BgddlJob *job, bool latest);
extern List *JobListSchedulable(void);
extern int64 JobFindUnfinishedByTarget(Oid target_oid);
extern List *JobListUnfinished(void);
extern bool JobClaim(int64 job_id, int32 max_attempts, BgddlJob *job, bool *exhausted);
extern void JobSetPhase(int64 job_id, JobPhase phase);
extern void JobSetState(int64 job_id, JobState state);
extern void JobRecordPlan(const BgddlJob *job);
extern void JobRecordHidden(int64 job_id, Oid hidden_oid);
extern void JobRecordBuiltHere(int64 job_id, const char *strategy);
extern void JobRecordTarget(int64 job_id, Oid target_oid);
extern void JobRecordChunkDone(BgddlJob *job, int64 rows, int64 blocks,
							   double seconds_per_block);
extern void JobRecordCapture(const BgddlJob *job);
extern void JobReadProgress(BgddlJob *job);
extern void JobSetCounters(int64 job_id, int64 rows_done, int64 dirty_rows,
						   int32 catchup_passes);
extern void JobSetCleanupPending(int64 job_id, bool pending);
extern void JobStopCapture(int64 job_id);
extern void JobRecordError(int64 job_id, const JobError *error, bool in_flight);
extern void JobLetGo(int64 job_id, TimestampTz not_before, const char *why);
extern void JobFinish(int64 job_id, JobState state, const JobError *error,
					  bool record_cutover_snapshot, int64 rows_done, const char *target_name);
extern void JobRestartBuild(BgddlJob *job);
extern void JobSetLimits(int64 job_id, double max_rate, int batch_time_ms, int max_workers);
extern void JobReadLimits(BgddlJob *job);
extern void JobPurgeHistory(int retention_seconds);

#endif							/* BGDDL_JOB_CATALOG_H */
