/*-------------------------------------------------------------------------
 *
 * kind_constraint.c
 *	  Background ALTER TABLE ... ADD CHECK, ADD FOREIGN KEY, VALIDATE
 *	  CONSTRAINT and ALTER COLUMN ... SET NOT NULL.
 *
 * PostgreSQL checks the existing rows of a table for a new constraint in
 * one scan, under ACCESS EXCLUSIVE (CHECK, SET NOT NULL), SHARE ROW
 * EXCLUSIVE (FOREIGN KEY) or SHARE UPDATE EXCLUSIVE (VALIDATE), in one
 * transaction that holds back VACUUM and starts from zero after a crash.
 * As a job:
 *
 *	- At submit, ADD runs as PostgreSQL runs ADD ... NOT VALID (all of its
 *	  checks and errors, a moment of its lock, asked for without queueing
 *	  first and then for background_ddl.lock_timeout at most); SET NOT NULL
 *	  adds a helper CHECK (x IS NOT NULL) NOT VALID.  From its commit on,
 *	  PostgreSQL checks every row written against the constraint, as it
 *	  checks every NOT VALID constraint.  VALIDATE only checks that the
 *	  constraint exists, is a check or a foreign key, and that the caller
 *	  owns the table.
 *	- The worker checks the rows that existed before, in chunks of blocks,
 *	  each in its own short transaction with a new snapshot, as the
 *	  submitting role, with PostgreSQL's executor (a check) or its foreign
 *	  key check (foreign_key_check.c), and PostgreSQL's error for a row that
 *	  violates the constraint.  The job row's work_done is the checkpoint:
 *	  the first block not checked yet.
 *	- When the last chunk is checked, the constraint is marked valid as
 *	  VALIDATE CONSTRAINT marks it (SET NOT NULL: then PostgreSQL's SET NOT
 *	  NULL, which the valid helper spares its scan, and the helper dropped).
 *
 * Why that is exact.  A row the chunks did not see is one written after a
 * chunk's snapshot.  Every row written after the submit committed was
 * checked when it was written: INSERT and UPDATE check every CHECK
 * constraint, valid or not, and the submit's lock waited for every writer
 * before it.  The rows from before are all in the blocks the table had when
 * the job was planned (work_total); only a rewrite (VACUUM FULL, CLUSTER,
 * TRUNCATE, a type change) moves them without a check, and a rewrite
 * changes the table's relfilenode: the job then checks from the first block
 * again.  Each chunk holds ACCESS SHARE on the table, so no rewrite happens
 * in the middle of one.  A foreign key is not checked by an UPDATE that
 * keeps the key: such a row may move unchecked into blocks checked already,
 * so the job captures the changed rows (capture_trigger.c) and checks them
 * after the chunks, the last ones under SHARE at the cut-over.
 *
 * A job that fails or is cancelled drops the constraint it added (a
 * moment of ACCESS EXCLUSIVE again, taken as a job takes such locks): the
 * table is as it was before the statement.  A VALIDATE job leaves its
 * constraint NOT VALID, as the failed VALIDATE would have.
 *
 * Only a plain heap table without partitions or inheritance children, of
 * this server (not Citus), referencing a plain table, and a statement with
 * this one subcommand; the rest runs in the session, with a NOTICE saying
 * why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_am.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "commands/tablecmds.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "capture/capture_trigger.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "citus/pg_citus.h"
#include "engine/job_run.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "kinds/foreign_key_check.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_lock.h"

#define STRATEGY_CHECK_IN_CHUNKS	"existing rows checked in chunks"

/* The job's kind_state */
#define STATE_CONSTRAINT_OID	"constraint_oid"
#define STATE_ADDED				"added"	/* 1: the job added the constraint */
#define STATE_RELFILENODE		"relfilenode"	/* of the table the chunks check */
#define STATE_NOT_NULL_ATTNUM	"not_null_attnum"	/* SET NOT NULL: the column */
#define STATE_FOREIGN_KEY		"foreign_key"	/* 1: a foreign key */
#define STATE_CAPTURED			"captured"	/* 1: its capture triggers are installed */

#define STRATEGY_FOREIGN_KEY	"existing rows checked in chunks, changed rows captured"

/* Changed rows a catch-up step checks at most */
#define CATCH_UP_MARKS		10000

/* A chunk's blocks: the first, and the most (they grow toward the batch time) */
#define CHUNK_BLOCKS_FIRST	64
#define CHUNK_BLOCKS_MAX	(1 << 20)

/* This worker's run of a job */
typedef struct ConstraintRun
{
	double		chunk_blocks;
} ConstraintRun;

/* The statement's one subcommand, if it has exactly one */
static AlterTableCmd *
OnlyCommand(AlterTableStmt *stmt)
{
	return list_length(stmt->cmds) == 1 ? linitial_node(AlterTableCmd, stmt->cmds) : NULL;
}

/* ADD CHECK that PostgreSQL would validate (not NOT VALID) */
static bool
AddsValidatedCheck(AlterTableCmd *cmd)
{
	Constraint *constraint = (Constraint *) cmd->def;

	return cmd->subtype == AT_AddConstraint && IsA(constraint, Constraint) &&
		constraint->contype == CONSTR_CHECK && !constraint->skip_validation;
}

/* ADD FOREIGN KEY that PostgreSQL would validate */
static bool
AddsValidatedForeignKey(AlterTableCmd *cmd)
{
	Constraint *constraint = (Constraint *) cmd->def;

	return cmd->subtype == AT_AddConstraint && IsA(constraint, Constraint) &&
		constraint->contype == CONSTR_FOREIGN && !constraint->skip_validation;
}

/*
 * The column of a SET NOT NULL that PostgreSQL would check (it exists, is
 * not a system column, and allows nulls), or InvalidAttrNumber
 */
static AttrNumber
NotNullColumn(Oid relid, AlterTableCmd *cmd)
{
	HeapTuple	tuple;
	AttrNumber	attnum = InvalidAttrNumber;

	if (cmd->subtype != AT_SetNotNull || !OidIsValid(relid))
		return InvalidAttrNumber;
	tuple = SearchSysCacheAttName(relid, cmd->name);
	if (!HeapTupleIsValid(tuple))
		return InvalidAttrNumber;
	if (((Form_pg_attribute) GETSTRUCT(tuple))->attnum > 0 &&
		!((Form_pg_attribute) GETSTRUCT(tuple))->attnotnull)
		attnum = ((Form_pg_attribute) GETSTRUCT(tuple))->attnum;
	ReleaseSysCache(tuple);
	return attnum;
}

static bool
SetsNotNull(Oid relid, AlterTableCmd *cmd)
{
	return NotNullColumn(relid, cmd) != InvalidAttrNumber;
}

/*
 * The constraint a VALIDATE CONSTRAINT names, if it exists and is not valid
 * yet (*contype: its type, *referenced: the table a foreign key references);
 * InvalidOid otherwise
 */
static Oid
ConstraintToValidate(Oid relid, const char *name, char *contype, Oid *referenced)
{
	Oid			conoid = get_relation_constraint_oid(relid, name, true);
	HeapTuple	tuple;
	bool		valid;

	if (!OidIsValid(conoid))
		return InvalidOid;
	tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	*contype = ((Form_pg_constraint) GETSTRUCT(tuple))->contype;
	*referenced = ((Form_pg_constraint) GETSTRUCT(tuple))->confrelid;
	valid = ((Form_pg_constraint) GETSTRUCT(tuple))->convalidated;
	ReleaseSysCache(tuple);
	return valid ? InvalidOid : conoid;
}

/*
 * The table a foreign key of ADD FOREIGN KEY or VALIDATE CONSTRAINT
 * references, or InvalidOid (none, or it does not exist: PostgreSQL says so)
 */
static Oid
ReferencedTable(Oid relid, AlterTableCmd *cmd)
{
	char		contype = 0;
	Oid			referenced = InvalidOid;

	if (AddsValidatedForeignKey(cmd))
		return RangeVarGetRelid(((Constraint *) cmd->def)->pktable, NoLock, true);
	if (cmd->subtype != AT_ValidateConstraint || !OidIsValid(relid) ||
		!OidIsValid(ConstraintToValidate(relid, cmd->name, &contype, &referenced)))
		return InvalidOid;
	return referenced;
}

/*
 * Does a subcommand make PostgreSQL check the table's existing rows against
 * a constraint?
 */
static bool
ChecksExistingRows(Oid relid, AlterTableCmd *cmd)
{
	char		contype = 0;
	Oid			referenced;

	if (AddsValidatedCheck(cmd) || SetsNotNull(relid, cmd) || AddsValidatedForeignKey(cmd))
		return true;
	return cmd->subtype == AT_ValidateConstraint && OidIsValid(relid) &&
		OidIsValid(ConstraintToValidate(relid, cmd->name, &contype, &referenced)) &&
		(contype == CONSTRAINT_CHECK || contype == CONSTRAINT_FOREIGN);
}

/* Is the table's access method heap? */
static bool
IsHeapTable(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		heap;

	if (!HeapTupleIsValid(tuple))
		return false;
	heap = ((Form_pg_class) GETSTRUCT(tuple))->relam == HEAP_TABLE_AM_OID;
	ReleaseSysCache(tuple);
	return heap;
}

/*
 * ALTER TABLE whose one subcommand adds a CHECK constraint (not NOT VALID)
 * or validates one.  Other statements that check existing rows (a foreign
 * key, several subcommands, a table with partitions or children, ...) run
 * in the session.
 */
static KindAcceptance
ConstraintAccepts(Node *parsetree, const char **reason)
{
	AlterTableStmt *stmt;
	Oid			relid;
	Oid			referenced;
	ListCell   *lc;
	bool		any_checks = false;

	if (!IsA(parsetree, AlterTableStmt) || ((AlterTableStmt *) parsetree)->objtype != OBJECT_TABLE)
		return KIND_NOT_ACCEPTED;
	stmt = (AlterTableStmt *) parsetree;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	foreach(lc, stmt->cmds)
		any_checks |= ChecksExistingRows(relid, lfirst_node(AlterTableCmd, lc));
	if (!any_checks || !OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
		return KIND_NOT_ACCEPTED;	/* PostgreSQL reports what is wrong */
	referenced = OnlyCommand(stmt) != NULL ? ReferencedTable(relid, OnlyCommand(stmt)) : InvalidOid;
	if (OnlyCommand(stmt) == NULL)
		*reason = "Only an ALTER TABLE whose one subcommand is ADD CHECK, ADD FOREIGN KEY, VALIDATE CONSTRAINT or ALTER COLUMN SET NOT NULL runs in the background.";
	else if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		*reason = "The table is temporary: it belongs to this session.";
	else if (IsCatalogRelationOid(relid))
		*reason = "The table is a system catalog.";
	else if (has_subclass(relid))
		*reason = "The table has inheritance children, whose rows PostgreSQL checks in the same statement.";
	else if (!IsHeapTable(relid))
		*reason = "The table's access method is not heap.";
	else if (PgCitusTable(relid))
		*reason = PgCitusInSessionReason(relid);
	else if (OidIsValid(referenced) && get_rel_relkind(referenced) != RELKIND_RELATION)
		*reason = "The referenced table is partitioned: a foreign key to it is checked in the session.";
	else if (OidIsValid(referenced) && PgCitusTable(referenced))
		*reason = PgCitusInSessionReason(referenced);
	return *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
}

/*
 * Lock the table the statement names (relid when it was looked up) for the
 * submit, as a job takes a lock that others use (JobStepLockRelation), and
 * make sure the name still names it
 */
static void
LockForSubmit(RangeVar *relation, Oid relid, LOCKMODE mode)
{
	JobStepLockRelation(relid, mode, background_ddl_lock_timeout_ms);
	if (RangeVarGetRelid(relation, NoLock, false) != relid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" was replaced while the statement was submitted",
						relation->relname),
				 errhint("Run the statement again.")));
}

/* The constraints of a table of one type that are not valid */
static List *
NotValidConstraints(Oid relid, char contype)
{
	Relation	pg_constraint = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *constraints = NIL;

	ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(pg_constraint, ConstraintRelidTypidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_constraint form = (Form_pg_constraint) GETSTRUCT(tuple);

		if (form->contype == contype && !form->convalidated)
			constraints = lappend_oid(constraints, form->oid);
	}
	systable_endscan(scan);
	table_close(pg_constraint, AccessShareLock);
	return constraints;
}

/*
 * ADD CHECK: run as ADD CHECK ... NOT VALID (constraint, with
 * skip_validation), with all of PostgreSQL's checks and errors, under the
 * statement's ACCESS EXCLUSIVE lock (taken first, as LockForSubmit takes
 * it).  The constraint it made is the job's.
 */
static Oid
AddNotValid(KindSubmit *submit, AlterTableStmt *stmt, Oid relid, Constraint *constraint)
{
	AlterTableStmt *not_valid = copyObject(stmt);
	AlterTableCmd *add = makeNode(AlterTableCmd);
	PlannedStmt *pstmt = copyObject(submit->pstmt);
	char		contype;
	List	   *before;
	List	   *added;

	/*
	 * ADD CHECK takes ACCESS EXCLUSIVE; ADD FOREIGN KEY, SHARE ROW EXCLUSIVE
	 * on both tables, the referencing one first
	 */
	if (constraint->contype == CONSTR_FOREIGN)
	{
		Oid			referenced = RangeVarGetRelid(constraint->pktable, NoLock, true);

		LockForSubmit(stmt->relation, relid, ShareRowExclusiveLock);
		if (OidIsValid(referenced))
			LockForSubmit(constraint->pktable, referenced, ShareRowExclusiveLock);
	}
	else
		LockForSubmit(stmt->relation, relid, AccessExclusiveLock);
	contype = constraint->contype == CONSTR_FOREIGN ? CONSTRAINT_FOREIGN : CONSTRAINT_CHECK;
	before = NotValidConstraints(relid, contype);
	constraint = copyObject(constraint);
	constraint->skip_validation = true;
	constraint->initially_valid = false;
	add->subtype = AT_AddConstraint;
	add->def = (Node *) constraint;
	not_valid->cmds = list_make1(add);
	pstmt->utilityStmt = (Node *) not_valid;
	submit->run_utility(submit, pstmt);
	CommandCounterIncrement();
	added = list_difference_oid(NotValidConstraints(relid, contype), before);
	if (list_length(added) != 1)
		elog(ERROR, "ALTER TABLE ADD CONSTRAINT NOT VALID added %d constraints", list_length(added));
	return linitial_oid(added);
}

/*
 * SET NOT NULL: what PostgreSQL checks before it reads a row (the column,
 * the table's owner), then a helper CHECK (x IS NOT NULL) NOT VALID, named
 * as PostgreSQL names a constraint of the column, which the job validates
 * and the cut-over replaces with the column's NOT NULL.
 */
/* The raw expression column IS NOT NULL */
static Node *
IsNotNull(const char *column_name)
{
	NullTest   *not_null = makeNode(NullTest);
	ColumnRef  *column = makeNode(ColumnRef);

	column->fields = list_make1(makeString(pstrdup(column_name)));
	column->location = -1;
	not_null->arg = (Expr *) column;
	not_null->nulltesttype = IS_NOT_NULL;
	not_null->location = -1;
	return (Node *) not_null;
}

static Oid
AddNotNullHelper(KindSubmit *submit, AlterTableStmt *stmt, Oid relid)
{
	AlterTableCmd *cmd = OnlyCommand(stmt);
	Constraint *helper = makeNode(Constraint);

	LockForSubmit(stmt->relation, relid, AccessExclusiveLock);
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
	if (NotNullColumn(relid, cmd) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("column \"%s\" of relation \"%s\" changed while the statement was submitted",
						cmd->name, get_rel_name(relid)),
				 errhint("Run the statement again.")));
	helper->contype = CONSTR_CHECK;
	helper->conname = ChooseConstraintName(get_rel_name(relid), cmd->name, "not_null",
										   get_rel_namespace(relid), NIL);
	helper->raw_expr = IsNotNull(cmd->name);
	helper->location = -1;
	return AddNotValid(submit, stmt, relid, helper);
}

/*
 * VALIDATE CONSTRAINT: what PostgreSQL checks before it reads a row (the
 * table's owner, the constraint), under the statement's lock
 */
static Oid
ValidatableCheck(AlterTableStmt *stmt, Oid relid)
{
	AlterTableCmd *cmd = OnlyCommand(stmt);
	char		contype = 0;
	Oid			referenced;
	Oid			conoid;

	LockForSubmit(stmt->relation, relid, ShareUpdateExclusiveLock);
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
	conoid = ConstraintToValidate(relid, cmd->name, &contype, &referenced);
	if (!OidIsValid(conoid) || (contype != CONSTRAINT_CHECK && contype != CONSTRAINT_FOREIGN))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("constraint \"%s\" of relation \"%s\" changed while the statement was submitted",
						cmd->name, get_rel_name(relid)),
				 errhint("Run the statement again.")));
	return conoid;
}

static void
ConstraintValidate(KindSubmit *submit)
{
	AlterTableStmt *stmt = CheckedNode(AlterTableStmt, submit->pstmt->utilityStmt);
	AlterTableCmd *cmd = OnlyCommand(stmt);
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, false);
	Oid			conoid;
	HeapTuple	tuple;

	if (cmd->subtype == AT_SetNotNull)
	{
		conoid = AddNotNullHelper(submit, stmt, relid);
		CatalogKindStateSetInt(&submit->kind_state, STATE_NOT_NULL_ATTNUM,
							   get_attnum(relid, cmd->name));
	}
	else if (cmd->subtype == AT_AddConstraint)
		conoid = AddNotValid(submit, stmt, relid, (Constraint *) cmd->def);
	else
		conoid = ValidatableCheck(stmt, relid);
	submit->target_oid = relid;
	CatalogKindStateSetInt(&submit->kind_state, STATE_CONSTRAINT_OID, conoid);
	CatalogKindStateSetInt(&submit->kind_state, STATE_ADDED, cmd->subtype != AT_ValidateConstraint);
	tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for constraint %u", conoid);
	if (((Form_pg_constraint) GETSTRUCT(tuple))->contype == CONSTRAINT_FOREIGN)
	{
		CatalogKindStateSetInt(&submit->kind_state, STATE_FOREIGN_KEY, 1);
		/*
		 * Rows added to the referenced table can make a row valid, and
		 * rows removed from it invalid: the session's later writes of it
		 * come after the check too
		 */
		submit->sources = list_make1_oid(((Form_pg_constraint) GETSTRUCT(tuple))->confrelid);
		submit->source_effects = REL_ADDS_ROWS | REL_REMOVES_ROWS | REL_REDEFINES;
	}
	ReleaseSysCache(tuple);
	/*
	 * The session's later writes are checked by the constraint; but one
	 * that removes or changes a violating row, or changes the table's
	 * definition, must come after the check, as it would have.
	 */
	submit->target_effects = REL_ADDS_ROWS | REL_REMOVES_ROWS | REL_REDEFINES;
}

/* Nothing to reserve: the constraint exists, NOT VALID, from the submit on */
static void
ConstraintReserve(KindSubmit *submit)
{
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(submit->target_oid)),
													 get_rel_name(submit->target_oid));
	submit->strategy = pstrdup(CatalogKindStateInt(submit->kind_state, STATE_FOREIGN_KEY) != 0 ?
							   STRATEGY_FOREIGN_KEY : STRATEGY_CHECK_IN_CHUNKS);
}

/* Is the job's constraint a foreign key? */
static bool
JobIsForeignKey(const BgddlJob *job)
{
	return CatalogKindStateInt(job->kind_state, STATE_FOREIGN_KEY) != 0;
}

/* The column a SET NOT NULL job makes NOT NULL, or InvalidAttrNumber */
static AttrNumber
JobNotNullColumn(const BgddlJob *job)
{
	return (AttrNumber) CatalogKindStateInt(job->kind_state, STATE_NOT_NULL_ATTNUM);
}

static Oid
JobConstraint(const BgddlJob *job)
{
	return (Oid) CatalogKindStateInt(job->kind_state, STATE_CONSTRAINT_OID);
}

/*
 * The job's constraint, copied, if it still exists on the job's table; the
 * caller has locked the table
 */
static HeapTuple
JobConstraintTuple(const BgddlJob *job)
{
	HeapTuple	tuple = SearchSysCacheCopy1(CONSTROID, ObjectIdGetDatum(JobConstraint(job)));

	if (HeapTupleIsValid(tuple) &&
		((Form_pg_constraint) GETSTRUCT(tuple))->conrelid != job->target_oid)
	{
		heap_freetuple(tuple);
		return NULL;
	}
	return HeapTupleIsValid(tuple) ? tuple : NULL;
}

/*
 * Begin a step that locks the job's table in mode (as a job takes a lock
 * that others use), and return the job's constraint; or, if the table or
 * the constraint is gone, end the step and return NULL (run->gone_reason
 * says which).
 */
static HeapTuple
BeginConstraintStep(JobRun *run, const char *activity, LOCKMODE mode)
{
	HeapTuple	constraint = NULL;

	JobStepBegin(activity, STEP_READ_COMMITTED);
	JobStepLockRelation(run->job.target_oid, mode, background_ddl_lock_timeout_ms);
	if (JobRunTargetExists(run))
	{
		constraint = JobConstraintTuple(&run->job);
		if (constraint == NULL)
			run->gone_reason = "the constraint was dropped";
	}
	if (constraint == NULL)
		JobStepEnd();
	return constraint;
}

static void
ConstraintStart(JobRun *run)
{
	ConstraintRun *c = MemoryContextAllocZero(JobContext(), sizeof(ConstraintRun));

	c->chunk_blocks = CHUNK_BLOCKS_FIRST;
	run->kind_run = c;
}

/* The rows to check: the blocks the table has now, and its storage */
static void
MeasureTable(JobRun *run, Relation rel)
{
	run->job.work_total = RelationGetNumberOfBlocks(rel);
	run->job.rows_total = rel->rd_rel->reltuples >= 0 ? (int64) rel->rd_rel->reltuples : -1;
	CatalogKindStateSetInt(&run->job.kind_state, STATE_RELFILENODE, rel->rd_node.relNode);
}

static void
ConstraintPlan(JobRun *run)
{
	Relation	rel;

	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	rel = table_open(run->job.target_oid, AccessShareLock);
	MeasureTable(run, rel);
	table_close(rel, NoLock);
	run->job.strategy = pstrdup(JobIsForeignKey(&run->job) ? STRATEGY_FOREIGN_KEY :
								STRATEGY_CHECK_IN_CHUNKS);
	run->job.planned = true;
	CatalogJobRecordPlan(&run->job);
	JobStepEnd();
}

/* The expression of a check constraint */
static Node *
CheckExpression(HeapTuple constraint)
{
	bool		isnull;
	Datum		conbin = SysCacheGetAttr(CONSTROID, constraint, Anum_pg_constraint_conbin, &isnull);

	if (isnull)
		elog(ERROR, "null conbin for constraint %u",
			 ((Form_pg_constraint) GETSTRUCT(constraint))->oid);
	return stringToNode(TextDatumGetCString(conbin));
}

/*
 * Check the rows of blocks [start, end) against check constraint name
 * (expression expr), with a new snapshot, as ALTER TABLE checks them (its
 * executor, its error: SET NOT NULL's, if not_null_column); returns the
 * rows checked.  With violations, count the rows that violate it there
 * instead of failing.
 */
static uint64
CheckBlocks(Relation rel, Node *expr, const char *name, AttrNumber not_null_column,
			BlockNumber start, BlockNumber end, uint64 *violations)
{
	EState	   *estate;
	ExprState  *check;
	ExprContext *econtext;
	TupleTableSlot *slot;
	Snapshot	snapshot;
	TableScanDesc scan;
	uint64		rows = 0;

	if (end <= start)
		return 0;
	estate = CreateExecutorState();
	check = ExecPrepareExpr((Expr *) expr, estate);
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(rel, NULL);
	econtext->ecxt_scantuple = slot;
	/*
	 * A sequential scan of the chunk's blocks, with a bulk-read ring as
	 * ALTER TABLE's (a TID range scan was 1.7 times slower per row)
	 */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan_strat(rel, snapshot, 0, NULL, true, false);
	heap_setscanlimits(scan, start, end - start);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		if (!ExecCheck(check, econtext))
		{
			if (violations == NULL && not_null_column != InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_NOT_NULL_VIOLATION),
						 errmsg("column \"%s\" of relation \"%s\" contains null values",
								get_attname(RelationGetRelid(rel), not_null_column, false),
								RelationGetRelationName(rel)),
						 errtablecol(rel, not_null_column)));
			if (violations == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_CHECK_VIOLATION),
						 errmsg("check constraint \"%s\" of relation \"%s\" is violated by some row",
								name, RelationGetRelationName(rel)),
						 errtableconstraint(rel, name)));
			(*violations)++;
		}
		ResetExprContext(econtext);
		rows++;
		CHECK_FOR_INTERRUPTS();
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	return rows;
}

/*
 * A foreign key's capture: an UPDATE that leaves a row's key as it was is
 * not checked by PostgreSQL (RI_FKey_fk_upd_check_required), and may move a
 * row that never was valid into blocks the job has checked already.  So,
 * before the first chunk, the job installs capture triggers
 * (capture_trigger.c) that log the tuple id of every changed row, and
 * checks those rows after the chunks (the catch-up) and, under a lock that
 * keeps writers out, at the cut-over.  A LockingStep: CREATE TRIGGER's lock.
 */
static void
InstallCaptureStep(JobRun *run, void *arg)
{
	Oid			relid = run->job.target_oid;
	Capture		capture;
	char	   *refusal;

	JobStepLockRelation(relid, ShareRowExclusiveLock, background_ddl_lock_timeout_ms);
	refusal = CaptureRefusal(relid, run->job.identity.owner_oid);
	if (refusal != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("background DDL job %lld cannot capture the changes of its table: %s",
						(long long) run->job.id, refusal)));
	CaptureInstall(run->job.id, relid, list_make1_oid(relid), list_make1_int(0), relid, NULL, 0,
				   &capture);
	CatalogJobSetCleanupPending(run->job.id, true);
	run->job.cleanup_pending = true;
	CatalogKindStateSetInt(&run->job.kind_state, STATE_CAPTURED, 1);
	CatalogJobRecordKindState(&run->job);
}

/*
 * The check starts over from the first block (the table was rewritten, or
 * its changes were not all captured): what was captured is forgotten.
 * Caller is in a step and holds a lock on the table.
 */
static void
RestartCheck(JobRun *run, Relation rel, const char *why)
{
	ereport(LOG,
			(errmsg("background DDL job %lld: %s; the rows of \"%s\" are checked again from the first block",
					(long long) run->job.id, why, RelationGetRelationName(rel))));
	if (JobIsForeignKey(&run->job))
		CaptureForget(run->job.id, false);
	MeasureTable(run, rel);
	CatalogJobRestartBuild(&run->job);
}

/*
 * In a step: check the foreign key's rows changed since the capture began,
 * up to max_marks of them, as the submitting role, and forget them.
 * JOB_STEP_MORE if more are left.  If the capture cannot tell which rows
 * changed (a pause, a transaction that changed too many rows), the check
 * starts over from the first block (JOB_STEP_RESTART).  If the capture
 * cannot be trusted any more (its triggers were changed, or its backlog
 * outgrew its bound and it stopped), every row is checked, but only
 * writers_locked (at the cut-over): until then, JOB_STEP_DONE.
 */
static JobStepResult
CheckChangedRows(JobRun *run, HeapTuple constraint, int max_marks, bool writers_locked)
{
	Relation	rel = table_open(run->job.target_oid, NoLock);
	CapturedMarks marks;
	Capture		capture = {0};
	bool		trusted;
	ItemPointerData *tids;
	MarkId	   *ids;
	JobStepResult result = JOB_STEP_DONE;

	trusted = CaptureRowLoad(run->job.id, &capture) && CaptureIntact(&capture) && !capture.stopped;
	PushActiveSnapshot(GetLatestSnapshot());
	CaptureMarksScan(run->job.id, max_marks, &marks);
	PopActiveSnapshot();
	if (!trusted && writers_locked)
	{
		ereport(LOG,
				(errmsg("background DDL job %lld: the changes to \"%s\" were not all captured; its cut-over checks every row",
						(long long) run->job.id, RelationGetRelationName(rel))));
		JobQueryBegin(run->job.identity.owner_oid, false);
		(void) ForeignKeyCheckBlocks(rel, constraint, 0, RelationGetNumberOfBlocks(rel));
		JobQueryEnd();
		CaptureForget(run->job.id, false);
	}
	else if (trusted && (marks.uncaptured || marks.whole_table))
	{
		RestartCheck(run, rel, "changes to its table were not all captured");
		result = JOB_STEP_RESTART;
	}
	else if (trusted)
	{
		tids = palloc(sizeof(ItemPointerData) * Max(marks.nrows, 1));
		ids = palloc(sizeof(MarkId) * Max(marks.nrows, 1));
		for (int i = 0; i < marks.nrows; i++)
		{
			tids[i] = marks.rows[i].source;
			ids[i] = marks.rows[i].mark;
		}
		JobQueryBegin(run->job.identity.owner_oid, true);
		ForeignKeyCheckRows(rel, constraint, tids, marks.nrows);
		JobQueryEnd();
		CaptureMarksDelete(run->job.id, ids, marks.nrows);
		CaptureMarksDelete(run->job.id, marks.others, marks.nothers);
		result = marks.more ? JOB_STEP_MORE : JOB_STEP_DONE;
	}
	table_close(rel, NoLock);
	return result;
}

/*
 * After the chunks: a foreign key's changed rows, a batch per step, until
 * none is left (the cut-over checks those that come meanwhile)
 */
static JobStepResult
ConstraintCatchUp(JobRun *run)
{
	HeapTuple	constraint;
	JobStepResult result;

	if (!JobIsForeignKey(&run->job))
		return JOB_STEP_DONE;
	JobStepHoldPoint("catching up");
	constraint = BeginConstraintStep(run, "background_ddl: checking changed rows", AccessShareLock);
	if (constraint == NULL)
		return JOB_STEP_TARGET_GONE;
	result = CheckChangedRows(run, constraint, CATCH_UP_MARKS, false);
	JobStepEnd();
	return result;
}

/*
 * One chunk: the next blocks from the checkpoint (work_done), checked in a
 * step of their own.  JOB_STEP_DONE once every block the table had when
 * the job was planned is checked; the check starts over if the table was
 * rewritten since.
 */
static JobStepResult
ConstraintBackfillStep(JobRun *run)
{
	ConstraintRun *c = run->kind_run;
	Relation	rel;
	HeapTuple	constraint;
	BlockNumber start;
	BlockNumber end;
	uint64		rows;
	double		seconds;
	double		allowed_rows;
	instr_time	start_time;
	instr_time	duration;

	if (JobIsForeignKey(&run->job) && CatalogKindStateInt(run->job.kind_state, STATE_CAPTURED) == 0)
	{
		JobStepHoldPoint("installing capture");
		JobRunLockingStep(run, InstallCaptureStep, NULL, JOB_PHASE_INSTALLING_CAPTURE,
						  "background_ddl: installing capture");
		JobRunSetPhase(run, JOB_PHASE_BACKFILLING);
		return JOB_STEP_MORE;
	}
	JobStepHoldAtChunk(run->job.chunks_done);
	constraint = BeginConstraintStep(run, "background_ddl: checking a chunk of rows", AccessShareLock);
	if (constraint == NULL)
		return JOB_STEP_TARGET_GONE;
	rel = table_open(run->job.target_oid, NoLock);
	if (((Form_pg_constraint) GETSTRUCT(constraint))->convalidated ||
		run->job.work_done >= run->job.work_total)
	{
		/* The job row's counts lag behind the chunks' (CatalogJobRecordChunk) */
		CatalogJobSetBackfillTotals(&run->job, run->job.chunks_done, run->job.rows_done,
									run->job.work_done);
		table_close(rel, NoLock);
		JobStepEnd();
		return JOB_STEP_DONE;
	}
	if (rel->rd_node.relNode != (Oid) CatalogKindStateInt(run->job.kind_state, STATE_RELFILENODE))
	{
		RestartCheck(run, rel, "its table was rewritten");
		table_close(rel, NoLock);
		JobStepEnd();
		return JOB_STEP_MORE;
	}

	start = (BlockNumber) run->job.work_done;
	end = (BlockNumber) Min((double) run->job.work_total, start + c->chunk_blocks);
	INSTR_TIME_SET_CURRENT(start_time);
	JobQueryBegin(run->job.identity.owner_oid, true);
	/* VACUUM may have truncated empty blocks at the end: nothing to check there */
	if (JobIsForeignKey(&run->job))
		rows = ForeignKeyCheckBlocks(rel, constraint, start,
									 Min(end, RelationGetNumberOfBlocks(rel)));
	else
		rows = CheckBlocks(rel, CheckExpression(constraint),
						   NameStr(((Form_pg_constraint) GETSTRUCT(constraint))->conname),
						   JobNotNullColumn(&run->job), start,
						   Min(end, RelationGetNumberOfBlocks(rel)), NULL);
	JobQueryEnd();
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);

	/* Chunks grow or shrink toward the batch time, and the rows a rate limit allows */
	c->chunk_blocks = Min((double) CHUNK_BLOCKS_MAX,
						  Max(1.0, c->chunk_blocks * JobRunBatchScale(&run->job, seconds)));
	allowed_rows = JobRunRowsPerBatch(&run->job);
	if (allowed_rows > 0 && rows > 0)
		c->chunk_blocks = Max(1.0, Min(c->chunk_blocks,
									   allowed_rows / ((double) rows / (end - start))));
	CatalogJobRecordChunk(&run->job, rows, end - start, (int64) c->chunk_blocks,
						  seconds / (end - start));
	JobPublishChunkDone(run->job.chunks_done, run->job.progress);
	table_close(rel, NoLock);
	JobStepEnd();
	JobRunPace(run, rows, seconds);
	return JOB_STEP_MORE;
}

/*
 * Mark the constraint valid, as VALIDATE CONSTRAINT marks it; caller holds
 * a lock on the table that keeps out other schema changes
 */
static void
MarkValid(Oid relid, HeapTuple constraint)
{
	Relation	pg_constraint = table_open(ConstraintRelationId, RowExclusiveLock);

	((Form_pg_constraint) GETSTRUCT(constraint))->convalidated = true;
	CatalogTupleUpdate(pg_constraint, &constraint->t_self, constraint);
	InvokeObjectPostAlterHook(ConstraintRelationId,
							  ((Form_pg_constraint) GETSTRUCT(constraint))->oid, 0);
	CacheInvalidateRelcacheByRelid(relid);
	table_close(pg_constraint, RowExclusiveLock);
}

/*
 * Run ALTER TABLE on the job's table with one subcommand (of column or
 * constraint name), as PostgreSQL runs it, as the submitting role; caller
 * holds the subcommand's lock on the table
 */
static void
RunAlterTable(const BgddlJob *job, AlterTableType subtype, const char *name, LOCKMODE mode)
{
	AlterTableStmt *stmt = makeNode(AlterTableStmt);
	AlterTableCmd *cmd = makeNode(AlterTableCmd);
	AlterTableUtilityContext context = {0};
	Oid			saved_userid;
	int			saved_sec_context;

	cmd->subtype = subtype;
	cmd->name = pstrdup(name);
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(job->target_oid)),
								  get_rel_name(job->target_oid), -1);
	stmt->cmds = list_make1(cmd);
	stmt->objtype = OBJECT_TABLE;
	context.pstmt = makeNode(PlannedStmt);
	context.pstmt->commandType = CMD_UTILITY;
	context.pstmt->utilityStmt = (Node *) stmt;
	context.pstmt->stmt_location = -1;
	context.queryString = job->command;
	context.relid = job->target_oid;
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(job->identity.owner_oid,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	AlterTable(stmt, mode, &context);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	CommandCounterIncrement();
}

/* Drop the job's constraint (the helper of a SET NOT NULL job) */
static void
DropJobConstraint(const BgddlJob *job)
{
	ObjectAddress address;

	ObjectAddressSet(address, ConstraintRelationId, JobConstraint(job));
	performDeletion(&address, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
}

/*
 * Every row is checked: the constraint is valid from this commit on, under
 * VALIDATE CONSTRAINT's SHARE UPDATE EXCLUSIVE, which writers do not wait
 * for.  A foreign key's last changed rows are checked under SHARE, which
 * keeps writers out for as long (a job's lock, asked for without queueing
 * first): none can change a row meanwhile.  A SET NOT NULL job's helper, valid, lets PostgreSQL's SET NOT NULL
 * skip its scan (it proves the column has no nulls), and is dropped: that
 * needs SET NOT NULL's ACCESS EXCLUSIVE, for as long as a few catalog
 * updates take.
 */
static JobStepResult
ConstraintCutOver(JobRun *run)
{
	AttrNumber	column = JobNotNullColumn(&run->job);
	HeapTuple	constraint;

	JobStepHoldPoint("cutting over");
	constraint = BeginConstraintStep(run, "background_ddl: cutting over",
									 column != InvalidAttrNumber ? AccessExclusiveLock :
									 JobIsForeignKey(&run->job) ? ShareLock :
									 ShareUpdateExclusiveLock);
	if (constraint == NULL)
		return JOB_STEP_TARGET_GONE;
	if (JobIsForeignKey(&run->job))
	{
		/* No row changes meanwhile: the last marks are read in one scan */
		if (CheckChangedRows(run, constraint, INT_MAX, true) == JOB_STEP_RESTART)
		{
			JobStepEnd();
			return JOB_STEP_RESTART;
		}
	}
	if (!((Form_pg_constraint) GETSTRUCT(constraint))->convalidated)
		MarkValid(run->job.target_oid, constraint);
	if (column != InvalidAttrNumber)
	{
		CommandCounterIncrement();
		RunAlterTable(&run->job, AT_SetNotNull, get_attname(run->job.target_oid, column, false),
					  AccessExclusiveLock);
		DropJobConstraint(&run->job);
	}
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/* Why the job's target is gone: its table was dropped */
static const char *
ConstraintGoneReason(const BgddlJob *job)
{
	return "the table was dropped";
}

/*
 * In the submitting transaction: the rows checked here and now, by
 * PostgreSQL's own VALIDATE CONSTRAINT (or, for SET NOT NULL, the helper
 * dropped and PostgreSQL's SET NOT NULL run), as the submitting role.
 */
static Oid
ConstraintBuildHere(const BgddlJob *job)
{
	AttrNumber	column = JobNotNullColumn(job);
	HeapTuple	constraint;
	JobRun		run = {.job = *job};

	LockRelationOid(job->target_oid,
					column != InvalidAttrNumber ? AccessExclusiveLock : ShareUpdateExclusiveLock);
	constraint = JobConstraintTuple(job);
	if (constraint == NULL)
		elog(ERROR, "constraint %u of background DDL job %lld does not exist",
			 JobConstraint(job), (long long) job->id);
	if (column != InvalidAttrNumber)
	{
		DropJobConstraint(job);
		RunAlterTable(job, AT_SetNotNull, get_attname(job->target_oid, column, false),
					  AccessExclusiveLock);
	}
	else
		RunAlterTable(job, AT_ValidateConstraint,
					  NameStr(((Form_pg_constraint) GETSTRUCT(constraint))->conname),
					  ShareUpdateExclusiveLock);
	JobRunSucceeded(&run, job->target_oid, false, -1);
	return job->target_oid;
}

/*
 * Drop the constraint the job added (a VALIDATE job added none, and leaves
 * its constraint NOT VALID): dropping it takes ACCESS EXCLUSIVE on the
 * table, as a job takes such a lock.
 */
static void
ConstraintDiscard(const BgddlJob *job, bool keep_target)
{
	HeapTuple	constraint;

	if (keep_target || CatalogKindStateInt(job->kind_state, STATE_ADDED) == 0)
		return;
	JobStepLockRelation(job->target_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	constraint = JobConstraintTuple(job);
	if (constraint == NULL)
		return;
	/* dropping a foreign key locks the referenced table too */
	if (JobIsForeignKey(job))
		JobStepLockRelation(((Form_pg_constraint) GETSTRUCT(constraint))->confrelid,
							AccessExclusiveLock, background_ddl_lock_timeout_ms);
	DropJobConstraint(job);
}

/*
 * After a foreign key's job: its capture triggers dropped (ACCESS EXCLUSIVE
 * on the table, as a job takes such a lock), and its captured rows
 * forgotten
 */
static void
ConstraintCleanup(const BgddlJob *job)
{
	JobStepLockRelation(job->target_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	CaptureRemove(job->id, job->target_oid);
	CaptureForget(job->id, true);
}

/*
 * A foreign key's job was paused: its capture triggers log nothing
 * meanwhile (capture_trigger.c), so one uncaptured mark stands for what
 * they missed, and the check starts over when it resumes
 */
static void
ConstraintPaused(const BgddlJob *job)
{
	Capture		capture;

	if (CaptureRowLoad(job->id, &capture) && !capture.stopped)
		CaptureCoverAll(job->id);
}

/* Does the job keep capture triggers on a table of that role? */
static bool
ConstraintKeepsOnTableOf(const BgddlJob *job, Oid role)
{
	return CatalogKindStateInt(job->kind_state, STATE_CAPTURED) != 0 &&
		SearchSysCacheExists1(RELOID, ObjectIdGetDatum(job->target_oid)) &&
		PgRelationOwnerCheck(job->target_oid, role);
}

/* A constraint the job added is dropped under ACCESS EXCLUSIVE: by the worker */
static bool
ConstraintDiscardsInAnyTransaction(const BgddlJob *job)
{
	return CatalogKindStateInt(job->kind_state, STATE_ADDED) == 0;
}

/*
 * explain_ddl: what the job does, for a statement that becomes one, or why
 * it runs in the session
 */
static const char *
ConstraintExplain(Node *raw_statement, const char *query_string)
{
	const char *reason = NULL;

	switch (ConstraintAccepts(raw_statement, &reason))
	{
		case KIND_ACCEPTED:
			{
				AlterTableStmt *stmt = (AlterTableStmt *) raw_statement;
				AlterTableCmd *cmd = OnlyCommand(stmt);

				return AddsValidatedForeignKey(cmd) ||
					OidIsValid(ReferencedTable(RangeVarGetRelid(stmt->relation, NoLock, false), cmd)) ?
					STRATEGY_FOREIGN_KEY : STRATEGY_CHECK_IN_CHUNKS;
			}
		case KIND_IN_SESSION:
			return psprintf("in the session: %s", reason);
		default:
			return NULL;
	}
}

/* The expression of an ADD CHECK, transformed as ALTER TABLE transforms it */
static Node *
CookedCheck(Relation rel, Node *raw_expr)
{
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock,
															   NULL, false, true);
	Node	   *expr;

	addNSItemToQuery(pstate, nsitem, true, true, true);
	expr = transformExpr(pstate, raw_expr, EXPR_KIND_CHECK_CONSTRAINT);
	expr = coerce_to_boolean(pstate, expr, "CHECK");
	assign_expr_collations(pstate, expr);
	free_parsestate(pstate);
	return expr;
}

/*
 * estimate_ddl: the check measured on a sample of the table (8 ranges, a
 * hundredth of its blocks, at least ESTIMATE_SAMPLE_MIN_BLOCKS), as the
 * caller (who must own the table, as for ALTER TABLE), under
 * SECURITY_RESTRICTED_OPERATION as the job runs it; its time scaled to the
 * table.  The sample's violations are counted, and said.
 */
static bool
ConstraintEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	AlterTableStmt *stmt = (AlterTableStmt *) raw_statement;
	const char *reason = NULL;
	KindAcceptance acceptance = ConstraintAccepts(raw_statement, &reason);
	AlterTableCmd *cmd;
	Relation	rel;
	Node	   *expr;
	const char *name;
	int64		total;
	int64		target;
	volatile uint64 rows = 0;
	uint64		violations = 0;
	instr_time	start_time;
	instr_time	duration;
	Oid			saved_userid;
	int			saved_sec_context;
	MemoryContext caller_context = CurrentMemoryContext;
	ResourceOwner caller_owner = CurrentResourceOwner;

	if (acceptance == KIND_NOT_ACCEPTED)
		return false;
	rel = table_openrv(stmt->relation, AccessShareLock);
	if (!pg_class_ownercheck(RelationGetRelid(rel), GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	total = RelationGetNumberOfBlocks(rel);
	estimate->total_blocks = total;
	estimate->rows = rel->rd_rel->reltuples >= 0 ? (int64) rel->rd_rel->reltuples : -1;
	estimate->bytes = 0;
	estimate->wal_bytes = 0;
	estimate->seconds = -1;
	estimate->sampled_blocks = 0;
	if (acceptance == KIND_IN_SESSION)
	{
		estimate->strategy = psprintf("in the session: %s", reason);
		estimate->locks = pstrdup("as ALTER TABLE takes them");
		table_close(rel, NoLock);
		return true;
	}
	estimate->locks = psprintf("ACCESS EXCLUSIVE on \"%s\" for a moment at submit (ADD; SHARE UPDATE "
							   "EXCLUSIVE for VALIDATE), asked for without queueing first; ACCESS SHARE "
							   "while each chunk is checked; SHARE UPDATE EXCLUSIVE for a moment at the end",
							   RelationGetRelationName(rel));
	cmd = OnlyCommand(stmt);
	if (OidIsValid(ReferencedTable(RelationGetRelid(rel), cmd)) || AddsValidatedForeignKey(cmd))
	{
		estimate->strategy = pstrdup(STRATEGY_FOREIGN_KEY);
		estimate->locks = psprintf("SHARE ROW EXCLUSIVE on \"%s\" and the referenced table for a moment "
								   "at submit (ADD; SHARE UPDATE EXCLUSIVE for VALIDATE), asked for without "
								   "queueing first; SHARE ROW EXCLUSIVE for a moment to install and ACCESS "
								   "EXCLUSIVE to drop its capture triggers; ACCESS SHARE while each chunk is "
								   "checked; SHARE (writers wait) while the last changed rows are checked at "
								   "the end; not measured",
								   RelationGetRelationName(rel));
		table_close(rel, NoLock);
		return true;
	}
	if (cmd->subtype == AT_AddConstraint)
	{
		Constraint *constraint = (Constraint *) cmd->def;

		expr = CookedCheck(rel, constraint->raw_expr);
		name = constraint->conname != NULL ? constraint->conname : "new";
	}
	else if (cmd->subtype == AT_SetNotNull)
	{
		expr = CookedCheck(rel, IsNotNull(cmd->name));
		name = cmd->name;
	}
	else
	{
		char		contype;
		Oid			referenced;
		HeapTuple	constraint = SearchSysCache1(CONSTROID,
												 ObjectIdGetDatum(ConstraintToValidate(RelationGetRelid(rel),
																					   cmd->name, &contype,
																					   &referenced)));

		if (!HeapTupleIsValid(constraint))
			elog(ERROR, "constraint \"%s\" changed while it was estimated", cmd->name);
		expr = CheckExpression(constraint);
		name = cmd->name;
		ReleaseSysCache(constraint);
	}

	target = Max(ESTIMATE_SAMPLE_MIN_BLOCKS, total / ESTIMATE_SAMPLE_SHARE);
	if (target < total)
		target = target / 8 * 8;
	/* What the expression's functions do is rolled back (the abort restores the user) */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller_context);
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(saved_userid, saved_sec_context | SECURITY_RESTRICTED_OPERATION);
	INSTR_TIME_SET_CURRENT(start_time);
	PG_TRY();
	{
		for (int i = 0; i < 8; i++)
		{
			BlockNumber first = (BlockNumber) (total * i / 8);
			BlockNumber last = target >= total ? total * (i + 1) / 8 : first + target / 8;

			rows += CheckBlocks(rel, expr, name, InvalidAttrNumber, first, last, &violations);
		}
	}
	PG_CATCH();
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller_context);
		CurrentResourceOwner = caller_owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(caller_context);
	CurrentResourceOwner = caller_owner;
	estimate->sampled_blocks = Min(target, total);
	if (estimate->sampled_blocks > 0)
	{
		estimate->seconds = INSTR_TIME_GET_DOUBLE(duration) * total / estimate->sampled_blocks;
		estimate->rows = (int64) ((double) rows * total / estimate->sampled_blocks);
	}
	else
		estimate->seconds = 0;
	estimate->strategy = violations == 0 ? pstrdup(STRATEGY_CHECK_IN_CHUNKS) :
		psprintf("%s; %llu rows of the sample violate it: the job would fail", STRATEGY_CHECK_IN_CHUNKS,
				 (unsigned long long) violations);
	table_close(rel, NoLock);
	return true;
}

const KindRoutine kind_constraint_routine = {
	.name = "ALTER TABLE",
	.stands_for = OBJECT_TABLE,
	.accepts = ConstraintAccepts,
	.validate = ConstraintValidate,
	.reserve = ConstraintReserve,
	.explain = ConstraintExplain,
	.estimate = ConstraintEstimate,
	.start = ConstraintStart,
	.plan = ConstraintPlan,
	.backfill_step = ConstraintBackfillStep,
	.catch_up = ConstraintCatchUp,
	.cut_over = ConstraintCutOver,
	.gone_reason = ConstraintGoneReason,
	.discard = ConstraintDiscard,
	.cleanup = ConstraintCleanup,
	.paused = ConstraintPaused,
	.keeps_on_table_of = ConstraintKeepsOnTableOf,
	.discards_in_any_transaction = ConstraintDiscardsInAnyTransaction,
	.build_here = ConstraintBuildHere,
};
