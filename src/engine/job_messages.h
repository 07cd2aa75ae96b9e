/*-------------------------------------------------------------------------
 *
 * job_messages.h
 *	  The messages a job's own statements raise, kept with the job.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_MESSAGES_H
#define BGDDL_JOB_MESSAGES_H

#include "nodes/pg_list.h"

#include "catalog/catalog_types.h"

extern void JobMessagesInstall(void);
extern void JobMessagesCatch(bool catch);
extern List *JobMessagesPending(int64 *uncaught);
extern void JobMessagesDiscard(void);
extern void JobMessagesNote(int elevel, const char *text, const char *detail);

#endif							/* BGDDL_JOB_MESSAGES_H */
