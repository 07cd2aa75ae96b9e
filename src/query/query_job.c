/*-------------------------------------------------------------------------
 *
 * query_job.c
 *	  The life of a job whose content is a query's result.
 *
 * A materialized view, a CREATE TABLE AS table and a REFRESH all compute a
 * query (the view rule of rule_relid, bound to OIDs at submit) into a
 * content relation (content_oid), then publish it.  This file runs that
 * computation in the phases of kind.h:
 *
 *	plan		query_decompose.c decides: chunks of a driving table, or one
 *				batch
 *	backfill	install the capture triggers (capture_trigger.c), recording
 *				the driving table's size under the lock that installs them;
 *				then one step per chunk, each checkpointed
 *	catch up	passes over the dirty log (query_catchup.c), while they get
 *				shorter; or, when the writers' changes spread over most of
 *				the table, none: the content is emptied and left to the
 *				cut-over (LeaveAllToCutOver)
 *	cut over	the last pass at the cut-over snapshot, or, for one batch,
 *				after an uncaptured mark or when the content was left to it,
 *				the whole query; then the kind publishes the content, in the
 *				same transaction
 *	clean up	after the end: drop the capture triggers
 *
 * and, when the job fails or is cancelled, removes what every query job
 * leaves (QueryJobDiscard) before the kind removes its own objects.
 *
 * Before every step the sources are checked: a dropped target ends the job;
 * a rewritten driving table or content relation (every tuple id changed)
 * restarts the build; a rewritten other table leaves a whole_table mark
 * (the catch-up recomputes every row, in batches); capture triggers that a
 * superuser changed leave an uncaptured mark, so the cut-over recomputes
 * everything.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_rewrite.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/readfuncs.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "rewrite/rewriteSupport.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "capture/capture_log.h"
#include "capture/capture_trigger.h"
#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_replica_lag.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "pg/pg_compat.h"
#include "pg/pg_heap_swap.h"
#include "pg/pg_relation.h"
#include "query/query_backfill.h"
#include "query/query_column_change.h"
#include "query/query_catchup.h"
#include "query/query_decompose.h"
#include "query/query_driving.h"
#include "query/query_job.h"
#include "query/query_partial_agg.h"

#define CHUNK_BLOCKS_INITIAL	64
#define CHUNK_BLOCKS_MAX		(1 << 20)
#define CATCHUP_ROWS_INITIAL	256
#define CATCHUP_ROWS_MAX		100000

/* Helpers leave while writers log more marks per second than this */
#define HELPER_QUIET_MARKS_PER_SECOND	200
#define HELPER_BACKOFF_MS				30000

/*
 * Catch-up passes stop once one is as short as a batch, or no shorter than
 * the one before (QueryJobCatchUp), or after this many (but while the job
 * keeps caught up for a manual cut-over: JobRun.keeping_up)
 */
#define CATCHUP_MAX_PASSES		20

/* How often the first worker counts the backlog while it backfills */
#define BACKLOG_COUNT_INTERVAL_MS	5000

/*
 * How long a rewrite's cut-over asks for its table's ACCESS EXCLUSIVE lock
 * without queueing (JobStepLockRelation), as REFRESH's swap does
 */
#define REWRITE_LOCK_PATIENCE_MS	30000

/*
 * The query run's state that lives with the job (its kind_state), read at
 * the start of a run and written with the job's row
 */
#define STATE_DRIVING_OID		"driving_oid"
#define STATE_HIDDEN_OID		"hidden_oid"
#define STATE_STAGING_OID		"staging_oid"
#define STATE_CONTENT_FILENODE	"content_filenode"
#define STATE_CATCHUP_PASSES	"catchup_passes"
#define STATE_ROWS_RECOMPUTED	"rows_recomputed"
#define STATE_RECOMPUTE_ALL		"recompute_all"
#define STATE_DRIVING			"driving"
#define STATE_ORDER_STAGE		"order_stage"
#define STATE_ORDER_CHUNKS		"order_chunks"
#define STATE_ORDER_BOUND		"order_bound"
#define STATE_ORDER_KEY_ROWS	"order_key_rows"

/*
 * A backfill in an index's order regroups its pairs into chunks of this
 * many blocks, about this many pairs in a step
 */
#define REGROUP_CHUNK_BLOCKS	1024
#define REGROUP_STEP_PAIRS		(4 * 1024 * 1024)

static void
ReadQueryState(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	const Jsonb *state = run->job.kind_state;

	q->driving_oid = (Oid) CatalogKindStateInt(state, STATE_DRIVING_OID);
	q->staging_oid = (Oid) CatalogKindStateInt(state, STATE_STAGING_OID);
	q->content_filenode = (Oid) CatalogKindStateInt(state, STATE_CONTENT_FILENODE);
	q->catchup_passes = (int32) CatalogKindStateInt(state, STATE_CATCHUP_PASSES);
	q->rows_recomputed = CatalogKindStateInt(state, STATE_ROWS_RECOMPUTED);
	q->recompute_at_cutover = CatalogKindStateInt(state, STATE_RECOMPUTE_ALL) != 0;
	q->order_index = (Oid) CatalogKindStateInt(state, QUERY_STATE_ORDER_INDEX);
	q->order_stage = (QueryOrderStage) CatalogKindStateInt(state, STATE_ORDER_STAGE);
	q->order_chunks = (int32) CatalogKindStateInt(state, STATE_ORDER_CHUNKS);
	q->order_key_rows = CatalogKindStateInt(state, STATE_ORDER_KEY_ROWS);
	if (CatalogKindStateHas(state, STATE_ORDER_BOUND))
	{
		MemoryContext old_context = MemoryContextSwitchTo(JobContext());

		q->order_bound = (List *) stringToNode(CatalogKindStateText(state, STATE_ORDER_BOUND));
		MemoryContextSwitchTo(old_context);
	}
	if (OidIsValid(q->driving_oid))
	{
		MemoryContext old_context = MemoryContextSwitchTo(JobContext());

		q->driving = QueryDrivingParse(q->driving_oid, CatalogKindStateText(state, STATE_DRIVING),
									   run->job.work_total);
		MemoryContextSwitchTo(old_context);
	}
}

/*
 * The view's progress of a query job (the progress routine of the query
 * kinds): its catch-up passes and the rows they recomputed, once the job
 * has recorded them
 */
void
QueryJobProgress(const BgddlJob *job, pid_t pid, KindProgress *progress)
{
	if (!CatalogKindStateHas(job->kind_state, STATE_CATCHUP_PASSES))
		return;
	progress->catchup_passes = CatalogKindStateInt(job->kind_state, STATE_CATCHUP_PASSES);
	progress->rows_recomputed = CatalogKindStateInt(job->kind_state, STATE_ROWS_RECOMPUTED);
}

/* Put the query run's state into the job's kind_state (before recording it) */
static void
WriteQueryState(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);

	CatalogKindStateSetInt(&run->job.kind_state, STATE_DRIVING_OID, q->driving_oid);
	CatalogKindStateSetInt(&run->job.kind_state, STATE_STAGING_OID, q->staging_oid);
	CatalogKindStateSetInt(&run->job.kind_state, STATE_CONTENT_FILENODE, q->content_filenode);
	CatalogKindStateSetInt(&run->job.kind_state, STATE_CATCHUP_PASSES, q->catchup_passes);
	CatalogKindStateSetInt(&run->job.kind_state, STATE_ROWS_RECOMPUTED, q->rows_recomputed);
	CatalogKindStateSetInt(&run->job.kind_state, STATE_RECOMPUTE_ALL, q->recompute_at_cutover);
	if (q->driving != NULL)
		CatalogKindStateSetText(&run->job.kind_state, STATE_DRIVING, QueryDrivingFormat(q->driving));
	if (OidIsValid(q->order_index))
	{
		CatalogKindStateSetInt(&run->job.kind_state, STATE_ORDER_STAGE, q->order_stage);
		CatalogKindStateSetInt(&run->job.kind_state, STATE_ORDER_CHUNKS, q->order_chunks);
		CatalogKindStateSetInt(&run->job.kind_state, STATE_ORDER_KEY_ROWS, q->order_key_rows);
		CatalogKindStateSetText(&run->job.kind_state, STATE_ORDER_BOUND,
								nodeToString(q->order_bound));
	}
}

/* Has the job installed its capture (the chunked backfill has begun)? */
static bool
Captured(const QueryRun *q)
{
	return q->capture.job_id != 0;
}

/* The relfilenodes of the given relations (taking ACCESS SHARE on each) */
static List *
RelationFileNumbers(List *relids)
{
	List	   *filenodes = NIL;
	ListCell   *lc;

	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), AccessShareLock);

		filenodes = lappend_oid(filenodes, PgRelFileNumber(rel));
		relation_close(rel, NoLock);
	}
	return filenodes;
}

static Oid
RelationFileNumberOf(Oid relid)
{
	return linitial_oid(RelationFileNumbers(list_make1_oid(relid)));
}

/* Copy a list of Oids into the job's memory */
static List *
JobList(List *oids)
{
	MemoryContext old_context = MemoryContextSwitchTo(JobContext());
	List	   *copy = list_copy(oids);

	MemoryContextSwitchTo(old_context);
	return copy;
}

/*
 * The relation whose view rule's own entries the decomposition leaves out;
 * none when the query reads a table's rows (that table is its source)
 */
static Oid
DecomposedFor(const QueryRun *q)
{
	return q->rewrites_table ? InvalidOid : q->rule_relid;
}

/* The strategy of a table's rewrite in the order of one of its indexes */
char *
QueryJobOrderStrategy(Oid order_index)
{
	return psprintf("table rewritten a chunk of rows at a time in the order of index \"%s\", changed rows captured",
					get_rel_name(order_index));
}

static void
JobSetStrategy(JobRun *run, const QueryDecomposition *decomposition)
{
	MemoryContext old_context = MemoryContextSwitchTo(JobContext());
	Oid			order_index = QueryRunOf(run)->order_index;

	run->job.strategy = OidIsValid(order_index) ? QueryJobOrderStrategy(order_index) :
		QueryStrategy(decomposition);
	QueryRunOf(run)->driving_oid = decomposition->driving_oid;
	MemoryContextSwitchTo(old_context);
}

/*
 * Set up a run of a query job: the query is the view rule of rule_relid,
 * its rows go to content_oid, and it runs as query_role.  A resumed job's
 * backfill goes on after its last checkpointed chunk, with the gaps below
 * it to fill first, and its row counts every chunk committed before (a
 * worker that crashed may have kept some counts to itself).  Caller is
 * between steps.
 */
void
QueryJobStart(JobRun *run, Oid rule_relid, Oid content_oid, Oid query_role)
{
	QueryRun   *q = MemoryContextAllocZero(JobContext(), sizeof(QueryRun));
	BgddlJob	latest;
	MemoryContext old_context;

	run->kind_run = q;
	q->rule_relid = rule_relid;
	q->content_oid = content_oid;
	q->query_role = query_role;
	q->chunk_blocks = CHUNK_BLOCKS_INITIAL;
	q->catchup_rows = CATCHUP_ROWS_INITIAL;
	ReadQueryState(run);

	JobStepBegin("background_ddl: resuming", STEP_READ_COMMITTED);
	q->rewrites_table = get_rel_relkind(rule_relid) == RELKIND_RELATION;
	old_context = MemoryContextSwitchTo(JobContext());
	(void) CaptureRowLoad(run->job.id, &q->capture);

	/*
	 * The driving table's blocks as recorded with this capture (the job row
	 * this worker read may be older: a helper's, read before the capture
	 * was installed)
	 */
	if (Captured(q) && CatalogJobLoad(run->job.id, &latest, true))
		q->driving = QueryDrivingParse(q->driving_oid,
									   CatalogKindStateText(latest.kind_state, STATE_DRIVING),
									   latest.work_total);
	MemoryContextSwitchTo(old_context);
	JobStepEnd();
	if (!Captured(q) || run->helper)
		return;

	/* Helpers of a worker before us may still be in their chunks */
	JobChunksClose(&q->chunks, false);
	JobStepBegin("background_ddl: resuming", STEP_READ_COMMITTED);
	JobChunksResume(&q->chunks, CaptureChunkRanges(run->job.id));
	CaptureRecordBackfillTotals(&run->job, true);
	JobStepEnd();
	JobPublishProgress(run->job.rows_done, run->job.chunks_done, run->job.progress,
					   run->job.rows_total, false);
}

/* Decide how the job's content is computed, and record it */
void
QueryJobPlan(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	Relation	rule_relation;
	Query	   *query;
	QueryDecomposition decomposition;

	JobStepHoldPoint("planning");
	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	JobRunRecordPhase(run, JOB_PHASE_PLANNING);
	rule_relation = table_open(q->rule_relid, AccessShareLock);
	JobQueryBegin(q->query_role, false);
	query = QueryOfRule(rule_relation, q->column_changes, q->query_role, run->job.started_at);
	QueryDecompose(query, DecomposedFor(q), q->query_role, InvalidOid, q->rewrites_table,
				   &decomposition);
	run->job.rows_total = QueryEstimateRows(query);
	JobQueryEnd();
	table_close(rule_relation, NoLock);

	JobSetStrategy(run, &decomposition);
	q->content_filenode = RelationFileNumberOf(q->content_oid);
	WriteQueryState(run);
	CatalogJobRecordPlan(&run->job);
	JobPublishProgress(0, 0, run->job.progress, run->job.rows_total,
					   !OidIsValid(q->driving_oid));
	JobStepEnd();
}

/*
 * Install the capture triggers (a LockingStep): on every base relation (for
 * a partitioned driving table, on the partitions the query reads), after
 * checking again that the job's role may; the driving table's size is
 * measured under the locks the install holds, so every row beyond it was
 * written by a transaction that fires the trigger.  A partitioned driving
 * table is locked first (and the partitioned tables below it, parents
 * first), in a mode that keeps partitions from being attached or detached
 * until the install commits.  If capture is no longer
 * allowed, the job falls back to one batch.
 */
static void
InstallCaptureStep(JobRun *run, void *arg)
{
	QueryRun   *q = QueryRunOf(run);
	Relation	rule_relation;
	Query	   *query;
	QueryDecomposition decomposition;
	Query	   *chunk_query = NULL;
	List	   *relids = NIL;
	List	   *join_attnums = NIL;
	List	   *tree = NIL;
	ListCell   *lc;
	MemoryContext old_context;

	JobStepLockTree(q->driving_oid, ShareRowExclusiveLock, background_ddl_lock_timeout_ms);
	rule_relation = table_open(q->rule_relid, AccessShareLock);
	JobQueryBegin(q->query_role, false);
	query = QueryOfRule(rule_relation, q->column_changes, q->query_role, run->job.started_at);
	QueryDecompose(query, DecomposedFor(q), q->query_role, q->driving_oid, q->rewrites_table,
				   &decomposition);
	if (decomposition.partial)
		chunk_query = QueryPartialAggChunk(query);
	JobQueryEnd();
	table_close(rule_relation, NoLock);

	if (decomposition.driving_rtindex == 0)
	{
		ereport(LOG,
				(errmsg("background DDL job %lld runs in one batch: %s",
						(long long) run->job.id, decomposition.reason)));
		JobSetStrategy(run, &decomposition);
		WriteQueryState(run);
		CatalogJobRecordPlan(&run->job);
		return;
	}

	/* The driving table's rows are logged by the partitions read, or itself */
	foreach(lc, decomposition.leaves)
	{
		relids = lappend_oid(relids, lfirst_oid(lc));
		join_attnums = lappend_int(join_attnums, 0);
	}
	foreach(lc, decomposition.relids)
	{
		QueryJoinKey *key = QueryJoinKeyOf(decomposition.join_keys, lfirst_oid(lc));

		if (decomposition.leaves != NIL && lfirst_oid(lc) == decomposition.driving_oid)
			continue;
		relids = lappend_oid(relids, lfirst_oid(lc));
		join_attnums = lappend_int(join_attnums, key != NULL ? key->attnum : 0);
	}
	if (decomposition.leaves != NIL)
		tree = QueryDrivingTreeLeaves(decomposition.driving_oid, AccessShareLock);
	foreach(lc, decomposition.leaves != NIL ? decomposition.leaves :
			list_make1_oid(decomposition.driving_oid))
		JobStepLockRelation(lfirst_oid(lc), ShareRowExclusiveLock, background_ddl_lock_timeout_ms);
	/*
	 * ... then every table that gets triggers, as CREATE TRIGGER locks them
	 * (those above are held already)
	 */
	foreach(lc, relids)
		JobStepLockRelation(lfirst_oid(lc), ShareRowExclusiveLock, background_ddl_lock_timeout_ms);

	old_context = MemoryContextSwitchTo(JobContext());
	q->driving = QueryDrivingMeasure(decomposition.driving_oid, decomposition.leaves, tree);
	CaptureInstall(run->job.id, run->job.target_oid, relids, join_attnums,
				   decomposition.driving_oid, q->driving->segments, q->driving->nsegments,
				   &q->capture);
	MemoryContextSwitchTo(old_context);
	run->job.work_total = q->driving->blocks;
	/* (a restart over a changed partition tree keeps the staging relation, emptied) */
	if (chunk_query != NULL && !OidIsValid(q->staging_oid))
		q->staging_oid = QueryPartialAggCreateStaging(run->job.id, chunk_query, q->query_role,
													  get_rel_tablespace(q->content_oid), true);
	if (decomposition.leaves != NIL)
		JobSetStrategy(run, &decomposition);
	WriteQueryState(run);
	if (decomposition.leaves != NIL)
		CatalogJobRecordPlan(&run->job);
	else
		CatalogJobRecordKindState(&run->job);
	CatalogJobSetCleanupPending(run->job.id, true);
	run->job.cleanup_pending = true;
	JobStepHoldPoint("installing capture: before its commit");
}

/*
 * Record that every row must be recomputed (the catch-up does it in
 * batches), or with uncaptured, that changes may go unlogged from now on
 * (the cut-over recomputes everything; once per worker).
 */
static void
MarkWholeTable(JobRun *run, const char *why, bool uncaptured)
{
	QueryRun   *q = QueryRunOf(run);

	if (uncaptured && q->uncaptured_marked)
		return;
	ereport(LOG,
			(errmsg("background DDL job %lld: %s; every row will be recomputed%s",
					(long long) run->job.id, why, uncaptured ? " at cut-over" : "")));
	CaptureMarkWholeTable(run->job.id, uncaptured);
	q->whole_table_marked = true;
	q->uncaptured_marked |= uncaptured;
}

/*
 * Crash recovery empties an unlogged relation (CREATE UNLOGGED TABLE ... AS)
 * while the chunks that filled it stay checkpointed: an empty content
 * relation after committed rows means the build starts over.
 */
static bool
ContentWasReset(const JobRun *run, Relation content)
{
	int64		chunks;
	int64		rows = 0;
	int64		blocks;

	/*
	 * Partial aggregation fills the content at the cut-over only, as does a
	 * job that left the whole query to it (LeaveAllToCutOver)
	 */
	if (OidIsValid(QueryRunOf(run)->staging_oid) || QueryRunOf(run)->recompute_at_cutover ||
		content->rd_rel->relpersistence != RELPERSISTENCE_UNLOGGED ||
		RelationGetNumberOfBlocks(content) > 0)
		return false;
	/* The job row's count can lag behind the chunks' (CatalogJobRecordChunk) */
	if (run->job.rows_done == 0)
		CaptureChunkTotals(run->job.id, &chunks, &rows, &blocks);
	return run->job.rows_done > 0 || rows > 0;
}

/*
 * Lock the relations the query reads (ACCESS SHARE, as the query will),
 * before the job's own relations: DROP TABLE ... CASCADE of a base table
 * locks the base table first and then the objects that depend on it (the
 * placeholder), so taking ours in the other order could deadlock with it.
 * The query's relations are those its view rule depends on, or the table
 * whose rows it reads.
 */
static void
LockSources(const QueryRun *q)
{
	HeapTuple	rule_tuple;
	Oid			rule_oid;
	Relation	depend;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	if (q->rewrites_table)
	{
		LockRelationOid(q->rule_relid, AccessShareLock);
		return;
	}
	rule_tuple = SearchSysCache2(RULERELNAME, ObjectIdGetDatum(q->rule_relid),
								 CStringGetDatum(ViewSelectRuleName));
	if (!HeapTupleIsValid(rule_tuple))
		return;					/* gone: the caller finds out */
	rule_oid = ((Form_pg_rewrite) GETSTRUCT(rule_tuple))->oid;
	ReleaseSysCache(rule_tuple);

	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&keys[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RewriteRelationId));
	ScanKeyInit(&keys[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(rule_oid));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, keys);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend dependency = (Form_pg_depend) GETSTRUCT(tuple);

		if (dependency->refclassid == RelationRelationId &&
			dependency->refobjid != q->rule_relid)
			LockRelationOid(dependency->refobjid, AccessShareLock);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
}

/*
 * May the job's role still capture changes of each base table (it owns it
 * or has TRIGGER on it)?  A revoked privilege ends the job with the
 * privilege error: the owner has taken back what let the job put triggers
 * there.  Caller is in a step.
 */
static void
CheckCapturePrivileges(const JobRun *run)
{
	const QueryRun *q = QueryRunOf(run);
	ListCell   *lc;

	foreach(lc, q->capture.relids)
	{
		Oid			relid = lfirst_oid(lc);

		if (!PgRelationOwnerCheck(relid, q->query_role) &&
			pg_class_aclcheck(relid, q->query_role, ACL_TRIGGER) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for table %s", get_rel_name(relid)),
					 errdetail("Background DDL job %lld captures the changes of the table, which needs the TRIGGER privilege that role %s no longer has.",
							   (long long) run->job.id,
							   GetUserNameFromId(q->query_role, false))));
	}
}

/*
 * A rewrite reads its table as the table's owner, as VACUUM FULL runs a
 * table's code: whoever owns it now.  (An ALTER TABLE ... OWNER TO since the
 * job began does not stop the job: with the blocking statement it would
 * have waited for it.)  Caller holds a lock on the table.
 */
static void
FollowTableOwner(QueryRun *q)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(q->rule_relid));

	if (!HeapTupleIsValid(tuple))
		return;					/* gone: the caller finds out */
	q->query_role = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
}

/*
 * A rewrite's table must keep the shape its hidden heap was made with (with
 * the job's column changes made): the content becomes its storage.  An
 * ALTER TABLE that adds, drops or retypes a column since the job began
 * fails the job (the table is left as it is).
 */
static void
CheckTableShape(const JobRun *run, Relation content)
{
	Relation	table = relation_open(QueryRunOf(run)->rule_relid, AccessShareLock);

	if (!PgHeapSameRowShape(QueryColumnChangesDesc(table, QueryRunOf(run)->column_changes),
							RelationGetDescr(content)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" was altered while background DDL job %lld rewrote it",
						RelationGetRelationName(table), (long long) run->job.id),
				 errdetail("A column was added, dropped or changed since the job began; the table is left as it was."),
				 errhint("Run the statement again.")));
	relation_close(table, NoLock);
}

/*
 * Begin a step that reads the job's sources: their locks first, then the
 * snapshot (JobStepTakeSnapshot says why).
 */
static void
SourcesStepBegin(JobRun *run, const char *activity, bool repeatable_read)
{
	JobStepBegin(activity, repeatable_read ? STEP_REPEATABLE_READ_LATER : STEP_NO_SNAPSHOT);
	LockSources(QueryRunOf(run));
	JobStepTakeSnapshot();
}

/*
 * Are the job's sources still what it captures?  Caller is in a step begun
 * by SourcesStepBegin, whose locks keep the answer true for the step; this
 * takes ACCESS SHARE on the content and each captured table.  A helper
 * only learns whether it may go on (JOB_STEP_MORE).
 */
static JobStepResult
CheckSources(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	ListCell   *relid_cell;
	ListCell   *filenode_cell;
	List	   *filenodes = NIL;
	bool		other_rewritten = false;
	Relation	content;

	if (!JobRunTargetExists(run) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(q->content_oid)))
		return JOB_STEP_TARGET_GONE;
	if (q->rewrites_table)
		FollowTableOwner(q);
	CheckCapturePrivileges(run);
	content = relation_open(q->content_oid, AccessShareLock);
	if (PgRelFileNumber(content) != q->content_filenode || ContentWasReset(run, content))
	{
		relation_close(content, NoLock);
		return JOB_STEP_RESTART;
	}
	if (q->rewrites_table)
		CheckTableShape(run, content);
	relation_close(content, NoLock);
	if (q->driving != NULL && QueryDrivingTreeChanged(q->driving))
		return JOB_STEP_RESTART;

	forboth(relid_cell, q->capture.relids, filenode_cell, q->capture.filenodes)
	{
		Oid			relid = lfirst_oid(relid_cell);
		bool		driving = relid == q->driving_oid ||
			(q->driving != NULL && QueryDrivingHasSegment(q->driving, relid));
		Relation	rel = try_relation_open(relid, AccessShareLock);
		Oid			filenode;

		if (rel == NULL)
			return driving ? JOB_STEP_RESTART : JOB_STEP_TARGET_GONE;
		filenode = PgRelFileNumber(rel);
		relation_close(rel, NoLock);
		filenodes = lappend_oid(filenodes, filenode);
		if (filenode == lfirst_oid(filenode_cell))
			continue;
		if (driving)
			return JOB_STEP_RESTART;
		other_rewritten = true;
	}
	if (run->helper)
	{
		/* Anything to record is the job's first worker's to do */
		return other_rewritten || !CaptureIntact(&q->capture) ? JOB_STEP_RESTART : JOB_STEP_MORE;
	}
	if (other_rewritten)
	{
		MarkWholeTable(run, "a base table was rewritten", false);
		q->capture.filenodes = JobList(filenodes);
		CaptureRowSetFilenodes(run->job.id, filenodes);
	}
	if (!q->uncaptured_marked && !CaptureIntact(&q->capture))
		MarkWholeTable(run, "a capture trigger was changed, disabled or dropped", true);
	return JOB_STEP_MORE;
}

/*
 * The guard of every step of the backfill and the catch-up: begin it
 * (SourcesStepBegin), then say whether it may go on (CheckSources).
 * JOB_STEP_MORE: it may; otherwise the caller ends the step and acts on it.
 */
static JobStepResult
GuardedStepBegin(JobRun *run, const char *activity, bool repeatable_read)
{
	SourcesStepBegin(run, activity, repeatable_read);
	return CheckSources(run);
}

/*
 * Drop a job's capture triggers, each table locked first as a job locks
 * what others use: a partitioned driving table and the tables below it
 * first (JobStepLockTree: nobody holds one partition through it while
 * waiting for another that we hold), then every table with a trigger.
 */
static void
RemoveCapture(int64 job_id, Oid target_oid)
{
	Oid			driving_oid;
	List	   *tables = CaptureTables(job_id, &driving_oid);
	ListCell   *lc;

	if (OidIsValid(driving_oid))
		JobStepLockTree(driving_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	foreach(lc, tables)
		JobStepLockRelation(lfirst_oid(lc), AccessExclusiveLock, background_ddl_lock_timeout_ms);
	CaptureRemove(job_id, target_oid);
}

/*
 * The driving table or the content relation was rewritten (every tuple id
 * changed), crash recovery emptied the content, or a partitioned driving
 * table's partitions changed: start the build over.  A partitioned driving
 * table's capture goes too, and the next backfill step installs a new one
 * on the partitions then read.  Caller is in a step (a LockingStep for a
 * partitioned driving table: the triggers' drops lock it and its
 * partitions, as DROP TRIGGER on it would).
 */
static void
RestartBuild(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	bool		partitioned = q->driving != NULL && q->driving->partitioned;
	Relation	content;

	/* The user's tables before ours, as every step of the job locks them */
	if (partitioned)
		JobStepLockTree(q->driving_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	else
		LockRelationOid(q->driving_oid, AccessShareLock);
	content = table_open(q->content_oid, AccessExclusiveLock);

	if (ContentWasReset(run, content))
		ereport(LOG,
				(errmsg("background DDL job %lld: crash recovery emptied the unlogged \"%s\", restarting the backfill",
						(long long) run->job.id, RelationGetRelationName(content))));
	else if (PgRelFileNumber(content) != q->content_filenode)
		ereport(LOG,
				(errmsg("background DDL job %lld: \"%s\" was rewritten, restarting the backfill",
						(long long) run->job.id, RelationGetRelationName(content))));
	else
		ereport(LOG,
				(errmsg(partitioned ?
						"background DDL job %lld: a partition of \"%s\" was attached, detached, created, dropped or rewritten, restarting the backfill" :
						"background DDL job %lld: table \"%s\" was rewritten, restarting the backfill",
						(long long) run->job.id, get_rel_name(q->driving_oid))));
	PgRelationTruncate(content);
	if (OidIsValid(q->staging_oid))
	{
		Relation	staging = table_open(q->staging_oid, AccessExclusiveLock);

		PgRelationTruncate(staging);
		table_close(staging, NoLock);
	}
	if (partitioned)
	{
		RemoveCapture(run->job.id, run->job.target_oid);
		CaptureForget(run->job.id, true);
		memset(&q->capture, 0, sizeof(Capture));
		q->uncaptured_marked = false;
		q->whole_table_marked = false;
		run->job.work_total = 0;
	}
	else
	{
		MemoryContext old_context;

		CaptureRestart(run->job.id);
		q->capture.filenodes = JobList(RelationFileNumbers(q->capture.relids));
		CaptureRowSetFilenodes(run->job.id, q->capture.filenodes);
		old_context = MemoryContextSwitchTo(JobContext());
		q->driving = QueryDrivingMeasure(q->driving_oid, NIL, NIL);
		MemoryContextSwitchTo(old_context);
		run->job.work_total = q->driving->blocks;
	}
	q->content_filenode = PgRelFileNumber(content);
	q->catchup_passes = 0;
	q->order_stage = ORDER_READING;
	q->order_chunks = 0;
	q->order_bound = NIL;
	q->order_key_rows = 0;
	/* a new build: it may catch up in batches again */
	q->recompute_at_cutover = false;
	WriteQueryState(run);
	CatalogJobRestartBuild(&run->job);
	table_close(content, NoLock);
	JobChunksRestart(&q->chunks);
	JobPublishProgress(0, 0, run->job.progress, run->job.rows_total, false);
}

/* RestartBuild as a LockingStep, unless the target is gone (the next step sees it) */
static void
RestartBuildLocking(JobRun *run, void *arg)
{
	if (JobRunTargetExists(run))
		RestartBuild(run);
}

/* Run the restart in a step of its own, once no other worker is in a chunk */
static JobStepResult
RestartBuildStep(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);

	JobChunksClose(&q->chunks, true);
	if (q->driving != NULL && q->driving->partitioned)
	{
		JobRunLockingStep(run, RestartBuildLocking, NULL, JOB_PHASE_BACKFILLING,
						  "background_ddl: restarting the backfill");
		return JOB_STEP_RESTART;
	}
	JobStepBegin("background_ddl: restarting the backfill", STEP_READ_COMMITTED);
	if (!JobRunTargetExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	RestartBuild(run);
	JobStepEnd();
	return JOB_STEP_RESTART;
}

/*
 * Leave the whole query to the cut-over (the writers' changes cost more to
 * catch up with): empty the content relation now, in a step of its own, as
 * a restart does, so that the cut-over only fills it; recorded with the
 * job, so that a worker after this one goes straight to the cut-over.
 */
static JobStepResult
LeaveAllToCutOver(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	Relation	content;

	ereport(LOG,
			(errmsg("background DDL job %lld: the changed rows are spread over most of the table; the cut-over recomputes the whole result",
					(long long) run->job.id)));
	JobChunksClose(&q->chunks, true);
	JobStepBegin("background_ddl: leaving the whole query to the cut-over", STEP_READ_COMMITTED);
	if (!JobRunTargetExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	content = table_open(q->content_oid, AccessExclusiveLock);
	PgRelationTruncate(content);
	q->content_filenode = PgRelFileNumber(content);
	table_close(content, NoLock);
	q->recompute_at_cutover = true;
	WriteQueryState(run);
	CatalogJobRecordKindState(&run->job);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/*
 * The table's rows per block, as the plan estimated them (at least one):
 * what a chunk in an index's order counts as blocks
 */
static double
RowsPerBlock(const BgddlJob *job)
{
	return Max(1.0, (double) job->rows_total / Max(job->work_total, 1));
}

/* A whole table's rows computed at once go in the order of its index, if any (CLUSTER) */
static void
SortInOrder(Query *query, Oid order_index)
{
	Relation	index;

	if (!OidIsValid(order_index))
		return;
	index = index_open(order_index, AccessShareLock);
	QuerySortByIndex(query, index);
	index_close(index, NoLock);
}

/* The index in whose order the job copies the table, still that table's */
static Relation
OpenOrderIndex(const JobRun *run, Relation table)
{
	Relation	index = try_relation_open(QueryRunOf(run)->order_index, AccessShareLock);

	if (index == NULL || index->rd_rel->relkind != RELKIND_INDEX ||
		index->rd_index->indrelid != RelationGetRelid(table))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the index that background DDL job %lld orders table \"%s\" by was dropped",
						(long long) run->job.id, RelationGetRelationName(table)),
				 errhint("Cancel the job, and run the statement again.")));
	return index;
}

/*
 * The next chunk of a backfill in the order of an index (q->order_stage,
 * q->order_bound), into content; then the stage after it, once it is the
 * last.  The rows of a null key (QueryIndexKeyNullable: as the table is
 * now, under the step's lock, rows written since the capture aside) are
 * copied a range of blocks at a time, before the others or after them as
 * the index sorts them.  Returns the chunk's rows.
 */
static uint64
BackfillOrderedChunk(JobRun *run, Relation content, Query *query, Index rtindex, Relation table,
					 TidPair **pairs, int *npairs)
{
	QueryRun   *q = QueryRunOf(run);
	Relation	index = OpenOrderIndex(run, table);
	bool		nulls_first;
	bool		nullable = QueryIndexKeyNullable(table, index, &nulls_first);
	bool		last;
	List	   *bound;
	uint64		rows;

	if (q->order_stage == ORDER_READING && q->order_chunks == 0 && nullable && nulls_first)
		q->order_stage = ORDER_READING_NULLS;
	if (q->order_stage == ORDER_READING_NULLS)
	{
		int64		start = q->order_bound != NIL ?
			DatumGetInt64(linitial_node(Const, q->order_bound)->constvalue) : 0;
		int64		end = Min(start + q->chunk_blocks, run->job.work_total);

		rows = QueryBackfillNullKeys(content, query, q->driving, rtindex, index, start, end,
									 pairs, npairs);
		bound = list_make1(makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(end),
									 false, FLOAT8PASSBYVAL));
		last = end >= run->job.work_total;
	}
	else
	{
		double		rows_per_block = RowsPerBlock(&run->job);
		OrderPosition position = {.bound = q->order_bound, .key_rows = q->order_key_rows};

		rows = QueryBackfillInOrder(content, query, q->driving, rtindex, table, index, &position,
									(int64) Max(1.0, q->chunk_blocks * rows_per_block),
									rows_per_block, pairs, npairs);
		bound = position.bound;
		last = position.done;
		q->order_key_rows = position.key_rows;
	}
	index_close(index, NoLock);
	q->order_chunks++;
	if (!last)
	{
		MemoryContext old_context = MemoryContextSwitchTo(JobContext());

		q->order_bound = copyObject(bound);
		MemoryContextSwitchTo(old_context);
	}
	else if (q->order_stage == ORDER_READING && nullable && !nulls_first)
	{
		q->order_stage = ORDER_READING_NULLS;
		q->order_bound = NIL;
	}
	else if (q->order_stage == ORDER_READING_NULLS && nulls_first)
	{
		q->order_stage = ORDER_READING;
		q->order_bound = NIL;
	}
	else
		q->order_stage = ORDER_REGROUPING;
	return rows;
}

/*
 * Compute one chunk and checkpoint it; caller is in a step.  A chunk of
 * blocks (range), or, without one, the next rows in the order of the index
 * (with its bound: the order's checkpoint), as many as the chunk's blocks
 * hold; fewer than that, and every row is copied.  Returns the chunk's
 * rows, in *seconds the time it took, and in *shown whether the job row
 * (what the view shows) changed.
 */
static uint64
BackfillChunk(JobRun *run, const ChunkRange *range, double *seconds, bool *shown)
{
	QueryRun   *q = QueryRunOf(run);
	bool		partial = OidIsValid(q->staging_oid);
	Relation	content = table_open(partial ? q->staging_oid : q->content_oid,
									 RowExclusiveLock);
	Relation	rule_relation = table_open(q->rule_relid, AccessShareLock);
	BgddlJob   *job = &run->job;
	int64		blocks;
	ChunkRange	ordered;
	Query	   *query;
	Index		driving_rtindex;
	TidPair    *pairs;
	int			npairs;
	uint64		rows;
	instr_time	start_time;
	instr_time	duration;
	double		allowed_rows;

	INSTR_TIME_SET_CURRENT(start_time);
	JobQueryBegin(q->query_role, true);
	query = QueryOfRule(rule_relation, q->column_changes, q->query_role, run->job.started_at);
	driving_rtindex = QueryDrivingRtindex(query, q->driving_oid);
	if (driving_rtindex == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the query of background DDL job %lld can no longer be split into batches",
						(long long) job->id),
				 errdetail("Its driving table changed while the job was running.")));
	if (partial)
		query = QueryPartialAggChunk(query);
	if (range == NULL)
	{
		rows = BackfillOrderedChunk(run, content, query, driving_rtindex, rule_relation,
									&pairs, &npairs);
		ordered.start_block = -(int64) q->order_chunks;
		ordered.end_block = ordered.start_block + 1;
		range = &ordered;
		blocks = (int64) ceil(rows / RowsPerBlock(job));
	}
	else
	{
		rows = QueryBackfillBlocks(content, query, q->driving, driving_rtindex, partial, true,
								   range->start_block, range->end_block, &pairs, &npairs);
		blocks = range->end_block - range->start_block;
	}
	JobQueryEnd();
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	*seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);

	CaptureChunkRecord(job->id, range, rows, job->attempts, *seconds,
					   partial ? NULL : CaptureTidMapEncode(pairs, npairs));
	if (range == &ordered)
	{
		WriteQueryState(run);
		CatalogJobRecordKindState(job);
	}

	/*
	 * This worker's chunks grow or shrink toward the batch time, and under a
	 * rate limit toward the rows the limit allows in that time
	 */
	q->chunk_blocks = (int32) Min((double) CHUNK_BLOCKS_MAX,
								  JobRunNextChunkBlocks(job, q->chunk_blocks, Max(blocks, 1),
														*seconds));
	allowed_rows = JobRunRowsPerBatch(job);
	if (allowed_rows > 0 && rows > 0)
		q->chunk_blocks = (int32) Max(1.0, Min(q->chunk_blocks,
											   allowed_rows / ((double) rows / Max(blocks, 1))));
	*shown = CatalogJobRecordChunk(job, rows, blocks, q->chunk_blocks,
								   *seconds / Max(blocks, 1) / Max(JobWorkerCount(), 1));
	table_close(rule_relation, NoLock);
	table_close(content, NoLock);
	JobPublishChunkDone(job->chunks_done, job->progress);
	return rows;
}

/*
 * Once every row is copied in the index's order: regroup the next blocks'
 * pairs (CaptureChunksRegroup); caller is in a step.  Then the chunks are
 * as a backfill in blocks leaves them, and the backfill settles as one.
 */
static void
RegroupChunks(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	int64		group_blocks = Max(REGROUP_CHUNK_BLOCKS,
								   (int64) (REGROUP_STEP_PAIRS / RowsPerBlock(&run->job)));

	group_blocks -= group_blocks % REGROUP_CHUNK_BLOCKS;
	if (!CaptureChunksRegroup(run->job.id, group_blocks, REGROUP_CHUNK_BLOCKS,
							  run->job.work_total))
		return;
	q->order_stage = ORDER_DONE;
	WriteQueryState(run);
	CatalogJobRecordKindState(&run->job);
}

/*
 * A step that checks the sources, then takes a chunk and computes it.
 * JOB_STEP_DONE if no chunk was left to take.
 */
static JobStepResult
ChunkStep(JobRun *run, const char *activity)
{
	JobStepResult result;
	ChunkRange	range;
	uint64		rows = 0;
	double		seconds = 0;
	bool		shown = false;

	result = GuardedStepBegin(run, activity, false);
	/* Back before the rate limit lets it: it only looked (CheckSources), and paces again */
	if (result == JOB_STEP_MORE && run->job.max_rate > 0 &&
		run->job.rate_not_before > GetCurrentTimestamp())
	{
		JobStepEnd();
		JobRunPace(run, 0, 0);
		return JOB_STEP_MORE;
	}
	if (result == JOB_STEP_MORE)
	{
		QueryRun   *q = QueryRunOf(run);

		/* (in blocks or in the index's order: no more than the rate limit allows) */
		q->chunk_blocks = (int32) JobRunChunkBlocks(&run->job, q->chunk_blocks);
		if (OidIsValid(q->order_index) &&
			(q->order_stage == ORDER_READING || q->order_stage == ORDER_READING_NULLS))
			rows = BackfillChunk(run, NULL, &seconds, &shown);
		else if (OidIsValid(q->order_index) && q->order_stage == ORDER_REGROUPING)
			RegroupChunks(run);
		else if (!OidIsValid(q->order_index) && JobChunksTake(&q->chunks, q->chunk_blocks, &range))
			rows = BackfillChunk(run, &range, &seconds, &shown);
		else
			result = JOB_STEP_DONE;
	}
	JobStepEndPipelined(shown);
	if (result == JOB_STEP_MORE)
		JobRunPace(run, rows, seconds);
	return result;
}

/*
 * Once no chunk is left to take: wait for the other workers' chunks, then
 * look for blocks that no committed chunk covers (a worker that failed
 * gave its chunk up): the backfill is over when there are none.
 */
static JobStepResult
SettleBackfill(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	bool		covered;

	JobChunksClose(&q->chunks, false);
	JobStepBegin("background_ddl: checking the chunks", STEP_READ_COMMITTED);
	covered = JobChunksSettle(&q->chunks, CaptureChunkRanges(run->job.id), run->job.work_total);
	CaptureRecordBackfillTotals(&run->job, false);
	JobStepEnd();
	return covered ? JOB_STEP_DONE : JOB_STEP_MORE;
}

static void OpenCatchUpTarget(JobRun *run, QueryCatchUpTarget *target);
static void BuildHere(const BgddlJob *job, Oid rule_relid, List *column_changes,
					  Oid content_oid, Oid query_role, QueryJobPublish publish);
static void CloseCatchUpTarget(QueryCatchUpTarget *target);

/*
 * Between the first worker's chunks (the looks cost at most a twentieth of
 * the backfill's time, but for those too early to judge, which look again
 * at the next chunk): will the writers' changes have spread over most of
 * the table by its end (QueryCatchUpChangesSpread)?  Then the rest of the
 * backfill and the catch-up would cost more than the whole query, which
 * the cut-over runs instead; the helpers stop in their chunks.
 */
static bool
ChangesSpread(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	TimestampTz now = GetCurrentTimestamp();
	QueryCatchUpTarget target;
	JobStepResult result;
	bool		spread = false;
	bool		too_early = true;

	if (q->spread_checked_at != 0 &&
		!TimestampDifferenceExceeds(q->spread_checked_at, now, q->spread_check_interval_ms))
		return false;
	result = GuardedStepBegin(run, "background_ddl: looking at the changed rows", false);
	if (result == JOB_STEP_MORE)
	{
		OpenCatchUpTarget(run, &target);
		target.chunk_blocks = q->chunk_blocks;
		target.workers = JobWorkerCount();
		spread = QueryCatchUpChangesSpread(&target, &too_early);
		CloseCatchUpTarget(&target);
	}
	JobStepEnd();
	if (too_early)
		return false;
	q->spread_checked_at = GetCurrentTimestamp();
	q->spread_check_interval_ms = 20 * (q->spread_checked_at - now) / 1000;
	return spread;
}

/*
 * At a worker's first chunk, then every BACKLOG_COUNT_INTERVAL_MS of the
 * backfill, record how many changed rows wait (dirty_rows): the view shows
 * the backlog as it builds up.  (At the first chunk too: a worker given back
 * for its rate limit lives a batch, and the backlog would never be counted.)
 */
static void
CountBacklog(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	TimestampTz now = GetCurrentTimestamp();

	if (q->backlog_counted_at != 0 &&
		!TimestampDifferenceExceeds(q->backlog_counted_at, now, BACKLOG_COUNT_INTERVAL_MS))
		return;
	q->backlog_counted_at = now;
	JobStepBegin("background_ddl: counting changed rows", STEP_READ_COMMITTED);
	CatalogJobSetDirtyRows(run->job.id, CaptureBacklog(run->job.id));
	JobStepEnd();
}

/*
 * One step of the backfill, in the job's first worker: install the capture
 * first, then open the chunk claims to helpers (job_scheduler.c), then one
 * chunk per call.  A one-batch job has nothing to backfill: its cut-over
 * computes all.
 */
JobStepResult
QueryJobBackfillStep(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	JobStepResult result;

	if (!OidIsValid(q->driving_oid))
		return JOB_STEP_DONE;
	if (!Captured(q))
	{
		JobStepHoldPoint("installing capture");
		JobRunLockingStep(run, InstallCaptureStep, NULL, JOB_PHASE_INSTALLING_CAPTURE,
						  "background_ddl: installing capture");
		JobRunSetPhase(run, JOB_PHASE_BACKFILLING);
		JobChunksRestart(&q->chunks);
		return JOB_STEP_MORE;
	}
	if (q->recompute_at_cutover)
		return JOB_STEP_DONE;
	/* (before the claims open: nothing delays this worker's first chunk after it) */
	CountBacklog(run);
	/* (in an index's order, one worker: the order is one sequence) */
	if (!OidIsValid(q->order_index))
		JobChunksOpen(&q->chunks, run->job.work_total);

	JobStepHoldAtChunk(run->job.chunks_done);
	if (q->order_stage == ORDER_READING_NULLS)
		JobStepHoldPoint("copying the rows of a null key");
	if (q->order_stage == ORDER_REGROUPING)
		JobStepHoldPoint("regrouping");
	/* (not under a rate limit, which cannot pace the cut-over's one transaction) */
	if (!q->rewrites_table && run->job.max_rate <= 0 && ChangesSpread(run))
		return LeaveAllToCutOver(run);
	result = ChunkStep(run, "background_ddl: backfilling a chunk");
	if (result == JOB_STEP_RESTART && RestartBuildStep(run) == JOB_STEP_RESTART)
		return JOB_STEP_MORE;
	if (result == JOB_STEP_DONE)
		return SettleBackfill(run);
	if (result == JOB_STEP_TARGET_GONE)
		JobChunksClose(&q->chunks, false);
	return result;
}

/*
 * Are writers busy on the captured tables?  Judged over at least a second
 * (writers report their statistics about once a second): more than
 * HELPER_QUIET_MARKS_PER_SECOND marks logged per second.
 */
static bool
CapturedTablesBusy(QueryRun *q)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		marks;
	double		seconds;
	bool		busy;

	JobStepBegin("background_ddl: looking at the writers", STEP_READ_COMMITTED);
	marks = CaptureMarksLogged();
	JobStepEnd();
	if (q->marks_logged_at == 0)
	{
		q->marks_logged = marks;
		q->marks_logged_at = now;
		return false;
	}
	seconds = (now - q->marks_logged_at) / 1000000.0;
	if (seconds < 1.0)
		return false;
	busy = (marks - q->marks_logged) / seconds > HELPER_QUIET_MARKS_PER_SECOND;
	q->marks_logged = marks;
	q->marks_logged_at = now;
	return busy;
}

/*
 * One chunk, in a helper: a worker that takes chunks of a job another
 * worker runs, while their claims are open.  Anything unusual (the sources
 * changed, a control function, a job waiting for a worker slot) and it
 * stops: the job's first worker does the rest.
 *
 * A helper makes a build faster by taking a CPU; while writers keep the
 * captured tables busy, that CPU is theirs: the helper leaves, and no
 * other comes for HELPER_BACKOFF_MS.
 */
JobStepResult
QueryJobHelpStep(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	JobStepResult result;

	if (!OidIsValid(q->driving_oid) || !Captured(q) || JobHelpersShouldLeave() ||
		(run->job.max_workers > 0 && JobWorkerCount() > run->job.max_workers))
		return JOB_STEP_DONE;
	if (CapturedTablesBusy(q))
	{
		JobHelpersBackOff(TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HELPER_BACKOFF_MS));
		return JOB_STEP_DONE;
	}
	if (!JobChunksJoin(&q->chunks))
		return JOB_STEP_DONE;
	result = ChunkStep(run, "background_ddl: backfilling a chunk (helping)");
	return result == JOB_STEP_MORE ? JOB_STEP_MORE : JOB_STEP_DONE;
}

/*
 * The catch-up's view of the job, with the relation that receives its rows
 * (the content relation, or for partial aggregation the staging relation)
 * and the query's rule relation opened.  Caller is in a step and has
 * checked the sources; CloseCatchUpTarget closes them.
 */
static void
OpenCatchUpTarget(JobRun *run, QueryCatchUpTarget *target)
{
	QueryRun   *q = QueryRunOf(run);

	target->job_id = run->job.id;
	target->content = table_open(OidIsValid(q->staging_oid) ? q->staging_oid : q->content_oid,
								 RowExclusiveLock);
	target->rule_relation = table_open(q->rule_relid, AccessShareLock);
	target->query_role = q->query_role;
	target->column_changes = q->column_changes;
	target->driving = q->driving;
	target->partial = OidIsValid(q->staging_oid);
	target->job_start = run->job.started_at;
	target->chunk_blocks = 0;
	target->workers = 1;
	target->keeps_order = OidIsValid(q->order_index);
}

static void
CloseCatchUpTarget(QueryCatchUpTarget *target)
{
	table_close(target->rule_relation, NoLock);
	table_close(target->content, NoLock);
}

/*
 * One batch of a catch-up pass, in its own REPEATABLE READ step (the marks
 * it deletes and the rows it recomputes share one snapshot).  Returns
 * JOB_STEP_MORE while the pass goes on, JOB_STEP_DONE at its end, or what
 * the check of the sources says.
 */
static JobStepResult
CatchUpBatchStep(JobRun *run, QueryCatchUpPass *pass)
{
	QueryRun   *q = QueryRunOf(run);
	bool		in_blocks = OidIsValid(q->staging_oid) || pass->marks.whole_table;
	int64	   *budget = in_blocks ? &q->catchup_blocks : &q->catchup_rows;
	JobStepResult result;
	instr_time	start_time;
	instr_time	duration;
	double		seconds;

	INSTR_TIME_SET_CURRENT(start_time);
	result = GuardedStepBegin(run, "background_ddl: catching up", true);
	JobStepHoldPoint("catch-up batch");
	/*
	 * A backlog past its bound stopped the capture, with an uncaptured mark:
	 * the cut-over recomputes everything, so the pass ends here (elsewhere
	 * that mark is read anyway: by the next pass, and by the cut-over)
	 */
	if (result == JOB_STEP_MORE && !q->uncaptured_marked && CaptureRowStopped(run->job.id))
		q->uncaptured_marked = true;
	if (result == JOB_STEP_MORE && !q->uncaptured_marked)
	{
		QueryCatchUpTarget target;
		int64		gained;

		OpenCatchUpTarget(run, &target);
		if (!QueryCatchUpBatch(&target, pass, *budget, &gained, &q->rows_recomputed))
			result = JOB_STEP_DONE;
		CloseCatchUpTarget(&target);
		run->job.rows_done += gained;
		WriteQueryState(run);
		seconds = (GetCurrentTimestamp() - q->pass_started_at) / (double) USECS_PER_SEC;
		CatalogJobRecordBacklog(&run->job, QueryCatchUpBacklog(pass),
								pass->sources_done > 0 ?
								seconds * QueryCatchUpBacklog(pass) / pass->sources_done : -1);
	}
	JobStepEnd();
	if (result != JOB_STEP_MORE && result != JOB_STEP_DONE)
		return result;
	JobPublishProgress(run->job.rows_done, run->job.chunks_done, run->job.progress,
					   run->job.rows_total, false);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	*budget = (int64) Max(1.0, Min(in_blocks ? (double) CHUNK_BLOCKS_MAX : (double) CATCHUP_ROWS_MAX,
								   *budget * JobRunBatchScale(&run->job,
															  INSTR_TIME_GET_DOUBLE(duration))));
	return result;
}

/* The rows written so far to the tables the job captures (cutover_max_writes) */
int64
QueryJobWritesToSources(const BgddlJob *job)
{
	return CaptureTablesWrites(job->id);
}

/*
 * One catch-up pass over the marks visible when it starts, in batches of
 * short transactions whose size adapts toward the batch time
 * (query_catchup.c).  Passes go on while they shrink: the cut-over takes the
 * rest once a pass is as short as a batch (about as much is left for it), or
 * once a pass is no shorter than the one before (writers change rows as
 * fast as the catch-up recomputes them), so the cut-over has at most about
 * one pass of work, and a pass at most one backfill's.  Returns
 * JOB_STEP_MORE if another pass is worth it, JOB_STEP_DONE when the cut-over
 * can take the rest.
 */
JobStepResult
QueryJobCatchUp(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);
	QueryCatchUpPass pass;
	JobStepResult result;
	instr_time	start_time;
	instr_time	duration;
	double		seconds;
	bool		whole_table;
	bool		costs_more = false;

	if (!OidIsValid(q->driving_oid) || q->uncaptured_marked || q->recompute_at_cutover ||
		(q->catchup_passes >= CATCHUP_MAX_PASSES && !run->keeping_up))
		return JOB_STEP_DONE;

	JobStepHoldPoint("catching up");
	INSTR_TIME_SET_CURRENT(start_time);
	q->pass_started_at = GetCurrentTimestamp();
	q->catchup_passes++;
	if (q->catchup_blocks == 0)
		q->catchup_blocks = q->chunk_blocks;
	result = GuardedStepBegin(run, "background_ddl: catching up", false);
	/* (a job kept caught up for its cut-over stays ready) */
	if (!run->keeping_up)
		JobRunRecordPhase(run, JOB_PHASE_CATCHING_UP);
	if (result == JOB_STEP_MORE)
	{
		QueryCatchUpTarget target;

		OpenCatchUpTarget(run, &target);
		q->whole_table_marked = false;	/* the pass sees it */
		QueryCatchUpPassBegin(&target, &pass, JobContext());
		/* (a rewrite's whole query, at its cut-over, would lock the table) */
		costs_more = !q->rewrites_table &&
			(QueryCatchUpPassCostsMore(&target, &pass) ||
			 (pass.marks.whole_table && q->last_pass_whole));
		CloseCatchUpTarget(&target);
		WriteQueryState(run);
		CatalogJobRecordBacklog(&run->job, QueryCatchUpBacklog(&pass), -1);
	}
	JobStepEnd();
	if (result == JOB_STEP_RESTART)
		return RestartBuildStep(run);
	if (result != JOB_STEP_MORE)
		return result;
	if (costs_more)
	{
		/* (or every row changed again, as in the pass before: the same to come) */
		QueryCatchUpPassEnd(&pass);
		return LeaveAllToCutOver(run);
	}
	if (pass.marks.uncaptured || q->uncaptured_marked ||
		(pass.marks.nrows == 0 && pass.marks.nothers == 0))
	{
		QueryCatchUpPassEnd(&pass);
		return JOB_STEP_DONE;
	}
	whole_table = pass.marks.whole_table;
	q->last_pass_whole = whole_table;

	while ((result = CatchUpBatchStep(run, &pass)) == JOB_STEP_MORE)
	{
		if (q->uncaptured_marked)
			break;
		JobRunWaitForStandbys(run);
	}
	QueryCatchUpPassEnd(&pass);
	if (result == JOB_STEP_RESTART)
		return RestartBuildStep(run);
	if (result != JOB_STEP_MORE && result != JOB_STEP_DONE)
		return result;
	if (q->uncaptured_marked)
		return JOB_STEP_DONE;

	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	seconds = INSTR_TIME_GET_DOUBLE(duration);
	result = seconds <= JobRunBatchTimeMs(&run->job) / 1000.0 ||
		(!whole_table && q->last_pass_seconds > 0 && seconds >= 0.9 * q->last_pass_seconds) ?
		JOB_STEP_DONE : JOB_STEP_MORE;
	if (result == JOB_STEP_DONE && seconds > JobRunBatchTimeMs(&run->job) / 1000.0)
		ereport(LOG,
				(errmsg("background DDL job %lld: catch-up pass %d took %.1f s, no less than the one before; the cut-over takes the rest",
						(long long) run->job.id, q->catchup_passes, seconds)));
	q->last_pass_seconds = seconds;
	return result;
}

/* Delete every row of the content relation (visible to this transaction) */
static void
EmptyContent(Relation content)
{
	Snapshot	snapshot = GetActiveSnapshot();
	TableScanDesc scan = table_beginscan(content, snapshot, 0, NULL);
	TupleTableSlot *slot = table_slot_create(content, NULL);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		simple_table_tuple_delete(content, &slot->tts_tid, snapshot);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	CommandCounterIncrement();
}

/*
 * The cut-over's last pass, its batches in this transaction, each in a
 * memory context of its own (a batch's plan and rows, freed once it is
 * done, rather than each one's kept until the cut-over commits); returns
 * how many rows the result gained.  What it recomputes is not recorded
 * (QueryCatchUpPass.last): the job forgets it once the cut-over commits.
 */
static int64
LastPass(const QueryCatchUpTarget *target, QueryCatchUpPass *pass, int64 *recomputed)
{
	MemoryContext batch_context = AllocSetContextCreate(CurrentMemoryContext,
														"background_ddl cut-over batch",
														ALLOCSET_DEFAULT_SIZES);
	MemoryContext old_context = MemoryContextSwitchTo(batch_context);
	int64		gained_all = 0;
	int64		gained;
	bool		more;

	pass->last = true;
	do
	{
		more = QueryCatchUpBatch(target, pass, PG_INT64_MAX, &gained, recomputed);
		gained_all += gained;
		MemoryContextReset(batch_context);
	} while (more);
	MemoryContextSwitchTo(old_context);
	MemoryContextDelete(batch_context);
	return gained_all;
}

/*
 * The computing part of the cut-over, inside its step (REPEATABLE READ):
 * afterwards the content relation holds exactly the query's result at this
 * transaction's snapshot.  A chunked job processes its last marks; a
 * one-batch job, or one whose capture missed something, computes the whole
 * query here.  Caller holds RowExclusiveLock on the content relation.
 * *rows: the result's row count.
 */
static JobStepResult
Finalize(JobRun *run, Relation content, int64 *rows)
{
	QueryRun   *q = QueryRunOf(run);
	bool		recompute_all = !OidIsValid(q->driving_oid);

	*rows = run->job.rows_done;
	if (!recompute_all)
	{
		JobStepResult check = CheckSources(run);

		if (check != JOB_STEP_MORE)
			return check;

		/*
		 * The last pass, in this transaction, unless the whole query is known
		 * to be left to it already; after a whole_table mark the pass would
		 * recompute every chunk, which the whole query does faster, as it
		 * does a pass that reads more marks than a pass may, or one that
		 * costs more than the whole query
		 */
		recompute_all = q->whole_table_marked || q->recompute_at_cutover;
		if (!recompute_all)
		{
			QueryCatchUpTarget target;
			QueryCatchUpPass pass;

			OpenCatchUpTarget(run, &target);
			QueryCatchUpPassBegin(&target, &pass, CurrentMemoryContext);
			recompute_all = pass.marks.uncaptured || pass.marks.whole_table || pass.marks.more ||
				(!q->rewrites_table && QueryCatchUpPassCostsMore(&target, &pass));
			if (!recompute_all)
			{
				run->job.rows_done += LastPass(&target, &pass, &q->rows_recomputed);
				*rows = run->job.rows_done;
				/* (its rows_recomputed counts the cut-over's too) */
				WriteQueryState(run);
				CatalogJobRecordKindState(&run->job);
			}
			QueryCatchUpPassEnd(&pass);
			CloseCatchUpTarget(&target);
		}
		if (recompute_all)
			EmptyContent(content);
	}
	if (recompute_all || OidIsValid(q->staging_oid))
	{
		Relation	rule_relation = table_open(q->rule_relid, AccessShareLock);
		Query	   *query;

		JobQueryBegin(q->query_role, false);
		query = QueryOfRule(rule_relation, q->column_changes, q->query_role, run->job.started_at);

		/*
		 * Partial aggregation: the result is the combine of the staging rows,
		 * as the marks just processed left them
		 */
		if (!recompute_all)
		{
			query = QueryPartialAggCombine(query, q->staging_oid);
			CommandCounterIncrement();
			UpdateActiveSnapshotCommandId();
		}
		SortInOrder(query, q->order_index);
		*rows = (int64) QueryBackfillAll(content, query);
		JobQueryEnd();
		table_close(rule_relation, NoLock);
		QueryPartialAggDropStaging(q->staging_oid);
	}
	return JOB_STEP_DONE;
}

/* The phase of a cut-over: for a one-batch job it is the batch */
static JobPhase
CutOverPhase(const JobRun *run)
{
	return OidIsValid(QueryRunOf(run)->driving_oid) ?
		JOB_PHASE_CUTTING_OVER : JOB_PHASE_BACKFILLING;
}

/*
 * The cut-over of a query job: one REPEATABLE READ transaction that
 * finishes the computation (Finalize), then lets the kind publish the
 * content (publish must end the job as succeeded, with CatalogJobFinish),
 * and commits.  For a one-batch job this is the batch, so its phase says
 * backfilling.
 */
JobStepResult
QueryJobCutOver(JobRun *run, QueryJobPublish publish)
{
	JobStepResult result;

	JobStepHoldPoint("cutting over");
	JobPublishPhase(CutOverPhase(run));	/* while it waits for its locks */
	JobStepBegin("background_ddl: cutting over", STEP_REPEATABLE_READ_LATER);
	QueryJobCutOverLock(run);
	JobStepTakeSnapshot();
	result = QueryJobCutOverPublish(run, publish);
	JobStepEnd();
	if (result == JOB_STEP_RESTART)
		return RestartBuildStep(run);
	return result;
}

/*
 * The cut-over's locks, taken in a step whose snapshot comes after them
 * (STEP_REPEATABLE_READ_LATER): the sources', and a rewritten table's own,
 * whose last changes are applied with its writers kept out until its
 * storage is swapped
 */
void
QueryJobCutOverLock(JobRun *run)
{
	QueryRun   *q = QueryRunOf(run);

	if (q->rewrites_table)
		JobStepLockRelation(q->rule_relid, AccessExclusiveLock, REWRITE_LOCK_PATIENCE_MS);
	LockSources(q);
}

/*
 * The rest of the cut-over, under the step's snapshot, in the caller's
 * step (which one worker may share with the cut-overs of the other jobs of
 * a group): finish the content and publish it.  JOB_STEP_RESTART: the
 * driving table was rewritten, or its partitions changed, and the caller
 * restarts the build (QueryJobRestartBuild) once the step has ended.
 */
JobStepResult
QueryJobCutOverPublish(JobRun *run, QueryJobPublish publish)
{
	QueryRun   *q = QueryRunOf(run);
	Relation	content;
	JobStepResult result;
	int64		rows;

	JobRunRecordPhase(run, CutOverPhase(run));
	if (!JobRunTargetExists(run))
		return JOB_STEP_TARGET_GONE;
	content = table_open(q->content_oid, RowExclusiveLock);
	result = Finalize(run, content, &rows);
	table_close(content, NoLock);
	if (result == JOB_STEP_DONE)
	{
		/*
		 * The triggers log nothing once the job has ended, and its worker
		 * drops them next; detached from the target now, so that a DROP of
		 * the new object right after does not drop them too, which would
		 * lock the base tables (they are the worker's to drop, without
		 * queueing for their locks).
		 */
		CaptureDetach(run->job.id, run->job.target_oid);
		publish(run, rows);
	}
	return result;
}

/* After a cut-over that found the build must start over */
JobStepResult
QueryJobRestartBuild(JobRun *run)
{
	return RestartBuildStep(run);
}

/*
 * ANALYZE the new relation that a job publishes (a materialized view's or
 * CREATE TABLE AS's content), in the cut-over transaction, before anyone
 * else can read it: its first queries find statistics.  As its owner (the
 * job's role), under SECURITY_RESTRICTED_OPERATION, as ANALYZE runs an
 * index's or a statistics object's expressions; its sample sees the rows
 * that this transaction wrote too.
 */
void
QueryJobAnalyzeContent(Oid content_oid, Oid owner)
{
	VacuumParams params;
	JobQueryContext context;

	memset(&params, 0, sizeof(params));
	params.options = VACOPT_ANALYZE;
	params.freeze_min_age = -1;
	params.freeze_table_age = -1;
	params.multixact_freeze_min_age = -1;
	params.multixact_freeze_table_age = -1;
	params.log_min_duration = -1;
	params.index_cleanup = VACOPTVALUE_UNSPECIFIED;
	params.truncate = VACOPTVALUE_UNSPECIFIED;
	CommandCounterIncrement();
	JobQueryEnter(owner, &context, false);
	analyze_rel(content_oid, NULL, &params, NIL, true, GetAccessStrategy(BAS_VACUUM));
	JobQueryLeave(&context);
	CommandCounterIncrement();
}

/* The hidden heap of a job that replaces a relation's storage; InvalidOid: not made yet */
static Oid
HiddenHeapOf(const BgddlJob *job)
{
	return (Oid) CatalogKindStateInt(job->kind_state, STATE_HIDDEN_OID);
}

/*
 * The hidden heap that a job replacing a relation's storage (REFRESH, a
 * table's rewrite) computes the new content into, made like that relation
 * (PgHeapCreateLike; a table's rows with its column changes, if any:
 * QueryColumnChangesDesc), in the extension's schema, named prefix_<relation's
 * OID>_<job> (two jobs may rewrite one table: the second restarts its build
 * after the first's swap), in the relation's tablespace or the one its kind recorded at
 * submit (QUERY_STATE_TABLESPACE), with its access method or the one
 * recorded (QUERY_STATE_ACCESS_METHOD), the first time; a helper only uses
 * it.
 * Its OID lives in the job's kind_state.  Caller is in a transaction, with
 * a lock on like.
 */
static Oid
HiddenHeap(JobRun *run, Relation like, const char *prefix, List *column_changes)
{
	Oid			hidden_oid = HiddenHeapOf(&run->job);

	if (run->helper || (OidIsValid(hidden_oid) &&
						SearchSysCacheExists1(RELOID, ObjectIdGetDatum(hidden_oid))))
		return hidden_oid;
	hidden_oid = PgHeapCreateLike(like, QueryColumnChangesDesc(like, column_changes),
								  CatalogRequire()->schema_oid,
								  psprintf("%s_%u_%lld", prefix, RelationGetRelid(like),
										   (long long) run->job.id),
								  CatalogKindStateHas(run->job.kind_state, QUERY_STATE_TABLESPACE) ?
								  (Oid) CatalogKindStateInt(run->job.kind_state, QUERY_STATE_TABLESPACE) :
								  like->rd_rel->reltablespace,
								  (Oid) CatalogKindStateInt(run->job.kind_state, QUERY_STATE_ACCESS_METHOD));
	PgRelationSetExtensionMember(hidden_oid, CatalogRequire()->extension_oid, true);
	CatalogKindStateSetInt(&run->job.kind_state, STATE_HIDDEN_OID, hidden_oid);
	CatalogJobRecordKindState(&run->job);
	return hidden_oid;
}

/*
 * Start a run of a job that replaces its target's storage: its query's rows
 * go to the hidden heap (made now, the first time), and the query runs as
 * the target's owner (as REFRESH and VACUUM FULL run a relation's code);
 * a table's column_changes (ALTER COLUMN ... TYPE subcommands) are made in
 * its rows.  Caller is between steps.
 */
void
QueryJobStartReplacing(JobRun *run, const char *prefix, List *column_changes)
{
	Relation	target;
	Oid			hidden_oid;
	Oid			owner;
	MemoryContext old_context;

	JobStepBegin("background_ddl: preparing the new storage", STEP_READ_COMMITTED);
	target = table_open(run->job.target_oid, AccessShareLock);
	owner = target->rd_rel->relowner;
	hidden_oid = HiddenHeap(run, target, prefix, column_changes);
	table_close(target, NoLock);
	JobStepEnd();
	QueryJobStart(run, run->job.target_oid, hidden_oid, owner);
	old_context = MemoryContextSwitchTo(JobContext());
	QueryRunOf(run)->column_changes = copyObject(column_changes);
	MemoryContextSwitchTo(old_context);
}

/*
 * QueryJobBuildHere for a job that replaces its target's storage, the
 * target locked in lockmode first, as the blocking statement locks it
 */
Oid
QueryJobBuildHereReplacing(const BgddlJob *job, const char *prefix, LOCKMODE lockmode,
						   List *column_changes, QueryJobPublish publish)
{
	JobRun		run = {.job = *job};
	Relation	target = table_open(job->target_oid, lockmode);
	Oid			hidden_oid = HiddenHeap(&run, target, prefix, column_changes);
	Oid			owner = target->rd_rel->relowner;

	/* Closed before the swap, which checks that nobody has it open */
	table_close(target, NoLock);
	BuildHere(&run.job, job->target_oid, column_changes, hidden_oid, owner, publish);
	return job->target_oid;
}

/*
 * The discard routine of the kinds that replace a relation's storage: what
 * every query job leaves (QueryJobDiscard), and the hidden heap; the
 * relation itself stays as it was.
 */
void
QueryJobDiscardHiddenHeap(const BgddlJob *job, bool keep_target)
{
	QueryJobDiscard(job);
	if (OidIsValid(HiddenHeapOf(job)))
		PgRelationDrop(HiddenHeapOf(job));
}

/*
 * Build a query job's content in the session that submitted it, in its
 * still open transaction, as the blocking statement would have: that
 * transaction uses the target before it committed.  The whole query (the
 * view rule of rule_relid) runs here, at the session's snapshot, as
 * query_role, into content_oid; then the kind publishes it as at a
 * cut-over, and the job succeeds when the transaction commits.  A table's
 * rewrite makes its column_changes in the rows.
 */
static void
BuildHere(const BgddlJob *job, Oid rule_relid, List *column_changes, Oid content_oid,
		  Oid query_role, QueryJobPublish publish)
{
	QueryRun	q = {.rule_relid = rule_relid,.column_changes = column_changes,
		.content_oid = content_oid,.query_role = query_role,
	.order_index = (Oid) CatalogKindStateInt(job->kind_state, QUERY_STATE_ORDER_INDEX)};
	JobRun		run = {.job = *job,.kind_run = &q};
	Relation	content = table_open(content_oid, RowExclusiveLock);
	Relation	rule_relation = table_open(rule_relid, AccessShareLock);
	Query	   *query;
	int64		rows;

	JobQueryBegin(query_role, false);
	query = QueryOfRule(rule_relation, column_changes, query_role,
						GetCurrentTransactionStartTimestamp());
	SortInOrder(query, q.order_index);
	rows = (int64) QueryBackfillAll(content, query);
	JobQueryEnd();
	table_close(rule_relation, NoLock);
	table_close(content, NoLock);
	CommandCounterIncrement();
	publish(&run, rows);
}

/* BuildHere of a query's result (no column changes) */
void
QueryJobBuildHere(const BgddlJob *job, Oid rule_relid, Oid content_oid, Oid query_role,
				  QueryJobPublish publish)
{
	BuildHere(job, rule_relid, NIL, content_oid, query_role, publish);
}

/*
 * The scheduler's housekeeping for the query kinds: every job's log of
 * captured changes stays bounded (CaptureBoundBacklogs)
 */
void
QueryJobHousekeeping(void)
{
	(void) CaptureBoundBacklogs();
}

/*
 * After the end of a query job (the cleanup routine of the query kinds):
 * drop its capture triggers, taking their tables' locks as a job takes what
 * others use (in a job's step), and forget the captured changes (a successful job keeps
 * its chunks, without their tid maps, as history).
 */
void
QueryJobCleanup(const BgddlJob *job)
{
	RemoveCapture(job->id, job->target_oid);
	CaptureForget(job->id, false);
}

/*
 * What every query job leaves when it fails or is cancelled, but its
 * kind's objects (the discard routine of the query kinds does those
 * next): its capture triggers detached from the target (they log nothing
 * more, and its worker drops them), the partial aggregation's staging
 * relation, its chunks and captured changes.  In any transaction.
 */
void
QueryJobDiscard(const BgddlJob *job)
{
	CaptureDetach(job->id, job->target_oid);
	QueryPartialAggDropStaging((Oid) CatalogKindStateInt(job->kind_state, STATE_STAGING_OID));
	CaptureForget(job->id, true);
}

/*
 * A query job was paused (the paused routine of the query kinds): its
 * capture triggers log no change while it is paused (capture_trigger.c),
 * so one uncaptured mark stands for them all, and a paused job costs
 * writers nothing.
 */
void
QueryJobPaused(const BgddlJob *job)
{
	Capture		capture;

	if (CaptureRowLoad(job->id, &capture) && !capture.stopped)
		CaptureCoverAll(job->id);
}

/*
 * Does the job have capture triggers on a table that role owns (the
 * keeps_on_table_of routine of the query kinds)?
 */
bool
QueryJobKeepsOnTableOf(const BgddlJob *job, Oid role)
{
	Capture		capture;
	ListCell   *lc;

	if (!CaptureRowLoad(job->id, &capture))
		return false;
	foreach(lc, capture.relids)
	{
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(lfirst_oid(lc))) &&
			PgRelationOwnerCheck(lfirst_oid(lc), role))
			return true;
	}
	return false;
}
