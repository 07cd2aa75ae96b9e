/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The job worker: runs one job through its phases.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_WORKER_H
#define BGDDL_WORKER_H

#include "job_catalog.h"

/* The submitting role's identity, entered for a job's SQL */
typedef struct JobRoleContext
{
	Oid			saved_userid;
	int			saved_sec_context;
	int			guc_nest_level;
} JobRoleContext;

extern void JobRoleEnter(const BgddlJob *job, JobRoleContext *context);
extern void JobRoleLeave(JobRoleContext *context);

#endif							/* BGDDL_WORKER_H */
