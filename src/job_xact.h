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

#include "storage/lock.h"

/*
 * The job lock: every worker of a job holds it (session level, in
 * JOB_LOCK_WORKER mode) while it works on the job; a control function
 * takes it in JOB_LOCK_CONTROL mode (transaction level) to wait for the
 * workers to let go, and to keep them off the job until its transaction
 * ends.  An advisory lock tag with a class of its own (field4), so it
 * cannot collide with pg_advisory_lock(), which uses 1 and 2.
 */
#define BGDDL_LOCK_CLASS	0xBDD1
#define JOB_LOCK_WORKER		RowShareLock
#define JOB_LOCK_CONTROL	AccessExclusiveLock

static inline void
JobLockTagSet(LOCKTAG *tag, Oid database_oid, int64 job_id)
{
	SET_LOCKTAG_ADVISORY(*tag, database_oid, (uint32) (job_id >> 32),
						 (uint32) job_id, BGDDL_LOCK_CLASS);
}

extern void JobXactInstall(void);
extern void JobXactSubmit(int64 job_id, Oid target_oid);
extern int64 JobXactJobOf(Oid target_oid);
extern bool JobXactHasSubmitted(void);
extern int64 JobXactLastJob(void);
extern bool JobXactIsSubmitted(int64 job_id);
extern void JobXactWakeScheduler(void);
extern void JobXactNotify(int64 job_id, const char *state);
extern void JobXactSendNotices(void);

/* The channel of the job state notifications */
#define JOB_NOTIFY_CHANNEL "background_ddl"
extern void JobXactHold(int64 job_id);

#endif							/* BGDDL_SESSION_JOBS_H */
