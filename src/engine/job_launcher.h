/*-------------------------------------------------------------------------
 *
 * job_launcher.h
 *	  The launcher and the per-database schedulers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_LAUNCHER_H
#define BGDDL_LAUNCHER_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "postmaster/bgworker.h"

extern void JobLauncherRegister(void);
extern TimestampTz JobRestartNotBefore(TimestampTz attempt_started_at, int32 attempts);
extern void JobWorkerDescribe(BackgroundWorker *worker, const char *function_name,
								const char *type, Datum main_arg, bool dynamic);

extern PGDLLEXPORT void JobLauncherMain(Datum main_arg);
extern PGDLLEXPORT void JobSchedulerMain(Datum main_arg);


#endif							/* BGDDL_LAUNCHER_H */
