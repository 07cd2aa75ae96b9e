/*-------------------------------------------------------------------------
 *
 * job_worker.h
 *	  The job worker: runs one job through its life cycle.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_WORKER_H
#define BGDDL_WORKER_H

#include "fmgr.h"

extern PGDLLEXPORT void JobWorkerMain(Datum main_arg);

#endif							/* BGDDL_WORKER_H */
