/*-------------------------------------------------------------------------
 *
 * catalog_types.c
 *	  The one table of job state and phase names.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/catalog_types.h"

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
	[JOB_PHASE_READY] = "ready",
	[JOB_PHASE_CUTTING_OVER] = "cutting over",
	[JOB_PHASE_CLEANING_UP] = "cleaning up",
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
