/*-------------------------------------------------------------------------
 *
 * session_control.c
 *	  Holding and cancelling a job from a session: for cancel_ddl,
 *	  pause_ddl and resume_ddl, and for a DROP of a job's target.
 *
 * cancel_ddl and pause_ddl are transactional, like the submit.  They ask the
 * job's workers to let go of it (job_xact.c: the request lasts until the end
 * of the caller's transaction), interrupting what they run, wait on the job
 * lock until they have, and then move the job to cancelling or paused in
 * the caller's transaction.  A worker that let go waits for the caller's
 * transaction to end: if it rolled back, the worker goes on from where it
 * was, and this costs the job no attempt; if it committed, the worker stops
 * (paused), or removes everything the job created and marks it cancelled.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"

#include "catalog_access.h"
#include "catalog_job.h"
#include "job_xact.h"
#include "kind.h"
#include "pg_compat.h"
#include "pg_relation.h"
#include "session_control.h"

/*
 * Make the job's workers let go of it until the current transaction ends,
 * and wait until they have.  Returns the job as it is then in *job; false
 * if there is no such job, or it had ended or was being cancelled
 * meanwhile.
 */
bool
SessionHoldJob(int64 job_id, BgddlJob *job)
{
	LOCKTAG		job_lock;

	JobXactHold(job_id);
	JobLockTagSet(&job_lock, MyDatabaseId, job_id);
	(void) LockAcquire(&job_lock, JOB_LOCK_CONTROL, false, false);
	return CatalogJobLoad(job_id, job, true) && !JobStateIsFinal(job->state) &&
		job->state != JOB_STATE_CANCELLING;
}

/*
 * Cancel an unfinished job in the current transaction.  Where the kind
 * allows it, everything the job created is removed right here, but for
 * what its worker cleans up right after the commit (capture triggers: they
 * need strong locks on other roles' tables) and the job is cancelled;
 * otherwise it is cancelling until its worker has removed the rest.  reason
 * (may be NULL) is recorded as the job's error; with target_dropped, the
 * caller drops the target.  Returns false if the job had already ended or
 * was being cancelled.  Caller has checked the permission.
 */
bool
SessionCancelJob(int64 job_id, const char *reason, bool target_dropped)
{
	BgddlJob	job;
	const KindRoutine *routine;
	JobError	error = {reason, NULL, NULL, NULL};

	if (!SessionHoldJob(job_id, &job))
		return false;
	routine = KindRoutineForJob(&job);
	JobXactWakeScheduler();
	if (routine->discards_in_any_transaction != NULL &&
		!routine->discards_in_any_transaction(&job))
	{
		CatalogJobSetState(job_id, JOB_STATE_CANCELLING);
		if (reason != NULL)
			CatalogJobRecordError(job_id, &error, false);
		return true;
	}
	routine->discard(&job, target_dropped);
	CatalogJobFinish(job_id, JOB_STATE_CANCELLED, reason ? &error : NULL, false, -1, NULL);
	return true;
}

/*
 * DROP of a job's target cancels its job, in the dropping transaction.  A
 * placeholder that stands for an object of another type (a table or index
 * being built) is dropped with the cancel, and taken out of the statement,
 * which PostgreSQL would otherwise refuse ("is not a table").  Only for the
 * owner: anyone else gets the normal permission error from the DROP
 * itself, without disturbing the job.  Returns the objects that the
 * statement still has to drop (stmt->objects, or a shorter list).
 */
List *
SessionCancelDroppedTargets(DropStmt *stmt)
{
	ListCell   *lc;
	List	   *left = NIL;

	if ((stmt->removeType != OBJECT_MATVIEW && stmt->removeType != OBJECT_TABLE &&
		 stmt->removeType != OBJECT_INDEX) || CatalogLookup() == NULL)
		return stmt->objects;
	foreach(lc, stmt->objects)
	{
		RangeVar   *name = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			target_oid = RangeVarGetRelid(name, NoLock, true);
		int64		job_id = 0;
		BgddlJob	job;

		if (OidIsValid(target_oid) && PgRelationOwnerCheck(target_oid, GetUserId()))
			job_id = CatalogJobBuilding(target_oid);
		if (job_id != 0 && CatalogJobLoad(job_id, &job, true) &&
			KindRoutineForJob(&job)->replaces_placeholder &&
			KindRoutineForJob(&job)->stands_for == stmt->removeType &&
			get_rel_relkind(target_oid) == RELKIND_MATVIEW)
		{
			(void) SessionCancelJob(job_id, "the target was dropped", false);
			continue;
		}
		/* The DROP drops the target: no longer the extension's (pg_relation.c) */
		if (job_id != 0 && SessionCancelJob(job_id, "the target was dropped", true))
			PgRelationSetExtensionMember(target_oid, CatalogRequire()->extension_oid, false);
		left = lappend(left, lfirst(lc));
	}
	return left;
}

