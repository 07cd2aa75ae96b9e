/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The settings of background_ddl (GUCs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <limits.h>

#include "nodes/pg_list.h"
#include "utils/datetime.h"
#include "utils/guc.h"

#include "catalog/settings.h"
#include "pg/pg_compat.h"

bool		background_ddl_enabled = false;
int			background_ddl_max_workers = 2;
int			background_ddl_max_workers_per_job = 2;
int			background_ddl_batch_time_ms = 250;
int			background_ddl_max_attempts = 10;
int			background_ddl_lock_timeout_ms = 100;
int			background_ddl_history_retention_s = 7 * 24 * 3600;
char	   *background_ddl_test_hold_point = NULL;
char	   *background_ddl_test_fault = NULL;
char	   *background_ddl_after = NULL;
int			background_ddl_max_replica_lag_ms = 0;
int			background_ddl_citus_jobs_per_node = 2;
bool		background_ddl_chunked_index_build = true;
int			background_ddl_cutover = BGDDL_CUTOVER_AUTO;
char	   *background_ddl_cutover_window = NULL;
int			background_ddl_cutover_max_writes = 0;
char	   *background_ddl_cutover_group = NULL;
bool		background_ddl_estimate = false;

static const struct config_enum_entry cutover_options[] = {
	{"auto", BGDDL_CUTOVER_AUTO, false},
	{"manual", BGDDL_CUTOVER_MANUAL, false},
	{NULL, 0, false}
};

/*
 * The job ids of a list like background_ddl.after's ("41, 42"), as int64 *;
 * NIL with *bad set to the first item that is not a positive integer
 */
List *
SettingsJobList(const char *value, char **bad)
{
	List	   *ids = NIL;
	char	   *copy = pstrdup(value);
	char	   *item;
	char	   *save = NULL;

	*bad = NULL;
	for (item = strtok_r(copy, ", \t\n", &save); item != NULL; item = strtok_r(NULL, ", \t\n", &save))
	{
		char	   *end;
		long long	id;

		errno = 0;
		id = strtoll(item, &end, 10);
		if (*end != '\0' || errno != 0 || id <= 0)
		{
			*bad = pstrdup(item);
			return NIL;
		}
		ids = lappend(ids, memcpy(palloc(sizeof(int64)), &(int64) {id}, sizeof(int64)));
	}
	return ids;
}

static bool
CheckAfter(char **newval, void **extra, GucSource source)
{
	char	   *bad;

	(void) SettingsJobList(*newval, &bad);
	if (bad != NULL)
	{
		GUC_check_errdetail("\"%s\" is not a job id: background_ddl.after takes a comma-separated list of job ids.",
							bad);
		return false;
	}
	return true;
}

/*
 * A time of day window, 'HH:MM-HH:MM' (it may span midnight, '22:00-02:00'),
 * as the minutes of the day at which it starts and ends; false if value is
 * not one (or starts when it ends)
 */
bool
SettingsWindowParse(const char *value, int *start_minute, int *end_minute)
{
	int			start_hour,
				start_min,
				end_hour,
				end_min;
	char		rest;

	if (sscanf(value, "%2d:%2d-%2d:%2d%c", &start_hour, &start_min, &end_hour, &end_min, &rest) != 4 ||
		strlen(value) != 11 || start_hour > 23 || end_hour > 23 || start_min > 59 || end_min > 59 ||
		start_hour < 0 || end_hour < 0 || start_min < 0 || end_min < 0)
		return false;
	*start_minute = start_hour * 60 + start_min;
	*end_minute = end_hour * 60 + end_min;
	return *start_minute != *end_minute;
}

/*
 * Is the time of day now, in the session's TimeZone, in the window
 * ('HH:MM-HH:MM')?  A value that is not a window (none: '') is always open.
 */
bool
SettingsWindowOpen(const char *window)
{
	int			start;
	int			end;
	int			now;
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;

	if (!SettingsWindowParse(window, &start, &end) ||
		timestamp2tm(GetCurrentTimestamp(), &tz, &tm, &fsec, NULL, NULL) != 0)
		return true;
	now = tm.tm_hour * 60 + tm.tm_min;
	return start < end ? (now >= start && now < end) : (now >= start || now < end);
}

static bool
CheckCutoverWindow(char **newval, void **extra, GucSource source)
{
	int			start;
	int			end;

	if (**newval == '\0' || SettingsWindowParse(*newval, &start, &end))
		return true;
	GUC_check_errdetail("background_ddl.cutover_window takes a time of day window, 'HH:MM-HH:MM' (such as '01:00-05:00' or '22:00-02:00'), or '' for none.");
	return false;
}

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

	DefineCustomStringVariable("background_ddl.after",
							   "The jobs that the next submitted jobs start after.",
							   "A comma-separated list of job ids: a job submitted while it is set starts "
							   "once all of them have succeeded, and is cancelled if one fails or is cancelled.",
							   &background_ddl_after,
							   "",
							   PGC_USERSET,
							   0,
							   CheckAfter, NULL, NULL);

	DefineCustomEnumVariable("background_ddl.cutover",
							 "When the jobs submitted next publish their result.",
							 "auto: once it is built; manual: it is built and kept caught up, and "
							 "complete_ddl(id) publishes it (alter_ddl(id, cutover => ...) changes a job's).",
							 &background_ddl_cutover,
							 BGDDL_CUTOVER_AUTO,
							 cutover_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("background_ddl.cutover_window",
							   "The time of day at which the jobs submitted next may publish their result.",
							   "'HH:MM-HH:MM' in the session's TimeZone, such as '01:00-05:00'; '' for any time. "
							   "alter_ddl(id, cutover_window => ...) changes a job's.",
							   &background_ddl_cutover_window,
							   "",
							   PGC_USERSET,
							   0,
							   CheckCutoverWindow, NULL, NULL);

	DefineCustomIntVariable("background_ddl.cutover_max_writes",
							"The jobs submitted next publish their result only while fewer rows a second are written to the tables they read.",
							"0 turns it off; alter_ddl(id, cutover_max_writes => ...) changes a job's.",
							&background_ddl_cutover_max_writes,
							0, 0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("background_ddl.estimate",
							 "The jobs submitted next keep what estimate_ddl says of them, measured at their submit.",
							 "Their submit samples the statement first (as estimate_ddl, rolled back); "
							 "pg_stat_background_ddl.estimate shows it next to what the job cost.",
							 &background_ddl_estimate,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/* (not background_ddl.group: GROUP is a reserved word, which SET would need quoted) */
	DefineCustomStringVariable("background_ddl.cutover_group",
							   "The jobs that one transaction submits while it is set are published together, in one transaction.",
							   "Each is built on its own; once all are built, one of their workers publishes them all. "
							   "'' for none.",
							   &background_ddl_cutover_group,
							   "",
							   PGC_USERSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.max_replica_lag",
							"Jobs wait between batches while a standby replays more than this behind.",
							"0 turns it off; alter_ddl(id, max_replica_lag => ...) sets it for one job.",
							&background_ddl_max_replica_lag_ms,
							0, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("background_ddl.chunked_index_build",
							 "Builds a background btree index that is not unique, on a heap table, chunk by chunk.",
							 "Its scan is checkpointed and throttled chunk by chunk; off, such an index is "
							 "built by CREATE INDEX CONCURRENTLY, which starts over after a crash.",
							 &background_ddl_chunked_index_build,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("background_ddl.citus_jobs_per_node",
							"Maximum number of shard index builds of one job running at once on each Citus node.",
							"A CREATE INDEX job on a distributed table submits one job per shard placement to "
							"the node that holds it, at most this many at a time per node.",
							&background_ddl_citus_jobs_per_node,
							2, 1, 64,
							PGC_SIGHUP,
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

	DefineCustomStringVariable("background_ddl.test_fault",
							   "For tests only: a fault that job workers simulate.",
							   "\"cut-over without work\": a worker takes its cut-over for one that did nothing and asked for another step.",
							   &background_ddl_test_fault,
							   NULL,
							   PGC_SIGHUP,
							   GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							   NULL, NULL, NULL);

	MarkGUCPrefixReserved(BGDDL_EXTENSION_NAME);
}
