/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The settings of background_ddl (GUCs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "pg_compat.h"
#include "settings.h"

bool		background_ddl_enabled = false;
int			background_ddl_max_workers = 2;
int			background_ddl_max_workers_per_job = 2;
int			background_ddl_batch_time_ms = 250;
int			background_ddl_max_attempts = 10;
int			background_ddl_lock_timeout_ms = 100;
int			background_ddl_history_retention_s = 7 * 24 * 3600;
char	   *background_ddl_test_hold_point = NULL;

/* Define the settings and reserve their prefix; at library load */
void
SettingsDefine(void)
{
	DefineCustomBoolVariable("background_ddl",
							 "Runs long DDL statements as background jobs.",
							 "While on, CREATE MATERIALIZED VIEW, CREATE TABLE AS, CREATE INDEX and "
							 "REFRESH MATERIALIZED VIEW are validated, persisted as jobs and built by "
							 "background workers.",
							 &background_ddl_enabled,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.max_workers",
							"Maximum number of background DDL jobs running at once.",
							NULL,
							&background_ddl_max_workers,
							2, 1, 64,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.max_workers_per_job",
							"Maximum number of workers that compute the chunks of one job.",
							"A job's first worker runs all of it; while its backfill has chunks left, "
							"more workers take chunks of it, within background_ddl.max_workers.",
							&background_ddl_max_workers_per_job,
							2, 1, 64,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.batch_time",
							"Target duration of one backfill batch.",
							"Each batch is one short transaction; its size adapts toward this duration.",
							&background_ddl_batch_time_ms,
							250, BGDDL_BATCH_TIME_MIN_MS, BGDDL_BATCH_TIME_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.max_attempts",
							"Number of times a job may be started before it is failed.",
							"A job that keeps crashing its worker or the server stops after this many attempts.",
							&background_ddl_max_attempts,
							10, 1, 1000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.lock_timeout",
							"How long a job asks for a lock on a user's table without queueing, then the longest it waits in the queue.",
							"A step that does not get its lock is undone and retried later, so that sessions queued behind the job's request never wait longer than this.",
							&background_ddl_lock_timeout_ms,
							100, 1, 60000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.history_retention",
							"How long finished jobs stay in pg_stat_background_ddl.",
							NULL,
							&background_ddl_history_retention_s,
							7 * 24 * 3600, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomStringVariable("background_ddl.test_hold_point",
							   "For tests only: a point where job workers wait for an advisory lock.",
							   "A worker that reaches the named point waits while another session holds pg_advisory_lock(4242).",
							   &background_ddl_test_hold_point,
							   NULL,
							   PGC_SIGHUP,
							   GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							   NULL, NULL, NULL);

	MarkGUCPrefixReserved(BGDDL_EXTENSION_NAME);
}
