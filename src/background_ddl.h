/*-------------------------------------------------------------------------
 *
 * background_ddl.h
 *	  Settings and names shared by every module of background_ddl.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKGROUND_DDL_H
#define BACKGROUND_DDL_H

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

/* pg_advisory_lock(BGDDL_TEST_HOLD_KEY) holds a worker at its test hold point */
#define BGDDL_TEST_HOLD_KEY		4242

#endif							/* BACKGROUND_DDL_H */
