/*-------------------------------------------------------------------------
 *
 * kind_rewrite.c
 *	  Background VACUUM FULL, CLUSTER, ALTER TABLE ... SET TABLESPACE, SET
 *	  ACCESS METHOD, ALTER COLUMN ... TYPE and ADD COLUMN: a table's rows
 *	  rewritten into new storage while the table stays readable and writable.
 *
 * All hold ACCESS EXCLUSIVE on the table for the whole rewrite (or copy
 * of its files).  As a job, the table's rows are copied in checkpointed
 * chunks of its blocks into a hidden heap made like it (its attributes,
 * dropped ones too, its options and owner; its tablespace, or the new
 * one; its access method, or the new one), while the capture triggers log the
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
 * materialized view, with other options), and SET TABLESPACE or SET ACCESS
 * METHOD of anything but a plain table or with other subcommands, run as
 * PostgreSQL runs them; so does a table, or a new access method, that does
 * not store rows as heap does (the job reads the table in block ranges and
 * follows its rows by tuple id).  The table's indexes stay where they are,
 * as with SET TABLESPACE.
 *
 * CLUSTER of one table is the same job with its rows copied in the order of
 * the index, a chunk of rows at a time (QUERY_STATE_ORDER_INDEX), where the
 * index's keys are columns whose order a chunk can continue
 * (QueryIndexGivesOrder); on another index it runs as PostgreSQL runs it.
 * The cut-over marks the index clustered.
 *
 * ALTER TABLE ... ALTER COLUMN ... TYPE and ADD COLUMN (a volatile default,
 * a stored generated column: what PostgreSQL rewrites the table for) are
 * the same job with the changed columns' new values and the added ones'
 * in its query, bound at submit
 * (query_column_change.c), into a hidden heap of the new shape; the copies
 * of the indexes that use a changed column are made from their definitions
 * analysed again on it.  At submit the statement itself runs on the table
 * emptied and is rolled back (every error of PostgreSQL's then); at the
 * cut-over it runs on the table emptied again, under the lock, which makes
 * the table's catalog exactly the blocking statement's, and then the
 * storage swaps.  What else depends on a changed column (a view, a CHECK or
 * foreign key constraint, a trigger, ...), inheritance, and unique keys
 * that might not stay distinct run as PostgreSQL runs them.  The statement
 * on a partitioned table (outside a transaction block) is a job for each
 * leaf partition, published together, a group of their own: each rewrites
 * its leaf, and the group's one transaction empties every leaf once its
 * last changes are in, runs the statement on the partitioned table, and
 * swaps each leaf's storage (RewriteCutOverFinish).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/amapi.h"
#include "access/genam.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attrdef.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_statistic_ext.h"
#include "commands/cluster.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "parser/parser.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/evtcache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "capture/capture_trigger.h"
#include "catalog/catalog_job.h"
#include "catalog/job_identity.h"
#include "catalog/settings.h"
#include "citus/pg_citus.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "kinds/kind_constraint.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_heap_swap.h"
#include "pg/pg_relation.h"
#include "pg/pg_subxact.h"
#include "query/query_backfill.h"
#include "query/query_column_change.h"
#include "query/query_estimate.h"
#include "query/query_job.h"

/* The pairs (table's index, its copy on the hidden heap), once built */
#define STATE_INDEX_COPIES	"index_copies"

/*
 * The key of the variant that moves the table (to QUERY_STATE_TABLESPACE,
 * QUERY_STATE_ACCESS_METHOD): 1
 */
#define STATE_MOVES	"moves"

/*
 * The key of the variant that changes or adds columns (ALTER COLUMN ...
 * TYPE, ADD COLUMN): 1; and its changes, as bound at submit (QueryColumnChangesBind,
 * nodeToString)
 */
#define STATE_COLUMN_CHANGES	"column_changes"
#define STATE_COLUMN_VALUES		"column_values"

/*
 * The key of a job that changes the columns of one leaf partition of the
 * partitioned table its statement names (the OID of that one): the jobs of
 * all its leaves are published together, a group of their own; and, during
 * that publication, the rows its hidden heap holds
 */
#define STATE_PARTITION_OF		"partition_of"
#define STATE_CUT_OVER_ROWS		"cut_over_rows"

#define STRATEGY_REWRITE	"table rewritten in ctid chunks, changed rows captured"
#define STRATEGY_NO_REWRITE	"runs as PostgreSQL runs it: the change rewrites no row"
#define STRATEGY_PARTITIONS	"a job for each leaf partition (its table rewritten in ctid chunks, changed rows captured), " \
	"published together"
#define STRATEGY_BLOCKING	"runs as PostgreSQL runs it, blocking: the table is not one plain table " \
	"that the user owns, or a view, rule, trigger, policy, CHECK or foreign key uses a changed column, " \
	"or an added column is not one a job adds (serial, identity, a constraint of its own)"

/*
 * Where an ALTER TABLE moves a table: its new tablespace, access method
 * (NULL: none); or the index a CLUSTER orders it by
 */
typedef struct TableMove
{
	const char *tablespace;
	const char *access_method;
	bool		missing_ok;		/* IF EXISTS */
	bool		clusters;		/* CLUSTER ... */
	const char *cluster_index;	/* ... USING this index (NULL: the one it is clustered on) */
} TableMove;

/*
 * A statement that rewrites one table: VACUUM (FULL) of one table, without
 * a column list or another option, CLUSTER of one table without an option,
 * or ALTER TABLE ... SET TABLESPACE, SET ACCESS METHOD, or both, alone
 * (*move: where to).  NULL: not one.
 */
static RangeVar *
RewrittenTable(Node *parsetree, TableMove *move)
{
	memset(move, 0, sizeof(TableMove));
	if (IsA(parsetree, ClusterStmt))
	{
		ClusterStmt *stmt = (ClusterStmt *) parsetree;

		if (stmt->params != NIL)
			return NULL;
		move->clusters = true;
		move->cluster_index = stmt->indexname;
		return stmt->relation;
	}
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
		ListCell   *lc;

		if (stmt->objtype != OBJECT_TABLE)
			return NULL;
		/* (two of a kind: PostgreSQL's error) */
		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

			if (cmd->subtype == AT_SetTableSpace && move->tablespace == NULL)
				move->tablespace = cmd->name;
			else if (cmd->subtype == AT_SetAccessMethod && move->access_method == NULL)
				move->access_method = cmd->name;
			else
				return NULL;
		}
		move->missing_ok = stmt->missing_ok;
		return stmt->relation;
	}
	return NULL;
}

/*
 * Does a subcommand change only the catalog, whatever the rows are, so that
 * it may go with a job's column changes (PostgreSQL runs it at the cut-over,
 * on the table emptied: AlterEmptiedTable)?  A column's default (not of a
 * column the statement adds: its value is the ADD COLUMN's), statistics
 * target, options, storage, compression, DROP NOT NULL; the index it is
 * clustered on; its triggers enabled or disabled; its replica identity.
 */
static bool
OnlyChangesCatalog(AlterTableCmd *cmd, List *cmds)
{
	ListCell   *lc;

	switch (cmd->subtype)
	{
		case AT_ColumnDefault:
			foreach(lc, cmds)
			{
				AlterTableCmd *other = lfirst_node(AlterTableCmd, lc);

				if (other->subtype == AT_AddColumn &&
					strcmp(castNode(ColumnDef, other->def)->colname, cmd->name) == 0)
					return false;
			}
			return true;
		case AT_SetStatistics:
		case AT_SetOptions:
		case AT_ResetOptions:
		case AT_SetStorage:
		case AT_SetCompression:
		case AT_DropNotNull:
		case AT_ClusterOn:
		case AT_DropCluster:
		case AT_EnableTrig:
		case AT_EnableAlwaysTrig:
		case AT_EnableReplicaTrig:
		case AT_DisableTrig:
		case AT_EnableTrigAll:
		case AT_DisableTrigAll:
		case AT_EnableTrigUser:
		case AT_DisableTrigUser:
		case AT_ReplicaIdentity:
			return true;
		default:
			return false;
	}
}

/*
 * ALTER TABLE t ALTER COLUMN c [SET DATA] TYPE ... or ADD [COLUMN] c ...,
 * with other subcommands only if they change only the catalog
 * (OnlyChangesCatalog): its column changes (the subcommands of those two
 * kinds); NIL if not one
 */
static List *
ColumnChanges(Node *parsetree)
{
	AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
	List	   *changes = NIL;
	ListCell   *lc;

	if (!IsA(parsetree, AlterTableStmt) || stmt->objtype != OBJECT_TABLE)
		return NIL;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_AlterColumnType || cmd->subtype == AT_AddColumn)
			changes = lappend(changes, cmd);
		else if (!OnlyChangesCatalog(cmd, stmt->cmds))
			return NIL;
	}
	return changes;
}

/* A job's column changes, as bound at submit (query_column_change.c), or NIL */
static List *
JobColumnChanges(const BgddlJob *job)
{
	if (!CatalogKindStateHas(job->kind_state, STATE_COLUMN_CHANGES))
		return NIL;
	return (List *) stringToNode(CatalogKindStateText(job->kind_state, STATE_COLUMN_VALUES));
}

/* The partitioned table whose statement a leaf partition's job runs, or InvalidOid */
static Oid
PartitionOf(const BgddlJob *job)
{
	if (!CatalogKindStateHas(job->kind_state, STATE_PARTITION_OF))
		return InvalidOid;
	return (Oid) CatalogKindStateInt(job->kind_state, STATE_PARTITION_OF);
}

/* The subcommands of a job's ALTER TABLE, all of them (its statement, parsed again) */
static List *
JobStatementCommands(const BgddlJob *job)
{
	return castNode(AlterTableStmt, linitial_node(RawStmt, raw_parser(job->command,
																	  RAW_PARSE_DEFAULT))->stmt)->cmds;
}

/* The changed columns' attribute numbers, offset by FirstLowInvalidHeapAttributeNumber */
static Bitmapset *
ChangedColumns(List *changes)
{
	Bitmapset  *columns = NULL;
	ListCell   *lc;

	foreach(lc, changes)
		columns = bms_add_member(columns, lfirst_node(TargetEntry, lc)->resno -
								 FirstLowInvalidHeapAttributeNumber);
	return columns;
}

/*
 * Does an index use a changed column (changed, as ChangedColumns)?
 * *in_expressions: in its expressions or predicate (a whole-row reference
 * uses every column), not only as a key column.
 */
static bool
IndexUsesChanged(Relation index, Bitmapset *changed, bool *in_expressions)
{
	Bitmapset  *used = NULL;
	bool		as_key = false;

	for (int i = 0; i < index->rd_index->indnatts; i++)
		as_key |= bms_is_member(index->rd_index->indkey.values[i] -
								FirstLowInvalidHeapAttributeNumber, changed);
	pull_varattnos((Node *) RelationGetIndexExpressions(index), 1, &used);
	pull_varattnos((Node *) RelationGetIndexPredicate(index), 1, &used);
	*in_expressions = bms_overlap(used, changed) ||
		bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, used);
	return as_key || *in_expressions;
}

/* The table's indexes that use a changed column: made again for the new types */
static List *
RedefinedIndexes(Relation table, List *changes)
{
	Bitmapset  *changed = ChangedColumns(changes);
	List	   *redefined = NIL;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(table))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		bool		in_expressions;

		if (IndexUsesChanged(index, changed, &in_expressions))
			redefined = lappend_oid(redefined, lfirst_oid(lc));
		index_close(index, AccessShareLock);
	}
	return redefined;
}

/* Is a constraint a primary key or a unique constraint? */
static bool
IsKeyConstraint(Oid constraint_oid)
{
	HeapTuple	tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(constraint_oid));
	char		contype;

	if (!HeapTupleIsValid(tuple))
		return false;
	contype = ((Form_pg_constraint) GETSTRUCT(tuple))->contype;
	ReleaseSysCache(tuple);
	return contype == CONSTRAINT_PRIMARY || contype == CONSTRAINT_UNIQUE;
}

/*
 * Is what depends on a changed column only what ALTER COLUMN ... TYPE makes
 * again by itself: the table's indexes and their constraints (primary key,
 * unique), the column's own default, the sequence of a serial column,
 * statistics objects?  A view, rule, trigger, policy, CHECK or foreign key
 * constraint, generated column or publication: the statement runs as
 * PostgreSQL runs it (its error, or its rewrite and checks, blocking).
 */
static bool
OnlyRemadeDependents(Oid relid, AttrNumber attnum)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData keys[3];
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		only_remade = true;

	ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[2], Anum_pg_depend_refobjsubid, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum((int32) attnum));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 3, keys);
	while (only_remade && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend dependency = (Form_pg_depend) GETSTRUCT(tuple);
		char		relkind;

		switch (dependency->classid)
		{
			case RelationRelationId:
				relkind = get_rel_relkind(dependency->objid);
				only_remade = relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX ||
					relkind == RELKIND_SEQUENCE;
				break;
			case ConstraintRelationId:
				only_remade = IsKeyConstraint(dependency->objid);
				break;
			case AttrDefaultRelationId:
				only_remade = GetAttrDefaultColumnAddress(dependency->objid).objectSubId == attnum;
				break;
			case StatisticExtRelationId:
				break;
			default:
				only_remade = false;
		}
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return only_remade;
}

/*
 * Why the new values of a unique index's changed column might not stay
 * distinct (the job's copies of the table's indexes check no uniqueness:
 * QueryColumnChangeKeepsDistinct), or NULL
 */
static const char *
UniqueKeysChangeReason(Relation table, List *changes)
{
	Bitmapset  *changed = ChangedColumns(changes);
	const char *reason = NULL;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(table))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		bool		in_expressions;

		if (index->rd_index->indisunique && reason == NULL &&
			IndexUsesChanged(index, changed, &in_expressions))
		{
			if (in_expressions)
				reason = psprintf("Unique index \"%s\" computes its keys from a changed column: a job cannot tell that they stay distinct.",
								  RelationGetRelationName(index));
			for (int i = 0; reason == NULL && i < index->rd_index->indnkeyatts; i++)
			{
				AttrNumber	attnum = index->rd_index->indkey.values[i];

				if (bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, changed) &&
					!QueryColumnChangeKeepsDistinct((Node *) QueryColumnChangedValue(changes, attnum),
													attnum))
					reason = psprintf("Unique index \"%s\" has column \"%s\", whose new values might not stay distinct (a job knows that they do only for an integer made wider).",
									  RelationGetRelationName(index),
									  get_attname(RelationGetRelid(table), attnum, false));
			}
		}
		index_close(index, AccessShareLock);
	}
	return reason;
}

/* May the current user vacuum the table (vacuum.c's check, without its WARNING)? */
static bool
MayVacuum(Oid relid)
{
	return PgRelationOwnerCheck(relid, GetUserId()) ||
		(PgDatabaseOwnerCheck(MyDatabaseId, GetUserId()) && !IsSharedRelation(relid));
}

/*
 * Does a table access method store rows as heap does (its handler is
 * heap's), which the job needs of the table it reads (in block ranges,
 * following its rows by tuple id) and of the one it writes (the catch-up
 * deletes rows by tuple id)?
 */
static bool
StoresAsHeap(Oid access_method_oid)
{
	HeapTuple	tuple = SearchSysCache1(AMOID, ObjectIdGetDatum(access_method_oid));
	bool		heap;

	if (!HeapTupleIsValid(tuple))
		return false;
	heap = ((Form_pg_am) GETSTRUCT(tuple))->amhandler == F_HEAP_TABLEAM_HANDLER;
	ReleaseSysCache(tuple);
	return heap;
}

/*
 * Why a job cannot run an ALTER TABLE that rewrites the table, or NULL: an
 * event trigger on table_rewrite (it may refuse the rewrite, or log it)
 * fires for PostgreSQL's rewrite only
 */
static const char *
RewriteEventReason(void)
{
	if (EventCacheLookup(EVT_TableRewrite) != NIL)
		return "An event trigger fires on table_rewrite, which only PostgreSQL's own rewrite fires.";
	return NULL;
}

/* Why a job cannot rewrite this table, or NULL */
static const char *
InSessionReason(Relation table)
{
	if (!StoresAsHeap(table->rd_rel->relam))
		return "The table's access method does not store rows as heap does, as the job needs to read them.";
	if (table->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		return "The table is temporary: it belongs to this session.";
	if (IsCatalogRelation(table) || IsToastNamespace(RelationGetNamespace(table)))
		return "The table is a system catalog.";
	if (PgCitusTable(RelationGetRelid(table)))
		return PgCitusInSessionReason(RelationGetRelid(table));
	if (table->rd_rel->relrowsecurity && table->rd_rel->relforcerowsecurity)
		return "The table forces row level security on its owner, as whom the job would read it.";
	if (IndexBuildAnyExclusion(RelationGetIndexList(table)))
		return "An index is an exclusion constraint's, which the job cannot copy.";
	return NULL;
}

/*
 * The index a CLUSTER of the table orders it by: the one named, in the
 * table's schema, or the one it is clustered on (cluster.c's lookup);
 * InvalidOid if there is none
 */
static Oid
ClusterIndex(Relation table, const char *name)
{
	ListCell   *lc;

	if (name != NULL)
		return get_relname_relid(name, RelationGetNamespace(table));
	foreach(lc, RelationGetIndexList(table))
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		bool		clustered;

		if (!HeapTupleIsValid(tuple))
			continue;
		clustered = ((Form_pg_index) GETSTRUCT(tuple))->indisclustered;
		ReleaseSysCache(tuple);
		if (clustered)
			return lfirst_oid(lc);
	}
	return InvalidOid;
}

/*
 * May a job copy the table in the order of the index a CLUSTER names
 * (QueryIndexGivesOrder)?  False where PostgreSQL refuses the index (no
 * such index of the table, not valid, partial, of an access method that
 * does not cluster): its error.  True with *reason set (unless set before)
 * where PostgreSQL clusters on it and a job cannot.
 */
static bool
ClusterOrderReadable(Relation table, const char *name, const char **reason)
{
	Oid			index_oid = ClusterIndex(table, name);
	Relation	index;
	bool		clusterable;

	if (!OidIsValid(index_oid) || get_rel_relkind(index_oid) != RELKIND_INDEX)
		return false;
	index = index_open(index_oid, AccessShareLock);
	clusterable = index->rd_index->indrelid == RelationGetRelid(table) &&
		index->rd_indam->amclusterable && index->rd_index->indisvalid &&
		heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL);
	if (clusterable && *reason == NULL && !QueryIndexGivesOrder(table, index))
		*reason = "The index's keys are not all columns of their type's default btree operator class and collation, all ascending or all descending, and declared NOT NULL unless there is one, in whose order the job copies the table a chunk at a time.";
	index_close(index, AccessShareLock);
	return clusterable;
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
	TableMove	move;
	RangeVar   *rv = RewrittenTable(parsetree, &move);
	Oid			relid;
	Oid			access_method_oid;
	Relation	table;

	if (rv == NULL || nodeTag(parsetree) != statement)
		return KIND_NOT_ACCEPTED;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION ||
		(statement == T_VacuumStmt && !MayVacuum(relid)) ||
		(statement == T_ClusterStmt && !PgRelationOwnerCheck(relid, GetUserId())))
		return KIND_NOT_ACCEPTED;
	table = try_relation_open(relid, AccessShareLock);
	if (table == NULL)
		return KIND_NOT_ACCEPTED;
	*reason = InSessionReason(table);
	if (move.clusters && !ClusterOrderReadable(table, move.cluster_index, reason))
	{
		relation_close(table, AccessShareLock);
		return KIND_NOT_ACCEPTED;
	}
	relation_close(table, AccessShareLock);
	/* (an access method that is not there: PostgreSQL's error) */
	access_method_oid = move.access_method ? get_table_am_oid(move.access_method, true) : InvalidOid;
	if (*reason == NULL && OidIsValid(access_method_oid) && !StoresAsHeap(access_method_oid))
		*reason = "The new access method does not store rows as heap does, as the job needs to write them.";
	if (*reason == NULL && move.access_method != NULL)
		*reason = RewriteEventReason();
	return *reason != NULL ? KIND_IN_SESSION : KIND_ACCEPTED;
}

static KindAcceptance
ClusterAccepts(Node *parsetree, const char **reason)
{
	return RewriteAccepts(parsetree, T_ClusterStmt, reason);
}

/*
 * VACUUM FULL or CLUSTER ... USING of a partitioned table, which PostgreSQL
 * runs on each leaf partition in a transaction of its own (the leaf's own
 * index, the partition of the one named, for CLUSTER): the statement of
 * each leaf, in the order of find_all_inheritors.  NIL for anything else,
 * or a CLUSTER whose index is not the table's partitioned index (its
 * error), or one in a transaction block (PostgreSQL's error).
 */
static List *
RewritePartitionStatements(Node *parsetree, bool top_level)
{
	TableMove	move;
	RangeVar   *rv = RewrittenTable(parsetree, &move);
	Oid			relid;
	Oid			index_oid = InvalidOid;
	List	   *statements = NIL;
	ListCell   *lc;

	if (rv == NULL || (!IsA(parsetree, VacuumStmt) && !move.clusters))
		return NIL;
	/*
	 * (no lock: each partition's statement is validated, and locks, as its
	 * own; a lock here would be held while the session waits for its jobs)
	 */
	relid = RangeVarGetRelid(rv, NoLock, true);
	/* (not the user's to vacuum or cluster: PostgreSQL's WARNING or error) */
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE ||
		!(move.clusters ? PgRelationOwnerCheck(relid, GetUserId()) : MayVacuum(relid)))
		return NIL;
	if (move.clusters)
	{
		/* (in a transaction block: PostgreSQL's error, after its others) */
		if (move.cluster_index == NULL || !top_level || IsTransactionBlock() ||
			IsSubTransaction())
			return NIL;
		index_oid = get_relname_relid(move.cluster_index, get_rel_namespace(relid));
		if (!OidIsValid(index_oid) || get_rel_relkind(index_oid) != RELKIND_PARTITIONED_INDEX ||
			IndexGetRelation(index_oid, false) != relid)
			return NIL;
	}
	foreach(lc, find_all_inheritors(move.clusters ? index_oid : relid, NoLock, NULL))
	{
		Oid			leaf = lfirst_oid(lc);
		Oid			table = move.clusters ? IndexGetRelation(leaf, true) : leaf;
		char	   *table_name;

		/* (a foreign table's WARNING, and the rest: as PostgreSQL runs it) */
		if (get_rel_relkind(leaf) == RELKIND_FOREIGN_TABLE)
			return NIL;
		if (get_rel_relkind(leaf) != (move.clusters ? RELKIND_INDEX : RELKIND_RELATION))
			continue;
		table_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(table)),
												get_rel_name(table));
		statements = lappend(statements, move.clusters ?
							 psprintf("CLUSTER %s USING %s", table_name,
									  quote_identifier(get_rel_name(leaf))) :
							 psprintf("VACUUM (FULL) %s", table_name));
	}
	return statements;
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

/* The index a CLUSTER orders the table by (ClusterIndex), with CLUSTER's checks and errors */
static Oid
ClusterIndexChecked(Relation table, RangeVar *rv, const char *name)
{
	Oid			index_oid = ClusterIndex(table, name);

	if (!OidIsValid(index_oid) && name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("there is no previously clustered index for table \"%s\"", rv->relname)));
	if (!OidIsValid(index_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("index \"%s\" for table \"%s\" does not exist", name, rv->relname)));
	check_index_is_clusterable(table, index_oid, AccessShareLock);
	return index_oid;
}

/*
 * CLUSTER's checks of its index, in its order and with its errors
 * (cluster.c): there is one, it can order the table
 * (check_index_is_clusterable); the job copies the table in its order
 * (QUERY_STATE_ORDER_INDEX).  A table that is no longer a plain one runs
 * as PostgreSQL runs it.
 */
static void
ClusterValidateIndex(KindSubmit *submit, Relation table, RangeVar *rv, const char *name)
{
	Oid			index_oid;

	if (table->rd_rel->relkind != RELKIND_RELATION)
	{
		submit->declined = true;
		return;
	}
	index_oid = ClusterIndexChecked(table, rv, name);
	CatalogKindStateSetInt(&submit->kind_state, QUERY_STATE_ORDER_INDEX, index_oid);
	submit->strategy = QueryJobOrderStrategy(index_oid);
	/* The session's later DROP INDEX (or ALTER INDEX) of it waits for the job */
	submit->sources = list_make1_oid(index_oid);
	submit->source_effects = REL_REDEFINES;
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
	TableMove	move;
	RangeVar   *rv = RewrittenTable(statement, &move);
	Oid			relid;
	Oid			tablespace_oid;
	Oid			access_method_oid;
	Relation	table;

	/* The session's later statements wait for it if they redefine or drop the table */
	submit->target_effects = REL_REDEFINES | REL_DROPS;
	submit->strategy = pstrdup(STRATEGY_REWRITE);
	if (move.clusters)
	{
		relid = RangeVarGetRelidExtended(rv, AccessShareLock, 0, RangeVarCallbackOwnsTable, NULL);
		table = relation_open(relid, NoLock);
		ClusterValidateIndex(submit, table, rv, move.cluster_index);
		relation_close(table, NoLock);
		return;
	}
	if (IsA(statement, VacuumStmt))
	{
		PreventInTransactionBlock(submit->context == PROCESS_UTILITY_TOPLEVEL, "VACUUM");
		relid = RangeVarGetRelid(rv, AccessShareLock, false);
		/* (gone and made again since accepts: whatever it is now, as PostgreSQL runs it) */
		submit->declined = get_rel_relkind(relid) != RELKIND_RELATION || !MayVacuum(relid);
		return;
	}
	relid = RangeVarGetRelidExtended(rv, AccessShareLock, move.missing_ok ? RVR_MISSING_OK : 0,
									 RangeVarCallbackOwnsTable, NULL);
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
	{
		submit->declined = true;
		return;
	}
	table = relation_open(relid, NoLock);
	/* What moves; a move to where the table is moves nothing (PostgreSQL's order) */
	submit->declined = true;
	CatalogKindStateSetInt(&submit->kind_state, STATE_MOVES, 1);
	if (move.access_method != NULL)
	{
		access_method_oid = get_table_am_oid(move.access_method, false);
		if (access_method_oid != table->rd_rel->relam)
		{
			submit->declined = false;
			CatalogKindStateSetInt(&submit->kind_state, QUERY_STATE_ACCESS_METHOD, access_method_oid);
		}
	}
	if (move.tablespace != NULL)
	{
		tablespace_oid = get_tablespace_oid(move.tablespace, false);
		if (tablespace_oid != MyDatabaseTableSpace &&
			pg_tablespace_aclcheck(tablespace_oid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLESPACE, move.tablespace);
		if (CheckRelationTableSpaceMove(table, tablespace_oid))
			submit->declined = false;
		CatalogKindStateSetInt(&submit->kind_state, QUERY_STATE_TABLESPACE,
							   tablespace_oid == MyDatabaseTableSpace ? InvalidOid : tablespace_oid);
	}
	relation_close(table, NoLock);
}

/* The table of a rewrite's statement (RewrittenTable, or an ALTER COLUMN ... TYPE's) */
static RangeVar *
TableOfStatement(Node *parsetree)
{
	TableMove	move;

	if (ColumnChanges(parsetree) != NIL)
		return ((AlterTableStmt *) parsetree)->relation;
	return RewrittenTable(parsetree, &move);
}

static void
RewriteReserve(KindSubmit *submit)
{
	Oid			relid = RangeVarGetRelid(TableOfStatement(submit->pstmt->utilityStmt),
										 AccessShareLock, false);

	submit->target_oid = relid;
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 get_rel_name(relid));
}

/*
 * The table's rows (with the job's column changes) go to the hidden heap
 * (made now, the first time); read as its owner
 */
static void
RewriteStart(JobRun *run)
{
	QueryJobStartReplacing(run, "rewrite", JobColumnChanges(&run->job));
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
	PgHeapBuildIndexCopies(table, hidden, NIL,
						   RedefinedIndexes(table, QueryRunOf(run)->column_changes),
						   false, true, &old_indexes, &new_indexes);
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
 * PostgreSQL's own ALTER TABLE of the table (its subcommands), as role,
 * on the table emptied first (PgRelationTruncate; a partitioned table: each
 * of its leaf partitions, locked first as a job locks what others use): it
 * makes the table's catalog exactly what the blocking statement makes of it
 * (the columns, their defaults, the indexes and constraints it makes again,
 * statistics objects), with every check and error of its own, in a time
 * independent of the table's size.  Caller holds ACCESS EXCLUSIVE on the
 * table, in a transaction whose end undoes it or gives the table other
 * storage.
 */
static void
AlterEmptiedTable(Oid relid, List *cmds, Oid role, const char *query_string)
{
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Relation	table;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		JobStepLockRelation(lfirst_oid(lc), AccessExclusiveLock, background_ddl_lock_timeout_ms);
		table = table_open(lfirst_oid(lc), NoLock);
		PgRelationTruncate(table);
		table_close(table, NoLock);
	}
	ConstraintRunAlterTableCommands(relid, role, copyObject(cmds), AccessExclusiveLock,
									query_string);
}

/*
 * What the job checked at submit, checked again under the cut-over's lock:
 * a view, constraint or trigger made since on a changed column (which the
 * ALTER TABLE would check on no rows), or a unique index whose keys might
 * not stay distinct (whose copy checks none), fails the job; the table is
 * left as it was.  So does a leaf partition that is no longer one of the
 * partitioned table whose statement it runs.
 */
static void
CheckStillAlterable(JobRun *run)
{
	List	   *changes = QueryRunOf(run)->column_changes;
	Relation	table = table_open(run->job.target_oid, NoLock);
	const char *reason = UniqueKeysChangeReason(table, changes);
	Oid			partition_of = PartitionOf(&run->job);
	ListCell   *lc;

	foreach(lc, changes)
	{
		TargetEntry *change = lfirst_node(TargetEntry, lc);

		if (reason == NULL && !OnlyRemadeDependents(RelationGetRelid(table), change->resno))
			reason = psprintf("Something other than the table's indexes, keys, defaults and statistics now depends on column \"%s\".",
							  get_attname(RelationGetRelid(table), change->resno, false));
	}
	if (reason == NULL && OidIsValid(partition_of) &&
		!list_member_oid(get_partition_ancestors(RelationGetRelid(table)), partition_of))
		reason = psprintf("It is no longer a partition of \"%s\".", get_rel_name(partition_of));
	if (reason != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" changed while background DDL job %lld changed its columns",
						RelationGetRelationName(table), (long long) run->job.id),
				 errdetail("%s", reason),
				 errhint("Run the statement again: it runs as PostgreSQL runs it.")));
	table_close(table, NoLock);
}

/*
 * The copies of the table's indexes that can be their storage: for each
 * index of the table, a copy defined alike (PgIndexSameDefinition), each
 * copy at most once, as two parallel lists.  An index made since the copies
 * were built, or made again by the ALTER otherwise than its copy, has none;
 * the copy of an index dropped since goes with the hidden heap.
 */
static void
PairIndexCopies(Relation table, List *copies, List **old_indexes, List **new_indexes)
{
	ListCell   *index_cell;
	ListCell   *copy_cell;

	*old_indexes = NIL;
	*new_indexes = NIL;
	foreach(index_cell, RelationGetIndexList(table))
	{
		foreach(copy_cell, copies)
		{
			if (list_member_oid(*new_indexes, lfirst_oid(copy_cell)) ||
				!PgIndexSameDefinition(lfirst_oid(index_cell), lfirst_oid(copy_cell)))
				continue;
			*old_indexes = lappend_oid(*old_indexes, lfirst_oid(index_cell));
			*new_indexes = lappend_oid(*new_indexes, lfirst_oid(copy_cell));
			break;
		}
	}
}

/*
 * The table's catalog now the statement's (if it changes columns), and the
 * hidden heap holding exactly its rows: pair each index of the table with
 * its copy (PairIndexCopies), copy the others, record the new storage's
 * size as VACUUM FULL does, and swap the storage.
 */
static void
SwapStorage(JobRun *run, int64 rows)
{
	QueryRun   *q = QueryRunOf(run);
	bool		moves = CatalogKindStateHas(run->job.kind_state, STATE_MOVES);
	Relation	table = table_open(run->job.target_oid, NoLock);
	Relation	hidden = table_open(q->content_oid, AccessExclusiveLock);
	List	   *copied_old;
	List	   *copied_new;
	List	   *old_indexes;
	List	   *new_indexes;
	List	   *more_old;
	List	   *more_new;

	if (!PgHeapSameRowShape(RelationGetDescr(table), RelationGetDescr(hidden)))
		elog(ERROR, "table \"%s\" and its new storage differ in their columns",
			 RelationGetRelationName(table));
	IndexCopies(&run->job, &copied_old, &copied_new);
	PairIndexCopies(table, copied_new, &old_indexes, &new_indexes);
	PgHeapBuildIndexCopies(table, hidden, old_indexes, NIL, false, true, &more_old, &more_new);
	old_indexes = list_concat(old_indexes, more_old);
	new_indexes = list_concat(new_indexes, more_new);
	PgHeapRecordSize(hidden, (double) rows);
	/* (an index dropped since: the table stays clustered on none, or another) */
	if (OidIsValid(q->order_index) && list_member_oid(RelationGetIndexList(table), q->order_index))
		mark_index_clustered(table, q->order_index, true);
	table_close(hidden, NoLock);
	table_close(table, NoLock);

	JobRunRecordPhase(run, JOB_PHASE_CUTTING_OVER);
	PgHeapSwap(run->job.target_oid, q->content_oid, old_indexes, new_indexes,
			   moves || q->column_changes != NIL ? "ALTER TABLE" :
			   OidIsValid(q->order_index) ? "CLUSTER" : "VACUUM",
			   moves);
	JobRunSucceeded(run, run->job.target_oid, true, rows);
}

/*
 * In the cut-over transaction (query_job.c), the table locked ACCESS
 * EXCLUSIVE before its snapshot and the hidden heap now holding exactly its
 * rows: drop the capture triggers; for column changes, make them in the
 * table's catalog (AlterEmptiedTable), and swap the storage (SwapStorage).
 * A leaf partition's job only empties its partition here, once its rows
 * are all in the hidden heap: the statement runs on the partitioned table
 * once the group's every job has done so (RewriteCutOverFinish).
 */
static void
RewritePublish(JobRun *run, int64 rows)
{
	/* Its capture triggers go now, under the lock that a DROP TRIGGER takes */
	CaptureRemove(run->job.id, run->job.target_oid);

	if (QueryRunOf(run)->column_changes != NIL)
	{
		CheckStillAlterable(run);
		if (OidIsValid(PartitionOf(&run->job)))
		{
			Relation	table = table_open(run->job.target_oid, NoLock);

			PgRelationTruncate(table);
			table_close(table, NoLock);
			JobRunSetStateInt(run, STATE_CUT_OVER_ROWS, rows);
			return;
		}
		AlterEmptiedTable(run->job.target_oid, JobStatementCommands(&run->job),
						  run->job.identity.owner_oid, run->job.command);
	}
	SwapStorage(run, rows);
}

/*
 * Once every job of its group has published (job_group.c), a leaf
 * partition's job: the first to come runs the statement on the partitioned
 * table, all of whose leaves the jobs have emptied (a partition made since
 * has its rows rewritten by it), which makes the whole tree's catalog the
 * blocking statement's; the others find their partition changed.  Then
 * each swaps its partition's storage.
 */
static void
RewriteCutOverFinish(JobRun *run)
{
	Oid			partition_of = PartitionOf(&run->job);
	Relation	table;
	Relation	hidden;
	bool		changed;

	if (!OidIsValid(partition_of))
		return;
	table = table_open(run->job.target_oid, NoLock);
	hidden = table_open(QueryRunOf(run)->content_oid, AccessExclusiveLock);
	changed = PgHeapSameRowShape(RelationGetDescr(table), RelationGetDescr(hidden));
	table_close(hidden, NoLock);
	table_close(table, NoLock);
	if (!changed)
		ConstraintRunAlterTableCommands(partition_of, run->job.identity.owner_oid,
										JobStatementCommands(&run->job), AccessExclusiveLock,
										run->job.command);
	SwapStorage(run, CatalogKindStateInt(run->job.kind_state, STATE_CUT_OVER_ROWS));
}

/*
 * The cut-over's locks: a leaf partition's job locks the partitioned
 * tables above it first, from the top, as PostgreSQL's ALTER TABLE of the
 * one its statement names does (and the statement runs on it at the end)
 */
static void
RewriteCutOverLock(JobRun *run)
{
	List	   *ancestors;

	if (OidIsValid(PartitionOf(&run->job)))
	{
		ancestors = get_partition_ancestors(run->job.target_oid);
		for (int i = list_length(ancestors) - 1; i >= 0; i--)
			JobStepLockRelation(list_nth_oid(ancestors, i), AccessExclusiveLock,
								background_ddl_lock_timeout_ms);
	}
	QueryJobCutOverLock(run);
}

/* Is a type name one of the serial types' (a column of one owns a sequence made for it)? */
static bool
IsSerialType(TypeName *type_name)
{
	const char *name;

	if (list_length(type_name->names) != 1 || type_name->pct_type)
		return false;
	name = strVal(linitial(type_name->names));
	return strcmp(name, "smallserial") == 0 || strcmp(name, "serial2") == 0 ||
		strcmp(name, "serial") == 0 || strcmp(name, "serial4") == 0 ||
		strcmp(name, "bigserial") == 0 || strcmp(name, "serial8") == 0;
}

/*
 * May a job add this column: a new one, of no serial type, with nothing but
 * a default or generation expression and NOT NULL or NULL (no identity, key,
 * foreign key or check), and if generated, in a statement that changes no
 * column's type (the expression reads the columns as they are)?
 */
static bool
JobMayAdd(Oid relid, ColumnDef *def, List *cmds)
{
	ListCell   *lc;
	ListCell   *cmd_cell;

	if (get_attnum(relid, def->colname) != InvalidAttrNumber || IsSerialType(def->typeName))
		return false;
	foreach(lc, def->constraints)
	{
		switch (lfirst_node(Constraint, lc)->contype)
		{
			case CONSTR_DEFAULT:
			case CONSTR_NOTNULL:
			case CONSTR_NULL:
				break;
			case CONSTR_GENERATED:
				foreach(cmd_cell, cmds)
				{
					if (lfirst_node(AlterTableCmd, cmd_cell)->subtype == AT_AlterColumnType)
						return false;
				}
				break;
			default:
				return false;
		}
	}
	return true;
}

/*
 * May a job change these columns (the subcommands changes) of this table:
 * a plain table the user owns, not typed, outside any inheritance tree, or
 * a partitioned table or a leaf partition of the partitioned table the
 * statement names (in_tree: PostgreSQL's recursion changes them all), where
 * only what the statement makes again depends on the changed columns, and
 * each added column is one a job may add (JobMayAdd)?  In the session, with
 * the reason, a table whose rewrite a job cannot do.
 */
static KindAcceptance
ColumnsAcceptance(Oid relid, List *changes, bool in_tree, const char **reason)
{
	char		relkind = get_rel_relkind(relid);
	Relation	table;
	KindAcceptance acceptance = KIND_ACCEPTED;
	ListCell   *lc;

	if ((relkind != RELKIND_RELATION && !(in_tree && relkind == RELKIND_PARTITIONED_TABLE)) ||
		!PgRelationOwnerCheck(relid, GetUserId()))
		return KIND_NOT_ACCEPTED;
	table = try_relation_open(relid, AccessShareLock);
	if (table == NULL)
		return KIND_NOT_ACCEPTED;
	if (OidIsValid(table->rd_rel->reloftype) ||
		(!in_tree && (table->rd_rel->relispartition || table->rd_rel->relhassubclass ||
					  has_superclass(relid))))
		acceptance = KIND_NOT_ACCEPTED;
	foreach(lc, changes)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		AttrNumber	attnum;

		if (cmd->subtype == AT_AddColumn)
		{
			if (!JobMayAdd(relid, castNode(ColumnDef, cmd->def), changes))
				acceptance = KIND_NOT_ACCEPTED;
			continue;
		}
		attnum = get_attnum(relid, cmd->name);
		if (attnum <= 0 || !OnlyRemadeDependents(relid, attnum))
			acceptance = KIND_NOT_ACCEPTED;
	}
	if (acceptance == KIND_ACCEPTED && relkind == RELKIND_RELATION &&
		(*reason = InSessionReason(table)) != NULL)
		acceptance = KIND_IN_SESSION;
	relation_close(table, AccessShareLock);
	return acceptance;
}

/*
 * ALTER COLUMN ... TYPE and ADD COLUMN of one plain table, or of a
 * partitioned table with at least one leaf partition, each of whose tables
 * a job may change (ColumnsAcceptance; a foreign partition: PostgreSQL's
 * recursion runs it).  Whether PostgreSQL would rewrite the table at all is
 * known at validate.
 */
static KindAcceptance
AlterColumnsAccepts(Node *parsetree, const char **reason)
{
	List	   *changes = ColumnChanges(parsetree);
	Oid			relid;
	KindAcceptance acceptance = KIND_ACCEPTED;
	bool		has_leaf = false;
	ListCell   *lc;

	if (changes == NIL)
		return KIND_NOT_ACCEPTED;
	relid = RangeVarGetRelid(((AlterTableStmt *) parsetree)->relation, NoLock, true);
	if (!OidIsValid(relid))
		return KIND_NOT_ACCEPTED;
	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		acceptance = ColumnsAcceptance(relid, changes, false, reason);
	else if (!((AlterTableStmt *) parsetree)->relation->inh)
		return KIND_NOT_ACCEPTED;	/* ONLY: PostgreSQL's error */
	else
	{
		foreach(lc, find_all_inheritors(relid, NoLock, NULL))
		{
			const char *member_reason = NULL;

			switch (ColumnsAcceptance(lfirst_oid(lc), changes, true, &member_reason))
			{
				case KIND_NOT_ACCEPTED:
					return KIND_NOT_ACCEPTED;
				case KIND_IN_SESSION:
					if (acceptance == KIND_ACCEPTED)
						*reason = member_reason;
					acceptance = KIND_IN_SESSION;
					break;
				case KIND_ACCEPTED:
					break;
			}
			has_leaf |= get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION;
		}
		if (!has_leaf)
			return KIND_NOT_ACCEPTED;
	}
	if (acceptance == KIND_ACCEPTED && (*reason = RewriteEventReason()) != NULL)
		acceptance = KIND_IN_SESSION;
	return acceptance;
}

/* What the submit's rolled-back work reads and finds */
typedef struct AlterColumnsDryRun
{
	AlterTableStmt *stmt;
	const char *query_string;
	Oid			relid;			/* the table; InvalidOid: none, or not a plain table */
	List	   *changes;		/* the statement bound (QueryColumnChangesBind) */
	bool		rewrites;		/* PostgreSQL would rewrite the table */
	const char *unique_reason;	/* UniqueKeysChangeReason */
} AlterColumnsDryRun;

/*
 * The statement itself, as the user, on the table emptied
 * (AlterEmptiedTable), under its ACCESS EXCLUSIVE lock taken as a job takes
 * a lock others use, after PostgreSQL's own look-up of the table (IF
 * EXISTS, owner); the subtransaction's rollback releases both
 */
static void
RunAlterColumnsRolledBack(void *arg)
{
	AlterColumnsDryRun *dry_run = arg;

	dry_run->relid = RangeVarGetRelidExtended(dry_run->stmt->relation, AccessShareLock,
											  dry_run->stmt->missing_ok ? RVR_MISSING_OK : 0,
											  RangeVarCallbackOwnsTable, NULL);
	if (!OidIsValid(dry_run->relid) || (get_rel_relkind(dry_run->relid) != RELKIND_RELATION &&
										 get_rel_relkind(dry_run->relid) != RELKIND_PARTITIONED_TABLE))
	{
		dry_run->relid = InvalidOid;
		return;
	}
	JobStepLockRelation(dry_run->relid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	AlterEmptiedTable(dry_run->relid, dry_run->stmt->cmds, GetUserId(), dry_run->query_string);
}

/* The statement bound against the table as it is, under a lock the rollback releases */
static void
BindAlterColumnsRolledBack(void *arg)
{
	AlterColumnsDryRun *dry_run = arg;
	Relation	table = relation_open(dry_run->relid, AccessShareLock);
	List	   *cmds = ColumnChanges((Node *) dry_run->stmt);

	dry_run->changes = QueryColumnChangesBind(table, cmds);
	dry_run->rewrites = QueryColumnChangesRewrite(cmds, dry_run->changes);
	if (dry_run->rewrites)
		dry_run->unique_reason = UniqueKeysChangeReason(table, dry_run->changes);
	relation_close(table, AccessShareLock);
}

/*
 * The changes bound against one table (the dry run's relid: the table, or
 * a leaf partition), recorded in *kind_state; false if it runs as
 * PostgreSQL runs it: PostgreSQL would not rewrite the table (a
 * binary-coercible change, a constant default), or, with a NOTICE, a
 * unique index's keys might not stay distinct
 */
static bool
BindAlterColumns(AlterColumnsDryRun *dry_run, Jsonb **kind_state)
{
	PgRunRolledBack(BindAlterColumnsRolledBack, dry_run);
	if (dry_run->rewrites && dry_run->unique_reason != NULL)
		KindNoticeInSession(dry_run->unique_reason);
	CatalogKindStateSetInt(kind_state, STATE_COLUMN_CHANGES, 1);
	CatalogKindStateSetText(kind_state, STATE_COLUMN_VALUES, nodeToString(dry_run->changes));
	return dry_run->rewrites && dry_run->unique_reason == NULL;
}

/*
 * The blocking statement's checks and errors, all of them: the statement
 * itself, run by PostgreSQL on the table emptied, rolled back
 * (RunAlterColumnsRolledBack); then the changes bound (BindAlterColumns).
 * A partitioned table's statement is a job for each of its leaf
 * partitions, the changes bound against each (a partition may number its
 * columns otherwise), published together, as a group named after the
 * statement and the table; if one of them would run as PostgreSQL runs
 * it, the statement does.  So does a partitioned table's statement in a
 * transaction block (or a function), which could use the partitions before
 * the group is published.  Every lock taken here is released: a statement
 * that runs as PostgreSQL runs it first waits for the session's jobs on
 * the table (session_order.c), whose cut-over would wait for such a lock.
 */
static void
AlterColumnsValidate(KindSubmit *submit)
{
	AlterColumnsDryRun dry_run = {.stmt = castNode(AlterTableStmt, submit->pstmt->utilityStmt),
	.query_string = submit->query_string};
	Oid			relid = RangeVarGetRelid(dry_run.stmt->relation, NoLock, true);
	ListCell   *lc;

	/* The session's later statements that use the table see its new columns */
	submit->target_effects = REL_ANY;
	submit->changes_columns = true;
	submit->strategy = pstrdup(STRATEGY_REWRITE);
	if (OidIsValid(relid) && get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE &&
		IsInTransactionBlock(submit->context == PROCESS_UTILITY_TOPLEVEL))
	{
		KindNoticeInSession("The table is partitioned and the statement is in a transaction block: its partitions' jobs, published together, could not be published before the transaction uses them.");
		submit->declined = true;
		return;
	}
	PgRunRolledBack(RunAlterColumnsRolledBack, &dry_run);
	if (!OidIsValid(dry_run.relid))
	{
		submit->declined = true;
		return;
	}
	relid = dry_run.relid;
	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
	{
		submit->declined = !BindAlterColumns(&dry_run, &submit->kind_state);
		return;
	}
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Jsonb	   *leaf_state = NULL;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		dry_run.relid = lfirst_oid(lc);
		if (!BindAlterColumns(&dry_run, &leaf_state))
		{
			submit->declined = true;
			return;
		}
		CatalogKindStateSetInt(&leaf_state, STATE_PARTITION_OF, relid);
		submit->leaves = lappend_oid(submit->leaves, dry_run.relid);
		submit->leaf_states = lappend(submit->leaf_states, leaf_state);
	}
	submit->declined = submit->leaves == NIL;
	submit->group_name = psprintf("ALTER TABLE %s",
								  quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
															 get_rel_name(relid)));
}

static JobStepResult
RewriteCutOver(JobRun *run)
{
	return QueryJobCutOver(run, RewritePublish);
}

static JobStepResult
RewriteCutOverPublish(JobRun *run)
{
	return QueryJobCutOverPublish(run, RewritePublish);
}

/*
 * In the submitting transaction, which uses the table before it has
 * committed (a job submitted with submit_ddl): the rewrite here, as VACUUM
 * FULL would have done it, under its lock
 */
static Oid
RewriteBuildHere(const BgddlJob *job)
{
	return QueryJobBuildHereReplacing(job, "rewrite", AccessExclusiveLock,
									  JobColumnChanges(job), RewritePublish);
}

/* The strategy of a CLUSTER as a job (CLUSTER's errors for its index) */
static char *
ClusterStrategy(ClusterStmt *stmt)
{
	Relation	table = table_openrv(stmt->relation, AccessShareLock);
	char	   *strategy = QueryJobOrderStrategy(ClusterIndexChecked(table, stmt->relation,
																	 stmt->indexname));

	table_close(table, AccessShareLock);
	return strategy;
}

/*
 * explain_ddl: VACUUM FULL or CLUSTER of one table, ALTER TABLE ... SET TABLESPACE,
 * ALTER COLUMN ... TYPE, ADD COLUMN (a job if PostgreSQL would rewrite the
 * table)
 */
static const char *
RewriteExplain(Node *raw_statement, const char *query_string)
{
	const char *reason = NULL;
	List	   *changes;
	Relation	table;
	bool		rewrites;
	bool		partitioned;

	switch (RewriteAccepts(raw_statement, nodeTag(raw_statement), &reason))
	{
		case KIND_ACCEPTED:
			return IsA(raw_statement, ClusterStmt) ?
				ClusterStrategy((ClusterStmt *) raw_statement) : STRATEGY_REWRITE;
		case KIND_IN_SESSION:
			return psprintf("runs as PostgreSQL runs it, blocking: %s", reason);
		case KIND_NOT_ACCEPTED:
			break;
	}
	if ((changes = ColumnChanges(raw_statement)) == NIL)
		return NULL;
	switch (AlterColumnsAccepts(raw_statement, &reason))
	{
		case KIND_ACCEPTED:
			break;
		case KIND_IN_SESSION:
			return psprintf("runs as PostgreSQL runs it, blocking: %s", reason);
		case KIND_NOT_ACCEPTED:
			return STRATEGY_BLOCKING;
	}
	table = table_openrv(((AlterTableStmt *) raw_statement)->relation, AccessShareLock);
	rewrites = QueryColumnChangesRewrite(changes, QueryColumnChangesBind(table, changes));
	partitioned = table->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
	table_close(table, AccessShareLock);
	return !rewrites ? STRATEGY_NO_REWRITE : partitioned ? STRATEGY_PARTITIONS : STRATEGY_REWRITE;
}

/*
 * estimate_ddl of one table's rewrite, added to *estimate: its copy,
 * sampled as the job's chunks run it, as the table's owner, in the job's
 * query context, without its volatile values, which are counted by their
 * type's width (QueryColumnChangesWithoutVolatile: no sequence advances);
 * to which the index copies add their current size, written and WAL-logged
 * once (their build's time is not counted)
 */
static void
EstimateTableRewrite(Relation table, Node *raw_statement, JobEstimate *estimate)
{
	JobQueryContext context;
	JobEstimate table_estimate;
	List	   *changes;
	int32		unmeasured_width;
	ListCell   *lc;

	JobQueryEnter(table->rd_rel->relowner, &context, false);
	changes = QueryColumnChangesWithoutVolatile(QueryColumnChangesBind(table,
																	   ColumnChanges(raw_statement)),
												&unmeasured_width);
	QueryJobEstimate(QueryOfTableRows(table, changes), InvalidOid, true, &table_estimate);
	JobQueryLeave(&context);
	table_estimate.bytes += table_estimate.rows * unmeasured_width;
	table_estimate.wal_bytes += table_estimate.rows * unmeasured_width;
	foreach(lc, RelationGetIndexList(table))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		int64		bytes = (int64) RelationGetNumberOfBlocks(index) * BLCKSZ;

		table_estimate.bytes += bytes;
		table_estimate.wal_bytes += bytes;
		index_close(index, AccessShareLock);
	}
	estimate->rows += table_estimate.rows;
	estimate->bytes += table_estimate.bytes;
	estimate->wal_bytes += table_estimate.wal_bytes;
	estimate->seconds += Max(table_estimate.seconds, 0);
	estimate->sampled_blocks += table_estimate.sampled_blocks;
	estimate->total_blocks += table_estimate.total_blocks;
}

/*
 * estimate_ddl of a table's rewrite (EstimateTableRewrite), the caller the
 * table's owner or acting for it; of a partitioned table's ALTER COLUMN ...
 * TYPE or ADD COLUMN, the sum of its leaf partitions' (each the caller's,
 * as PostgreSQL's recursion requires), as if their jobs ran one after
 * another
 */
static bool
RewriteEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	RangeVar   *rv = TableOfStatement(raw_statement);
	Relation	table;
	ListCell   *lc;

	if (rv == NULL)
		return false;
	table = table_open(RangeVarGetRelidExtended(rv, AccessShareLock, 0,
												RangeVarCallbackOwnsTable, NULL), NoLock);
	if (table->rd_rel->relkind != RELKIND_RELATION &&
		(table->rd_rel->relkind != RELKIND_PARTITIONED_TABLE || !IsA(raw_statement, AlterTableStmt)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(table)),
				 errdetail("Only a plain table, or the columns of a partitioned one, is rewritten as a job.")));
	memset(estimate, 0, sizeof(JobEstimate));
	foreach(lc, find_all_inheritors(RelationGetRelid(table), AccessShareLock, NULL))
	{
		Relation	leaf;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		if (!PgRelationOwnerCheck(lfirst_oid(lc), GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(lfirst_oid(lc)));
		leaf = table_open(lfirst_oid(lc), NoLock);
		EstimateTableRewrite(leaf, raw_statement, estimate);
		table_close(leaf, NoLock);
	}
	/* (CLUSTER's copy measured as a copy in chunks of blocks: its reads through the index cost more) */
	estimate->strategy = IsA(raw_statement, ClusterStmt) ?
		ClusterStrategy((ClusterStmt *) raw_statement) :
		pstrdup(table->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ? STRATEGY_PARTITIONS :
				STRATEGY_REWRITE);
	estimate->locks = psprintf("SHARE ROW EXCLUSIVE on \"%s\"%s to install its capture trigger (milliseconds; "
							   "asked for without queueing, then for at most background_ddl.lock_timeout); "
							   "ACCESS SHARE on it during each batch; ACCESS EXCLUSIVE on it at the cut-over, "
							   "for the last changes and the swap (asked for as the install)",
							   RelationGetRelationName(table),
							   table->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ?
							   "'s leaf partitions, each" : "");
	table_close(table, NoLock);
	return true;
}

/* Why the target is gone: the table was dropped */
static const char *
RewriteGoneReason(const BgddlJob *job)
{
	return "the table was dropped";
}

/* What the jobs of the four kinds share: all but their name, statement and checks */
#define REWRITE_ROUTINES \
	.stands_for = OBJECT_TABLE, \
	.cut_over_publishes = true, \
	.reserve = RewriteReserve, \
	.start = RewriteStart, \
	.plan = QueryJobPlan, \
	.backfill_step = QueryJobBackfillStep, \
	.help_step = QueryJobHelpStep, \
	.catch_up = RewriteCatchUp, \
	.writes_to_sources = QueryJobWritesToSources, \
	.cut_over = RewriteCutOver, \
	.cut_over_lock = RewriteCutOverLock, \
	.cut_over_publish = RewriteCutOverPublish, \
	.restart_build = QueryJobRestartBuild, \
	.cut_over_finish = RewriteCutOverFinish, \
	.paused = QueryJobPaused, \
	.progress = QueryJobProgress, \
	.keeps_on_table_of = QueryJobKeepsOnTableOf, \
	.housekeeping = QueryJobHousekeeping, \
	.cleanup = QueryJobCleanup, \
	.gone_reason = RewriteGoneReason, \
	.discard = QueryJobDiscardHiddenHeap, \
	.build_here = RewriteBuildHere

/* (explain_ddl and estimate_ddl of the four statements: VACUUM FULL, CLUSTER, ALTER TABLE's two) */
const KindRoutine kind_rewrite_routine = {
	.name = "VACUUM FULL",
	.accepts = VacuumFullAccepts,
	.partition_statements = RewritePartitionStatements,
	.explain = RewriteExplain,
	.estimate = RewriteEstimate,
	.validate = RewriteValidate,
	REWRITE_ROUTINES
};

const KindRoutine kind_cluster_routine = {
	.name = "CLUSTER",
	.accepts = ClusterAccepts,
	.partition_statements = RewritePartitionStatements,
	.validate = RewriteValidate,
	REWRITE_ROUTINES
};

const KindRoutine kind_set_tablespace_routine = {
	.name = "ALTER TABLE",
	.variant_key = STATE_MOVES,
	.accepts = SetTablespaceAccepts,
	.validate = RewriteValidate,
	REWRITE_ROUTINES
};

const KindRoutine kind_alter_type_routine = {
	.name = "ALTER TABLE",
	.variant_key = STATE_COLUMN_CHANGES,
	.checks_lock_tables = true,
	.accepts = AlterColumnsAccepts,
	.validate = AlterColumnsValidate,
	REWRITE_ROUTINES
};
