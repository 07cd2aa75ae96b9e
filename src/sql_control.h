/*-------------------------------------------------------------------------
 *
 * sql_control.h
 *	  Controlling jobs (cancel, pause, resume, wait) and the per-job lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_CONTROL_H
#define BGDDL_JOB_CONTROL_H

#include "nodes/parsenodes.h"
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

extern bool SessionCancelJob(int64 job_id, const char *reason, bool target_dropped);
extern List *SessionCancelDroppedTargets(DropStmt *stmt);
extern Oid	KindBuildHere(int64 job_id, const char *why);

#endif							/* BGDDL_JOB_CONTROL_H */
