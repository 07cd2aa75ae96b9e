/*-------------------------------------------------------------------------
 *
 * catalog_types.h
 *	  The states and phases of a background DDL job, and their names; the
 *	  messages a job keeps.
 *
 * The names are what the job catalog stores and pg_stat_background_ddl
 * shows; catalog_types.c holds the one table of them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_TYPES_H
#define BGDDL_JOB_TYPES_H

#include "datatype/timestamp.h"

/*
 * queued -> running -> succeeded | failed, with paused (pause_ddl) and
 * cancelling (cancel_ddl committed, the job's objects still being removed)
 * -> cancelled on the side.  A terminal state other than succeeded means
 * that nothing of the job is left.
 */
typedef enum JobState
{
	JOB_STATE_QUEUED,
	JOB_STATE_RUNNING,
	JOB_STATE_PAUSED,
	JOB_STATE_CANCELLING,
	JOB_STATE_SUCCEEDED,
	JOB_STATE_FAILED,
	JOB_STATE_CANCELLED
} JobState;

#define JOB_STATE_COUNT (JOB_STATE_CANCELLED + 1)
#define JobStateIsFinal(state) ((state) >= JOB_STATE_SUCCEEDED)

/* What a job is doing; NONE once it has ended */
typedef enum JobPhase
{
	JOB_PHASE_NONE,
	JOB_PHASE_STARTING,
	JOB_PHASE_PLANNING,
	JOB_PHASE_INSTALLING_CAPTURE,
	JOB_PHASE_WAITING_FOR_LOCK,
	JOB_PHASE_BACKFILLING,
	JOB_PHASE_BUILDING_INDEXES,
	JOB_PHASE_CATCHING_UP,
	JOB_PHASE_READY,			/* built and caught up, waiting for complete_ddl */
	JOB_PHASE_CUTTING_OVER,
	JOB_PHASE_CLEANING_UP
} JobPhase;

#define JOB_PHASE_COUNT (JOB_PHASE_CLEANING_UP + 1)

/* A message (INFO, NOTICE, WARNING) that a job's statements raised */
typedef struct JobMessage
{
	TimestampTz raised_at;
	int			elevel;
	char	   *message;
	char	   *detail;
	char	   *hint;
	char	   *context;
} JobMessage;

/* How many messages a job keeps (it counts all) */
#define JOB_MESSAGES_KEPT	100

extern const char *CatalogStateName(JobState state);
extern JobState CatalogStateFromName(const char *name);
extern const char *CatalogPhaseName(JobPhase phase);

#endif							/* BGDDL_JOB_TYPES_H */
