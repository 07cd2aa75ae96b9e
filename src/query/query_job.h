/*-------------------------------------------------------------------------
 *
 * query_job.h
 *	  The life of a job whose content is a query's result: the routines
 *	  that CREATE MATERIALIZED VIEW, CREATE TABLE AS and REFRESH share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_QUERY_JOB_H
#define BGDDL_QUERY_JOB_H

#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include "capture/capture_log.h"
#include "engine/job_chunks.h"
#include "engine/job_run.h"
#include "engine/kind.h"
#include "query/query_driving.h"

/* Where a backfill in an index's order is */
typedef enum QueryOrderStage
{
	ORDER_READING,				/* copying rows a chunk at a time */
	ORDER_REGROUPING,			/* all copied; regrouping the pairs by block */
	ORDER_DONE,
	ORDER_READING_NULLS			/* copying the rows of a null key, by blocks */
} QueryOrderStage;

/*
 * What a worker knows of the query job it runs (JobRun.kind_run).  The
 * driving table, the staging relation, the content relation's relfilenode,
 * the catch-up passes and the rows they recomputed live with the job, in its
 * kind_state (keys of those names); the query kinds add their own keys.
 */
typedef struct QueryRun
{
	Oid			rule_relid;		/* whose view rule is the query */
	bool		rewrites_table; /* ... or a table, whose rows are the query:
								 * the content becomes its storage */
	List	   *column_changes; /* ... with these columns changed (ALTER COLUMN
								 * ... TYPE subcommands; QueryOfTableRows) */
	Oid			content_oid;	/* the relation that receives the rows */
	Oid			query_role;		/* whose privileges the query runs with */
	Oid			driving_oid;	/* InvalidOid: one batch */
	Oid			staging_oid;	/* partial aggregation's rows; InvalidOid: none */
	Oid			content_filenode;	/* the content relation's, when the backfill began */
	int32		catchup_passes;
	int64		rows_recomputed;	/* by the catch-up, since the backfill */
	Capture		capture;		/* once installed (job_id set) */
	QueryDriving *driving;		/* the driving table's blocks, once captured */
	/* this worker's own */
	JobChunks	chunks;			/* of the driving table, over the job's workers */
	int32		chunk_blocks;	/* adaptive size of its chunks */
	int64		catchup_rows;	/* adaptive size of a catch-up batch, in rows */
	int64		catchup_blocks; /* ... or in blocks (partial aggregation, whole_table) */
	TimestampTz pass_started_at;	/* when its catch-up pass began */
	double		last_pass_seconds;	/* how long its previous catch-up pass took */
	bool		last_pass_whole;	/* ... and whether it recomputed every row */
	TimestampTz backlog_counted_at; /* when it last counted the backlog */
	TimestampTz spread_checked_at;	/* when it last looked at their spread */
	int64		spread_check_interval_ms;	/* and when it looks again */
	bool		recompute_at_cutover;	/* the changes spread over most of the table */
	int64		marks_logged;	/* a helper's last look at CaptureMarksLogged */
	TimestampTz marks_logged_at;
	bool		whole_table_marked; /* it recorded a whole_table mark since the pass began */
	bool		uncaptured_marked;	/* it recorded an uncaptured mark */
	/* a backfill in an index's order (QUERY_STATE_ORDER_INDEX), if any */
	Oid			order_index;
	QueryOrderStage order_stage;
	int32		order_chunks;	/* chunks copied */
	List	   *order_bound;	/* the last row's keys (QueryBackfillInOrder);
								 * of a null key, the next block (an int8) */
	int64		order_key_rows; /* rows of the bound's key copied, as far as
								 * known */
} QueryRun;

#define QueryRunOf(run)	((QueryRun *) (run)->kind_run)

/*
 * A key of the job's kind_state: the tablespace of the new storage of a job
 * that replaces its target's (pg_class.reltablespace's value), if not the
 * target's own
 */
#define QUERY_STATE_TABLESPACE	"tablespace"

/* ... and its table access method (pg_am's oid), if not the target's own */
#define QUERY_STATE_ACCESS_METHOD	"access_method"

/*
 * ... and the index in whose order its rows are copied (CLUSTER), if any:
 * its backfill reads the table a chunk of rows at a time in that order
 * (QueryBackfillInOrder), then regroups the chunks' pairs by block
 * (CaptureChunksRegroup), after which it goes on as after chunks of blocks
 */
#define QUERY_STATE_ORDER_INDEX	"order_index"


extern void QueryJobStart(JobRun *run, Oid rule_relid, Oid content_oid, Oid query_role);
extern void QueryJobPlan(JobRun *run);
extern char *QueryJobOrderStrategy(Oid order_index);
extern JobStepResult QueryJobBackfillStep(JobRun *run);
extern JobStepResult QueryJobHelpStep(JobRun *run);
extern JobStepResult QueryJobCatchUp(JobRun *run);
extern int64 QueryJobWritesToSources(const BgddlJob *job);

/* Make the computed content visible, and end the job as succeeded */
typedef void (*QueryJobPublish) (JobRun *run, int64 rows);

extern JobStepResult QueryJobCutOver(JobRun *run, QueryJobPublish publish);
extern void QueryJobCutOverLock(JobRun *run);
extern JobStepResult QueryJobCutOverPublish(JobRun *run, QueryJobPublish publish);
extern JobStepResult QueryJobRestartBuild(JobRun *run);
extern void QueryJobAnalyzeContent(Oid content_oid, Oid owner);
extern void QueryJobBuildHere(const BgddlJob *job, Oid rule_relid, Oid content_oid,
							  Oid query_role, QueryJobPublish publish);
extern void QueryJobStartReplacing(JobRun *run, const char *prefix, List *column_changes);
extern Oid	QueryJobBuildHereReplacing(const BgddlJob *job, const char *prefix,
									   LOCKMODE lockmode, List *column_changes,
									   QueryJobPublish publish);
extern void QueryJobDiscardHiddenHeap(const BgddlJob *job, bool keep_target);
extern void QueryJobHousekeeping(void);
extern void QueryJobCleanup(const BgddlJob *job);
extern void QueryJobDiscard(const BgddlJob *job);
extern void QueryJobPaused(const BgddlJob *job);
extern void QueryJobProgress(const BgddlJob *job, pid_t pid, KindProgress *progress);
extern bool QueryJobKeepsOnTableOf(const BgddlJob *job, Oid role);

#endif							/* BGDDL_QUERY_JOB_H */
