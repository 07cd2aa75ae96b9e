/*-------------------------------------------------------------------------
 *
 * job_messages.c
 *	  The messages a job's own statements raise (INFO, NOTICE, WARNING),
 *	  kept with the job.
 *
 * The blocking statement would have shown them to its client; a job runs in
 * a background worker, which has no client, and whose log_min_messages
 * usually drops a NOTICE.  So while the job's query runs (JobQueryBegin to
 * JobQueryEnd) the worker lets such messages through to an emit_log_hook,
 * which keeps them in the worker's memory and takes them out of the server
 * log unless log_min_messages wanted them there.  They are written to
 * background_ddl.message by the step that raised them, just before it
 * commits (the worker has its steps do it: CatalogJobAppendMessages); a step that aborts is done again and raises them again.  A job
 * keeps its first JOB_MESSAGES_KEPT messages and counts all of them (the
 * messages column of pg_stat_background_ddl); ddl_messages(id) reads them,
 * for whoever may read the job's command.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "engine/job_messages.h"

static emit_log_hook_type prev_emit_log_hook = NULL;
static bool capturing = false;
static int	server_log_level = WARNING;	/* log_min_messages before we lowered it */
static MemoryContext messages_context = NULL;
static List *pending = NIL;		/* JobMessages of the current step */
static int64 pending_uncaught = 0;	/* ... and how many more it raised */

/* Would the server log have had this message at log_min_messages level? */
static bool
LoggedAtLevel(int elevel, int level)
{
	return level != LOG && elevel >= level;
}

static char *
CopyOrNull(const char *text)
{
	return text != NULL ? MemoryContextStrdup(messages_context, text) : NULL;
}

static void
CatchJobMessage(ErrorData *edata)
{
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
	if (!capturing || edata->elevel < INFO || edata->elevel >= ERROR)
		return;
	if (list_length(pending) < JOB_MESSAGES_KEPT)
	{
		MemoryContext old_context = MemoryContextSwitchTo(messages_context);
		JobMessage *message = palloc(sizeof(JobMessage));

		message->raised_at = GetCurrentTimestamp();
		message->elevel = edata->elevel;
		message->message = CopyOrNull(edata->message);
		message->detail = CopyOrNull(edata->detail);
		message->hint = CopyOrNull(edata->hint);
		message->context = CopyOrNull(edata->context);
		pending = lappend(pending, message);
		MemoryContextSwitchTo(old_context);
	}
	else
		pending_uncaught++;
	if (!LoggedAtLevel(edata->elevel, server_log_level))
		edata->output_to_server = false;
}

/*
 * Keep a message of the worker's own with the job's (an interruption it
 * will retry after), as if the job's statement had raised it
 */
void
JobMessagesNote(int elevel, const char *text, const char *detail)
{
	MemoryContext old_context;
	JobMessage *message;

	if (messages_context == NULL)
		return;
	old_context = MemoryContextSwitchTo(messages_context);
	message = palloc0(sizeof(JobMessage));
	message->raised_at = GetCurrentTimestamp();
	message->elevel = elevel;
	message->message = CopyOrNull(text);
	message->detail = CopyOrNull(detail);
	pending = lappend(pending, message);
	MemoryContextSwitchTo(old_context);
}

/* In a job worker, before its first step */
void
JobMessagesInstall(void)
{
	messages_context = AllocSetContextCreate(TopMemoryContext, "background_ddl job messages",
											 ALLOCSET_SMALL_SIZES);
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = CatchJobMessage;
}

/*
 * Catch the messages of the job's query from now on, or stop.  While it
 * catches, log_min_messages is lowered so that they are raised at all (set
 * directly, not through the GUC machinery, whose saved values a
 * transaction's end would restore: an index build commits inside).
 */
void
JobMessagesCatch(bool catch)
{
	if (messages_context == NULL || catch == capturing)
		return;					/* not a job worker, or nothing changes */
	capturing = catch;
	if (catch)
	{
		server_log_level = log_min_messages;
		if (log_min_messages > INFO || log_min_messages == LOG)
			log_min_messages = INFO;
	}
	else
		log_min_messages = server_log_level;
}

/*
 * The messages of the current step (JobMessages in a context that lives
 * until JobMessagesDiscard), and how many more it raised than it kept
 */
List *
JobMessagesPending(int64 *uncaught)
{
	*uncaught = pending_uncaught;
	return pending;
}

/* Forget the messages of the step: written, or the step aborted */
void
JobMessagesDiscard(void)
{
	JobMessagesCatch(false);
	pending = NIL;
	pending_uncaught = 0;
	if (messages_context != NULL)
		MemoryContextReset(messages_context);
}
