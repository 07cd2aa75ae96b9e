/*-------------------------------------------------------------------------
 *
 * session_submit.c
 *	  Submitting DDL as a background job: the ProcessUtility hook.
 *
 * While background_ddl is on, a statement that a job kind accepts
 * (kind.h) does here everything the blocking statement would do except
 * computing the content:
 *
 *	1. The kind validates it as the blocking statement would, in the same
 *	   order (parse analysis has already run: syntax errors, missing tables
 *	   and columns).
 *	2. The kind reserves the target: a placeholder that holds the name and
 *	   the query, bound to OIDs, that nobody can use yet.
 *	3. The job row is persisted, in the same transaction: a rolled-back
 *	   submit leaves neither job nor placeholder.  It records the statement
 *	   alone (not the rest of the query string it came in), and the
 *	   session's identity and settings (job_identity.c).  What the kind
 *	   needs the job's id for comes with it (a foreign key's capture).
 *	4. After commit, the scheduler of this database is woken
 *	   (job_xact.c).
 *
 * In a database without the extension, nothing here does anything but say
 * so when a job would be submitted (catalog_access.c).  With the extension,
 * and whatever background_ddl says, REFRESH and DROP of a job's target, and
 * changes to a placeholder that the job will replace, are guarded
 * (session_guards.c, session_control.c), capture triggers cannot be
 * renamed (capture_trigger.c), DROP EXTENSION is refused while jobs are
 * unfinished, and COMMIT PREPARED wakes the scheduler for jobs the prepared
 * transaction submitted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "capture/capture_trigger.h"
#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/job_identity.h"
#include "catalog/settings.h"
#include "engine/job_shmem.h"
#include "engine/job_xact.h"
#include "engine/kind.h"
#include "kinds/kind_placeholder.h"
#include "session/session_control.h"
#include "session/session_guards.h"
#include "session/session_order.h"
#include "session/session_statement.h"
#include "session/session_submit.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* What submit_ddl asks of the next job this session submits (SessionSubmitWith) */
static char *next_idempotency_key = NULL;
static List *next_after = NIL;

static void BgddlProcessUtility(PlannedStmt *pstmt, const char *queryString,
								bool readOnlyTree, ProcessUtilityContext context,
								ParamListInfo params, QueryEnvironment *queryEnv,
								DestReceiver *dest, QueryCompletion *qc);

void
SessionSubmitInstall(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = BgddlProcessUtility;
}

static void
CallNextProcessUtility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/* KindSubmit.run_utility: a statement derived from the submitted one */
static void
RunDerivedUtility(KindSubmit *submit, PlannedStmt *pstmt)
{
	CallNextProcessUtility(pstmt, submit->query_string, false, submit->context,
						   submit->params, submit->query_env, None_Receiver, submit->qc);
}

/*
 * The statement alone, out of the query string it came in (which may hold
 * other statements, with secrets): its location and length, trimmed.
 */
char *
SessionStatementText(const char *query_string, int location, int length)
{
	const char *start = query_string;
	int			size;

	if (location > 0 && location <= (int) strlen(query_string))
		start += location;
	size = length > 0 ? Min(length, (int) strlen(start)) : (int) strlen(start);
	while (size > 0 && isspace((unsigned char) *start))
	{
		start++;
		size--;
	}
	while (size > 0 && (isspace((unsigned char) start[size - 1]) || start[size - 1] == ';'))
		size--;
	return pnstrdup(start, size);
}

/*
 * submit_ddl: the next job this session submits gets this idempotency key
 * and starts after these jobs (int64 *) too; SessionSubmitWith(NULL, NIL)
 * forgets them.  Kept in TopMemoryContext until then.
 */
void
SessionSubmitWith(const char *idempotency_key, List *after)
{
	MemoryContext old_context = MemoryContextSwitchTo(TopMemoryContext);
	ListCell   *lc;

	if (next_idempotency_key != NULL)
		pfree(next_idempotency_key);
	list_free_deep(next_after);
	next_idempotency_key = idempotency_key != NULL ? pstrdup(idempotency_key) : NULL;
	next_after = NIL;
	foreach(lc, after)
		next_after = lappend(next_after, memcpy(palloc(sizeof(int64)), lfirst(lc), sizeof(int64)));
	MemoryContextSwitchTo(old_context);
}

/*
 * The jobs of a list that no other job of it starts after: starting after
 * those is starting after all (a job of a chain that also reads the table
 * of an earlier one stays in the chain)
 */
static List *
WithoutImpliedJobs(List *jobs)
{
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, jobs)
	{
		int64		id = *(int64 *) lfirst(lc);
		ListCell   *other;
		bool		implied = false;

		foreach(other, jobs)
			implied |= other != lc && CatalogJobStartsAfter(*(int64 *) lfirst(other), id);
		if (!implied)
			kept = lappend(kept, lfirst(lc));
	}
	return kept;
}

/*
 * The jobs a new job starts after: background_ddl.after's, submit_ddl's,
 * those whose placeholders its statement reads (the kind's, in
 * submit->after), and the session's own that it would change or whose
 * targets it uses (session_order.c), each once; every one must exist and not have failed or
 * been cancelled.  A job can only start after jobs that exist before it:
 * no cycle can form.
 */
static List *
JobsToStartAfter(const KindSubmit *submit)
{
	char	   *bad;
	List	   *all = list_concat(list_concat(list_concat(SettingsJobList(background_ddl_after, &bad),
														  list_copy(next_after)),
											  list_copy(submit->after)),
								  SessionOrderJobsBefore(submit->pstmt->utilityStmt));
	List	   *after = NIL;
	ListCell   *lc;

	foreach(lc, all)
	{
		int64		id = *(int64 *) lfirst(lc);
		BgddlJob	job;
		ListCell   *seen;
		bool		duplicate = false;

		foreach(seen, after)
			duplicate |= *(int64 *) lfirst(seen) == id;
		if (duplicate)
			continue;
		if (!CatalogJobLoad(id, &job, true))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("background DDL job %lld does not exist", (long long) id),
					 errdetail("A job can only start after jobs of this database."),
					 errhint("Check background_ddl.after.")));
		if (job.state == JOB_STATE_FAILED || job.state == JOB_STATE_CANCELLED)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 job.state == JOB_STATE_FAILED ?
					 errmsg("background DDL job %lld failed", (long long) id) :
					 errmsg("background DDL job %lld was cancelled", (long long) id),
					 errdetail("A job that starts after it would never start."),
					 errhint("Check background_ddl.after.")));
		after = lappend(after, lfirst(lc));
	}
	return WithoutImpliedJobs(after);
}

/*
 * The group that the current transaction's jobs join
 * (background_ddl.cutover_group): its name, and its first job, which gives
 * the group its id
 */
static TransactionId group_xid = InvalidTransactionId;
static char *group_name = NULL;
static int64 group_first_job = 0;

/*
 * The group a job submitted now joins: 0 if it is the group's first job
 * (or background_ddl.cutover_group is not set).  Outside a transaction
 * block it is refused: its group would be itself, published at once.
 */
static int64
GroupToJoin(void)
{
	if (*background_ddl_cutover_group == '\0')
		return 0;
	if (!IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_NO_ACTIVE_SQL_TRANSACTION),
				 errmsg("background_ddl.cutover_group groups the jobs of one transaction block"),
				 errdetail("This statement runs outside a transaction block: its job would be a group of one."),
				 errhint("BEGIN; SET LOCAL background_ddl.cutover_group = '%s'; then the statements; COMMIT.",
						 background_ddl_cutover_group)));
	return SessionSubmitGroup();
}

/*
 * The group that a job submitted now joins (its first job's id), if the
 * transaction has submitted one under background_ddl.cutover_group; else 0
 */
int64
SessionSubmitGroup(void)
{
	if (*background_ddl_cutover_group != '\0' && TransactionIdIsValid(group_xid) &&
		group_xid == GetTopTransactionIdIfAny() &&
		strcmp(group_name, background_ddl_cutover_group) == 0)
		return group_first_job;
	return 0;
}

/* The routine that builds the job: the kind's variant that its checks chose (in kind_state) */
static const KindRoutine *
BuiltBy(const KindRoutine *kind, Jsonb *kind_state)
{
	BgddlJob	job = {.kind = (char *) kind->name, .kind_state = kind_state};

	return KindRoutineForJob(&job);
}

/*
 * Refuse a statement that cannot be published with a group: one whose
 * result is in use before its cut-over (as built_by builds it)
 */
static void
CheckGroupable(const KindRoutine *built_by)
{
	if (*background_ddl_cutover_group == '\0')
		return;
	if (built_by->cut_over_publish != NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("this %s job cannot be published with a group", built_by->name),
			 errdetail("What this %s job makes is in use before its cut-over, and background_ddl.cutover_group is \"%s\".",
					   built_by->name, background_ddl_cutover_group),
			 errhint("CREATE MATERIALIZED VIEW, CREATE TABLE AS, REFRESH MATERIALIZED VIEW, ALTER TABLE ... SET TABLESPACE, ALTER COLUMN ... TYPE, ADD CHECK, ADD FOREIGN KEY, ADD PRIMARY KEY, ADD UNIQUE, VALIDATE CONSTRAINT, SET NOT NULL or ATTACH PARTITION, and CREATE INDEX (not on a distributed table), are published with a group; RESET background_ddl.cutover_group to submit this one on its own.")));
}

/*
 * A job of a group must not start after another job of its group (which
 * is published only once this one is built): refuse
 */
static void
CheckGroupOrder(int64 group_id, List *after)
{
	ListCell   *lc;

	foreach(lc, after)
	{
		BgddlJob	job;

		if (group_id != 0 && CatalogJobLoad(*(int64 *) lfirst(lc), &job, true) &&
			job.group_id == group_id)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("this job would start after job %lld of its group \"%s\"",
							(long long) job.id, background_ddl_cutover_group),
					 errdetail("It reads what job %lld builds (or background_ddl.after names it); a group's jobs are built side by side and published together.",
							   (long long) job.id),
					 errhint("Submit it after the group's transaction, or in another group.")));
	}
}

/* The job is its group's: the group is known by it, and its members are alike */
static void
JoinedGroup(int64 job_id, int64 group_id)
{
	int64		unlike;

	if (group_id == 0)
	{
		group_xid = GetTopTransactionId();
		if (group_name != NULL)
			pfree(group_name);
		group_name = MemoryContextStrdup(TopMemoryContext, background_ddl_cutover_group);
		group_first_job = job_id;
		return;
	}
	unlike = CatalogGroupMemberUnlike(job_id);
	if (unlike != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("this job cannot join job %lld in group \"%s\"",
						(long long) unlike, background_ddl_cutover_group),
				 errdetail("A group's jobs are published by one worker, as one role with one set of settings; this statement runs as another role, or with other settings."),
				 errhint("Submit the group's statements as one role, without SET between them.")));
}

/*
 * background_ddl.estimate: what estimate_ddl says of the statement, measured
 * now (on a rolled-back sample, as the submitting role, before the job's
 * placeholder exists), as jsonb; NULL if no kind estimates it
 */
static Jsonb *
EstimateAtSubmit(const char *statement)
{
	List	   *raws = raw_parser(statement, RAW_PARSE_DEFAULT);
	JobEstimate estimate;

	if (list_length(raws) != 1 ||
		!SessionOrderFreeEstimate(linitial_node(RawStmt, raws)->stmt, statement, &estimate))
		return NULL;
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(psprintf(
		"{\"rows\": " INT64_FORMAT ", \"bytes\": " INT64_FORMAT ", \"wal_bytes\": " INT64_FORMAT
		", \"seconds\": %s, \"sampled_blocks\": " INT64_FORMAT ", \"total_blocks\": " INT64_FORMAT "}",
		estimate.rows, estimate.bytes, estimate.wal_bytes,
		estimate.seconds < 0 ? "null" : psprintf("%.1f", estimate.seconds),
		estimate.sampled_blocks, estimate.total_blocks))));
}

/*
 * Record the job of a validated (and reserved) statement, to start after
 * the jobs after (JobsToStartAfter), and say so in a
 * NOTICE: in a group if group_name is set (the user's
 * background_ddl.cutover_group, or a partitioned table's own: see Submit),
 * whose first job is group_id (0: this one).  Returns the job's id.
 */
static int64
SubmitJob(const KindRoutine *routine, const KindRoutine *built_by, KindSubmit *submit,
		  char *command, Jsonb *estimate, List *after, const char *group_name, int64 group_id)
{
	BgddlJobSubmission submission;
	JobOrder	order;
	int64		job_id;
	StringInfoData ids;
	StringInfoData detail;
	ListCell   *lc;

	memset(&submission, 0, sizeof(submission));
	submission.kind = routine->name;
	JobIdentityCapture(&submission.identity);
	submission.target_oid = submit->target_oid;
	submission.target_name = submit->target_name;
	submission.kind_state = submit->kind_state;
	submission.command = command;
	submission.estimate = estimate;
	submission.strategy = submit->strategy;
	submission.after = after;
	submission.idempotency_key = next_idempotency_key;
	submission.manual_cutover = background_ddl_cutover == BGDDL_CUTOVER_MANUAL &&
		built_by->cut_over_publishes;
	if (built_by->cut_over_publishes && *background_ddl_cutover_window != '\0')
		submission.cutover_window = background_ddl_cutover_window;
	if (built_by->cut_over_publishes)
		submission.cutover_max_writes = background_ddl_cutover_max_writes;
	/* (the user's group: a partitioned table's own has only its leaves' jobs) */
	if (group_name != NULL && submit->leaves == NIL)
		CheckGroupOrder(group_id, submission.after);
	submission.cutover_group = (char *) group_name;
	submission.group_id = group_id;
	job_id = CatalogJobInsert(&submission);
	if (group_name != NULL && submit->leaves == NIL)
		JoinedGroup(job_id, group_id);
	if (routine->submitted != NULL)
		routine->submitted(submit, job_id);
	JobXactNotify(job_id, JOB_STATE_QUEUED);
	SessionSubmitWith(NULL, NIL);
	order.job_id = job_id;
	order.target_oid = submit->target_oid;
	/* A placeholder that becomes the object itself can be named meanwhile */
	order.target_effects = submit->target_effects != 0 ? submit->target_effects :
		routine->replaces_placeholder ? REL_ANY : REL_ANY & ~REL_NAMES;
	order.sources = submit->sources;
	order.source_effects = submit->source_effects;
	order.key_table = submit->key_table;
	order.key_placeholder = submit->key_placeholder;
	order.changes_columns = submit->changes_columns;
	order.held_table = submit->held_table;
	SessionOrderSubmitted(&order);

	initStringInfo(&ids);
	foreach(lc, submission.after)
		appendStringInfo(&ids, "%s%lld", ids.len > 0 ? ", " : "", (long long) *(int64 *) lfirst(lc));
	initStringInfo(&detail);
	if (list_length(submission.after) == 1)
		appendStringInfo(&detail, "It starts once job %s has succeeded.", ids.data);
	else if (submission.after != NIL)
		appendStringInfo(&detail, "It starts once jobs %s have succeeded.", ids.data);
	if (submit->one_batch_reason != NULL)
		appendStringInfo(&detail, "%sIt runs in one batch: %s.", detail.len > 0 ? " " : "",
						 submit->one_batch_reason);
	if (submission.cutover_group != NULL)
		appendStringInfo(&detail, "%sIt is published with the other jobs of group \"%s\" (its first job, %lld), in one transaction, once all are built.",
						 detail.len > 0 ? " " : "", submission.cutover_group,
						 (long long) (group_id != 0 ? group_id : job_id));
	if (submission.manual_cutover)
		appendStringInfo(&detail, "%sOnce built, it waits for complete_ddl(%lld) to publish it.",
						 detail.len > 0 ? " " : "", (long long) job_id);
	else if (submission.cutover_window != NULL)
		appendStringInfo(&detail, "%sOnce built, it waits for its cut-over window, %s.",
						 detail.len > 0 ? " " : "", submission.cutover_window);
	else if (submission.cutover_max_writes > 0)
		appendStringInfo(&detail, "%sOnce built, it waits until fewer than %d rows a second are written to the tables it reads.",
						 detail.len > 0 ? " " : "", submission.cutover_max_writes);
	else if (background_ddl_cutover == BGDDL_CUTOVER_MANUAL ||
			 *background_ddl_cutover_window != '\0' || background_ddl_cutover_max_writes > 0)
		appendStringInfo(&detail, "%sIts cut-over does not wait for complete_ddl: what a %s job makes is in use before it.",
						 detail.len > 0 ? " " : "", built_by->name);
	/*
	 * pg_bgddl takes the job's id from this NOTICE, which it knows by its
	 * text and by this file's name (its SUBMIT_NOTICE_SOURCE_FILE)
	 */
	if (detail.len > 0)
		ereport(NOTICE,
				(errmsg("background DDL job %lld submitted for %s",
						(long long) job_id, submit->target_name),
				 errdetail_internal("%s", detail.data)));
	else
		ereport(NOTICE,
				(errmsg("background DDL job %lld submitted for %s",
						(long long) job_id, submit->target_name)));
	return job_id;
}

/*
 * Run a statement that a kind accepts as a background job.  False if its
 * validation declined it (it runs as PostgreSQL runs it).  A statement on
 * a partitioned table that its validation makes a job for each leaf
 * partition (submit.leaves) is those jobs, published together: a group of
 * their own (submit.group_name).
 */
static bool
Submit(const KindRoutine *routine, PlannedStmt *pstmt, const char *queryString,
	   ProcessUtilityContext context, ParamListInfo params,
	   QueryEnvironment *queryEnv, QueryCompletion *qc)
{
	const BgddlCatalog *catalog = CatalogLookup();
	KindSubmit	submit;
	const KindRoutine *built_by;
	int64		group_id;
	char	   *command;
	Jsonb	   *estimate;
	List	   *after;
	ListCell   *leaf_cell;
	ListCell   *state_cell;

	if (catalog == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						BGDDL_EXTENSION_NAME),
				 errdetail("background_ddl is on, so this statement would run as a background job."),
				 errhint("Run CREATE EXTENSION %s, or SET background_ddl = off.",
						 BGDDL_EXTENSION_NAME)));
	/* Keep DROP EXTENSION out until this transaction ends */
	LockDatabaseObject(ExtensionRelationId, catalog->extension_oid, 0, AccessShareLock);

	memset(&submit, 0, sizeof(submit));
	submit.pstmt = pstmt;
	submit.query_string = queryString;
	submit.context = context;
	submit.params = params;
	submit.query_env = queryEnv;
	submit.qc = qc;
	submit.run_utility = RunDerivedUtility;
	SessionOrderAwaitChecks(routine, pstmt->utilityStmt);
	group_id = GroupToJoin();
	routine->validate(&submit);
	if (submit.declined)
		return false;
	built_by = BuiltBy(routine, submit.leaves != NIL ? linitial(submit.leaf_states) :
					   submit.kind_state);
	CheckGroupable(built_by);
	command = SessionStatementText(queryString, pstmt->stmt_location, pstmt->stmt_len);
	estimate = background_ddl_estimate ? EstimateAtSubmit(command) : NULL;
	if (submit.leaves == NIL)
	{
		routine->reserve(&submit);
		(void) SubmitJob(routine, built_by, &submit, command, estimate, JobsToStartAfter(&submit),
						 *background_ddl_cutover_group != '\0' ? background_ddl_cutover_group : NULL,
						 group_id);
		return true;
	}
	/*
	 * (the statement's estimate is its first job's; they all start after
	 * what the statement starts after, not after each other)
	 */
	after = JobsToStartAfter(&submit);
	group_id = 0;
	forboth(leaf_cell, submit.leaves, state_cell, submit.leaf_states)
	{
		Oid			leaf = lfirst_oid(leaf_cell);
		int64		job_id;

		submit.target_oid = leaf;
		submit.target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(leaf)),
														get_rel_name(leaf));
		submit.kind_state = lfirst(state_cell);
		job_id = SubmitJob(routine, built_by, &submit, command, estimate, after,
						   submit.group_name, group_id);
		if (group_id == 0)
			group_id = job_id;
		estimate = NULL;
	}
	return true;
}

/*
 * A statement that PostgreSQL runs on each partition of a partitioned table
 * in a transaction of its own (KindPartitionStatements: VACUUM FULL,
 * CLUSTER): a job for each partition, as its own statement, if a kind takes
 * every one; true if so.  Otherwise (one of them would run in this session,
 * or is no job's) the statement runs as PostgreSQL runs it, with the NOTICE
 * of the partition that would run here.  A partition whose submit declines
 * (gone since) runs as PostgreSQL runs its statement.
 */
static bool
SubmitPerPartition(PlannedStmt *pstmt, ProcessUtilityContext context, ParamListInfo params,
				   QueryEnvironment *queryEnv, QueryCompletion *qc)
{
	List	   *statements = KindPartitionStatements(pstmt->utilityStmt,
													 context == PROCESS_UTILITY_TOPLEVEL);
	List	   *leaves = NIL;
	List	   *routines = NIL;
	ListCell   *text_cell;
	ListCell   *leaf_cell;
	ListCell   *routine_cell;

	if (statements == NIL)
		return false;
	foreach(text_cell, statements)
	{
		PlannedStmt *leaf = makeNode(PlannedStmt);
		const char *reason;
		const KindRoutine *routine;

		leaf->commandType = CMD_UTILITY;
		leaf->canSetTag = pstmt->canSetTag;
		leaf->utilityStmt = linitial_node(RawStmt, raw_parser(lfirst(text_cell),
															  RAW_PARSE_DEFAULT))->stmt;
		routine = KindForStatement(leaf->utilityStmt, &reason);
		if (routine == NULL)
		{
			if (reason != NULL)
				KindNoticeInSession(reason);
			return false;
		}
		leaves = lappend(leaves, leaf);
		routines = lappend(routines, (void *) routine);
	}
	forthree(text_cell, statements, leaf_cell, leaves, routine_cell, routines)
	{
		if (!Submit(lfirst(routine_cell), lfirst(leaf_cell), lfirst(text_cell), context, params,
					queryEnv, qc))
			CallNextProcessUtility(lfirst(leaf_cell), lfirst(text_cell), false, context, params,
								   queryEnv, None_Receiver, NULL);
	}
	return true;
}

/*
 * DROP EXTENSION background_ddl: refused while jobs are unfinished (their
 * objects would be left half-built, or their workers would fail), before it
 * does anything else: a refusal takes no lock but the extension's own.
 * What the kinds of ended jobs have not cleaned up yet (capture triggers on
 * users' tables) is cleaned up here, their tables' locks asked for as a job
 * asks for them (within background_ddl.lock_timeout, never queueing
 * longer): if one does not come, or a worker is cleaning up that job now,
 * the DROP fails, saying so, and can be run again.
 */
/* The context of an error while DROP EXTENSION cleans up after a job */
static void
CleanupErrorContext(void *arg)
{
	errcontext("while dropping the capture triggers of background DDL job %lld",
			   (long long) *(int64 *) arg);
}

static void
GuardDropExtension(DropStmt *stmt)
{
	const BgddlCatalog *catalog;
	ListCell   *lc;
	bool		ours = false;
	List	   *job_ids;
	StringInfoData unfinished;

	foreach(lc, stmt->objects)
	{
		if (strcmp(strVal(lfirst(lc)), BGDDL_EXTENSION_NAME) == 0)
			ours = true;
	}
	if (!ours || (catalog = CatalogLookup()) == NULL)
		return;

	/* Submits and control functions hold it shared: none is half done */
	LockDatabaseObject(ExtensionRelationId, catalog->extension_oid, 0, AccessExclusiveLock);
	initStringInfo(&unfinished);
	job_ids = CatalogJobsUnfinished();
	foreach(lc, job_ids)
	{
		int64		job_id = *(int64 *) lfirst(lc);
		BgddlJob	job;

		if (CatalogJobLoad(job_id, &job, true) && !JobStateIsFinal(job.state))
			appendStringInfo(&unfinished, "%s%lld (%s)",
							 unfinished.len > 0 ? ", " : "", (long long) job_id, CatalogStateName(job.state));
	}
	if (unfinished.len > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot drop extension %s because background DDL jobs are unfinished",
						BGDDL_EXTENSION_NAME),
				 errdetail("Unfinished jobs: %s.", unfinished.data),
				 errhint("Cancel them with cancel_ddl(id) and wait for them with wait_ddl(id), or let them finish.")));
	foreach(lc, job_ids)
	{
		int64		job_id = *(int64 *) lfirst(lc);
		LOCKTAG		job_lock;
		BgddlJob	job;

		/* An ended job that a worker is cleaning up now: it has the job lock */
		JobLockTagSet(&job_lock, MyDatabaseId, job_id);
		if (LockAcquire(&job_lock, JOB_LOCK_CONTROL, false, true) == LOCKACQUIRE_NOT_AVAIL)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("cannot drop extension %s while a worker cleans up after background DDL job %lld",
							BGDDL_EXTENSION_NAME, (long long) job_id),
					 errdetail("The worker drops the job's capture triggers from the tables it read."),
					 errhint("Run DROP EXTENSION again in a moment.")));
		if (CatalogJobLoad(job_id, &job, true) && job.cleanup_pending)
		{
			const KindRoutine *routine = KindRoutineForJob(&job);
			ErrorContextCallback context = {error_context_stack, CleanupErrorContext, &job_id};

			error_context_stack = &context;
			if (routine->cleanup != NULL)
				routine->cleanup(&job);
			CatalogJobSetCleanupPending(job_id, false);
			error_context_stack = context.previous;
		}
	}
}

/*
 * DROP SCHEMA of the extension's schema would drop the extension as a side
 * effect, which GuardObjectAccess refuses; it is refused here first, before
 * it locks anything (it would queue behind the workers' locks on the
 * catalog, and they behind it).
 */
static void
GuardDropSchema(DropStmt *stmt)
{
	const BgddlCatalog *catalog = CatalogLookup();
	ListCell   *lc;

	if (catalog == NULL)
		return;
	foreach(lc, stmt->objects)
	{
		if (get_namespace_oid(strVal(lfirst(lc)), true) == catalog->schema_oid)
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop schema %s, which extension %s keeps its catalog in",
							strVal(lfirst(lc)), BGDDL_EXTENSION_NAME),
					 errhint("Drop the extension with DROP EXTENSION (once its jobs have ended).")));
	}
}

/*
 * DROP DATABASE refuses a database that other sessions use: our scheduler
 * and workers leave it first, as autovacuum workers do (JobDatabaseLeave).
 */
static void
DropDatabaseLeftByJobs(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			 ProcessUtilityContext context, ParamListInfo params,
			 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Oid			database_oid = get_database_oid(((DropdbStmt *) pstmt->utilityStmt)->dbname, true);

	if (!OidIsValid(database_oid) || database_oid == MyDatabaseId)
	{
		CallNextProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							   queryEnv, dest, qc);
		return;
	}
	JobDatabaseLeave(database_oid);
	PG_TRY();
	{
		CallNextProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							   queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		JobDatabaseLeft(database_oid, false);
		PG_RE_THROW();
	}
	PG_END_TRY();
	JobDatabaseLeft(database_oid, true);
}

/* Does an ALTER TABLE only drop (columns, constraints)? */
static bool
AlterTableOnlyDrops(AlterTableStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableType subtype = lfirst_node(AlterTableCmd, lc)->subtype;

		if (subtype != AT_DropColumn && subtype != AT_DropConstraint)
			return false;
	}
	return stmt->cmds != NIL;
}

/*
 * A utility statement: submitted as a job if it is one (may_submit: it is
 * the user's own, and background_ddl is on); otherwise, if it is the
 * user's own (users_own), after the jobs of this session that it touches
 * (session_order.c), and then the guards on jobs' objects.
 */
static void
ProcessStatement(PlannedStmt *pstmt, const char *queryString,
				 bool readOnlyTree, ProcessUtilityContext context,
				 ParamListInfo params, QueryEnvironment *queryEnv,
				 DestReceiver *dest, QueryCompletion *qc, bool users_own, bool may_submit)
{
	Node	   *parsetree = pstmt->utilityStmt;
	bool		drops = false;
	bool		privileges = false;
	CommandTag	retyped_tag = CMDTAG_UNKNOWN;

	if (may_submit)
	{
		const char *in_session_reason;
		const KindRoutine *routine;

		if (SubmitPerPartition(pstmt, context, params, queryEnv, qc))
			return;
		routine = KindForStatement(parsetree, &in_session_reason);
		if (routine != NULL &&
			Submit(routine, pstmt, queryString, context, params, queryEnv, qc))
			return;
		if (in_session_reason != NULL)
			KindNoticeInSession(in_session_reason);
	}
	if (users_own)
		SessionOrderUtility(parsetree);

	switch (nodeTag(parsetree))
	{
		case T_RefreshMatViewStmt:
			KindCheckPlaceholderRefresh((RefreshMatViewStmt *) parsetree, NULL);
			break;
		case T_AlterTableStmt:
			drops = AlterTableOnlyDrops((AlterTableStmt *) parsetree);
			privileges = true;	/* OWNER TO */
			SessionCheckPlaceholderChange(parsetree);
			break;
		case T_GrantStmt:
			privileges = true;
			SessionCheckPlaceholderChange(parsetree);
			break;
		case T_AlterOwnerStmt:
		case T_ReassignOwnedStmt:
			privileges = true;
			break;
		case T_IndexStmt:
		case T_CreateStatsStmt:
		case T_CommentStmt:
			SessionCheckPlaceholderChange(parsetree);
			break;
		case T_DropStmt:
			drops = true;
			if (((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION)
				GuardDropExtension((DropStmt *) parsetree);
			else if (((DropStmt *) parsetree)->removeType == OBJECT_SCHEMA)
				GuardDropSchema((DropStmt *) parsetree);
			else
			{
				DropStmt   *drop = (DropStmt *) parsetree;

				retyped_tag = CreateCommandTag(parsetree);
				if (!SessionCancelDroppedTargets(&drop))
					retyped_tag = CMDTAG_UNKNOWN;
				if (drop != (DropStmt *) parsetree)
				{
					pstmt = copyObject(pstmt);
					pstmt->utilityStmt = (Node *) drop;
					readOnlyTree = false;
				}
			}
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_TRIGGER)
				CaptureCheckRename((RenameStmt *) parsetree);
			else
				SessionCheckPlaceholderChange(parsetree);
			break;
		case T_DropOwnedStmt:
			SessionDropOwned((DropOwnedStmt *) parsetree);
			break;
		case T_DropdbStmt:
			DropDatabaseLeftByJobs(pstmt, queryString, readOnlyTree, context, params, queryEnv,
						 dest, qc);
			return;
		case T_TransactionStmt:
			if (((TransactionStmt *) parsetree)->kind == TRANS_STMT_COMMIT_PREPARED &&
				IsTransactionState() && CatalogLookup() != NULL)
				JobXactWakeScheduler();
			break;
		default:
			break;
	}

	if (drops)
	{
		SessionDropStatement(pstmt, queryString, readOnlyTree, context, params, queryEnv,
							 dest, qc, CallNextProcessUtility);
		/* A DROP of placeholders ran as DROP MATERIALIZED VIEW: its own tag still */
		if (retyped_tag != CMDTAG_UNKNOWN && qc != NULL)
			SetQueryCompletion(qc, retyped_tag, 0);
	}
	else
		CallNextProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							   queryEnv, dest, qc);
	if (privileges)
		SessionKeepJobObjectPrivileges();
}

static void
BgddlProcessUtility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *outer_utility = SessionEnclosingUtility();
	volatile bool users_own = SessionStatementIsUsers(context, outer_utility);
	/* On a standby, PostgreSQL refuses the statement as it always does */
	volatile bool may_submit = background_ddl_enabled && !RecoveryInProgress() && users_own;

	SessionSetEnclosingUtility(pstmt->utilityStmt);
	PG_TRY();
	{
		ProcessStatement(pstmt, queryString, readOnlyTree, context, params, queryEnv,
						 dest, qc, users_own, may_submit);
	}
	PG_FINALLY();
	{
		SessionSetEnclosingUtility(outer_utility);
	}
	PG_END_TRY();
}
