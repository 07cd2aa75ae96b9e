/*-------------------------------------------------------------------------
 *
 * background_ddl.h
 *	  Settings and names shared by every module of background_ddl.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKGROUND_DDL_H
#define BACKGROUND_DDL_H

#include "nodes/nodes.h"

#define BGDDL_EXTENSION_NAME	"background_ddl"
#define BGDDL_SCHEMA_NAME		"background_ddl"

/* GUCs (background_ddl.c) */
extern bool background_ddl_enabled;
extern int	background_ddl_max_workers;
extern int	background_ddl_max_workers_per_job;
extern int	background_ddl_batch_time_ms;
extern int	background_ddl_max_attempts;
extern int	background_ddl_lock_timeout_ms;
extern int	background_ddl_history_retention_s;
extern char *background_ddl_test_hold_point;

/* The range of a batch time, for background_ddl.batch_time and alter_ddl */
#define BGDDL_BATCH_TIME_MIN_MS	10
#define BGDDL_BATCH_TIME_MAX_MS	(3600 * 1000)

/* pg_advisory_lock(BGDDL_TEST_HOLD_KEY) holds a worker at its test hold point */
#define BGDDL_TEST_HOLD_KEY		4242

/*
 * A parse tree node of the expected type, or an error: castNode checks only
 * in assert-enabled builds, and a statement re-read as the wrong node is
 * undefined behaviour.
 */
static inline Node *
BgddlCheckNodeTag(Node *node, NodeTag tag, const char *type_name)
{
	if (node == NULL || nodeTag(node) != tag)
		elog(ERROR, "background_ddl: expected a %s node, found node type %d",
			 type_name, node != NULL ? (int) nodeTag(node) : 0);
	return node;
}

#define CheckedNode(type, node) \
	((type *) BgddlCheckNodeTag((Node *) (node), T_##type, #type))

#endif							/* BACKGROUND_DDL_H */
