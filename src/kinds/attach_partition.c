/*-------------------------------------------------------------------------
 *
 * attach_partition.c
 *	  What ALTER TABLE ... ATTACH PARTITION checks, worked out as PostgreSQL
 *	  works it out, for a job that checks it first.
 *
 * ATTACH PARTITION reads every row of the table attached (against its new
 * partition constraint) and of the parent's default partition (against
 * the negation of the new bound), under ACCESS EXCLUSIVE on both, unless
 * valid CHECK constraints of each table imply what it checks
 * (PartConstraintImpliedByRelConstraint).  The job (kind_constraint.c)
 * adds these checks NOT VALID as helper constraints, checks the rows in
 * chunks, marks them valid, and then lets PostgreSQL's ATTACH skip both
 * scans.  This file computes the two expressions exactly as ATTACH computes
 * them (its bound transformed, get_qual_from_partbound with the parent's
 * own partition constraint, get_proposed_default_constraint), each mapped
 * to its table's columns; and it says which ATTACH would do more than a
 * scan that a constraint can spare: build an index the table attached
 * lacks, or check a foreign key of the parent against its rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_node.h"
#include "parser/parse_utilcmd.h"
#include "parser/parser.h"
#include "partitioning/partbounds.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "citus/pg_citus.h"
#include "kinds/attach_partition.h"
#include "pg/pg_compat.h"

/* Why the rows of one table (of whom the reason speaks) are not checked by a job */
static const char *
TableInSessionReason(Oid relid, const char *whom)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	const char *reason = NULL;

	if (!HeapTupleIsValid(tuple))
		return NULL;
	form = (Form_pg_class) GETSTRUCT(tuple);
	if (form->relpersistence == RELPERSISTENCE_TEMP)
		reason = psprintf("%s is temporary: it belongs to its session.", whom);
	else if (form->relkind == RELKIND_PARTITIONED_TABLE)
		reason = psprintf("%s is partitioned itself: ATTACH checks its partitions in its own way.", whom);
	else if (form->relkind != RELKIND_RELATION)
		reason = psprintf("%s is not a plain table (a foreign table, say), whose rows PostgreSQL checks in its own way.", whom);
	else if (form->relam != HEAP_TABLE_AM_OID)
		reason = psprintf("The access method of %s is not heap.", whom);
	ReleaseSysCache(tuple);
	return reason;
}

/* Has the table (if any) a block?  It is locked ACCESS SHARE for a moment. */
static bool
TableHasBlocks(Oid relid)
{
	Relation	rel;
	bool		has_blocks;

	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	has_blocks = RelationGetNumberOfBlocks(rel) > 0;
	table_close(rel, AccessShareLock);
	return has_blocks;
}

/*
 * Has the table attached the parent's columns (names, types, typmods)
 * and no other?  If not, ATTACH fails with its own error, and its
 * constraint cannot be mapped to the table's columns.
 */
static bool
ColumnsMatch(Relation parent, Relation attached)
{
	TupleDesc	parent_desc = RelationGetDescr(parent);
	TupleDesc	attached_desc = RelationGetDescr(attached);
	int			parent_columns = 0;
	int			attached_columns = 0;

	for (int i = 0; i < parent_desc->natts; i++)
		parent_columns += TupleDescAttr(parent_desc, i)->attisdropped ? 0 : 1;
	for (int i = 0; i < attached_desc->natts; i++)
	{
		Form_pg_attribute column = TupleDescAttr(attached_desc, i);
		bool		found = false;

		if (column->attisdropped)
			continue;
		attached_columns++;
		for (int j = 0; j < parent_desc->natts && !found; j++)
		{
			Form_pg_attribute parent_column = TupleDescAttr(parent_desc, j);

			found = !parent_column->attisdropped &&
				strcmp(NameStr(parent_column->attname), NameStr(column->attname)) == 0 &&
				parent_column->atttypid == column->atttypid &&
				parent_column->atttypmod == column->atttypmod;
		}
		if (!found)
			return false;
	}
	return parent_columns == attached_columns;
}

/*
 * The name of an index of the parent that the table attached has no valid
 * match for, as AttachPartitionEnsureIndexes matches them (ATTACH would build it,
 * under its lock); NULL if it has one for each, or if their columns differ
 * (ColumnsMatch: ATTACH fails).  Caller has locked both tables.
 */
const char *
AttachBuildsIndex(Relation parent, Relation attached)
{
	List	   *attached_indexes;
	AttrMap    *attmap;
	ListCell   *lc;

	if (!ColumnsMatch(parent, attached))
		return NULL;			/* ATTACH fails, with its error */
	attached_indexes = RelationGetIndexList(attached);
	attmap = build_attrmap_by_name(RelationGetDescr(attached), RelationGetDescr(parent));

	foreach(lc, RelationGetIndexList(parent))
	{
		Relation	parent_index = index_open(lfirst_oid(lc), AccessShareLock);
		IndexInfo  *info = BuildIndexInfo(parent_index);
		bool		constraint = OidIsValid(get_relation_idx_constraint_oid(RelationGetRelid(parent),
																		   lfirst_oid(lc)));
		bool		found = parent_index->rd_rel->relkind != RELKIND_PARTITIONED_INDEX;
		const char *missing;
		ListCell   *lc2;

		foreach(lc2, attached_indexes)
		{
			Relation	index = index_open(lfirst_oid(lc2), AccessShareLock);

			found = found ||
				(!index->rd_rel->relispartition && index->rd_index->indisvalid &&
				 CompareIndexInfo(BuildIndexInfo(index), info, index->rd_indcollation,
								  parent_index->rd_indcollation, index->rd_opfamily,
								  parent_index->rd_opfamily, attmap) &&
				 (!constraint ||
				  OidIsValid(get_relation_idx_constraint_oid(RelationGetRelid(attached),
															 lfirst_oid(lc2)))));
			index_close(index, AccessShareLock);
		}
		missing = found ? NULL : pstrdup(RelationGetRelationName(parent_index));
		index_close(parent_index, AccessShareLock);
		if (missing != NULL)
			return missing;
	}
	return NULL;
}

/*
 * Does ATTACH PARTITION (cmd) of a table to parent read rows that a job
 * can check?  *accepted false: not a statement for a job (PostgreSQL
 * refuses it, or it reads no row); otherwise NULL, or why it runs in the
 * session.  Its tables are locked ACCESS SHARE for a moment to compare
 * their columns and indexes (the submit compares them again, under the
 * statement's locks).
 */
const char *
AttachInSessionReason(Oid parent, PartitionCmd *cmd, bool *accepted)
{
	Oid			attached = RangeVarGetRelid(cmd->name, NoLock, true);
	Oid			default_partition;
	const char *reason;
	Relation	parent_rel;
	Relation	attached_rel;
	bool		columns_match;

	*accepted = false;
	if (!OidIsValid(parent) || get_rel_relkind(parent) != RELKIND_PARTITIONED_TABLE ||
		!OidIsValid(attached) || attached == parent ||
		!pg_class_ownercheck(parent, GetUserId()) || !pg_class_ownercheck(attached, GetUserId()))
		return NULL;			/* PostgreSQL says what is wrong */
	if (cmd->bound->is_default && !has_subclass(parent))
		return NULL;			/* a default partition of nothing: no row to check */
	*accepted = true;
	default_partition = get_default_partition_oid(parent);
	if (PgCitusTable(parent))
		return PgCitusInSessionReason(parent);
	if (get_rel_persistence(parent) == RELPERSISTENCE_TEMP)
		return "The partitioned table is temporary: it belongs to its session.";
	if ((reason = TableInSessionReason(attached, "The table attached")) != NULL)
		return reason;
	if (OidIsValid(default_partition) && !cmd->bound->is_default &&
		(reason = TableInSessionReason(default_partition, "The default partition")) != NULL)
		return reason;

	parent_rel = table_open(parent, AccessShareLock);
	attached_rel = table_open(attached, AccessShareLock);
	columns_match = ColumnsMatch(parent_rel, attached_rel);
	reason = columns_match ? AttachBuildsIndex(parent_rel, attached_rel) : NULL;
	if (RelationGetFKeyList(parent_rel) != NIL)
		reason = "The partitioned table has foreign keys: ATTACH checks the rows of the table attached against them in its own scan.";
	else if (reason != NULL)
		reason = psprintf("ATTACH would build index \"%s\" on \"%s\" under its lock: create that index on the table first (CREATE INDEX CONCURRENTLY, or an index job), then attach it.",
						  reason, RelationGetRelationName(attached_rel));
	/* if the columns differ, PostgreSQL says how; two empty tables: nothing to read */
	*accepted = columns_match &&
		(RelationGetNumberOfBlocks(attached_rel) > 0 || TableHasBlocks(default_partition));
	table_close(attached_rel, AccessShareLock);
	table_close(parent_rel, AccessShareLock);
	return reason;
}

/* A bound of a partition of parent, transformed as ATTACH transforms it */
PartitionBoundSpec *
AttachTransformBound(Relation parent, PartitionBoundSpec *raw_bound, const char *query_string)
{
	ParseState *pstate = make_parsestate(NULL);
	PartitionBoundSpec *bound;

	pstate->p_sourcetext = query_string;
	bound = transformPartitionBound(pstate, parent, copyObject(raw_bound));
	free_parsestate(pstate);
	return bound;
}

/*
 * The checks ATTACH PARTITION of attached to parent with raw_bound makes
 * (checks), computed as ATExecAttachPartition computes them: the bound
 * transformed (with PostgreSQL's errors), the table's partition
 * constraint (with the parent's own, if the parent is a partition),
 * simplified as ATTACH simplifies it, and the default partition's new
 * constraint, each mapped to its table's columns.  False if the table's
 * columns are not the parent's (ATTACH fails with its own error).  Caller
 * has locked parent and attached.
 */
bool
AttachComputeChecks(Relation parent, Relation attached, PartitionBoundSpec *raw_bound,
					const char *query_string, AttachChecks *checks)
{
	List	   *bound_quals;
	List	   *quals;

	memset(checks, 0, sizeof(AttachChecks));
	checks->bound = AttachTransformBound(parent, raw_bound, query_string);
	if (!ColumnsMatch(parent, attached))
		return false;
	bound_quals = get_qual_from_partbound(parent, checks->bound);
	quals = list_concat_copy(bound_quals, RelationGetPartitionQual(parent));
	if (quals != NIL)
	{
		quals = (List *) eval_const_expressions(NULL, (Node *) quals);
		quals = map_partition_varattnos(list_make1(make_ands_explicit(quals)), 1, attached, parent);
		checks->partition_check = linitial(quals);
	}
	else
		checks->partition_check = makeBoolConst(true, false);
	checks->default_partition = checks->bound->is_default ? InvalidOid :
		get_default_partition_oid(RelationGetRelid(parent));
	if (OidIsValid(checks->default_partition))
	{
		Relation	default_rel = table_open(checks->default_partition, NoLock);
		List	   *default_quals = get_proposed_default_constraint(bound_quals);

		default_quals = map_partition_varattnos(default_quals, 1, default_rel, parent);
		checks->default_check = (Node *) make_ands_explicit(default_quals);
		table_close(default_rel, NoLock);
	}
	return true;
}

/*
 * The ATTACH PARTITION of a job's statement (command), its table named by
 * its schema and name now (attached), not as the job's search path would
 * find it
 */
PartitionCmd *
AttachCommandOf(const char *command, Oid attached)
{
	RawStmt    *raw = linitial_node(RawStmt, raw_parser(command, RAW_PARSE_DEFAULT));
	AlterTableStmt *stmt = CheckedNode(AlterTableStmt, raw->stmt);
	PartitionCmd *cmd = CheckedNode(PartitionCmd,
									CheckedNode(AlterTableCmd, linitial(stmt->cmds))->def);

	cmd->name = makeRangeVar(get_namespace_name(get_rel_namespace(attached)),
							 get_rel_name(attached), -1);
	return cmd;
}
