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

#include "catalog/catalog_types.h"

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

/*
 * What a statement does to a relation, as the order of a session's
 * statements sees it (session_order.c)
 */
#define REL_NAMES			0x01	/* names it (a view, index or comment on it) */
#define REL_READS			0x02	/* reads its rows, or needs it complete */
#define REL_ADDS_ROWS		0x04	/* inserts or updates rows */
#define REL_REMOVES_ROWS	0x08	/* deletes rows */
#define REL_REDEFINES		0x10	/* changes its definition, tree or privileges */
#define REL_DROPS			0x20	/* drops it */
#define REL_UPDATES_ROWS	0x40	/* updates rows (REL_ADDS_ROWS too) */
#define REL_REFERENCES		0x80	/* references its keys (a foreign key) */
#define REL_ANY				0xFF

/*
 * A job this session submitted, as its later statements see it: its target
 * (as at submit) and what done to it needs the job done, the relations its
 * result is made from, and what done to them would change its result
 * (REL_*)
 */
typedef struct JobOrder
{
	int64		job_id;
	Oid			target_oid;
	int			target_effects;
	List	   *sources;		/* Oid */
	int			source_effects;
	/* a job that defines keys: their table, and what holds the index's name */
	Oid			key_table;
	Oid			key_placeholder;
	bool		changes_columns;	/* it changes its target's columns */
	Oid			held_table;		/* a table it holds locked while it runs */
} JobOrder;

extern void JobXactInstall(void);
extern void JobXactSubmit(const JobOrder *order);
extern int64 JobXactJobOf(Oid target_oid);
extern List *JobXactSubmittedOrders(void);
extern List *JobXactSessionOrders(void);
extern bool JobXactIsSessionJob(int64 job_id);
extern void JobXactForget(int64 job_id);
extern void JobXactForgetAtCommit(int64 job_id);
extern bool JobXactHasSubmitted(void);
extern int64 JobXactLastJob(void);
extern bool JobXactIsSubmitted(int64 job_id);
extern void JobXactWakeScheduler(void);
extern void JobXactNotify(int64 job_id, JobState state);
extern void JobXactSendNotices(void);

/* The channel of the job state notifications */
#define JOB_NOTIFY_CHANNEL "background_ddl"
extern void JobXactHold(int64 job_id);

#endif							/* BGDDL_SESSION_JOBS_H */
