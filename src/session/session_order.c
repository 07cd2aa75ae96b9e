/*-------------------------------------------------------------------------
 *
 * session_order.c
 *	  A session sees its own jobs as done.
 *
 * With background_ddl on, a statement returns before its job has built its
 * object, and the session goes on with its script.  So that the script
 * still does what it does with the setting off, in the order it was
 * written, a later statement of the session that
 *
 *	- writes a table that an unfinished job of the session reads, or changes
 *	  its definition (ALTER, DROP, its partitions, its row security, a
 *	  REVOKE), where that changes the job's result (JobOrder.source_effects:
 *	  for an index only a change of its table's definition, and rows added
 *	  to the table of a unique one: a duplicate must fail), or
 *	- uses the job's target: reads it, alters it, comments or grants on it,
 *	  names it in a constraint (USING INDEX), attaches it, refreshes it,
 *
 * first has that job done:
 *
 *	- in the transaction that submitted the job, it is built there and
 *	  then (KindBuildHere), as the blocking statement would have built it;
 *	- in a later transaction, the statement waits for the job (with a
 *	  NOTICE), holding no lock and no snapshot of its own, and then runs as
 *	  it would have with the setting off; if the job failed or was cancelled
 *	  meanwhile, the statement fails with the job's error;
 *	- a statement that becomes a job itself starts after those jobs
 *	  instead (SessionOrderJobsBefore: a chain).
 *
 * "The session" is the server connection: jobs submitted by submit_ddl are
 * its jobs too; another connection (or this one after a reconnect, or a
 * COMMIT PREPARED elsewhere) sees them as any other session does.
 *
 * Where the check runs.  A query (SELECT, INSERT, UPDATE, DELETE, MERGE, and
 * the queries of CREATE TABLE AS, EXPLAIN and DECLARE) at the end of its
 * parse analysis (PostgreSQL has no hook before it), when analysis has
 * already locked the relations the query names, and the statement's top
 * level has pushed a snapshot for it.  Before waiting, exactly the locks
 * analysis took (one per range table entry it opened) are let go and that
 * snapshot popped; after the wait the locks are taken again, a new snapshot
 * is pushed, and the statement goes on if the relations it was analysed
 * against still have the same columns, or fails saying it must be run
 * again.  A plan cached before the job was submitted is not analysed again
 * unless its relations change: the submit invalidates the relcache entries
 * of the job's sources and target (SessionOrderSubmitted), so that it is.
 * Other utility statements are checked before they run, in the
 * ProcessUtility hook, where they hold no lock yet; a top-level one waits
 * for the jobs of earlier transactions already at the end of its parse
 * analysis, before its portal takes a snapshot (AwaitBeforeSnapshot), and
 * elsewhere a top-level portal's snapshot is set aside meanwhile, as VACUUM
 * sets it aside.
 *
 * A wait never waits for itself: where the statement cannot let go of its
 * snapshot (inside a function, a cursor's, REPEATABLE READ) it refuses at
 * once to wait for a job that waits for older snapshots (an index build,
 * or a job after one), and the wait itself ends in an error if the job
 * turns out to wait for this transaction (session_control.c).
 *
 * Costs nothing to a session without unfinished jobs: every check returns
 * at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tupdesc.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/index.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/pquery.h"
#include "tcop/utility.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_step.h"
#include "engine/job_xact.h"
#include "engine/kind.h"
#include "kinds/kind_placeholder.h"
#include "session/session_control.h"
#include "session/session_order.h"
#include "session/session_submit.h"
#include "session/session_statement.h"

static post_parse_analyze_hook_type prev_post_parse_analyze = NULL;

/* A relation a statement names, and what it does to it (REL_*) */
typedef struct RelationEffect
{
	Oid			relid;
	int			effects;
	List	   *ancestors;		/* of a partition, once asked for */
	bool		ancestors_known;
} RelationEffect;

/* A lock that parse analysis took, which the statement holds */
typedef struct AnalysisLock
{
	Oid			relid;
	LOCKMODE	mode;
} AnalysisLock;

/* What a statement does to relations */
typedef struct StatementEffects
{
	List	   *relations;		/* RelationEffect */
	List	   *analysis_locks; /* AnalysisLock, one per lock taken */
	int			query_effects;	/* what its query does to what it reads */
	bool		reads_only;		/* EXPLAIN without ANALYZE: the writes do not run */
	const char *target_use;		/* how it uses a job's target, for the job's strategy */
	int			awaits;			/* AWAIT_*: only those jobs (0: all it touches) */
	bool		only_constrains;	/* an ALTER TABLE that only adds or validates
									 * constraints (AlterTableEffects) */
} StatementEffects;

/* StatementTouches: the statement uses the job's target */
#define TOUCHES_TARGET	0x100
/* StatementTouches: the job holds a table the statement's checks lock */
#define TOUCHES_HELD	0x200

/*
 * The session's jobs that a statement becoming a job waits for before its
 * checks (SessionOrderAwaitChecks): those that
 */
#define AWAIT_KEYS		0x01	/* define keys on its tables */
#define AWAIT_COLUMNS	0x02	/* change its tables' columns */
#define AWAIT_HOLDERS	0x04	/* hold its tables locked (an index build) */

/* A relation that now stands for another one the statement was analysed against */
typedef struct Retarget
{
	Oid			from;
	Oid			to;
} Retarget;

/*
 * Checks are off while a check runs (its own catalog queries), and while
 * explain_ddl or estimate_ddl analyse a statement that does not run
 */
static bool checks_off = false;

static void
AddEffect(StatementEffects *statement, Oid relid, int effects)
{
	RelationEffect *entry;
	ListCell   *lc;

	if (!OidIsValid(relid))
		return;
	if (statement->reads_only)
		effects &= REL_NAMES | REL_READS;
	foreach(lc, statement->relations)
	{
		entry = lfirst(lc);
		if (entry->relid == relid)
		{
			entry->effects |= effects;
			return;
		}
	}
	entry = palloc0(sizeof(RelationEffect));
	entry->relid = relid;
	entry->effects = effects;
	statement->relations = lappend(statement->relations, entry);
}

/* A relation the statement names (not locked: the statement locks it itself) */
static void
AddRangeVar(StatementEffects *statement, RangeVar *relation, int effects)
{
	if (relation != NULL)
		AddEffect(statement, RangeVarGetRelid(relation, NoLock, true), effects);
}

/* An index the statement names, in the schema of the table it names */
static void
AddIndexName(StatementEffects *statement, RangeVar *table, const char *name)
{
	Oid			table_oid = table != NULL ? RangeVarGetRelid(table, NoLock, true) : InvalidOid;

	if (OidIsValid(table_oid) && name != NULL)
		AddEffect(statement, get_relname_relid(name, get_rel_namespace(table_oid)), REL_READS);
}

/* The relation of a qualified name (a list of String), all but its last names_dropped */
static void
AddNameList(StatementEffects *statement, List *names, int names_dropped, int effects)
{
	if (list_length(names) > names_dropped)
		AddRangeVar(statement,
					makeRangeVarFromNameList(list_truncate(list_copy(names),
														   list_length(names) - names_dropped)),
					effects);
}

/* Does an EXPLAIN run its statement (ANALYZE)? */
static bool
ExplainRuns(ExplainStmt *explain)
{
	ListCell   *lc;

	foreach(lc, explain->options)
	{
		DefElem    *option = lfirst(lc);

		if (strcmp(option->defname, "analyze") == 0)
			return defGetBoolean(option);
	}
	return false;
}

/*
 * What an analysed query does: every relation of its range tables is read
 * (and was locked by analysis once, but for ON CONFLICT's EXCLUDED entry,
 * which is the target opened again), its result relation written.
 */
static bool
QueryEffectsWalker(Node *node, StatementEffects *statement)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;
		Index		rti = 0;
		ListCell   *lc;

		if (query->utilityStmt != NULL)
		{
			if (IsA(query->utilityStmt, ExplainStmt) && !ExplainRuns((ExplainStmt *) query->utilityStmt))
				statement->reads_only = true;
			/* WITH NO DATA reads no row */
			if (IsA(query->utilityStmt, CreateTableAsStmt) &&
				((CreateTableAsStmt *) query->utilityStmt)->into->skipData)
				statement->query_effects = REL_NAMES;
			return QueryEffectsWalker((Node *) UtilityContainsQuery(query->utilityStmt), statement);
		}
		foreach(lc, query->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);
			AnalysisLock *lock;

			rti++;
			if (rte->rtekind != RTE_RELATION)
				continue;
			AddEffect(statement, rte->relid, statement->query_effects);
			if (query->onConflict != NULL && rti == (Index) query->onConflict->exclRelIndex)
				continue;
			lock = palloc(sizeof(AnalysisLock));
			lock->relid = rte->relid;
			lock->mode = rte->rellockmode;
			statement->analysis_locks = lappend(statement->analysis_locks, lock);
		}
		if (query->resultRelation > 0)
		{
			Oid			result = rt_fetch(query->resultRelation, query->rtable)->relid;

			if (query->commandType == CMD_UPDATE ||
				(query->commandType == CMD_INSERT && query->onConflict != NULL &&
				 query->onConflict->action == ONCONFLICT_UPDATE))
				AddEffect(statement, result, REL_ADDS_ROWS | REL_UPDATES_ROWS);
			else if (query->commandType == CMD_INSERT)
				AddEffect(statement, result, REL_ADDS_ROWS);
			else if (query->commandType == CMD_DELETE)
				AddEffect(statement, result, REL_REMOVES_ROWS);
			else if (query->commandType == CMD_MERGE)
				AddEffect(statement, result, REL_ADDS_ROWS | REL_UPDATES_ROWS | REL_REMOVES_ROWS);
		}
		return query_tree_walker(query, QueryEffectsWalker, statement, 0);
	}
	return expression_tree_walker(node, QueryEffectsWalker, statement);
}

/* The tables that the foreign keys among constraints (Constraint) reference */
static void
AddForeignKeys(StatementEffects *statement, List *constraints)
{
	ListCell   *lc;

	foreach(lc, constraints)
	{
		if (IsA(lfirst(lc), Constraint) && ((Constraint *) lfirst(lc))->contype == CONSTR_FOREIGN)
			AddRangeVar(statement, ((Constraint *) lfirst(lc))->pktable, REL_READS | REL_REFERENCES);
	}
}

/*
 * Does an ALTER TABLE subcommand only add a check, a foreign key or a key,
 * validate a constraint, or set NOT NULL?
 */
static bool
OnlyConstrains(AlterTableCmd *cmd)
{
	switch (cmd->subtype)
	{
		case AT_AddConstraint:
		case AT_AddConstraintRecurse:
			return IsA(cmd->def, Constraint) &&
				(((Constraint *) cmd->def)->contype == CONSTR_CHECK ||
				 ((Constraint *) cmd->def)->contype == CONSTR_FOREIGN ||
				 ((Constraint *) cmd->def)->contype == CONSTR_PRIMARY ||
				 ((Constraint *) cmd->def)->contype == CONSTR_UNIQUE);
		case AT_ValidateConstraint:
		case AT_ValidateConstraintRecurse:
		case AT_SetNotNull:
			return true;
		default:
			return false;
	}
}

/*
 * What an ALTER TABLE's subcommands name besides its table; and whether
 * they only add or validate constraints (statement->only_constrains),
 * which changes neither the table's rows nor what a query reads of it
 */
static void
AlterTableEffects(StatementEffects *statement, AlterTableStmt *stmt)
{
	ListCell   *lc;

	statement->only_constrains = stmt->cmds != NIL;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		statement->only_constrains &= OnlyConstrains(cmd);
		switch (cmd->subtype)
		{
			case AT_AddColumn:
			case AT_AddColumnRecurse:
				if (IsA(cmd->def, ColumnDef))
					AddForeignKeys(statement, ((ColumnDef *) cmd->def)->constraints);
				break;
			case AT_AttachPartition:
			case AT_DetachPartition:
			case AT_DetachPartitionFinalize:
				AddRangeVar(statement, castNode(PartitionCmd, cmd->def)->name,
							REL_NAMES | REL_REDEFINES);
				break;
			case AT_AddInherit:
			case AT_DropInherit:
				AddRangeVar(statement, (RangeVar *) cmd->def, REL_NAMES | REL_REDEFINES);
				break;
			case AT_AddConstraint:
			case AT_AddConstraintRecurse:
				if (IsA(cmd->def, Constraint))
				{
					Constraint *constraint = (Constraint *) cmd->def;

					AddRangeVar(statement, constraint->pktable, REL_READS | REL_REFERENCES);
					AddIndexName(statement, stmt->relation, constraint->indexname);
				}
				break;
			case AT_ReplicaIdentity:
				AddIndexName(statement, stmt->relation,
							 castNode(ReplicaIdentityStmt, cmd->def)->name);
				break;
			case AT_ClusterOn:
				AddIndexName(statement, stmt->relation, cmd->name);
				break;
			default:
				break;
		}
	}
}

/* What a GRANT or REVOKE does to the tables it names (a REVOKE may take what a job needs) */
static void
GrantEffects(StatementEffects *statement, GrantStmt *stmt)
{
	ListCell   *lc;

	if (stmt->targtype != ACL_TARGET_OBJECT || stmt->objtype != OBJECT_TABLE)
		return;
	foreach(lc, stmt->objects)
		AddRangeVar(statement, lfirst(lc), REL_NAMES | (stmt->is_grant ? 0 : REL_REDEFINES));
}

/* What a DROP does to the relations it names, or to those of the objects it drops */
static void
DropEffects(StatementEffects *statement, DropStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->objects)
	{
		switch (stmt->removeType)
		{
			case OBJECT_TABLE:
			case OBJECT_VIEW:
			case OBJECT_MATVIEW:
			case OBJECT_INDEX:
			case OBJECT_FOREIGN_TABLE:
			case OBJECT_SEQUENCE:
				AddNameList(statement, lfirst(lc), 0, REL_DROPS | REL_REDEFINES);
				break;
			case OBJECT_POLICY:
				AddNameList(statement, lfirst(lc), 1, REL_NAMES | REL_REDEFINES);
				break;
			case OBJECT_TRIGGER:
			case OBJECT_RULE:
				AddNameList(statement, lfirst(lc), 1, REL_NAMES);
				break;
			default:
				return;
		}
	}
}

/* Is a VACUUM a VACUUM FULL? */
static bool
VacuumFull(VacuumStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *option = lfirst_node(DefElem, lc);

		if (strcmp(option->defname, "full") == 0)
			return defGetBoolean(option);
	}
	return false;
}

/*
 * What a utility statement does to the relations it names.  A statement
 * that holds an analysed query (CREATE TABLE AS, EXPLAIN, DECLARE) was
 * checked at its analysis; one that holds a raw query (CREATE VIEW, COPY
 * (query)) analyses it when it runs, which checks it then.  RENAME and SET
 * SCHEMA of a job's target move its name, which the job follows.
 */
static void
UtilityEffects(StatementEffects *statement, Node *parsetree)
{
	ListCell   *lc;
	int			effects;

	switch (nodeTag(parsetree))
	{
		case T_AlterTableStmt:
			AddRangeVar(statement, ((AlterTableStmt *) parsetree)->relation,
						REL_NAMES | REL_REDEFINES);
			AlterTableEffects(statement, (AlterTableStmt *) parsetree);
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN)
				AddRangeVar(statement, ((RenameStmt *) parsetree)->relation, REL_NAMES);
			/* a constraint renamed may be the one a job adds */
			else if (((RenameStmt *) parsetree)->renameType == OBJECT_TABCONSTRAINT)
				AddRangeVar(statement, ((RenameStmt *) parsetree)->relation,
							REL_NAMES | REL_REDEFINES);
			break;
		case T_DropStmt:
			DropEffects(statement, (DropStmt *) parsetree);
			break;
		case T_TruncateStmt:
			foreach(lc, ((TruncateStmt *) parsetree)->relations)
				AddRangeVar(statement, lfirst(lc), REL_NAMES | REL_REMOVES_ROWS | REL_REDEFINES);
			break;
		case T_CopyStmt:
			AddRangeVar(statement, ((CopyStmt *) parsetree)->relation,
						((CopyStmt *) parsetree)->is_from ? REL_NAMES | REL_ADDS_ROWS : REL_READS);
			break;
		case T_IndexStmt:
			AddRangeVar(statement, ((IndexStmt *) parsetree)->relation, REL_NAMES);
			break;
		case T_CreateTrigStmt:
			AddRangeVar(statement, ((CreateTrigStmt *) parsetree)->relation, REL_NAMES);
			break;
		case T_RuleStmt:
			AddRangeVar(statement, ((RuleStmt *) parsetree)->relation, REL_NAMES);
			break;
		case T_CreatePolicyStmt:
			AddRangeVar(statement, ((CreatePolicyStmt *) parsetree)->table,
						REL_NAMES | REL_REDEFINES);
			break;
		case T_AlterPolicyStmt:
			AddRangeVar(statement, ((AlterPolicyStmt *) parsetree)->table,
						REL_NAMES | REL_REDEFINES);
			break;
		case T_GrantStmt:
			GrantEffects(statement, (GrantStmt *) parsetree);
			break;
		case T_CommentStmt:
			{
				CommentStmt *stmt = (CommentStmt *) parsetree;

				if (stmt->objtype == OBJECT_TABLE || stmt->objtype == OBJECT_MATVIEW ||
					stmt->objtype == OBJECT_INDEX || stmt->objtype == OBJECT_VIEW ||
					stmt->objtype == OBJECT_FOREIGN_TABLE)
					AddNameList(statement, castNode(List, stmt->object), 0, REL_NAMES);
				else if (stmt->objtype == OBJECT_COLUMN)
					AddNameList(statement, castNode(List, stmt->object), 1, REL_NAMES);
				else if (stmt->objtype == OBJECT_TABCONSTRAINT)
					AddNameList(statement, castNode(List, stmt->object), 1,
								REL_NAMES | REL_REDEFINES);
				break;
			}
		case T_ReindexStmt:
			AddRangeVar(statement, ((ReindexStmt *) parsetree)->relation, REL_READS);
			break;
		/* (CLUSTER and VACUUM FULL give a table new storage: a rewrite job's waits) */
		case T_ClusterStmt:
			AddRangeVar(statement, ((ClusterStmt *) parsetree)->relation,
						REL_READS | REL_REDEFINES);
			AddIndexName(statement, ((ClusterStmt *) parsetree)->relation,
						 ((ClusterStmt *) parsetree)->indexname);
			break;
		case T_VacuumStmt:
			effects = VacuumFull((VacuumStmt *) parsetree) ? REL_READS | REL_REDEFINES : REL_READS;
			foreach(lc, ((VacuumStmt *) parsetree)->rels)
				AddRangeVar(statement, lfirst_node(VacuumRelation, lc)->relation, effects);
			break;
		case T_RefreshMatViewStmt:
			AddRangeVar(statement, ((RefreshMatViewStmt *) parsetree)->relation,
						REL_READS | REL_ADDS_ROWS | REL_REMOVES_ROWS | REL_REDEFINES);
			break;
		case T_CreateStatsStmt:
			foreach(lc, ((CreateStatsStmt *) parsetree)->relations)
				if (IsA(lfirst(lc), RangeVar))
					AddRangeVar(statement, lfirst(lc), REL_NAMES);
			break;
		case T_CreateStmt:
		case T_CreateForeignTableStmt:
			{
				CreateStmt *stmt = (CreateStmt *) parsetree;

				/* a new partition or child changes what its parent holds */
				foreach(lc, stmt->inhRelations)
					AddRangeVar(statement, lfirst(lc), REL_NAMES | REL_REDEFINES);
				foreach(lc, stmt->tableElts)
				{
					if (IsA(lfirst(lc), TableLikeClause))
						AddRangeVar(statement, ((TableLikeClause *) lfirst(lc))->relation,
									REL_NAMES);
					else if (IsA(lfirst(lc), ColumnDef))
						AddForeignKeys(statement, ((ColumnDef *) lfirst(lc))->constraints);
				}
				AddForeignKeys(statement, stmt->tableElts);
				AddForeignKeys(statement, stmt->constraints);
				break;
			}
		case T_ViewStmt:
			/* CREATE OR REPLACE VIEW changes what a job over the view reads */
			AddRangeVar(statement, ((ViewStmt *) parsetree)->view, REL_NAMES | REL_REDEFINES);
			break;
		default:
			break;
	}
}

/* Is the relation a source of the job: one it reads, or a partition of one? */
static bool
IsSourceOf(RelationEffect *relation, const JobOrder *order)
{
	ListCell   *lc;

	if (list_member_oid(order->sources, relation->relid))
		return true;
	if (!relation->ancestors_known)
	{
		relation->ancestors_known = true;
		if (get_rel_relispartition(relation->relid))
			relation->ancestors = get_partition_ancestors(relation->relid);
	}
	foreach(lc, relation->ancestors)
	{
		if (list_member_oid(order->sources, lfirst_oid(lc)))
			return true;
	}
	return false;
}

/*
 * Is relid a partition of ancestor, at any depth?  What a statement does to
 * a partitioned table (ALTER TABLE, TRUNCATE, ...) it does to its partitions:
 * to a job's target among them too.
 */
static bool
IsPartitionOf(Oid relid, Oid ancestor)
{
	return get_rel_relkind(ancestor) == RELKIND_PARTITIONED_TABLE &&
		get_rel_relispartition(relid) &&
		list_member_oid(get_partition_ancestors(relid), ancestor);
}

/*
 * The unfinished job whose target this relation is now, if it stands for
 * a target that moves while it is built (a placeholder, replaced by the
 * invalid index of an index build); else 0
 */
static int64
MovedTargetJob(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		building = false;

	if (!HeapTupleIsValid(tuple))
		return 0;
	if (((Form_pg_class) GETSTRUCT(tuple))->relkind == RELKIND_MATVIEW)
		building = !((Form_pg_class) GETSTRUCT(tuple))->relispopulated;
	else if (((Form_pg_class) GETSTRUCT(tuple))->relkind == RELKIND_INDEX ||
			 ((Form_pg_class) GETSTRUCT(tuple))->relkind == RELKIND_PARTITIONED_INDEX)
	{
		HeapTuple	index = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(relid));

		if (HeapTupleIsValid(index))
		{
			building = !((Form_pg_index) GETSTRUCT(index))->indisvalid;
			ReleaseSysCache(index);
		}
	}
	ReleaseSysCache(tuple);
	return building ? CatalogJobBuilding(relid) : 0;
}

/*
 * Does the relation hold the name of the index of the keys a job defines:
 * its placeholder, or an index of their table (the job's, built meanwhile)?
 */
static bool
IsKeyIndexOf(Oid relid, const JobOrder *order)
{
	if (!OidIsValid(order->key_table))
		return false;
	if (relid == order->key_placeholder)
		return true;
	return get_rel_relkind(relid) == RELKIND_INDEX &&
		IndexGetRelation(relid, true) == order->key_table;
}

/*
 * How the statement touches the job: 0 if not at all, else what it does to
 * the job's sources (REL_*) or TOUCHES_TARGET
 */
static int
StatementTouches(StatementEffects *statement, const JobOrder *order)
{
	ListCell   *lc;

	if (statement->awaits != 0)
	{
		foreach(lc, statement->relations)
		{
			Oid			relid = ((RelationEffect *) lfirst(lc))->relid;

			if (((statement->awaits & AWAIT_KEYS) && OidIsValid(order->key_table) &&
				 relid == order->key_table) ||
				((statement->awaits & AWAIT_COLUMNS) && order->changes_columns &&
				 (relid == order->target_oid || IsPartitionOf(order->target_oid, relid))))
				return TOUCHES_TARGET;
			/* (a build of this transaction has not begun: it holds nothing) */
			if ((statement->awaits & AWAIT_HOLDERS) && OidIsValid(order->held_table) &&
				(relid == order->held_table || IsPartitionOf(order->held_table, relid) ||
				 IsPartitionOf(relid, order->held_table)) &&
				!JobXactIsSubmitted(order->job_id))
				return TOUCHES_HELD;
		}
		return 0;
	}

	foreach(lc, statement->relations)
	{
		RelationEffect *relation = lfirst(lc);
		int			changes = relation->effects & order->source_effects;

		if (changes != 0 && IsSourceOf(relation, order))
			return changes;
	}
	foreach(lc, statement->relations)
	{
		RelationEffect *relation = lfirst(lc);

		/* DROP of a job's target cancels the job (session_control.c) */
		if ((relation->effects & REL_DROPS) == 0 &&
			(((relation->effects & order->target_effects) != 0 &&
			  (relation->relid == order->target_oid ||
			   IsPartitionOf(order->target_oid, relation->relid) ||
			   MovedTargetJob(relation->relid) == order->job_id)) ||
			 IsKeyIndexOf(relation->relid, order) ||
			 ((relation->effects & REL_REFERENCES) != 0 &&
			  relation->relid == order->key_table)))
			return TOUCHES_TARGET;
	}
	return 0;
}

/* Why the statement builds a job of its transaction here: for the job's strategy */
static const char *
BuildHereReason(const StatementEffects *statement, int touch)
{
	if (touch & TOUCHES_TARGET)
		return statement->target_use;
	if (touch & (REL_ADDS_ROWS | REL_UPDATES_ROWS | REL_REMOVES_ROWS))
		return "wrote a table it reads";
	return "changed a table it reads";
}

/*
 * Build here the jobs of the current transaction that the statement
 * touches; returns what now stands for their targets (Retarget).
 */
static List *
BuildTouchedHere(StatementEffects *statement)
{
	List	   *retargets = NIL;
	ListCell   *lc;

	foreach(lc, JobXactSubmittedOrders())
	{
		JobOrder   *order = lfirst(lc);
		int			touch = StatementTouches(statement, order);
		Oid			built;

		if (touch == 0)
			continue;
		built = KindBuildHere(order->job_id, BuildHereReason(statement, touch));
		if (OidIsValid(built) && built != order->target_oid)
		{
			Retarget   *retarget = palloc(sizeof(Retarget));

			retarget->from = order->target_oid;
			retarget->to = built;
			retargets = lappend(retargets, retarget);
		}
	}
	return retargets;
}

/* The jobs of earlier transactions of the session that the statement touches */
static List *
SessionJobsTouched(StatementEffects *statement, List **touches)
{
	List	   *touched = NIL;
	ListCell   *lc;

	*touches = NIL;
	foreach(lc, JobXactSessionOrders())
	{
		JobOrder   *order = lfirst(lc);
		int			touch = StatementTouches(statement, order);

		if (touch != 0)
		{
			touched = lappend(touched, order);
			*touches = lappend_int(*touches, touch);
		}
	}
	return touched;
}

/*
 * Before a statement waits: refuse if it would wait for a snapshot it
 * keeps (still_holds_xmin: it could not let go of its snapshot), or in a
 * transaction whose snapshot is older than the job's end.
 */
static void
CheckMayWait(int64 job_id, bool holds_snapshot)
{
	ListCell   *lc;

	if (IsolationUsesXactSnapshot() && FirstSnapshotSet)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not wait for background DDL job %lld in a %s transaction",
						(long long) job_id, IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errdetail("This statement would change or use what the job builds, and this session submitted it; the transaction's snapshot is older than the job's end, so it would not see it."),
				 errhint("Wait for the job before the transaction begins (CALL await_ddl(%lld)), then run the transaction again.",
						 (long long) job_id)));
	if (!holds_snapshot)
		return;
	foreach(lc, CatalogJobsAwaited(job_id))
	{
		BgddlJob	awaited;

		if (CatalogJobLoad(*(int64 *) lfirst(lc), &awaited, true) &&
			KindRoutineForJob(&awaited)->waits_for_older_snapshots)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("this statement cannot wait for background DDL job %lld", (long long) job_id),
					 awaited.id == job_id ?
					 errdetail("It would change or use what the job builds, and this session submitted it; the job waits for the transactions whose snapshots are older than its own, as CREATE INDEX CONCURRENTLY does, and this statement keeps its snapshot (a function's, a cursor's, or the transaction's).") :
					 errdetail("It would change or use what the job builds, and this session submitted it; job %lld, which it starts after, waits for the transactions whose snapshots are older than its own, as CREATE INDEX CONCURRENTLY does, and this statement keeps its snapshot (a function's, a cursor's, or the transaction's).",
							   (long long) awaited.id),
					 errhint("Wait for the job first (CALL await_ddl(%lld)), then run the statement.",
							 (long long) job_id)));
	}
}

/*
 * Refuse to wait for a job whose cut-over is manual or waits for a window
 * that is not open now, or that starts after one: the operator decides when
 * it is published (complete_ddl, the window), and this statement would wait
 * until then.
 */
static void
CheckNotManual(int64 job_id)
{
	ListCell   *lc;

	foreach(lc, CatalogJobsAwaited(job_id))
	{
		BgddlJob	awaited;

		if (CatalogJobLoad(*(int64 *) lfirst(lc), &awaited, true) &&
			!JobStateIsFinal(awaited.state) &&
			(awaited.manual_cutover || !SettingsWindowOpen(awaited.cutover_window)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 awaited.manual_cutover ?
					 errmsg("this statement would wait for background DDL job %lld, whose cut-over is manual",
							(long long) awaited.id) :
					 errmsg("this statement would wait for background DDL job %lld, whose cut-over waits for its window, %s",
							(long long) awaited.id, awaited.cutover_window),
					 awaited.id == job_id ?
					 errdetail("It would change or use what the job builds, and this session submitted it; the job publishes its result only when complete_ddl(%lld) is called.",
							   (long long) awaited.id) :
					 errdetail("It would change or use what job %lld builds, and this session submitted it; that job starts after job %lld, which publishes its result only when complete_ddl(%lld) is called.",
							   (long long) job_id, (long long) awaited.id, (long long) awaited.id),
					 errhint("CALL complete_ddl(%lld) publishes it; then run the statement again.",
							 (long long) awaited.id)));
	}
}

/*
 * Wait for each job the statement touches, as the statement would have
 * found it done; returns what stands for the targets of those that built
 * a new relation (Retarget).  A job that failed or was cancelled gives the
 * statement its error.  Caller holds no lock the jobs need.
 */
static List *
WaitForTouchedJobs(List *orders, List *touches, bool holds_snapshot)
{
	List	   *retargets = NIL;
	ListCell   *order_cell;
	ListCell   *touch_cell;

	forboth(order_cell, orders, touch_cell, touches)
	{
		JobOrder   *order = lfirst(order_cell);
		int64		job_id = order->job_id;
		Oid			target_oid = order->target_oid;
		BgddlJob	job;

		if (!CatalogJobLoad(job_id, &job, true))
		{
			JobXactForget(job_id);
			continue;
		}
		/*
		 * A paused build holds nothing, and one that waits for others to be
		 * published (the operator, its window, its group) lets go of its
		 * table before it waits: the statement starts after the job instead
		 */
		if (lfirst_int(touch_cell) == TOUCHES_HELD && !JobStateIsFinal(job.state) &&
			(job.state == JOB_STATE_PAUSED || job.manual_cutover || job.group_id != 0 ||
			 !SettingsWindowOpen(job.cutover_window)))
			continue;
		if (!JobStateIsFinal(job.state))
		{
			if (job.state == JOB_STATE_PAUSED)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("this statement would wait for background DDL job %lld, which is paused",
								(long long) job_id),
						 errdetail("It would change or use what the job builds, and this session submitted it."),
						 errhint("Resume the job (resume_ddl(%lld)) or cancel it (cancel_ddl(%lld)).",
								 (long long) job_id, (long long) job_id)));
			CheckNotManual(job_id);
			CheckMayWait(job_id, holds_snapshot);
		}
		/* Said at the first touch, whether the job has ended by then or not */
		if (lfirst_int(touch_cell) == TOUCHES_TARGET)
			ereport(NOTICE,
					(errmsg("waiting for background DDL job %lld, whose result this statement uses",
							(long long) job_id),
					 errdetail("This session submitted the job: its later statements see it done.")));
		else
			ereport(NOTICE,
					(errmsg("waiting for background DDL job %lld, which this statement would change",
							(long long) job_id),
					 errdetail("This session submitted the job: its later statements see it done.")));
		if (!JobStateIsFinal(job.state))
			SessionWaitForJob(job_id, 0, false, &job, "this statement");
		JobXactForget(job_id);
		SessionRaiseJobEnd(&job);
		if (KindResult(&job) != target_oid)
		{
			Retarget   *retarget = palloc(sizeof(Retarget));

			retarget->from = target_oid;
			retarget->to = KindResult(&job);
			retargets = lappend(retargets, retarget);
		}
	}
	return retargets;
}

static Oid
Retargeted(List *retargets, Oid relid)
{
	ListCell   *lc;

	foreach(lc, retargets)
	{
		if (((Retarget *) lfirst(lc))->from == relid)
			return ((Retarget *) lfirst(lc))->to;
	}
	return relid;
}

/* Point an analysed query's uses of targets to what now stands for them */
static void
RetargetQuery(Query *query, List *retargets)
{
	ListCell   *lc;

	foreach(lc, retargets)
	{
		Retarget   *retarget = lfirst(lc);

		(void) KindRetargetQuery(query, retarget->from, retarget->to);
	}
}

/* The columns of a relation, as analysis used them */
static TupleDesc
RelationColumns(Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	TupleDesc	columns = CreateTupleDescCopy(RelationGetDescr(rel));

	relation_close(rel, NoLock);
	return columns;
}

/* Do two relations have the same columns (names, types, dropped ones)? */
static bool
SameColumns(TupleDesc a, TupleDesc b)
{
	if (a->natts != b->natts)
		return false;
	for (int i = 0; i < a->natts; i++)
	{
		Form_pg_attribute x = TupleDescAttr(a, i);
		Form_pg_attribute y = TupleDescAttr(b, i);

		if (x->attisdropped != y->attisdropped || x->atttypid != y->atttypid ||
			x->atttypmod != y->atttypmod || x->attcollation != y->attcollation ||
			strcmp(NameStr(x->attname), NameStr(y->attname)) != 0)
			return false;
	}
	return true;
}

/*
 * Pop the snapshot that the statement's top level pushed for it (for a
 * query, exec_simple_query or a Parse or Bind pushed it for the analysis:
 * no portal runs yet; for a utility statement, its portal's, which
 * PortalRunUtility lets a statement pop, as VACUUM does); false if there is
 * none to pop there.
 */
static bool
SetAsideSnapshot(bool analysis)
{
	if (!ActiveSnapshotSet())
		return false;
	if (analysis && ActivePortal == NULL)
	{
		PopActiveSnapshot();
		return true;
	}
	if (!analysis && ActivePortal != NULL && ActivePortal->portalSnapshot != NULL &&
		GetActiveSnapshot() == ActivePortal->portalSnapshot)
	{
		PopActiveSnapshot();
		ActivePortal->portalSnapshot = NULL;
		return true;
	}
	return false;
}

/* Push a new snapshot where SetAsideSnapshot popped one */
static void
PushSnapshotAgain(bool analysis)
{
	if (analysis)
		PushActiveSnapshot(GetTransactionSnapshot());
	else
	{
		PushActiveSnapshotWithLevel(GetTransactionSnapshot(), ActivePortal->createLevel);
		ActivePortal->portalSnapshot = GetActiveSnapshot();
	}
}

/* Does this backend still hold back the xmin horizon (a snapshot it keeps)? */
static bool
HoldsSnapshot(void)
{
	InvalidateCatalogSnapshot();
	return HaveRegisteredOrActiveSnapshot() || TransactionIdIsValid(MyProc->xmin);
}

/* The columns of the relations that analysis locked, as it used them */
static List *
AnalysedColumns(StatementEffects *statement)
{
	List	   *columns = NIL;
	ListCell   *lc;

	foreach(lc, statement->analysis_locks)
		columns = lappend(columns, RelationColumns(((AnalysisLock *) lfirst(lc))->relid));
	return columns;
}

/* Let go of the locks that analysis took (the jobs may need them) */
static void
ReleaseAnalysisLocks(StatementEffects *statement)
{
	ListCell   *lc;

	foreach(lc, statement->analysis_locks)
	{
		AnalysisLock *lock = lfirst(lc);

		UnlockRelationOid(lock->relid, lock->mode);
	}
}

/* A statement to check: an analysed query with its parse state, or a utility statement */
typedef struct OrderCheck
{
	ParseState *pstate;
	Query	   *query;
	Node	   *utility;
	int			awaits;			/* SessionOrderAwaitChecks */
	bool		waits_only;		/* AwaitBeforeSnapshot: build nothing here */
} OrderCheck;

/*
 * Analyse the statement again, from its text, for the relations it names
 * now (an ALTER COLUMN ... TYPE job gave one new columns): the query
 * becomes the new analysis's.  Only a statement analysed without parameter
 * or column hooks (not one of PL/pgSQL's, not one with parameters); false
 * for any other.  The new analysis takes its own locks.
 */
static bool
AnalyseAgain(OrderCheck *check)
{
	ParseState *pstate = check->pstate;
	ListCell   *lc;

	if (pstate->p_sourcetext == NULL || pstate->parentParseState != NULL ||
		pstate->p_pre_columnref_hook != NULL || pstate->p_post_columnref_hook != NULL ||
		pstate->p_paramref_hook != NULL || pstate->p_coerce_param_hook != NULL)
		return false;
	foreach(lc, raw_parser(pstate->p_sourcetext, RAW_PARSE_DEFAULT))
	{
		RawStmt    *raw = lfirst_node(RawStmt, lc);

		if (raw->stmt_location == check->query->stmt_location)
		{
			*check->query = *parse_analyze_fixedparams(raw, pstate->p_sourcetext, NULL, 0,
													   pstate->p_queryEnv);
			return true;
		}
	}
	return false;
}

/* Take the locks of analysis again, on what now stands for each relation */
static void
RetakeAnalysisLocks(StatementEffects *statement, List *retargets)
{
	ListCell   *lc;

	foreach(lc, statement->analysis_locks)
	{
		AnalysisLock *lock = lfirst(lc);

		LockRelationOid(Retargeted(retargets, lock->relid), lock->mode);
	}
}

/*
 * Is a relation that analysis used gone, or are its columns no longer
 * those it used (columns: AnalysedColumns)?  A job built here or waited
 * for changed it (an ALTER COLUMN ... TYPE), or a statement of another
 * session meanwhile.
 */
static bool
AnalysedColumnsChanged(StatementEffects *statement, List *columns, List *retargets)
{
	ListCell   *lc;
	ListCell   *column;

	forboth(lc, statement->analysis_locks, column, columns)
	{
		Oid			relid = Retargeted(retargets, ((AnalysisLock *) lfirst(lc))->relid);

		if (get_rel_relkind(relid) == '\0' || !SameColumns(lfirst(column), RelationColumns(relid)))
			return true;
	}
	return false;
}

/*
 * Have the session's jobs that the statement touches done first: this
 * transaction's built here, earlier ones' waited for, holding nothing of
 * the statement's own meanwhile (its analysis's locks, its snapshot).
 */
static void
OrderStatement(OrderCheck *check)
{
	bool		analysis = check->query != NULL;
	StatementEffects statement = {.query_effects = REL_READS, .target_use = "read it",
	.awaits = check->awaits};
	List	   *waited;
	List	   *touches;
	List	   *retargets;
	List	   *columns;

	if (analysis)
	{
		Node	   *enclosing = SessionEnclosingUtility();

		/* A definition (a view's, a rule's, a function's) reads nothing now */
		if (enclosing != NULL && (IsA(enclosing, ViewStmt) || IsA(enclosing, RuleStmt) ||
								  IsA(enclosing, CreateFunctionStmt)))
		{
			statement.query_effects = REL_NAMES;
			statement.reads_only = true;
			statement.target_use = "named it";
		}
		(void) QueryEffectsWalker((Node *) check->query, &statement);
		/* A statement that becomes a job starts after those jobs instead */
		if (statement.relations != NIL && check->query->utilityStmt != NULL &&
			SessionStatementWouldSubmit(check->query->utilityStmt) != NULL)
			return;
	}
	else
		UtilityEffects(&statement, check->utility);
	if (statement.relations == NIL)
		return;
	if (!analysis)
		statement.target_use = psprintf("ran %s on it",
										GetCommandTagName(CreateCommandTag(check->utility)));
	waited = SessionJobsTouched(&statement, &touches);
	/* Analysis keeps the target of an INSERT, UPDATE or DELETE open: it may change */
	if (analysis && check->pstate->p_target_relation != NULL)
	{
		table_close(check->pstate->p_target_relation, NoLock);
		check->pstate->p_target_relation = NULL;
	}
	columns = analysis ? AnalysedColumns(&statement) : NIL;
	retargets = check->waits_only ? NIL : BuildTouchedHere(&statement);
	if (waited != NIL)
	{
		bool		set_aside;

		if (analysis)
			ReleaseAnalysisLocks(&statement);
		JobStepHoldPoint("statement: before its wait");
		set_aside = SetAsideSnapshot(analysis);
		retargets = list_concat(retargets, WaitForTouchedJobs(waited, touches, HoldsSnapshot()));
		if (analysis)
			RetakeAnalysisLocks(&statement, retargets);
		if (set_aside)
			PushSnapshotAgain(analysis);
	}
	if (analysis && AnalysedColumnsChanged(&statement, columns, retargets))
	{
		if (!AnalyseAgain(check))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("a relation this statement uses changed while it waited for a background DDL job"),
					 errdetail("A relation it names was dropped, or its columns changed meanwhile."),
					 errhint("Run the statement again.")));
	}
	else if (analysis && retargets != NIL)
		RetargetQuery(check->query, retargets);
}

/* OrderStatement with the checks off for what it runs itself (catalog queries) */
static void
OrderStatementOnce(OrderCheck *check)
{
	if ((JobXactSessionOrders() == NIL && !JobXactHasSubmitted()) || checks_off)
		return;
	checks_off = true;
	PG_TRY();
	{
		OrderStatement(check);
	}
	PG_FINALLY();
	{
		checks_off = false;
	}
	PG_END_TRY();
}

/*
 * A utility statement waits for the session's jobs before it runs
 * (SessionOrderUtility), and one that becomes a job at submit, before its
 * checks, for some of them (SessionOrderAwaitChecks).
 * Where nothing holds a snapshot at the end of its parse analysis (a
 * top-level utility statement: its portal takes the statement's snapshot
 * after), it waits for the jobs of earlier transactions here already,
 * holding no xmin at any time: a job that waits for the transactions with
 * older snapshots, as CREATE INDEX CONCURRENTLY does, would otherwise find
 * this transaction among them in the moment between its snapshot and the
 * wait, and wait for it to end, which a transaction block cannot do while
 * it waits.  When it runs there is then nothing left to wait for, only the
 * jobs of its own transaction to build.
 */
static void
AwaitBeforeSnapshot(Node *utility)
{
	const KindRoutine *routine;

	if (JobXactSessionOrders() == NIL || ActiveSnapshotSet())
		return;
	routine = SessionStatementWouldSubmit(utility);
	if (routine == NULL)
	{
		OrderCheck	check = {.utility = utility,.waits_only = true};

		OrderStatementOnce(&check);
		return;
	}
	SessionOrderAwaitChecks(routine, utility);
}

/*
 * At the end of a query's parse analysis (PostgreSQL holds the relations
 * locked that the query names)
 */
static void
OrderPostParseAnalyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	OrderCheck	check = {pstate, query, NULL};

	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	OrderStatementOnce(&check);
	if (query->utilityStmt != NULL)
		AwaitBeforeSnapshot(query->utilityStmt);
}

/* At library load: see each query at the end of its parse analysis */
void
SessionOrderInstall(void)
{
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = OrderPostParseAnalyze;
}

/*
 * Before a utility statement that does not become a job runs.  Its
 * relations are looked up by name without a lock, as it names them now; it
 * locks them when it runs.
 */
void
SessionOrderUtility(Node *parsetree)
{
	OrderCheck	check = {NULL, NULL, parsetree};

	OrderStatementOnce(&check);
}

/*
 * Before the checks of a statement that becomes a job (routine's), which
 * analyse it against the tables it names as the blocking statement would
 * find them: wait for the session's jobs that it would otherwise find
 * unfinished there, or build those of this transaction here, as the
 * blocking statements would have run in order:
 *
 *	- those that change the columns of its tables (ALTER COLUMN ... TYPE);
 *	- if its checks read the keys of its tables (validates_against_keys: a
 *	  foreign key, those of the table it references; a key, its table's),
 *	  those that define keys on them;
 *	- if its checks lock its tables (checks_lock_tables: they run the
 *	  statement itself, rolled back), the index builds that hold them
 *	  locked while they run: the checks would not get their locks.
 */
void
SessionOrderAwaitChecks(const KindRoutine *routine, Node *parsetree)
{
	OrderCheck	check = {.utility = parsetree,.awaits = AWAIT_COLUMNS};

	if (routine->validates_against_keys != NULL && routine->validates_against_keys(parsetree))
		check.awaits |= AWAIT_KEYS;
	if (routine->checks_lock_tables)
		check.awaits |= AWAIT_HOLDERS;
	OrderStatementOnce(&check);
}

/*
 * Turn the checks off (false) or on again; returns whether they were on.
 * For explain_ddl and estimate_ddl, which analyse a statement that does
 * not run.
 */
bool
SessionOrderChecks(bool on)
{
	bool		were_on = !checks_off;

	checks_off = !on;
	return were_on;
}

/*
 * estimate_ddl of a raw statement (KindEstimate), with the checks off: what
 * is sampled is rolled back, and the session's order does not concern it.
 * False if no kind estimates it.
 */
bool
SessionOrderFreeEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	bool		checks_were_on = SessionOrderChecks(false);
	volatile bool estimated = false;

	PG_TRY();
	{
		estimated = KindEstimate(raw_statement, query_string, estimate);
	}
	PG_FINALLY();
	{
		(void) SessionOrderChecks(checks_were_on);
	}
	PG_END_TRY();
	return estimated;
}

/* Is the job (of the current transaction) in the group that a job submitted now joins? */
static bool
InGroupJoined(int64 job_id)
{
	int64		group_id = SessionSubmitGroup();
	BgddlJob	job;

	return group_id != 0 && CatalogJobLoad(job_id, &job, true) && job.group_id == group_id;
}

/*
 * The unfinished jobs of this session that a statement becoming a job
 * touches (int64 *): it starts after them.  One that has ended is
 * forgotten, and its failure is the statement's.
 */
List *
SessionOrderJobsBefore(Node *parsetree)
{
	StatementEffects statement = {0};
	List	   *orders;
	List	   *touches;
	List	   *before = NIL;
	ListCell   *lc;

	if (JobXactSessionOrders() == NIL && !JobXactHasSubmitted())
		return NIL;
	statement.query_effects = REL_READS;
	if (UtilityContainsQuery(parsetree) != NULL)
		(void) QueryEffectsWalker((Node *) UtilityContainsQuery(parsetree), &statement);
	else
		UtilityEffects(&statement, parsetree);
	orders = SessionJobsTouched(&statement, &touches);
	foreach(lc, JobXactSubmittedOrders())
	{
		int			touch = StatementTouches(&statement, lfirst(lc));

		/*
		 * A constraint added to a table that a job of the same group reads
		 * changes none of its rows; were the job to fail, the group's
		 * cancel would remove the constraint too, as the transaction's
		 * rollback would have: the two need no order
		 */
		if (touch == REL_REDEFINES && statement.only_constrains &&
			InGroupJoined(((JobOrder *) lfirst(lc))->job_id))
			continue;
		if (touch != 0)
			orders = lappend(orders, lfirst(lc));
	}
	foreach(lc, orders)
	{
		int64		job_id = ((JobOrder *) lfirst(lc))->job_id;
		BgddlJob	job;

		bool		found = CatalogJobLoad(job_id, &job, true);

		if (found && !JobStateIsFinal(job.state))
		{
			before = lappend(before, memcpy(palloc(sizeof(int64)), &job_id, sizeof(int64)));
			continue;
		}
		JobXactForget(job_id);
		if (found)
			SessionRaiseJobEnd(&job);
	}
	return before;
}

/*
 * A job was submitted: its order is the session's from its commit on.  A
 * plan cached over its sources (a function's statement, a prepared one) is
 * analysed again at its next use, so that its check runs.
 */
void
SessionOrderSubmitted(const JobOrder *order)
{
	ListCell   *lc;

	JobXactSubmit(order);
	foreach(lc, order->sources)
	{
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(lfirst_oid(lc))))
			CacheInvalidateRelcacheByRelid(lfirst_oid(lc));
	}
	CacheInvalidateRelcacheByRelid(order->target_oid);
}
