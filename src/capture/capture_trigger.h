/*-------------------------------------------------------------------------
 *
 * capture_trigger.h
 *	  Change capture: the trigger that logs changed rows of a job's base
 *	  tables, and installing, checking and removing it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CAPTURE_H
#define BGDDL_CAPTURE_H

#include "nodes/parsenodes.h"
#include "storage/block.h"

#include "capture/block_space.h"
#include "capture/capture_log.h"

/*
 * Where a writer's session reports what its capture triggers cost a job in
 * a transaction, at its end: calls measured (one in CAPTURE_SAMPLE_EVERY of
 * the session's) and their time; set by whoever keeps it (the engine)
 */
typedef void (*CaptureCostReport) (int64 job_id, int64 samples, int64 nanoseconds);
extern CaptureCostReport capture_cost_report;

extern void CaptureCallbacksInstall(void);
extern void CaptureCheckRename(RenameStmt *stmt);
extern char *CaptureRefusal(Oid relid, Oid roleid);
extern void CaptureInstall(int64 job_id, Oid target_oid, List *relids, List *join_attnums,
						   Oid driving_oid, const CaptureSegment *segments, int nsegments,
						   Capture *capture);
extern void CaptureInstallUpdatedRows(int64 job_id, Oid relid, Capture *capture);
extern bool CaptureIntact(const Capture *capture);
extern void CaptureDetach(int64 job_id, Oid target_oid);
extern List *CaptureTables(int64 job_id, Oid *driving_oid);
extern void CaptureRemove(int64 job_id, Oid target_oid);

#endif							/* BGDDL_CAPTURE_H */
