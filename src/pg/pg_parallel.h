/*-------------------------------------------------------------------------
 *
 * pg_parallel.h
 *	  What PostgreSQL lets a parallel worker evaluate.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_PARALLEL_H
#define BGDDL_PG_PARALLEL_H

#include "nodes/nodes.h"

extern bool PgExpressionParallelSafe(Node *expr);
extern bool PgQueryParallelSafe(const char *query_string);

#endif							/* BGDDL_PG_PARALLEL_H */
