/*-------------------------------------------------------------------------
 *
 * index_build.c
 *	  PostgreSQL's index definition code (DefineIndex), run for a job: as the
 *	  role that submitted it, under statement_timeout, with the messages it
 *	  raises kept with the job, and an expression index's statistics
 *	  collected as it becomes valid; the progress it reports; and the drop
 *	  of a job's index.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "commands/progress.h"
#include "commands/tablespace.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "parser/parse_node.h"
#include "storage/bufmgr.h"
#include "storage/lockdefs.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"

#include "catalog/settings.h"
#include "engine/job_messages.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "pg/pg_lock.h"
#include "pg/pg_relation.h"

/*
 * The OID an index of the table will have, chosen before DefineIndex runs
 * so that the job can record it in the transaction that creates the index
 * (CREATE INDEX CONCURRENTLY commits its first phase itself).
 */
Oid
IndexBuildNewOid(Oid table_oid, const char *tablespace)
{
	Oid			tablespace_oid = tablespace ? get_tablespace_oid(tablespace, false) :
		GetDefaultTablespace(get_rel_persistence(table_oid), false);
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	Oid			index_oid = GetNewRelFileNode(tablespace_oid, pg_class,
											  get_rel_persistence(table_oid));

	table_close(pg_class, RowExclusiveLock);
	return index_oid;
}

/*
 * The statistics of a concurrently built expression index, collected by an
 * ANALYZE of its table (as the job's role: ANALYZE evaluates the
 * expressions as the table's owner, as always) in the transaction that
 * marks the index valid, which DefineIndex leaves open: the first queries
 * that can use the index are planned with them, where after CREATE INDEX
 * CONCURRENTLY they have none until the next ANALYZE.  (ANALYZE computes an
 * index's expressions only along with every column of the table.)  Its
 * SHARE UPDATE EXCLUSIVE lock, which CREATE INDEX CONCURRENTLY has just
 * released, is tried without queueing for lock_timeout: another build that
 * took it meanwhile may wait for this transaction's snapshot.  If it does
 * not come, the index goes without, and the log says so.
 */
void
IndexBuildAnalyzeExpressions(const BgddlJob *job, Oid table_oid, Oid index_oid)
{
	VacuumParams params = {
		.options = VACOPT_ANALYZE,
		.freeze_min_age = -1,
		.freeze_table_age = -1,
		.multixact_freeze_min_age = -1,
		.multixact_freeze_table_age = -1,
		.log_min_duration = -1,
		.index_cleanup = VACOPTVALUE_UNSPECIFIED,
		.truncate = VACOPTVALUE_UNSPECIFIED,
	};
	HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid));
	bool		expressions;
	Oid			saved_userid;
	int			saved_sec_context;

	if (!HeapTupleIsValid(tuple))
		return;
	expressions = !heap_attisnull(tuple, Anum_pg_index_indexprs, NULL);
	ReleaseSysCache(tuple);
	if (!expressions)
		return;
	if (!PgLockRelationWithin(table_oid, ShareUpdateExclusiveLock, background_ddl_lock_timeout_ms,
							  false))
	{
		ereport(LOG,
				(errmsg("background DDL job %lld: index \"%s\" is valid without the statistics of its expressions",
						(long long) job->id, get_rel_name(index_oid)),
				 errdetail("Another session held the SHARE UPDATE EXCLUSIVE lock of table \"%s\" for longer than background_ddl.lock_timeout.",
						   get_rel_name(table_oid))));
		return;
	}
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(job->identity.owner_oid,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	PushActiveSnapshot(GetTransactionSnapshot());
	analyze_rel(table_oid, NULL, &params, NIL, true, GetAccessStrategy(BAS_VACUUM));
	PopActiveSnapshot();
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
}

/*
 * What PostgreSQL's index code runs under for a job: the job's role,
 * statement_timeout armed for the whole build, the messages it raises
 * caught for the job.  Not concurrently, in a restricted security context;
 * concurrently, the code commits and starts transactions itself, which must
 * begin outside any such context (it evaluates the index's expressions as
 * the table's owner in one of its own, as it always does), and an error in
 * one of them leaves the job's role current (JobStepAbort restores the
 * worker's).
 */
typedef struct IndexCodeContext
{
	Oid			saved_userid;
	int			saved_sec_context;
} IndexCodeContext;

static void
IndexCodeBegin(const BgddlJob *job, bool concurrent, IndexCodeContext *context)
{
	GetUserIdAndSecContext(&context->saved_userid, &context->saved_sec_context);
	SetUserIdAndSecContext(job->identity.owner_oid,
						   concurrent ? context->saved_sec_context :
						   context->saved_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (StatementTimeout > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, StatementTimeout);
	JobMessagesCatch(true);
}

static void
IndexCodeEnd(IndexCodeContext *context)
{
	JobMessagesCatch(false);
	disable_timeout(STATEMENT_TIMEOUT, false);
	SetUserIdAndSecContext(context->saved_userid, context->saved_sec_context);
}

/* DefineIndex for the statement (concurrent or not, as it says), for a job */
ObjectAddress
IndexBuildDefine(const BgddlJob *job, Oid table_oid, IndexStmt *stmt, Oid index_oid,
				 Oid parent_index_oid)
{
	IndexCodeContext context;
	ObjectAddress address;

	IndexCodeBegin(job, stmt->concurrent, &context);
	address = DefineIndex(table_oid, stmt, index_oid, parent_index_oid, InvalidOid,
						  false, true, false, false, true);
	IndexCodeEnd(&context);
	if (stmt->concurrent)
		IndexBuildAnalyzeExpressions(job, table_oid, address.objectId);
	return address;
}

/*
 * REINDEX of one index, for a job, as the statement (REINDEX INDEX ...
 * CONCURRENTLY) says: it commits and starts transactions itself, and leaves
 * the last one open.
 */
void
IndexBuildReindex(const BgddlJob *job, ReindexStmt *stmt)
{
	IndexCodeContext context;

	IndexCodeBegin(job, true, &context);
	ExecReindex(make_parsestate(NULL), stmt, true);
	IndexCodeEnd(&context);
}

/* Is the relation an index (of any kind); if so, is it valid? */
bool
IndexBuildIsIndex(Oid relid, bool *valid)
{
	HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(relid));

	*valid = false;
	if (!HeapTupleIsValid(tuple))
		return false;
	*valid = ((Form_pg_index) GETSTRUCT(tuple))->indisvalid;
	ReleaseSysCache(tuple);
	return true;
}

/*
 * In the last transaction of CREATE INDEX CONCURRENTLY, which has marked
 * index_oid (of table_oid) valid: invalid again, held back for a group's
 * transaction (IndexBuildSetValid), so that nobody sees it valid before.
 * It is built, and every writer keeps it up to date meanwhile (and checks
 * a unique index's keys), as during CREATE INDEX CONCURRENTLY.
 */
void
IndexBuildHoldBack(Oid index_oid, Oid table_oid)
{
	CommandCounterIncrement();
	index_set_state_flags(index_oid, INDEX_DROP_CLEAR_VALID);
	CacheInvalidateRelcacheByRelid(table_oid);
}

/* Mark index_oid (of table_oid), built and held back, valid */
void
IndexBuildSetValid(Oid index_oid, Oid table_oid)
{
	index_set_state_flags(index_oid, INDEX_CREATE_SET_VALID);
	CacheInvalidateRelcacheByRelid(table_oid);
	CommandCounterIncrement();
}

/*
 * Drop an index of the job (valid or not, or the placeholder that stands for
 * it).  Dropping an index takes ACCESS EXCLUSIVE on its table (on every
 * partition's, for the index of a partitioned table): in a job's step, those
 * locks are taken as a job takes what others use (JobStepLockRelation).
 * Never in cancel_ddl's transaction.
 */
void
IndexBuildDrop(Oid index_oid)
{
	char		relkind = get_rel_relkind(index_oid);

	if (relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX)
	{
		Oid			table_oid = IndexGetRelation(index_oid, true);

		if (OidIsValid(table_oid))
			JobStepLockRelation(table_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	}
	PgRelationDrop(index_oid);
}

/* The build's phases (PROGRESS_CREATEIDX_PHASE), as pg_stat_progress_create_index names them */
static const char *const build_phase_names[] = {
	"initializing",
	"waiting for writers before build",
	"building index",
	"waiting for writers before validation",
	"index validation: scanning index",
	"index validation: sorting tuples",
	"index validation: scanning table",
	"waiting for old snapshots",
	"waiting for readers before marking dead",
	"waiting for readers before dropping",
};

/*
 * How much of CREATE INDEX CONCURRENTLY is done, in percent, at this phase
 * (of build_phase_names) and point of it: the first table scan and the sort
 * take most of it, the validation scan most of the rest.
 */
static double
BuildPercent(int64 phase, const char *subphase, const int64 *param)
{
	double		blocks = param[PROGRESS_SCAN_BLOCKS_TOTAL] <= 0 ? 0 :
		(double) param[PROGRESS_SCAN_BLOCKS_DONE] / param[PROGRESS_SCAN_BLOCKS_TOTAL];
	double		tuples = param[PROGRESS_CREATEIDX_TUPLES_TOTAL] <= 0 ? 0 :
		(double) param[PROGRESS_CREATEIDX_TUPLES_DONE] / param[PROGRESS_CREATEIDX_TUPLES_TOTAL];

	switch (phase)
	{
		case PROGRESS_CREATEIDX_PHASE_BUILD:
			if (subphase != NULL && strstr(subphase, "scanning table") != NULL &&
				param[PROGRESS_SCAN_BLOCKS_TOTAL] > 0)
				return 60.0 * blocks;
			return 60.0 + 10.0 * tuples;	/* loading the sorted tuples */
		case PROGRESS_CREATEIDX_PHASE_WAIT_2:
			return 70.0;
		case PROGRESS_CREATEIDX_PHASE_VALIDATE_IDXSCAN:
			return 70.0 + 10.0 * blocks;
		case PROGRESS_CREATEIDX_PHASE_VALIDATE_SORT:
			return 80.0;
		case PROGRESS_CREATEIDX_PHASE_VALIDATE_TABLESCAN:
			return 80.0 + 19.0 * blocks;
		case PROGRESS_CREATEIDX_PHASE_WAIT_3:
		case PROGRESS_CREATEIDX_PHASE_WAIT_4:
		case PROGRESS_CREATEIDX_PHASE_WAIT_5:
			return 99.0;
		default:
			return 0.0;
	}
}

/*
 * The progress of the index build that process pid runs, as it reports it
 * to pg_stat_progress_create_index and as the current role may see it
 * there (its own role's, or with pg_read_all_stats); false if none.
 */
bool
IndexBuildProgressOf(pid_t pid, IndexBuildProgress *progress)
{
	int			backends = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= backends; i++)
	{
		PgBackendStatus *status = &pgstat_fetch_stat_local_beentry(i)->backendStatus;
		const int64 *param = status->st_progress_param;
		int64		phase = param[PROGRESS_CREATEIDX_PHASE];
		const char *subphase = NULL;

		if (status->st_procpid != pid)
			continue;
		if (status->st_progress_command != PROGRESS_COMMAND_CREATE_INDEX ||
			phase < 0 || phase >= lengthof(build_phase_names) ||
			(!has_privs_of_role(GetUserId(), status->st_userid) &&
			 !has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS)))
			return false;
		if (phase == PROGRESS_CREATEIDX_PHASE_BUILD)
		{
			IndexAmRoutine *am =
				GetIndexAmRoutineByAmId((Oid) param[PROGRESS_CREATEIDX_ACCESS_METHOD_OID], true);

			if (am != NULL && am->ambuildphasename != NULL)
				subphase = am->ambuildphasename(param[PROGRESS_CREATEIDX_SUBPHASE]);
		}
		progress->phase = subphase != NULL ?
			psprintf("%s: %s", build_phase_names[phase], subphase) :
			pstrdup(build_phase_names[phase]);
		progress->waiting = strncmp(progress->phase, "waiting for", 11) == 0;
		progress->percent = BuildPercent(phase, subphase, param);
		progress->tuples_done = param[PROGRESS_CREATEIDX_TUPLES_DONE];
		progress->tuples_total = param[PROGRESS_CREATEIDX_TUPLES_TOTAL];
		return true;
	}
	return false;
}

/* Is one of the indexes an exclusion constraint's? */
bool
IndexBuildAnyExclusion(List *indexes)
{
	ListCell   *lc;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		bool		exclusion;

		if (!HeapTupleIsValid(tuple))
			continue;
		exclusion = ((Form_pg_index) GETSTRUCT(tuple))->indisexclusion;
		ReleaseSysCache(tuple);
		if (exclusion)
			return true;
	}
	return false;
}
