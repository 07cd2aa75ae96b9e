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

/* Our triggers on the base relations of one job */
typedef struct CaptureTriggers
{
	List	   *trigger_oids;
	List	   *trigger_xmins;	/* raw xmin of each pg_trigger row at install */
} CaptureTriggers;

extern void CaptureCallbacksInstall(void);
extern void CaptureCheckRename(RenameStmt *stmt);
extern char *CaptureRefusal(Oid relid, Oid roleid);
extern void CaptureInstall(int64 job_id, Oid target_oid, List *relids, Oid driving_oid,
						   CaptureTriggers *triggers);
extern bool CaptureIntact(const CaptureTriggers *triggers);
extern void CaptureDetach(const CaptureTriggers *triggers, Oid target_oid);
extern void CaptureRemove(const CaptureTriggers *triggers, Oid target_oid);

#endif							/* BGDDL_CAPTURE_H */
