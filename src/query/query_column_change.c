/*-------------------------------------------------------------------------
 *
 * query_column_change.c
 *	  The columns that an ALTER TABLE ... ALTER COLUMN ... TYPE changes, as a
 *	  table's rewrite computes them: each row's new value, and the shape of
 *	  the rows that hold them.
 *
 * A change is the statement's own subcommand (an AlterTableCmd of subtype
 * AT_AlterColumnType, parsed again from the job's statement): the column's
 * name, its new type and collation (a ColumnDef), and the USING expression
 * (its raw_default) or none.  A row's new value is the USING expression, or
 * the column itself, coerced to the new type by assignment, as PostgreSQL's
 * ALTER TABLE computes it (tablecmds.c, ATPrepAlterColumnType); it is
 * analysed again wherever the job's query is, so that a type or function
 * that is gone fails the job with PostgreSQL's error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/heap.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
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

/* The change of a column, or NULL */
static AlterTableCmd *
ChangeOf(List *changes, const char *column)
{
	ListCell   *lc;

	foreach(lc, changes)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (strcmp(cmd->name, column) == 0)
			return cmd;
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

/*
 * The descriptor of the table's rows once the changes are made: its own,
 * each changed attribute with its new type, typmod, collation and storage
 * (at its place: ALTER COLUMN TYPE keeps the attribute number), NOT NULL
 * where the column is (the rewrite checks it; see QueryColumnChangedValue).
 */
TupleDesc
QueryColumnChangesDesc(Relation table, List *changes)
{
	TupleDesc	desc = CreateTupleDescCopy(RelationGetDescr(table));
	ListCell   *lc;

	foreach(lc, changes)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		Form_pg_attribute attribute = ChangedAttribute(table, cmd);
		AttrNumber	attnum = attribute->attnum;
		Oid			type;
		int32		typmod;
		Oid			collation;

		NewType(cmd, &type, &typmod, &collation);
		TupleDescInitEntry(desc, attnum, NameStr(attribute->attname), type, typmod,
						   attribute->attndims);
		TupleDescInitEntryCollation(desc, attnum, collation);
		TupleDescAttr(desc, attnum - 1)->attnotnull = attribute->attnotnull;
	}
	return desc;
}

/*
 * A changed column's value in a row of the table (its range table entry
 * item, in pstate's namespace): the USING expression, or the column, coerced to the new type, as
 * ALTER TABLE computes it, with its errors.  NULL if the column is not
 * changed.
 */
Expr *
QueryColumnChangedValue(ParseState *pstate, ParseNamespaceItem *item, Relation table,
						List *changes, Form_pg_attribute attribute)
{
	AlterTableCmd *cmd = ChangeOf(changes, NameStr(attribute->attname));
	ColumnDef  *def;
	Node	   *value;
	Oid			type;
	int32		typmod;
	Oid			collation;
	Oid			value_type;

	if (cmd == NULL)
		return NULL;
	def = castNode(ColumnDef, cmd->def);
	NewType(cmd, &type, &typmod, &collation);
	if (def->raw_default != NULL)
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
	value_type = exprType(value);
	value = coerce_to_target_type(pstate, value, value_type, type, typmod,
								  COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
	if (value == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" cannot be cast automatically to type %s",
						cmd->name, format_type_be(type))));
	assign_expr_collations(pstate, value);
	return (Expr *) value;
}

/*
 * Would PostgreSQL rewrite the table for this value of column attnum (a
 * row of the table's only range table entry)?  Not when it is the column,
 * relabelled or wrapped in a domain without constraints, or converted
 * between timestamp and timestamptz where the time zone makes them the
 * same: as ALTER TABLE decides (tablecmds.c, ATColumnChangeRequiresRewrite).
 */
bool
QueryColumnChangeRewrites(Node *value, AttrNumber attnum)
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
