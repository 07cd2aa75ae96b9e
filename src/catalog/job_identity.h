/*-------------------------------------------------------------------------
 *
 * job_identity.h
 *	  A job runs as the submitter's own session would.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_IDENTITY_H
#define BGDDL_JOB_IDENTITY_H

#include "nodes/pg_list.h"

/* Who submitted a job, and the settings its session had */
typedef struct JobIdentity
{
	Oid			session_user_oid;	/* session_user at submit */
	Oid			owner_oid;		/* current_user at submit */
	List	   *settings;		/* alternating names and values */
} JobIdentity;

/* Saved state around the job's own statements */
typedef struct JobQueryContext
{
	Oid			saved_userid;
	int			saved_sec_context;
	int			guc_nest_level;
	bool		timeout_armed;
} JobQueryContext;

extern void JobIdentityCapture(JobIdentity *identity);
extern void JobIdentitySaveServerSettings(void);
extern void JobIdentityBecome(const JobIdentity *identity, int64 job_id);
extern void JobQueryEnter(Oid role, JobQueryContext *context, bool small_batches);
extern void JobQueryLeave(JobQueryContext *context);

#endif							/* BGDDL_JOB_IDENTITY_H */
