/*-------------------------------------------------------------------------
 *
 * job_run.c
 *	  Helpers for the steps of a running job that every kind uses.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "background_ddl.h"
#include "kind.h"
#include "job_run.h"
#include "job_step.h"

/*
 * Run a step that takes strong locks on base tables (installing or dropping
 * triggers) in its own transaction with lock_timeout =
 * background_ddl.lock_timeout, retrying with backoff until it gets its
 * locks: a queued lock request then never stalls the tables' writers for
 * longer than that timeout.  The phase says "waiting for lock" meanwhile;
 * after JOB_GIVE_BACK_SECONDS the worker gives its slot back (the job asks
 * again later).  What the step records in run->job must be allocated in
 * JobContext().
 */
void
JobRunLockingStep(JobRun *run, LockingStep step, JobPhase phase, const char *activity)
{
	volatile long delay_ms = 10;
	TimestampTz give_back_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   JOB_GIVE_BACK_SECONDS * 1000);

	for (;;)
	{
		MemoryContext step_context;
		volatile bool done = true;

		JobStepBegin(activity, STEP_READ_COMMITTED);
		step_context = CurrentMemoryContext;
		CatalogJobSetPhase(run->job.id, phase);
		(void) set_config_option("lock_timeout",
								 psprintf("%d", background_ddl_lock_timeout_ms),
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(step_context);
		PG_TRY();
		{
			step(run);
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(step_context);
		}
		PG_CATCH();
		{
			ErrorData  *error;

			MemoryContextSwitchTo(step_context);
			error = CopyErrorData();
			if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE || JobControlPending())
				PG_RE_THROW();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(step_context);
			CatalogJobSetPhase(run->job.id, JOB_PHASE_WAITING_FOR_LOCK);
			done = false;
		}
		PG_END_TRY();
		JobStepEnd();
		if (done)
			return;
		if (GetCurrentTimestamp() >= give_back_at)
			JobStepGiveBack(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														JOB_GIVE_BACK_SECONDS * 1000),
							"a lock (asked for with a short lock_timeout, and asked again)");
		JobStepSleep(delay_ms);
		delay_ms = Min(delay_ms * 2, 1000);
	}
}

/*
 * KindSubmit.run_utility for a worker: run a statement the job derives (a
 * placeholder it reserves again) through the ProcessUtility chain, as the
 * current user, in the current transaction.
 */
void
JobRunUtility(struct KindSubmit *submit, PlannedStmt *pstmt)
{
	ProcessUtility(pstmt, submit->query_string, false, PROCESS_UTILITY_SUBCOMMAND,
				   NULL, NULL, None_Receiver, NULL);
}

/* Does the job's target still exist?  Caller is in a transaction. */
bool
JobRunTargetExists(const JobRun *run)
{
	return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(run->job.target_oid));
}

/*
 * In the cut-over transaction: the job succeeded, and its object is now
 * this relation (under its name now: it may have been renamed).
 */
void
JobRunSucceeded(const JobRun *run, Oid object_oid, bool record_cutover_snapshot, int64 rows)
{
	CatalogJobFinish(run->job.id, JOB_STATE_SUCCEEDED, NULL, record_cutover_snapshot, rows,
			  quote_qualified_identifier(get_namespace_name(get_rel_namespace(object_oid)),
										 get_rel_name(object_oid)));
}
