/*-------------------------------------------------------------------------
 *
 * kind.c
 *	  The table of job kinds, and what is done to a job through its kind.
 *
 * A kind is one file in kinds/ and one KindRegister line in _PG_init
 * (background_ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/memutils.h"

#include "catalog/catalog_job.h"
#include "engine/job_shmem.h"
#include "engine/kind.h"

/* The kinds, in the order they were registered (a variant before its kind) */
#define KINDS_MAX	16
static const KindRoutine *kinds[KINDS_MAX];
static int	nkinds = 0;

/*
 * At library load (_PG_init, in the postmaster): jobs of this kind may be
 * submitted and run from now on.  A variant of a kind registers before the
 * kind itself, which would otherwise accept its statements.
 */
void
KindRegister(const KindRoutine *routine)
{
	if (nkinds >= KINDS_MAX)
		elog(ERROR, "too many background DDL job kinds");
	kinds[nkinds++] = routine;
	if (routine->load != NULL)
		routine->load();
}

/* The scheduler's pass: each kind's housekeeping, once per routine */
void
KindsHousekeeping(void)
{
	for (int i = 0; i < nkinds; i++)
	{
		bool		done_before = false;

		for (int j = 0; j < i; j++)
			done_before |= kinds[j]->housekeeping == kinds[i]->housekeeping;
		if (kinds[i]->housekeeping != NULL && !done_before)
			kinds[i]->housekeeping();
	}
}

/* The kind of a job row (its kind's name, and a variant's key), or NULL */
static const KindRoutine *
KindOfJob(const BgddlJob *job)
{
	for (int i = 0; i < nkinds; i++)
	{
		if (strcmp(kinds[i]->name, job->kind) == 0 &&
			(kinds[i]->variant_key == NULL ||
			 CatalogKindStateInt(job->kind_state, kinds[i]->variant_key) != 0))
			return kinds[i];
	}
	return NULL;
}

const KindRoutine *
KindRoutineForJob(const BgddlJob *job)
{
	const KindRoutine *routine = KindOfJob(job);

	if (routine == NULL)
		elog(ERROR, "background DDL job kind \"%s\" is not supported", job->kind);
	return routine;
}

/*
 * What the job's kind adds to the view's progress of it (nothing where the
 * library was not preloaded, and no kind is registered)
 */
void
KindJobProgress(const BgddlJob *job, pid_t pid, KindProgress *progress)
{
	const KindRoutine *routine = KindOfJob(job);

	memset(progress, 0, sizeof(KindProgress));
	progress->percent = -1;
	progress->rows_done = progress->rows_total = progress->chunks_total = -1;
	progress->catchup_passes = progress->rows_recomputed = -1;
	if (routine != NULL && routine->progress != NULL)
		routine->progress(job, pid, progress);
}

/*
 * Record in the row of each job that a worker runs in this database its
 * live progress (its slot's, JobSlotProgress, and its kind's,
 * KindJobProgress: an index build's, as pg_stat_progress_create_index has
 * it), where it is more than the row's.  The view shows the row's progress
 * alone: what it showed is then never lost with a crash (it never goes
 * down).  In the scheduler, each pass (at least every second while jobs
 * run), in a transaction.
 */
void
KindsRecordLiveProgress(void)
{
	int64		job_ids[64];
	pid_t		pids[64];
	double		live[64];
	int			count = JobsRunning(MyDatabaseId, job_ids, pids, live, lengthof(job_ids));

	for (int i = 0; i < count; i++)
	{
		BgddlJob	job;
		KindProgress kind_progress;
		double		progress;

		if (!CatalogJobLoad(job_ids[i], &job, true) || job.state != JOB_STATE_RUNNING)
			continue;
		KindJobProgress(&job, pids[i], &kind_progress);
		progress = Max(kind_progress.percent, live[i]);
		if (progress > job.progress)
			CatalogJobRaiseProgress(job.id, progress);
	}
}

/*
 * The kind that takes this statement as a job in background mode, or NULL;
 * *in_session_reason is set when the statement is of a kind but must run in
 * this session, and says why.
 */
const KindRoutine *
KindForStatement(Node *parsetree, const char **in_session_reason)
{
	*in_session_reason = NULL;
	for (int i = 0; i < nkinds; i++)
	{
		if (kinds[i]->accepts == NULL)
			continue;
		switch (kinds[i]->accepts(parsetree, in_session_reason))
		{
			case KIND_ACCEPTED:
				return kinds[i];
			case KIND_IN_SESSION:
				return NULL;
			case KIND_NOT_ACCEPTED:
				break;
		}
	}
	return NULL;
}

/*
 * The statements of the partitions of a statement that PostgreSQL runs on
 * each partition of a partitioned table in a transaction of its own (a
 * kind's partition_statements), or NIL
 */
List *
KindPartitionStatements(Node *parsetree, bool top_level)
{
	for (int i = 0; i < nkinds; i++)
	{
		List	   *statements;

		if (kinds[i]->partition_statements != NULL &&
			(statements = kinds[i]->partition_statements(parsetree, top_level)) != NIL)
			return statements;
	}
	return NIL;
}

/* The NOTICE of a statement of some kind that runs in this session, and why */
void
KindNoticeInSession(const char *reason)
{
	ereport(NOTICE,
			(errmsg("this statement runs in this session, not as a background job"),
			 errdetail("%s", reason)));
}

/* Does the target of some kind's jobs stand for an object of this type? */
bool
KindStandsFor(ObjectType type)
{
	for (int i = 0; i < nkinds; i++)
	{
		if (kinds[i]->stands_for == type)
			return true;
	}
	return false;
}

/*
 * The statements that become jobs (estimated: those estimate_ddl can
 * estimate), for a message: "A, B, C or D"
 */
char *
KindNames(bool estimated)
{
	List	   *names = NIL;
	StringInfoData text;

	for (int i = 0; i < nkinds; i++)
		if (kinds[i]->variant_key == NULL && (!estimated || kinds[i]->estimate != NULL) &&
			!list_member(names, makeString((char *) kinds[i]->name)))
			names = lappend(names, makeString((char *) kinds[i]->name));
	initStringInfo(&text);
	for (int i = 0; i < list_length(names); i++)
		appendStringInfo(&text, "%s%s", i == 0 ? "" : i == list_length(names) - 1 ? " or " : ", ",
						 strVal(list_nth(names, i)));
	return text.data;
}

/*
 * How a raw statement would run as a job (explain_ddl), or NULL if no kind
 * takes statements of its type.
 */
const char *
KindExplain(Node *raw_statement, const char *query_string)
{
	for (int i = 0; i < nkinds; i++)
	{
		const char *strategy;

		if (kinds[i]->explain != NULL &&
			(strategy = kinds[i]->explain(raw_statement, query_string)) != NULL)
			return strategy;
	}
	return NULL;
}

/* estimate_ddl of a raw statement; false if no kind takes statements of its type */
bool
KindEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate)
{
	for (int i = 0; i < nkinds; i++)
	{
		if (kinds[i]->estimate != NULL &&
			kinds[i]->estimate(raw_statement, query_string, estimate))
			return true;
	}
	return false;
}

/*
 * The transaction that submitted a job uses its target (why says how)
 * before committing: build the object here, now, as the blocking statement
 * would have (the job succeeds when the transaction commits, or leaves
 * nothing if it rolls back).  Returns the relation that now stands for the
 * target; InvalidOid if the job is not waiting for a worker (paused, or
 * cancelled in this transaction), and the target stays what it was.
 */
Oid
KindBuildHere(int64 job_id, const char *why)
{
	BgddlJob	job;

	if (!CatalogJobLoad(job_id, &job, true))
		elog(ERROR, "background DDL job %lld does not exist", (long long) job_id);
	if (job.state != JOB_STATE_QUEUED)
		return InvalidOid;
	if (job.group_id != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("background DDL job %lld is published with its group \"%s\", not before",
						(long long) job_id, job.cutover_group),
				 errdetail("The transaction that submitted it %s before COMMIT, which would need it built here, now.",
						   why),
				 errhint("Run that statement after the group is published (CALL await_ddl(%lld)), or submit the job outside the group.",
						 (long long) job_id)));
	ereport(NOTICE,
			(errmsg("background DDL job %lld is built in this session, now",
					(long long) job_id),
			 errdetail("The transaction that submitted it %s before COMMIT.", why)));
	CatalogJobRecordBuiltHere(job_id, psprintf("in the submitting transaction: it %s before COMMIT",
											   why));
	/* Done here: the session's later statements need not wait for it */
	JobXactForgetAtCommit(job_id);
	return KindRoutineForJob(&job)->build_here(&job);
}

/*
 * The relation that will stand for a job's target, if not the target itself
 * (CREATE TABLE AS: its own table); InvalidOid if none
 */
Oid
KindFutureRelation(const BgddlJob *job)
{
	const KindRoutine *routine = KindRoutineForJob(job);

	return routine->result != NULL ? routine->result(job) : InvalidOid;
}

/* The relation that stands for a succeeded job's target */
Oid
KindResult(const BgddlJob *job)
{
	const KindRoutine *routine = KindRoutineForJob(job);

	return routine->result != NULL ? routine->result(job) : job->target_oid;
}

static bool
AddRangeTableRelations(Node *node, List **relids)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			*relids = list_append_unique_oid(*relids, rte->relid);
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, AddRangeTableRelations, relids,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, AddRangeTableRelations, relids);
}

/*
 * The relations a query kind's result is made from: those its plan depends
 * on (views, and the partitions it read, included), and those the query
 * names (it may have been pointed to the tables of jobs it starts after).
 */
List *
KindQuerySources(PlannedStmt *plan, Query *query)
{
	List	   *relids = list_copy(plan->relationOids);

	(void) AddRangeTableRelations((Node *) query, &relids);
	return relids;
}

/*
 * An index's result is made from its table: a later statement that changes
 * the table's definition waits for it, and for a unique index also one that
 * adds rows (a duplicate fails as the blocking statement would make it
 * fail).  A write can change no index otherwise: an index reflects it.
 * The build holds the table locked while it runs.
 */
void
KindIndexSources(KindSubmit *submit, Oid table_oid, bool unique)
{
	submit->sources = list_append_unique_oid(submit->sources, table_oid);
	submit->source_effects = REL_REDEFINES | (unique ? REL_ADDS_ROWS : 0);
	submit->held_table = table_oid;
	if (unique)
		submit->key_table = table_oid;	/* a foreign key may reference it */
}
