/*-------------------------------------------------------------------------
 *
 * kind_partitioned_index.c
 *	  Background CREATE [UNIQUE] INDEX on a partitioned table: a variant of
 *	  the index kind (kind_index.c), whose submit chooses it.
 *
 * CREATE INDEX CONCURRENTLY cannot index a partitioned table.  The worker
 * creates the index ON ONLY the table (invalid while it has partitions) in
 * its first transaction, in the placeholder's place, then builds and
 * attaches the partitions' indexes one by one (index_partitions.c), each
 * built as CREATE INDEX CONCURRENTLY builds it: a crash costs one
 * partition's build, and the index becomes valid with the last attach.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "storage/lockdefs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_group.h"
#include "engine/job_run.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "index/index_partitions.h"
#include "kinds/kind_index.h"
#include "kinds/kinds.h"
#include "pg/pg_relation.h"

/* The size of the job: the tree's leaves, counted now */
static void
PartitionedIndexPlan(JobRun *run)
{
	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	run->job.planned = true;
	IndexPartitionsPlan(run, IndexedTable(&run->job));
	if (CatalogKindStateInt(run->job.kind_state, INDEX_STATE_REBUILDS) == 0)
		run->job.strategy = MemoryContextStrdup(JobContext(), STRATEGY_PARTITIONS);
	CatalogJobRecordPlan(&run->job);
	JobStepEnd();
}

/*
 * A partitioned table's index: created ON ONLY the table (invalid while it
 * has partitions) in the placeholder's place, in one transaction, under the
 * SHARE lock that takes on the table (a locking step: writers wait at most
 * lock_timeout for it).  Its OID is recorded with the job in the same
 * transaction.
 */
static void
CreateParentIndexStep(JobRun *run, void *arg)
{
	Oid			table_oid = IndexedTable(&run->job);
	IndexStmt  *stmt;
	ObjectAddress index;

	JobStepLockRelation(table_oid, ShareLock, background_ddl_lock_timeout_ms);
	if (!IndexTableExists(run) || !JobRunTargetExists(run) ||
		get_rel_relkind(run->job.target_oid) != RELKIND_MATVIEW)
		return;
	stmt = IndexStatementToRun(&run->job, get_rel_name(run->job.target_oid));
	stmt->relation->inh = false;
	stmt->concurrent = false;
	PgRelationDrop(run->job.target_oid);
	CommandCounterIncrement();
	index = IndexBuildDefine(&run->job, table_oid, stmt, InvalidOid, InvalidOid);
	run->job.target_oid = index.objectId;
	CatalogJobRecordTarget(run->job.id, index.objectId);
}

/*
 * The parent's index first, then one partition's step at a time, until the
 * index is valid (or stays invalid, as an adopted index may keep it)
 */
static JobStepResult
PartitionedIndexBackfillStep(JobRun *run)
{
	bool		valid;
	bool		is_index;

	if (!IndexCheck(run, &is_index, &valid))
		return JOB_STEP_TARGET_GONE;
	if (!is_index)
	{
		JobRunLockingStep(run, CreateParentIndexStep, NULL, JOB_PHASE_BACKFILLING,
						  "background_ddl: creating the index of the partitioned table");
		return JOB_STEP_MORE;
	}
	if (IndexPartitionsDone(&run->job, valid))
		return JOB_STEP_DONE;
	return IndexPartitionsStep(run, IndexedTable(&run->job));
}

/*
 * The cut-over: a tree held back for it (its indexes invalid once built:
 * JobRunPublishesLater) is marked valid now, by the parts of the cut-over
 * (JobPublishAlone)
 */
static JobStepResult
PartitionedIndexCutOver(JobRun *run)
{
	if (IndexPartitionsHeld(&run->job))
		return JobPublishAlone(run);
	return IndexPublish(run, IndexPartitionsDone(&run->job, false));
}

/*
 * A group's publication: IndexPartitionsCutOverLock, IndexPartitionsPublish
 * (as the job's index is published alone, with the job's phase recorded)
 */
static JobStepResult
PartitionedIndexCutOverPublish(JobRun *run)
{
	JobRunRecordPhase(run, JOB_PHASE_CUTTING_OVER);
	return IndexPartitionsPublish(run);
}

/* ... which, if the tree was not complete any more, goes on with its steps */
static JobStepResult
PartitionedIndexRestartBuild(JobRun *run)
{
	JobStepBegin("background_ddl: checking the partitions", STEP_READ_COMMITTED);
	IndexPartitionsRestart(run);
	JobStepEnd();
	return JOB_STEP_RESTART;
}

/*
 * The view's progress of the job: the leaves done and in all, and the build
 * of the one being indexed, as pg_stat_progress_create_index shows it
 */
static void
PartitionedIndexProgress(const BgddlJob *job, pid_t pid, KindProgress *progress)
{
	IndexBuildProgress build;
	bool		building = pid != 0 && IndexBuildProgressOf(pid, &build);

	IndexPartitionsProgress(job, building ? &build : NULL, progress);
}

const KindRoutine kind_partitioned_index_routine = {
	.name = "CREATE INDEX",
	.variant_key = INDEX_STATE_PARTITIONED,
	.stands_for = OBJECT_INDEX,
	.replaces_placeholder = true,
	.waits_for_older_snapshots = true,
	.cut_over_publishes = true,
	.plan = PartitionedIndexPlan,
	.backfill_step = PartitionedIndexBackfillStep,
	.cut_over = PartitionedIndexCutOver,
	.cut_over_lock = IndexPartitionsCutOverLock,
	.cut_over_publish = PartitionedIndexCutOverPublish,
	.restart_build = PartitionedIndexRestartBuild,
	.writes_to_sources = IndexWritesToTable,
	.progress = PartitionedIndexProgress,
	.gone_reason = IndexGoneReason,
	.discard = IndexPartitionsDiscard,
	.discards_in_any_transaction = IndexDiscardsInAnyTransaction,
	.build_here = IndexBuildHere,
};
