/*-------------------------------------------------------------------------
 *
 * job_group.h
 *	  Jobs published together (background_ddl.cutover_group).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_GROUP_H
#define BGDDL_JOB_GROUP_H

#include "catalog/catalog_job.h"
#include "engine/job_run.h"
#include "engine/job_step.h"

extern void JobGroupReady(JobRun *run);
extern void JobGroupHandOver(JobRun *run);
extern JobStepResult JobGroupPublish(JobRun *run);
extern JobStepResult JobPublishAlone(JobRun *run);
extern void JobGroupCancel(const BgddlJob *job, JobState ended_as, int64 own_job);

#endif							/* BGDDL_JOB_GROUP_H */
