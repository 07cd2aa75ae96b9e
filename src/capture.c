/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Change capture for exact results while the base tables are written.
 *
 * A chunked job reads each chunk at its own snapshot.  To end up with the
 * query's result at one snapshot (the cut-over's), every change committed to
 * a base table after a row was read must be known, down to the row: the
 * capture trigger appends, in the writer's own transaction, the tuple ids
 * of the OLD and NEW versions of every changed row of the driving table to
 * background_ddl.dirty.  A change the log cannot pin to driving rows (a row
 * of another base table, a TRUNCATE) appends one whole_table mark.  Since
 * the marks commit or abort with the change itself, a mark is visible in a
 * snapshot exactly when its change is.  catchup.c consumes them.
 *
 * The trigger must see every write and never fail one:
 *	- it is ENABLE ALWAYS, so it also fires under session_replication_role =
 *	  replica (logical replication apply, restores);
 *	- it writes the log with a plain heap insert, not through SQL, so no
 *	  privilege of the writer on our schema is involved, and no SPI runs per
 *	  row;
 *	- it logs each tuple id once per transaction, remembering which
 *	  subtransaction logged it: when that subtransaction rolls back, its
 *	  marks vanish with it, so it must forget them too, or a later change of
 *	  the same row in the same transaction would go unlogged.
 *
 * Installing the triggers takes SHARE ROW EXCLUSIVE on each base table (and
 * removing them ACCESS EXCLUSIVE): both run with a short lock_timeout and
 * are retried with backoff (worker.c), so a queued lock request never stalls
 * the table's writers for longer than that timeout.  Once the install has
 * committed, every later write fires the trigger: writers that held a lock
 * on the table when we asked for ours had to finish first, and any later
 * writer sees the new trigger when it locks the table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "background_ddl.h"
#include "capture.h"
#include "job_catalog.h"

PG_FUNCTION_INFO_V1(capture_changes);

/* A mark already written by this transaction: (job, tid); an invalid tid is a whole_table mark */
typedef struct LoggedMarkKey
{
	int64		job_id;
	ItemPointerData tid;
} LoggedMarkKey;

typedef struct LoggedMark
{
	LoggedMarkKey key;
	SubTransactionId subid;		/* the subtransaction that wrote it */
} LoggedMark;

/* Marks written by the current top-level transaction; lives in TopTransactionContext */
static HTAB *logged_marks = NULL;

/* background_ddl.dirty, looked up once per transaction that logs marks */
static Oid	dirty_oid = InvalidOid;

static void
CaptureXactCallback(XactEvent event, void *arg)
{
	/* The table itself goes away with TopTransactionContext */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		logged_marks = NULL;
		dirty_oid = InvalidOid;
	}
}

/*
 * A committed subtransaction's marks now belong to its parent; an aborted
 * one's were rolled back and must be written again if the row changes again.
 */
static void
CaptureSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS status;
	LoggedMark *mark;

	if (logged_marks == NULL ||
		(event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB))
		return;

	hash_seq_init(&status, logged_marks);
	while ((mark = hash_seq_search(&status)) != NULL)
	{
		if (mark->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			mark->subid = parentSubid;
		else
			(void) hash_search(logged_marks, &mark->key, HASH_REMOVE, NULL);
	}
}

void
CaptureCallbacksInstall(void)
{
	RegisterXactCallback(CaptureXactCallback, NULL);
	RegisterSubXactCallback(CaptureSubXactCallback, NULL);
}

/*
 * Append one mark to background_ddl.dirty, unless this transaction already
 * did (and has not rolled it back).  tid NULL: a whole_table mark.
 */
static void
LogDirtyMark(int64 job_id, ItemPointer tid)
{
	LoggedMarkKey key;
	LoggedMark *mark;
	bool		found;
	Relation	dirty;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (logged_marks == NULL)
	{
		HASHCTL		ctl;
		Oid			namespace_oid = get_namespace_oid(BGDDL_SCHEMA_NAME, true);

		dirty_oid = OidIsValid(namespace_oid) ?
			get_relname_relid("dirty", namespace_oid) : InvalidOid;

		ctl.keysize = sizeof(LoggedMarkKey);
		ctl.entrysize = sizeof(LoggedMark);
		ctl.hcxt = TopTransactionContext;
		logged_marks = hash_create("background_ddl logged marks", 256, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	memset(&key, 0, sizeof(key));
	key.job_id = job_id;
	if (tid != NULL)
		ItemPointerCopy(tid, &key.tid);
	else
		ItemPointerSetInvalid(&key.tid);
	mark = hash_search(logged_marks, &key, HASH_ENTER, &found);
	if (found)
		return;
	mark->subid = GetCurrentSubTransactionId();

	if (!OidIsValid(dirty_oid))
		return;					/* extension dropped: nothing to capture for */

	dirty = table_open(dirty_oid, RowExclusiveLock);
	values[0] = Int64GetDatum(job_id);
	values[1] = tid != NULL ? PointerGetDatum(&key.tid) : (Datum) 0;
	nulls[1] = (tid == NULL);
	values[2] = BoolGetDatum(tid == NULL);
	simple_heap_insert(dirty, heap_form_tuple(RelationGetDescr(dirty), values, nulls));
	table_close(dirty, NoLock);
}

/*
 * The capture trigger.  Arguments: the job id, and "driving" (row trigger
 * on the driving table), "other" (row trigger on another base table) or
 * "truncate" (statement trigger on any base table).
 */
Datum
capture_changes(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	int64		job_id;
	TriggerEvent event;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("capture_changes() must be called as a trigger")));
	trigger = trigdata->tg_trigger;
	if (trigger->tgnargs != 2)
		elog(ERROR, "capture_changes() expects 2 trigger arguments, got %d",
			 trigger->tgnargs);
	job_id = pg_strtoint64(trigger->tgargs[0]);
	event = trigdata->tg_event;

	if (strcmp(trigger->tgargs[1], "driving") != 0 || TRIGGER_FIRED_BY_TRUNCATE(event))
		LogDirtyMark(job_id, NULL);
	else if (TRIGGER_FIRED_BY_UPDATE(event))
	{
		LogDirtyMark(job_id, &trigdata->tg_trigslot->tts_tid);
		LogDirtyMark(job_id, &trigdata->tg_newslot->tts_tid);
	}
	else
		LogDirtyMark(job_id, &trigdata->tg_trigslot->tts_tid);

	return PointerGetDatum(NULL);
}

static char *
CaptureTriggerName(int64 job_id, bool truncate)
{
	return psprintf("background_ddl_capture_" INT64_FORMAT "%s", job_id,
					truncate ? "_truncate" : "");
}

static char *
QualifiedRelationName(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static void
ExecuteOrError(const char *sql)
{
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "background_ddl could not run: %s", sql);
}

/*
 * Create the capture triggers of a job on its base relations (the first is
 * the driving table), ENABLE ALWAYS.  Caller is in a transaction, as a
 * superuser, with lock_timeout set.
 */
void
CaptureInstall(BgddlJob *job, List *relids)
{
	ListCell   *lc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);
		char	   *relname = QualifiedRelationName(relid);
		const char *row_trigger = quote_identifier(CaptureTriggerName(job->id, false));
		const char *truncate_trigger = quote_identifier(CaptureTriggerName(job->id, true));

		ExecuteOrError(psprintf("CREATE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s "
								"FOR EACH ROW EXECUTE FUNCTION background_ddl.capture_changes('"
								INT64_FORMAT "', '%s')",
								row_trigger, relname, job->id,
								relid == job->driving_oid ? "driving" : "other"));
		ExecuteOrError(psprintf("CREATE TRIGGER %s AFTER TRUNCATE ON %s "
								"FOR EACH STATEMENT EXECUTE FUNCTION background_ddl.capture_changes('"
								INT64_FORMAT "', 'truncate')",
								truncate_trigger, relname, job->id));
		ExecuteOrError(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER %s", relname, row_trigger));
		ExecuteOrError(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER %s", relname, truncate_trigger));
	}
	SPI_finish();
}

/*
 * Are all capture triggers of a job still there and firing ALWAYS?  A table
 * owner can drop or disable them (or ALTER TABLE ... DISABLE TRIGGER ALL):
 * changes may then have gone unlogged.  Caller is in a transaction; takes
 * ACCESS SHARE on the base relations.
 */
bool
CaptureIntact(BgddlJob *job)
{
	ListCell   *lc;
	char	   *row_trigger = CaptureTriggerName(job->id, false);
	char	   *truncate_trigger = CaptureTriggerName(job->id, true);

	foreach(lc, job->capture_relids)
	{
		Relation	rel = try_relation_open(lfirst_oid(lc), AccessShareLock);
		int			intact = 0;

		if (rel == NULL)
			return false;
		for (int i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
		{
			Trigger    *trigger = &rel->trigdesc->triggers[i];

			if ((strcmp(trigger->tgname, row_trigger) == 0 ||
				 strcmp(trigger->tgname, truncate_trigger) == 0) &&
				trigger->tgenabled == TRIGGER_FIRES_ALWAYS)
				intact++;
		}
		relation_close(rel, NoLock);
		if (intact != 2)
			return false;
	}
	return true;
}

/*
 * Drop the capture triggers of a job from those of its base relations that
 * still exist.  Caller is in a transaction, as a superuser, with
 * lock_timeout set.
 */
void
CaptureRemove(BgddlJob *job)
{
	ListCell   *lc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, job->capture_relids)
	{
		Oid			relid = lfirst_oid(lc);
		char	   *relname;

		if (get_rel_name(relid) == NULL)
			continue;			/* dropped, and its triggers with it */
		relname = QualifiedRelationName(relid);
		ExecuteOrError(psprintf("DROP TRIGGER IF EXISTS %s ON %s",
								quote_identifier(CaptureTriggerName(job->id, false)), relname));
		ExecuteOrError(psprintf("DROP TRIGGER IF EXISTS %s ON %s",
								quote_identifier(CaptureTriggerName(job->id, true)), relname));
	}
	SPI_finish();
}
