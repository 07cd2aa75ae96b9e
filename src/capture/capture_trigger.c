/*-------------------------------------------------------------------------
 *
 * capture_trigger.c
 *	  Change capture for exact results while the base tables are written.
 *
 * A chunked job reads each chunk at its own snapshot.  To end up with the
 * query's result at one snapshot (the cut-over's), every change committed to
 * a base table after a row was read must be known, down to the row: the
 * capture trigger appends, in the writer's own transaction, the tuple ids
 * of the OLD and NEW versions of every changed row of the driving table to
 * background_ddl.dirty (for a partitioned driving table, those of each
 * partition read, at their place in the job's block space: query_driving.c).
 * A changed row of a table joined to the driving
 * table by an equality (query_decompose.c: QueryJoinKeys) appends the text of
 * its join key, OLD and NEW: it stands for the driving rows that join to
 * it.  A change the log cannot pin to rows (a row of another base table, a
 * TRUNCATE) appends one whole_table mark.  A foreign key's job needs less
 * (kind_constraint.c): the NEW version of each updated row only, the one
 * write PostgreSQL may leave unchecked against a NOT VALID key.  Since
 * the marks commit or abort with the change itself, a mark is visible in a
 * snapshot exactly when its change is.  query_catchup.c consumes them.
 *
 * The trigger must see every write and never fail one:
 *	- it fires ALWAYS, so also under session_replication_role = replica
 *	  (logical replication apply, restores);
 *	- it writes the log with a plain heap insert, not through SQL, so no
 *	  privilege of the writer on our schema is involved, and no SPI runs per
 *	  row;
 *	- it logs each tuple id once per transaction, remembering which
 *	  subtransaction logged it: when that subtransaction rolls back, its
 *	  marks vanish with it, so it must forget them too, or a later change of
 *	  the same row in the same transaction would go unlogged;
 *	- once its job has ended (or is being cancelled, or paused, or its
 *	  capture stopped) it logs nothing, but for at most CAPTURING_TRUSTED_MS:
 *	  the first time it fires for a job in a transaction, it reads the job's
 *	  state, unless the session found it capturing that recently.  What
 *	  stops a capture also logs an uncaptured mark, so that nothing goes
 *	  unrecomputed;
 *	- the log stays bounded: a transaction that changes more rows than
 *	  CAPTURE_ROW_MARKS_PER_TRANSACTION logs a whole_table mark instead of
 *	  the rest, and a job whose backlog grows past its bound stops its
 *	  capture (capture_log.c: CaptureBoundBacklogs).
 *
 * The triggers are internal triggers (like those of foreign keys), with an
 * internal dependency on the job's target: the table owner cannot drop or
 * disable them (only a superuser can), pg_dump does not dump them, and
 * dropping the target drops them.  On a partition the dependency is an
 * automatic one: a partition can be dropped while a view of its
 * partitioned table is built, as it can while the view exists, and its
 * triggers go with it (its owner can drop them too: the cut-over then
 * recomputes everything).  We know them by OID, and remember the
 * version (raw xmin) of each one's pg_trigger row, so that any change to
 * one, even disabled and enabled again between two checks, is seen.
 *
 * They go only on tables where the job's role may create triggers (owner,
 * or the TRIGGER privilege): a role with only SELECT cannot make us add
 * work and lock requests to another role's table.
 *
 * Installing the triggers takes SHARE ROW EXCLUSIVE on each base table (and
 * removing them ACCESS EXCLUSIVE): both take their locks as a job takes
 * locks that others use (JobStepLockRelation: without queueing first, then
 * in the queue for at most background_ddl.lock_timeout), in a step that is
 * tried again later if a lock does not come (JobRunLockingStep), so no
 * writer of the tables waits behind a request of ours for longer than
 * that timeout.  Once the install has committed, every later write fires
 * the trigger: writers that held a lock on the table when we got ours had
 * finished, and any later writer sees the new trigger when it locks the
 * table.  The trigger finds its job capturing with a fresh snapshot
 * (CaptureRowCapturing), not the writer's, which may be older than its
 * lock: an INSERT into a partitioned table takes its snapshot before it
 * locks the partition it routes a row to, a REPEATABLE READ transaction
 * keeps its first one, and either may have waited for our install.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "portability/instr_time.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "capture/capture_trigger.h"
#include "catalog/catalog_access.h"
#include "catalog/settings.h"
#include "pg/pg_compat.h"

PG_FUNCTION_INFO_V1(capture_changes);

/* The role of a foreign key's capture trigger (CaptureInstallUpdatedRows) */
#define CAPTURE_UPDATED_ROWS	"updated"

/*
 * A session measures the time of one call of the capture trigger in this
 * many (two clock readings each), for the writers' overhead of a job
 */
#define CAPTURE_SAMPLE_EVERY	16

CaptureCostReport capture_cost_report = NULL;
static uint32 capture_calls = 0;

/* Row marks one transaction logs for a job before it logs a whole_table mark */
#define CAPTURE_ROW_MARKS_PER_TRANSACTION	100000

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

/*
 * Whether a job still captures, as read once per transaction, and how many
 * row marks this transaction has logged for it
 */
typedef struct CapturingJob
{
	int64		job_id;
	bool		capturing;
	int64		row_marks;
	int64		samples;		/* calls measured, and their time */
	double		sampled_seconds;
} CapturingJob;

/* Marks and jobs of the current top-level transaction; in TopTransactionContext */
static HTAB *logged_marks = NULL;
static HTAB *capturing_jobs = NULL;

/*
 * A job this session found capturing, and until when it goes on believing
 * so without reading the job's rows again: reading them costs a writer's
 * transaction two index scans, two thirds of what the capture costs it.
 * Only "capturing" is remembered: a job that stops capturing (it ended,
 * was paused or cancelled, or its backlog outgrew its bound) may get marks
 * from such a session for CAPTURING_TRUSTED_MS longer, which only add
 * work (the cleanup that drops the triggers deletes them, a pause or a
 * stopped capture has its uncaptured mark already); a job is never thought
 * not to capture when it does.  In TopMemoryContext.
 */
#define CAPTURING_TRUSTED_MS		100
#define CAPTURING_TRUSTED_MAX_JOBS	256

typedef struct TrustedJob
{
	int64		job_id;
	TimestampTz until;
} TrustedJob;

static HTAB *trusted_jobs = NULL;

/* Does the job capture changes (CaptureRowCapturing), or did it just now? */
static bool
JobCapturing(int64 job_id)
{
	TimestampTz now = GetCurrentTimestamp();
	TrustedJob *trusted;

	if (trusted_jobs == NULL || hash_get_num_entries(trusted_jobs) >= CAPTURING_TRUSTED_MAX_JOBS)
	{
		HASHCTL		ctl;

		if (trusted_jobs != NULL)
			hash_destroy(trusted_jobs);
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(TrustedJob);
		trusted_jobs = hash_create("background_ddl capturing jobs trusted", 16, &ctl,
								   HASH_ELEM | HASH_BLOBS);
	}
	trusted = hash_search(trusted_jobs, &job_id, HASH_FIND, NULL);
	if (trusted != NULL && now < trusted->until &&
		now > trusted->until - CAPTURING_TRUSTED_MS * (int64) 1000)
		return true;
	if (!CaptureRowCapturing(job_id))
	{
		(void) hash_search(trusted_jobs, &job_id, HASH_REMOVE, NULL);
		return false;
	}
	trusted = hash_search(trusted_jobs, &job_id, HASH_ENTER, NULL);
	trusted->until = now + CAPTURING_TRUSTED_MS * (int64) 1000;
	return true;
}

static void
CaptureXactCallback(XactEvent event, void *arg)
{
	/* The tables themselves go away with TopTransactionContext */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		if (capturing_jobs != NULL && capture_cost_report != NULL)
		{
			HASH_SEQ_STATUS status;
			CapturingJob *job;

			hash_seq_init(&status, capturing_jobs);
			while ((job = hash_seq_search(&status)) != NULL)
			{
				if (job->samples > 0)
					capture_cost_report(job->job_id, job->samples,
										(int64) (job->sampled_seconds * 1e9));
			}
		}
		logged_marks = NULL;
		capturing_jobs = NULL;
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
		CapturingJob *job;

		if (mark->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			mark->subid = parentSubid;
			continue;
		}
		job = hash_search(capturing_jobs, &mark->key.job_id, HASH_FIND, NULL);
		if (job != NULL && ItemPointerIsValid(&mark->key.tid))
			job->row_marks--;
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
 * did (and has not rolled it back), or the job no longer captures.  tid
 * NULL: a join mark if join_key is not NULL (not deduplicated: a joined
 * table changes seldom), a whole_table mark otherwise.
 */
static void
LogDirtyMark(int64 job_id, ItemPointer tid, Oid join_relid, const char *join_key,
			 bool uncaptured)
{
	const BgddlCatalog *catalog;
	LoggedMarkKey key;
	LoggedMark *mark;
	CapturingJob *job;
	bool		found;
	Relation	dirty;
	Datum		values[6];
	bool		nulls[6] = {false, false, false, true, true, false};

	if (logged_marks == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(LoggedMarkKey);
		ctl.entrysize = sizeof(LoggedMark);
		ctl.hcxt = TopTransactionContext;
		logged_marks = hash_create("background_ddl logged marks", 256, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(CapturingJob);
		capturing_jobs = hash_create("background_ddl capturing jobs", 8, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	memset(&key, 0, sizeof(key));
	key.job_id = job_id;
	if (tid != NULL)
		ItemPointerCopy(tid, &key.tid);
	else
		ItemPointerSet(&key.tid, InvalidBlockNumber, uncaptured ? 1 : 0);
	if (join_key == NULL && hash_search(logged_marks, &key, HASH_FIND, NULL) != NULL)
		return;

	catalog = CatalogLookup();
	if (catalog == NULL)
		return;					/* extension dropped: nothing to capture for */
	job = hash_search(capturing_jobs, &job_id, HASH_ENTER, &found);
	if (!found)
	{
		job->capturing = JobCapturing(job_id);
		job->row_marks = 0;
		job->samples = 0;
		job->sampled_seconds = 0;
	}
	if (!job->capturing)
		return;

	/*
	 * A transaction that changes more rows than this logs one whole_table
	 * mark instead of the rest: the log stays bounded, whatever one
	 * statement does, and the job recomputes everything
	 */
	if ((tid != NULL || join_key != NULL) && job->row_marks >= CAPTURE_ROW_MARKS_PER_TRANSACTION)
	{
		LogDirtyMark(job_id, NULL, InvalidOid, NULL, false);
		return;
	}
	if (tid != NULL || join_key != NULL)
		job->row_marks++;
	if (join_key == NULL)
	{
		mark = hash_search(logged_marks, &key, HASH_ENTER, NULL);
		mark->subid = GetCurrentSubTransactionId();
	}

	dirty = table_open(catalog->dirty_relid, RowExclusiveLock);
	values[0] = Int64GetDatum(job_id);
	values[1] = tid != NULL ? PointerGetDatum(&key.tid) : (Datum) 0;
	nulls[1] = (tid == NULL);
	values[2] = BoolGetDatum(tid == NULL && join_key == NULL);
	if (join_key != NULL)
	{
		values[3] = ObjectIdGetDatum(join_relid);
		values[4] = CStringGetTextDatum(join_key);
		nulls[3] = nulls[4] = false;
	}
	values[5] = BoolGetDatum(uncaptured);
	simple_heap_insert(dirty, heap_form_tuple(RelationGetDescr(dirty), values, nulls));
	table_close(dirty, NoLock);
}

/* Log the join key of a joined table's row version, unless it is NULL (it joins nothing) */
static void
LogJoinKey(int64 job_id, Relation rel, TupleTableSlot *slot, AttrNumber attnum)
{
	bool		isnull;
	Datum		value = slot_getattr(slot, attnum, &isnull);
	Oid			output_function;
	bool		varlena;

	if (isnull)
		return;
	getTypeOutputInfo(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid,
					  &output_function, &varlena);
	LogDirtyMark(job_id, NULL, RelationGetRelid(rel),
				 OidOutputFunctionCall(output_function, value), false);
}

/*
 * Log a changed row of the driving table (or of one of its partitions, at
 * its place in the job's block space: the trigger's segment).  A row beyond
 * the room of its segment (the partition grew by more than the job's block
 * space holds) cannot be logged: an uncaptured mark stands for it.
 */
static void
LogDrivingRow(int64 job_id, const CaptureSegment *segment, ItemPointer tid)
{
	ItemPointerData job_tid;
	BlockNumber job_block;

	if (segment == NULL)
	{
		LogDirtyMark(job_id, tid, InvalidOid, NULL, false);
		return;
	}
	if (!CaptureSegmentJobBlock(segment, ItemPointerGetBlockNumber(tid), &job_block))
	{
		LogDirtyMark(job_id, NULL, InvalidOid, NULL, true);
		return;
	}
	ItemPointerSet(&job_tid, job_block, ItemPointerGetOffsetNumber(tid));
	LogDirtyMark(job_id, &job_tid, InvalidOid, NULL, false);
}

/*
 * The capture trigger.  Arguments: the job id, and "driving" (row trigger
 * on the driving table), "driving BASE BLOCKS BEYOND BEYOND_BLOCKS" (row
 * trigger on a partition of a partitioned driving table: its CaptureSegment),
 * "join N" (row trigger on a table joined to it on its column N, see
 * QueryJoinKeys), "other" (row trigger on another base table), "updated"
 * (row trigger on UPDATE only: the new versions of the updated rows) or
 * "truncate" (statement trigger on any base table).
 */
static void
CaptureChange(TriggerData *trigdata)
{
	Trigger    *trigger;
	int64		job_id;
	TriggerEvent event;
	CaptureSegment segment;
	CaptureSegment *driving_segment = NULL;

	trigger = trigdata->tg_trigger;
	if (trigger->tgnargs != 2)
		elog(ERROR, "capture_changes() expects 2 trigger arguments, got %d",
			 trigger->tgnargs);
	job_id = pg_strtoint64(trigger->tgargs[0]);
	event = trigdata->tg_event;

	if (strncmp(trigger->tgargs[1], "driving ", 8) == 0)
	{
		if (sscanf(trigger->tgargs[1] + 8, "%u %u %u %u", &segment.base, &segment.blocks,
				   &segment.beyond, &segment.beyond_blocks) != 4)
			elog(ERROR, "invalid capture trigger argument \"%s\"", trigger->tgargs[1]);
		driving_segment = &segment;
	}

	if (strncmp(trigger->tgargs[1], "join ", 5) == 0 && !TRIGGER_FIRED_BY_TRUNCATE(event))
	{
		AttrNumber	attnum = (AttrNumber) pg_strtoint32(trigger->tgargs[1] + 5);

		LogJoinKey(job_id, trigdata->tg_relation, trigdata->tg_trigslot, attnum);
		if (TRIGGER_FIRED_BY_UPDATE(event))
			LogJoinKey(job_id, trigdata->tg_relation, trigdata->tg_newslot, attnum);
	}
	else if (strcmp(trigger->tgargs[1], CAPTURE_UPDATED_ROWS) == 0 && TRIGGER_FIRED_BY_UPDATE(event))
		LogDirtyMark(job_id, &trigdata->tg_newslot->tts_tid, InvalidOid, NULL, false);
	else if (strncmp(trigger->tgargs[1], "driving", 7) != 0 || TRIGGER_FIRED_BY_TRUNCATE(event))
		LogDirtyMark(job_id, NULL, InvalidOid, NULL, false);
	else
	{
		LogDrivingRow(job_id, driving_segment, &trigdata->tg_trigslot->tts_tid);
		if (TRIGGER_FIRED_BY_UPDATE(event))
			LogDrivingRow(job_id, driving_segment, &trigdata->tg_newslot->tts_tid);
	}
}

/* The trigger function: CaptureChange, one call in CAPTURE_SAMPLE_EVERY measured */
Datum
capture_changes(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	instr_time	start;
	instr_time	duration;
	CapturingJob *job;
	int64		job_id;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("capture_changes() must be called as a trigger")));
	if (++capture_calls % CAPTURE_SAMPLE_EVERY != 0)
	{
		CaptureChange(trigdata);
		return PointerGetDatum(NULL);
	}

	/* A call measured: its time counts for its job, if it captures */
	INSTR_TIME_SET_CURRENT(start);
	CaptureChange(trigdata);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	job_id = pg_strtoint64(trigdata->tg_trigger->tgargs[0]);
	job = capturing_jobs != NULL ? hash_search(capturing_jobs, &job_id, HASH_FIND, NULL) : NULL;
	if (job != NULL && job->capturing)
	{
		job->samples++;
		job->sampled_seconds += INSTR_TIME_GET_DOUBLE(duration);
	}
	return PointerGetDatum(NULL);
}

/*
 * Why the job's role may not have capture triggers on a relation, or NULL
 * if it may (it owns the relation or has TRIGGER on it, and the relation is
 * a plain table).  Caller is in a transaction.
 */
char *
CaptureRefusal(Oid relid, Oid roleid)
{
	char		relkind = get_rel_relkind(relid);

	if (IsCatalogRelationOid(relid))
		return psprintf("\"%s\" is a system catalog, which takes no triggers",
						get_rel_name(relid));
	if (relkind == RELKIND_PARTITIONED_TABLE)
		return psprintf("\"%s\" is partitioned (row capture is per partition)",
						get_rel_name(relid));
	if (relkind != RELKIND_RELATION)
		return psprintf("\"%s\" is not a table", get_rel_name(relid));
	if (!PgRelationOwnerCheck(relid, roleid) &&
		pg_class_aclcheck(relid, roleid, ACL_TRIGGER) != ACLCHECK_OK)
		return psprintf("no TRIGGER privilege on table \"%s\"", get_rel_name(relid));
	return NULL;
}

/*
 * ALTER TRIGGER ... RENAME of a capture trigger is refused: it would look
 * like a change to the trigger (CaptureIntact), and make the job recompute
 * everything.  Caller is in a transaction.
 */
void
CaptureCheckRename(RenameStmt *stmt)
{
	const BgddlCatalog *catalog = CatalogLookup();
	Oid			relid;
	Relation	rel;
	bool		ours = false;

	if (catalog == NULL)
		return;
	relid = RangeVarGetRelid(stmt->relation, AccessShareLock, true);
	if (!OidIsValid(relid))
		return;					/* the normal path reports it */
	rel = relation_open(relid, NoLock);
	for (int i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *trigger = &rel->trigdesc->triggers[i];

		if (strcmp(trigger->tgname, stmt->subname) == 0 &&
			trigger->tgfoid == catalog->capture_function_oid)
			ours = true;
	}
	relation_close(rel, NoLock);
	if (ours)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot rename trigger \"%s\" on table \"%s\"",
						stmt->subname, get_rel_name(relid)),
				 errdetail("It captures changes for a background DDL job, and is dropped when the job ends.")));
}

/*
 * The raw xmin of a trigger's pg_trigger row, or InvalidTransactionId if
 * gone; and whether it is enabled, and (if relid is not NULL) its table
 */
static TransactionId
TriggerRowVersion(Relation pg_trigger, Oid trigger_oid, char *enabled, Oid *relid)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	TransactionId version = InvalidTransactionId;

	ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(trigger_oid));
	scan = systable_beginscan(pg_trigger, TriggerOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		version = HeapTupleHeaderGetRawXmin(tuple->t_data);
		*enabled = ((Form_pg_trigger) GETSTRUCT(tuple))->tgenabled;
		if (relid != NULL)
			*relid = ((Form_pg_trigger) GETSTRUCT(tuple))->tgrelid;
	}
	systable_endscan(scan);
	return version;
}

/*
 * Create one internal capture trigger, firing ALWAYS, that depends on the
 * target as dependency says; returns its oid
 */
static Oid
CreateCaptureTrigger(int64 job_id, Oid target_oid, Oid relid, bool truncate,
					 const char *role, DependencyType dependency)
{
	const BgddlCatalog *catalog = CatalogRequire();
	CreateTrigStmt *stmt = makeNode(CreateTrigStmt);
	ObjectAddress trigger;
	ObjectAddress target;

	stmt->trigname = psprintf("background_ddl_capture_%lld%s", (long long) job_id,
							  truncate ? "_truncate" : "");
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
								  get_rel_name(relid), -1);
	stmt->args = list_make2(makeString(psprintf("%lld", (long long) job_id)),
							makeString(pstrdup(truncate ? "truncate" : role)));
	stmt->row = !truncate;
	stmt->timing = TRIGGER_TYPE_AFTER;
	stmt->events = truncate ? TRIGGER_TYPE_TRUNCATE :
		strcmp(role, CAPTURE_UPDATED_ROWS) == 0 ? TRIGGER_TYPE_UPDATE :
		(TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE);

	trigger = CreateTriggerFiringOn(stmt, "background_ddl capture", relid, InvalidOid,
									InvalidOid, InvalidOid, catalog->capture_function_oid,
									InvalidOid, NULL, true, false, TRIGGER_FIRES_ALWAYS);
	/* (a table's rewrite captures the table itself: its trigger depends on it already) */
	if (target_oid != relid)
	{
		ObjectAddressSet(target, RelationRelationId, target_oid);
		recordDependencyOn(&trigger, &target, dependency);
	}
	return trigger.objectId;
}

/* The trigger argument that says how a relation's changes are logged */
static const char *
CaptureRole(Oid relid, int join_attnum, Oid driving_oid, const CaptureSegment *segments,
			int nsegments)
{
	if (relid == driving_oid)
		return "driving";
	for (int i = 0; i < nsegments; i++)
	{
		if (segments[i].relid == relid)
			return psprintf("driving %u %u %u %u", segments[i].base, segments[i].blocks,
							segments[i].beyond, segments[i].beyond_blocks);
	}
	return join_attnum > 0 ? psprintf("join %d", join_attnum) : "other";
}

/*
 * Create the capture triggers of a job on relids, each logging as its
 * role in roles says (see capture_changes), and record them with their
 * row versions and the relations' relfilenodes in the job's capture.
 * Caller holds SHARE ROW EXCLUSIVE on each relation (CREATE TRIGGER's
 * lock), and has checked CaptureRefusal for each.
 */
static void
InstallTriggers(int64 job_id, Oid target_oid, List *relids, List *roles, Oid driving_oid,
				Capture *capture)
{
	Relation	pg_trigger;
	ListCell   *lc;
	ListCell   *role_cell;

	memset(capture, 0, sizeof(Capture));
	capture->job_id = job_id;
	capture->driving_oid = driving_oid;
	capture->relids = list_copy(relids);
	forboth(lc, relids, role_cell, roles)
	{
		Oid			relid = lfirst_oid(lc);

		/*
		 * A partition can be dropped while the partitioned table's view is
		 * being built, as with a blocking view: its triggers go with it
		 * (the job then restarts, query_driving.c)
		 */
		DependencyType dependency = get_rel_relispartition(relid) ?
			DEPENDENCY_AUTO : DEPENDENCY_INTERNAL;
		Relation	rel;

		Assert(CheckRelationOidLockedByMe(relid, ShareRowExclusiveLock, true));
		rel = relation_open(relid, NoLock);
		capture->filenodes = lappend_oid(capture->filenodes, PgRelFileNumber(rel));
		relation_close(rel, NoLock);
		capture->triggers = lappend_oid(capture->triggers,
										CreateCaptureTrigger(job_id, target_oid, relid, false,
															 lfirst(role_cell), dependency));
		capture->triggers = lappend_oid(capture->triggers,
										CreateCaptureTrigger(job_id, target_oid, relid, true,
															 lfirst(role_cell), dependency));
	}
	CommandCounterIncrement();

	pg_trigger = table_open(TriggerRelationId, AccessShareLock);
	foreach(lc, capture->triggers)
	{
		char		enabled;

		capture->trigger_xmins = lappend_oid(capture->trigger_xmins,
											 TriggerRowVersion(pg_trigger, lfirst_oid(lc),
															   &enabled, NULL));
	}
	table_close(pg_trigger, AccessShareLock);
	CaptureRowInsert(capture);
}

/*
 * Create the capture triggers of a job on its base relations (the driving
 * table among them, or, for a partitioned one, the partitions of segments),
 * and record them (InstallTriggers).  join_attnums gives, for each
 * relation, the column of its join key to log (0: none, see
 * QueryJoinKeys).  Caller is in a step, as a superuser, holds SHARE ROW
 * EXCLUSIVE on each relation, and has checked CaptureRefusal for each.
 */
void
CaptureInstall(int64 job_id, Oid target_oid, List *relids, List *join_attnums, Oid driving_oid,
			   const CaptureSegment *segments, int nsegments, Capture *capture)
{
	List	   *roles = NIL;
	ListCell   *lc;
	ListCell   *attnum_cell;

	forboth(lc, relids, attnum_cell, join_attnums)
		roles = lappend(roles, unconstify(char *, CaptureRole(lfirst_oid(lc),
															   lfirst_int(attnum_cell),
															   driving_oid, segments,
															   nsegments)));
	InstallTriggers(job_id, target_oid, relids, roles, driving_oid, capture);
}

/*
 * A foreign key's capture (kind_constraint.c) on its table relid, the
 * job's target: the tuple id of the new version of every row an UPDATE
 * writes there (an INSERT, and an UPDATE of the key, are checked by the
 * NOT VALID key itself; a DELETE leaves no row to check), and a
 * whole_table mark for a TRUNCATE.  Caller holds SHARE ROW EXCLUSIVE on
 * relid, and has checked CaptureRefusal.
 */
void
CaptureInstallUpdatedRows(int64 job_id, Oid relid, Capture *capture)
{
	InstallTriggers(job_id, relid, list_make1_oid(relid),
					list_make1(pstrdup(CAPTURE_UPDATED_ROWS)), relid, capture);
}

/*
 * Are all capture triggers of a job still there, firing ALWAYS, and never
 * changed since the install (not even disabled and enabled again)?
 */
bool
CaptureIntact(const Capture *capture)
{
	Relation	pg_trigger = table_open(TriggerRelationId, AccessShareLock);
	ListCell   *oid_cell;
	ListCell   *xmin_cell;
	bool		intact = list_length(capture->triggers) == list_length(capture->trigger_xmins);

	forboth(oid_cell, capture->triggers, xmin_cell, capture->trigger_xmins)
	{
		char		enabled = TRIGGER_DISABLED;
		TransactionId version = TriggerRowVersion(pg_trigger, lfirst_oid(oid_cell), &enabled,
												  NULL);

		if (version != (TransactionId) lfirst_oid(xmin_cell) || enabled != TRIGGER_FIRES_ALWAYS)
			intact = false;
	}
	table_close(pg_trigger, AccessShareLock);
	return intact;
}

/* The triggers of a job's capture, if it has one */
static List *
CaptureTriggersOf(int64 job_id)
{
	Capture		capture;

	return CaptureRowLoad(job_id, &capture) ? capture.triggers : NIL;
}

static void
DetachTriggers(List *triggers, Oid target_oid)
{
	Relation	pg_trigger = table_open(TriggerRelationId, AccessShareLock);
	ListCell   *lc;

	foreach(lc, triggers)
	{
		char		enabled;
		Oid			relid;

		/* A trigger on the target itself keeps its table's dependency */
		if (TransactionIdIsValid(TriggerRowVersion(pg_trigger, lfirst_oid(lc), &enabled, &relid)) &&
			relid == target_oid)
			continue;
		(void) deleteDependencyRecordsForSpecific(TriggerRelationId, lfirst_oid(lc),
												  DEPENDENCY_INTERNAL,
												  RelationRelationId, target_oid);
		(void) deleteDependencyRecordsForSpecific(TriggerRelationId, lfirst_oid(lc),
												  DEPENDENCY_AUTO,
												  RelationRelationId, target_oid);
	}
	table_close(pg_trigger, AccessShareLock);
	CommandCounterIncrement();
}

/*
 * Detach a job's capture triggers from its target, so that dropping the
 * target does not drop them (which would lock the base tables in ACCESS
 * EXCLUSIVE mode).  For a job that has ended: its triggers log nothing any
 * more, and are dropped later (CaptureRemove).  Caller is in a transaction.
 */
void
CaptureDetach(int64 job_id, Oid target_oid)
{
	DetachTriggers(CaptureTriggersOf(job_id), target_oid);
}

/*
 * The tables that a job's capture triggers are still on (the driving
 * table's partitions among them, for a partitioned one: *driving_oid), which
 * CaptureRemove locks when it drops them; NIL if it has no capture.
 */
List *
CaptureTables(int64 job_id, Oid *driving_oid)
{
	Capture		capture;
	Relation	pg_trigger;
	ListCell   *lc;
	List	   *tables = NIL;

	*driving_oid = InvalidOid;
	if (!CaptureRowLoad(job_id, &capture))
		return NIL;
	*driving_oid = capture.driving_oid;
	pg_trigger = table_open(TriggerRelationId, AccessShareLock);
	foreach(lc, capture.triggers)
	{
		char		enabled;
		Oid			relid;

		if (TransactionIdIsValid(TriggerRowVersion(pg_trigger, lfirst_oid(lc), &enabled, &relid)))
			tables = list_append_unique_oid(tables, relid);
	}
	table_close(pg_trigger, AccessShareLock);
	return tables;
}

/*
 * Drop a job's capture triggers that still exist, and forget its capture.
 * Each drop takes ACCESS EXCLUSIVE on its table: the caller has taken it
 * (on CaptureTables, a partitioned driving table first, as DROP TRIGGER on
 * it does), or the drop waits for it.  Caller is in a transaction, as a
 * superuser.
 */
void
CaptureRemove(int64 job_id, Oid target_oid)
{
	Capture		capture;
	Relation	pg_trigger;
	ListCell   *lc;

	if (!CaptureRowLoad(job_id, &capture))
		return;
	DetachTriggers(capture.triggers, target_oid);
	pg_trigger = table_open(TriggerRelationId, AccessShareLock);
	foreach(lc, capture.triggers)
	{
		Oid			trigger_oid = lfirst_oid(lc);
		char		enabled;
		ObjectAddress trigger;
		Oid			relid;

		/* dropped with its table or the target (maybe while we waited for its table) */
		if (!TransactionIdIsValid(TriggerRowVersion(pg_trigger, trigger_oid, &enabled, &relid)))
			continue;
		ObjectAddressSet(trigger, TriggerRelationId, trigger_oid);
		performDeletion(&trigger, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
	table_close(pg_trigger, AccessShareLock);
	CommandCounterIncrement();
	CaptureRowDelete(job_id);
}
