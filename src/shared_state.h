/*-------------------------------------------------------------------------
 *
 * shared_state.h
 *	  Shared memory through which submitters, the launcher, the schedulers,
 *	  the job workers and cancel_ddl/wait_ddl find and wake each other.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SHARED_STATE_H
#define BGDDL_SHARED_STATE_H

#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

/* How many databases can have a scheduler at the same time */
#define BGDDL_MAX_DATABASES		64

/* One database that has, or may have, unfinished jobs */
typedef struct BgddlDatabaseSlot
{
	Oid			database_oid;	/* InvalidOid: slot free */
	bool		wake_pending;	/* a job was committed since the last scan */
	bool		scheduler_running;	/* a scheduler is registered for it */
	Latch	   *scheduler_latch;	/* NULL until the scheduler is up */
} BgddlDatabaseSlot;

/* One job worker; the scheduler fills it in before starting the worker */
typedef struct BgddlWorkerSlot
{
	bool		in_use;
	Oid			database_oid;
	int64		job_id;
	pid_t		pid;			/* 0 until the worker has started */
	bool		cancel_requested;	/* set by cancel_ddl */
} BgddlWorkerSlot;

typedef struct BgddlSharedState
{
	LWLock	   *lock;			/* protects everything below */
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	ConditionVariable job_finished; /* broadcast whenever a job ends */
	BgddlDatabaseSlot databases[BGDDL_MAX_DATABASES];
	BgddlWorkerSlot workers[FLEXIBLE_ARRAY_MEMBER];	/* max_workers of them */
} BgddlSharedState;

extern BgddlSharedState *BgddlShared;

extern void BgddlSharedStateRequest(void);
extern void BgddlSharedStateInit(void);
extern BgddlDatabaseSlot *BgddlFindDatabaseSlot(Oid database_oid, bool create);
extern void BgddlWakeDatabase(Oid database_oid);
extern BgddlWorkerSlot *BgddlFindWorkerSlot(Oid database_oid, int64 job_id);

#endif							/* BGDDL_SHARED_STATE_H */
