/*-------------------------------------------------------------------------
 *
 * kind_constraint.c
 *	  Background ALTER TABLE ... ADD CHECK, ADD FOREIGN KEY, VALIDATE
 *	  CONSTRAINT, ALTER COLUMN ... SET NOT NULL and ATTACH PARTITION.
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
 *	  violates the constraint; a chunk worth it is checked by the worker and
 *	  parallel workers together (constraint_rows.c).  The job row's
 *	  work_done is the checkpoint: the first block not checked yet.
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
 * so the job captures the rows updates write (capture_trigger.c: from the
 * submit on, for ADD) and checks them after the chunks, the last ones at
 * the cut-over, which drops the capture under the same lock.
 *
 * A job that fails or is cancelled drops the constraint it added (a
 * moment of ACCESS EXCLUSIVE again, taken as a job takes such locks): the
 * table is as it was before the statement.  A VALIDATE job leaves its
 * constraint NOT VALID, as the failed VALIDATE would have.
 *
 * A partitioned table, or one with inheritance children: the constraint
 * is added to (validated on, dropped from) every table below it by ALTER
 * TABLE's own recursion, and each table with storage that carries it is a
 * part of the job (CheckedPart), checked in its own chunks against its own
 * copy, its blocks after the previous part's in work_done.  A part
 * rewritten before it was all checked is checked again from its first
 * block; a table added below the parent meanwhile becomes a part, found
 * after the last chunk and again by the cut-over, which locks the tree as
 * VALIDATE CONSTRAINT does.  A foreign key is not inherited: its one part
 * is the table.
 *
 * ATTACH PARTITION: the checks ATTACH would make (attach_partition.c) are
 * added NOT VALID as helpers, on the table attached and on the default
 * partition; the job's parts are those two tables, each checked against
 * its helper; the cut-over marks both valid, runs PostgreSQL's ATTACH,
 * which they spare its scans, and drops them.  The job's target is the
 * parent; its constraint, the helper on the table attached.
 *
 * Only heap tables of this server (not Citus), a foreign key of a plain
 * table referencing a plain table, and a statement with this one
 * subcommand; the rest runs in the session, with a NOTICE saying why.
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
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "commands/tablecmds.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
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
#include "pg/pg_relation.h"
#include "engine/job_run.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"
#include "kinds/attach_partition.h"
#include "kinds/constraint_rows.h"
#include "kinds/kind_constraint.h"
#include "kinds/foreign_key_check.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_lock.h"
#include "pg/pg_parallel.h"
#include "pg/pg_subxact.h"

#define STRATEGY_CHECK_IN_CHUNKS	"existing rows checked in chunks"

/* The job's kind_state */
#define STATE_CONSTRAINT_OID	"constraint_oid"
#define STATE_CONSTRAINT_NAME	"constraint_name"	/* its name (created again: a new OID) */
#define STATE_ADDED				"added"	/* 1: the job added the constraint */
#define STATE_PARTS				"parts"	/* the tables the chunks check (JobParts) */
#define STATE_NOT_NULL_ATTNUM	"not_null_attnum"	/* SET NOT NULL: the column */
#define STATE_FOREIGN_KEY		"foreign_key"	/* 1: a foreign key */
#define STATE_CAPTURED			"captured"	/* 1: its capture triggers are installed */
/* ATTACH PARTITION: the job's constraint is the helper on the table attached */
#define STATE_ATTACHED			"attached"	/* the table attached */
#define STATE_DEFAULT_PARTITION	"default_partition"	/* the parent's, or 0 */
#define STATE_DEFAULT_CONSTRAINT "default_constraint_oid"	/* its helper */
#define STATE_BOUND				"bound"	/* the bound, transformed (nodeToString) */
/* ADD PRIMARY KEY USING INDEX: the job's constraint is the not-null helper */

#define STRATEGY_FOREIGN_KEY	"existing rows checked in chunks, changed rows captured"
#define STRATEGY_ATTACH			"rows of the table attached and of the default partition checked in chunks"

/* Changed rows a catch-up step checks at most */
#define CATCH_UP_MARKS		10000

/* A chunk's blocks: the first, and the most (they grow toward the batch time) */
#define CHUNK_BLOCKS_FIRST	64
#define CHUNK_BLOCKS_MAX	(1 << 20)

/*
 * A chunk that one process would check in less than this is checked by the
 * worker alone: a parallel worker takes milliseconds to start
 */
#define PARALLEL_MIN_SECONDS	0.02

/* This worker's run of a job */
typedef struct ConstraintRun
{
	double		chunk_blocks;
	double		seconds_per_block;	/* for one process, as the last chunk took; 0: unknown */
} ConstraintRun;

/*
 * A table whose rows the job checks: the job's table, or each table with
 * storage of its inheritance tree that carries the constraint (its own
 * copy, conoid).  Its blocks, counted when it was measured, follow those of
 * the parts before it in the job's work_done.
 */
typedef struct CheckedPart
{
	Oid			relid;
	Oid			conoid;
	Oid			relfilenode;
	BlockNumber blocks;
} CheckedPart;

static List *AddHelperCarrier(List *carriers, Oid relid, Oid conoid, LOCKMODE mode);
static void RestartCheck(JobRun *run, HeapTuple constraint, const char *why);
static void MarkValid(List *carriers);
static void ConstraintCleanup(const BgddlJob *job);

static List *ConstraintCarriers(Oid relid, HeapTuple constraint, LOCKMODE mode);

/* The index of an ADD PRIMARY KEY USING INDEX job of that kind_state, or InvalidOid */
static Oid
JobKeyIndexOf(const Jsonb *kind_state)
{
	return (Oid) CatalogKindStateInt(kind_state, CONSTRAINT_STATE_KEY_INDEX);
}

/* The owner of a table the caller has locked */
static Oid
TableOwner(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	Oid			owner = rel->rd_rel->relowner;

	table_close(rel, NoLock);
	return owner;
}

/* The statement's one subcommand, if it has exactly one */
static AlterTableCmd *
OnlyCommand(AlterTableStmt *stmt)
{
	return list_length(stmt->cmds) == 1 ? linitial_node(AlterTableCmd, stmt->cmds) : NULL;
}

/* The subcommand of a job of this kind (its statement's only one), parsed again */
AlterTableCmd *
ConstraintJobCommand(const BgddlJob *job)
{
	RawStmt    *raw = linitial_node(RawStmt, raw_parser(job->command, RAW_PARSE_DEFAULT));

	return CheckedNode(AlterTableCmd, linitial(CheckedNode(AlterTableStmt, raw->stmt)->cmds));
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

/* Does column attnum of table relid not allow nulls? */
bool
ConstraintColumnNotNull(Oid relid, AttrNumber attnum)
{
	HeapTuple	tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
	bool		not_null;

	if (!HeapTupleIsValid(tuple))
		return false;
	not_null = ((Form_pg_attribute) GETSTRUCT(tuple))->attnotnull;
	ReleaseSysCache(tuple);
	return not_null;
}

static bool
SetsNotNull(Oid relid, AlterTableCmd *cmd)
{
	return NotNullColumn(relid, cmd) != InvalidAttrNumber;
}

/* Is the subcommand ADD PRIMARY KEY USING INDEX? */
static bool
IsPrimaryKeyUsingIndex(AlterTableCmd *cmd)
{
	Constraint *constraint = (Constraint *) cmd->def;

	return cmd->subtype == AT_AddConstraint && IsA(constraint, Constraint) &&
		constraint->contype == CONSTR_PRIMARY && constraint->indexname != NULL;
}

/*
 * The index of an ADD PRIMARY KEY USING INDEX of table relid whose key has
 * a column that allows nulls (PostgreSQL then sets each NOT NULL, in a
 * scan), or InvalidOid
 */
static Oid
PrimaryKeyIndex(Oid relid, AlterTableCmd *cmd)
{
	Constraint *constraint = (Constraint *) cmd->def;
	Oid			index;
	HeapTuple	tuple;
	bool		nullable = false;

	if (!IsPrimaryKeyUsingIndex(cmd) || !OidIsValid(relid))
		return InvalidOid;
	index = get_relname_relid(constraint->indexname, get_rel_namespace(relid));
	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	if (((Form_pg_index) GETSTRUCT(tuple))->indrelid == relid)
	{
		int2vector *key = &((Form_pg_index) GETSTRUCT(tuple))->indkey;

		for (int i = 0; i < ((Form_pg_index) GETSTRUCT(tuple))->indnkeyatts; i++)
			nullable |= key->values[i] > 0 && !ConstraintColumnNotNull(relid, key->values[i]);
	}
	ReleaseSysCache(tuple);
	return nullable ? index : InvalidOid;
}

/*
 * The key columns of a primary key's index that allow nulls, in their
 * table's order (attnums; none if it has an expression, which PostgreSQL
 * refuses, or if the index is gone)
 */
static List *
NullableKeyColumns(Oid index)
{
	HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	Form_pg_index form;
	List	   *columns = NIL;

	if (!HeapTupleIsValid(tuple))
		return NIL;
	form = (Form_pg_index) GETSTRUCT(tuple);
	for (int i = 0; i < form->indnkeyatts; i++)
	{
		if (form->indkey.values[i] > 0 && !ConstraintColumnNotNull(form->indrelid, form->indkey.values[i]))
			columns = list_append_unique_int(columns, form->indkey.values[i]);
	}
	ReleaseSysCache(tuple);
	list_sort(columns, list_int_cmp);
	return columns;
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

/* Does the statement's subcommand add or validate a foreign key? */
static bool
IsForeignKeyCommand(Oid relid, AlterTableCmd *cmd)
{
	return AddsValidatedForeignKey(cmd) || OidIsValid(ReferencedTable(relid, cmd));
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

	if (AddsValidatedCheck(cmd) || SetsNotNull(relid, cmd) || AddsValidatedForeignKey(cmd) ||
		OidIsValid(PrimaryKeyIndex(relid, cmd)) || KeyConstraintBuildsIndex(cmd))
		return true;
	return cmd->subtype == AT_ValidateConstraint && OidIsValid(relid) &&
		OidIsValid(ConstraintToValidate(relid, cmd->name, &contype, &referenced)) &&
		(contype == CONSTRAINT_CHECK || contype == CONSTRAINT_FOREIGN);
}

/*
 * Why the rows of a table, or (below) of a table below it, cannot be
 * checked by a job; NULL if they can
 */
static const char *
TreeInSessionReason(Oid relid, bool below)
{
	ListCell   *lc;

	foreach(lc, below ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid))
	{
		HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_class form;
		const char *reason = NULL;

		if (!HeapTupleIsValid(tuple))
			continue;
		form = (Form_pg_class) GETSTRUCT(tuple);
		if (form->relpersistence == RELPERSISTENCE_TEMP)
			reason = lfirst_oid(lc) == relid ? "The table is temporary: it belongs to this session." :
				"A table below it is temporary: it belongs to its session.";
		else if (form->relkind != RELKIND_RELATION && form->relkind != RELKIND_PARTITIONED_TABLE)
			reason = "A table below it is not a plain table (a foreign table, say), whose rows PostgreSQL checks in its own way.";
		else if (form->relkind == RELKIND_RELATION && form->relam != HEAP_TABLE_AM_OID)
			reason = "The access method of the table or of a table below it is not heap.";
		ReleaseSysCache(tuple);
		if (reason != NULL)
			return reason;
	}
	return NULL;
}

/*
 * ALTER TABLE whose one subcommand adds a CHECK or a foreign key (not NOT
 * VALID), sets a column NOT NULL, or validates a check or a foreign key,
 * on a heap table or a partitioned table (the rows of the tables below it
 * too, but those of the table alone for a foreign key, which is not
 * inherited).  Other statements that check existing rows (several
 * subcommands, a foreign key of a partitioned table, ONLY on a table with
 * children, ...) run in the session.
 */
static KindAcceptance
ConstraintAccepts(Node *parsetree, const char **reason)
{
	AlterTableStmt *stmt;
	Oid			relid;
	Oid			referenced;
	ListCell   *lc;
	bool		any_checks = false;
	char		relkind;

	if (!IsA(parsetree, AlterTableStmt) || ((AlterTableStmt *) parsetree)->objtype != OBJECT_TABLE)
		return KIND_NOT_ACCEPTED;
	stmt = (AlterTableStmt *) parsetree;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (OnlyCommand(stmt) != NULL && OnlyCommand(stmt)->subtype == AT_AttachPartition)
	{
		bool		accepted;

		*reason = AttachInSessionReason(relid, (PartitionCmd *) OnlyCommand(stmt)->def, &accepted);
		return !accepted ? KIND_NOT_ACCEPTED : *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
	}
	foreach(lc, stmt->cmds)
		any_checks |= ChecksExistingRows(relid, lfirst_node(AlterTableCmd, lc));
	relkind = OidIsValid(relid) ? get_rel_relkind(relid) : '\0';
	if (!any_checks || (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE) ||
		(relkind != RELKIND_RELATION && OnlyCommand(stmt) != NULL &&
		 OidIsValid(PrimaryKeyIndex(relid, OnlyCommand(stmt)))))
		return KIND_NOT_ACCEPTED;	/* PostgreSQL reports what is wrong */
	referenced = OnlyCommand(stmt) != NULL ? ReferencedTable(relid, OnlyCommand(stmt)) : InvalidOid;
	if (OnlyCommand(stmt) == NULL)
		*reason = "Only an ALTER TABLE whose one subcommand is ADD CHECK, ADD FOREIGN KEY, VALIDATE CONSTRAINT, ALTER COLUMN SET NOT NULL, ADD PRIMARY KEY, ADD UNIQUE or ATTACH PARTITION runs in the background.";
	else if (IsCatalogRelationOid(relid))
		*reason = "The table is a system catalog.";
	else if (PgCitusTable(relid))
		*reason = PgCitusInSessionReason(relid);
	else if (OidIsValid(referenced) && relkind == RELKIND_PARTITIONED_TABLE)
		*reason = "The table is partitioned: PostgreSQL 15 cannot add its foreign key NOT VALID.";
	else if (OidIsValid(referenced) && get_rel_relkind(referenced) != RELKIND_RELATION)
		*reason = "The referenced table is partitioned: a foreign key to it is checked in the session.";
	else if (OidIsValid(referenced) && PgCitusTable(referenced))
		*reason = PgCitusInSessionReason(referenced);
	else if (KeyConstraintBuildsIndex(OnlyCommand(stmt)) &&
			 KeyConstraintInSessionReason(relid, OnlyCommand(stmt)) != NULL)
		*reason = KeyConstraintInSessionReason(relid, OnlyCommand(stmt));
	else if (!stmt->relation->inh && !OidIsValid(referenced) && has_subclass(relid))
		*reason = "ONLY on a table with inheritance children or partitions runs as PostgreSQL runs it.";
	else if (OidIsValid(PrimaryKeyIndex(relid, OnlyCommand(stmt))) && has_subclass(relid))
		*reason = "The table has inheritance children, whose columns PostgreSQL's primary key sets NOT NULL too.";
	else
		*reason = TreeInSessionReason(relid, !OidIsValid(referenced));
	return *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
}

/*
 * A foreign key is checked at submit against the keys of the table it
 * references, and a key against the table's keys (a second primary key
 * fails): as the session's unfinished jobs leave them
 */
static bool
ConstraintValidatesAgainstKeys(Node *parsetree)
{
	AlterTableCmd *cmd = OnlyCommand((AlterTableStmt *) parsetree);

	return cmd != NULL && (AddsValidatedForeignKey(cmd) || IsPrimaryKeyUsingIndex(cmd) ||
						   KeyConstraintBuildsIndex(cmd));
}

/*
 * Lock the table the statement names (relid when it was looked up) for the
 * submit, as a job takes a lock that others use (JobStepLockRelation), and
 * make sure the name still names it
 */
void
ConstraintLockForSubmit(RangeVar *relation, Oid relid, LOCKMODE mode)
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
Oid
ConstraintAddNotValid(KindSubmit *submit, AlterTableStmt *stmt, Oid relid, Constraint *constraint)
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

		ConstraintLockForSubmit(stmt->relation, relid, ShareRowExclusiveLock);
		if (OidIsValid(referenced))
			ConstraintLockForSubmit(constraint->pktable, referenced, ShareRowExclusiveLock);
	}
	else
		ConstraintLockForSubmit(stmt->relation, relid, AccessExclusiveLock);
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
 * Add a helper CHECK constraint (name, cooked expression expr) NOT VALID to
 * table relid, as ALTER TABLE adds it, as role; caller holds ACCESS
 * EXCLUSIVE on the table.  Its oid.
 */
static Oid
AddHelperCheck(Oid relid, const char *name, Node *expr, Oid role, const char *query_string)
{
	AlterTableCmd *add = makeNode(AlterTableCmd);
	Constraint *helper = makeNode(Constraint);

	helper->contype = CONSTR_CHECK;
	helper->conname = pstrdup(name);
	helper->cooked_expr = nodeToString(expr);
	helper->skip_validation = true;
	helper->initially_valid = false;
	helper->location = -1;
	add->subtype = AT_AddConstraint;
	add->def = (Node *) helper;
	ConstraintRunAlterTable(relid, role, add, AccessExclusiveLock, query_string);
	return get_relation_constraint_oid(relid, name, false);
}

/* What the submit's rolled-back ATTACH PARTITION runs */
typedef struct AttachDryRun
{
	Oid			parent;
	PartitionCmd *cmd;
	List	   *helpers;		/* CheckedPart: the helpers, marked valid first */
	const char *query_string;
} AttachDryRun;

static void
RunAttachRolledBack(void *arg)
{
	AttachDryRun *dry_run = arg;
	AlterTableCmd *attach = makeNode(AlterTableCmd);

	MarkValid(dry_run->helpers);
	CommandCounterIncrement();
	attach->subtype = AT_AttachPartition;
	attach->def = (Node *) copyObject(dry_run->cmd);
	ConstraintRunAlterTable(dry_run->parent, GetUserId(), attach, ShareUpdateExclusiveLock,
				  dry_run->query_string);
}

/*
 * ATTACH PARTITION: ATTACH's locks (SHARE UPDATE EXCLUSIVE on the parent,
 * ACCESS EXCLUSIVE on the table attached and on the default partition,
 * each as LockForSubmit takes it); a helper CHECK NOT VALID of the table's
 * partition constraint on it, and of the negation of its bound on the
 * default partition (as the default partition's owner: ATTACH changes that
 * table's constraint without its owner too); each marked valid at once if
 * valid constraints of its table imply it, as they would spare ATTACH its
 * scan.  Then PostgreSQL's ATTACH is run with the helpers valid, and rolled
 * back: every error it would raise before reading a row, it raises here.
 * The helper on the table attached is the job's constraint.
 */
static Oid
AddAttachHelpers(KindSubmit *submit, AlterTableStmt *stmt, Oid parent)
{
	PartitionCmd *cmd = (PartitionCmd *) OnlyCommand(stmt)->def;
	Oid			attached;
	Oid			default_partition = InvalidOid;
	Relation	parent_rel;
	Relation	attached_rel;
	Relation	default_rel;
	AttachChecks checks;
	AttachDryRun dry_run = {.parent = parent, .cmd = cmd, .query_string = submit->query_string};
	bool		columns_match;
	bool		builds_index = false;
	bool		partition_implied = false;
	bool		default_implied = false;
	Oid			helper;

	ConstraintLockForSubmit(stmt->relation, parent, ShareUpdateExclusiveLock);
	/* ATTACH's order: the default partition, then the table attached */
	if (!cmd->bound->is_default)
		default_partition = get_default_partition_oid(parent);
	if (OidIsValid(default_partition))
		JobStepLockRelation(default_partition, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	attached = RangeVarGetRelid(cmd->name, NoLock, false);
	ConstraintLockForSubmit(cmd->name, attached, AccessExclusiveLock);
	parent_rel = table_open(parent, NoLock);
	attached_rel = table_open(attached, NoLock);
	columns_match = AttachComputeChecks(parent_rel, attached_rel, cmd->bound, submit->query_string,
										&checks);
	if (columns_match)
	{
		builds_index = AttachBuildsIndex(parent_rel, attached_rel) != NULL;
		partition_implied = PartConstraintImpliedByRelConstraint(attached_rel,
																 list_make1(checks.partition_check));
	}
	if (columns_match && OidIsValid(default_partition))
	{
		default_rel = table_open(default_partition, NoLock);
		default_implied = PartConstraintImpliedByRelConstraint(default_rel,
															   list_make1(checks.default_check));
		table_close(default_rel, NoLock);
	}
	table_close(attached_rel, NoLock);
	table_close(parent_rel, NoLock);
	if (!columns_match)
	{
		/* The columns differ: ATTACH says how, before it reads a row */
		PgRunRolledBack(RunAttachRolledBack, &dry_run);
		elog(ERROR, "ATTACH PARTITION of a table with other columns than its parent's succeeded");
	}
	if (builds_index)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the indexes of \"%s\" changed while the statement was submitted",
						get_rel_name(attached)),
				 errhint("Run the statement again.")));

	helper = AddHelperCheck(attached,
							ChooseConstraintName(get_rel_name(attached), NULL, "partition_bound",
												 get_rel_namespace(attached), NIL),
							checks.partition_check, GetUserId(), submit->query_string);
	dry_run.helpers = AddHelperCarrier(NIL, attached, helper, NoLock);
	if (partition_implied)
		MarkValid(dry_run.helpers);
	CatalogKindStateSetInt(&submit->kind_state, STATE_ATTACHED, attached);
	if (OidIsValid(default_partition))
	{
		Oid			default_helper;

		default_helper = AddHelperCheck(default_partition,
										ChooseConstraintName(get_rel_name(default_partition),
															 get_rel_name(attached), "excluded",
															 get_rel_namespace(default_partition), NIL),
										checks.default_check, TableOwner(default_partition),
										submit->query_string);
		if (default_implied)
			MarkValid(AddHelperCarrier(NIL, default_partition, default_helper, NoLock));
		dry_run.helpers = AddHelperCarrier(dry_run.helpers, default_partition, default_helper, NoLock);
		CatalogKindStateSetInt(&submit->kind_state, STATE_DEFAULT_PARTITION, default_partition);
		CatalogKindStateSetInt(&submit->kind_state, STATE_DEFAULT_CONSTRAINT, default_helper);
	}
	CatalogKindStateSetText(&submit->kind_state, STATE_BOUND, nodeToString(checks.bound));
	CommandCounterIncrement();
	PgRunRolledBack(RunAttachRolledBack, &dry_run);

	/*
	 * The session's later statements that read or write the parent, the
	 * table attached or the default partition, or change them, come after
	 * the ATTACH, as they would have
	 */
	submit->sources = OidIsValid(default_partition) ? list_make2_oid(attached, default_partition) :
		list_make1_oid(attached);
	submit->source_effects = REL_ANY;
	submit->target_effects = REL_ANY;
	return helper;
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

	ConstraintLockForSubmit(stmt->relation, relid, AccessExclusiveLock);
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
	return ConstraintAddNotValid(submit, stmt, relid, helper);
}

/* The raw expression that each of the key columns (attnums of relid) IS NOT NULL */
Node *
ConstraintKeyIsNotNull(Oid relid, List *columns)
{
	List	   *tests = NIL;
	ListCell   *lc;

	foreach(lc, columns)
		tests = lappend(tests, IsNotNull(get_attname(relid, lfirst_int(lc), false)));
	return list_length(tests) == 1 ? linitial(tests) : (Node *) makeBoolExpr(AND_EXPR, tests, -1);
}

/* What the submit's rolled-back ADD PRIMARY KEY USING INDEX runs */
typedef struct PrimaryKeyDryRun
{
	Oid			relid;
	AlterTableCmd *cmd;
	List	   *helpers;		/* the helper's carriers, marked valid first */
	const char *query_string;
} PrimaryKeyDryRun;

static void
RunPrimaryKeyRolledBack(void *arg)
{
	PrimaryKeyDryRun *dry_run = arg;

	MarkValid(dry_run->helpers);
	CommandCounterIncrement();
	ConstraintRunAlterTable(dry_run->relid, GetUserId(), copyObject(dry_run->cmd), AccessExclusiveLock,
				  dry_run->query_string);
}

/*
 * Fail as ALTER TABLE fails for a second primary key if an unfinished job
 * adds one to table relid (ADD PRIMARY KEY, of columns or USING INDEX):
 * the table has no primary key before that job's end, so PostgreSQL's own
 * check does not see it.  The caller holds the submit's ACCESS EXCLUSIVE
 * lock, which that job's submit held too: it has committed, and the fresh
 * snapshot the job catalog is read with sees it.
 */
void
ConstraintCheckNoPrimaryKeyJob(Oid relid)
{
	ListCell   *lc;

	foreach(lc, CatalogJobsBuilding(relid))
	{
		BgddlJob	job;
		AlterTableCmd *cmd;

		if (!CatalogJobLoad(*(int64 *) lfirst(lc), &job, true) ||
			strcmp(job.kind, kind_constraint_routine.name) != 0)
			continue;
		cmd = ConstraintJobCommand(&job);
		if (cmd->subtype == AT_AddConstraint && IsA(cmd->def, Constraint) &&
			((Constraint *) cmd->def)->contype == CONSTR_PRIMARY)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("multiple primary keys for table \"%s\" are not allowed",
							get_rel_name(relid)),
					 errdetail("Background DDL job %lld adds a primary key to the table.",
							   (long long) job.id),
					 errhint("Wait for the job (wait_ddl) or cancel it (cancel_ddl).")));
	}
}

/*
 * ADD PRIMARY KEY USING INDEX of an index whose key has columns that allow
 * nulls: PostgreSQL sets each NOT NULL, which reads every row under ACCESS
 * EXCLUSIVE.  A helper CHECK (a IS NOT NULL AND ...) NOT VALID of those
 * columns is added, under the statement's lock; then PostgreSQL's ADD
 * PRIMARY KEY USING INDEX is run with the helper valid (its SET NOT NULL
 * reads no row) and rolled back: every error it raises (the index is not
 * unique, is partial, there is a primary key already, ...), it raises
 * here.  The helper is the job's constraint.
 */
static Oid
AddPrimaryKeyHelper(KindSubmit *submit, AlterTableStmt *stmt, Oid relid)
{
	AlterTableCmd *cmd = OnlyCommand(stmt);
	Constraint *helper = makeNode(Constraint);
	Oid			index;
	Oid			conoid;
	HeapTuple	tuple;
	PrimaryKeyDryRun dry_run = {.relid = relid, .cmd = cmd, .query_string = submit->query_string};

	ConstraintLockForSubmit(stmt->relation, relid, AccessExclusiveLock);
	ConstraintCheckNoPrimaryKeyJob(relid);
	index = PrimaryKeyIndex(relid, cmd);
	if (!OidIsValid(index))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" of relation \"%s\" changed while the statement was submitted",
						((Constraint *) cmd->def)->indexname, get_rel_name(relid)),
				 errhint("Run the statement again.")));
	helper->contype = CONSTR_CHECK;
	helper->conname = ChooseConstraintName(get_rel_name(relid), NULL, "not_null",
										   get_rel_namespace(relid), NIL);
	helper->raw_expr = ConstraintKeyIsNotNull(relid, NullableKeyColumns(index));
	helper->location = -1;
	conoid = ConstraintAddNotValid(submit, stmt, relid, helper);
	tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for constraint %u", conoid);
	dry_run.helpers = ConstraintCarriers(relid, tuple, NoLock);
	ReleaseSysCache(tuple);
	PgRunRolledBack(RunPrimaryKeyRolledBack, &dry_run);
	CatalogKindStateSetInt(&submit->kind_state, CONSTRAINT_STATE_KEY_INDEX, index);
	return conoid;
}

/*
 * VALIDATE CONSTRAINT: what PostgreSQL checks before it reads a row (the
 * constraint; the owner was checked before the lock), under the
 * statement's lock
 */
static Oid
ValidatableCheck(AlterTableStmt *stmt, Oid relid)
{
	AlterTableCmd *cmd = OnlyCommand(stmt);
	char		contype = 0;
	Oid			referenced;
	Oid			conoid;

	ConstraintLockForSubmit(stmt->relation, relid, ShareUpdateExclusiveLock);
	conoid = ConstraintToValidate(relid, cmd->name, &contype, &referenced);
	if (!OidIsValid(conoid) || (contype != CONSTRAINT_CHECK && contype != CONSTRAINT_FOREIGN))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("constraint \"%s\" of relation \"%s\" changed while the statement was submitted",
						cmd->name, get_rel_name(relid)),
				 errhint("Run the statement again.")));
	return conoid;
}

/* Record conoid (if valid) as the job's constraint, by OID and by name */
static void
SetJobConstraint(Jsonb **kind_state, Oid conoid)
{
	CatalogKindStateSetInt(kind_state, STATE_CONSTRAINT_OID, conoid);
	if (OidIsValid(conoid))
		CatalogKindStateSetText(kind_state, STATE_CONSTRAINT_NAME, get_constraint_name(conoid));
}

static void
ConstraintValidate(KindSubmit *submit)
{
	AlterTableStmt *stmt = CheckedNode(AlterTableStmt, submit->pstmt->utilityStmt);
	AlterTableCmd *cmd = OnlyCommand(stmt);
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, false);
	Oid			conoid;
	HeapTuple	tuple;

	/*
	 * As ALTER TABLE (RangeVarCallbackForAlterRelation): the table's owner
	 * only, checked before its lock is asked for, so that no other role
	 * queues for a lock of a table it does not own.  (The table attached,
	 * and a foreign key's referenced table, are locked first, as
	 * PostgreSQL locks them.)
	 */
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
	submit->target_oid = relid;
	CatalogKindStateSetInt(&submit->kind_state, STATE_ADDED, cmd->subtype != AT_ValidateConstraint);
	if (cmd->subtype == AT_AttachPartition)
	{
		SetJobConstraint(&submit->kind_state, AddAttachHelpers(submit, stmt, relid));
		return;
	}
	if (cmd->subtype == AT_SetNotNull)
	{
		conoid = AddNotNullHelper(submit, stmt, relid);
		CatalogKindStateSetInt(&submit->kind_state, STATE_NOT_NULL_ATTNUM,
							   get_attnum(relid, cmd->name));
	}
	else if (IsPrimaryKeyUsingIndex(cmd))
		conoid = AddPrimaryKeyHelper(submit, stmt, relid);
	else if (KeyConstraintBuildsIndex(cmd))
	{
		/*
		 * A later write of the table comes after it (a duplicate or a null
		 * fails as it would have, a row removed cannot spare the job its
		 * error), and so does a change of its definition, a foreign key
		 * that references the key, and a statement that names its index
		 * (session_order.c); a read, or naming the table, does not
		 */
		SetJobConstraint(&submit->kind_state, KeyConstraintSubmit(submit, stmt, relid));
		submit->target_effects = REL_ADDS_ROWS | REL_UPDATES_ROWS | REL_REMOVES_ROWS |
			REL_REDEFINES | REL_REFERENCES;
		submit->key_table = relid;
		submit->key_placeholder = JobKeyIndexOf(submit->kind_state);
		submit->held_table = relid;
		return;
	}
	else if (cmd->subtype == AT_AddConstraint)
		conoid = ConstraintAddNotValid(submit, stmt, relid, (Constraint *) cmd->def);
	else
		conoid = ValidatableCheck(stmt, relid);
	SetJobConstraint(&submit->kind_state, conoid);
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
		/* ADD FOREIGN KEY holds CREATE TRIGGER's lock: the capture comes with the submit */
		if (cmd->subtype == AT_AddConstraint && CaptureRefusal(relid, GetUserId()) == NULL)
			CatalogKindStateSetInt(&submit->kind_state, STATE_CAPTURED, 1);
	}
	ReleaseSysCache(tuple);
	/*
	 * The session's later inserts are checked by the constraint, with its
	 * error (not a SET NOT NULL's helper: PostgreSQL's error would be the
	 * column's); but a write that removes or changes a violating row, or
	 * changes the table's definition, must come after the check, as it
	 * would have.
	 */
	submit->target_effects = REL_UPDATES_ROWS | REL_REMOVES_ROWS | REL_REDEFINES |
		(cmd->subtype == AT_SetNotNull || JobKeyIndexOf(submit->kind_state) ? REL_ADDS_ROWS : 0) |
		(JobKeyIndexOf(submit->kind_state) ? REL_REFERENCES : 0);
	if (JobKeyIndexOf(submit->kind_state))
		submit->key_table = relid;
}

/* What a job of that kind_state does */
static const char *
StateStrategy(const Jsonb *kind_state)
{
	if (CatalogKindStateInt(kind_state, CONSTRAINT_STATE_KEY_BUILD) != 0)
		return CatalogKindStateInt(kind_state, STATE_CONSTRAINT_OID) != 0 ?
			STRATEGY_KEY_INDEX_NOT_NULL : STRATEGY_KEY_INDEX;
	return CatalogKindStateInt(kind_state, STATE_FOREIGN_KEY) != 0 ? STRATEGY_FOREIGN_KEY :
		CatalogKindStateInt(kind_state, STATE_ATTACHED) != 0 ? STRATEGY_ATTACH :
		STRATEGY_CHECK_IN_CHUNKS;
}

/* Nothing to reserve: the constraint exists, NOT VALID, from the submit on */
static void
ConstraintReserve(KindSubmit *submit)
{
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(submit->target_oid)),
													 get_rel_name(submit->target_oid));
	submit->strategy = pstrdup(StateStrategy(submit->kind_state));
}

/*
 * ADD FOREIGN KEY: its capture (InstallCaptureStep) installed with the job
 * row, under the statement's SHARE ROW EXCLUSIVE lock on the table, which
 * is CREATE TRIGGER's: the worker need not ask writers for it again.  (A
 * VALIDATE job, whose statement takes a weaker lock, has its worker
 * install it.)
 */
static void
ConstraintSubmitted(KindSubmit *submit, int64 job_id)
{
	Capture		capture;

	if (CatalogKindStateInt(submit->kind_state, STATE_CAPTURED) == 0)
		return;
	Assert(CheckRelationOidLockedByMe(submit->target_oid, ShareRowExclusiveLock, true));
	CaptureInstallUpdatedRows(job_id, submit->target_oid, &capture);
	CatalogJobSetCleanupPending(job_id, true);
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

Oid
ConstraintOfJob(const BgddlJob *job)
{
	return (Oid) CatalogKindStateInt(job->kind_state, STATE_CONSTRAINT_OID);
}

/* Is the job an ATTACH PARTITION's? */
static bool
JobIsAttach(const BgddlJob *job)
{
	return CatalogKindStateInt(job->kind_state, STATE_ATTACHED) != 0;
}

/* The table of the job's constraint: the job's table, or the table an ATTACH attaches */
static Oid
JobConstraintTable(const BgddlJob *job)
{
	return JobIsAttach(job) ? (Oid) CatalogKindStateInt(job->kind_state, STATE_ATTACHED) :
		job->target_oid;
}

/*
 * The job's constraint, copied, if it still exists on its table
 * (JobConstraintTable)
 */
static HeapTuple
JobConstraintTuple(const BgddlJob *job)
{
	HeapTuple	tuple = SearchSysCacheCopy1(CONSTROID, ObjectIdGetDatum(ConstraintOfJob(job)));

	if (HeapTupleIsValid(tuple) &&
		((Form_pg_constraint) GETSTRUCT(tuple))->conrelid != JobConstraintTable(job))
	{
		heap_freetuple(tuple);
		return NULL;
	}
	return HeapTupleIsValid(tuple) ? tuple : NULL;
}

/*
 * The job's constraint created again: ALTER TABLE ... ALTER COLUMN ... TYPE
 * drops each constraint over the column and adds it again, as it was (NOT
 * VALID), under its name and a new OID.  A constraint of that name and
 * type on the job's table that is not valid is taken for it, copied, and
 * its OID recorded as the job's; NULL if there is none.
 */
static HeapTuple
JobConstraintCreatedAgain(JobRun *run)
{
	const char *name = CatalogKindStateText(run->job.kind_state, STATE_CONSTRAINT_NAME);
	Oid			conoid;
	HeapTuple	tuple;

	if (name == NULL)
		return NULL;
	conoid = get_relation_constraint_oid(JobConstraintTable(&run->job), name, true);
	if (!OidIsValid(conoid))
		return NULL;
	tuple = SearchSysCacheCopy1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tuple) || ((Form_pg_constraint) GETSTRUCT(tuple))->convalidated ||
		(((Form_pg_constraint) GETSTRUCT(tuple))->contype == CONSTRAINT_FOREIGN) !=
		JobIsForeignKey(&run->job))
		return NULL;
	SetJobConstraint(&run->job.kind_state, conoid);
	CatalogJobRecordKindState(&run->job);
	return tuple;
}

/*
 * Begin a step that locks the job's table in mode (as a job takes a lock
 * that others use), and return the job's constraint; or, if the table or
 * the constraint is gone, end the step and return NULL (run->gone_reason
 * says which).  A constraint created again (JobConstraintCreatedAgain) is
 * the job's from now on; if the job had begun to check rows (a caller
 * passes restarted), its check starts over, with the constraint as it is
 * now, the step ends, and NULL is returned with *restarted set.
 */
static HeapTuple
BeginConstraintStep(JobRun *run, const char *activity, LOCKMODE mode, bool *restarted)
{
	HeapTuple	constraint = NULL;

	JobStepBegin(activity, STEP_READ_COMMITTED);
	JobStepLockRelation(run->job.target_oid, mode, background_ddl_lock_timeout_ms);
	if (restarted != NULL)
		*restarted = false;
	if (JobRunTargetExists(run))
	{
		constraint = JobConstraintTuple(&run->job);
		if (constraint == NULL && (constraint = JobConstraintCreatedAgain(run)) != NULL &&
			restarted != NULL)
		{
			RestartCheck(run, constraint, "its constraint was created again (a type change of its columns)");
			*restarted = true;
			constraint = NULL;
		}
		else if (constraint == NULL)
			run->gone_reason = "the constraint was dropped";
	}
	if (constraint == NULL)
		JobStepEnd();
	return constraint;
}

void
ConstraintStart(JobRun *run)
{
	ConstraintRun *c = MemoryContextAllocZero(JobContext(), sizeof(ConstraintRun));

	c->chunk_blocks = CHUNK_BLOCKS_FIRST;
	run->kind_run = c;
}

/*
 * The tables that carry the job's constraint (table relid's, constraint):
 * relid, and, unless the constraint is not inherited (NO INHERIT, a foreign
 * key), each table below it that has a constraint of that name (its copy,
 * which ALTER TABLE adds, validates and drops with the parent's), parents
 * first; those below relid locked in mode, as a job takes a lock, after
 * relid, which the caller locked.  Partitioned tables included.
 */
static List *
ConstraintCarriers(Oid relid, HeapTuple constraint, LOCKMODE mode)
{
	Form_pg_constraint form = (Form_pg_constraint) GETSTRUCT(constraint);
	List	   *carriers = NIL;
	ListCell   *lc;

	foreach(lc, form->connoinherit || form->contype == CONSTRAINT_FOREIGN ?
			list_make1_oid(relid) : find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			table = lfirst_oid(lc);
		Oid			conoid;
		CheckedPart *carrier;

		if (table != relid && mode != NoLock)
			JobStepLockRelation(table, mode, background_ddl_lock_timeout_ms);
		conoid = table == relid ? form->oid :
			get_relation_constraint_oid(table, NameStr(form->conname), true);
		if (!OidIsValid(conoid))
			continue;
		carrier = palloc0(sizeof(CheckedPart));
		carrier->relid = table;
		carrier->conoid = conoid;
		carriers = lappend(carriers, carrier);
	}
	return carriers;
}

/*
 * Add an ATTACH's helper (constraint conoid of table relid) to carriers, if
 * both still exist; the table locked in mode first, as a job takes a lock
 */
static List *
AddHelperCarrier(List *carriers, Oid relid, Oid conoid, LOCKMODE mode)
{
	HeapTuple	tuple;

	if (!OidIsValid(relid))
		return carriers;
	if (mode != NoLock)
		JobStepLockRelation(relid, mode, background_ddl_lock_timeout_ms);
	tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tuple))
		return carriers;
	if (((Form_pg_constraint) GETSTRUCT(tuple))->conrelid == relid)
	{
		CheckedPart *carrier = palloc0(sizeof(CheckedPart));

		carrier->relid = relid;
		carrier->conoid = conoid;
		carriers = lappend(carriers, carrier);
	}
	ReleaseSysCache(tuple);
	return carriers;
}

/*
 * The tables whose rows the job checks, each with its copy of the job's
 * constraint (constraint): ConstraintCarriers, those below the job's table
 * locked in mode; an ATTACH's: the table attached and the default
 * partition, each with its helper, locked in mode (ATTACH's order)
 */
static List *
JobCarriers(const BgddlJob *job, HeapTuple constraint, LOCKMODE mode)
{
	Oid			default_partition = (Oid) CatalogKindStateInt(job->kind_state,
																  STATE_DEFAULT_PARTITION);
	List	   *carriers;

	if (!JobIsAttach(job))
		return ConstraintCarriers(job->target_oid, constraint, mode);
	/* ATTACH locks the default partition first; its rows are checked second */
	if (OidIsValid(default_partition) && mode != NoLock)
		JobStepLockRelation(default_partition, mode, background_ddl_lock_timeout_ms);
	carriers = AddHelperCarrier(NIL, JobConstraintTable(job), ConstraintOfJob(job), mode);
	return AddHelperCarrier(carriers, default_partition,
							(Oid) CatalogKindStateInt(job->kind_state, STATE_DEFAULT_CONSTRAINT),
							NoLock);
}

/* The job's parts, in the order their blocks are checked (*nparts of them) */
static CheckedPart *
JobParts(const BgddlJob *job, int *nparts)
{
	char	   *text = CatalogKindStateText(job->kind_state, STATE_PARTS);
	CheckedPart *parts = palloc0(sizeof(CheckedPart) * (text != NULL ? strlen(text) / 8 + 1 : 1));
	char	   *entry;
	char	   *save = NULL;

	*nparts = 0;
	for (entry = text != NULL ? strtok_r(text, ";", &save) : NULL; entry != NULL;
		 entry = strtok_r(NULL, ";", &save))
	{
		CheckedPart *part = &parts[*nparts];

		if (sscanf(entry, "%u %u %u %u", &part->relid, &part->conoid, &part->relfilenode,
				   &part->blocks) != 4)
			elog(ERROR, "background DDL job %lld has a malformed part \"%s\"",
				 (long long) job->id, entry);
		(*nparts)++;
	}
	return parts;
}

/* Keep the job's parts in its kind_state; work_total is their blocks */
static void
SetJobParts(BgddlJob *job, const CheckedPart *parts, int nparts)
{
	StringInfoData text;

	initStringInfo(&text);
	job->work_total = 0;
	for (int i = 0; i < nparts; i++)
	{
		appendStringInfo(&text, "%s%u %u %u %u", i > 0 ? ";" : "", parts[i].relid,
						 parts[i].conoid, parts[i].relfilenode, parts[i].blocks);
		job->work_total += parts[i].blocks;
	}
	CatalogKindStateSetText(&job->kind_state, STATE_PARTS, text.data);
}

/* A part's blocks and storage as they are now; the caller locked the table */
static void
MeasurePart(CheckedPart *part, int64 *rows)
{
	Relation	rel = table_open(part->relid, NoLock);

	part->blocks = RelationGetNumberOfBlocks(rel);
	part->relfilenode = rel->rd_node.relNode;
	if (rows != NULL && *rows >= 0 && rel->rd_rel->reltuples >= 0)
		*rows += (int64) rel->rd_rel->reltuples;
	else if (rows != NULL)
		*rows = -1;
	table_close(rel, NoLock);
}

/*
 * Add to parts (nparts of them, room for as many more as there are
 * carriers) each table with storage among carriers that is not one of them
 * yet, measured now (rows: add its rows, as the planner knows them); the
 * new count of parts
 */
static int
AddMeasuredParts(CheckedPart *parts, int nparts, List *carriers, int64 *rows)
{
	int			known = nparts;
	ListCell   *lc;

	foreach(lc, carriers)
	{
		CheckedPart *carrier = lfirst(lc);
		bool		found = false;

		for (int i = 0; i < known && !found; i++)
			found = parts[i].relid == carrier->relid && parts[i].conoid == carrier->conoid;
		if (found || get_rel_relkind(carrier->relid) != RELKIND_RELATION)
			continue;
		parts[nparts] = *carrier;
		MeasurePart(&parts[nparts++], rows);
	}
	return nparts;
}

/*
 * The rows to check: the blocks each table that carries the constraint has
 * now (checked from the first again).  Caller is in a step and has locked
 * the job's table.
 */
static void
MeasureParts(JobRun *run, HeapTuple constraint)
{
	List	   *carriers = JobCarriers(&run->job, constraint, AccessShareLock);
	CheckedPart *parts = palloc0(sizeof(CheckedPart) * Max(list_length(carriers), 1));
	int64		rows = 0;

	SetJobParts(&run->job, parts, AddMeasuredParts(parts, 0, carriers, &rows));
	run->job.rows_total = rows;
}

/*
 * Tables among carriers (ConstraintCarriers, locked) that are not among the
 * job's parts (a partition created or attached, an inheritance child
 * added), added as parts: their rows are checked after the others'.  True
 * if there were any.  Caller is in a step.
 */
static bool
AddNewParts(JobRun *run, List *carriers)
{
	int			known;
	CheckedPart *parts = JobParts(&run->job, &known);
	int			nparts;

	parts = repalloc(parts, sizeof(CheckedPart) * (known + list_length(carriers) + 1));
	nparts = AddMeasuredParts(parts, known, carriers, NULL);
	if (nparts == known)
		return false;
	ereport(LOG,
			(errmsg("background DDL job %lld: %d tables that carry its constraint were added below \"%s\"; their rows are checked too",
					(long long) run->job.id, nparts - known, get_rel_name(run->job.target_oid))));
	SetJobParts(&run->job, parts, nparts);
	CatalogJobRecordKindState(&run->job);
	return true;
}

void
ConstraintPlan(JobRun *run)
{
	HeapTuple	constraint;

	constraint = BeginConstraintStep(run, "background_ddl: planning", AccessShareLock, NULL);
	if (constraint == NULL)
		return;					/* the first step says that it is gone */
	MeasureParts(run, constraint);
	run->job.strategy = pstrdup(StateStrategy(run->job.kind_state));
	run->job.planned = true;
	CatalogJobRecordPlan(&run->job);
	JobStepEnd();
}

/*
 * How a part's rows are checked: against its copy of the constraint (a
 * foreign key's: the constraint), with the statement's error
 */
static void
PartRowCheck(const BgddlJob *job, Relation rel, HeapTuple part_constraint, RowCheck *check)
{
	AttrNumber	column = JobNotNullColumn(job);
	CheckViolation violation = VIOLATES_CHECK;
	List	   *not_null_columns = NIL;

	if (JobIsAttach(job))
		violation = RelationGetRelid(rel) == JobConstraintTable(job) ?
			VIOLATES_PARTITION : VIOLATES_DEFAULT_PARTITION;
	else if (JobKeyIndexOf(job->kind_state))
	{
		/* (the job's table: a primary key's job has no children) */
		violation = VIOLATES_NOT_NULL;
		not_null_columns = NullableKeyColumns(JobKeyIndexOf(job->kind_state));
	}
	else if (column != InvalidAttrNumber)
	{
		violation = VIOLATES_NOT_NULL;
		not_null_columns = list_make1_int(get_attnum(RelationGetRelid(rel),
													 get_attname(job->target_oid, column, false)));
	}
	RowCheckOfConstraint(check, part_constraint, JobIsForeignKey(job), violation,
						 not_null_columns);
}

/*
 * A foreign key's capture: an UPDATE that leaves a row's key as it was is
 * not checked by PostgreSQL (RI_FKey_fk_upd_check_required), and may move a
 * row that never was valid into blocks the job has checked already.  So,
 * before the first chunk, the job has capture triggers (capture_trigger.c)
 * that log the tuple id of every row an UPDATE writes, and checks those
 * rows after the chunks (the catch-up) and, under a lock that keeps
 * writers out, at the cut-over.  ADD FOREIGN KEY installs them at submit
 * (ConstraintSubmitted); a VALIDATE job's worker, here.  A LockingStep:
 * CREATE TRIGGER's lock.
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
	CaptureInstallUpdatedRows(run->job.id, relid, &capture);
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
RestartCheck(JobRun *run, HeapTuple constraint, const char *why)
{
	ereport(LOG,
			(errmsg("background DDL job %lld: %s; the rows of \"%s\" are checked again from the first block",
					(long long) run->job.id, why, get_rel_name(run->job.target_oid))));
	if (JobIsForeignKey(&run->job))
		CaptureForget(run->job.id, false);
	MeasureParts(run, constraint);
	CatalogJobRestartBuild(&run->job);
}

/* Does the job's capture still log every change (CheckChangedRows)? */
static bool
CaptureTrusted(int64 job_id)
{
	Capture		capture;

	return CaptureRowLoad(job_id, &capture) && CaptureIntact(&capture) && !capture.stopped;
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
	bool		trusted;
	ItemPointerData *tids;
	MarkId	   *ids;
	JobStepResult result = JOB_STEP_DONE;

	trusted = CaptureTrusted(run->job.id);
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
		RestartCheck(run, constraint, "changes to its table were not all captured");
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
	bool		restarted;
	JobStepResult result;

	if (!JobIsForeignKey(&run->job))
		return JOB_STEP_DONE;
	JobStepHoldPoint("catching up");
	constraint = BeginConstraintStep(run, "background_ddl: checking changed rows", AccessShareLock,
									 &restarted);
	if (constraint == NULL)
		return restarted ? JOB_STEP_RESTART : JOB_STEP_TARGET_GONE;
	result = CheckChangedRows(run, constraint, CATCH_UP_MARKS, false);
	JobStepEnd();
	return result;
}

/*
 * The part that holds block work of the job's blocks (*offset: its first
 * block's), or -1 once past the last one
 */
static int
PartAt(const CheckedPart *parts, int nparts, int64 work, int64 *offset)
{
	*offset = 0;
	for (int i = 0; i < nparts; i++)
	{
		if (work < *offset + parts[i].blocks)
			return i;
		*offset += parts[i].blocks;
	}
	return -1;
}

/*
 * A part's table was rewritten before all its blocks were checked: its
 * rows may have moved into blocks checked already, so it is measured and
 * checked from its first block again (the parts after it are not started
 * yet).  A foreign key's job checks its one table from the start, and
 * forgets what it captured.
 */
static void
RestartPart(JobRun *run, HeapTuple constraint, CheckedPart *parts, int nparts, int part,
			int64 offset)
{
	if (JobIsForeignKey(&run->job))
	{
		RestartCheck(run, constraint, "its table was rewritten");
		return;
	}
	ereport(LOG,
			(errmsg("background DDL job %lld: \"%s\" was rewritten; its rows are checked again from its first block",
					(long long) run->job.id, get_rel_name(parts[part].relid))));
	MeasurePart(&parts[part], NULL);
	SetJobParts(&run->job, parts, nparts);
	CatalogJobRecordKindState(&run->job);
	CatalogJobSetBackfillTotals(&run->job, run->job.chunks_done, run->job.rows_done, offset);
}

/*
 * The processes that check one chunk: no more than the job's workers
 * (alter_ddl's workers, or background_ddl.max_workers_per_job), and than
 * its worker and max_parallel_maintenance_workers parallel workers, which
 * PostgreSQL's maintenance commands use (CheckChunk)
 */
static int
ChunkProcesses(int max_workers)
{
	int			workers = max_workers > 0 ? max_workers : background_ddl_max_workers_per_job;

	return Min(workers, 1 + max_parallel_maintenance_workers);
}

/*
 * One chunk: the next blocks from the checkpoint (work_done), of one part,
 * checked in a step of their own, under ACCESS SHARE on the job's table,
 * the partitioned tables below it, then the part's table (PostgreSQL's
 * order).  JOB_STEP_DONE once every block of every part is checked, and no
 * table that carries the constraint has been added meanwhile.
 */
JobStepResult
ConstraintBackfillStep(JobRun *run)
{
	ConstraintRun *c = run->kind_run;
	Relation	rel;
	HeapTuple	constraint;
	bool		restarted;
	HeapTuple	part_constraint;
	CheckedPart *parts;
	int			nparts;
	int			part;
	int64		offset;
	BlockNumber start;
	BlockNumber end;
	uint64		rows;
	double		seconds;
	instr_time	start_time;
	instr_time	duration;
	RowCheck	check;
	int			processes;

	if (JobIsForeignKey(&run->job) && CatalogKindStateInt(run->job.kind_state, STATE_CAPTURED) == 0)
	{
		JobStepHoldPoint("installing capture");
		JobRunLockingStep(run, InstallCaptureStep, NULL, JOB_PHASE_INSTALLING_CAPTURE,
						  "background_ddl: installing capture");
		JobRunSetPhase(run, JOB_PHASE_BACKFILLING);
		return JOB_STEP_MORE;
	}
	JobStepHoldAtChunk(run->job.chunks_done);
	constraint = BeginConstraintStep(run, "background_ddl: checking a chunk of rows", AccessShareLock,
									 &restarted);
	if (constraint == NULL)
		return restarted ? JOB_STEP_MORE : JOB_STEP_TARGET_GONE;
	parts = JobParts(&run->job, &nparts);
	part = PartAt(parts, nparts, run->job.work_done, &offset);
	if ((!JobIsAttach(&run->job) && ((Form_pg_constraint) GETSTRUCT(constraint))->convalidated) ||
		(part < 0 && !AddNewParts(run, JobCarriers(&run->job, constraint, AccessShareLock))))
	{
		/* The job row's counts lag behind the chunks' (CatalogJobRecordChunk) */
		CatalogJobSetBackfillTotals(&run->job, run->job.chunks_done, run->job.rows_done,
									run->job.work_done);
		JobStepEnd();
		return JOB_STEP_DONE;
	}
	if (part < 0)
	{
		JobStepEnd();			/* new parts: their chunks come next */
		return JOB_STEP_MORE;
	}
	JobStepLockTree(run->job.target_oid, AccessShareLock, background_ddl_lock_timeout_ms);
	JobStepLockRelation(parts[part].relid, AccessShareLock, background_ddl_lock_timeout_ms);
	part_constraint = SearchSysCacheCopy1(CONSTROID, ObjectIdGetDatum(parts[part].conoid));
	if (!HeapTupleIsValid(part_constraint) ||
		((Form_pg_constraint) GETSTRUCT(part_constraint))->conrelid != parts[part].relid ||
		((Form_pg_constraint) GETSTRUCT(part_constraint))->convalidated)
	{
		/*
		 * The table was dropped, or no longer carries the constraint, or its
		 * constraint is valid (an ATTACH's helper implied by its valid
		 * constraints)
		 */
		CatalogJobSetBackfillTotals(&run->job, run->job.chunks_done, run->job.rows_done,
									offset + parts[part].blocks);
		JobStepEnd();
		return JOB_STEP_MORE;
	}
	rel = table_open(parts[part].relid, NoLock);
	if (rel->rd_node.relNode != parts[part].relfilenode)
	{
		RestartPart(run, constraint, parts, nparts, part, offset);
		table_close(rel, NoLock);
		JobStepEnd();
		return JOB_STEP_MORE;
	}

	start = (BlockNumber) (run->job.work_done - offset);
	end = (BlockNumber) Min((double) parts[part].blocks,
							 start + JobRunChunkBlocks(&run->job, c->chunk_blocks));
	INSTR_TIME_SET_CURRENT(start_time);
	PartRowCheck(&run->job, rel, part_constraint, &check);
	JobQueryBegin(run->job.identity.owner_oid, true);
	processes = c->seconds_per_block * (end - start) >= PARALLEL_MIN_SECONDS ?
		ChunkProcesses(run->job.max_workers) : 1;
	rows = CheckChunk(rel, &check, start, end, processes, &processes);
	JobQueryEnd();
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start_time);
	seconds = Max(INSTR_TIME_GET_DOUBLE(duration), 1e-6);
	c->seconds_per_block = seconds * processes / (end - start);
	ereport(DEBUG1,
			(errmsg_internal("background DDL job %lld checked blocks %u to %u of \"%s\", processes: %d",
							 (long long) run->job.id, start, end, RelationGetRelationName(rel),
							 processes)));

	JobRunChunkDone(run, &c->chunk_blocks, CHUNK_BLOCKS_MAX, rows, end - start, seconds);
	table_close(rel, NoLock);
	JobStepEnd();
	JobRunPace(run, rows, seconds);
	return JOB_STEP_MORE;
}

/*
 * Mark the constraint valid, as VALIDATE CONSTRAINT marks it, on each table
 * that carries it (ConstraintCarriers); caller holds a lock on them that
 * keeps out other schema changes
 */
static void
MarkValid(List *carriers)
{
	Relation	pg_constraint = table_open(ConstraintRelationId, RowExclusiveLock);
	ListCell   *lc;

	foreach(lc, carriers)
	{
		CheckedPart *carrier = lfirst(lc);
		HeapTuple	tuple = SearchSysCacheCopy1(CONSTROID, ObjectIdGetDatum(carrier->conoid));

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for constraint %u", carrier->conoid);
		if (!((Form_pg_constraint) GETSTRUCT(tuple))->convalidated)
		{
			((Form_pg_constraint) GETSTRUCT(tuple))->convalidated = true;
			CatalogTupleUpdate(pg_constraint, &tuple->t_self, tuple);
			InvokeObjectPostAlterHook(ConstraintRelationId, carrier->conoid, 0);
			CacheInvalidateRelcacheByRelid(carrier->relid);
		}
		heap_freetuple(tuple);
	}
	table_close(pg_constraint, RowExclusiveLock);
}

/* An ALTER TABLE subcommand that names a column or a constraint */
static AlterTableCmd *
NamedCommand(AlterTableType subtype, const char *name)
{
	AlterTableCmd *cmd = makeNode(AlterTableCmd);

	cmd->subtype = subtype;
	cmd->name = pstrdup(name);
	cmd->behavior = DROP_RESTRICT;
	return cmd;
}

/*
 * Run ALTER TABLE on table relid with one subcommand, as PostgreSQL runs
 * it, as role (query_string: the statement it is part of); caller holds
 * the subcommand's lock (mode) on the table and on the tables below it
 */
void
ConstraintRunAlterTable(Oid relid, Oid role, AlterTableCmd *cmd, LOCKMODE mode, const char *query_string)
{
	ConstraintRunAlterTableCommands(relid, role, list_make1(cmd), mode, query_string);
}

/* ConstraintRunAlterTable with a list of subcommands */
void
ConstraintRunAlterTableCommands(Oid relid, Oid role, List *cmds, LOCKMODE mode,
								const char *query_string)
{
	AlterTableStmt *stmt = makeNode(AlterTableStmt);
	AlterTableUtilityContext context = {0};
	Oid			saved_userid;
	int			saved_sec_context;

	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
								  get_rel_name(relid), -1);
	stmt->cmds = cmds;
	stmt->objtype = OBJECT_TABLE;
	context.pstmt = makeNode(PlannedStmt);
	context.pstmt->commandType = CMD_UTILITY;
	context.pstmt->utilityStmt = (Node *) stmt;
	context.pstmt->stmt_location = -1;
	context.queryString = query_string;
	context.relid = relid;
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(role, saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	AlterTable(stmt, mode, &context);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	CommandCounterIncrement();
}

/*
 * Drop constraint name of table relid, with its copies on the tables
 * below, as ALTER TABLE DROP CONSTRAINT drops them, as the table's owner;
 * caller holds ACCESS EXCLUSIVE on the tables
 */
static void
DropConstraint(const BgddlJob *job, Oid relid, const char *name)
{
	ConstraintRunAlterTable(relid, TableOwner(relid), NamedCommand(AT_DropConstraint, name),
				  AccessExclusiveLock, job->command);
}

/* Drop the job's constraint (the helper of a SET NOT NULL job): DropConstraint */
static void
DropJobConstraint(const BgddlJob *job, HeapTuple constraint)
{
	DropConstraint(job, job->target_oid,
				   NameStr(((Form_pg_constraint) GETSTRUCT(constraint))->conname));
}

/* Drop the job's constraint, if it is still there */
void
ConstraintDropOfJob(const BgddlJob *job)
{
	HeapTuple	constraint = JobConstraintTuple(job);

	if (constraint != NULL)
		DropJobConstraint(job, constraint);
}

/* Drop an ATTACH's helpers (carriers, locked ACCESS EXCLUSIVE) */
static void
DropHelpers(const BgddlJob *job, List *carriers)
{
	ListCell   *lc;

	foreach(lc, carriers)
	{
		CheckedPart *carrier = lfirst(lc);

		DropConstraint(job, carrier->relid, get_constraint_name(carrier->conoid));
	}
}

/*
 * Run the job's key as ADD CONSTRAINT ... USING INDEX of its index (the
 * user's, or the one the job built), as the submitting role, naming the
 * index as it is named now; caller holds ACCESS EXCLUSIVE on the table.
 * With the helper valid, its SET NOT NULL of the key's columns reads no
 * row.  The constraint's name is the statement's, or the index's: the one
 * the blocking statement gives it.
 */
void
ConstraintRunKey(const BgddlJob *job)
{
	AlterTableCmd *cmd = ConstraintJobCommand(job);
	Constraint *constraint = CheckedNode(Constraint, cmd->def);
	char	   *index_name = get_rel_name(JobKeyIndexOf(job->kind_state));

	if (index_name == NULL || get_rel_relkind(JobKeyIndexOf(job->kind_state)) != RELKIND_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the index of background DDL job %lld was dropped", (long long) job->id)));
	constraint->indexname = index_name;
	constraint->keys = NIL;
	constraint->including = NIL;
	constraint->options = NIL;
	constraint->indexspace = NULL;
	constraint->nulls_not_distinct = false;
	ConstraintRunAlterTable(job->target_oid, job->identity.owner_oid, cmd, AccessExclusiveLock,
							job->command);
}

/*
 * Run the job's ATTACH PARTITION as the submitting role, with its bound as
 * the submit transformed it; caller holds ATTACH's locks.  Helpers valid,
 * it reads no row.
 */
static void
RunJobAttach(const BgddlJob *job)
{
	Relation	parent = table_open(job->target_oid, NoLock);
	PartitionCmd *cmd = AttachCommandOf(job->command, JobConstraintTable(job));
	AlterTableCmd *attach = makeNode(AlterTableCmd);
	PartitionBoundSpec *bound;
	Oid			saved_userid;
	int			saved_sec_context;

	/* (the bound's expressions run as the submitting role, as ATTACH runs them) */
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(job->identity.owner_oid,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	bound = AttachTransformBound(parent, cmd->bound, job->command);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	if (!equal(bound, stringToNode(CatalogKindStateText(job->kind_state, STATE_BOUND))))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the partition bound of background DDL job %lld evaluates to another bound than at its submit",
						(long long) job->id),
				 errdetail("An expression of the bound is not immutable, or the types of the partition key changed."),
				 errhint("Attach the partition with background_ddl off, or with a bound of constants.")));
	table_close(parent, NoLock);
	attach->subtype = AT_AttachPartition;
	attach->def = (Node *) cmd;
	ConstraintRunAlterTable(job->target_oid, job->identity.owner_oid, attach, ShareUpdateExclusiveLock,
				  job->command);
}

/*
 * What the cut-over's ATTACH does under its locks beyond the helpers' reach
 * (an index created on the parent meanwhile, or a foreign key), logged; it
 * is what the blocking statement would have done
 */
static void
AttachSaysWhatItReads(const BgddlJob *job)
{
	Relation	parent = table_open(job->target_oid, NoLock);
	Relation	attached = table_open(JobConstraintTable(job), NoLock);
	const char *index = AttachBuildsIndex(parent, attached);

	if (index != NULL || RelationGetFKeyList(parent) != NIL)
		ereport(LOG,
				(errmsg("background DDL job %lld: its ATTACH %s \"%s\" under its lock",
						(long long) job->id,
						index != NULL ? "builds an index of the parent, created meanwhile, on" :
						"checks the parent's foreign keys, added meanwhile, on the rows of",
						RelationGetRelationName(attached))));
	table_close(attached, NoLock);
	table_close(parent, NoLock);
}

/*
 * The lock the cut-over takes on the job's table (drops_capture: it drops
 * a foreign key's capture triggers too).  A check's is VALIDATE
 * CONSTRAINT's SHARE UPDATE EXCLUSIVE, which writers do not wait for; SET
 * NOT NULL's and a key's, ACCESS EXCLUSIVE, for as long as a few catalog
 * updates take.  A foreign key's cut-over checks the last changed rows with
 * writers kept out (SHARE); with a capture that logs every change, it
 * takes ACCESS EXCLUSIVE instead and drops the capture triggers too (DROP
 * TRIGGER's lock): one moment of a strong lock at the end, not two.  An
 * ATTACH takes ATTACH's SHARE UPDATE EXCLUSIVE on the parent, which writers
 * do not wait for, and ACCESS EXCLUSIVE on the tables its helpers are on
 * (AttachCutOver).
 */
static LOCKMODE
CutOverMode(const BgddlJob *job, bool drops_capture)
{
	if (JobIsAttach(job))
		return ShareUpdateExclusiveLock;
	if (JobNotNullColumn(job) != InvalidAttrNumber || OidIsValid(JobKeyIndexOf(job->kind_state)) ||
		drops_capture)
		return AccessExclusiveLock;
	return JobIsForeignKey(job) ? ShareLock : ShareUpdateExclusiveLock;
}

/*
 * An ATTACH's cut-over, under its lock on the parent: the tables its
 * helpers are on locked ACCESS EXCLUSIVE (as a job takes a lock), its
 * helpers marked valid, PostgreSQL's ATTACH run (their valid helpers imply
 * what it would check: it reads no row), and the helpers dropped, as the
 * blocking statement would have left none.
 */
static void
AttachCutOver(JobRun *run, HeapTuple constraint)
{
	List	   *carriers = JobCarriers(&run->job, constraint, AccessExclusiveLock);

	AttachSaysWhatItReads(&run->job);
	MarkValid(carriers);
	CommandCounterIncrement();
	RunJobAttach(&run->job);
	DropHelpers(&run->job, carriers);
}

/*
 * The cut-over's work, in its step, under its lock (mode) on the job's
 * table: the tables below locked as VALIDATE locks them (any added
 * meanwhile is checked first: JOB_STEP_MORE), a foreign key's last changed
 * rows checked (with writers kept out, the last marks are read in one
 * scan), the constraint marked valid, and the statement finished (SET NOT
 * NULL, a key, ATTACH).  Every row is checked: the constraint is valid
 * from this commit on.  A SET NOT NULL job's helper, valid, lets
 * PostgreSQL's SET NOT NULL skip its scan (it proves the column has no
 * nulls), and is dropped.
 */
static JobStepResult
FinishConstraint(JobRun *run, HeapTuple constraint, LOCKMODE mode, bool drops_capture)
{
	AttrNumber	column = JobNotNullColumn(&run->job);
	List	   *carriers;

	if (JobIsAttach(&run->job))
	{
		AttachCutOver(run, constraint);
		JobRunSucceeded(run, run->job.target_oid, false, -1);
		return JOB_STEP_DONE;
	}
	carriers = ConstraintCarriers(run->job.target_oid, constraint, mode);
	if (AddNewParts(run, carriers))
		return JOB_STEP_MORE;
	if (JobIsForeignKey(&run->job) &&
		CheckChangedRows(run, constraint, INT_MAX, true) == JOB_STEP_RESTART)
		return JOB_STEP_RESTART;
	MarkValid(carriers);
	if (drops_capture)
	{
		ConstraintCleanup(&run->job);
		CatalogJobSetCleanupPending(run->job.id, false);
		run->job.cleanup_pending = false;
	}
	if (column != InvalidAttrNumber)
	{
		CommandCounterIncrement();
		ConstraintRunAlterTable(run->job.target_oid, run->job.identity.owner_oid,
					  NamedCommand(AT_SetNotNull, get_attname(run->job.target_oid, column, false)),
					  AccessExclusiveLock, run->job.command);
		DropJobConstraint(&run->job, constraint);
	}
	else if (OidIsValid(JobKeyIndexOf(run->job.kind_state)))
	{
		CommandCounterIncrement();
		ConstraintRunKey(&run->job);
		DropJobConstraint(&run->job, constraint);
	}
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	return JOB_STEP_DONE;
}

JobStepResult
ConstraintCutOver(JobRun *run)
{
	bool		drops_capture = false;
	LOCKMODE	mode;
	HeapTuple	constraint;
	bool		restarted;
	JobStepResult result;

	JobStepHoldPoint("cutting over");
	/*
	 * (without a capture that logs every change, it may have to check every
	 * row: readers keep reading)
	 */
	if (JobIsForeignKey(&run->job))
	{
		JobStepBegin("background_ddl: cutting over", STEP_READ_COMMITTED);
		drops_capture = CaptureTrusted(run->job.id);
		JobStepEnd();
	}
	mode = CutOverMode(&run->job, drops_capture);
	constraint = BeginConstraintStep(run, "background_ddl: cutting over", mode, &restarted);
	if (constraint == NULL)
		return restarted ? JOB_STEP_RESTART : JOB_STEP_TARGET_GONE;
	result = FinishConstraint(run, constraint, mode, drops_capture);
	JobStepEnd();
	return result;
}

/*
 * In a group (job_group.c): the cut-over's lock, taken before the group's
 * snapshot.  A foreign key's capture triggers are left to the job's next
 * worker, which drops them after the publication, as a view's.
 */
void
ConstraintCutOverLock(JobRun *run)
{
	JobStepLockRelation(run->job.target_oid, CutOverMode(&run->job, false),
						background_ddl_lock_timeout_ms);
}

/*
 * In a group: the cut-over's work, in the group's step.  Whatever would
 * have the job check more rows first (tables added below, a constraint
 * created again, changes not all captured) stops the publication
 * (JOB_STEP_RESTART); ConstraintRestartBuild then records it once the
 * step is undone.
 */
JobStepResult
ConstraintCutOverPublish(JobRun *run)
{
	HeapTuple	constraint;
	JobStepResult result;

	JobRunRecordPhase(run, JOB_PHASE_CUTTING_OVER);
	if (!JobRunTargetExists(run))
		return JOB_STEP_TARGET_GONE;
	constraint = JobConstraintTuple(&run->job);
	if (constraint == NULL && JobConstraintCreatedAgain(run) != NULL)
		return JOB_STEP_RESTART;
	if (constraint == NULL)
	{
		run->gone_reason = "the constraint was dropped";
		return JOB_STEP_TARGET_GONE;
	}
	result = FinishConstraint(run, constraint, CutOverMode(&run->job, false), false);
	return result == JOB_STEP_MORE ? JOB_STEP_RESTART : result;
}

/*
 * A group's publication stopped at this job (ConstraintCutOverPublish),
 * and is undone: find again, in a step of its own, what stopped it, and
 * record it, so that the job checks those rows before its group is
 * published
 */
JobStepResult
ConstraintRestartBuild(JobRun *run)
{
	LOCKMODE	mode = CutOverMode(&run->job, false);
	HeapTuple	constraint;
	bool		restarted;

	constraint = BeginConstraintStep(run, "background_ddl: restarting its check", mode, &restarted);
	if (constraint == NULL)
		return restarted ? JOB_STEP_RESTART : JOB_STEP_TARGET_GONE;
	if (!JobIsAttach(&run->job) &&
		!AddNewParts(run, ConstraintCarriers(run->job.target_oid, constraint, mode)) &&
		JobIsForeignKey(&run->job))
		(void) CheckChangedRows(run, constraint, INT_MAX, false);
	JobStepEnd();
	return JOB_STEP_RESTART;
}

/* The rows written to the job's table and those below it (background_ddl.cutover_max_writes), in a step */
int64
ConstraintWritesToTable(const BgddlJob *job)
{
	return PgTableTreeWrites(job->target_oid);
}

/* Why the job's target is gone: its table was dropped */
const char *
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

	if (JobIsAttach(job))
	{
		/* ATTACH's locks, its helpers dropped, and ATTACH run: it reads the rows */
		LockRelationOid(job->target_oid, ShareUpdateExclusiveLock);
		if (CatalogKindStateInt(job->kind_state, STATE_DEFAULT_PARTITION) != 0)
			LockRelationOid((Oid) CatalogKindStateInt(job->kind_state, STATE_DEFAULT_PARTITION),
							AccessExclusiveLock);
		LockRelationOid(JobConstraintTable(job), AccessExclusiveLock);
		DropHelpers(job, JobCarriers(job, NULL, NoLock));
		RunJobAttach(job);
		JobRunSucceeded(&run, job->target_oid, false, -1);
		return job->target_oid;
	}
	LockRelationOid(job->target_oid,
					column != InvalidAttrNumber || OidIsValid(JobKeyIndexOf(job->kind_state)) ?
					AccessExclusiveLock : ShareUpdateExclusiveLock);
	constraint = JobConstraintTuple(job);
	if (constraint == NULL)
		elog(ERROR, "constraint %u of background DDL job %lld does not exist",
			 ConstraintOfJob(job), (long long) job->id);
	if (OidIsValid(JobKeyIndexOf(job->kind_state)))
	{
		DropJobConstraint(job, constraint);
		ConstraintRunKey(job);
	}
	else if (column != InvalidAttrNumber)
	{
		DropJobConstraint(job, constraint);
		ConstraintRunAlterTable(job->target_oid, job->identity.owner_oid,
					  NamedCommand(AT_SetNotNull, get_attname(job->target_oid, column, false)),
					  AccessExclusiveLock, job->command);
	}
	else
		ConstraintRunAlterTable(job->target_oid, job->identity.owner_oid,
					  NamedCommand(AT_ValidateConstraint,
								   NameStr(((Form_pg_constraint) GETSTRUCT(constraint))->conname)),
					  ShareUpdateExclusiveLock, job->command);
	JobRunSucceeded(&run, job->target_oid, false, -1);
	return job->target_oid;
}

/*
 * Drop the constraint the job added (a VALIDATE job added none, and leaves
 * its constraint NOT VALID): dropping it takes ACCESS EXCLUSIVE on the
 * table and the tables below it, as a job takes such a lock.
 */
void
ConstraintDiscard(const BgddlJob *job, bool keep_target)
{
	HeapTuple	constraint;

	if (CatalogKindStateInt(job->kind_state, STATE_ADDED) == 0)
		return;
	if (JobIsAttach(job))
	{
		/* Its helpers are not on the target, and the table attached outlives it */
		DropHelpers(job, JobCarriers(job, NULL, AccessExclusiveLock));
		return;
	}
	if (keep_target)
		return;
	JobStepLockRelation(job->target_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	constraint = JobConstraintTuple(job);
	if (constraint == NULL)
		return;
	/* the tables below, locked as a job locks (DROP CONSTRAINT's recursion would queue) */
	(void) ConstraintCarriers(job->target_oid, constraint, AccessExclusiveLock);
	/* dropping a foreign key locks the referenced table too */
	if (JobIsForeignKey(job))
		JobStepLockRelation(((Form_pg_constraint) GETSTRUCT(constraint))->confrelid,
							AccessExclusiveLock, background_ddl_lock_timeout_ms);
	DropJobConstraint(job, constraint);
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

				if (KeyConstraintBuildsIndex(cmd))
					return KeyConstraintStrategy(RangeVarGetRelid(stmt->relation, NoLock, false), cmd);
				return cmd->subtype == AT_AttachPartition ? STRATEGY_ATTACH :
					IsForeignKeyCommand(RangeVarGetRelid(stmt->relation, NoLock, false), cmd) ?
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
 * The check a table's rows (rel: the statement's table relid or one below
 * it; an ATTACH's table or the default partition) get for the statement's
 * subcommand (cmd), without its error (ReportViolation); false if the
 * table does not carry the constraint a VALIDATE names
 */
static bool
EstimatedCheck(Oid relid, Relation rel, AlterTableCmd *cmd, RowCheck *check)
{
	check->constraint = NULL;
	check->foreign_key = false;
	check->violation = VIOLATES_CHECK;
	check->not_null_columns = NIL;
	if (cmd->subtype == AT_AttachPartition)
	{
		PartitionCmd *attach = (PartitionCmd *) cmd->def;
		Relation	parent = table_open(relid, NoLock);
		Relation	attached = table_openrv(attach->name, AccessShareLock);
		AttachChecks checks;

		(void) AttachComputeChecks(parent, attached, attach->bound, NULL, &checks);
		check->expr = RelationGetRelid(rel) == RelationGetRelid(attached) ?
			checks.partition_check : checks.default_check;
		check->name = "partition constraint";
		table_close(attached, NoLock);
		table_close(parent, NoLock);
	}
	else if (OidIsValid(PrimaryKeyIndex(relid, cmd)))
	{
		check->expr = CookedCheck(rel, ConstraintKeyIsNotNull(relid, NullableKeyColumns(PrimaryKeyIndex(relid, cmd))));
		check->name = "not null";
	}
	else if (cmd->subtype == AT_AddConstraint)
	{
		Constraint *constraint = (Constraint *) cmd->def;

		check->expr = CookedCheck(rel, constraint->raw_expr);
		check->name = constraint->conname != NULL ? constraint->conname : "new";
	}
	else if (cmd->subtype == AT_SetNotNull)
	{
		check->expr = CookedCheck(rel, IsNotNull(cmd->name));
		check->name = cmd->name;
	}
	else
	{
		Oid			conoid = get_relation_constraint_oid(RelationGetRelid(rel), cmd->name, true);
		HeapTuple	constraint = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));

		if (!HeapTupleIsValid(constraint))
			return false;
		check->expr = CheckExpression(constraint);
		check->name = cmd->name;
		ReleaseSysCache(constraint);
	}
	return check->expr != NULL;
}

/*
 * The tables whose rows the statement's check reads, locked ACCESS SHARE
 * (relid's, locked by the caller, and those below it unless the
 * constraint is not inherited; an ATTACH's table and the default
 * partition; cmd NULL: a statement of several subcommands), and their
 * blocks (*total).  Not inlined: its list would count as clobbered by the
 * estimate's PG_TRY.
 */
static pg_noinline List *
EstimatedTables(Oid relid, AlterTableCmd *cmd, int64 *total)
{
	List	   *tables = NIL;
	List	   *read;
	ListCell   *lc;
	bool		no_inherit = cmd != NULL && cmd->subtype == AT_AddConstraint &&
		((Constraint *) cmd->def)->is_no_inherit;

	*total = 0;
	if (cmd != NULL && cmd->subtype == AT_AttachPartition)
	{
		read = list_make1_oid(RangeVarGetRelid(((PartitionCmd *) cmd->def)->name, AccessShareLock,
											   false));
		if (!((PartitionCmd *) cmd->def)->bound->is_default &&
			OidIsValid(get_default_partition_oid(relid)))
			read = lappend_oid(read, get_default_partition_oid(relid));
	}
	else
		read = no_inherit ? list_make1_oid(relid) : find_all_inheritors(relid, AccessShareLock, NULL);
	foreach(lc, read)
	{
		Relation	rel = table_open(lfirst_oid(lc), AccessShareLock);

		if (rel->rd_rel->relkind == RELKIND_RELATION)
		{
			*total += RelationGetNumberOfBlocks(rel);
			tables = lappend_oid(tables, lfirst_oid(lc));
		}
		table_close(rel, NoLock);
	}
	return tables;
}

/*
 * Check a sample of rel's rows (8 ranges, sample blocks in all, its blocks
 * if fewer): the rows read, *violations counts those that violate it
 */
static uint64
CheckSample(Relation rel, const RowCheck *check, BlockNumber sample, uint64 *violations)
{
	BlockNumber blocks = RelationGetNumberOfBlocks(rel);
	uint64		rows = 0;
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());

	for (int i = 0; i < 8; i++)
	{
		BlockNumber first = (BlockNumber) ((uint64) blocks * i / 8);
		BlockNumber last = sample >= blocks ? (BlockNumber) ((uint64) blocks * (i + 1) / 8) :
			first + (sample + 7) / 8;

		rows += CheckBlocks(rel, check, snapshot, first, Min(last, blocks), violations);
	}
	UnregisterSnapshot(snapshot);
	return rows;
}

/*
 * Check a sample of the rows of tables (of the statement's table relid;
 * target of their total blocks, each table its share): the rows read;
 * *sampled, the blocks read; *violations, the rows that violate it
 */
static uint64
CheckSamples(Oid relid, List *tables, AlterTableCmd *cmd, int64 target, int64 total,
			 int64 *sampled, uint64 *violations)
{
	uint64		rows = 0;
	ListCell   *lc;

	foreach(lc, tables)
	{
		Relation	table = table_open(lfirst_oid(lc), NoLock);
		int64		blocks = RelationGetNumberOfBlocks(table);
		int64		sample = Min(blocks, (target * blocks + total - 1) / Max(total, 1));
		RowCheck	check;

		if (EstimatedCheck(relid, table, cmd, &check) && sample > 0)
		{
			rows += CheckSample(table, &check, (BlockNumber) sample, violations);
			*sampled += sample;
		}
		table_close(table, NoLock);
	}
	return rows;
}

/*
 * estimate_ddl: the check measured on a sample of the rows (8 ranges of
 * each table, a hundredth of the blocks in all, at least
 * ESTIMATE_SAMPLE_MIN_BLOCKS), as the caller (who must own the table, as
 * for ALTER TABLE), under SECURITY_RESTRICTED_OPERATION as the job runs
 * it; its time scaled to all the blocks.  The sample's violations are
 * counted, and said.
 */
static bool
ConstraintEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	AlterTableStmt *stmt = (AlterTableStmt *) raw_statement;
	const char *reason = NULL;
	KindAcceptance acceptance = ConstraintAccepts(raw_statement, &reason);
	AlterTableCmd *cmd;
	Relation	rel;
	List	   *tables;
	int64		total;
	int64		target;
	uint64		rows = 0;
	int64		sampled = 0;
	uint64		violations = 0;
	const char *strategy;
	instr_time	start_time;
	instr_time	duration;
	Oid			saved_userid;
	int			saved_sec_context;
	MemoryContext caller_context = CurrentMemoryContext;
	ResourceOwner caller_owner = CurrentResourceOwner;

	if (acceptance == KIND_NOT_ACCEPTED)
		return false;
	rel = table_open(RangeVarGetRelidExtended(stmt->relation, AccessShareLock, 0,
											  RangeVarCallbackOwnsRelation, NULL),
					 NoLock);
	cmd = OnlyCommand(stmt);
	tables = EstimatedTables(RelationGetRelid(rel), cmd, &total);
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
	if (KeyConstraintBuildsIndex(cmd))
	{
		KeyConstraintEstimate(stmt, query_string, estimate);
		estimate->strategy = pstrdup(KeyConstraintStrategy(RelationGetRelid(rel), cmd));
		estimate->locks = psprintf("ACCESS EXCLUSIVE on \"%s\" for a moment at submit and at the end, "
								   "asked for without queueing first; SHARE UPDATE EXCLUSIVE while "
								   "the index is built (writers do not wait); ACCESS SHARE while "
								   "each chunk is checked for nulls",
								   RelationGetRelationName(rel));
		table_close(rel, NoLock);
		return true;
	}
	estimate->locks = psprintf("ACCESS EXCLUSIVE on \"%s\" for a moment at submit (ADD; SHARE UPDATE "
							   "EXCLUSIVE for VALIDATE), asked for without queueing first; ACCESS SHARE "
							   "while each chunk is checked; SHARE UPDATE EXCLUSIVE for a moment at the end (ACCESS "
							   "EXCLUSIVE for SET NOT NULL and a primary key)",
							   RelationGetRelationName(rel));
	if (cmd->subtype == AT_AttachPartition)
		estimate->locks = psprintf("SHARE UPDATE EXCLUSIVE on \"%s\" (writers do not wait), ACCESS "
								   "EXCLUSIVE on the table attached and the default partition for a "
								   "moment at submit and at the end, asked for without queueing first; "
								   "ACCESS SHARE while each chunk is checked",
								   RelationGetRelationName(rel));
	if (IsForeignKeyCommand(RelationGetRelid(rel), cmd))
	{
		estimate->strategy = pstrdup(STRATEGY_FOREIGN_KEY);
		estimate->locks = psprintf("SHARE ROW EXCLUSIVE on \"%s\" and the referenced table for a moment "
								   "at submit, which installs the capture triggers (VALIDATE: SHARE UPDATE "
								   "EXCLUSIVE, then SHARE ROW EXCLUSIVE for a moment to install them), asked "
								   "for without queueing first; ACCESS SHARE while each chunk is checked; "
								   "ACCESS EXCLUSIVE for a moment at the end, to check the last changed rows "
								   "and drop the triggers (SHARE, and later ACCESS EXCLUSIVE to drop them, if "
								   "the capture stopped); not measured",
								   RelationGetRelationName(rel));
		table_close(rel, NoLock);
		return true;
	}

	target = Max(ESTIMATE_SAMPLE_MIN_BLOCKS, total / ESTIMATE_SAMPLE_SHARE);
	/* What the expression's functions do is rolled back (the abort restores the user) */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller_context);
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(saved_userid, saved_sec_context | SECURITY_RESTRICTED_OPERATION);
	INSTR_TIME_SET_CURRENT(start_time);
	PG_TRY();
	{
		rows = CheckSamples(RelationGetRelid(rel), tables, cmd, target, total, &sampled, &violations);
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
	estimate->sampled_blocks = sampled;
	if (sampled > 0)
	{
		Relation	first = table_open(linitial_oid(tables), NoLock);
		RowCheck	check;

		/* Divided among the processes that check a chunk, as the job's worker counts them */
		estimate->seconds = INSTR_TIME_GET_DOUBLE(duration) * total / sampled;
		if (EstimatedCheck(RelationGetRelid(rel), first, cmd, &check) &&
			PgExpressionParallelSafe(check.expr))
			estimate->seconds /= ChunkProcesses(0);
		table_close(first, NoLock);
		estimate->rows = (int64) ((double) rows * total / sampled);
	}
	else
		estimate->seconds = 0;
	strategy = cmd->subtype == AT_AttachPartition ? STRATEGY_ATTACH : STRATEGY_CHECK_IN_CHUNKS;
	estimate->strategy = violations == 0 ? pstrdup(strategy) :
		psprintf("%s; %llu rows of the sample violate it: the job would fail", strategy,
				 (unsigned long long) violations);
	table_close(rel, NoLock);
	return true;
}

const KindRoutine kind_constraint_routine = {
	.name = "ALTER TABLE",
	.stands_for = OBJECT_TABLE,
	.cut_over_publishes = true,
	.checks_lock_tables = true,
	.accepts = ConstraintAccepts,
	.validates_against_keys = ConstraintValidatesAgainstKeys,
	.validate = ConstraintValidate,
	.reserve = ConstraintReserve,
	.submitted = ConstraintSubmitted,
	.explain = ConstraintExplain,
	.estimate = ConstraintEstimate,
	.start = ConstraintStart,
	.plan = ConstraintPlan,
	.backfill_step = ConstraintBackfillStep,
	.catch_up = ConstraintCatchUp,
	.cut_over = ConstraintCutOver,
	.cut_over_lock = ConstraintCutOverLock,
	.cut_over_publish = ConstraintCutOverPublish,
	.restart_build = ConstraintRestartBuild,
	.writes_to_sources = ConstraintWritesToTable,
	.gone_reason = ConstraintGoneReason,
	.discard = ConstraintDiscard,
	.cleanup = ConstraintCleanup,
	.paused = ConstraintPaused,
	.keeps_on_table_of = ConstraintKeepsOnTableOf,
	.discards_in_any_transaction = ConstraintDiscardsInAnyTransaction,
	.build_here = ConstraintBuildHere,
};
