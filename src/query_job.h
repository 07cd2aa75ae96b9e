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
#include "utils/relcache.h"

#include "job_run.h"

/* Submit side */
extern PlannedStmt *QueryJobValidate(Query *query, const char *query_string,
									 ParamListInfo params, QueryEnvironment *query_env);
extern Query *QueryBindParams(Query *query, ParamListInfo params);
extern char *QueryJobStrategyAtSubmit(Query *query, Oid rule_relid, char **one_batch_reason);

/* Worker side */
extern void QueryJobResume(JobRun *run);
extern void QueryJobPlan(JobRun *run);
extern JobStepResult QueryJobBackfillStep(JobRun *run);
extern JobStepResult QueryJobHelpStep(JobRun *run);
extern JobStepResult QueryJobCatchUp(JobRun *run);
extern JobStepResult QueryJobFinalize(JobRun *run, Relation content, int64 *rows);

/* Make the computed content visible, and end the job as succeeded */
typedef void (*QueryJobPublish) (JobRun *run, int64 rows);

extern JobStepResult QueryJobCutOver(JobRun *run, QueryJobPublish publish);
extern void QueryJobBuildHere(JobRun *run, QueryJobPublish publish);

#endif							/* BGDDL_QUERY_JOB_H */
