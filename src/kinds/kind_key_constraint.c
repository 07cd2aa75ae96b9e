/*-------------------------------------------------------------------------
 *
 * kind_key_constraint.c
 *	  Background ALTER TABLE ... ADD [CONSTRAINT c] PRIMARY KEY (columns)
 *	  and ADD [CONSTRAINT c] UNIQUE (columns): a variant of the ALTER TABLE
 *	  kind that builds the key's index.
 *
 * PostgreSQL builds the key's unique index inside the statement, under
 * ACCESS EXCLUSIVE (readers wait too), and for a primary key sets its
 * columns NOT NULL, which reads every row once more.  As a job:
 *
 *	- At submit, under the statement's lock for a moment: PostgreSQL's own
 *	  ALTER TABLE run up to the index's catalog entries and rolled back
 *	  (IndexDryRun), so that every error it raises before it reads a row is
 *	  raised here (columns, a second primary key, names, ownership, the
 *	  options); it names the index as the statement would (t_pkey, t_a_key,
 *	  or the constraint's name).  That name is reserved by a placeholder (as
 *	  an index job reserves it).  A primary key over columns that allow
 *	  nulls also gets the helper CHECK (a IS NOT NULL AND ...) NOT VALID of
 *	  ADD PRIMARY KEY USING INDEX (kind_constraint.c): enforced for every
 *	  write from the commit on.
 *	- The worker builds the unique index as CREATE UNIQUE INDEX
 *	  CONCURRENTLY builds it (the index kind's way: the placeholder dropped
 *	  and the index's OID recorded in the transaction that creates it),
 *	  named as reserved; a duplicate fails the job with the statement's
 *	  error.  Then the helper's rows are checked in chunks, as a SET NOT
 *	  NULL job checks them.
 *	- The cut-over (ACCESS EXCLUSIVE for a moment, as a job takes it) marks
 *	  the helper valid and runs ADD CONSTRAINT ... USING INDEX, which the
 *	  valid helper spares its scan, and drops the helper.
 *
 * The key's catalog is the blocking statement's: the same index name,
 * constraint name, columns, options and tablespace, and an index that
 * enforces it.  While the job runs, the index is invalid and the planner
 * does not use it; writers are checked for duplicates from the moment
 * CREATE INDEX CONCURRENTLY would check them.
 *
 * A crash in the build leaves an invalid index: it is dropped and its name
 * reserved again, and the build restarts (as an index job's).  A failed or
 * cancelled job drops the helper and the index or its placeholder.
 *
 * Plain heap tables without inheritance children only; a partitioned
 * table or one with children runs in the session, saying why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
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
#include "engine/job_group.h"
#include "engine/job_run.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "index/index_estimate.h"
#include "kinds/kind_constraint.h"
#include "kinds/kind_index.h"
#include "kinds/kind_placeholder.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_relation.h"

/*
 * The job's kind_state: the key's columns and its INCLUDE columns (attnums),
 * the name its index was built with
 */
#define STATE_KEY_COLUMNS		"key_columns"
#define STATE_KEY_INCLUDED		"key_included"
#define STATE_KEY_INDEX_NAME	"key_index_name"

/* Is the subcommand ADD PRIMARY KEY (columns) or ADD UNIQUE (columns)? */
bool
KeyConstraintBuildsIndex(AlterTableCmd *cmd)
{
	Constraint *constraint = (Constraint *) cmd->def;

	return cmd->subtype == AT_AddConstraint && IsA(constraint, Constraint) &&
		(constraint->contype == CONSTR_PRIMARY || constraint->contype == CONSTR_UNIQUE) &&
		constraint->indexname == NULL;
}

/*
 * Why the key (cmd) of table relid is built in the session, or NULL.  A
 * unique constraint is the table's alone; a primary key sets its columns
 * NOT NULL on the inheritance children too.
 */
const char *
KeyConstraintInSessionReason(Oid relid, AlterTableCmd *cmd)
{
	if (((Constraint *) cmd->def)->deferrable)
		return "The key is DEFERRABLE: an index built concurrently checks every write at once, which would refuse writes that the key allows until their commit.";
	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		return "The table is partitioned: its key is an index on each partition, which ALTER TABLE builds in the session.";
	if (((Constraint *) cmd->def)->contype == CONSTR_PRIMARY && has_subclass(relid))
		return "The table has inheritance children, whose columns PostgreSQL's primary key sets NOT NULL too.";
	return NULL;
}

/*
 * What a job of the subcommand does on table relid: a primary key over
 * columns that allow nulls checks them in chunks too
 */
const char *
KeyConstraintStrategy(Oid relid, AlterTableCmd *cmd)
{
	Constraint *constraint = (Constraint *) cmd->def;
	ListCell   *lc;

	foreach(lc, constraint->contype == CONSTR_PRIMARY ? constraint->keys : NIL)
	{
		AttrNumber	attnum = get_attnum(relid, strVal(lfirst(lc)));

		if (attnum != InvalidAttrNumber && !ConstraintColumnNotNull(relid, attnum))
			return STRATEGY_KEY_INDEX_NOT_NULL;
	}
	return STRATEGY_KEY_INDEX;
}

/* The attnums of table relid's columns named in names (String), in their order */
static List *
ColumnNumbers(Oid relid, List *names)
{
	List	   *columns = NIL;
	ListCell   *lc;

	foreach(lc, names)
		columns = lappend_int(columns, get_attnum(relid, strVal(lfirst(lc))));
	return columns;
}

/* Index elements of the columns names (String) */
static List *
NamedElements(List *names)
{
	List	   *elements = NIL;
	ListCell   *lc;

	foreach(lc, names)
	{
		IndexElem  *elem = makeNode(IndexElem);

		elem->name = pstrdup(strVal(lfirst(lc)));
		elem->ordering = SORTBY_DEFAULT;
		elem->nulls_ordering = SORTBY_NULLS_DEFAULT;
		elements = lappend(elements, elem);
	}
	return elements;
}

/* The names the columns (attnums of relid) have now */
static List *
ColumnNames(Oid relid, List *columns)
{
	List	   *names = NIL;
	ListCell   *lc;

	foreach(lc, columns)
	{
		HeapTuple	tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid),
											Int16GetDatum(lfirst_int(lc)));

		if (!HeapTupleIsValid(tuple) || ((Form_pg_attribute) GETSTRUCT(tuple))->attisdropped)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("a column of the key of \"%s\" was dropped while its index was built",
							get_rel_name(relid))));
		names = lappend(names, makeString(pstrdup(NameStr(((Form_pg_attribute) GETSTRUCT(tuple))->attname))));
		ReleaseSysCache(tuple);
	}
	return names;
}

/*
 * CREATE UNIQUE INDEX CONCURRENTLY name ON table (columns) INCLUDE (...)
 * WITH (...) TABLESPACE ..., the index the key's subcommand (constraint)
 * builds on table relid, of the columns named (String)
 */
static IndexStmt *
KeyIndexStatement(Oid relid, Constraint *constraint, List *columns, List *included,
				  const char *name)
{
	IndexStmt  *stmt = makeNode(IndexStmt);

	stmt->idxname = name != NULL ? pstrdup(name) : NULL;
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
								  get_rel_name(relid), -1);
	stmt->accessMethod = DEFAULT_INDEX_TYPE;
	stmt->tableSpace = constraint->indexspace;
	stmt->indexParams = NamedElements(columns);
	stmt->indexIncludingParams = NamedElements(included);
	stmt->options = constraint->options;
	stmt->unique = true;
	stmt->nulls_not_distinct = constraint->nulls_not_distinct;
	stmt->concurrent = true;
	return stmt;
}

/*
 * Is the index the job's key's: unique, of the key's columns and INCLUDE
 * columns in their order, without expressions or a predicate?
 */
static bool
IndexIsTheKeys(Oid index, const BgddlJob *job)
{
	List	   *columns = (List *) stringToNode(CatalogKindStateText(job->kind_state, STATE_KEY_COLUMNS));
	List	   *included = (List *) stringToNode(CatalogKindStateText(job->kind_state, STATE_KEY_INCLUDED));
	List	   *all = list_concat_copy(columns, included);
	HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	Form_pg_index form;
	bool		matches;

	if (!HeapTupleIsValid(tuple))
		return false;
	form = (Form_pg_index) GETSTRUCT(tuple);
	matches = form->indrelid == job->target_oid && form->indisunique &&
		form->indnkeyatts == list_length(columns) && form->indnatts == list_length(all) &&
		heap_attisnull(tuple, Anum_pg_index_indexprs, NULL) &&
		heap_attisnull(tuple, Anum_pg_index_indpred, NULL);
	for (int i = 0; matches && i < form->indnatts; i++)
		matches = form->indkey.values[i] == list_nth_int(all, i);
	ReleaseSysCache(tuple);
	return matches;
}

/*
 * The key's index of the job (its placeholder before it is built).  An
 * index built again under another OID (REINDEX CONCURRENTLY, a type change
 * of one of its columns) is found by the name it was built with, if it is
 * still the key's (IndexIsTheKeys); so is the new one of an interrupted
 * REINDEX CONCURRENTLY, whose old one is renamed.  Caller is in a
 * transaction.
 */
static Oid
KeyIndex(const BgddlJob *job)
{
	Oid			index = (Oid) CatalogKindStateInt(job->kind_state, CONSTRAINT_STATE_KEY_INDEX);
	char	   *name = CatalogKindStateText(job->kind_state, STATE_KEY_INDEX_NAME);
	char		relkind = get_rel_relkind(index);
	char	   *name_now = get_rel_name(index);
	Oid			rebuilt;

	if (name == NULL || relkind == RELKIND_MATVIEW ||
		(relkind == RELKIND_INDEX && name_now != NULL && strcmp(name_now, name) == 0))
		return index;
	rebuilt = get_relname_relid(name, get_rel_namespace(job->target_oid));
	return OidIsValid(rebuilt) && rebuilt != index && IndexIsTheKeys(rebuilt, job) ?
		rebuilt : index;
}

/*
 * Record the key's index as KeyIndex finds it now (built again under
 * another OID); in a step.  Returns true.
 */
static bool
AdoptKeyIndex(JobRun *run)
{
	Oid			index = KeyIndex(&run->job);

	if (index != (Oid) CatalogKindStateInt(run->job.kind_state, CONSTRAINT_STATE_KEY_INDEX))
	{
		CatalogKindStateSetInt(&run->job.kind_state, CONSTRAINT_STATE_KEY_INDEX, index);
		CatalogJobRecordKindState(&run->job);
	}
	return true;
}

/* The names the key's columns (key: STATE_KEY_COLUMNS, STATE_KEY_INCLUDED) have now */
static List *
KeyColumns(const BgddlJob *job, const char *key)
{
	return ColumnNames(job->target_oid,
					   (List *) stringToNode(CatalogKindStateText(job->kind_state, key)));
}

/* What the submit's dry run runs: the statement's ALTER TABLE */
typedef struct KeyDryRun
{
	Oid			relid;
	AlterTableCmd *cmd;
	const char *query_string;
} KeyDryRun;

static void
RunKeyUntilIndexCreated(void *arg)
{
	KeyDryRun  *dry = arg;

	ConstraintRunAlterTable(dry->relid, GetUserId(), copyObject(dry->cmd), AccessExclusiveLock,
							dry->query_string);
}

/*
 * The submit of ADD PRIMARY KEY (columns) or ADD UNIQUE (columns) on table
 * relid: the statement's lock (ACCESS EXCLUSIVE, for a moment, asked for as
 * a job asks), its dry run, the primary key's helper, the index's name
 * reserved.  The helper's OID, or InvalidOid if there is none.
 */
Oid
KeyConstraintSubmit(KindSubmit *submit, AlterTableStmt *stmt, Oid relid)
{
	AlterTableCmd *cmd = linitial_node(AlterTableCmd, stmt->cmds);
	Constraint *constraint = (Constraint *) cmd->def;
	KeyDryRun	dry = {.relid = relid, .cmd = cmd, .query_string = submit->query_string};
	ErrorData  *error;
	char	   *name;
	List	   *columns;
	List	   *nullable = NIL;
	ListCell   *lc;
	Oid			helper = InvalidOid;

	ConstraintLockForSubmit(stmt->relation, relid, AccessExclusiveLock);
	if (constraint->contype == CONSTR_PRIMARY)
		ConstraintCheckNoPrimaryKeyJob(relid);
	name = IndexDryRun(RunKeyUntilIndexCreated, &dry, &error);
	if (name == NULL)
		ReThrowError(error);
	columns = ColumnNumbers(relid, constraint->keys);
	foreach(lc, constraint->contype == CONSTR_PRIMARY ? columns : NIL)
	{
		if (!ConstraintColumnNotNull(relid, lfirst_int(lc)))
			nullable = list_append_unique_int(nullable, lfirst_int(lc));
	}
	if (nullable != NIL)
	{
		Constraint *not_null = makeNode(Constraint);

		list_sort(nullable, list_int_cmp);
		not_null->contype = CONSTR_CHECK;
		not_null->conname = ChooseConstraintName(get_rel_name(relid), NULL, "not_null",
												 get_rel_namespace(relid),
												 list_make1(makeString(name)));
		not_null->raw_expr = ConstraintKeyIsNotNull(relid, nullable);
		not_null->location = -1;
		helper = ConstraintAddNotValid(submit, stmt, relid, not_null);
	}
	CatalogKindStateSetInt(&submit->kind_state, CONSTRAINT_STATE_KEY_BUILD, 1);
	CatalogKindStateSetText(&submit->kind_state, STATE_KEY_COLUMNS, nodeToString(columns));
	CatalogKindStateSetText(&submit->kind_state, STATE_KEY_INCLUDED,
							nodeToString(ColumnNumbers(relid, constraint->including)));
	CatalogKindStateSetInt(&submit->kind_state, CONSTRAINT_STATE_KEY_INDEX,
						   IndexReserveName(submit, relid, get_rel_namespace(relid), name));
	return helper;
}

/* A key without a helper is planned as an index job is: nothing to measure */
static void
KeyPlan(JobRun *run)
{
	if (OidIsValid(ConstraintOfJob(&run->job)))
	{
		ConstraintPlan(run);
		return;
	}
	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	run->job.strategy = pstrdup(STRATEGY_KEY_INDEX);
	run->job.planned = true;
	CatalogJobRecordPlan(&run->job);
	JobStepEnd();
}

/*
 * After a crash in the middle of the build: the invalid index dropped and
 * its name reserved again, in one transaction (a LockingStep)
 */
static void
RestartKeyBuildStep(JobRun *run, void *arg)
{
	CatalogKindStateSetInt(&run->job.kind_state, CONSTRAINT_STATE_KEY_INDEX,
						   IndexRestartBuild(&run->job, KeyIndex(&run->job), run->job.target_oid));
	CatalogJobRecordKindState(&run->job);
}

/*
 * CREATE UNIQUE INDEX CONCURRENTLY, named as the placeholder is named now.
 * Its first phase commits the placeholder's drop, the index's OID in the
 * job row and the invalid index together.  As the submitting role, with
 * statement_timeout armed for the whole build (IndexBuildDefine).
 */
static JobStepResult
BuildKeyIndex(JobRun *run)
{
	Oid			table = run->job.target_oid;
	Oid			placeholder;
	IndexStmt  *stmt;
	Oid			index;

	/* Other builds on the table first, before a snapshot (as BuildIndex) */
	JobStepBegin("background_ddl: building the index", STEP_NO_SNAPSHOT);
	LockRelationOid(table, ShareUpdateExclusiveLock);
	if (!JobRunTargetExists(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	placeholder = KeyIndex(&run->job);
	if (!KindIsPlaceholder(placeholder))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the placeholder that reserves the name of the index of background DDL job %lld was dropped",
						(long long) run->job.id)));
	PushActiveSnapshot(GetTransactionSnapshot());
	stmt = KeyIndexStatement(table, CheckedNode(Constraint, ConstraintJobCommand(&run->job)->def),
							 KeyColumns(&run->job, STATE_KEY_COLUMNS),
							 KeyColumns(&run->job, STATE_KEY_INCLUDED), get_rel_name(placeholder));
	PgRelationDrop(placeholder);
	index = IndexBuildNewOid(table, stmt->tableSpace);
	CatalogKindStateSetInt(&run->job.kind_state, CONSTRAINT_STATE_KEY_INDEX, index);
	CatalogKindStateSetText(&run->job.kind_state, STATE_KEY_INDEX_NAME, stmt->idxname);
	CatalogJobRecordKindState(&run->job);
	(void) IndexBuildDefine(&run->job, table, stmt, index, InvalidOid);
	if (JobRunPublishesLater(&run->job))
		IndexHoldBack(run, index, table);
	JobStepEnd();
	return JOB_STEP_MORE;
}

/*
 * A primary key with one column that allows nulls: its unique index, valid,
 * holds every row (CREATE INDEX CONCURRENTLY's guarantee), nulls included,
 * so one search of the index for a null, with a new snapshot, stands for
 * the chunks' scan of the table; a row written since is checked by the
 * helper.  A null found fails the job with PostgreSQL's error.  True if the
 * search was made (or no column allows nulls any more); false if several
 * columns allow nulls: the chunks check the rows, naming the column of the
 * first row that has a null, as PostgreSQL's scan names it.
 */
static bool
KeyNullsThroughIndex(JobRun *run)
{
	Oid			table = run->job.target_oid;
	List	   *columns;
	AttrNumber	nullable = InvalidAttrNumber;
	int			index_column = 0;
	int			nullable_count = 0;
	ListCell   *lc;
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;
	bool		found;

	/* the snapshot after the lock: a rewrite waited for would hide its rows from an older one */
	JobStepBegin("background_ddl: looking for nulls in the index", STEP_NO_SNAPSHOT);
	JobStepLockRelation(table, AccessShareLock, background_ddl_lock_timeout_ms);
	JobStepTakeSnapshot();
	if (!JobRunTargetExists(run))
	{
		JobStepEnd();
		return true;			/* the next step says that it is gone */
	}
	columns = (List *) stringToNode(CatalogKindStateText(run->job.kind_state, STATE_KEY_COLUMNS));
	foreach(lc, columns)
	{
		if (!ConstraintColumnNotNull(table, lfirst_int(lc)))
		{
			nullable = lfirst_int(lc);
			index_column = foreach_current_index(lc) + 1;
			nullable_count++;
		}
	}
	if (nullable_count != 1)
	{
		JobStepEnd();
		return nullable_count == 0;
	}
	rel = table_open(table, NoLock);
	index = index_open(KeyIndex(&run->job), AccessShareLock);
	ScanKeyEntryInitialize(&key, SK_ISNULL | SK_SEARCHNULL, index_column, InvalidStrategy,
						   InvalidOid, InvalidOid, InvalidOid, (Datum) 0);
	slot = table_slot_create(rel, NULL);
	JobQueryBegin(run->job.identity.owner_oid, true);
	scan = index_beginscan(rel, index, GetActiveSnapshot(), 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	JobQueryEnd();
	ExecDropSingleTupleTableSlot(slot);
	if (found)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("column \"%s\" of relation \"%s\" contains null values",
						get_attname(table, nullable, false), RelationGetRelationName(rel)),
				 errtablecol(rel, nullable)));
	index_close(index, AccessShareLock);
	table_close(rel, NoLock);
	/* every block of the helper's parts checked */
	CatalogJobSetBackfillTotals(&run->job, run->job.chunks_done, run->job.rows_done,
								run->job.work_total);
	JobStepEnd();
	return true;
}

/*
 * The index first, in one step (CREATE INDEX CONCURRENTLY's own
 * transactions); then the nulls of a primary key's columns, through the
 * index or in the helper's chunks
 */
static JobStepResult
KeyBackfillStep(JobRun *run)
{
	bool		exists;
	bool		is_index;
	bool		valid;

	JobStepHoldPoint("building the index");
	JobStepBegin("background_ddl: checking the index", STEP_READ_COMMITTED);
	exists = JobRunTargetExists(run) && AdoptKeyIndex(run);
	is_index = IndexBuildIsIndex(KeyIndex(&run->job), &valid);
	valid |= is_index && IndexHeld(&run->job);	/* built, held back for its group */
	JobStepEnd();
	if (!exists)
		return JOB_STEP_TARGET_GONE;
	if (is_index && valid && OidIsValid(ConstraintOfJob(&run->job)) &&
		run->job.work_done == 0 && run->job.work_total > 0 && KeyNullsThroughIndex(run))
		return JOB_STEP_MORE;	/* the chunks find every block checked */
	if (is_index && valid)
		return OidIsValid(ConstraintOfJob(&run->job)) ? ConstraintBackfillStep(run) :
			JOB_STEP_DONE;
	if (is_index)
	{
		JobRunLockingStep(run, RestartKeyBuildStep, NULL, JOB_PHASE_BACKFILLING,
						  "background_ddl: dropping an invalid index");
		return JOB_STEP_MORE;
	}
	return BuildKeyIndex(run);
}

/*
 * The end: with a helper, as a SET NOT NULL job ends (ConstraintCutOver);
 * without, ADD CONSTRAINT ... USING INDEX under its ACCESS EXCLUSIVE, for
 * as long as a few catalog updates take
 */
static JobStepResult
KeyCutOver(JobRun *run)
{
	bool		valid = true;

	/* An index held back invalid once built (JobRunPublishesLater): by the parts */
	if (IndexHeld(&run->job))
	{
		JobStepBegin("background_ddl: checking the index", STEP_READ_COMMITTED);
		(void) IndexBuildIsIndex(KeyIndex(&run->job), &valid);
		JobStepEnd();
	}
	if (!valid)
		return JobPublishAlone(run);
	if (OidIsValid(ConstraintOfJob(&run->job)))
	{
		JobStepBegin("background_ddl: checking the index", STEP_READ_COMMITTED);
		(void) AdoptKeyIndex(run);
		JobStepEnd();
		return ConstraintCutOver(run);
	}
	JobStepHoldPoint("cutting over");
	JobStepBegin("background_ddl: cutting over", STEP_READ_COMMITTED);
	JobStepLockRelation(run->job.target_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	if (!JobRunTargetExists(run) || !AdoptKeyIndex(run))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	ConstraintRunKey(&run->job);
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/* A group's publication: ADD CONSTRAINT ... USING INDEX's lock */
static void
KeyCutOverLock(JobRun *run)
{
	JobStepLockRelation(run->job.target_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
}

/*
 * ... and in the group's transaction the index, held back invalid once
 * built, marked valid, then the end of KeyCutOver
 */
static JobStepResult
KeyCutOverPublish(JobRun *run)
{
	bool		valid;

	JobRunRecordPhase(run, JOB_PHASE_CUTTING_OVER);
	if (!JobRunTargetExists(run) || !AdoptKeyIndex(run) ||
		!IndexBuildIsIndex(KeyIndex(&run->job), &valid))
		return JOB_STEP_TARGET_GONE;
	(void) IndexMarkValid(&run->job, KeyIndex(&run->job), run->job.target_oid,
						  IndexHeld(&run->job));
	if (OidIsValid(ConstraintOfJob(&run->job)))
		return ConstraintCutOverPublish(run);
	ConstraintRunKey(&run->job);
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	return JOB_STEP_DONE;
}

/*
 * The helper, then the index or its placeholder, dropped (ACCESS EXCLUSIVE
 * on the table, as a job takes it); with keep_target, the index is kept
 * (a foreign key of another session may use it: its DROP failed)
 */
static void
KeyDiscard(const BgddlJob *job, bool keep_target)
{
	Oid			index = KeyIndex(job);

	/* the helper goes in any case: nothing can depend on it */
	ConstraintDiscard(job, false);
	if (!keep_target &&
		(get_rel_relkind(index) == RELKIND_INDEX || KindIsPlaceholder(index)))
		IndexBuildDrop(index);
}

/* The helper and the index are dropped under ACCESS EXCLUSIVE: by the worker */
static bool
KeyDiscardsInAnyTransaction(const BgddlJob *job)
{
	return false;
}

/*
 * In the submitting transaction: the helper and the placeholder dropped,
 * and the statement run as PostgreSQL runs it, as the submitting role
 */
static Oid
KeyBuildHere(const BgddlJob *job)
{
	JobRun		run = {.job = *job};
	AlterTableCmd *cmd;

	LockRelationOid(job->target_oid, AccessExclusiveLock);
	if (OidIsValid(ConstraintOfJob(job)))
		ConstraintDropOfJob(job);
	PgRelationDrop(KeyIndex(job));
	CommandCounterIncrement();
	/* (its columns as they are named now) */
	cmd = ConstraintJobCommand(job);
	((Constraint *) cmd->def)->keys = KeyColumns(job, STATE_KEY_COLUMNS);
	((Constraint *) cmd->def)->including = KeyColumns(job, STATE_KEY_INCLUDED);
	ConstraintRunAlterTable(job->target_oid, job->identity.owner_oid, cmd,
							AccessExclusiveLock, job->command);
	JobRunSucceeded(&run, job->target_oid, false, -1);
	return job->target_oid;
}

/*
 * estimate_ddl: the index's build measured on a sample, as an index job's
 * (IndexJobEstimate), of the index the statement would build
 */
void
KeyConstraintEstimate(AlterTableStmt *stmt, const char *query_string, JobEstimate *estimate)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, AccessShareLock, false);
	Constraint *constraint = (Constraint *) linitial_node(AlterTableCmd, stmt->cmds)->def;
	IndexStmt  *index;

	index = KeyIndexStatement(relid, constraint, constraint->keys, constraint->including,
							  constraint->conname);
	index->concurrent = false;
	IndexJobEstimate(index, query_string, estimate);
}

const KindRoutine kind_key_constraint_routine = {
	.name = "ALTER TABLE",
	.variant_key = CONSTRAINT_STATE_KEY_BUILD,
	.stands_for = OBJECT_TABLE,
	.waits_for_older_snapshots = true,
	.cut_over_publishes = true,
	.start = ConstraintStart,
	.plan = KeyPlan,
	.backfill_step = KeyBackfillStep,
	.cut_over = KeyCutOver,
	.cut_over_lock = KeyCutOverLock,
	.cut_over_publish = KeyCutOverPublish,
	.restart_build = ConstraintRestartBuild,	/* (its helper's) */
	.writes_to_sources = ConstraintWritesToTable,
	.progress = IndexProgress,	/* while the index is built */
	.gone_reason = ConstraintGoneReason,
	.discard = KeyDiscard,
	.discards_in_any_transaction = KeyDiscardsInAnyTransaction,
	.build_here = KeyBuildHere,
};
