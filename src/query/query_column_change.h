/*-------------------------------------------------------------------------
 *
 * query_column_change.h
 *	  The columns that an ALTER COLUMN ... TYPE changes or an ADD COLUMN
 *	  adds, as a table's rewrite computes them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_QUERY_COLUMN_CHANGE_H
#define BGDDL_QUERY_COLUMN_CHANGE_H

#include "access/tupdesc.h"
#include "parser/parse_node.h"
#include "utils/relcache.h"

extern List *QueryColumnChangesBind(Relation table, List *cmds);
extern TupleDesc QueryColumnChangesDesc(Relation table, List *changes);
extern List *QueryColumnChangesWithoutVolatile(List *changes, int32 *width);
extern Expr *QueryColumnChangedValue(List *changes, AttrNumber attnum);
extern bool QueryColumnChangesRewrite(List *cmds, List *changes);
extern bool QueryColumnChangeKeepsDistinct(Node *value, AttrNumber attnum);

#endif							/* BGDDL_QUERY_COLUMN_CHANGE_H */
