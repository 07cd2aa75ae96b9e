/*-------------------------------------------------------------------------
 *
 * session_jobs.h
 *	  What this session's current transaction did to jobs: the jobs it
 *	  submitted, and the jobs whose workers it asked to let go.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SESSION_JOBS_H
#define BGDDL_SESSION_JOBS_H

extern void SessionJobsInstall(void);
extern void SessionJobSubmitted(int64 job_id, Oid target_oid);
extern int64 SessionUncommittedJobOf(Oid target_oid);
extern bool SessionHasUncommittedJobs(void);
extern int64 SessionLastJobId(void);
extern bool SessionJobIsUncommitted(int64 job_id);
extern void SessionWakeAtCommit(void);
extern void SessionNotifyAtCommit(int64 job_id, const char *state);

/* The channel of the job state notifications */
#define SESSION_NOTIFY_CHANNEL "background_ddl"
extern void SessionHoldJob(int64 job_id);

#endif							/* BGDDL_SESSION_JOBS_H */
