/*-------------------------------------------------------------------------
 *
 * kind_rewrite.c
 *	  Background VACUUM FULL and ALTER TABLE ... SET TABLESPACE: a table's
 *	  rows rewritten into new storage while the table stays readable and
 *	  writable.
 *
 * Both hold ACCESS EXCLUSIVE on the table for the whole rewrite (or copy
 * of its files).  As a job, the table's rows are copied in checkpointed
 * chunks of its blocks into a hidden heap made like it (its attributes,
 * dropped ones too, its options and owner; its tablespace, or the new
 * one), while the capture triggers log the
 * rows that writers change meanwhile (query_job.c: the query is the
 * table's rows, QueryOfRule).  Once the backfill and a first catch-up are
 * done, copies of the table's indexes are built on the hidden heap (plain
 * copies, which check no uniqueness: the hidden heap holds rows of
 * several snapshots until the cut-over), and the catch-up keeps them up to
 * date from then on.
 *
 * The cut-over takes ACCESS EXCLUSIVE on the table before its snapshot (as
 * a job takes a lock others use: asked for without queueing, then queued
 * for at most lock_timeout), applies the last changes, copies any index
 * made since, and swaps the storage (pg_heap_swap.c): heap, TOAST table
 * and every index, in a time independent of the table's size.  The table
 * keeps its OID and everything attached to it.
 *
 * Unlike VACUUM FULL, which keeps each row's inserting transaction, the
 * rows are written by the job's transactions: as after a table-rewriting
 * ALTER TABLE, a transaction whose snapshot is older than the cut-over, and
 * that reads the table for the first time after it, sees it empty or in
 * part.  The README lists it.
 *
 * VACUUM FULL of anything else (several tables, a partitioned table, a
 * materialized view, with other options), and SET TABLESPACE of anything
 * but a plain table or with other subcommands, run as PostgreSQL runs
 * them.  The table's indexes stay where they are, as with SET TABLESPACE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "capture/capture_trigger.h"
#include "catalog/catalog_job.h"
#include "catalog/job_identity.h"
#include "citus/pg_citus.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_heap_swap.h"
#include "query/query_backfill.h"
#include "query/query_estimate.h"
#include "query/query_job.h"

/* The pairs (table's index, its copy on the hidden heap), once built */
#define STATE_INDEX_COPIES	"index_copies"

/* The key of the variant that moves the table (to QUERY_STATE_TABLESPACE): 1 */
#define STATE_NEW_TABLESPACE	"new_tablespace"

#define STRATEGY_REWRITE	"table rewritten in ctid chunks, changed rows captured"

/*
 * A statement that rewrites one table: VACUUM (FULL) of one table, without
 * a column list or another option, or ALTER TABLE ... SET TABLESPACE alone.
 * NULL: not one.
 */
static RangeVar *
RewrittenTable(Node *parsetree, const char **tablespace, bool *missing_ok)
{
	*tablespace = NULL;
	*missing_ok = false;
	if (IsA(parsetree, VacuumStmt))
	{
		VacuumStmt *stmt = (VacuumStmt *) parsetree;
		bool		full = false;
		ListCell   *lc;

		if (!stmt->is_vacuumcmd || list_length(stmt->rels) != 1 ||
			linitial_node(VacuumRelation, stmt->rels)->va_cols != NIL)
			return NULL;
		foreach(lc, stmt->options)
		{
			DefElem    *option = lfirst(lc);

			if (strcmp(option->defname, "full") != 0)
				return NULL;
			full = defGetBoolean(option);
		}
		return full ? linitial_node(VacuumRelation, stmt->rels)->relation : NULL;
	}
	if (IsA(parsetree, AlterTableStmt))
	{
		AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
		AlterTableCmd *cmd;

		if (stmt->objtype != OBJECT_TABLE || list_length(stmt->cmds) != 1)
			return NULL;
		cmd = linitial_node(AlterTableCmd, stmt->cmds);
		if (cmd->subtype != AT_SetTableSpace)
			return NULL;
		*tablespace = cmd->name;
		*missing_ok = stmt->missing_ok;
		return stmt->relation;
	}
	return NULL;
}

/* May the current user vacuum the table (vacuum.c's check, without its WARNING)? */
static bool
MayVacuum(Oid relid)
{
	return PgRelationOwnerCheck(relid, GetUserId()) ||
		(PgDatabaseOwnerCheck(MyDatabaseId, GetUserId()) && !IsSharedRelation(relid));
}

/*
 * The rewrite of one plain table (that the user may vacuum, for VACUUM
 * FULL: its WARNING otherwise); in the session, with the reason, a table
 * whose rewrite a job cannot do.  What is not there or not a plain table
 * runs as PostgreSQL runs it (a partitioned table's SET TABLESPACE rewrites
 * nothing).
 */
static KindAcceptance
RewriteAccepts(Node *parsetree, NodeTag statement, const char **reason)
{
	const char *tablespace;
	bool		missing_ok;
	RangeVar   *rv = RewrittenTable(parsetree, &tablespace, &missing_ok);
	Oid			relid;
	Relation	table;

	if (rv == NULL || nodeTag(parsetree) != statement)
		return KIND_NOT_ACCEPTED;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION ||
		(statement == T_VacuumStmt && !MayVacuum(relid)))
		return KIND_NOT_ACCEPTED;
	table = try_relation_open(relid, AccessShareLock);
	if (table == NULL)
		return KIND_NOT_ACCEPTED;
	if (table->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		*reason = "The table is temporary: it belongs to this session.";
	else if (IsCatalogRelation(table) || IsToastNamespace(RelationGetNamespace(table)))
		*reason = "The table is a system catalog.";
	else if (PgCitusTable(relid))
		*reason = PgCitusInSessionReason(relid);
	else if (table->rd_rel->relrowsecurity && table->rd_rel->relforcerowsecurity)
		*reason = "The table forces row level security on its owner, as whom the job would read it.";
	else if (IndexBuildAnyExclusion(RelationGetIndexList(table)))
		*reason = "An index is an exclusion constraint's, which the job cannot copy.";
	relation_close(table, AccessShareLock);
	return *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
}

static KindAcceptance
VacuumFullAccepts(Node *parsetree, const char **reason)
{
	return RewriteAccepts(parsetree, T_VacuumStmt, reason);
}

static KindAcceptance
SetTablespaceAccepts(Node *parsetree, const char **reason)
{
	return RewriteAccepts(parsetree, T_AlterTableStmt, reason);
}

/*
 * The blocking statement's checks, in its order.  VACUUM: not in a
 * transaction block, the table there.  ALTER TABLE: the table there (or
 * IF EXISTS), owned by the user, the tablespace there, with CREATE on it
 * (but the database's default), a move that PostgreSQL allows (not to
 * pg_global) and that moves the table (not to where it is: nothing to do).
 */
static void
RewriteValidate(KindSubmit *submit)
{
	Node	   *statement = submit->pstmt->utilityStmt;
	const char *tablespace;
	bool		missing_ok;
	RangeVar   *rv = RewrittenTable(statement, &tablespace, &missing_ok);
	Oid			relid;
	Oid			tablespace_oid;
	Relation	table;

	/* The session's later statements wait for it if they redefine or drop the table */
	submit->target_effects = REL_REDEFINES | REL_DROPS;
	submit->strategy = pstrdup(STRATEGY_REWRITE);
	if (IsA(statement, VacuumStmt))
	{
		PreventInTransactionBlock(submit->context == PROCESS_UTILITY_TOPLEVEL, "VACUUM");
		relid = RangeVarGetRelid(rv, AccessShareLock, false);
		/* (gone and made again since accepts: whatever it is now, as PostgreSQL runs it) */
		submit->declined = get_rel_relkind(relid) != RELKIND_RELATION || !MayVacuum(relid);
		return;
	}
	relid = RangeVarGetRelidExtended(rv, AccessShareLock, missing_ok ? RVR_MISSING_OK : 0,
									 RangeVarCallbackOwnsTable, NULL);
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
	{
		submit->declined = true;
		return;
	}
	tablespace_oid = get_tablespace_oid(tablespace, false);
	if (tablespace_oid != MyDatabaseTableSpace &&
		pg_tablespace_aclcheck(tablespace_oid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLESPACE, tablespace);
	table = relation_open(relid, NoLock);
	submit->declined = !CheckRelationTableSpaceMove(table, tablespace_oid);
	relation_close(table, NoLock);
	CatalogKindStateSetInt(&submit->kind_state, STATE_NEW_TABLESPACE, 1);
	CatalogKindStateSetInt(&submit->kind_state, QUERY_STATE_TABLESPACE,
						   tablespace_oid == MyDatabaseTableSpace ? InvalidOid : tablespace_oid);
}

static void
RewriteReserve(KindSubmit *submit)
{
	const char *tablespace;
	bool		missing_ok;
	RangeVar   *rv = RewrittenTable(submit->pstmt->utilityStmt, &tablespace, &missing_ok);
	Oid			relid = RangeVarGetRelid(rv, AccessShareLock, false);

	submit->target_oid = relid;
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 get_rel_name(relid));
}

/* The table's rows go to the hidden heap (made now, the first time); read as its owner */
static void
RewriteStart(JobRun *run)
{
	QueryJobStartReplacing(run, "rewrite");
}

/* The recorded pairs (table's index, copy), as two parallel lists */
static void
IndexCopies(const BgddlJob *job, List **old_indexes, List **new_indexes)
{
	char	   *pairs = CatalogKindStateText(job->kind_state, STATE_INDEX_COPIES);
	char	   *next = pairs;

	*old_indexes = NIL;
	*new_indexes = NIL;
	while (next != NULL && *next != '\0')
	{
		Oid			old_index = (Oid) strtoul(next, &next, 10);
		Oid			new_index = (Oid) strtoul(next, &next, 10);

		*old_indexes = lappend_oid(*old_indexes, old_index);
		*new_indexes = lappend_oid(*new_indexes, new_index);
	}
}

/*
 * Build the copies of the table's indexes on the hidden heap, in a step of
 * their own, and record them: from now on the catch-up keeps them up to
 * date (query_backfill.c inserts into the content relation's indexes)
 */
static void
BuildIndexCopiesStep(JobRun *run)
{
	Relation	table;
	Relation	hidden;
	List	   *old_indexes;
	List	   *new_indexes;
	ListCell   *old_cell;
	ListCell   *new_cell;
	StringInfoData pairs;

	JobStepHoldPoint("building index copies");
	JobStepBegin("background_ddl: building the indexes of the new storage", STEP_READ_COMMITTED);
	JobRunRecordPhase(run, JOB_PHASE_BUILDING_INDEXES);
	table = table_open(run->job.target_oid, AccessShareLock);
	hidden = table_open(QueryRunOf(run)->content_oid, AccessExclusiveLock);
	PgHeapBuildIndexCopies(table, hidden, NIL, false, true, &old_indexes, &new_indexes);
	table_close(hidden, NoLock);
	table_close(table, NoLock);
	initStringInfo(&pairs);
	forboth(old_cell, old_indexes, new_cell, new_indexes)
		appendStringInfo(&pairs, "%s%u %u", pairs.len > 0 ? " " : "",
						 lfirst_oid(old_cell), lfirst_oid(new_cell));
	JobRunSetStateText(run, STATE_INDEX_COPIES, pairs.data);
	CatalogJobRecordKindState(&run->job);
	JobStepEnd();
}

/*
 * The catch-up of the query jobs; when it is done the first time, the
 * index copies are built, and it goes on (the changes made meanwhile)
 */
static JobStepResult
RewriteCatchUp(JobRun *run)
{
	JobStepResult result = QueryJobCatchUp(run);

	if (result != JOB_STEP_DONE || CatalogKindStateHas(run->job.kind_state, STATE_INDEX_COPIES))
		return result;
	BuildIndexCopiesStep(run);
	return JOB_STEP_MORE;
}

/*
 * In the cut-over transaction (query_job.c), the table locked ACCESS
 * EXCLUSIVE before its snapshot and the hidden heap now holding exactly its
 * rows: copy the indexes made since the copies were built (those dropped
 * since are left out; their copies go with the hidden heap), record the new
 * storage's size as VACUUM FULL does, and swap the storage.
 */
static void
RewritePublish(JobRun *run, int64 rows)
{
	Oid			hidden_oid = QueryRunOf(run)->content_oid;
	bool		new_tablespace = CatalogKindStateHas(run->job.kind_state, STATE_NEW_TABLESPACE);
	Relation	table = table_open(run->job.target_oid, NoLock);
	Relation	hidden = table_open(hidden_oid, AccessExclusiveLock);
	List	   *indexes = RelationGetIndexList(table);
	List	   *copied_old;
	List	   *copied_new;
	List	   *old_indexes = NIL;
	List	   *new_indexes = NIL;
	List	   *more_old;
	List	   *more_new;
	ListCell   *old_cell;
	ListCell   *new_cell;

	IndexCopies(&run->job, &copied_old, &copied_new);
	forboth(old_cell, copied_old, new_cell, copied_new)
	{
		if (!list_member_oid(indexes, lfirst_oid(old_cell)))
			continue;
		old_indexes = lappend_oid(old_indexes, lfirst_oid(old_cell));
		new_indexes = lappend_oid(new_indexes, lfirst_oid(new_cell));
	}
	PgHeapBuildIndexCopies(table, hidden, old_indexes, false, true, &more_old, &more_new);
	old_indexes = list_concat(old_indexes, more_old);
	new_indexes = list_concat(new_indexes, more_new);
	PgHeapRecordSize(hidden, (double) rows);
	table_close(hidden, NoLock);
	table_close(table, NoLock);

	/* Its capture triggers go now, under the lock that a DROP TRIGGER takes */
	CaptureRemove(run->job.id, run->job.target_oid);

	JobRunRecordPhase(run, JOB_PHASE_CUTTING_OVER);
	PgHeapSwap(run->job.target_oid, hidden_oid, old_indexes, new_indexes,
			   new_tablespace ? "ALTER TABLE" : "VACUUM", new_tablespace);
	JobRunSucceeded(run, run->job.target_oid, true, rows);
}

static JobStepResult
RewriteCutOver(JobRun *run)
{
	return QueryJobCutOver(run, RewritePublish);
}

/*
 * In the submitting transaction, which uses the table before it has
 * committed (a job submitted with submit_ddl): the rewrite here, as VACUUM
 * FULL would have done it, under its lock
 */
static Oid
RewriteBuildHere(const BgddlJob *job)
{
	return QueryJobBuildHereReplacing(job, "rewrite", AccessExclusiveLock, RewritePublish);
}

/* explain_ddl: VACUUM FULL of one table, ALTER TABLE ... SET TABLESPACE */
static const char *
RewriteExplain(Node *raw_statement, const char *query_string)
{
	const char *reason = NULL;

	if (RewriteAccepts(raw_statement, nodeTag(raw_statement), &reason) != KIND_ACCEPTED)
		return NULL;
	return STRATEGY_REWRITE;
}

/*
 * estimate_ddl of a table's rewrite: its copy, sampled as the job's chunks
 * run it, as the table's owner (whom the caller must be or act for), in
 * the job's query context; to which the index copies add their current
 * size, written and WAL-logged once (their build's time is not counted)
 */
static bool
RewriteEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	const char *tablespace;
	bool		missing_ok;
	RangeVar   *rv = RewrittenTable(raw_statement, &tablespace, &missing_ok);
	Relation	table;
	JobQueryContext context;
	ListCell   *lc;

	if (rv == NULL)
		return false;
	table = table_open(RangeVarGetRelidExtended(rv, AccessShareLock, 0,
												RangeVarCallbackOwnsTable, NULL), NoLock);
	if (table->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(table)),
				 errdetail("Only a plain table is rewritten as a job.")));
	JobQueryEnter(table->rd_rel->relowner, &context, false);
	QueryJobEstimate(QueryOfTableRows(table), InvalidOid, estimate);
	JobQueryLeave(&context);
	foreach(lc, RelationGetIndexList(table))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		int64		bytes = (int64) RelationGetNumberOfBlocks(index) * BLCKSZ;

		estimate->bytes += bytes;
		estimate->wal_bytes += bytes;
		index_close(index, AccessShareLock);
	}
	estimate->strategy = pstrdup(STRATEGY_REWRITE);
	estimate->locks = psprintf("SHARE ROW EXCLUSIVE on \"%s\" to install its capture trigger (milliseconds; "
							   "asked for without queueing, then for at most background_ddl.lock_timeout); "
							   "ACCESS SHARE on it during each batch; ACCESS EXCLUSIVE on it at the cut-over, "
							   "for the last changes and the swap (asked for as the install)",
							   RelationGetRelationName(table));
	table_close(table, NoLock);
	return true;
}

/* Why the target is gone: the table was dropped */
static const char *
RewriteGoneReason(const BgddlJob *job)
{
	return "the table was dropped";
}

/* What the jobs of both statements share: all but their name and statement */
#define REWRITE_ROUTINES \
	.stands_for = OBJECT_TABLE, \
	.validate = RewriteValidate, \
	.reserve = RewriteReserve, \
	.start = RewriteStart, \
	.plan = QueryJobPlan, \
	.backfill_step = QueryJobBackfillStep, \
	.help_step = QueryJobHelpStep, \
	.catch_up = RewriteCatchUp, \
	.cut_over = RewriteCutOver, \
	.paused = QueryJobPaused, \
	.progress = QueryJobProgress, \
	.keeps_on_table_of = QueryJobKeepsOnTableOf, \
	.housekeeping = QueryJobHousekeeping, \
	.cleanup = QueryJobCleanup, \
	.gone_reason = RewriteGoneReason, \
	.discard = QueryJobDiscardHiddenHeap, \
	.build_here = RewriteBuildHere

/* (explain_ddl and estimate_ddl of either statement) */
const KindRoutine kind_rewrite_routine = {
	.name = "VACUUM FULL",
	.accepts = VacuumFullAccepts,
	.explain = RewriteExplain,
	.estimate = RewriteEstimate,
	REWRITE_ROUTINES
};

const KindRoutine kind_set_tablespace_routine = {
	.name = "ALTER TABLE",
	.variant_key = STATE_NEW_TABLESPACE,
	.accepts = SetTablespaceAccepts,
	REWRITE_ROUTINES
};
