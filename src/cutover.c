/*-------------------------------------------------------------------------
 *
 * cutover.c
 *	  The end of a job: its result becomes visible at once, or everything it
 *	  created goes away.
 *
 * A background CREATE MATERIALIZED VIEW fills the placeholder's own heap
 * while the placeholder is unpopulated (so unreadable).  The cut-over is a
 * single transaction that takes ACCESS EXCLUSIVE on the placeholder (nobody
 * can be using it: it is unreadable until now), marks it populated and marks
 * the job succeeded.  Both commit together: the view is either unpopulated
 * with a job that has not succeeded, or complete with a job that has.
 *
 * A query that could not be split into batches is computed inside this same
 * transaction, so its result is exactly the query at this transaction's
 * snapshot, which we record as cutover_snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "commands/matview.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "backfill.h"
#include "cutover.h"
#include "job_catalog.h"
#include "worker.h"

/*
 * Finish a job: compute the content first if the job runs in one batch,
 * then make the placeholder populated and the job succeeded.  Runs its own
 * transaction.
 */
void
CutoverMatView(BgddlJob *job)
{
	bool		single_batch = !OidIsValid(job->driving_oid);
	JobRoleContext role;
	Relation	target;
	int64		rows = -1;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, single_batch ?
						   "background_ddl: computing in one batch" :
						   "background_ddl: cutting over");

	if (!single_batch)
		JobSetPhase(job->id, "cutting over");
	target = table_open(job->target_oid, RowExclusiveLock);
	if (single_batch)
	{
		JobRoleEnter(job, &role);
		rows = BackfillAll(target, BackfillJobQuery(target));
		JobRoleLeave(&role);
	}

	LockRelationOid(job->target_oid, AccessExclusiveLock);
	SetMatViewPopulatedState(target, true);
	table_close(target, NoLock);

	JobFinish(job->id, "succeeded", NULL, single_batch, rows);

	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Drop the placeholder of a job that will not succeed.  RESTRICT: if the
 * user built something on it, the error says what.  Caller is in a
 * transaction.
 */
void
DropPlaceholder(Oid target_oid)
{
	ObjectAddress placeholder;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(target_oid)))
		return;
	ObjectAddressSet(placeholder, RelationRelationId, target_oid);
	performDeletion(&placeholder, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
}
