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
 *	plan		query_decompose.c decides: chunks of a driving table, or one batch
 *	backfill	install the capture triggers (capture_trigger.c), recording the
 *				driving table's size under the lock that installs them;
 *				then one step per chunk, each checkpointed
 *	catch up	passes over the dirty log (query_catchup.c), until the backlog is
 *				small
 *	cut over	(QueryJobFinalize, inside the kind's cut-over step) the last
 *				marks at the cut-over snapshot, or, for one batch or after a
 *				change the log could not pin to rows, the whole query
 *
 * Before every step the sources are checked: a dropped target ends the job;
 * a rewritten driving table or content relation (every tuple id changed)
 * restarts the build; a rewritten other table, or capture triggers that a
 * superuser changed, leave a whole_table mark, so the cut-over recomputes
 * everything.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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
#include "executor/executor.h"
#include "fmgr.h"
#include "jit/jit.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "rewrite/rewriteHandler.h"
#include "rewrite/rewriteSupport.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "background_ddl.h"
#include "query_backfill.h"
#include "capture_trigger.h"
#include "query_catchup.h"
#include "capture_log.h"
#include "pg_compat.h"
#include "query_decompose.h"
#include "job_step.h"
#include "query_partial_agg.h"
#include "kind_placeholder.h"
#include "query_functions.h"
#include "query_job.h"
#include "query_view_pullup.h"
#include "job_shmem.h"

#define CHUNK_BLOCKS_INITIAL	64
#define CHUNK_BLOCKS_MAX		(1 << 20)
#define CATCHUP_BLOCKS_INITIAL	4
#define CATCHUP_BLOCKS_MAX		256

/* Helpers leave while writers log more marks per second than this */
#define HELPER_QUIET_MARKS_PER_SECOND	200
#define HELPER_BACKOFF_MS				30000

/* Catch-up passes stop once a pass starts with at most this many changed rows */
#define CATCHUP_FINAL_BACKLOG	5000
/* ... or after this many passes: writes may outpace the worker */
#define CATCHUP_MAX_PASSES		5

/*
 * Check everything the blocking statement's executor would check before
 * producing its first row: rewrite, plan and start the executor in
 * EXPLAIN-only mode (privileges on tables and columns, row security, EXECUTE
 * on functions).  Returns the plan.  Caller has an active snapshot.
 */
PlannedStmt *
QueryJobValidate(Query *query, const char *query_string, ParamListInfo params,
				 QueryEnvironment *query_env)
{
	List	   *rewritten = QueryRewrite(copyObject(query));
	PlannedStmt *plan;
	QueryDesc  *query_desc;

	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for a background DDL query");

	plan = pg_plan_query(linitial_node(Query, rewritten), query_string, 0, params);
	/* Nothing runs: compiling the expressions (at executor start) is waste */
	plan->jitFlags = PGJIT_NONE;
	query_desc = CreateQueryDesc(plan, query_string, GetActiveSnapshot(),
								 InvalidSnapshot, None_Receiver, params, query_env, 0);
	ExecutorStart(query_desc, EXEC_FLAG_EXPLAIN_ONLY);
	ExecutorEnd(query_desc);
	FreeQueryDesc(query_desc);
	return plan;
}

/* Replace external parameters by their values in params (see QueryBindParams) */
static Node *
BindParamsMutator(Node *node, ParamListInfo params)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
	{
		Param	   *param = (Param *) node;
		ParamExternData workspace;
		ParamExternData *value = NULL;
		int16		typlen;
		bool		typbyval;
		Datum		datum = (Datum) 0;

		if (params != NULL && param->paramid > 0 && param->paramid <= params->numParams)
			value = params->paramFetch != NULL ?
				params->paramFetch(params, param->paramid, false, &workspace) :
				&params->params[param->paramid - 1];
		if (value == NULL || value->ptype != param->paramtype)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_PARAMETER),
					 errmsg("there is no parameter $%d", param->paramid)));
		get_typlenbyval(param->paramtype, &typlen, &typbyval);
		if (!value->isnull)
			datum = typlen == -1 ? PointerGetDatum(PG_DETOAST_DATUM_COPY(value->value)) :
				datumCopy(value->value, typbyval, typlen);
		return (Node *) makeConst(param->paramtype, param->paramtypmod, param->paramcollid,
								  typlen, datum, value->isnull, typbyval);
	}
	if (IsA(node, Query))
		return (Node *) query_tree_mutator((Query *) node, BindParamsMutator, params, 0);
	return expression_tree_mutator(node, BindParamsMutator, params);
}

/*
 * A copy of the query with every external parameter (CREATE TABLE ... AS
 * EXECUTE's, a PL/pgSQL variable) replaced by its value in params, as a
 * constant, bound once as the blocking statement binds them: a job's query
 * must stand on its own in another session.
 */
Query *
QueryBindParams(Query *query, ParamListInfo params)
{
	return (Query *) BindParamsMutator((Node *) copyObject(query), params);
}

/*
 * The strategy a job would use for a query, as the submitting role: for the
 * NOTICE at submit.  The worker decides again when it plans (privileges
 * may change meanwhile).
 */
char *
QueryJobStrategyAtSubmit(Query *query, Oid rule_relid, char **one_batch_reason)
{
	List	   *rewritten = QueryRewrite(copyObject(query));
	QueryDecomposition decomposition;
	Query	   *rewritten_query;

	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for a background DDL query");
	/* As QueryOfRule gives it to the worker; any time as now() decides alike */
	rewritten_query = linitial_node(Query, rewritten);
	QueryPullUpViews(rewritten_query);
	QueryDecompose(QueryPinJobStart(rewritten_query, GetCurrentTransactionStartTimestamp()),
				   rule_relid, GetUserId(), InvalidOid, &decomposition);
	*one_batch_reason = decomposition.reason;
	return QueryStrategy(&decomposition);
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

static void
JobSetStrategy(JobRun *run, const QueryDecomposition *decomposition)
{
	MemoryContext old_context = MemoryContextSwitchTo(JobContext());

	run->job.strategy = QueryStrategy(decomposition);
	run->job.driving_oid = decomposition->driving_oid;
	MemoryContextSwitchTo(old_context);
}

static void CloseClaims(JobRun *run);

/*
 * The parts of [0, end_block) that no chunk covers, given the chunks ordered
 * by start_block (several workers commit chunks out of order: a crash can
 * leave gaps below the last chunk).
 */
static List *
UncoveredRanges(List *chunks, int64 end_block)
{
	List	   *holes = NIL;
	int64		covered = 0;
	ListCell   *lc;

	foreach(lc, chunks)
	{
		ChunkRange *chunk = lfirst(lc);

		if (chunk->start_block > covered)
		{
			ChunkRange *hole = palloc(sizeof(ChunkRange));

			hole->start_block = covered;
			hole->end_block = Min(chunk->start_block, end_block);
			holes = lappend(holes, hole);
		}
		covered = Max(covered, chunk->end_block);
	}
	if (covered < end_block)
	{
		ChunkRange *hole = palloc(sizeof(ChunkRange));

		hole->start_block = covered;
		hole->end_block = end_block;
		holes = lappend(holes, hole);
	}
	return holes;
}

/*
 * Where a resumed job's backfill stands: after its last checkpointed chunk,
 * with the gaps below it to fill first.
 */
void
QueryJobResume(JobRun *run)
{
	List	   *chunks;
	ListCell   *lc;
	MemoryContext old_context;

	run->next_block = 0;
	run->holes = NIL;
	run->build_generation = 0;
	run->catchup_batch_blocks = CATCHUP_BLOCKS_INITIAL;
	if (run->job.capture_triggers == NIL || run->helper)
		return;
	/* Helpers of a worker before us may still be in their chunks */
	CloseClaims(run);
	JobStepBegin("background_ddl: resuming", STEP_READ_COMMITTED);
	chunks = CaptureChunkRanges(run->job.id);
	foreach(lc, chunks)
		run->next_block = Max(run->next_block, ((ChunkRange *) lfirst(lc))->end_block);
	old_context = MemoryContextSwitchTo(JobContext());
	run->holes = UncoveredRanges(chunks, run->next_block);
	MemoryContextSwitchTo(old_context);
	JobStepEnd();
	JobPublishProgress(run->job.rows_done, run->job.chunks_done, run->job.progress,
						 run->job.rows_total, false);
}

/* Decide how the job's content is computed, and record it */
void
QueryJobPlan(JobRun *run)
{
	Relation	rule_relation;
	Query	   *query;
	QueryDecomposition decomposition;

	JobStepHoldPoint("planning");
	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	CatalogJobSetPhase(run->job.id, JOB_PHASE_PLANNING);
	rule_relation = table_open(run->rule_relid, AccessShareLock);
	JobQueryBegin(run->query_role, false);
	query = QueryOfRule(rule_relation, run->query_role, run->job.started_at);
	QueryDecompose(query, run->rule_relid, run->query_role, InvalidOid,
				   &decomposition);
	run->job.rows_total = QueryEstimateRows(query);
	JobQueryEnd();
	table_close(rule_relation, NoLock);

	JobSetStrategy(run, &decomposition);
	run->job.chunk_blocks = CHUNK_BLOCKS_INITIAL;
	run->job.blocks_total = 0;
	run->job.target_filenode = RelationFileNumberOf(run->content_oid);
	CatalogJobRecordPlan(&run->job);
	JobPublishProgress(0, 0, run->job.progress, run->job.rows_total,
						 !OidIsValid(run->job.driving_oid));
	JobStepEnd();
}

/*
 * Install the capture triggers (a LockingStep): on every base relation,
 * after checking again that the job's role may; the driving table's size is
 * measured under the lock the install holds, so every row beyond it was
 * written by a transaction that fires the trigger.  If capture is no longer
 * allowed, the job falls back to one batch.
 */
static void
InstallCaptureStep(JobRun *run)
{
	Relation	rule_relation = table_open(run->rule_relid, AccessShareLock);
	Query	   *query;
	QueryDecomposition decomposition;
	CaptureTriggers triggers;
	Relation	driving;
	Query	   *chunk_query = NULL;

	JobQueryBegin(run->query_role, false);
	query = QueryOfRule(rule_relation, run->query_role, run->job.started_at);
	QueryDecompose(query, run->rule_relid, run->query_role, run->job.driving_oid,
				   &decomposition);
	if (decomposition.partial)
		chunk_query = QueryPartialAggChunk(query);
	JobQueryEnd();
	table_close(rule_relation, NoLock);

	if (decomposition.driving_rtindex == 0)
	{
		ereport(LOG,
				(errmsg("background DDL job " INT64_FORMAT " runs in one batch: %s",
						run->job.id, decomposition.reason)));
		JobSetStrategy(run, &decomposition);
		CatalogJobRecordPlan(&run->job);
		return;
	}

	CaptureInstall(run->job.id, run->job.target_oid, decomposition.relids,
				   decomposition.driving_oid, &triggers);
	driving = table_open(decomposition.driving_oid, NoLock);
	run->job.blocks_total = RelationGetNumberOfBlocks(driving);
	table_close(driving, NoLock);
	run->job.capture_relids = JobList(decomposition.relids);
	run->job.capture_filenodes = JobList(RelationFileNumbers(decomposition.relids));
	run->job.capture_triggers = JobList(triggers.trigger_oids);
	run->job.capture_trigger_xmins = JobList(triggers.trigger_xmins);
	run->job.cleanup_pending = true;
	if (chunk_query != NULL)
		run->job.staging_oid = QueryPartialAggCreateStaging(run->job.id, chunk_query, run->query_role,
													   get_rel_tablespace(run->content_oid));
	CatalogJobRecordCapture(&run->job);
}

/* The job's capture triggers, as capture_trigger.c takes them */
static CaptureTriggers
JobTriggers(const JobRun *run)
{
	CaptureTriggers triggers = {run->job.capture_triggers, run->job.capture_trigger_xmins};

	return triggers;
}

/* Record, once per worker, that the cut-over must recompute everything */
static void
MarkWholeTable(JobRun *run, const char *why)
{
	if (run->whole_table_marked)
		return;
	ereport(LOG,
			(errmsg("background DDL job " INT64_FORMAT ": %s; the result will be recomputed at cut-over",
					run->job.id, why)));
	CaptureMarkWholeTable(run->job.id);
	run->whole_table_marked = true;
}

/*
 * Crash recovery empties an unlogged relation (CREATE UNLOGGED TABLE ... AS)
 * while the chunks that filled it stay checkpointed: an empty content
 * relation after committed rows means the build starts over.
 */
static bool
ContentWasReset(const JobRun *run, Relation content)
{
	/* Partial aggregation fills the content at the cut-over only */
	return !OidIsValid(run->job.staging_oid) &&
		content->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED &&
		run->job.rows_done > 0 && RelationGetNumberOfBlocks(content) == 0;
}

/*
 * Lock the relations the query reads (ACCESS SHARE, as the query will),
 * before the job's own relations: DROP TABLE ... CASCADE of a base table
 * locks the base table first and then the objects that depend on it (the
 * placeholder), so taking ours in the other order could deadlock with it.
 * The query's relations are those its view rule depends on.
 */
static void
LockSources(const JobRun *run)
{
	HeapTuple	rule_tuple;
	Oid			rule_oid;
	Relation	depend;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	rule_tuple = SearchSysCache2(RULERELNAME, ObjectIdGetDatum(run->rule_relid),
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
			dependency->refobjid != run->rule_relid)
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
	ListCell   *lc;

	foreach(lc, run->job.capture_relids)
	{
		Oid			relid = lfirst_oid(lc);

		if (!PgRelationOwnerCheck(relid, run->query_role) &&
			pg_class_aclcheck(relid, run->query_role, ACL_TRIGGER) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for table %s", get_rel_name(relid)),
					 errdetail("Background DDL job " INT64_FORMAT " captures the changes of the table, which needs the TRIGGER privilege that role %s no longer has.",
							   run->job.id, GetUserNameFromId(run->query_role, false))));
	}
}

/*
 * Begin a step that reads the job's sources: their locks first, then the
 * snapshot (JobStepTakeSnapshot says why).
 */
static void
SourcesStepBegin(JobRun *run, const char *activity, bool repeatable_read)
{
	JobStepBegin(activity, repeatable_read ? STEP_REPEATABLE_READ_LATER : STEP_NO_SNAPSHOT);
	LockSources(run);
	JobStepTakeSnapshot();
}

/*
 * Are the job's sources still what it captures?  Caller is in a step; takes
 * ACCESS SHARE on each base relation, so the answer holds for the step.
 * A helper only learns whether it may go on (JOB_STEP_MORE).
 */
static JobStepResult
CheckSources(JobRun *run)
{
	ListCell   *relid_cell;
	ListCell   *filenode_cell;
	List	   *filenodes = NIL;
	bool		other_rewritten = false;
	Relation	content;

	LockSources(run);
	if (!JobRunTargetExists(run) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(run->content_oid)))
		return JOB_STEP_TARGET_GONE;
	CheckCapturePrivileges(run);
	content = relation_open(run->content_oid, AccessShareLock);
	if (PgRelFileNumber(content) != run->job.target_filenode ||
		ContentWasReset(run, content))
	{
		relation_close(content, NoLock);
		return JOB_STEP_RESTART;
	}
	relation_close(content, NoLock);

	forboth(relid_cell, run->job.capture_relids, filenode_cell, run->job.capture_filenodes)
	{
		Oid			relid = lfirst_oid(relid_cell);
		Relation	rel = try_relation_open(relid, AccessShareLock);
		Oid			filenode;

		if (rel == NULL)
			return JOB_STEP_TARGET_GONE;
		filenode = PgRelFileNumber(rel);
		relation_close(rel, NoLock);
		filenodes = lappend_oid(filenodes, filenode);
		if (filenode == lfirst_oid(filenode_cell))
			continue;
		if (relid == run->job.driving_oid)
			return JOB_STEP_RESTART;
		other_rewritten = true;
	}
	if (run->helper)
	{
		CaptureTriggers triggers = JobTriggers(run);

		/* Anything to record is the job's first worker's to do */
		return other_rewritten || !CaptureIntact(&triggers) ? JOB_STEP_RESTART : JOB_STEP_MORE;
	}
	if (other_rewritten)
	{
		MarkWholeTable(run, "a base table was rewritten");
		run->job.capture_filenodes = JobList(filenodes);
		CatalogJobRecordCapture(&run->job);
	}
	if (!run->whole_table_marked)
	{
		CaptureTriggers triggers = JobTriggers(run);

		if (!CaptureIntact(&triggers))
			MarkWholeTable(run, "a capture trigger was changed, disabled or dropped");
	}
	return JOB_STEP_MORE;
}

/*
 * The driving table or the content relation was rewritten (every tuple id
 * changed), or crash recovery emptied the content: start the build over.
 * Caller is in a step.
 */
static void
RestartBuild(JobRun *run)
{
	Relation	content = table_open(run->content_oid, AccessExclusiveLock);
	Relation	driving = table_open(run->job.driving_oid, AccessShareLock);

	if (ContentWasReset(run, content))
		ereport(LOG,
				(errmsg("background DDL job " INT64_FORMAT ": crash recovery emptied the unlogged \"%s\", restarting the backfill",
						run->job.id, RelationGetRelationName(content))));
	else if (PgRelFileNumber(content) != run->job.target_filenode)
		ereport(LOG,
				(errmsg("background DDL job " INT64_FORMAT ": \"%s\" was rewritten, restarting the backfill",
						run->job.id, RelationGetRelationName(content))));
	else
		ereport(LOG,
				(errmsg("background DDL job " INT64_FORMAT ": table \"%s\" was rewritten, restarting the backfill",
						run->job.id, RelationGetRelationName(driving))));
	PgRelationTruncate(content);
	if (OidIsValid(run->job.staging_oid))
	{
		Relation	staging = table_open(run->job.staging_oid, AccessExclusiveLock);

		PgRelationTruncate(staging);
		table_close(staging, NoLock);
	}
	CaptureRestart(run->job.id);
	run->job.capture_filenodes = JobList(RelationFileNumbers(run->job.capture_relids));
	run->job.blocks_total = RelationGetNumberOfBlocks(driving);
	run->job.target_filenode = PgRelFileNumber(content);
	CatalogJobRestartBuild(&run->job);
	table_close(driving, NoLock);
	table_close(content, NoLock);
	run->next_block = 0;
	run->holes = NIL;
	JobPublishProgress(0, 0, run->job.progress, run->job.rows_total, false);
}

/*
 * No more chunk claims; wait until every claimed chunk's step has ended
 * (the other workers' chunks commit, or are given up).
 */
static void
CloseClaims(JobRun *run)
{
	JobClaimsClose();
	run->build_generation = 0;
	pgstat_report_activity(STATE_RUNNING, "background_ddl: waiting for the job's other workers");
	while (JobChunksInFlight() > 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Run the restart in a step of its own, once no other worker is in a chunk */
static JobStepResult
RestartBuildStep(JobRun *run)
{
	CloseClaims(run);
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
 * The next chunk for this worker: the first worker fills the gaps a crash
 * left first; then every worker takes the next blocks in turn.  False if
 * none is left to take.
 */
static bool
TakeChunk(JobRun *run, ChunkRange *range)
{
	if (run->holes != NIL)
	{
		ChunkRange *hole = linitial(run->holes);

		range->start_block = hole->start_block;
		range->end_block = Min(hole->end_block, hole->start_block + run->job.chunk_blocks);
		hole->start_block = range->end_block;
		if (hole->start_block >= hole->end_block)
			run->holes = list_delete_first(run->holes);
		return true;
	}
	return JobClaimChunk(run->build_generation, run->job.chunk_blocks,
						   &range->start_block, &range->end_block);
}

/* The job's target batch time: its own (alter_ddl), or the server's */
static int
JobBatchTimeMs(const BgddlJob *job)
{
	return job->batch_time_ms > 0 ? job->batch_time_ms : background_ddl_batch_time_ms;
}

/*
 * The rate limit (alter_ddl), after this worker's chunk: the worker keeps a
 * schedule, its share of max_rate from the moment that share was set, and
 * waits until the rows it made since then are due, so that the time spent
 * outside the chunks (checkpoints, catalog updates) counts too.  A worker
 * that fell more than a second behind (it waited for a lock) starts a new
 * schedule rather than race to catch up.  The limits are read again every
 * second while it waits (alter_ddl takes effect at once), and a control
 * request (pause, cancel) ends the wait.  A worker that would wait longer
 * than JOB_GIVE_BACK_SECONDS gives its slot back until then: a slow job
 * must not hold a worker that other jobs could use.
 */
static void
Throttle(JobRun *run)
{
	for (;;)
	{
		double		share = run->job.max_rate / Max(JobWorkerCount(), 1);
		TimestampTz now = GetCurrentTimestamp();
		double		wait_seconds;

		if (run->job.max_rate <= 0 || JobControlPending())
		{
			run->paced_rate = 0;
			break;
		}
		if (share != run->paced_rate)
		{
			run->paced_rate = share;
			run->paced_since = now - (TimestampTz) (run->chunk_seconds * 1000000.0);
			run->paced_rows = 0;
		}
		if (run->chunk_rows > 0)
		{
			run->paced_rows += run->chunk_rows;
			run->chunk_rows = 0;
		}
		wait_seconds = run->paced_rows / share - (now - run->paced_since) / 1000000.0;
		if (wait_seconds < -1.0)
		{
			run->paced_since = now;
			run->paced_rows = 0;
		}
		if (wait_seconds <= 0)
			break;
		if (wait_seconds > JOB_GIVE_BACK_SECONDS)
			JobStepGiveBack(TimestampTzPlusMilliseconds(now, (int64) (wait_seconds * 1000)),
							psprintf("the rate limit of %g rows/s (alter_ddl)", run->job.max_rate));
		pgstat_report_activity(STATE_RUNNING, "background_ddl: throttled by max_rate");
		JobStepSleep((long) (Min(wait_seconds, 1.0) * 1000) + 1);
		JobStepBegin("background_ddl: throttled by max_rate (reading the limits)",
					 STEP_READ_COMMITTED);
		CatalogJobReadLimits(&run->job);
		JobStepEnd();
	}
}

/* Compute one chunk and checkpoint it; caller is in a step */
static void
BackfillChunk(JobRun *run, const ChunkRange *range)
{
	bool		partial = OidIsValid(run->job.staging_oid);
	Relation	content = table_open(partial ? run->job.staging_oid : run->content_oid,
									 RowExclusiveLock);
	Relation	rule_relation = table_open(run->rule_relid, AccessShareLock);
	BgddlJob   *job = &run->job;
	Query	   *query;
	Index		driving_rtindex;
	TidPair    *pairs;
	int			npairs;
	uint64		rows;
	instr_time	start_time;
	instr_time	duration;
	double		seconds;
	double		scale;

	INSTR_TIME_SET_CURRENT(start_time);
	JobQueryBegin(run->query_role, true);
	query = QueryOfRule(rule_relation, run->query_role, run->job.started_at);
	driving_rtindex = QueryDrivingRtindex(query, job->driving_oid);
	if (driving_rtindex == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the query of background DDL job " INT64_FORMAT " can no longer be split into batches",
						job->id),
				 errdetail("Its driving table changed while the job was running.")));
	if (partial)
		query = QueryPartialAggChunk(query);
	rows = QueryBackfillBlocks(content, query, driving_rtindex, partial, true,
						  range->start_block, range->end_block, &pairs, &npairs);
	JobQueryEnd();
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);

	CaptureChunkRecord(job->id, range, rows, job->attempts, seconds, CaptureTidMapEncode(pairs, npairs));

	/*
	 * Adapt this worker's chunk size toward the target batch time, and under
	 * a rate limit toward the rows the limit allows it in that time (at least
	 * a quarter of a second's: a throttled chunk is quick to compute, and the
	 * fixed costs of a chunk, its commit first, must not eat the rate)
	 */
	scale = Min(4.0, Max(0.25, (JobBatchTimeMs(job) / 1000.0) / seconds));
	job->chunk_blocks = (int32) Min((double) CHUNK_BLOCKS_MAX, Max(1.0, job->chunk_blocks * scale));
	if (job->max_rate > 0 && rows > 0)
	{
		double		allowed_rows = job->max_rate * Max(JobBatchTimeMs(job) / 1000.0, 0.25) /
			Max(JobWorkerCount(), 1);
		double		rows_per_block = (double) rows / Max(range->end_block - range->start_block, 1);

		job->chunk_blocks = (int32) Max(1.0, Min(job->chunk_blocks, allowed_rows / rows_per_block));
	}
	run->chunk_rows = rows;
	run->chunk_seconds = seconds;
	CatalogJobRecordChunk(job, rows, range->end_block - range->start_block,
					   seconds / Max(range->end_block - range->start_block, 1) /
					   Max(JobWorkerCount(), 1));
	table_close(rule_relation, NoLock);
	table_close(content, NoLock);
	JobPublishChunkDone(job->chunks_done, job->progress);
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

	SourcesStepBegin(run, activity, false);
	result = CheckSources(run);
	if (result == JOB_STEP_MORE)
	{
		if (TakeChunk(run, &range))
			BackfillChunk(run, &range);
		else
			result = JOB_STEP_DONE;
	}
	JobStepEnd();
	if (result == JOB_STEP_MORE)
		Throttle(run);
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
	List	   *holes;
	MemoryContext old_context;

	CloseClaims(run);
	JobStepBegin("background_ddl: checking the chunks", STEP_READ_COMMITTED);
	old_context = MemoryContextSwitchTo(JobContext());
	holes = UncoveredRanges(CaptureChunkRanges(run->job.id), run->job.blocks_total);
	MemoryContextSwitchTo(old_context);
	CatalogJobReadProgress(&run->job);
	JobStepEnd();
	if (holes == NIL)
		return JOB_STEP_DONE;
	run->holes = holes;
	run->next_block = run->job.blocks_total;	/* the rest is covered */
	return JOB_STEP_MORE;
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
	JobStepResult result;

	if (!OidIsValid(run->job.driving_oid))
		return JOB_STEP_DONE;
	if (run->job.capture_triggers == NIL)
	{
		JobStepHoldPoint("installing capture");
		JobRunLockingStep(run, InstallCaptureStep, JOB_PHASE_INSTALLING_CAPTURE,
						  "background_ddl: installing capture");
		JobStepBegin("background_ddl: backfilling", STEP_READ_COMMITTED);
		CatalogJobSetPhase(run->job.id, JOB_PHASE_BACKFILLING);
		JobStepEnd();
		run->next_block = 0;
		run->holes = NIL;
		return JOB_STEP_MORE;
	}
	if (run->build_generation == 0)
	{
		run->build_generation = JobClaimsOpen(run->next_block, run->job.blocks_total);
		JobWakeScheduler(MyDatabaseId);
	}

	JobStepHoldAtChunk(run->job.chunks_done);
	result = ChunkStep(run, "background_ddl: backfilling a chunk");
	if (result == JOB_STEP_RESTART && RestartBuildStep(run) == JOB_STEP_RESTART)
		return JOB_STEP_MORE;
	if (result == JOB_STEP_DONE)
		return SettleBackfill(run);
	if (result == JOB_STEP_TARGET_GONE)
		CloseClaims(run);
	return result;
}

/*
 * Are writers busy on the captured tables?  Judged over at least a second
 * (writers report their statistics about once a second): more than
 * HELPER_QUIET_MARKS_PER_SECOND marks logged per second.
 */
static bool
CapturedTablesBusy(JobRun *run)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		marks;
	double		seconds;
	bool		busy;

	JobStepBegin("background_ddl: looking at the writers", STEP_READ_COMMITTED);
	marks = CaptureMarksLogged();
	JobStepEnd();
	if (run->marks_logged_at == 0)
	{
		run->marks_logged = marks;
		run->marks_logged_at = now;
		return false;
	}
	seconds = (now - run->marks_logged_at) / 1000000.0;
	if (seconds < 1.0)
		return false;
	busy = (marks - run->marks_logged) / seconds > HELPER_QUIET_MARKS_PER_SECOND;
	run->marks_logged = marks;
	run->marks_logged_at = now;
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
	JobStepResult result;

	if (!OidIsValid(run->job.driving_oid) || JobHelpersShouldLeave() ||
		(run->job.max_workers > 0 && JobWorkerCount() > run->job.max_workers))
		return JOB_STEP_DONE;
	if (CapturedTablesBusy(run))
	{
		JobHelpersBackOff(TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HELPER_BACKOFF_MS));
		return JOB_STEP_DONE;
	}
	if (run->build_generation == 0)
		run->build_generation = JobBuildGeneration();
	if (run->build_generation == 0)
		return JOB_STEP_DONE;
	result = ChunkStep(run, "background_ddl: backfilling a chunk (helping)");
	return result == JOB_STEP_MORE ? JOB_STEP_MORE : JOB_STEP_DONE;
}

/*
 * Process the marks in dirty-log blocks [from_block, to_block) at the
 * current snapshot, in the content relation (or, for partial aggregation,
 * the staging relation).  Caller is in a step and has checked the sources.
 */
static int
ProcessMarks(JobRun *run, BlockNumber from_block, BlockNumber to_block)
{
	Relation	content = table_open(OidIsValid(run->job.staging_oid) ?
									 run->job.staging_oid : run->content_oid,
									 RowExclusiveLock);
	Relation	rule_relation = table_open(run->rule_relid, AccessShareLock);
	QueryCatchUpTarget target = {run->job.id, content, rule_relation, run->query_role,
	run->job.driving_oid, OidIsValid(run->job.staging_oid), run->job.blocks_total,
	run->job.started_at};
	int64		gained;
	int			sources = QueryCatchUpBlocks(&target, from_block, to_block, &gained);

	table_close(rule_relation, NoLock);
	table_close(content, NoLock);
	run->job.rows_done += gained;
	return sources;
}

/*
 * One catch-up pass over the marks visible when it starts, in batches of
 * short transactions, each a range of blocks of the dirty log whose size
 * adapts toward the batch time.  Returns JOB_STEP_MORE if another pass is
 * worth it, JOB_STEP_DONE when the cut-over can take the rest.
 */
JobStepResult
QueryJobCatchUp(JobRun *run)
{
	BlockNumber pass_blocks;
	int64		backlog;
	int64		backlog_at_start;
	bool		whole_table;

	if (!OidIsValid(run->job.driving_oid) || run->job.catchup_passes >= CATCHUP_MAX_PASSES)
		return JOB_STEP_DONE;

	JobStepHoldPoint("catching up");
	run->job.catchup_passes++;
	JobStepBegin("background_ddl: catching up", STEP_READ_COMMITTED);
	CatalogJobSetPhase(run->job.id, JOB_PHASE_CATCHING_UP);
	pass_blocks = CaptureLogBlocks();
	whole_table = CaptureHasWholeTable(run->job.id);
	backlog = whole_table ? 0 : CaptureBacklog(run->job.id);
	backlog_at_start = backlog;
	CatalogJobSetCounters(run->job.id, run->job.rows_done, backlog, run->job.catchup_passes);
	JobStepEnd();
	if (whole_table)
		return JOB_STEP_DONE;

	for (BlockNumber from_block = 0; from_block < pass_blocks;)
	{
		BlockNumber to_block = Min(pass_blocks, from_block + run->catchup_batch_blocks);
		JobStepResult check;
		instr_time	start_time;
		instr_time	duration;
		double		seconds;

		INSTR_TIME_SET_CURRENT(start_time);
		/* The marks it reads and the rows it recomputes share one snapshot */
		SourcesStepBegin(run, "background_ddl: catching up", true);
		JobStepHoldPoint("catch-up batch");
		check = CheckSources(run);
		if (check == JOB_STEP_MORE && !run->whole_table_marked)
		{
			backlog -= ProcessMarks(run, from_block, to_block);
			CatalogJobSetCounters(run->job.id, run->job.rows_done, Max(backlog, 0),
						   run->job.catchup_passes);
		}
		JobStepEnd();
		if (check == JOB_STEP_RESTART)
			return RestartBuildStep(run);
		if (check != JOB_STEP_MORE)
			return check;
		if (run->whole_table_marked)
			return JOB_STEP_DONE;
		JobPublishProgress(run->job.rows_done, run->job.chunks_done, run->job.progress,
							 run->job.rows_total, false);

		INSTR_TIME_SET_CURRENT(duration);
		INSTR_TIME_SUBTRACT(duration, start_time);
		seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);
		run->catchup_batch_blocks =
			(int32) Min((double) CATCHUP_BLOCKS_MAX,
						Max(1.0, (to_block - from_block) *
							Min(4.0, Max(0.25, (JobBatchTimeMs(&run->job) / 1000.0) / seconds))));
		from_block = to_block;
	}
	return backlog_at_start > CATCHUP_FINAL_BACKLOG ? JOB_STEP_MORE : JOB_STEP_DONE;
}

/* Delete every row of the content relation (visible to this transaction) */
static void
EmptyContent(Relation content)
{
	TableScanDesc scan = table_beginscan(content, GetActiveSnapshot(), 0, NULL);
	HeapTuple	tuple;

	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
		simple_heap_delete(content, &tuple->t_self);
	table_endscan(scan);
	CommandCounterIncrement();
}

/*
 * The computing part of the cut-over, inside the kind's cut-over step
 * (REPEATABLE READ): afterwards the content relation holds exactly the
 * query's result at this transaction's snapshot.  A chunked job processes
 * its last marks; a one-batch job, or one whose capture missed something,
 * computes the whole query here.  Caller holds RowExclusiveLock on the
 * content relation.  *rows: the result's row count.
 */
JobStepResult
QueryJobFinalize(JobRun *run, Relation content, int64 *rows)
{
	bool		recompute_all = !OidIsValid(run->job.driving_oid);

	*rows = run->job.rows_done;
	if (!recompute_all)
	{
		JobStepResult check = CheckSources(run);

		if (check != JOB_STEP_MORE)
			return check;
		recompute_all = run->whole_table_marked || CaptureHasWholeTable(run->job.id);
		if (!recompute_all)
		{
			BlockNumber blocks = CaptureLogBlocks();

			for (BlockNumber from_block = 0; from_block < blocks; from_block += CATCHUP_BLOCKS_MAX)
				(void) ProcessMarks(run, from_block, Min(blocks, from_block + CATCHUP_BLOCKS_MAX));
			*rows = run->job.rows_done;
		}
		else
			EmptyContent(content);
	}
	if (recompute_all || OidIsValid(run->job.staging_oid))
	{
		Relation	rule_relation = table_open(run->rule_relid, AccessShareLock);
		Query	   *query;

		JobQueryBegin(run->query_role, false);
		query = QueryOfRule(rule_relation, run->query_role, run->job.started_at);
		/*
		 * Partial aggregation: the result is the combine of the staging rows,
		 * as the marks just processed left them
		 */
		if (!recompute_all)
		{
			query = QueryPartialAggCombine(query, run->job.staging_oid);
			CommandCounterIncrement();
			UpdateActiveSnapshotCommandId();
		}
		*rows = (int64) QueryBackfillAll(content, query);
		JobQueryEnd();
		table_close(rule_relation, NoLock);
		QueryPartialAggDropStaging(run->job.staging_oid);
	}
	return JOB_STEP_DONE;
}

/*
 * The cut-over of a query job: one REPEATABLE READ transaction that
 * finishes the computation (QueryJobFinalize), then lets the kind publish
 * the content (publish must end the job as succeeded, with CatalogJobFinish), and
 * commits.  For a one-batch job this is the batch, so its phase says
 * backfilling.
 */
JobStepResult
QueryJobCutOver(JobRun *run, QueryJobPublish publish)
{
	Relation	content;
	JobStepResult result;
	int64		rows;
	JobPhase	phase = OidIsValid(run->job.driving_oid) ?
		JOB_PHASE_CUTTING_OVER : JOB_PHASE_BACKFILLING;

	JobStepHoldPoint("cutting over");
	JobPublishPhase(phase);
	SourcesStepBegin(run, "background_ddl: cutting over", true);
	CatalogJobSetPhase(run->job.id, phase);
	if (!JobRunTargetExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	content = table_open(run->content_oid, RowExclusiveLock);
	result = QueryJobFinalize(run, content, &rows);
	table_close(content, NoLock);
	if (result == JOB_STEP_DONE)
	{
		CaptureTriggers triggers = JobTriggers(run);

		/*
		 * The triggers log nothing once the job has ended, and its worker
		 * drops them next; detached from the target now, so that a DROP of
		 * the new object right after does not drop them too, which would
		 * lock the base tables (they are the worker's to drop, with the
		 * short lock timeout).
		 */
		CaptureDetach(&triggers, run->job.target_oid);
		publish(run, rows);
	}
	JobStepEnd();
	return result;
}

/*
 * Build a query job's content in the session that submitted it, in its
 * still open transaction, as the blocking statement would have: that
 * transaction uses the target before it committed.  The whole query runs
 * here, at the session's snapshot, as the job's role; then the kind
 * publishes it as at a cut-over, and the job succeeds when the transaction
 * commits.  run holds the job, and the kind's rule_relid, content_oid and
 * query_role.
 */
void
QueryJobBuildHere(JobRun *run, QueryJobPublish publish)
{
	Relation	content = table_open(run->content_oid, RowExclusiveLock);
	Relation	rule_relation = table_open(run->rule_relid, AccessShareLock);
	Query	   *query;
	int64		rows;

	JobQueryBegin(run->query_role, false);
	query = QueryOfRule(rule_relation, run->query_role,
							  GetCurrentTransactionStartTimestamp());
	rows = (int64) QueryBackfillAll(content, query);
	JobQueryEnd();
	table_close(rule_relation, NoLock);
	table_close(content, NoLock);
	CommandCounterIncrement();
	publish(run, rows);
}
