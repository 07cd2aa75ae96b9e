/*-------------------------------------------------------------------------
 *
 * job_replica_lag.h
 *	  A job waits between its batches while a standby replays too far behind.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_REPLICA_LAG_H
#define BGDDL_JOB_REPLICA_LAG_H

#include "engine/job_run.h"

extern void JobRunWaitForStandbys(JobRun *run);

#endif							/* BGDDL_JOB_REPLICA_LAG_H */
