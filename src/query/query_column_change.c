/*-------------------------------------------------------------------------
 *
 * query_column_change.c
 *	  The columns that an ALTER TABLE ... ALTER COLUMN ... TYPE changes or an
 *	  ADD COLUMN adds, as a table's rewrite computes them: each row's new
 *	  value, and the shape of the rows that hold them.
 *
 * The statement's subcommands (AlterTableCmd of subtype AT_AlterColumnType:
 * a column's name, its new type and collation, and the USING expression or
 * none; or of subtype AT_AddColumn: a new column, with its default or
 * generation expression) are bound at submit, as a view's query is: each
 * becomes a TargetEntry whose resno is the column's attribute number (an
 * added column's the next ones after the table's, in the statement's
 * order, as ALTER TABLE numbers them) and whose expression is the row's new
 * value: for a changed column the USING expression or the column coerced
 * to the new type by assignment, as PostgreSQL's ALTER TABLE computes it
 * (tablecmds.c, ATPrepAlterColumnType); for an added column its default or
 * generation expression cooked as PostgreSQL cooks it (heap.c,
 * cookDefault), or a null, coerced to its type (its domain checks it);
 * relabelled to the column's new type, typmod and collation.  An added
 * column that is NOT NULL has its entry marked resjunk (no entry of the
 * list is ever a query's output column, so the flag is free to carry it).
 * The job keeps that list (nodeToString): no name in it is looked up again
 * while the job runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/heap.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "query/query_column_change.h"

/* The change of a column (a TargetEntry of QueryColumnChangesBind), or NULL */
static TargetEntry *
ChangeOf(List *changes, AttrNumber attnum)
{
	ListCell   *lc;

	foreach(lc, changes)
	{
		TargetEntry *change = lfirst_node(TargetEntry, lc);

		if (change->resno == attnum)
			return change;
	}
	return NULL;
}

/* The changed column's attribute in the table (not dropped, not a system column) */
static Form_pg_attribute
ChangedAttribute(Relation table, AlterTableCmd *cmd)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(table), cmd->name);

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						cmd->name, RelationGetRelationName(table))));
	return TupleDescAttr(RelationGetDescr(table), attnum - 1);
}

/* The new type, typmod and collation of a changed column */
static void
NewType(AlterTableCmd *cmd, Oid *type, int32 *typmod, Oid *collation)
{
	ColumnDef  *def = castNode(ColumnDef, cmd->def);

	typenameTypeIdAndMod(NULL, def->typeName, type, typmod);
	*collation = GetColumnDefCollation(NULL, def, *type);
}

/* The number of columns that the changes add to the table */
static int
AddedColumns(Relation table, List *changes)
{
	int			added = 0;
	ListCell   *lc;

	foreach(lc, changes)
		added += lfirst_node(TargetEntry, lc)->resno > RelationGetDescr(table)->natts;
	return added;
}

/*
 * The descriptor of the table's rows once the changes are made: its own,
 * each changed attribute with its new type, typmod, collation and storage
 * (at its place: ALTER COLUMN TYPE keeps the attribute number), each added
 * one after them; NOT NULL where the column is (the content relation
 * checks it: query_backfill.c).
 */
TupleDesc
QueryColumnChangesDesc(Relation table, List *changes)
{
	TupleDesc	old_desc = RelationGetDescr(table);
	TupleDesc	desc = CreateTemplateTupleDesc(old_desc->natts + AddedColumns(table, changes));
	ListCell   *lc;

	for (AttrNumber attnum = 1; attnum <= old_desc->natts; attnum++)
		TupleDescCopyEntry(desc, attnum, old_desc, attnum);
	foreach(lc, changes)
	{
		TargetEntry *change = lfirst_node(TargetEntry, lc);
		AttrNumber	attnum = change->resno;
		bool		added = attnum > old_desc->natts;
		Form_pg_attribute attribute = added ? NULL : TupleDescAttr(old_desc, attnum - 1);

		TupleDescInitEntry(desc, attnum, change->resname, exprType((Node *) change->expr),
						   exprTypmod((Node *) change->expr), added ? 0 : attribute->attndims);
		TupleDescInitEntryCollation(desc, attnum, exprCollation((Node *) change->expr));
		TupleDescAttr(desc, attnum - 1)->attnotnull = added ? change->resjunk : attribute->attnotnull;
	}
	return desc;
}

/* A raw column definition's constraint of a type (a CONSTR_*), or NULL */
static Constraint *
ColumnConstraint(ColumnDef *def, ConstrType type)
{
	ListCell   *lc;

	foreach(lc, def->constraints)
	{
		if (lfirst_node(Constraint, lc)->contype == type)
			return lfirst(lc);
	}
	return NULL;
}

/*
 * An added column's value in each row: its generation expression or its
 * default, cooked as ADD COLUMN cooks them (the table the parse state's
 * only entry, for a generation expression's columns), or a null of its type
 * (through its domain's checks, as ALTER TABLE makes it)
 */
static Node *
AddedColumnValue(ParseState *pstate, ColumnDef *def, Oid type, int32 typmod)
{
	Constraint *generated = ColumnConstraint(def, CONSTR_GENERATED);
	Constraint *default_value = ColumnConstraint(def, CONSTR_DEFAULT);
	Oid			base_type;
	int32		base_typmod;
	Node	   *value;

	if (generated != NULL)
		return cookDefault(pstate, copyObject(generated->raw_expr), type, typmod, def->colname,
						   ATTRIBUTE_GENERATED_STORED);
	if (default_value != NULL)
		return cookDefault(pstate, copyObject(default_value->raw_expr), type, typmod, def->colname, '\0');
	base_typmod = typmod;
	base_type = getBaseTypeAndTypmod(type, &base_typmod);
	value = (Node *) makeNullConst(base_type, base_typmod, get_typcollation(base_type));
	return coerce_to_target_type(pstate, value, base_type, type, typmod, COERCION_ASSIGNMENT,
								 COERCE_IMPLICIT_CAST, -1);
}

/*
 * Bind the subcommands (cmds) of an ALTER COLUMN ... TYPE or ADD COLUMN of
 * the table: the list of changes described above, one per subcommand in
 * its order, with ALTER TABLE's errors
 */
List *
QueryColumnChangesBind(Relation table, List *cmds)
{
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *item = addRangeTableEntryForRelation(pstate, table, AccessShareLock,
															 NULL, false, true);
	AttrNumber	next_attnum = RelationGetDescr(table)->natts + 1;
	List	   *changes = NIL;
	ListCell   *lc;

	addNSItemToQuery(pstate, item, false, true, true);
	foreach(lc, cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		ColumnDef  *def = castNode(ColumnDef, cmd->def);
		bool		adds = cmd->subtype == AT_AddColumn;
		Form_pg_attribute attribute = adds ? NULL : ChangedAttribute(table, cmd);
		Node	   *value;
		Oid			type;
		int32		typmod;
		Oid			collation;
		TargetEntry *change;

		NewType(cmd, &type, &typmod, &collation);
		if (adds)
			value = AddedColumnValue(pstate, def, type, typmod);
		else if (def->raw_default != NULL)
		{
			value = transformExpr(pstate, copyObject(def->raw_default),
								  EXPR_KIND_ALTER_COL_TRANSFORM);
			assign_expr_collations(pstate, value);
			if (expression_returns_set(value))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("transform expression must not return a set")));
		}
		else
			value = (Node *) makeVar(item->p_rtindex, attribute->attnum, attribute->atttypid,
									 attribute->atttypmod, attribute->attcollation, 0);
		if (!adds)
			value = coerce_to_target_type(pstate, value, exprType(value), type, typmod,
										  COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
		if (value == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" cannot be cast automatically to type %s",
							cmd->name, format_type_be(type))));
		assign_expr_collations(pstate, value);
		value = (Node *) makeRelabelType((Expr *) value, type, typmod, collation,
										 COERCE_IMPLICIT_CAST);
		change = makeTargetEntry((Expr *) value, adds ? next_attnum++ : attribute->attnum,
								 pstrdup(adds ? def->colname : NameStr(attribute->attname)),
								 adds && (def->is_not_null ||
										  ColumnConstraint(def, CONSTR_NOTNULL) != NULL));
		changes = lappend(changes, change);
	}
	return changes;
}

/*
 * The changes for a measure that must have no effect (estimate_ddl): each
 * value that calls a volatile function (a default's nextval() or random(),
 * a USING expression's) replaced by a null of its type, as nextval() would
 * advance its sequence for good, and a function may have effects that no
 * rollback undoes.  *width: the average width of the values replaced, which
 * the measure then lacks, per row.  (A null is not checked: an added NOT
 * NULL column is measured as one that may be null.)
 */
List *
QueryColumnChangesWithoutVolatile(List *changes, int32 *width)
{
	List	   *measured = NIL;
	ListCell   *lc;

	*width = 0;
	foreach(lc, changes)
	{
		TargetEntry *change = copyObject(lfirst_node(TargetEntry, lc));
		Node	   *value = (Node *) change->expr;

		if (contain_volatile_functions(value))
		{
			*width += get_typavgwidth(exprType(value), exprTypmod(value));
			change->expr = (Expr *) makeNullConst(exprType(value), exprTypmod(value),
												  exprCollation(value));
			change->resjunk = false;
		}
		measured = lappend(measured, change);
	}
	return measured;
}

/*
 * A changed or added column's value in a row of the table (the table the only
 * entry of the query's range table), or NULL if the column is not changed
 */
Expr *
QueryColumnChangedValue(List *changes, AttrNumber attnum)
{
	TargetEntry *change = ChangeOf(changes, attnum);

	return change != NULL ? copyObject(change->expr) : NULL;
}

/*
 * Would PostgreSQL rewrite the table for this value of column attnum (a
 * row of the table's only range table entry)?  Not when it is the column,
 * relabelled or wrapped in a domain without constraints, or converted
 * between timestamp and timestamptz where the time zone makes them the
 * same: as ALTER TABLE decides (tablecmds.c, ATColumnChangeRequiresRewrite).
 */
static bool
ChangeRewrites(Node *value, AttrNumber attnum)
{
	for (;;)
	{
		if (IsA(value, Var))
			return ((Var *) value)->varattno != attnum;
		if (IsA(value, RelabelType))
			value = (Node *) ((RelabelType *) value)->arg;
		else if (IsA(value, CoerceToDomain) &&
				 !DomainHasConstraints(((CoerceToDomain *) value)->resulttype))
			value = (Node *) ((CoerceToDomain *) value)->arg;
		else if (IsA(value, FuncExpr) &&
				 (((FuncExpr *) value)->funcid == F_TIMESTAMPTZ_TIMESTAMP ||
				  ((FuncExpr *) value)->funcid == F_TIMESTAMP_TIMESTAMPTZ) &&
				 !TimestampTimestampTzRequiresRewrite())
			value = linitial(((FuncExpr *) value)->args);
		else
			return true;
	}
}

/*
 * Would PostgreSQL rewrite the table for these changes (the subcommands
 * cmds bound: QueryColumnChangesBind)?  For a changed column, as above; for
 * an added one, if it is generated, or its default is volatile, or its
 * domain has constraints (tablecmds.c, ATExecAddColumn): otherwise its value
 * is stored once, as the column's missing value.
 */
bool
QueryColumnChangesRewrite(List *cmds, List *changes)
{
	ListCell   *cmd_cell;
	ListCell   *change_cell;

	forboth(cmd_cell, cmds, change_cell, changes)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, cmd_cell);
		TargetEntry *change = lfirst_node(TargetEntry, change_cell);

		if (cmd->subtype != AT_AddColumn ? ChangeRewrites((Node *) change->expr, change->resno) :
			(ColumnConstraint(castNode(ColumnDef, cmd->def), CONSTR_GENERATED) != NULL ||
			 contain_volatile_functions((Node *) change->expr) ||
			 DomainHasConstraints(exprType((Node *) change->expr))))
			return true;
	}
	return false;
}

/*
 * Does the value keep distinct values of the column distinct: the column
 * itself, or widened from a smaller integer type to a larger one, or to
 * numeric or float8 (each value exact)?  A unique index on the column then
 * stays unique through the rewrite without being checked.
 */
bool
QueryColumnChangeKeepsDistinct(Node *value, AttrNumber attnum)
{
	while (IsA(value, RelabelType))
		value = (Node *) ((RelabelType *) value)->arg;
	if (IsA(value, FuncExpr))
	{
		FuncExpr   *func = (FuncExpr *) value;

		switch (func->funcid)
		{
			case F_INT4_INT2:
			case F_INT8_INT2:
			case F_INT8_INT4:
			case F_NUMERIC_INT2:
			case F_NUMERIC_INT4:
			case F_NUMERIC_INT8:
			case F_FLOAT8_INT2:
			case F_FLOAT8_INT4:
				value = linitial(func->args);
				break;
			default:
				return false;
		}
		while (IsA(value, RelabelType))
			value = (Node *) ((RelabelType *) value)->arg;
	}
	return IsA(value, Var) && ((Var *) value)->varattno == attnum;
}
