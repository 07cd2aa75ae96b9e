/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Change capture: the trigger that logs changed rows of a job's base
 *	  tables, and installing and removing it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CAPTURE_H
#define BGDDL_CAPTURE_H

#include "nodes/pg_list.h"

#include "job_catalog.h"

extern void CaptureCallbacksInstall(void);
extern void CaptureInstall(BgddlJob *job, List *relids);
extern void CaptureRemove(BgddlJob *job);
extern bool CaptureIntact(BgddlJob *job);

#endif							/* BGDDL_CAPTURE_H */
