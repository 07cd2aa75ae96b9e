/*-------------------------------------------------------------------------
 *
 * job_xact.h
 *	  What this session's current transaction did to jobs: the jobs it
 *	  submitted, and the jobs whose workers it asked to let go.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SESSION_JOBS_H
#define BGDDL_SESSION_JOBS_H

extern void JobXactInstall(void);
extern void JobXactSubmit(int64 job_id, Oid target_oid);
extern int64 JobXactJobOf(Oid target_oid);
extern bool JobXactHasSubmitted(void);
extern int64 JobXactLastJob(void);
extern bool JobXactIsSubmitted(int64 job_id);
extern void JobXactWakeScheduler(void);
extern void JobXactNotify(int64 job_id, const char *state);

/* The channel of the job state notifications */
#define JOB_NOTIFY_CHANNEL "background_ddl"
extern void JobXactHold(int64 job_id);

#endif							/* BGDDL_SESSION_JOBS_H */
