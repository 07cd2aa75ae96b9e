/*-------------------------------------------------------------------------
 *
 * job_messages.h
 *	  The messages a job's own statements raise, kept with the job.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_MESSAGES_H
#define BGDDL_JOB_MESSAGES_H

/* How many messages a job keeps (it counts all) */
#define JOB_MESSAGES_KEPT	100

extern void JobMessagesInstall(void);
extern void JobMessagesCatch(bool catch);
extern void JobMessagesDiscard(void);
extern void JobMessagesFlush(int64 job_id);
extern void JobMessagesNote(int elevel, const char *text, const char *detail);

#endif							/* BGDDL_JOB_MESSAGES_H */
