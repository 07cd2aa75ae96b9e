/*-------------------------------------------------------------------------
 *
 * catalog_job.h
 *	  Reading and writing job rows (background_ddl.job).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_CATALOG_H
#define BGDDL_JOB_CATALOG_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

#include "job_identity.h"
#include "catalog_types.h"

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

extern int64 CatalogJobInsert(const BgddlJobSubmission *submission);
extern bool CatalogJobLoad(int64 job_id, BgddlJob *job, bool latest);
extern List *CatalogJobsSchedulable(void);
extern int64 CatalogJobBuilding(Oid target_oid);
extern List *CatalogJobsUnfinished(void);
extern bool CatalogJobClaim(int64 job_id, int32 max_attempts, BgddlJob *job, bool *exhausted);
extern void CatalogJobSetPhase(int64 job_id, JobPhase phase);
extern void CatalogJobSetState(int64 job_id, JobState state);
extern void CatalogJobRecordPlan(const BgddlJob *job);
extern void CatalogJobRecordHidden(int64 job_id, Oid hidden_oid);
extern void CatalogJobRecordBuiltHere(int64 job_id, const char *strategy);
extern void CatalogJobRecordTarget(int64 job_id, Oid target_oid);
extern void CatalogJobRecordChunk(BgddlJob *job, int64 rows, int64 blocks,
							   double seconds_per_block);
extern void CatalogJobRecordCapture(const BgddlJob *job);
extern void CatalogJobReadProgress(BgddlJob *job);
extern void CatalogJobSetCounters(int64 job_id, int64 rows_done, int64 dirty_rows,
						   int32 catchup_passes);
extern void CatalogJobSetCleanupPending(int64 job_id, bool pending);
extern void CatalogJobStopCapture(int64 job_id);
extern void CatalogJobRecordError(int64 job_id, const JobError *error, bool in_flight);
extern void CatalogJobLetGo(int64 job_id, TimestampTz not_before, const char *why);
extern void CatalogJobFinish(int64 job_id, JobState state, const JobError *error,
					  bool record_cutover_snapshot, int64 rows_done, const char *target_name);
extern void CatalogJobRestartBuild(BgddlJob *job);
extern void CatalogJobSetLimits(int64 job_id, double max_rate, int batch_time_ms, int max_workers);
extern void CatalogJobReadLimits(BgddlJob *job);
extern void CatalogJobsPurge(int retention_seconds);

#endif							/* BGDDL_JOB_CATALOG_H */
