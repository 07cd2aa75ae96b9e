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
 * The cut-over also finishes the catch-up (catchup.c), and a query that
 * could not be split into batches is computed entirely inside it, so in
 * both cases the result is exactly the query at this transaction's
 * snapshot, which we record as cutover_snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "commands/matview.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "backfill.h"
#include "compat.h"
#include "capture.h"
#include "catchup.h"
#include "cutover.h"
#include "job_catalog.h"
#include "worker.h"

/*
 * Empty the placeholder, transactionally, as TRUNCATE does: a new
 * relfilenode for it and its TOAST table, and rebuilt (empty) indexes.
 * Caller holds ACCESS EXCLUSIVE on it.
 */
void
TruncatePlaceholder(Relation target)
{
	Oid			toast_oid = target->rd_rel->reltoastrelid;
	ReindexParams reindex_params = {0};

	BgddlSetNewRelFileNumber(target, target->rd_rel->relpersistence);
	if (OidIsValid(toast_oid))
	{
		Relation	toast = relation_open(toast_oid, AccessExclusiveLock);

		BgddlSetNewRelFileNumber(toast, toast->rd_rel->relpersistence);
		relation_close(toast, NoLock);
	}
	reindex_relation(RelationGetRelid(target), REINDEX_REL_PROCESS_TOAST, &reindex_params);
	CommandCounterIncrement();
}

/*
 * Finish a job in one transaction: compute what is left, make the
 * placeholder populated and the job succeeded.
 *
 * A one-batch job computes its whole content here.  A chunked job runs the
 * final catch-up pass here (or, if a change could not be pinned to rows,
 * recomputes everything here).  The transaction is REPEATABLE READ so that
 * everything it reads shares one snapshot, the one recorded as
 * cutover_snapshot: the content equals the query at that snapshot.  It
 * takes no lock on the base tables beyond ACCESS SHARE.
 */
void
CutoverMatView(BgddlJob *job)
{
	bool		single_batch = !OidIsValid(job->driving_oid);
	bool		recompute_all = single_batch;
	JobRoleContext role;
	Relation	target;
	int64		rows = job->rows_done;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	XactIsoLevel = XACT_REPEATABLE_READ;
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, single_batch ?
						   "background_ddl: computing in one batch" :
						   "background_ddl: cutting over");

	/* Nobody can use the placeholder: taking it whole costs no one */
	target = table_open(job->target_oid, AccessExclusiveLock);
	if (!single_batch)
	{
		JobSetPhase(job->id, "cutting over");
		if (CatchupCheckBaseRelations(job) != BASE_UNCHANGED)
			recompute_all = true;
		else if (!CaptureIntact(job))
		{
			ereport(LOG,
					(errmsg("background DDL job " INT64_FORMAT ": a capture trigger was dropped or disabled; recomputing the whole result",
							job->id)));
			recompute_all = true;
		}
		else
			rows += CatchupFinal(job, target, &recompute_all);
		if (recompute_all)
			TruncatePlaceholder(target);
	}
	if (recompute_all)
	{
		JobRoleEnter(job, &role);
		rows = BackfillAll(target, BackfillJobQuery(target));
		JobRoleLeave(&role);
	}

	SetMatViewPopulatedState(target, true);
	table_close(target, NoLock);

	JobFinish(job->id, "succeeded", NULL, true, rows);
	if (job->capture_relids != NIL)
		JobSetCleanupPending(job->id, true);

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
