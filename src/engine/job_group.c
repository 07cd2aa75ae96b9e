/*-------------------------------------------------------------------------
 *
 * job_group.c
 *	  Jobs published together: a group.
 *
 * The jobs that one transaction submits under one
 * background_ddl.cutover_group are built each by its own worker, as any
 * job.  A job that is built and caught up, and whose own cut-over
 * conditions hold (complete_ddl, its window, fewer writes), marks itself
 * ready for its group and goes on keeping itself caught up.  The job that
 * finds the others all ready publishes the group: the others' workers see
 * that at their next look (within a second) and hand their jobs over (they
 * let go of them until the end of the group, and hold nothing), and the
 * publisher then runs every job's cut-over in one transaction: all the
 * jobs' locks, then one snapshot, then each job's last changes and
 * publication.  Readers see all of the group or none of it.
 *
 * The publication is crash-safe as any cut-over: its transaction commits
 * every job as succeeded, or none.  A publisher that dies leaves the others
 * handed over to it; its next worker publishes again.  While it publishes it
 * holds the others' job locks as their worker would, so that a control
 * function (cancel_ddl) waits for the publication and then finds the job
 * ended.
 *
 * A job of a group that fails or is cancelled cancels the others
 * (JobGroupCancel): nothing of the group is published.  A job whose build
 * must start over at the publication (its tables were rewritten) restarts,
 * and the group waits for it again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "catalog/catalog_job.h"
#include "engine/job_group.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "engine/job_xact.h"
#include "engine/kind.h"

/* How often a publisher looks whether the group's jobs are handed over */
#define GROUP_LOOK_MS	200

/* "12, 13" of a list of job ids (int64 *) */
static char *
JobIdsText(List *ids)
{
	StringInfoData text;
	ListCell   *lc;

	initStringInfo(&text);
	foreach(lc, ids)
		appendStringInfo(&text, "%s%lld", text.len > 0 ? ", " : "", (long long) *(int64 *) lfirst(lc));
	return text.data;
}

/*
 * The job is ready for its group (its own cut-over conditions hold): mark
 * it so.  Returns once its group is being published (job.published_by: by
 * this job or another).  Until then its worker gives it back for
 * JOB_GIVE_BACK_SECONDS at a time, as the group may have more jobs than
 * there are workers; its next worker catches up and looks again.  (That
 * wait is not counted in its waited: the hand-over ends it early.)
 */
void
JobGroupReady(JobRun *run)
{
	List	   *not_ready;
	char	   *waiting_for = NULL;

	JobStepBegin("background_ddl: ready for its group", STEP_READ_COMMITTED);
	run->job.published_by = CatalogGroupReady(run->job.id, &not_ready);
	if (run->job.published_by == 0)
	{
		JobRunRecordPhase(run, JOB_PHASE_READY);
		waiting_for = MemoryContextStrdup(JobContext(),
										  psprintf("the other jobs of its group \"%s\" to be built: %s",
												   run->job.cutover_group, JobIdsText(not_ready)));
	}
	JobStepEnd();
	if (waiting_for == NULL)
		return;
	JobStepGiveBack(TimestampTzPlusMilliseconds(GetCurrentTimestamp(), JOB_GIVE_BACK_SECONDS * 1000),
					waiting_for, JOB_WAIT_NONE, true);
}

/*
 * Another job publishes the group: let go of this one until the group has
 * been published (or cancelled), holding nothing
 */
void
JobGroupHandOver(JobRun *run)
{
	JobStepBegin("background_ddl: handing the job over to its group", STEP_READ_COMMITTED);
	CatalogJobLetGo(run->job.id, DT_NOEND,
					psprintf("the publication of its group \"%s\" by job %lld",
							 run->job.cutover_group, (long long) run->job.published_by),
					JOB_WAIT_NONE);
	JobStepEnd();
	ereport(DEBUG1,
			(errmsg("background DDL job %lld handed over to job %lld, which publishes its group",
					(long long) run->job.id, (long long) run->job.published_by)));
}

/*
 * The group's other jobs are cancelled, in the current transaction,
 * because job ended (failed or cancelled: ended_as): announced, and their
 * workers told to let go (the next worker of each removes what it made),
 * but own_job's (the caller's worker, or 0).
 */
void
JobGroupCancel(const BgddlJob *job, JobState ended_as, int64 own_job)
{
	List	   *cancelled;
	ListCell   *lc;

	if (job->group_id == 0)
		return;
	cancelled = CatalogGroupCancel(job->id,
								   psprintf(ended_as == JOB_STATE_FAILED ?
											"job %lld of its group \"%s\" failed" :
											"job %lld of its group \"%s\" was cancelled",
											(long long) job->id, job->cutover_group));
	foreach(lc, cancelled)
	{
		int64		id = *(int64 *) lfirst(lc);

		JobXactNotify(id, JOB_STATE_CANCELLING);
		if (id != own_job)
			JobXactHold(id);
	}
	JobXactWakeScheduler();
}

/* Take or release the job locks of the group's jobs but this one */
static void
LockOthers(JobRun *run, List *members, bool lock)
{
	ListCell   *lc;

	foreach(lc, members)
	{
		int64		id = *(int64 *) lfirst(lc);
		LOCKTAG		tag;

		if (id == run->job.id)
			continue;
		JobLockTagSet(&tag, MyDatabaseId, id);
		if (lock)
			(void) LockAcquire(&tag, JOB_LOCK_WORKER, true, false);
		else
			LockRelease(&tag, JOB_LOCK_WORKER, true);
	}
}

/*
 * Wait until the group's other jobs are handed over.  Returns the group's
 * jobs (int64 *, by id), or NIL if one of them ended or is being cancelled:
 * the group is cancelled.
 */
static List *
AwaitHandOver(JobRun *run)
{
	for (;;)
	{
		List	   *members;
		List	   *pending;
		List	   *paused;
		bool		ended;
		char	   *waiting_for;

		JobStepBegin("background_ddl: looking at its group", STEP_READ_COMMITTED);
		MemoryContextSwitchTo(JobContext());
		members = CatalogGroupMembers(run->job.id, &pending, &paused, &ended);
		JobStepEnd();
		if (ended)
			return NIL;
		if (pending == NIL)
		{
			JobStepWaitingFor(JOB_WAIT_CUTOVER, NULL);
			return members;
		}
		waiting_for = psprintf("%s %s of its group \"%s\" to be handed over to it%s%s%s",
							   list_length(pending) == 1 ? "job" : "jobs",
							   JobIdsText(pending), run->job.cutover_group,
							   paused != NIL ? "; paused: " : "",
							   paused != NIL ? JobIdsText(paused) : "",
							   paused != NIL ? " (resume_ddl resumes a job)" : "");
		JobStepWaitingFor(JOB_WAIT_CUTOVER, waiting_for);
		/* (shown from shared memory: a long wait leaks nothing) */
		pfree(waiting_for);
		/* (pending's and paused's cells point to the same ids) */
		list_free_deep(members);
		list_free(pending);
		list_free(paused);
		JobStepSleep(GROUP_LOOK_MS);
	}
}

/* Are the group's other jobs (still) handed over to run's?  Caller holds them. */
static bool
StillHandedOver(JobRun *run)
{
	List	   *pending;
	bool		ended;

	JobStepBegin("background_ddl: looking at its group", STEP_READ_COMMITTED);
	(void) CatalogGroupMembers(run->job.id, &pending, NULL, &ended);
	JobStepEnd();
	return pending == NIL && !ended;
}

/* The job row of member (again), as its worker loads it */
static void
ReloadMember(JobRun *member, const char *activity)
{
	JobStepBegin(activity, STEP_READ_COMMITTED);
	MemoryContextSwitchTo(JobContext());
	if (!CatalogJobLoad(member->job.id, &member->job, true))
		elog(ERROR, "background DDL job %lld of a group does not exist", (long long) member->job.id);
	JobStepEnd();
}

/* A job of the group as this worker runs it for the publication */
static JobRun *
LoadMember(int64 job_id)
{
	JobRun	   *member = MemoryContextAllocZero(JobContext(), sizeof(JobRun));

	member->job.id = job_id;
	ReloadMember(member, "background_ddl: loading a job of its group");
	member->claimed = true;
	member->routine = KindRoutineForJob(&member->job);
	if (member->routine->start != NULL)
		member->routine->start(member);
	return member;
}

/*
 * One transaction: every job's cut-over locks (by job id), one snapshot,
 * then each job's last changes and publication, then what their kinds do
 * after all of them (cut_over_finish).  Returns JOB_STEP_DONE once
 * committed, or what stopped it (the step undone) and in *stopped the job
 * it stopped at.
 */
static JobStepResult
PublishTogether(List *runs, JobRun **stopped)
{
	JobStepResult result = JOB_STEP_DONE;
	ListCell   *lc;

	JobPublishPhase(JOB_PHASE_CUTTING_OVER);
	JobStepBegin("background_ddl: publishing its group", STEP_REPEATABLE_READ_LATER);
	foreach(lc, runs)
	{
		JobRun	   *member = lfirst(lc);

		member->routine->cut_over_lock(member);
	}
	JobStepTakeSnapshot();
	foreach(lc, runs)
	{
		*stopped = lfirst(lc);
		result = (*stopped)->routine->cut_over_publish(*stopped);
		if (result != JOB_STEP_DONE)
		{
			JobStepAbort();
			return result;
		}
	}
	foreach(lc, runs)
	{
		JobRun	   *member = lfirst(lc);

		if (member->routine->cut_over_finish != NULL)
			member->routine->cut_over_finish(member);
	}
	JobStepHoldPoint("publishing its group: before its commit");
	/* The others' capture triggers: their next workers drop them */
	JobXactWakeScheduler();
	JobStepEnd();
	return JOB_STEP_DONE;
}

/*
 * Publish the group (with what stopped the publication, and the job it
 * stopped at); caller holds the others
 */
static JobStepResult
Publish(JobRun *run, List *members)
{
	List	   *runs = NIL;
	JobRun	   *stopped = NULL;
	JobStepResult result;
	TimestampTz started;
	ListCell   *lc;

	/* A control function may have come between the look and the locks */
	if (!StillHandedOver(run))
		return JOB_STEP_MORE;
	foreach(lc, members)
	{
		int64		id = *(int64 *) lfirst(lc);

		runs = lappend(runs, id == run->job.id ? run : LoadMember(id));
	}
	JobStepHoldPoint("publishing its group");
	started = GetCurrentTimestamp();
	result = PublishTogether(runs, &stopped);
	/* What the undone publication changed of its job is undone too */
	if (result != JOB_STEP_DONE)
		ReloadMember(run, "background_ddl: reloading its job");
	if (result == JOB_STEP_DONE)
		ereport(LOG,
				(errmsg("background DDL job %lld published its group \"%s\": jobs %s, in %.1f ms",
						(long long) run->job.id, run->job.cutover_group, JobIdsText(members),
						(GetCurrentTimestamp() - started) / 1000.0)));
	else if (result == JOB_STEP_TARGET_GONE && stopped != run)
	{
		/*
		 * What it publishes is gone (its target, its constraint): it is
		 * cancelled, and the group with it
		 */
		const char *why = stopped->gone_reason != NULL ? stopped->gone_reason : "the target was dropped";
		JobError	error = {why, NULL, NULL, NULL};

		JobStepBegin("background_ddl: cancelling its group", STEP_READ_COMMITTED);
		CatalogJobSetState(stopped->job.id, JOB_STATE_CANCELLING);
		CatalogJobRecordError(stopped->job.id, &error, false);
		JobXactNotify(stopped->job.id, JOB_STATE_CANCELLING);
		JobGroupCancel(&stopped->job, JOB_STATE_CANCELLED, run->job.id);
		JobStepEnd();
		run->gone_reason = psprintf("job %lld of its group \"%s\" was cancelled: %s",
									(long long) stopped->job.id, run->job.cutover_group, why);
	}
	else if (result == JOB_STEP_RESTART)
	{
		/* Restarted before the others get workers again, from its job row */
		if (stopped != run)
			ReloadMember(stopped, "background_ddl: restarting a job of its group");
		if (stopped->routine->restart_build != NULL)
			(void) stopped->routine->restart_build(stopped);
		JobStepBegin("background_ddl: releasing its group", STEP_READ_COMMITTED);
		CatalogGroupRelease(run->job.id);
		JobXactWakeScheduler();
		JobStepEnd();
		run->job.published_by = 0;
	}
	return result;
}

/*
 * The cut-over of one job by the parts of its kind's cut-over
 * (cut_over_lock, cut_over_publish), as a group of one: for a kind that
 * held back what it built (an index left invalid) until its cut-over.
 * Returns as the kind's cut-over would; a restart is recorded
 * (restart_build) once the step is undone.
 */
JobStepResult
JobPublishAlone(JobRun *run)
{
	JobRun	   *stopped = NULL;
	JobStepResult result;

	JobStepHoldPoint("cutting over");
	result = PublishTogether(list_make1(run), &stopped);
	if (result != JOB_STEP_DONE)
		ReloadMember(run, "background_ddl: reloading its job");
	if (result == JOB_STEP_RESTART && run->routine->restart_build != NULL)
		(void) run->routine->restart_build(run);
	return result;
}

/*
 * Publish the group of run's job, whose worker publishes it
 * (job.published_by): once the others are handed over, all of it in one
 * transaction, holding the others meanwhile.  Returns JOB_STEP_DONE once
 * published (this job succeeded; the others' next workers clean up after
 * them); JOB_STEP_RESTART if a job's build restarted (the group waits for
 * it again); JOB_STEP_MORE to try again (a cut-over asked for it, or a
 * control function came first); JOB_STEP_TARGET_GONE if the group is
 * cancelled (run->gone_reason says why, NULL: this job's target was
 * dropped).
 */
JobStepResult
JobGroupPublish(JobRun *run)
{
	List	   *members = AwaitHandOver(run);
	JobStepResult result = JOB_STEP_MORE;

	if (members == NIL)
	{
		run->gone_reason = psprintf("its group \"%s\" is cancelled", run->job.cutover_group);
		return JOB_STEP_TARGET_GONE;
	}
	JobStepHoldPoint("publishing its group: before its locks");
	LockOthers(run, members, true);
	PG_TRY();
	{
		result = Publish(run, members);
	}
	PG_FINALLY();
	{
		LockOthers(run, members, false);
	}
	PG_END_TRY();
	return result;
}
