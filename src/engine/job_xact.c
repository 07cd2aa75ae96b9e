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
 * The session's jobs.  A job the session submitted, once committed, stays
 * in the session's list (with what it reads: JobOrder) until a statement of
 * the session finds it ended, or the session cancels it: the session's later
 * statements see it as done (session_order.c).
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

#include "catalog/catalog_types.h"
#include "engine/job_shmem.h"
#include "engine/job_xact.h"

/*
 * A job this transaction submitted, holds, or changed the state of, and the
 * subtransaction that did
 */
typedef struct SessionJob
{
	int64		job_id;
	SubTransactionId subid;
	const char *state;			/* notifications: the new state's name */
	JobOrder   *order;			/* submitted jobs: what they read and build */
} SessionJob;

static List *submitted_jobs = NIL;	/* in TopMemoryContext */
static List *forgotten_jobs = NIL;	/* in TopMemoryContext: cancelled here */
static List *session_orders = NIL;	/* JobOrder, in TopMemoryContext */
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
	entry->order = NULL;
	jobs = lappend(jobs, entry);
	MemoryContextSwitchTo(old_context);
	return jobs;
}

static void
FreeSessionJob(SessionJob *entry)
{
	if (entry->order != NULL)
	{
		list_free(entry->order->sources);
		pfree(entry->order);
	}
	pfree(entry);
}

static void
FreeSessionJobs(List *jobs)
{
	ListCell   *lc;

	foreach(lc, jobs)
		FreeSessionJob(lfirst(lc));
	list_free(jobs);
}

/* A job submitted in the current transaction, with what it reads and builds */
void
JobXactSubmit(const JobOrder *order)
{
	MemoryContext old_context;
	JobOrder   *copy;

	submitted_jobs = RememberJob(submitted_jobs, order->job_id);
	old_context = MemoryContextSwitchTo(TopMemoryContext);
	copy = palloc(sizeof(JobOrder));
	*copy = *order;
	copy->sources = list_copy(order->sources);
	((SessionJob *) llast(submitted_jobs))->order = copy;
	MemoryContextSwitchTo(old_context);
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

		if (entry->order->target_oid == target_oid)
			return entry->job_id;
	}
	return 0;
}

/* The jobs the current transaction submitted (JobOrder), oldest first */
List *
JobXactSubmittedOrders(void)
{
	List	   *orders = NIL;
	ListCell   *lc;

	foreach(lc, submitted_jobs)
		orders = lappend(orders, ((SessionJob *) lfirst(lc))->order);
	return orders;
}

/*
 * The jobs that earlier transactions of this session submitted and that
 * the session has not seen end (JobOrder), oldest first
 */
List *
JobXactSessionOrders(void)
{
	return session_orders;
}

/* Did this session submit the job, and has not seen it end? */
bool
JobXactIsSessionJob(int64 job_id)
{
	ListCell   *lc;

	foreach(lc, session_orders)
	{
		if (((JobOrder *) lfirst(lc))->job_id == job_id)
			return true;
	}
	return JobXactIsSubmitted(job_id);
}

/* The session has seen this job end: its statements need not wait for it */
void
JobXactForget(int64 job_id)
{
	ListCell   *lc;

	foreach(lc, session_orders)
	{
		JobOrder   *order = lfirst(lc);

		if (order->job_id == job_id)
		{
			session_orders = foreach_delete_current(session_orders, lc);
			list_free(order->sources);
			pfree(order);
		}
	}
}

/* The current transaction cancels this job: forget it if it commits */
void
JobXactForgetAtCommit(int64 job_id)
{
	forgotten_jobs = RememberJob(forgotten_jobs, job_id);
}

/* Committed: the transaction's jobs are the session's, but those it cancelled */
static void
KeepSubmittedJobs(void)
{
	MemoryContext old_context = MemoryContextSwitchTo(TopMemoryContext);
	ListCell   *lc;

	foreach(lc, submitted_jobs)
	{
		SessionJob *entry = lfirst(lc);

		session_orders = lappend(session_orders, entry->order);
		entry->order = NULL;
	}
	MemoryContextSwitchTo(old_context);
	foreach(lc, forgotten_jobs)
		JobXactForget(((SessionJob *) lfirst(lc))->job_id);
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
 * commits: the job's state changed to this, in it
 */
void
JobXactNotify(int64 job_id, JobState state)
{
	notifications = RememberJob(notifications, job_id);
	((SessionJob *) llast(notifications))->state = CatalogStateName(state);
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
	FreeSessionJobs(held_jobs);
	held_jobs = NIL;
}

static void
SessionJobsXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			/*
			 * Sessions waiting for a job look again now that its new state
			 * is committed: not when its worker exits, which may first clean
			 * up (waiting for a writer of a table) or not notice a cancel yet
			 */
			if (notifications != NIL)
				ConditionVariableBroadcast(&JobShared->job_finished);
			PostNotifications();
			if (wake_at_commit)
				JobWakeScheduler(MyDatabaseId);
			KeepSubmittedJobs();
			/* FALLTHROUGH */
		case XACT_EVENT_PREPARE:
			/* A prepared transaction's jobs are no longer this session's */
			last_job_id_before_xact = JobXactLastJob();
			break;
		case XACT_EVENT_ABORT:
			break;
		default:
			return;
	}
	wake_at_commit = false;
	FreeSessionJobs(submitted_jobs);
	submitted_jobs = NIL;
	FreeSessionJobs(forgotten_jobs);
	forgotten_jobs = NIL;
	FreeSessionJobs(notifications);
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
			FreeSessionJob(entry);
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
	forgotten_jobs = SubtransactionEnds(forgotten_jobs, event, mySubid, parentSubid, false);
	notifications = SubtransactionEnds(notifications, event, mySubid, parentSubid, false);
	held_jobs = SubtransactionEnds(held_jobs, event, mySubid, parentSubid, true);
}

void
JobXactInstall(void)
{
	RegisterXactCallback(SessionJobsXactCallback, NULL);
	RegisterSubXactCallback(SessionJobsSubXactCallback, NULL);
}
