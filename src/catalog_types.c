/*-------------------------------------------------------------------------
 *
 * catalog_types.c
 *	  The one table of job state, phase and kind names.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog_types.h"

static const char *const job_state_names[JOB_STATE_COUNT] = {
	[JOB_STATE_QUEUED] = "queued",
	[JOB_STATE_RUNNING] = "running",
	[JOB_STATE_PAUSED] = "paused",
	[JOB_STATE_CANCELLING] = "cancelling",
	[JOB_STATE_SUCCEEDED] = "succeeded",
	[JOB_STATE_FAILED] = "failed",
	[JOB_STATE_CANCELLED] = "cancelled",
};

static const char *const job_phase_names[JOB_PHASE_COUNT] = {
	[JOB_PHASE_NONE] = NULL,
	[JOB_PHASE_STARTING] = "starting",
	[JOB_PHASE_PLANNING] = "planning",
	[JOB_PHASE_INSTALLING_CAPTURE] = "installing capture",
	[JOB_PHASE_WAITING_FOR_LOCK] = "waiting for lock",
	[JOB_PHASE_BACKFILLING] = "backfilling",
	[JOB_PHASE_BUILDING_INDEXES] = "building indexes",
	[JOB_PHASE_CATCHING_UP] = "catching up",
	[JOB_PHASE_CUTTING_OVER] = "cutting over",
	[JOB_PHASE_CLEANING_UP] = "cleaning up",
};

static const char *const job_kind_names[JOB_KIND_COUNT] = {
	[JOB_KIND_CREATE_MATVIEW] = "CREATE MATERIALIZED VIEW",
	[JOB_KIND_CREATE_TABLE_AS] = "CREATE TABLE AS",
	[JOB_KIND_CREATE_INDEX] = "CREATE INDEX",
	[JOB_KIND_REFRESH_MATVIEW] = "REFRESH MATERIALIZED VIEW",
};

const char *
CatalogStateName(JobState state)
{
	Assert(state >= 0 && state < JOB_STATE_COUNT);
	return job_state_names[state];
}

JobState
CatalogStateFromName(const char *name)
{
	for (int i = 0; i < JOB_STATE_COUNT; i++)
	{
		if (strcmp(job_state_names[i], name) == 0)
			return (JobState) i;
	}
	elog(ERROR, "unknown background DDL job state \"%s\"", name);
	return JOB_STATE_FAILED;	/* keep compiler quiet */
}

/* The phase as pg_stat_background_ddl shows it; NULL for none */
const char *
CatalogPhaseName(JobPhase phase)
{
	Assert(phase >= 0 && phase < JOB_PHASE_COUNT);
	return job_phase_names[phase];
}

const char *
JobKindName(JobKind kind)
{
	Assert(kind >= 0 && kind < JOB_KIND_COUNT);
	return job_kind_names[kind];
}

JobKind
JobKindFromName(const char *name)
{
	for (int i = 0; i < JOB_KIND_COUNT; i++)
	{
		if (strcmp(job_kind_names[i], name) == 0)
			return (JobKind) i;
	}
	elog(ERROR, "unknown background DDL job kind \"%s\"", name);
	return JOB_KIND_CREATE_MATVIEW; /* keep compiler quiet */
}
