/*-------------------------------------------------------------------------
 *
 * session_control.h
 *	  Holding, cancelling and waiting for a job from a session.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SESSION_CONTROL_H
#define BGDDL_SESSION_CONTROL_H

#include "nodes/parsenodes.h"

#include "catalog/catalog_job.h"

extern bool SessionHoldJob(int64 job_id, BgddlJob *job);
extern bool SessionCancelJob(int64 job_id, const char *reason, bool target_dropped);
extern bool SessionCancelDroppedTargets(DropStmt **stmt);
extern void SessionWaitForJob(int64 job_id, TimestampTz deadline, bool commit_between_looks,
							  BgddlJob *job, const char *for_what);
extern void SessionRaiseJobEnd(const BgddlJob *job);

#endif							/* BGDDL_SESSION_CONTROL_H */
