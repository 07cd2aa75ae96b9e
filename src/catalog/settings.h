/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The settings of background_ddl, and the names every module shares.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SETTINGS_H
#define BGDDL_SETTINGS_H

#define BGDDL_EXTENSION_NAME	"background_ddl"
#define BGDDL_SCHEMA_NAME		"background_ddl"
#define BGDDL_VIEW_NAME			"pg_stat_background_ddl"	/* in the extension's schema */

/* GUCs (settings.c) */
extern bool background_ddl_enabled;
extern int	background_ddl_max_workers;
extern int	background_ddl_max_workers_per_job;
extern int	background_ddl_batch_time_ms;
extern int	background_ddl_max_attempts;
extern int	background_ddl_lock_timeout_ms;
extern int	background_ddl_history_retention_s;
extern char *background_ddl_test_hold_point;
extern char *background_ddl_test_fault;
extern char *background_ddl_after;
extern int	background_ddl_max_replica_lag_ms;
extern int	background_ddl_citus_jobs_per_node;
extern bool background_ddl_chunked_index_build;
extern int	background_ddl_cutover;
extern char *background_ddl_cutover_window;
extern int	background_ddl_cutover_max_writes;
extern char *background_ddl_cutover_group;
extern bool background_ddl_estimate;

/* The values of background_ddl.cutover */
typedef enum BgddlCutover
{
	BGDDL_CUTOVER_AUTO,			/* a job publishes its result once it is built */
	BGDDL_CUTOVER_MANUAL		/* ... once complete_ddl says so */
} BgddlCutover;

/* The range of a batch time, for background_ddl.batch_time and alter_ddl */
#define BGDDL_BATCH_TIME_MIN_MS	10
#define BGDDL_BATCH_TIME_MAX_MS	(3600 * 1000)

/* pg_advisory_lock(BGDDL_TEST_HOLD_KEY) holds a worker at its test hold point */
#define BGDDL_TEST_HOLD_KEY		4242

extern void SettingsDefine(void);
extern struct List *SettingsJobList(const char *value, char **bad);
extern bool SettingsWindowParse(const char *value, int *start_minute, int *end_minute);
extern bool SettingsWindowOpen(const char *window);

#endif							/* BGDDL_SETTINGS_H */
