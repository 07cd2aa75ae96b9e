/*-------------------------------------------------------------------------
 *
 * session_control.h
 *	  Holding and cancelling a job from a session.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SESSION_CONTROL_H
#define BGDDL_SESSION_CONTROL_H

#include "nodes/parsenodes.h"

#include "catalog_job.h"

extern bool SessionHoldJob(int64 job_id, BgddlJob *job);
extern bool SessionCancelJob(int64 job_id, const char *reason, bool target_dropped);
extern List *SessionCancelDroppedTargets(DropStmt *stmt);

#endif							/* BGDDL_SESSION_CONTROL_H */
