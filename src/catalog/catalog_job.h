/*-------------------------------------------------------------------------
 *
 * catalog_job.h
 *	  Reading and writing job rows (background_ddl.job).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CATALOG_JOB_H
#define BGDDL_CATALOG_JOB_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include "catalog/catalog_types.h"
#include "catalog/job_identity.h"

/*
 * The columns of background_ddl.job, in the order of its CREATE TABLE
 * (catalog_job.c checks the table against job_columns[]).
 */
#define Anum_job_id					1
#define Anum_job_database_oid		2
#define Anum_job_session_user_oid	3
#define Anum_job_owner_oid			4
#define Anum_job_kind				5
#define Anum_job_target_oid			6
#define Anum_job_target_name		7
#define Anum_job_command			8
#define Anum_job_settings			9
#define Anum_job_state				10
#define Anum_job_phase				11
#define Anum_job_strategy			12
#define Anum_job_planned			13
#define Anum_job_kind_state			14
#define Anum_job_work_total			15
#define Anum_job_work_done			16
#define Anum_job_rows_done			17
#define Anum_job_rows_total			18
#define Anum_job_chunks_done		19
#define Anum_job_chunks_total		20
#define Anum_job_progress			21
#define Anum_job_progress_base		22
#define Anum_job_rate				23
#define Anum_job_eta				24
#define Anum_job_submitted_at		25
#define Anum_job_started_at			26
#define Anum_job_attempt_started_at	27
#define Anum_job_finished_at		28
#define Anum_job_attempts			29
#define Anum_job_in_flight			30
#define Anum_job_error				31
#define Anum_job_error_sqlstate		32
#define Anum_job_error_detail		33
#define Anum_job_error_hint			34
#define Anum_job_cutover_snapshot	35
#define Anum_job_cutover_at			36
#define Anum_job_dirty_rows			37
#define Anum_job_cleanup_pending	38
#define Anum_job_not_before			39
#define Anum_job_given_back_for		40
#define Anum_job_max_rate			41
#define Anum_job_batch_time			42
#define Anum_job_max_workers		43
#define Anum_job_max_replica_lag	44
#define Anum_job_messages			45
#define Anum_job_after				46
#define Anum_job_idempotency_key	47
#define Anum_job_rate_not_before	48
#define Anum_job_cutover			49
#define Anum_job_cutover_window		50
#define Anum_job_cutover_max_writes	51
#define Anum_job_wal_bytes			52
#define Anum_job_temp_bytes			53
#define Anum_job_waited_us			54
#define Anum_job_retries			55
#define Anum_job_dirtied_bytes		56
#define Anum_job_changes_caught_up	57
#define Anum_job_capture_samples	58
#define Anum_job_capture_ns			59
#define Anum_job_queued_at			60
#define Anum_job_cutover_group		61
#define Anum_job_group_id			62
#define Anum_job_group_ready		63
#define Anum_job_published_by		64
#define Anum_job_estimate			65
#define Natts_job					65

/*
 * Why a job's worker waits (its job row's waited_us, by reason: the order
 * of pg_stat_background_ddl.waited's names)
 */
typedef enum JobWaitReason
{
	JOB_WAIT_NONE = -1,			/* (a wait not counted: for a worker) */
	JOB_WAIT_LOCK,				/* for a lock, or between two tries for one */
	JOB_WAIT_RATE,				/* for its rate limit (max_rate) */
	JOB_WAIT_REPLICA_LAG,		/* for standbys to catch up (max_replica_lag) */
	JOB_WAIT_CUTOVER,			/* ready: for complete_ddl, its window, fewer writes */
	JOB_WAIT_TRANSACTIONS,		/* for older transactions to end (an index's build) */
	JOB_WAIT_NODES,				/* for Citus nodes */
	JOB_WAIT_QUEUED,			/* queued, until a worker took it (its start, max_workers) */
	JOB_WAIT_REASONS
} JobWaitReason;

/*
 * Why a job's work was tried again (its job row's retries, by reason: the
 * order of pg_stat_background_ddl.retries's names)
 */
typedef enum JobRetryReason
{
	JOB_RETRY_LOCK,				/* a lock did not come: a step tried again, a worker given back */
	JOB_RETRY_DEADLOCK,			/* it gave way to a user's statement */
	JOB_RETRY_FAIR_SHARE,		/* the scheduler gave its worker to another role's job */
	JOB_RETRY_CANCELLED_WORKER, /* pg_cancel_backend of its worker */
	JOB_RETRY_ERROR,			/* an error a later attempt may not meet */
	JOB_RETRY_CRASH,			/* its worker ended without letting go (a crash) */
	JOB_RETRY_REASONS
} JobRetryReason;

/* A job row, as the worker and the control functions see it */
typedef struct BgddlJob
{
	int64		id;
	char	   *kind;			/* its name in the kind table (kind.c) */
	JobState	state;
	JobIdentity identity;
	Oid			target_oid;
	char	   *target_name;
	char	   *command;
	char	   *strategy;		/* as guessed at submit, until planned */
	bool		planned;		/* the worker has decided the strategy */
	Jsonb	   *kind_state;		/* the kind's own (CatalogKindState*) */
	int64		work_total;		/* the backfill's units of work; -1: no backfill */
	int64		work_done;
	int64		rows_done;
	int64		rows_total;		/* -1: unknown */
	int64		chunks_done;
	int32		attempts;
	bool		in_flight;
	double		progress;
	double		progress_base;
	TimestampTz started_at;
	TimestampTz attempt_started_at;
	bool		cleanup_pending;	/* its kind has something to clean up */
	char	   *error;			/* NULL: none recorded */
	char	   *error_sqlstate;
	char	   *error_detail;
	char	   *error_hint;
	/* the job's own limits (alter_ddl); 0: none, or the server's setting */
	double		max_rate;		/* rows per second */
	int			batch_time_ms;
	int			max_workers;
	int			max_replica_lag_ms; /* -1: the server's setting */
	bool		manual_cutover; /* it waits for complete_ddl before its cut-over */
	/* ... or for this time of day ('HH:MM-HH:MM'), or '' for any */
	char		cutover_window[sizeof("HH:MM-HH:MM")];
	int			cutover_max_writes; /* ... and for fewer writes a second; 0: any */
	TimestampTz rate_not_before;	/* its rate limit holds its next batch until then */
	/* its group (background_ddl.cutover_group): published with it, or 0 and NULL */
	int64		group_id;
	char	   *cutover_group;
	int64		published_by;	/* the job whose worker publishes the group; 0: none yet */
} BgddlJob;

/* What the submit hook knows about a new job */
typedef struct BgddlJobSubmission
{
	const char *kind;
	JobIdentity identity;
	Oid			target_oid;
	const char *target_name;
	const char *command;
	const char *strategy;		/* NULL: decided by the worker */
	Jsonb	   *kind_state;		/* NULL: empty */
	List	   *after;			/* job ids (int64 *): it starts once they succeeded */
	const char *idempotency_key;	/* submit_ddl's, or NULL */
	bool		manual_cutover; /* background_ddl.cutover = manual */
	const char *cutover_window; /* background_ddl.cutover_window, or NULL */
	int			cutover_max_writes; /* background_ddl.cutover_max_writes */
	const char *cutover_group;	/* background_ddl.cutover_group, or NULL */
	int64		group_id;		/* the group's first job; 0: this one */
	Jsonb	   *estimate;		/* estimate_ddl's, measured at submit, or NULL */
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
	bool		ready;			/* built, waiting for its cut-over: it yields its worker */
} JobScheduleEntry;

/* The error a job ended with (or last met) */
typedef struct JobError
{
	const char *message;
	const char *sqlstate;		/* NULL: none */
	const char *detail;
	const char *hint;
} JobError;

/* Rows */
extern int64 CatalogJobInsert(const BgddlJobSubmission *submission);
extern bool CatalogJobLoad(int64 job_id, BgddlJob *job, bool latest);
extern void CatalogJobWaitForLastWriter(int64 job_id);
extern List *CatalogJobsSchedulable(void);
extern int64 CatalogJobBuilding(Oid target_oid);
extern List *CatalogJobsBuilding(Oid target_oid);
extern List *CatalogJobsUnfinished(void);
extern void CatalogJobsPurge(int retention_seconds);

/* The life of a job */
extern bool CatalogJobClaim(int64 job_id, int32 max_attempts, BgddlJob *job, bool *exhausted,
							bool *state_changed);
extern void CatalogJobSetPhase(BgddlJob *job, JobPhase phase);
extern void CatalogJobSetState(int64 job_id, JobState state);
extern void CatalogJobRecordError(int64 job_id, const JobError *error, bool in_flight);
extern void CatalogJobRecordRetry(int64 job_id, const JobError *error);
extern void CatalogJobLetGo(int64 job_id, TimestampTz not_before, const char *why,
							JobWaitReason waits_for);
extern void CatalogJobFinish(int64 job_id, JobState state, const JobError *error,
							 bool record_cutover_snapshot, int64 rows_done,
							 const char *target_name);
extern void CatalogJobSetCleanupPending(int64 job_id, bool pending);
extern void CatalogJobSetRateNotBefore(int64 job_id, TimestampTz rate_not_before);

/* What the kind records */
extern void CatalogJobRecordPlan(const BgddlJob *job);
extern void CatalogJobRecordBuiltHere(int64 job_id, const char *strategy);
extern void CatalogJobRecordTarget(int64 job_id, Oid target_oid);
extern void CatalogJobRecordKindState(const BgddlJob *job);
extern bool CatalogJobRecordChunk(BgddlJob *job, int64 rows, int64 work, int64 next_work,
								  double seconds_per_unit);
extern void CatalogJobRecordBacklog(const BgddlJob *job, int64 dirty_rows, double eta_seconds);
extern void CatalogJobRaiseProgress(int64 job_id, double progress);
extern void CatalogJobSetDirtyRows(int64 job_id, int64 dirty_rows);
extern void CatalogJobSetBackfillTotals(BgddlJob *job, int64 chunks, int64 rows, int64 work);
extern void CatalogJobRaiseBackfillTotals(BgddlJob *job, int64 chunks, int64 rows, int64 work);
extern void CatalogJobRestartBuild(BgddlJob *job);
extern void CatalogJobAppendMessages(int64 job_id, List *messages, int64 uncaught);
extern void CatalogJobCountCosts(int64 job_id);
extern void CatalogJobAddCosts(void);
extern void CatalogJobWaitBegin(JobWaitReason reason);
extern void CatalogJobWaitEnd(void);
extern void CatalogJobCountRetry(JobRetryReason reason);
extern void CatalogJobCountChanges(int64 marks);
extern void CatalogJobCountCaptureCost(int64 samples, int64 nanoseconds);

/* Limits (alter_ddl) */
extern void CatalogJobSetLimits(int64 job_id, double max_rate, int batch_time_ms, int max_workers,
								int max_replica_lag_ms, const char *cutover,
								const char *cutover_window, int cutover_max_writes);
extern int64 CatalogJobByKey(const char *idempotency_key, Oid owner_oid, char **command);
extern char *CatalogJobEndedDependency(int64 job_id);
extern List *CatalogJobsWaitingFor(int64 job_id);
extern bool CatalogJobStartsAfter(int64 job_id, int64 earlier_id);
extern List *CatalogJobsAwaited(int64 job_id);
extern void CatalogJobReadLimits(BgddlJob *job);
extern int64 CatalogGroupReady(int64 job_id, List **not_ready);
extern List *CatalogGroupMembers(int64 job_id, List **pending, List **paused, bool *ended);
extern void CatalogGroupRelease(int64 job_id);
extern List *CatalogGroupCancel(int64 job_id, const char *reason);
extern int64 CatalogGroupMemberUnlike(int64 job_id);

/* The state of capture for a trigger: is the job queued or running? */
extern bool CatalogJobIsActive(int64 job_id);

/* The kind's own state: a jsonb object of numbers and strings */
extern bool CatalogKindStateHas(const Jsonb *state, const char *key);
extern int64 CatalogKindStateInt(const Jsonb *state, const char *key);
extern char *CatalogKindStateText(const Jsonb *state, const char *key);
extern void CatalogKindStateSetInt(Jsonb **state, const char *key, int64 value);
extern void CatalogKindStateSetText(Jsonb **state, const char *key, const char *value);
extern Jsonb *CatalogKindStateEmpty(void);

#endif							/* BGDDL_CATALOG_JOB_H */
