/*-------------------------------------------------------------------------
 *
 * job_xact.c
 *	  What this session's current transaction did to jobs.
 *
 * Submitted jobs.  A job exists once the transaction that submitted it
 * commits: then the scheduler of this database is woken (no polling delay),
 * and last_ddl_job() keeps naming it.  A rollback, also to a savepoint or
 * out of a PL/pgSQL exception block, forgets the jobs submitted since, and
 * last_ddl_job() names the last job that still exists.  PREPARE TRANSACTION
 * hands the jobs over to the prepared transaction: they are no longer "of
 * the current transaction", and last_ddl_job() names the last of them (it
 * exists if COMMIT PREPARED is run; that command wakes the scheduler).
 *
 * Notifications.  A state change that this transaction makes (a submit,
 * cancel_ddl, pause_ddl, resume_ddl, a worker's) is announced once it has
 * committed: queued here, handed at commit to the database's scheduler,
 * which sends the NOTIFY in a transaction of its own that does not wait for
 * synchronous standbys (job_shmem.c: JobNoticePost says why).  A prepared
 * transaction's changes are not announced; its job's later states are.
 *
 * Held jobs.  cancel_ddl and pause_ddl (and DROP of a job's target) ask the
 * job's workers to let go of it (job_shmem.h: control_requests) and then
 * wait on the job lock.  The request stands until the end of the
 * (sub)transaction that made it: whether it commits or rolls back, the
 * workers then go back to the job, and see what the transaction decided.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "job_xact.h"
#include "job_shmem.h"

/*
 * A job this transaction submitted, holds, or changed the state of, and the
 * subtransaction that did
 */
typedef struct SessionJob
{
	int64		job_id;
	SubTransactionId subid;
	const char *state;			/* notifications: the new state's name */
	Oid			target_oid;		/* submitted jobs: their target */
} SessionJob;

static List *submitted_jobs = NIL;	/* in TopMemoryContext */
static List *held_jobs = NIL;	/* in TopMemoryContext */
static List *notifications = NIL;	/* in TopMemoryContext */
static int64 last_job_id_before_xact = 0;
static bool wake_at_commit = false;

static List *
RememberJob(List *jobs, int64 job_id)
{
	MemoryContext old_context = MemoryContextSwitchTo(TopMemoryContext);
	SessionJob *entry = palloc(sizeof(SessionJob));

	entry->job_id = job_id;
	entry->subid = GetCurrentSubTransactionId();
	entry->state = NULL;
	entry->target_oid = InvalidOid;
	jobs = lappend(jobs, entry);
	MemoryContextSwitchTo(old_context);
	return jobs;
}

void
JobXactSubmit(int64 job_id, Oid target_oid)
{
	submitted_jobs = RememberJob(submitted_jobs, job_id);
	((SessionJob *) llast(submitted_jobs))->target_oid = target_oid;
	wake_at_commit = true;
}

/* The job the current transaction submitted for this target, or 0 */
int64
JobXactJobOf(Oid target_oid)
{
	ListCell   *lc;

	foreach(lc, submitted_jobs)
	{
		SessionJob *entry = lfirst(lc);

		if (entry->target_oid == target_oid)
			return entry->job_id;
	}
	return 0;
}

/* Has the current transaction submitted jobs? */
bool
JobXactHasSubmitted(void)
{
	return submitted_jobs != NIL;
}

/* The last job this session submitted that exists (or will, at commit) */
int64
JobXactLastJob(void)
{
	if (submitted_jobs != NIL)
		return ((SessionJob *) llast(submitted_jobs))->job_id;
	return last_job_id_before_xact;
}

/* Was this job submitted by the current (uncommitted) transaction? */
bool
JobXactIsSubmitted(int64 job_id)
{
	ListCell   *lc;

	foreach(lc, submitted_jobs)
	{
		if (((SessionJob *) lfirst(lc))->job_id == job_id)
			return true;
	}
	return false;
}

/*
 * NOTIFY background_ddl, '<job_id> <state>' when the current transaction
 * commits (state: a name from CatalogStateName, which lives for the session)
 */
void
JobXactNotify(int64 job_id, const char *state)
{
	notifications = RememberJob(notifications, job_id);
	((SessionJob *) llast(notifications))->state = state;
}

static void
PostNotifications(void)
{
	ListCell   *lc;

	foreach(lc, notifications)
	{
		SessionJob *entry = lfirst(lc);

		JobNoticePost(MyDatabaseId, entry->job_id, entry->state);
	}
	if (notifications != NIL)
		wake_at_commit = true;
}

/*
 * Send the queued announcements of this database's committed state changes
 * (the scheduler, between its passes), in a transaction whose commit waits
 * for no standby.
 */
void
JobXactSendNotices(void)
{
	JobNotice	notices[JOB_NOTICES_PER_DATABASE];
	int			count = JobNoticesTake(MyDatabaseId, notices);

	if (count == 0)
		return;
	StartTransactionCommand();
	(void) set_config_option("synchronous_commit", "local", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	for (int i = 0; i < count; i++)
		Async_Notify(JOB_NOTIFY_CHANNEL,
					 psprintf("%lld %s", (long long) notices[i].job_id, notices[i].state));
	CommitTransactionCommand();
}

/* Wake the scheduler when the current transaction commits */
void
JobXactWakeScheduler(void)
{
	wake_at_commit = true;
}

/*
 * Ask the workers of a job to let go of it until the current
 * (sub)transaction ends, and interrupt what they run.
 */
void
JobXactHold(int64 job_id)
{
	JobSlot *slot;
	bool		has_workers = false;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot = JobSlotFind(MyDatabaseId, job_id, false);
	if (slot != NULL)
	{
		slot->control_requests++;
		slot->control_generation++;
		has_workers = true;
	}
	LWLockRelease(JobShared->lock);
	if (!has_workers)
		return;
	held_jobs = RememberJob(held_jobs, job_id);
	JobSignalWorkers(MyDatabaseId, job_id, true);
}

/* Withdraw the hold on one job and wake its workers */
static void
ReleaseHeldJob(int64 job_id)
{
	JobSlot *slot;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	slot = JobSlotFind(MyDatabaseId, job_id, false);
	if (slot != NULL && slot->control_requests > 0)
		slot->control_requests--;
	LWLockRelease(JobShared->lock);
	JobSignalWorkers(MyDatabaseId, job_id, false);
}

static void
ReleaseAllHeldJobs(void)
{
	ListCell   *lc;

	foreach(lc, held_jobs)
		ReleaseHeldJob(((SessionJob *) lfirst(lc))->job_id);
	list_free_deep(held_jobs);
	held_jobs = NIL;
}

static void
SessionJobsXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			PostNotifications();
			if (wake_at_commit)
				JobWakeScheduler(MyDatabaseId);
			/* FALLTHROUGH */
		case XACT_EVENT_PREPARE:
			last_job_id_before_xact = JobXactLastJob();
			break;
		case XACT_EVENT_ABORT:
			break;
		default:
			return;
	}
	wake_at_commit = false;
	list_free_deep(submitted_jobs);
	submitted_jobs = NIL;
	list_free_deep(notifications);
	notifications = NIL;
	ReleaseAllHeldJobs();
}

/* Remove the entries of an aborted subtransaction; give a committed one's to its parent */
static List *
SubtransactionEnds(List *jobs, SubXactEvent event, SubTransactionId mySubid,
				   SubTransactionId parentSubid, bool release)
{
	ListCell   *lc;

	foreach(lc, jobs)
	{
		SessionJob *entry = lfirst(lc);

		if (entry->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			entry->subid = parentSubid;
		else
		{
			if (release)
				ReleaseHeldJob(entry->job_id);
			jobs = foreach_delete_current(jobs, lc);
			pfree(entry);
		}
	}
	return jobs;
}

static void
SessionJobsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	submitted_jobs = SubtransactionEnds(submitted_jobs, event, mySubid, parentSubid, false);
	notifications = SubtransactionEnds(notifications, event, mySubid, parentSubid, false);
	held_jobs = SubtransactionEnds(held_jobs, event, mySubid, parentSubid, true);
}

void
JobXactInstall(void)
{
	RegisterXactCallback(SessionJobsXactCallback, NULL);
	RegisterSubXactCallback(SessionJobsSubXactCallback, NULL);
}
