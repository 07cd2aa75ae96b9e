/*-------------------------------------------------------------------------
 *
 * job_control.h
 *	  The SQL functions that control jobs, and the per-job lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_CONTROL_H
#define BGDDL_JOB_CONTROL_H

#include "storage/lock.h"

/*
 * The job lock: a worker holds it (session level) while it runs a job;
 * cancel_ddl takes it (transaction level) to wait for the worker to stop and
 * to keep new workers off the job until the cancel commits.  An advisory
 * lock tag with a class of its own (field4), so it cannot collide with
 * pg_advisory_lock(), which uses 1 and 2.
 */
#define BGDDL_LOCK_CLASS	0xBDD1

static inline void
JobLockTagSet(LOCKTAG *tag, Oid database_oid, int64 job_id)
{
	SET_LOCKTAG_ADVISORY(*tag, database_oid, (uint32) (job_id >> 32),
						 (uint32) job_id, BGDDL_LOCK_CLASS);
}

extern bool JobCancel(int64 job_id, bool drop_placeholder, const char *reason);

#endif							/* BGDDL_JOB_CONTROL_H */
