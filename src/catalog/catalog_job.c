/*-------------------------------------------------------------------------
 *
 * catalog_job.c
 *	  All reads and writes of job rows (background_ddl.job).
 *
 * A job's row is read and written by attribute number (Anum_job_*, checked
 * against the table when it is opened), through catalog_access.c's rows: a
 * read under the active snapshot or a fresh one, and an update that locks
 * the latest version first, as UPDATE does in READ COMMITTED.  A job's
 * workers and the control functions update its row concurrently; each
 * update here is one locked read-modify-write of the columns it names.
 * What selects several rows (the scheduler's list, the purge) is SQL, run
 * through catalog_access.c as the catalog role with bound parameters.
 *
 * Rows only: whoever changes a job's state here announces it (JobXactNotify:
 * NOTIFY background_ddl, '<id> <state>' at commit), and whoever sets its
 * phase publishes it to shared memory (JobRunRecordPhase).
 *
 * Callers are inside a transaction with an active snapshot, and have
 * checked that the extension is installed (CatalogRequire), except where a
 * function says otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/instrument.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"

/* The columns of background_ddl.job by attribute number (Anum_job_*) */
static const char *const job_columns[Natts_job] = {
	"id", "database_oid", "session_user_oid", "owner_oid", "kind", "target_oid",
	"target_name", "command", "settings", "state", "phase", "strategy", "planned",
	"kind_state", "work_total", "work_done", "rows_done", "rows_total", "chunks_done",
	"chunks_total", "progress", "progress_base", "rate", "eta", "submitted_at",
	"started_at", "attempt_started_at", "finished_at", "attempts", "in_flight", "error",
	"error_sqlstate", "error_detail", "error_hint", "cutover_snapshot", "cutover_at",
	"dirty_rows", "cleanup_pending", "not_before", "given_back_for", "max_rate",
	"batch_time", "max_workers", "max_replica_lag", "messages", "after", "idempotency_key",
	"rate_not_before", "cutover", "cutover_window", "cutover_max_writes", "wal_bytes",
	"temp_bytes", "waited_us", "retries", "dirtied_bytes", "changes_caught_up",
	"capture_samples", "capture_ns", "queued_at", "cutover_group", "group_id", "group_ready",
	"published_by", "estimate"
};

#define JobValue(row, attno)	((row)->values[(attno) - 1])
#define JobIsNull(row, attno)	((row)->nulls[(attno) - 1])

static bool
JobRowRead(CatalogRow *row, int64 job_id, bool latest)
{
	return CatalogRowRead(row, CatalogRequire()->job_relid, job_columns, Natts_job,
						  job_id, latest);
}

/* Lock a job's row for an update; false if there is no such job */
static bool
JobRowLock(CatalogRow *row, int64 job_id)
{
	return CatalogRowLock(row, CatalogRequire()->job_relid, job_columns, Natts_job, job_id);
}

/*
 * The job whose costs this process counts (a worker's: CatalogJobCountCosts)
 * and what it counts, each a total since the process started: WAL bytes,
 * temporary file bytes and the bytes of the pages it dirtied (the
 * executor's counters), the writers' changes its catch-up applied (the
 * capture's marks it deleted), the calls of its capture trigger that
 * writers measured and their time (JobCaptureCostTake), the microseconds
 * it waited by JobWaitReason (the wait going on counts up to now), and its
 * retries by JobRetryReason.  The job's row has what this process counted
 * up to costs_counted (committed) or costs_counted_in_xact (written in the
 * current transaction).
 */
#define COST_WAL		0
#define COST_TEMP		1
#define COST_DIRTIED	2
#define COST_CHANGES	3
#define COST_CAPTURE_SAMPLES 4
#define COST_CAPTURE_NS	5
#define COST_WAITED		6
#define COST_RETRIES	(COST_WAITED + JOB_WAIT_REASONS)
#define COSTS			(COST_RETRIES + JOB_RETRY_REASONS)

static int64 costs_job_id = 0;
static int64 costs_counted[COSTS];
static int64 costs_counted_in_xact[COSTS];
static int64 waited_us[JOB_WAIT_REASONS];
static int64 retries[JOB_RETRY_REASONS];
static int64 changes_caught_up = 0;
static int64 changes_in_xact = 0;	/* (deleted by the current transaction: if it commits) */
static int64 capture_samples = 0;
static int64 capture_ns = 0;
static int	wait_reason = -1;		/* the wait going on, or -1 */
static TimestampTz wait_since;

static void
CostsXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
	{
		memcpy(costs_counted, costs_counted_in_xact, sizeof(costs_counted));
		changes_caught_up += changes_in_xact;
		changes_in_xact = 0;
	}
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		memcpy(costs_counted_in_xact, costs_counted, sizeof(costs_counted));
		changes_in_xact = 0;
	}
}

/* This process's costs now, and whether any is not yet in the job's row */
static bool
CostsNow(int64 *costs)
{
	costs[COST_WAL] = (int64) pgWalUsage.wal_bytes;
	costs[COST_TEMP] = pgBufferUsage.temp_blks_written * (int64) BLCKSZ;
	costs[COST_DIRTIED] = (pgBufferUsage.shared_blks_dirtied + pgBufferUsage.local_blks_dirtied) *
		(int64) BLCKSZ;
	costs[COST_CHANGES] = changes_caught_up + changes_in_xact;
	costs[COST_CAPTURE_SAMPLES] = capture_samples;
	costs[COST_CAPTURE_NS] = capture_ns;
	for (int i = 0; i < JOB_WAIT_REASONS; i++)
		costs[COST_WAITED + i] = waited_us[i];
	if (wait_reason >= 0)
		costs[COST_WAITED + wait_reason] += Max(GetCurrentTimestamp() - wait_since, 0);
	memcpy(costs + COST_RETRIES, retries, sizeof(retries));
	return memcmp(costs, costs_counted_in_xact, sizeof(costs_counted_in_xact)) != 0;
}

/*
 * From now on, this process (a job's worker) adds what it writes (WAL,
 * temporary files, pages: its own counters, which its parallel workers add
 * to), the time it waits, its retries and the rest above to the job's row
 * whenever it writes it (JobRowWrite), which it does a few times a second
 * and at the job's end, and when it asks (CatalogJobAddCosts).
 */
void
CatalogJobCountCosts(int64 job_id)
{
	costs_job_id = job_id;
	RegisterXactCallback(CostsXactCallback, NULL);
}

/* This process begins to wait for reason (ending the wait going on, if any) */
void
CatalogJobWaitBegin(JobWaitReason reason)
{
	if (wait_reason == (int) reason)
		return;
	CatalogJobWaitEnd();
	wait_reason = reason;
	wait_since = GetCurrentTimestamp();
}

/* ... and no longer waits */
void
CatalogJobWaitEnd(void)
{
	if (wait_reason < 0)
		return;
	waited_us[wait_reason] += Max(GetCurrentTimestamp() - wait_since, 0);
	wait_reason = -1;
}

/* The job's work is tried again, for reason */
void
CatalogJobCountRetry(JobRetryReason reason)
{
	retries[reason]++;
}

/* The job's catch-up applied marks changes that writers made (their capture's marks) */
void
CatalogJobCountChanges(int64 marks)
{
	changes_in_xact += marks;
}

/* Writers' sessions measured samples calls of the job's capture trigger, which took nanoseconds */
void
CatalogJobCountCaptureCost(int64 samples, int64 nanoseconds)
{
	capture_samples += samples;
	capture_ns += nanoseconds;
}

/* A bigint[] column of a locked job row, with delta[i] added to its element i + 1 */
static void
RowAddToArray(CatalogRow *row, int attno, const int64 *delta, int n)
{
	Datum	   *elements = palloc0(n * sizeof(Datum));
	int			count = 0;
	Datum	   *old;

	if (!JobIsNull(row, attno))
		deconstruct_array(DatumGetArrayTypeP(JobValue(row, attno)), INT8OID, 8,
						  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &old, NULL, &count);
	for (int i = 0; i < Max(n, count); i++)
		elements[i] = Int64GetDatum((i < count ? DatumGetInt64(old[i]) : 0) +
									(i < n ? delta[i] : 0));
	CatalogRowSet(row, attno,
				  PointerGetDatum(construct_array(elements, Max(n, count), INT8OID, 8,
												  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)),
				  false);
}

/* A bigint column of a locked job row, with delta added */
static void
RowAdd(CatalogRow *row, int attno, int64 delta)
{
	CatalogRowSet(row, attno, Int64GetDatum(DatumGetInt64(JobValue(row, attno)) + delta), false);
}

/* Write a locked job row, with the costs this process counts for it since its last write */
static void
JobRowWrite(CatalogRow *row)
{
	int64		costs[COSTS];
	int64		delta[COSTS];

	if (costs_job_id != 0 && DatumGetInt64(JobValue(row, Anum_job_id)) == costs_job_id &&
		CostsNow(costs))
	{
		for (int i = 0; i < COSTS; i++)
			delta[i] = costs[i] - costs_counted_in_xact[i];
		RowAdd(row, Anum_job_wal_bytes, delta[COST_WAL]);
		RowAdd(row, Anum_job_temp_bytes, delta[COST_TEMP]);
		RowAdd(row, Anum_job_dirtied_bytes, delta[COST_DIRTIED]);
		RowAdd(row, Anum_job_changes_caught_up, delta[COST_CHANGES]);
		RowAdd(row, Anum_job_capture_samples, delta[COST_CAPTURE_SAMPLES]);
		RowAdd(row, Anum_job_capture_ns, delta[COST_CAPTURE_NS]);
		RowAddToArray(row, Anum_job_waited_us, delta + COST_WAITED, JOB_WAIT_REASONS);
		RowAddToArray(row, Anum_job_retries, delta + COST_RETRIES, JOB_RETRY_REASONS);
		memcpy(costs_counted_in_xact, costs, sizeof(costs));
	}
	CatalogRowWrite(row);
}

/*
 * Add what this process counted since the job's row last had it to the
 * row's costs (CatalogJobCountCosts), if anything.  Caller is in a
 * transaction (with no active snapshot if its utility committed inside).
 */
void
CatalogJobAddCosts(void)
{
	CatalogRow	row;
	bool		pushed_snapshot;
	int64		costs[COSTS];

	if (costs_job_id == 0 || !CostsNow(costs))
		return;
	pushed_snapshot = !ActiveSnapshotSet();
	if (pushed_snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	if (JobRowLock(&row, costs_job_id))
		JobRowWrite(&row);
	CatalogRowClose(&row);
	if (pushed_snapshot)
		PopActiveSnapshot();
}

static JobState
JobRowState(const CatalogRow *row)
{
	return CatalogStateFromName(TextDatumGetCString(JobValue(row, Anum_job_state)));
}

static Datum
TextOrNull(const char *text, bool *isnull)
{
	*isnull = (text == NULL);
	return text != NULL ? CStringGetTextDatum(text) : (Datum) 0;
}

/* Set a text column, NULL for a NULL string */
static void
SetText(CatalogRow *row, AttrNumber attno, const char *text)
{
	bool		isnull;
	Datum		value = TextOrNull(text, &isnull);

	CatalogRowSet(row, attno, value, isnull);
}

static void
SetPhase(CatalogRow *row, JobPhase phase)
{
	SetText(row, Anum_job_phase, CatalogPhaseName(phase));
}

static void
SetState(CatalogRow *row, JobState state)
{
	SetText(row, Anum_job_state, CatalogStateName(state));
}

static void
SetError(CatalogRow *row, const JobError *error)
{
	SetText(row, Anum_job_error, error ? error->message : NULL);
	SetText(row, Anum_job_error_sqlstate, error ? error->sqlstate : NULL);
	SetText(row, Anum_job_error_detail, error ? error->detail : NULL);
	SetText(row, Anum_job_error_hint, error ? error->hint : NULL);
}

static int64
Int64Or(const CatalogRow *row, AttrNumber attno, int64 null_value)
{
	return JobIsNull(row, attno) ? null_value : DatumGetInt64(JobValue(row, attno));
}

static double
Float8Or(const CatalogRow *row, AttrNumber attno, double null_value)
{
	return JobIsNull(row, attno) ? null_value : DatumGetFloat8(JobValue(row, attno));
}

static TimestampTz
TimestampOr(const CatalogRow *row, AttrNumber attno, TimestampTz null_value)
{
	return JobIsNull(row, attno) ? null_value : DatumGetTimestampTz(JobValue(row, attno));
}

/* An interval of seconds */
static Datum
IntervalSeconds(double seconds)
{
	Interval   *interval = palloc0(sizeof(Interval));

	interval->time = (TimeOffset) (seconds * USECS_PER_SEC);
	return IntervalPGetDatum(interval);
}

/*
 * The job's limits: max_rate, batch_time (ms), max_workers (0 for none),
 * max_replica_lag (-1: the server's), and whether its cut-over is manual
 */
static void
LimitsFromRow(const CatalogRow *row, BgddlJob *job)
{
	job->max_rate = Float8Or(row, Anum_job_max_rate, 0);
	job->batch_time_ms = 0;
	if (!JobIsNull(row, Anum_job_batch_time))
	{
		Interval   *interval = DatumGetIntervalP(JobValue(row, Anum_job_batch_time));

		job->batch_time_ms = (int) ((interval->time + (interval->day + interval->month * 30.0) *
									 USECS_PER_DAY) / 1000.0);
	}
	job->max_workers = JobIsNull(row, Anum_job_max_workers) ? 0 :
		DatumGetInt32(JobValue(row, Anum_job_max_workers));
	job->max_replica_lag_ms = -1;
	if (!JobIsNull(row, Anum_job_max_replica_lag))
	{
		Interval   *interval = DatumGetIntervalP(JobValue(row, Anum_job_max_replica_lag));

		job->max_replica_lag_ms = (int) Min((interval->time + (interval->day + interval->month * 30.0) *
											USECS_PER_DAY) / 1000.0, (double) INT_MAX);
	}
	job->manual_cutover = strcmp(CatalogRowText(row, Anum_job_cutover), "manual") == 0;
	job->cutover_window[0] = '\0';
	if (!JobIsNull(row, Anum_job_cutover_window))
		text_to_cstring_buffer(DatumGetTextPP(JobValue(row, Anum_job_cutover_window)),
							   job->cutover_window, sizeof(job->cutover_window));
	job->cutover_max_writes = JobIsNull(row, Anum_job_cutover_max_writes) ? 0 :
		DatumGetInt32(JobValue(row, Anum_job_cutover_max_writes));
	job->published_by = Int64Or(row, Anum_job_published_by, 0);
}

/* The counters that every worker of a job adds to */
static void
ProgressFromRow(const CatalogRow *row, BgddlJob *job)
{
	job->rows_done = Int64Or(row, Anum_job_rows_done, 0);
	job->chunks_done = Int64Or(row, Anum_job_chunks_done, 0);
	job->work_done = Int64Or(row, Anum_job_work_done, 0);
	job->progress = Float8Or(row, Anum_job_progress, 0);
}

/* Copy a job row into *job, in the current memory context */
static void
JobFromRow(const CatalogRow *row, BgddlJob *job)
{
	job->id = DatumGetInt64(JobValue(row, Anum_job_id));
	job->kind = CatalogRowText(row, Anum_job_kind);
	job->state = JobRowState(row);
	job->identity.session_user_oid = DatumGetObjectId(JobValue(row, Anum_job_session_user_oid));
	job->identity.owner_oid = DatumGetObjectId(JobValue(row, Anum_job_owner_oid));
	job->identity.settings = CatalogTextList(JobValue(row, Anum_job_settings));
	job->target_oid = DatumGetObjectId(JobValue(row, Anum_job_target_oid));
	job->target_name = CatalogRowText(row, Anum_job_target_name);
	job->command = CatalogRowText(row, Anum_job_command);
	job->strategy = CatalogRowText(row, Anum_job_strategy);
	job->planned = DatumGetBool(JobValue(row, Anum_job_planned));
	job->kind_state = DatumGetJsonbPCopy(JobValue(row, Anum_job_kind_state));
	job->work_total = Int64Or(row, Anum_job_work_total, -1);
	job->rows_total = Int64Or(row, Anum_job_rows_total, -1);
	ProgressFromRow(row, job);
	job->attempts = DatumGetInt32(JobValue(row, Anum_job_attempts));
	job->in_flight = DatumGetBool(JobValue(row, Anum_job_in_flight));
	job->progress_base = Float8Or(row, Anum_job_progress_base, 0);
	job->started_at = TimestampOr(row, Anum_job_started_at, 0);
	job->attempt_started_at = TimestampOr(row, Anum_job_attempt_started_at, 0);
	job->cleanup_pending = DatumGetBool(JobValue(row, Anum_job_cleanup_pending));
	job->error = CatalogRowText(row, Anum_job_error);
	job->error_sqlstate = CatalogRowText(row, Anum_job_error_sqlstate);
	job->error_detail = CatalogRowText(row, Anum_job_error_detail);
	job->error_hint = CatalogRowText(row, Anum_job_error_hint);
	job->rate_not_before = TimestampOr(row, Anum_job_rate_not_before, 0);
	job->group_id = Int64Or(row, Anum_job_group_id, 0);
	job->cutover_group = CatalogRowText(row, Anum_job_cutover_group);
	LimitsFromRow(row, job);
}

/* Persist a new job as queued; returns its id */
int64
CatalogJobInsert(const BgddlJobSubmission *submission)
{
	CatalogAccess access;
	Oid			argtypes[] = {OIDOID, OIDOID, OIDOID, TEXTOID, OIDOID, TEXTOID, TEXTOID,
	TEXTARRAYOID, TEXTOID, JSONBOID, INT8ARRAYOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID,
	INT8OID, JSONBOID};
	Datum		values[18];
	char		nulls[] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ',
		submission->strategy ? ' ' : 'n', ' ', submission->after != NIL ? ' ' : 'n',
		submission->idempotency_key ? ' ' : 'n', ' ', submission->cutover_window ? ' ' : 'n',
		submission->cutover_max_writes > 0 ? ' ' : 'n', submission->cutover_group ? ' ' : 'n',
		submission->group_id != 0 ? ' ' : 'n', submission->estimate ? ' ' : 'n'};
	Datum	   *after = palloc(sizeof(Datum) * Max(list_length(submission->after), 1));
	int			nafter = 0;
	ListCell   *lc;
	int64		job_id;

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = ObjectIdGetDatum(submission->identity.session_user_oid);
	values[2] = ObjectIdGetDatum(submission->identity.owner_oid);
	values[3] = CStringGetTextDatum(submission->kind);
	values[4] = ObjectIdGetDatum(submission->target_oid);
	values[5] = CStringGetTextDatum(submission->target_name);
	values[6] = CStringGetTextDatum(submission->command);
	values[7] = CatalogTextArray(submission->identity.settings);
	values[8] = submission->strategy ? CStringGetTextDatum(submission->strategy) : (Datum) 0;
	values[9] = JsonbPGetDatum(submission->kind_state ? submission->kind_state :
							   CatalogKindStateEmpty());
	foreach(lc, submission->after)
		after[nafter++] = Int64GetDatum(*(int64 *) lfirst(lc));
	values[10] = PointerGetDatum(construct_array(after, nafter, INT8OID, sizeof(int64),
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[11] = submission->idempotency_key ?
		CStringGetTextDatum(submission->idempotency_key) : (Datum) 0;
	values[12] = CStringGetTextDatum(submission->manual_cutover ? "manual" : "auto");
	values[13] = submission->cutover_window ?
		CStringGetTextDatum(submission->cutover_window) : (Datum) 0;
	values[14] = Int32GetDatum(submission->cutover_max_writes);
	values[15] = submission->cutover_group ?
		CStringGetTextDatum(submission->cutover_group) : (Datum) 0;
	values[16] = Int64GetDatum(submission->group_id);
	values[17] = submission->estimate ? JsonbPGetDatum(submission->estimate) : (Datum) 0;

	CatalogAccessBegin(&access);
	CatalogExecute("INSERT INTO background_ddl.job "
				   "(database_oid, session_user_oid, owner_oid, kind, target_oid, target_name, "
				   " command, settings, strategy, kind_state, after, idempotency_key, cutover, "
				   " cutover_window, cutover_max_writes, cutover_group, group_id, estimate) "
				   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, "
				   " $18) "
				   "RETURNING id",
				   lengthof(values), argtypes, values, nulls, SPI_OK_INSERT_RETURNING);
	job_id = DatumGetInt64(CatalogColumn(0, 1, Int64GetDatum(0)));
	/* A group's first job gives it its id */
	if (submission->cutover_group != NULL && submission->group_id == 0)
	{
		values[0] = Int64GetDatum(job_id);
		CatalogExecute("UPDATE background_ddl.job SET group_id = id WHERE id = $1",
					   1, &argtypes[16], values, NULL, SPI_OK_UPDATE);
	}
	CatalogAccessEnd(&access);
	return job_id;
}

/*
 * Read a job into *job (allocated in the caller's memory context).  With
 * latest, read it under a fresh snapshot, so that a caller in a REPEATABLE
 * READ transaction, or a waiting one, still sees the job move.  Returns
 * false if there is no such job.
 */
bool
CatalogJobLoad(int64 job_id, BgddlJob *job, bool latest)
{
	CatalogRow	row;
	bool		found = JobRowRead(&row, job_id, latest);

	if (found)
		JobFromRow(&row, job);
	CatalogRowClose(&row);
	return found;
}

/*
 * Wait until the transaction that last wrote the job's row has ended
 * altogether.  A transaction is seen committed before it has sent the
 * invalidations of its catalog changes, and releases its locks only after
 * that: a session that saw a job end (wait_ddl) and then looks the job's
 * object up could otherwise still find the placeholder in its caches.
 */
void
CatalogJobWaitForLastWriter(int64 job_id)
{
	CatalogRow	row;
	TransactionId writer = InvalidTransactionId;

	if (JobRowRead(&row, job_id, true))
	{
		bool		isnull;
		Datum		xmin = slot_getsysattr(row.slot, MinTransactionIdAttributeNumber, &isnull);

		if (!isnull)
			writer = DatumGetTransactionId(xmin);
	}
	CatalogRowClose(&row);
	if (TransactionIdIsNormal(writer) && !TransactionIdIsCurrentTransactionId(writer))
		XactLockTableWait(writer, NULL, NULL, XLTW_None);
}

/*
 * Is the job queued or running (not paused, ended or being cancelled)?  As
 * a fresh snapshot sees it; false if there is no such job.
 */
bool
CatalogJobIsActive(int64 job_id)
{
	CatalogRow	row;
	bool		active = false;

	if (JobRowRead(&row, job_id, true))
	{
		JobState	state = JobRowState(&row);

		active = state == JOB_STATE_QUEUED || state == JOB_STATE_RUNNING;
	}
	CatalogRowClose(&row);
	return active;
}

/*
 * The jobs that may need a worker (unfinished, or ended with something of
 * their kind left to clean up), oldest first, as JobScheduleEntry; a paused
 * job is listed (it keeps the scheduler's database known) but needs none.
 */
List *
CatalogJobsSchedulable(void)
{
	CatalogAccess access;
	List	   *entries = NIL;

	CatalogAccessBegin(&access);
	/* A queued job needs no worker before the jobs it starts after have ended */
	/* Nor one handed over to the job that publishes its group (job_group.c) */
	CatalogExecute("SELECT id, state <> 'paused' AND (state <> 'queued' OR NOT EXISTS "
				   "  (SELECT FROM background_ddl.job d WHERE d.id = ANY (j.after) "
				   "      AND d.state IN ('queued', 'running', 'paused', 'cancelling'))) "
				   "  AND NOT (state IN ('queued', 'running') AND NOT in_flight AND "
				   "           published_by IS NOT NULL AND published_by <> id), "
				   "in_flight, attempts, attempt_started_at, "
				   "coalesce(max_workers, 0), owner_oid, "
				   /* what a cancel or a cleanup has to do cannot wait for a rate limit */
				   "CASE WHEN state IN ('queued', 'running') THEN coalesce(not_before, '-infinity') "
				   "     ELSE '-infinity' END, "
				   /* ready (with a worker or given back): until complete_ddl makes its cut-over due */
				   "state IN ('queued', 'running') AND phase = 'ready' AND cutover <> 'completed' "
				   "FROM background_ddl.job j "
				   "WHERE state IN ('queued', 'running', 'paused', 'cancelling') "
				   "   OR (state IN ('succeeded', 'failed', 'cancelled') AND cleanup_pending) "
				   "ORDER BY id", 0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access.caller_context);
		JobScheduleEntry *entry = palloc(sizeof(JobScheduleEntry));

		entry->id = DatumGetInt64(CatalogColumn(row, 1, 0));
		entry->needs_worker = DatumGetBool(CatalogColumn(row, 2, BoolGetDatum(false)));
		entry->in_flight = DatumGetBool(CatalogColumn(row, 3, BoolGetDatum(false)));
		entry->attempts = DatumGetInt32(CatalogColumn(row, 4, Int32GetDatum(0)));
		entry->attempt_started_at =
			DatumGetTimestampTz(CatalogColumn(row, 5, TimestampTzGetDatum(0)));
		entry->max_workers = DatumGetInt32(CatalogColumn(row, 6, Int32GetDatum(0)));
		entry->owner_oid = DatumGetObjectId(CatalogColumn(row, 7, ObjectIdGetDatum(InvalidOid)));
		entry->not_before = DatumGetTimestampTz(CatalogColumn(row, 8, TimestampTzGetDatum(0)));
		entry->ready = DatumGetBool(CatalogColumn(row, 9, BoolGetDatum(false)));
		entries = lappend(entries, entry);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return entries;
}

/*
 * The job submitted with an idempotency key (and in *command its statement),
 * or 0
 */
int64
CatalogJobByKey(const char *idempotency_key, Oid owner_oid, char **command)
{
	CatalogAccess access;
	Oid			argtypes[] = {TEXTOID, OIDOID};
	Datum		values[] = {CStringGetTextDatum(idempotency_key), ObjectIdGetDatum(owner_oid)};
	int64		job_id = 0;

	CatalogAccessBegin(&access);
	CatalogExecuteLatest("SELECT id, command FROM background_ddl.job "
						 "WHERE idempotency_key = $1 AND owner_oid = $2",
						 lengthof(values), argtypes, values, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		job_id = DatumGetInt64(CatalogColumn(0, 1, Int64GetDatum(0)));
		*command = MemoryContextStrdup(access.caller_context,
									   TextDatumGetCString(CatalogColumn(0, 2, (Datum) 0)));
	}
	CatalogAccessEnd(&access);
	return job_id;
}

/*
 * Why a job that starts after others cannot start: "job N failed" or "job N
 * was cancelled" (the first such), or NULL
 */
char *
CatalogJobEndedDependency(int64 job_id)
{
	/* the id, negative if the job was cancelled */
	int64		ended = DatumGetInt64(CatalogValueForJob(
		"SELECT CASE d.state WHEN 'failed' THEN d.id ELSE -d.id END "
		"FROM background_ddl.job j JOIN background_ddl.job d ON d.id = ANY (j.after) "
		"WHERE j.id = $1 AND d.state IN ('failed', 'cancelled') ORDER BY d.id LIMIT 1",
		job_id, Int64GetDatum(0)));

	if (ended == 0)
		return NULL;
	return psprintf(ended > 0 ? "job %lld failed" : "job %lld was cancelled",
					(long long) (ended > 0 ? ended : -ended));
}

/*
 * The job ids (int64 *, in the caller's memory) in the first column of the
 * rows of the last catalog statement of access
 */
static List *
JobIdsOfResult(CatalogAccess *access)
{
	List	   *ids = NIL;

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access->caller_context);
		int64	   *id = palloc(sizeof(int64));

		*id = DatumGetInt64(CatalogColumn(row, 1, Int64GetDatum(0)));
		ids = lappend(ids, id);
		MemoryContextSwitchTo(spi_context);
	}
	return ids;
}

/*
 * The job ids (int64 *, in the caller's memory) that a catalog query with
 * one parameter of type argtype returns in its first column
 */
static List *
JobIdsOf(const char *sql, Oid argtype, Datum value)
{
	CatalogAccess access;
	Oid			argtypes[] = {argtype};
	Datum		values[] = {value};
	List	   *ids = NIL;

	CatalogAccessBegin(&access);
	CatalogExecuteLatest(sql, OidIsValid(argtype) ? 1 : 0, argtypes, values, SPI_OK_SELECT);
	ids = JobIdsOfResult(&access);
	CatalogAccessEnd(&access);
	return ids;
}

/* The unfinished jobs that start after a job (int64 *), by id */
List *
CatalogJobsWaitingFor(int64 job_id)
{
	return JobIdsOf("SELECT id FROM background_ddl.job WHERE $1 = ANY (after) "
					"AND state IN ('queued', 'running', 'paused', 'cancelling') ORDER BY id",
					INT8OID, Int64GetDatum(job_id));
}

/* Does a job start after another, directly or through the jobs it starts after? */
bool
CatalogJobStartsAfter(int64 job_id, int64 earlier_id)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, INT8OID};
	Datum		values[] = {Int64GetDatum(job_id), Int64GetDatum(earlier_id)};
	bool		starts_after;

	CatalogAccessBegin(&access);
	CatalogExecuteLatest("WITH RECURSIVE up(id) AS ("
						 " SELECT pg_catalog.unnest(after) FROM background_ddl.job WHERE id = $1"
						 " UNION"
						 " SELECT pg_catalog.unnest(j.after) FROM up JOIN background_ddl.job j ON j.id = up.id)"
						 "SELECT EXISTS (SELECT FROM up WHERE id = $2)",
						 lengthof(values), argtypes, values, SPI_OK_SELECT);
	starts_after = DatumGetBool(CatalogColumn(0, 1, BoolGetDatum(false)));
	CatalogAccessEnd(&access);
	return starts_after;
}

/*
 * A job and the jobs it starts after, directly or through others, that
 * have not ended (int64 *), by id: what a wait for the job waits for
 */
List *
CatalogJobsAwaited(int64 job_id)
{
	return JobIdsOf("WITH RECURSIVE up(id) AS ("
					" SELECT $1"
					" UNION"
					" SELECT pg_catalog.unnest(j.after) FROM up JOIN background_ddl.job j ON j.id = up.id)"
					"SELECT j.id FROM up JOIN background_ddl.job j ON j.id = up.id "
					"WHERE j.state IN ('queued', 'running', 'paused', 'cancelling') ORDER BY j.id",
					INT8OID, Int64GetDatum(job_id));
}

/*
 * The unfinished job that builds (or refreshes) a relation, or 0; the first
 * of them, if a job that refreshes a materialized view waits for the one
 * creating it
 */
int64
CatalogJobBuilding(Oid target_oid)
{
	List	   *jobs = CatalogJobsBuilding(target_oid);

	return jobs != NIL ? *(int64 *) linitial(jobs) : 0;
}

/* The unfinished jobs that build or refresh a relation (int64 *), by id */
List *
CatalogJobsBuilding(Oid target_oid)
{
	return JobIdsOf("SELECT id FROM background_ddl.job WHERE target_oid = $1 "
					"AND state IN ('queued', 'running', 'paused', 'cancelling') ORDER BY id",
					OIDOID, ObjectIdGetDatum(target_oid));
}

/* Ids of the jobs that are not over (unfinished, or cleanup left), as int64 List */
List *
CatalogJobsUnfinished(void)
{
	return JobIdsOf("SELECT id FROM background_ddl.job "
					"WHERE state IN ('queued', 'running', 'paused', 'cancelling') "
					"OR cleanup_pending ORDER BY id", InvalidOid, (Datum) 0);
}

/*
 * Forget jobs that ended longer ago than the retention (and have nothing
 * left to clean up), with any recomputed rows they left (the other tables
 * go by their foreign keys).
 */
void
CatalogJobsPurge(int retention_seconds)
{
	Oid			argtypes[] = {FLOAT8OID};
	Datum		values[] = {Float8GetDatum(retention_seconds)};

	CatalogRun("WITH purged AS (DELETE FROM background_ddl.job "
			   "WHERE state IN ('succeeded', 'failed', 'cancelled') AND NOT cleanup_pending "
			   "AND finished_at < now() - make_interval(secs => $1) RETURNING id) "
			   "DELETE FROM background_ddl.recomputed WHERE job_id IN (SELECT id FROM purged)",
			   1, argtypes, values, NULL, SPI_OK_DELETE);
}

/*
 * A job about to be claimed, not after a crash or an error, was queued,
 * waiting for a worker, since it was queued (submitted, resumed, let go),
 * or since the jobs it starts after ended, or since its worker was given
 * back until (not_before), whichever is the latest: the time the scheduler
 * takes to start a worker, and the time every worker was taken
 * (background_ddl.max_workers)
 */
static void
CountQueuedWait(CatalogRow *row, int64 job_id)
{
	TimestampTz since;
	TimestampTz now = GetCurrentTimestamp();

	if (JobIsNull(row, Anum_job_queued_at))
		return;
	since = DatumGetTimestampTz(JobValue(row, Anum_job_queued_at));
	since = Max(since, TimestampOr(row, Anum_job_not_before, 0));
	if (!JobIsNull(row, Anum_job_after))
		since = Max(since, DatumGetTimestampTz(CatalogValueForJob(
					"SELECT max(d.finished_at) FROM background_ddl.job j "
					"JOIN background_ddl.job d ON d.id = ANY (j.after) WHERE j.id = $1",
					job_id, TimestampTzGetDatum(0))));
	if (now > since)
		waited_us[JOB_WAIT_QUEUED] += now - since;
}

/*
 * Take a job for this worker and read it into *job.  A queued or running
 * job becomes running; it counts as a new attempt only if it is the first,
 * or if the worker before us did not let go of it cleanly (a crash, a
 * transient error), and not beyond max_attempts: *exhausted then says that
 * the job has had all its attempts, and *state_changed whether it was not
 * running before.  Returns false if the job needs no worker.  Caller holds
 * the job lock.
 */
bool
CatalogJobClaim(int64 job_id, int32 max_attempts, BgddlJob *job, bool *exhausted,
				bool *state_changed)
{
	CatalogRow	row;
	JobState	state;
	bool		active;
	bool		claimable;
	bool		in_flight;
	int32		attempts;
	TimestampTz now = GetCurrentTransactionStartTimestamp();

	if (!JobRowLock(&row, job_id))
	{
		CatalogRowClose(&row);
		return false;
	}
	state = JobRowState(&row);
	active = state == JOB_STATE_QUEUED || state == JOB_STATE_RUNNING;
	claimable = active || state == JOB_STATE_CANCELLING ||
		(JobStateIsFinal(state) && DatumGetBool(JobValue(&row, Anum_job_cleanup_pending)));
	if (!claimable)
	{
		CatalogRowClose(&row);
		return false;
	}
	in_flight = DatumGetBool(JobValue(&row, Anum_job_in_flight));
	attempts = DatumGetInt32(JobValue(&row, Anum_job_attempts));
	*exhausted = in_flight && attempts >= max_attempts;
	/* A worker that did not let go, nor record an error to be retried, crashed */
	if (active && in_flight && JobIsNull(&row, Anum_job_given_back_for))
		CatalogJobCountRetry(JOB_RETRY_CRASH);
	if (active && !in_flight)
		CountQueuedWait(&row, job_id);
	CatalogRowSet(&row, Anum_job_queued_at, (Datum) 0, true);
	if (active && (in_flight || attempts == 0) && attempts < max_attempts)
		CatalogRowSet(&row, Anum_job_attempts, Int32GetDatum(attempts + 1), false);
	CatalogRowSet(&row, Anum_job_in_flight, BoolGetDatum(active), false);
	if (active && JobIsNull(&row, Anum_job_started_at))
		CatalogRowSet(&row, Anum_job_started_at, TimestampTzGetDatum(now), false);
	CatalogRowSet(&row, Anum_job_attempt_started_at, TimestampTzGetDatum(now), false);
	CatalogRowSet(&row, Anum_job_not_before, (Datum) 0, true);
	CatalogRowSet(&row, Anum_job_given_back_for, (Datum) 0, true);
	if (active)
	{
		SetPhase(&row, JOB_PHASE_STARTING);
		SetState(&row, JOB_STATE_RUNNING);
	}
	JobRowWrite(&row);
	JobFromRow(&row, job);
	CatalogRowClose(&row);
	*state_changed = state != job->state;
	return true;
}

/*
 * Set the job's phase, and read back its limits into *job: a limit that
 * alter_ddl set during a phase holds from the next one's start (a rate
 * limit set while a job plans paces its first chunk)
 */
void
CatalogJobSetPhase(BgddlJob *job, JobPhase phase)
{
	CatalogRow	row;

	if (JobRowLock(&row, job->id))
	{
		SetPhase(&row, phase);
		LimitsFromRow(&row, job);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * Move a job to queued, paused or cancelling (a control function's doing):
 * its worker, if any, has let go cleanly.
 */
void
CatalogJobSetState(int64 job_id, JobState state)
{
	CatalogRow	row;

	if (JobRowLock(&row, job_id))
	{
		SetState(&row, state);
		CatalogRowSet(&row, Anum_job_in_flight, BoolGetDatum(false), false);
		CatalogRowSet(&row, Anum_job_queued_at, TimestampTzGetDatum(GetCurrentTimestamp()),
					  state != JOB_STATE_QUEUED);
		SetPhase(&row, state == JOB_STATE_CANCELLING ? JOB_PHASE_CLEANING_UP : JOB_PHASE_NONE);
		CatalogRowSet(&row, Anum_job_eta, (Datum) 0, true);
		SetError(&row, NULL);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * Record an error the job met without ending (one a later attempt may not
 * meet); with in_flight false, the worker lets go cleanly (not an attempt).
 */
void
CatalogJobRecordError(int64 job_id, const JobError *error, bool in_flight)
{
	CatalogRow	row;

	if (JobRowLock(&row, job_id))
	{
		SetError(&row, error);
		CatalogRowSet(&row, Anum_job_in_flight, BoolGetDatum(in_flight), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * The same, for a worker that exits so that the job is tried again: the
 * next attempt's claim tells it from a crash (CatalogJobClaim)
 */
void
CatalogJobRecordRetry(int64 job_id, const JobError *error)
{
	CatalogRow	row;

	CatalogJobCountRetry(JOB_RETRY_ERROR);
	if (JobRowLock(&row, job_id))
	{
		SetError(&row, error);
		CatalogRowSet(&row, Anum_job_in_flight, BoolGetDatum(true), false);
		SetText(&row, Anum_job_given_back_for, "a restart after an error");
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/* The job's rate limit holds its next batch until rate_not_before */
void
CatalogJobSetRateNotBefore(int64 job_id, TimestampTz rate_not_before)
{
	CatalogRow	row;

	if (JobRowLock(&row, job_id))
	{
		CatalogRowSet(&row, Anum_job_rate_not_before, TimestampTzGetDatum(rate_not_before), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * The worker lets go of the job cleanly (shutdown, or it gives its worker
 * back): not an attempt.  With not_before (not 0), no worker starts on it
 * again before then; why says what it waits for meanwhile, and the time
 * until then counts as a wait for waits_for.
 */
void
CatalogJobLetGo(int64 job_id, TimestampTz not_before, const char *why,
				JobWaitReason waits_for)
{
	CatalogRow	row;

	if (waits_for != JOB_WAIT_NONE && not_before > GetCurrentTimestamp())
		waited_us[waits_for] += not_before - GetCurrentTimestamp();
	if (JobRowLock(&row, job_id))
	{
		CatalogRowSet(&row, Anum_job_in_flight, BoolGetDatum(false), false);
		CatalogRowSet(&row, Anum_job_queued_at, TimestampTzGetDatum(GetCurrentTimestamp()), false);
		CatalogRowSet(&row, Anum_job_not_before, TimestampTzGetDatum(not_before),
					  not_before == 0);
		SetText(&row, Anum_job_given_back_for, why);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/* pg_current_snapshot() as text */
static Datum
CurrentSnapshotText(void)
{
	Datum		snapshot = DirectFunctionCall1(pg_snapshot_out, DirectFunctionCall1(pg_current_snapshot, (Datum) 0));

	return CStringGetTextDatum(DatumGetCString(snapshot));
}

/*
 * End a job: succeeded, failed or cancelled.  With record_cutover_snapshot,
 * the current transaction's snapshot is the one the result equals.  A
 * successful job's rate becomes the whole build's, and one without a
 * chunked backfill counts as one chunk; rows_done (if not negative) is the
 * result's row count; target_name (if not NULL) is the object's name now.
 * The submitter's settings are not kept in the history.
 */
void
CatalogJobFinish(int64 job_id, JobState state, const JobError *error,
				 bool record_cutover_snapshot, int64 rows_done, const char *target_name)
{
	CatalogRow	row;
	TimestampTz now = GetCurrentTimestamp();
	bool		succeeded = state == JOB_STATE_SUCCEEDED;

	Assert(JobStateIsFinal(state));
	if (JobRowLock(&row, job_id))
	{
		if (rows_done < 0)
			rows_done = Int64Or(&row, Anum_job_rows_done, 0);
		SetState(&row, state);
		SetError(&row, error);
		CatalogRowSet(&row, Anum_job_in_flight, BoolGetDatum(false), false);
		SetPhase(&row, DatumGetBool(JobValue(&row, Anum_job_cleanup_pending)) ?
				 JOB_PHASE_CLEANING_UP : JOB_PHASE_NONE);
		CatalogRowSet(&row, Anum_job_finished_at, TimestampTzGetDatum(now), false);
		CatalogRowSet(&row, Anum_job_eta, (Datum) 0, true);
		CatalogRowSet(&row, Anum_job_rows_done, Int64GetDatum(rows_done), false);
		CatalogRowSet(&row, Anum_job_dirty_rows, Int64GetDatum(0), false);
		if (target_name != NULL)
			SetText(&row, Anum_job_target_name, target_name);
		if (succeeded)
		{
			TimestampTz started = TimestampOr(&row, Anum_job_started_at, now);

			CatalogRowSet(&row, Anum_job_progress, Float8GetDatum(100), false);
			if (JobIsNull(&row, Anum_job_work_total))
			{
				CatalogRowSet(&row, Anum_job_chunks_done, Int64GetDatum(1), false);
				CatalogRowSet(&row, Anum_job_chunks_total, Int64GetDatum(1), false);
			}
			else				/* (the chunks counted, not as estimated) */
				CatalogRowSet(&row, Anum_job_chunks_total,
							  Int64GetDatum(Int64Or(&row, Anum_job_chunks_done, 0)), false);
			CatalogRowSet(&row, Anum_job_rate,
						  Float8GetDatum(rows_done / Max((now - started) / (double) USECS_PER_SEC,
														 0.001)),
						  false);
			CatalogRowSet(&row, Anum_job_cutover_at, TimestampTzGetDatum(now), false);
		}
		CatalogRowSet(&row, Anum_job_cutover_snapshot,
					  record_cutover_snapshot ? CurrentSnapshotText() : (Datum) 0,
					  !record_cutover_snapshot);
		CatalogRowSet(&row, Anum_job_settings, CatalogTextArray(NIL), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * Mark (or clear) that the job's kind has something left to clean up after
 * the job's end (its worker does it: capture triggers, say).
 */
void
CatalogJobSetCleanupPending(int64 job_id, bool pending)
{
	CatalogRow	row;

	if (JobRowLock(&row, job_id))
	{
		JobState	state = JobRowState(&row);

		CatalogRowSet(&row, Anum_job_cleanup_pending, BoolGetDatum(pending), false);
		if (state != JOB_STATE_QUEUED && state != JOB_STATE_RUNNING)
			SetPhase(&row, pending ? JOB_PHASE_CLEANING_UP : JOB_PHASE_NONE);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/* The kind's state, and the size of its backfill (-1: none) */
static void
SetKindState(CatalogRow *row, const BgddlJob *job)
{
	CatalogRowSet(row, Anum_job_kind_state, JsonbPGetDatum(job->kind_state), false);
	CatalogRowSet(row, Anum_job_work_total, Int64GetDatum(job->work_total),
				  job->work_total < 0);
}

/*
 * Record how the job's content is computed (strategy), the planner's
 * estimate of its rows, and the kind's state.
 */
void
CatalogJobRecordPlan(const BgddlJob *job)
{
	CatalogRow	row;

	if (JobRowLock(&row, job->id))
	{
		CatalogRowSet(&row, Anum_job_planned, BoolGetDatum(true), false);
		SetText(&row, Anum_job_strategy, job->strategy);
		CatalogRowSet(&row, Anum_job_rows_total, Int64GetDatum(job->rows_total),
					  job->rows_total < 0);
		SetKindState(&row, job);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/* Record the kind's state and the size of the backfill */
void
CatalogJobRecordKindState(const BgddlJob *job)
{
	CatalogRow	row;

	if (JobRowLock(&row, job->id))
	{
		SetKindState(&row, job);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * The job is built in the session that submitted it (the submitting
 * transaction used its target): strategy says so.
 */
void
CatalogJobRecordBuiltHere(int64 job_id, const char *strategy)
{
	CatalogRow	row;
	TimestampTz now = GetCurrentTransactionStartTimestamp();

	if (JobRowLock(&row, job_id))
	{
		CatalogRowSet(&row, Anum_job_planned, BoolGetDatum(true), false);
		SetText(&row, Anum_job_strategy, strategy);
		CatalogRowSet(&row, Anum_job_started_at, TimestampTzGetDatum(now), false);
		CatalogRowSet(&row, Anum_job_attempt_started_at, TimestampTzGetDatum(now), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/* Record the object the job builds (an index job's placeholder, then its index) */
void
CatalogJobRecordTarget(int64 job_id, Oid target_oid)
{
	CatalogRow	row;

	if (JobRowLock(&row, job_id))
	{
		CatalogRowSet(&row, Anum_job_target_oid, ObjectIdGetDatum(target_oid), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * Count a committed chunk of rows rows and work units of work, and read
 * back the job's totals and limits into *job.  next_work is the size of the
 * worker's next chunk (for the chunk count), seconds_per_unit the job's
 * pace (for the estimate of the time left).
 *
 * The chunk's own row (capture_log.c) is the checkpoint.  The job row only
 * shows the totals, and several workers update it: each of them writes its
 * chunks into it at most every JOB_ROW_INTERVAL_MS, with the chunk that
 * makes the interval pass, so that they do not queue on its row lock.  In
 * between, a worker reads the row (without a lock) for the limits that
 * alter_ddl changes.  Counts that a worker kept to itself and never wrote
 * (it stopped) are recovered from the chunk rows when the backfill settles
 * (CatalogJobSetBackfillTotals).  Returns whether it wrote the job row: what
 * the view shows changed, and the step's commit must not be lost to a crash
 * (JobStepEndPipelined).
 */
#define JOB_ROW_INTERVAL_MS 250

/*
 * The progress that the work done shows: from where the build last started
 * (progress_base) to 99.9 once all of work_total is done, never less than
 * the progress shown before
 */
static double
WorkProgress(const BgddlJob *job)
{
	return Max(job->progress, job->progress_base + (99.9 - job->progress_base) *
			   Min(1.0, (double) job->work_done / Max(job->work_total, 1)));
}

static int64 unwritten_rows = 0;
static int64 unwritten_chunks = 0;
static int64 unwritten_work = 0;
static TimestampTz job_row_written_at = 0;

bool
CatalogJobRecordChunk(BgddlJob *job, int64 rows, int64 work, int64 next_work,
					  double seconds_per_unit)
{
	CatalogRow	row;
	double		seconds;
	int64		work_left;
	TimestampTz now = GetCurrentTimestamp();

	unwritten_rows += rows;
	unwritten_chunks++;
	unwritten_work += work;
	if (!TimestampDifferenceExceeds(job_row_written_at, now, JOB_ROW_INTERVAL_MS))
	{
		job->rows_done += rows;
		job->chunks_done++;
		job->work_done += work;
		if (JobRowRead(&row, job->id, false))
			LimitsFromRow(&row, job);
		CatalogRowClose(&row);
		return false;
	}
	if (!JobRowLock(&row, job->id))
	{
		CatalogRowClose(&row);
		return false;
	}
	ProgressFromRow(&row, job);
	job->rows_done += unwritten_rows;
	job->chunks_done += unwritten_chunks;
	job->work_done += unwritten_work;
	unwritten_rows = unwritten_chunks = unwritten_work = 0;
	job_row_written_at = now;
	job->work_total = Int64Or(&row, Anum_job_work_total, 0);
	work_left = Max(job->work_total - job->work_done, 0);
	job->progress = WorkProgress(job);
	seconds = (now - TimestampOr(&row, Anum_job_attempt_started_at, 0)) /
		(double) USECS_PER_SEC;
	CatalogRowSet(&row, Anum_job_rows_done, Int64GetDatum(job->rows_done), false);
	CatalogRowSet(&row, Anum_job_chunks_done, Int64GetDatum(job->chunks_done), false);
	CatalogRowSet(&row, Anum_job_work_done, Int64GetDatum(job->work_done), false);
	CatalogRowSet(&row, Anum_job_chunks_total,
				  Int64GetDatum(job->chunks_done + (work_left + Max(next_work, 1) - 1) /
								Max(next_work, 1)), false);
	CatalogRowSet(&row, Anum_job_progress, Float8GetDatum(job->progress), false);
	CatalogRowSet(&row, Anum_job_rate, Float8GetDatum(job->rows_done / Max(seconds, 0.001)),
				  false);
	CatalogRowSet(&row, Anum_job_eta, IntervalSeconds(rint(work_left * seconds_per_unit)), false);
	LimitsFromRow(&row, job);
	JobRowWrite(&row);
	CatalogRowClose(&row);
	return true;
}

/*
 * The backfill's totals, from its chunk rows (CaptureChunkTotals), into the
 * job row and *job: every worker's chunks, also those whose counts a worker
 * that stopped never wrote; or, with raise_only, only where they are more
 * than the row's (a catch-up's rows count too)
 */
static void
BackfillTotals(BgddlJob *job, int64 chunks, int64 rows, int64 work, bool raise_only)
{
	CatalogRow	row;

	unwritten_rows = unwritten_chunks = unwritten_work = 0;
	if (JobRowLock(&row, job->id))
	{
		ProgressFromRow(&row, job);
		job->rows_done = raise_only ? Max(job->rows_done, rows) : rows;
		job->chunks_done = raise_only ? Max(job->chunks_done, chunks) : chunks;
		job->work_done = raise_only ? Max(job->work_done, work) : work;
		job->work_total = Int64Or(&row, Anum_job_work_total, 0);
		job->progress = WorkProgress(job);
		CatalogRowSet(&row, Anum_job_rows_done, Int64GetDatum(job->rows_done), false);
		CatalogRowSet(&row, Anum_job_chunks_done, Int64GetDatum(job->chunks_done), false);
		CatalogRowSet(&row, Anum_job_work_done, Int64GetDatum(job->work_done), false);
		CatalogRowSet(&row, Anum_job_progress, Float8GetDatum(job->progress), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/* Once the backfill has settled (or a build resumes its scan): its totals */
void
CatalogJobSetBackfillTotals(BgddlJob *job, int64 chunks, int64 rows, int64 work)
{
	BackfillTotals(job, chunks, rows, work, false);
}

/*
 * A first worker's start, in any phase: the totals of the chunks committed
 * before it, where the row has less (a worker that crashed kept some to
 * itself), so that the progress it showed is not lost
 */
void
CatalogJobRaiseBackfillTotals(BgddlJob *job, int64 chunks, int64 rows, int64 work)
{
	BackfillTotals(job, chunks, rows, work, true);
}

/*
 * The catch-up's progress: the rows in the result, the changed rows
 * waiting, when they will have been recomputed (eta_seconds < 0: not known
 * yet), and the kind's state.
 */
void
CatalogJobRecordBacklog(const BgddlJob *job, int64 dirty_rows, double eta_seconds)
{
	CatalogRow	row;

	if (JobRowLock(&row, job->id))
	{
		CatalogRowSet(&row, Anum_job_rows_done, Int64GetDatum(job->rows_done), false);
		CatalogRowSet(&row, Anum_job_dirty_rows, Int64GetDatum(dirty_rows), false);
		if (eta_seconds >= 0)
			CatalogRowSet(&row, Anum_job_eta, IntervalSeconds(rint(eta_seconds)), false);
		SetKindState(&row, job);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * Raise a running job's progress to this, if it is less; a row that a
 * worker holds locked is left as it is (the caller tries again later)
 */
void
CatalogJobRaiseProgress(int64 job_id, double progress)
{
	CatalogRun("UPDATE background_ddl.job SET progress = $2"
			   " WHERE id = (SELECT id FROM background_ddl.job"
			   "              WHERE id = $1 AND state = 'running' AND progress < $2"
			   "              FOR UPDATE SKIP LOCKED)",
			   2, (Oid[]) {INT8OID, FLOAT8OID},
			   (Datum[]) {Int64GetDatum(job_id), Float8GetDatum(progress)}, NULL, SPI_OK_UPDATE);
}

/* The changed rows waiting (0: its capture stopped counting them) */
void
CatalogJobSetDirtyRows(int64 job_id, int64 dirty_rows)
{
	CatalogRow	row;

	if (JobRowLock(&row, job_id))
	{
		CatalogRowSet(&row, Anum_job_dirty_rows, Int64GetDatum(dirty_rows), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/*
 * Start the build over (the driving table or the content relation was
 * rewritten: every tuple id changed), with the kind's state and backfill
 * size in *job.  Progress keeps moving forward: the new build covers what
 * is left between the old progress and 100.
 */
void
CatalogJobRestartBuild(BgddlJob *job)
{
	CatalogRow	row;

	unwritten_rows = unwritten_chunks = unwritten_work = 0;
	if (JobRowLock(&row, job->id))
	{
		job->progress = Float8Or(&row, Anum_job_progress, 0);
		job->progress_base = job->progress;
		job->rows_done = 0;
		job->chunks_done = 0;
		job->work_done = 0;
		SetKindState(&row, job);
		CatalogRowSet(&row, Anum_job_progress_base, Float8GetDatum(job->progress_base), false);
		CatalogRowSet(&row, Anum_job_rows_done, Int64GetDatum(0), false);
		CatalogRowSet(&row, Anum_job_chunks_done, Int64GetDatum(0), false);
		CatalogRowSet(&row, Anum_job_work_done, Int64GetDatum(0), false);
		CatalogRowSet(&row, Anum_job_dirty_rows, Int64GetDatum(0), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

static const char *
SeverityName(int elevel)
{
	return elevel == WARNING ? "WARNING" : elevel == NOTICE ? "NOTICE" : "INFO";
}

/*
 * Add a step's messages (JobMessages) to the job's, and uncaught more that it
 * only counted: the job's count grows by all of them, and those within the
 * first JOB_MESSAGES_KEPT of the job are kept.  Caller is in the step's
 * transaction (with no active snapshot if its utility committed inside).
 */
void
CatalogJobAppendMessages(int64 job_id, List *messages, int64 uncaught)
{
	CatalogRow	row;
	CatalogAccess access;
	int64		first = 0;
	ListCell   *lc;
	bool		pushed_snapshot = !ActiveSnapshotSet();

	if (messages == NIL && uncaught == 0)
		return;
	if (pushed_snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	if (JobRowLock(&row, job_id))
	{
		first = DatumGetInt64(JobValue(&row, Anum_job_messages));
		CatalogRowSet(&row, Anum_job_messages,
					  Int64GetDatum(first + list_length(messages) + uncaught), false);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
	CatalogAccessBegin(&access);
	foreach(lc, messages)
	{
		JobMessage *message = lfirst(lc);
		int64		seq = first + foreach_current_index(lc) + 1;
		Oid			types[] = {INT8OID, INT8OID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID};
		const char *texts[] = {SeverityName(message->elevel), message->message,
		message->detail, message->hint, message->context};
		Datum		values[8];
		char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

		if (seq > JOB_MESSAGES_KEPT)
			break;
		values[0] = Int64GetDatum(job_id);
		values[1] = Int64GetDatum(seq);
		values[2] = TimestampTzGetDatum(message->raised_at);
		for (int i = 0; i < lengthof(texts); i++)
		{
			values[3 + i] = texts[i] ? CStringGetTextDatum(texts[i]) : (Datum) 0;
			nulls[3 + i] = texts[i] ? ' ' : 'n';
		}
		CatalogExecute("INSERT INTO background_ddl.message "
					   "(job_id, seq, raised_at, severity, message, detail, hint, context) "
					   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
					   lengthof(values), types, values, nulls, SPI_OK_INSERT);
	}
	CatalogAccessEnd(&access);
	if (pushed_snapshot)
		PopActiveSnapshot();
}

/*
 * Change a job's limits (alter_ddl): max_rate 0 keeps it, a negative one
 * lifts it; batch_time_ms and max_workers 0 keep them, max_replica_lag_ms
 * -1, cutover NULL ('auto', 'manual', or 'completed' by complete_ddl) and
 * cutover_window NULL ('' removes it), cutover_max_writes -1 (0 removes
 * it).  A job whose worker was given back
 * (waiting for its rate limit) may have one at once.
 */
void
CatalogJobSetLimits(int64 job_id, double max_rate, int batch_time_ms, int max_workers,
					int max_replica_lag_ms, const char *cutover, const char *cutover_window,
					int cutover_max_writes)
{
	CatalogRow	row;

	if (JobRowLock(&row, job_id))
	{
		if (cutover != NULL)
			CatalogRowSet(&row, Anum_job_cutover, CStringGetTextDatum(cutover), false);
		if (cutover_window != NULL)
			CatalogRowSet(&row, Anum_job_cutover_window, *cutover_window == '\0' ? (Datum) 0 :
						  CStringGetTextDatum(cutover_window), *cutover_window == '\0');
		if (cutover_max_writes >= 0)
			CatalogRowSet(&row, Anum_job_cutover_max_writes, Int32GetDatum(cutover_max_writes),
						  cutover_max_writes == 0);
		if (max_replica_lag_ms >= 0)
			CatalogRowSet(&row, Anum_job_max_replica_lag,
						  IntervalSeconds(max_replica_lag_ms / 1000.0), false);
		if (max_rate != 0)
			CatalogRowSet(&row, Anum_job_max_rate, Float8GetDatum(max_rate), max_rate < 0);
		if (batch_time_ms > 0)
			CatalogRowSet(&row, Anum_job_batch_time, IntervalSeconds(batch_time_ms / 1000.0),
						  false);
		if (max_workers > 0)
			CatalogRowSet(&row, Anum_job_max_workers, Int32GetDatum(max_workers), false);
		CatalogRowSet(&row, Anum_job_not_before, (Datum) 0, true);
		CatalogRowSet(&row, Anum_job_given_back_for, (Datum) 0, true);
		JobRowWrite(&row);
	}
	CatalogRowClose(&row);
}

/* Read the job's current limits into *job */
void
CatalogJobReadLimits(BgddlJob *job)
{
	CatalogRow	row;

	if (JobRowRead(&row, job->id, true))
		LimitsFromRow(&row, job);
	CatalogRowClose(&row);
}

/*
 * A group: the jobs that one transaction submitted under one
 * background_ddl.cutover_group, published together by one of them (its
 * publisher) once all are ready; the other ones' workers hand them over.
 */

/* Row m is of a job of job $1's group */
#define IN_GROUP \
	"m.group_id = (SELECT g.group_id FROM background_ddl.job g WHERE g.id = $1) "

/*
 * The job is built and caught up, and its own cut-over conditions hold:
 * mark it ready for its group, with the group's rows locked (by id, so
 * that two jobs becoming ready at once take turns).  If every job of the
 * group is ready and none publishes it yet, this one does from now on.
 * Returns the group's publisher (0: none yet); *not_ready lists the jobs
 * (int64 *) that are not ready.
 */
int64
CatalogGroupReady(int64 job_id, List **not_ready)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};
	int64		publisher = 0;

	*not_ready = NIL;
	CatalogAccessBegin(&access);
	CatalogExecute("SELECT m.id, m.group_ready OR m.id = $1, m.published_by "
				   "FROM background_ddl.job m WHERE " IN_GROUP "ORDER BY m.id FOR UPDATE", 1, argtypes, values, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access.caller_context);

		if (!DatumGetBool(CatalogColumn(row, 2, BoolGetDatum(false))))
		{
			int64	   *id = palloc(sizeof(int64));

			*id = DatumGetInt64(CatalogColumn(row, 1, Int64GetDatum(0)));
			*not_ready = lappend(*not_ready, id);
		}
		publisher = Max(publisher, DatumGetInt64(CatalogColumn(row, 3, Int64GetDatum(0))));
		MemoryContextSwitchTo(spi_context);
	}
	CatalogExecute("UPDATE background_ddl.job SET group_ready = true WHERE id = $1",
				   1, argtypes, values, NULL, SPI_OK_UPDATE);
	if (publisher == 0 && *not_ready == NIL)
	{
		CatalogExecute("UPDATE background_ddl.job m SET published_by = $1 WHERE " IN_GROUP,
					   1, argtypes, values, NULL, SPI_OK_UPDATE);
		publisher = job_id;
	}
	CatalogAccessEnd(&access);
	return publisher;
}

/*
 * The jobs of a job's group (int64 *, by id, itself included), as last
 * committed.  *pending lists the other ones that are not handed over to it
 * yet (a worker still has one, or it is paused, or it is not this job's to
 * publish), and *paused (if not NULL) those of them that are paused; *ended
 * says whether one has ended or is being cancelled.
 */
List *
CatalogGroupMembers(int64 job_id, List **pending, List **paused, bool *ended)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};
	List	   *members = NIL;

	*pending = NIL;
	if (paused != NULL)
		*paused = NIL;
	*ended = false;
	CatalogAccessBegin(&access);
	CatalogExecuteLatest("SELECT m.id, m.id <> $1 AND (m.in_flight OR m.state = 'paused' OR "
						 "  m.published_by IS DISTINCT FROM $1), "
						 "m.state NOT IN ('queued', 'running', 'paused'), "
						 "m.id <> $1 AND m.state = 'paused' "
						 "FROM background_ddl.job m WHERE " IN_GROUP "ORDER BY m.id",
						 1, argtypes, values, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi_context = MemoryContextSwitchTo(access.caller_context);
		int64	   *id = palloc(sizeof(int64));

		*id = DatumGetInt64(CatalogColumn(row, 1, Int64GetDatum(0)));
		members = lappend(members, id);
		if (DatumGetBool(CatalogColumn(row, 2, BoolGetDatum(false))))
			*pending = lappend(*pending, id);
		*ended |= DatumGetBool(CatalogColumn(row, 3, BoolGetDatum(false)));
		if (paused != NULL && DatumGetBool(CatalogColumn(row, 4, BoolGetDatum(false))))
			*paused = lappend(*paused, id);
		MemoryContextSwitchTo(spi_context);
	}
	CatalogAccessEnd(&access);
	return members;
}

/*
 * The group's publication could not end (one job's build restarts): no job
 * of it is ready or publishes it any more, and the jobs handed over get
 * workers again
 */
void
CatalogGroupRelease(int64 job_id)
{
	Oid			argtypes[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(job_id)};

	CatalogRun("UPDATE background_ddl.job m SET group_ready = false, published_by = NULL, "
			   "  not_before = NULL, given_back_for = NULL WHERE " IN_GROUP
			   "AND m.state IN ('queued', 'running', 'paused')",
			   1, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * A job of the group failed or is being cancelled: the group's other
 * unfinished jobs are being cancelled too, with reason as their error, but
 * those whose workers already end them (in phase "cleaning up": EndJob),
 * which keep their own.
 * Returns their ids (int64 *); whoever calls this announces them and wakes
 * their workers.
 */
List *
CatalogGroupCancel(int64 job_id, const char *reason)
{
	CatalogAccess access;
	Oid			argtypes[] = {INT8OID, TEXTOID};
	Datum		values[] = {Int64GetDatum(job_id), CStringGetTextDatum(reason)};
	List	   *cancelled = NIL;

	CatalogAccessBegin(&access);
	CatalogExecute("UPDATE background_ddl.job m SET state = 'cancelling', phase = 'cleaning up', "
				   "  in_flight = false, published_by = NULL, not_before = NULL, "
				   "  given_back_for = NULL, queued_at = NULL, eta = NULL, error = $2, "
				   "  error_sqlstate = NULL, error_detail = NULL, error_hint = NULL WHERE " IN_GROUP
				   "AND m.id <> $1 AND m.state IN ('queued', 'running', 'paused') "
				   "AND m.phase IS DISTINCT FROM 'cleaning up' RETURNING m.id",
				   2, argtypes, values, NULL, SPI_OK_UPDATE_RETURNING);
	cancelled = JobIdsOfResult(&access);
	CatalogAccessEnd(&access);
	return cancelled;
}

/*
 * An unfinished job of the new job's group that another role owns, or that
 * was submitted with other settings (its worker could not run both); 0 if
 * none
 */
int64
CatalogGroupMemberUnlike(int64 job_id)
{
	return DatumGetInt64(CatalogValueForJob(
		"SELECT m.id FROM background_ddl.job n JOIN background_ddl.job m "
		"  ON m.group_id = n.group_id AND m.id <> n.id "
		"WHERE n.id = $1 AND (m.owner_oid <> n.owner_oid OR "
		"  m.session_user_oid <> n.session_user_oid OR m.settings <> n.settings) "
		"ORDER BY m.id LIMIT 1", job_id, Int64GetDatum(0)));
}

/*
 * The kind's own state: one jsonb object, whose keys and values (numbers
 * and strings) only the kind knows.
 */

/* A key's value, or NULL */
static JsonbValue *
KindStateValue(const Jsonb *state, const char *key, JsonbValue *value)
{
	if (state == NULL)
		return NULL;
	return getKeyJsonValueFromContainer((JsonbContainer *) &state->root, key, strlen(key), value);
}

/* Has the kind's state a value by that key? */
bool
CatalogKindStateHas(const Jsonb *state, const char *key)
{
	JsonbValue	value;

	return KindStateValue(state, key, &value) != NULL;
}

/* A number of the kind's state; 0 if it has none by that key */
int64
CatalogKindStateInt(const Jsonb *state, const char *key)
{
	JsonbValue	value;

	if (KindStateValue(state, key, &value) == NULL || value.type != jbvNumeric)
		return 0;
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(value.val.numeric)));
}

/* A string of the kind's state; NULL if it has none by that key */
char *
CatalogKindStateText(const Jsonb *state, const char *key)
{
	JsonbValue	value;

	if (KindStateValue(state, key, &value) == NULL || value.type != jbvString)
		return NULL;
	return pnstrdup(value.val.string.val, value.val.string.len);
}

/*
 * Set a key of *state to a JSON literal (json); a NULL state starts empty.
 * The new state is made in the memory of the old one.
 */
static void
KindStateSet(Jsonb **state, const char *key, const char *json)
{
	MemoryContext target = *state != NULL ? GetMemoryChunkContext(*state) : CurrentMemoryContext;
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "background_ddl kind_state",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext old_context = MemoryContextSwitchTo(scratch);
	StringInfoData patch;
	Jsonb	   *updated;

	initStringInfo(&patch);
	appendStringInfoChar(&patch, '{');
	escape_json(&patch, key);
	appendStringInfo(&patch, ": %s}", json);
	updated = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
												 JsonbPGetDatum(*state ? *state : CatalogKindStateEmpty()),
												 DirectFunctionCall1(jsonb_in,
																	 CStringGetDatum(patch.data))));
	/* Only the new state in the state's context: the work is freed with scratch */
	*state = MemoryContextAlloc(target, VARSIZE(updated));
	memcpy(*state, updated, VARSIZE(updated));
	MemoryContextSwitchTo(old_context);
	MemoryContextDelete(scratch);
}

void
CatalogKindStateSetInt(Jsonb **state, const char *key, int64 value)
{
	KindStateSet(state, key, psprintf("%lld", (long long) value));
}

void
CatalogKindStateSetText(Jsonb **state, const char *key, const char *value)
{
	StringInfoData json;

	initStringInfo(&json);
	escape_json(&json, value);
	KindStateSet(state, key, json.data);
}

/* An empty state (in the current memory context) */
Jsonb *
CatalogKindStateEmpty(void)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
}
