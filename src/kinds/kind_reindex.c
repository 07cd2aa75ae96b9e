/*-------------------------------------------------------------------------
 *
 * kind_reindex.c
 *	  Background REINDEX INDEX | TABLE [CONCURRENTLY].
 *
 * At submit: the blocking statement's checks, in its order (its options,
 * CONCURRENTLY outside a transaction block, the relation, owned by the
 * caller, of the right kind, a TABLESPACE the caller may create in), and
 * the indexes it rebuilds, listed as REINDEX lists them now: the index, or
 * every index of the table and of its TOAST table.  A table without any is
 * PostgreSQL's NOTICE, in the session.
 *
 * The worker rebuilds them one at a time, each as REINDEX INDEX
 * CONCURRENTLY rebuilds it (writers never blocked; the planner keeps using
 * the old index until the new one replaces it), as the submitting role,
 * under statement_timeout.  Each index rebuilt is a checkpoint: the index
 * being rebuilt is recorded first, and the count of those done in the
 * transaction that ends its rebuild.  After a crash, a restart or a cancel
 * in the middle of one, what its interrupted rebuild left is dropped, as
 * PostgreSQL's documentation says to: the new index (named _ccnew, invalid)
 * if the two were not swapped yet, and the rebuild starts again; the old one
 * (named _ccold, invalid) if they were, and that index is done.
 *
 * Of a partitioned table or index, the leaves' indexes are rebuilt, one at a
 * time, as REINDEX rebuilds them.  Whatever REINDEX ... CONCURRENTLY cannot
 * do runs in the session, as with the setting off: a system catalog's or a
 * temporary table's indexes, an exclusion constraint's, and a Citus
 * table's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_index.h"
#include "catalog/pg_tablespace.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_node.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "citus/pg_citus.h"
#include "engine/job_run.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "kinds/kind_placeholder.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"

#define STRATEGY_REINDEX	"concurrent rebuild, index by index"

/* The job's kind_state */
#define STATE_INDEXES		"indexes"	/* the indexes to rebuild, in order (OIDs) */
#define STATE_DONE			"done"	/* how many of them are done */
#define STATE_REBUILDING	"rebuilding"	/* the one being rebuilt (0: none) */
#define STATE_NAME			"name"	/* ... its name */
#define STATE_INDEX_NAME	"index_name"	/* REINDEX INDEX: the index it names */

static ReindexStmt *
Statement(KindSubmit *submit)
{
	return CheckedNode(ReindexStmt, submit->pstmt->utilityStmt);
}

/* The table whose indexes the statement rebuilds, or InvalidOid */
static Oid
ReindexedTable(ReindexStmt *stmt, Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	if (stmt->kind == REINDEX_OBJECT_INDEX)
		return relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX ?
			IndexGetRelation(relid, false) : InvalidOid;
	return relkind == RELKIND_RELATION || relkind == RELKIND_MATVIEW ||
		relkind == RELKIND_PARTITIONED_TABLE || relkind == RELKIND_TOASTVALUE ?
		relid : InvalidOid;
}

/* A table's indexes, and its TOAST table's */
static List *
TableIndexes(Oid table)
{
	Relation	rel = table_open(table, AccessShareLock);
	List	   *indexes = list_copy(RelationGetIndexList(rel));
	Oid			toast = rel->rd_rel->reltoastrelid;

	table_close(rel, AccessShareLock);
	if (OidIsValid(toast))
	{
		Relation	toast_rel = table_open(toast, AccessShareLock);

		indexes = list_concat(indexes, RelationGetIndexList(toast_rel));
		table_close(toast_rel, AccessShareLock);
	}
	return indexes;
}

/*
 * The indexes REINDEX would rebuild: the index, or the table's and its
 * TOAST table's; of a partitioned index or table, those of its leaves
 * (a partitioned index has no storage), as REINDEX rebuilds them
 */
static List *
IndexesToRebuild(ReindexStmt *stmt, Oid relid, Oid table)
{
	List	   *indexes = NIL;
	ListCell   *lc;

	if (stmt->kind == REINDEX_OBJECT_INDEX)
	{
		if (get_rel_relkind(relid) != RELKIND_PARTITIONED_INDEX)
			return list_make1_oid(relid);
		foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
			if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_INDEX)
				indexes = lappend_oid(indexes, lfirst_oid(lc));
		return indexes;
	}
	if (get_rel_relkind(table) != RELKIND_PARTITIONED_TABLE)
		return TableIndexes(table);
	foreach(lc, find_all_inheritors(table, AccessShareLock, NULL))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION ||
			get_rel_relkind(lfirst_oid(lc)) == RELKIND_MATVIEW)
			indexes = list_concat(indexes, TableIndexes(lfirst_oid(lc)));
	return indexes;
}

/*
 * REINDEX INDEX or TABLE (SCHEMA, DATABASE and SYSTEM run as PostgreSQL
 * runs them); in the session, what REINDEX ... CONCURRENTLY cannot rebuild
 */
static KindAcceptance
ReindexAccepts(Node *parsetree, const char **reason)
{
	ReindexStmt *stmt;
	Oid			relid;
	Oid			table;

	if (!IsA(parsetree, ReindexStmt))
		return KIND_NOT_ACCEPTED;
	stmt = (ReindexStmt *) parsetree;
	if (stmt->kind != REINDEX_OBJECT_INDEX && stmt->kind != REINDEX_OBJECT_TABLE)
		return KIND_NOT_ACCEPTED;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid))
		return KIND_ACCEPTED;	/* the validation reports it */
	/* A job's placeholder: as PostgreSQL runs it, after that job if it is this session's */
	if (KindPlaceholderJob(relid) != 0)
		return KIND_NOT_ACCEPTED;
	table = ReindexedTable(stmt, relid);
	if (!OidIsValid(table))
		return KIND_ACCEPTED;
	if (get_rel_persistence(table) == RELPERSISTENCE_TEMP)
		*reason = "The table is temporary: it belongs to this session.";
	else if (IsCatalogRelationOid(table) || IsToastNamespace(get_rel_namespace(table)))
		*reason = "The indexes are a system catalog's, which REINDEX ... CONCURRENTLY cannot rebuild.";
	else if (PgCitusTable(table))
		*reason = PgCitusInSessionReason(table);
	else if (IndexBuildAnyExclusion(IndexesToRebuild(stmt, relid, table)))
		*reason = "An index is an exclusion constraint's, which REINDEX ... CONCURRENTLY cannot rebuild.";
	return *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
}

/* The relation, owned by the caller, as ReindexIndex and ReindexTable check it */
static Oid
OpenReindexed(ReindexStmt *stmt)
{
	Oid			relid;

	if (stmt->kind == REINDEX_OBJECT_TABLE)
		return RangeVarGetRelidExtended(stmt->relation, AccessShareLock, 0,
										RangeVarCallbackOwnsTable, NULL);
	relid = RangeVarGetRelid(stmt->relation, AccessShareLock, false);
	if (get_rel_relkind(relid) != RELKIND_INDEX &&
		get_rel_relkind(relid) != RELKIND_PARTITIONED_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", stmt->relation->relname)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, stmt->relation->relname);
	return relid;
}

/* The blocking statement's checks, in its order */
static void
ReindexValidate(KindSubmit *submit)
{
	ReindexStmt *stmt = Statement(submit);
	ParseState *pstate = make_parsestate(NULL);
	bool		concurrently = false;
	char	   *tablespace = NULL;
	Oid			relid;
	Oid			table;
	List	   *indexes;
	StringInfoData oids;
	ListCell   *lc;

	pstate->p_sourcetext = submit->query_string;
	foreach(lc, stmt->params)
	{
		DefElem    *option = lfirst(lc);

		if (strcmp(option->defname, "verbose") == 0)
			(void) defGetBoolean(option);
		else if (strcmp(option->defname, "concurrently") == 0)
			concurrently = defGetBoolean(option);
		else if (strcmp(option->defname, "tablespace") == 0)
			tablespace = defGetString(option);
		else
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("unrecognized REINDEX option \"%s\"", option->defname),
					 parser_errposition(pstate, option->location)));
	}
	if (concurrently)
		PreventInTransactionBlock(submit->context == PROCESS_UTILITY_TOPLEVEL,
								  "REINDEX CONCURRENTLY");
	if (tablespace != NULL)
	{
		Oid			tablespace_oid = get_tablespace_oid(tablespace, false);

		if (tablespace_oid != MyDatabaseTableSpace &&
			pg_tablespace_aclcheck(tablespace_oid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLESPACE, tablespace);
	}
	relid = OpenReindexed(stmt);
	if (tablespace != NULL && get_tablespace_oid(tablespace, false) == GLOBALTABLESPACE_OID)
	{
		if (concurrently)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot move non-shared relation to tablespace \"%s\"", tablespace)));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("only shared relations can be placed in pg_global tablespace")));
	}
	table = ReindexedTable(stmt, relid);
	/* (REINDEX of a partitioned table or index commits once per partition) */
	if (get_rel_relkind(table) == RELKIND_PARTITIONED_TABLE)
		PreventInTransactionBlock(submit->context == PROCESS_UTILITY_TOPLEVEL,
								  stmt->kind == REINDEX_OBJECT_TABLE ? "REINDEX TABLE" : "REINDEX INDEX");
	indexes = IndexesToRebuild(stmt, relid, table);
	/*
	 * REINDEX TABLE CONCURRENTLY skips invalid indexes, with PostgreSQL's
	 * WARNING.  A table without indexes to rebuild: PostgreSQL's NOTICE (and
	 * WARNINGs) say so.
	 */
	if (concurrently && stmt->kind == REINDEX_OBJECT_TABLE)
	{
		List	   *valid_indexes = NIL;

		foreach(lc, indexes)
		{
			bool		valid;

			if (IndexBuildIsIndex(lfirst_oid(lc), &valid) && valid)
				valid_indexes = lappend_oid(valid_indexes, lfirst_oid(lc));
		}
		foreach(lc, valid_indexes != NIL ? indexes : NIL)
		{
			if (!list_member_oid(valid_indexes, lfirst_oid(lc)))
				ereport(WARNING,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("cannot reindex invalid index \"%s.%s\" concurrently, skipping",
								get_namespace_name(get_rel_namespace(lfirst_oid(lc))),
								get_rel_name(lfirst_oid(lc)))));
		}
		indexes = valid_indexes;
	}
	if (indexes == NIL)
	{
		submit->declined = true;
		return;
	}
	initStringInfo(&oids);
	foreach(lc, indexes)
		appendStringInfo(&oids, "%s%u", oids.len > 0 ? " " : "", lfirst_oid(lc));
	CatalogKindStateSetText(&submit->kind_state, STATE_INDEXES, oids.data);
	if (stmt->kind == REINDEX_OBJECT_INDEX)
		CatalogKindStateSetText(&submit->kind_state, STATE_INDEX_NAME, get_rel_name(relid));
	submit->target_oid = table;
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 get_rel_name(relid));
	/* The session's later statements wait for it if they redefine or drop the table */
	submit->target_effects = REL_REDEFINES | REL_DROPS;
}

/* explain_ddl: REINDEX INDEX or TABLE */
static const char *
ReindexExplain(Node *raw_statement, const char *query_string)
{
	if (!IsA(raw_statement, ReindexStmt) ||
		(((ReindexStmt *) raw_statement)->kind != REINDEX_OBJECT_INDEX &&
		 ((ReindexStmt *) raw_statement)->kind != REINDEX_OBJECT_TABLE))
		return NULL;
	return STRATEGY_REINDEX;
}

/* Nothing to reserve: the indexes exist, and stay usable */
static void
ReindexReserve(KindSubmit *submit)
{
	submit->strategy = pstrdup(STRATEGY_REINDEX);
}

/* The indexes to rebuild (OIDs, as listed at submit) */
static List *
JobIndexes(const BgddlJob *job)
{
	char	   *text = CatalogKindStateText(job->kind_state, STATE_INDEXES);
	List	   *indexes = NIL;
	char	   *token;
	char	   *save;

	for (token = strtok_r(text, " ", &save); token != NULL; token = strtok_r(NULL, " ", &save))
		indexes = lappend_oid(indexes, (Oid) strtoul(token, NULL, 10));
	return indexes;
}

static void
ReindexPlan(JobRun *run)
{
	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	run->job.planned = true;
	run->job.rows_total = -1;
	run->job.work_total = list_length(JobIndexes(&run->job));
	CatalogJobRecordPlan(&run->job);
	JobStepEnd();
}

/*
 * Is other a name that REINDEX CONCURRENTLY gives the new index of index
 * name (as ChooseRelationName chooses it: name_ccnew, name_ccnew1, ...,
 * name truncated to fit)?
 */
static bool
IsRebuildName(const char *other, const char *name)
{
	for (int i = 0; i < 100; i++)
	{
		char		label[NAMEDATALEN];

		snprintf(label, sizeof(label), i == 0 ? "ccnew" : "ccnew%d", i);
		if (strcmp(other, makeObjectName(name, NULL, label)) == 0)
			return true;
	}
	return false;
}

/*
 * Drop what an interrupted rebuild of the index left, and say whether that
 * index is done.  Its old index, still under its OID: under its name if the
 * two were not swapped (the new one, an invalid index of the table named
 * <name>_ccnew..., is dropped), invalid and named _ccold if they were (it
 * is dropped: the new one has its name, and is valid).  Its table locked within lock_timeout
 * first (dropping an index locks it).
 */
static bool
DropInterruptedRebuild(const BgddlJob *job, Oid index, const char *name)
{
	bool		valid;
	Oid			table = IndexGetRelation(index, true);
	ListCell   *lc;
	Relation	rel;
	List	   *indexes;

	if (!OidIsValid(table))
		return true;
	JobStepLockRelation(table, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	if (!IndexBuildIsIndex(index, &valid))
		return true;
	/* (an index that was invalid before its rebuild keeps its name until the swap) */
	if (!valid && strcmp(get_rel_name(index), name) != 0)
	{
		char	   *old_name = get_rel_name(index);

		IndexBuildDrop(index);
		ereport(LOG,
				(errmsg("background DDL job %lld: dropped index \"%s\", which an interrupted rebuild had replaced",
						(long long) job->id, old_name)));
		return true;
	}
	rel = table_open(table, NoLock);
	indexes = list_copy(RelationGetIndexList(rel));
	table_close(rel, NoLock);
	foreach(lc, indexes)
	{
		char	   *other = get_rel_name(lfirst_oid(lc));

		if (other != NULL && IsRebuildName(other, name) &&
			IndexBuildIsIndex(lfirst_oid(lc), &valid) && !valid)
		{
			IndexBuildDrop(lfirst_oid(lc));
			ereport(LOG,
					(errmsg("background DDL job %lld: dropped the invalid index \"%s\" left by an interrupted rebuild of \"%s\"; it starts again",
							(long long) job->id, other, name)));
		}
	}
	return false;
}

/* After a crash or a restart in the middle of a rebuild (DropInterruptedRebuild) */
static void
RecoverStep(JobRun *run, void *arg)
{
	Oid			index = (Oid) CatalogKindStateInt(run->job.kind_state, STATE_REBUILDING);

	if (DropInterruptedRebuild(&run->job, index,
							   CatalogKindStateText(run->job.kind_state, STATE_NAME)))
		JobRunSetStateInt(run, STATE_DONE, CatalogKindStateInt(run->job.kind_state, STATE_DONE) + 1);
	JobRunSetStateInt(run, STATE_REBUILDING, 0);
	CatalogJobRecordKindState(&run->job);
}

/* The statement that rebuilds one index: REINDEX INDEX name CONCURRENTLY, with the options given */
static ReindexStmt *
IndexStatement(const BgddlJob *job, Oid index)
{
	RawStmt    *raw = linitial_node(RawStmt, raw_parser(job->command, RAW_PARSE_DEFAULT));
	ReindexStmt *stmt = CheckedNode(ReindexStmt, raw->stmt);
	List	   *params = NIL;
	ListCell   *lc;

	foreach(lc, stmt->params)
	{
		DefElem    *option = lfirst(lc);

		if (strcmp(option->defname, "concurrently") != 0)
			params = lappend(params, option);
	}
	stmt->params = lappend(params, makeDefElem("concurrently", NULL, -1));
	stmt->kind = REINDEX_OBJECT_INDEX;
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(index)),
								  get_rel_name(index), -1);
	stmt->name = NULL;
	return stmt;
}

/*
 * One index at a time: what an interrupted rebuild left, else the next
 * index (skipped if it was dropped meanwhile), recorded, then rebuilt
 */
static JobStepResult
ReindexBackfillStep(JobRun *run)
{
	List	   *indexes = JobIndexes(&run->job);
	int64		done = CatalogKindStateInt(run->job.kind_state, STATE_DONE);
	Oid			index;
	bool		valid;
	bool		exists;

	JobStepHoldAtChunk(done);
	if (CatalogKindStateInt(run->job.kind_state, STATE_REBUILDING) != 0)
	{
		JobRunLockingStep(run, RecoverStep, NULL, JOB_PHASE_BACKFILLING,
						  "background_ddl: dropping what an interrupted rebuild left");
		return JOB_STEP_MORE;
	}
	if (done >= list_length(indexes))
		return JOB_STEP_DONE;
	index = list_nth_oid(indexes, done);

	JobStepBegin("background_ddl: recording the index to rebuild", STEP_READ_COMMITTED);
	if (!JobRunTargetExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	exists = IndexBuildIsIndex(index, &valid) && IndexGetRelation(index, true) != InvalidOid;
	if (exists)
	{
		JobRunSetStateInt(run, STATE_REBUILDING, index);
		JobRunSetStateText(run, STATE_NAME, get_rel_name(index));
	}
	else
		JobRunSetStateInt(run, STATE_DONE, done + 1);	/* dropped meanwhile */
	CatalogJobRecordKindState(&run->job);
	CatalogJobSetBackfillTotals(&run->job, done, 0, done);
	JobStepEnd();
	if (!exists)
		return JOB_STEP_MORE;

	JobStepBegin("background_ddl: rebuilding an index", STEP_NO_SNAPSHOT);
	/* (the snapshot of a utility statement, which the rebuild's first phase pops) */
	PushActiveSnapshot(GetTransactionSnapshot());
	IndexBuildReindex(&run->job, IndexStatement(&run->job, index));
	/* (in the rebuild's last transaction, which dropped the old index) */
	JobRunSetStateInt(run, STATE_DONE, done + 1);
	JobRunSetStateInt(run, STATE_REBUILDING, 0);
	CatalogJobRecordKindState(&run->job);
	CatalogJobSetBackfillTotals(&run->job, done + 1, 0, done + 1);
	JobStepEnd();
	return JOB_STEP_MORE;
}

/*
 * Every index is rebuilt: the job succeeded, its object the index that
 * REINDEX INDEX named (rebuilt under that name in the table's schema), or
 * the table
 */
static JobStepResult
ReindexCutOver(JobRun *run)
{
	char	   *index_name = CatalogKindStateText(run->job.kind_state, STATE_INDEX_NAME);
	Oid			named = InvalidOid;

	JobStepHoldPoint("cutting over");
	JobStepBegin("background_ddl: cutting over", STEP_READ_COMMITTED);
	if (!JobRunTargetExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	if (index_name != NULL)
		named = get_relname_relid(index_name, get_rel_namespace(run->job.target_oid));
	JobRunSucceeded(run, OidIsValid(named) ? named : run->job.target_oid, false, -1);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/* A cancel or a failure in the middle of a rebuild: drop what it left */
static void
ReindexDiscard(const BgddlJob *job, bool keep_target)
{
	Oid			index = (Oid) CatalogKindStateInt(job->kind_state, STATE_REBUILDING);

	if (OidIsValid(index) && SearchSysCacheExists1(RELOID, ObjectIdGetDatum(job->target_oid)))
		(void) DropInterruptedRebuild(job, index,
									  CatalogKindStateText(job->kind_state, STATE_NAME));
}

/* Only a rebuild under way leaves something, which needs its table's lock */
static bool
ReindexDiscardsInAnyTransaction(const BgddlJob *job)
{
	return CatalogKindStateInt(job->kind_state, STATE_REBUILDING) == 0;
}

/* The view's progress: the index being rebuilt, and its build as pg_stat_progress_create_index shows it */
static void
ReindexProgress(const BgddlJob *job, pid_t pid, KindProgress *progress)
{
	IndexBuildProgress build;
	int64		total = list_length(JobIndexes(job));
	int64		done = CatalogKindStateInt(job->kind_state, STATE_DONE);
	char	   *name = CatalogKindStateText(job->kind_state, STATE_NAME);
	bool		building = pid != 0 && IndexBuildProgressOf(pid, &build);

	progress->chunks_total = total;
	if (!building || name == NULL)
		return;
	progress->phase = psprintf("%s (index %s, %lld of %lld)", build.phase, name,
							   (long long) done + 1, (long long) total);
	if (build.waiting)
		progress->waiting_for = progress->phase;
	progress->percent = (100.0 * done + build.percent) / Max(total, 1);
}

/*
 * In the submitting transaction, which uses the table before it committed:
 * the indexes rebuilt here, as the blocking REINDEX (not concurrently)
 * rebuilds them
 */
static Oid
ReindexBuildHere(const BgddlJob *job)
{
	JobRun		run = {.job = *job};
	ReindexParams params = {0};
	Oid			saved_userid;
	int			saved_sec_context;
	ListCell   *lc;

	LockRelationOid(job->target_oid, ShareLock);
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(job->identity.owner_oid,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	foreach(lc, JobIndexes(job))
	{
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(lfirst_oid(lc))))
			reindex_index(lfirst_oid(lc), false, get_rel_persistence(job->target_oid), &params);
	}
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	CommandCounterIncrement();
	JobRunSucceeded(&run, job->target_oid, false, -1);
	return job->target_oid;
}

/* Why the target is gone: its table was dropped */
static const char *
ReindexGoneReason(const BgddlJob *job)
{
	return "the table was dropped";
}

const KindRoutine kind_reindex_routine = {
	.name = "REINDEX",
	.stands_for = OBJECT_TABLE,
	.accepts = ReindexAccepts,
	.validate = ReindexValidate,
	.reserve = ReindexReserve,
	.explain = ReindexExplain,
	.plan = ReindexPlan,
	.backfill_step = ReindexBackfillStep,
	.cut_over = ReindexCutOver,
	.progress = ReindexProgress,
	.gone_reason = ReindexGoneReason,
	.discard = ReindexDiscard,
	.discards_in_any_transaction = ReindexDiscardsInAnyTransaction,
	.build_here = ReindexBuildHere,
};
