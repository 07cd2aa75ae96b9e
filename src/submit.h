/*-------------------------------------------------------------------------
 *
 * submit.h
 *	  The ProcessUtility hook that turns DDL into background jobs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SUBMIT_H
#define BGDDL_SUBMIT_H

#include "nodes/pg_list.h"

extern void SubmitHookInstall(void);
extern int64 SubmitLastJobId(void);
extern bool SubmitJobIsUncommitted(int64 job_id);
extern void SubmitWakeAtCommit(void);

#endif							/* BGDDL_SUBMIT_H */
