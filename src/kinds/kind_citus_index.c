/*-------------------------------------------------------------------------
 *
 * kind_citus_index.c
 *	  Background CREATE [UNIQUE] INDEX on a Citus distributed or reference
 *	  table: one job on the coordinator, one job per shard placement on the
 *	  node that holds it.
 *
 * A variant of the CREATE INDEX kind (its jobs are "CREATE INDEX" jobs whose
 * kind_state says citus_index).  At submit, on the coordinator, the index is
 * created on the table's shell (empty: instant) by PostgreSQL's own
 * DefineIndex, not through Citus's utility hook, so that Citus sends nothing
 * to the nodes; that makes every check CREATE INDEX makes, reserves the name
 * and holds the definition; it is then marked invalid, as Citus's own
 * CREATE INDEX CONCURRENTLY leaves it until every shard has its index.  A
 * unique index on a hash-distributed table must contain the distribution
 * column, as Citus requires (a unique index per shard is then unique over
 * the table).
 *
 * The worker submits, on the node of each shard placement, the statement
 * Citus would send for that shard (the shell index's definition, with the
 * shard's table and the index named as Citus names them: name_shardid)
 * with submit_ddl and an idempotency key made of the job and the placement:
 * a background_ddl job there, which builds it as CREATE INDEX CONCURRENTLY
 * does and resumes after a crash there by itself.  At most
 * background_ddl.citus_jobs_per_node run at once per node; nodes work in
 * parallel.  The job ids are kept in the job's kind_state; a retry (the
 * coordinator restarted before recording one) gets the same job back from
 * the key, so no placement is built twice.  The worker polls the nodes'
 * jobs; a node it cannot reach is waited for (waiting_on names it).  When
 * every placement's index is valid, the shell tables of the nodes that hold
 * Citus's metadata get the index (instant: they are empty) and the
 * coordinator's is marked valid, in the job's last transaction.
 *
 * A failed placement fails the job with the node's error (a unique
 * violation on one shard, say); failed or cancelled, the job cancels the
 * placements' jobs still running (each drops its own index), drops the
 * indexes of those that succeeded and the shells' index, then the
 * coordinator's.  A node unreachable or refusing then keeps what it has,
 * with a WARNING that names it, kept with the job (ddl_messages).  A pause
 * pauses the placements' jobs still running; they resume with the job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_utilcmd.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "catalog/catalog_access.h"
#include "catalog/settings.h"
#include "citus/citus_nodes.h"
#include "citus/pg_citus.h"
#include "engine/job_messages.h"
#include "engine/job_run.h"
#include "engine/job_step.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "pg/pg_relation.h"

#define STATE_VARIANT		"citus_index"
#define STATE_TABLE_OID		"table_oid"

/* The longest shard id, in digits, that a shard name may get */
#define SHARD_ID_DIGITS		20

/* Poll the nodes' jobs this often while nothing has changed */
#define POLL_INTERVAL_MS	50

/*
 * A round over the nodes allocates in the run's round context, emptied at
 * the start of the next round: a job polls for hours.  Steps end in the
 * job's context: RoundMemory() again after each.
 */
#define RoundMemory(citus)	MemoryContextSwitchTo((citus)->round_context)

/* A shard placement's build: its node's job */
typedef struct PlacementBuild
{
	int64		shard_id;
	CitusNode  *node;			/* shared by the placements of a node */
	int64		node_job;		/* 0: not submitted yet */
	char		state[16];		/* the node job's, as last read */
	int64		rows;
} PlacementBuild;

/* What the worker knows of the job (JobRun.kind_run) */
typedef struct CitusIndexRun
{
	List	   *nodes;			/* CitusNode *, one per node group */
	PlacementBuild *builds;
	int			nbuilds;
	char	   *database;		/* the job's, by name */
	char	   *role;			/* the job's, by name */
	char	   *application_name;
	char	   *schema;			/* the extension's, on every node */
	char	   *table_schema;
	char	   *table_name;
	char	   *index_name;
	char	   *index_definition;	/* the shell index's */
	char	   *definition_tail;	/* from "USING ..." on */
	bool		unique;
	MemoryContext round_context;	/* what a round over the nodes allocates */
	char	   *unreachable;	/* this round: a node that cannot be reached, and why */
} CitusIndexRun;

/*
 * The shell index's statement for another index name and table:
 * "CREATE [UNIQUE] INDEX [IF NOT EXISTS] index ON table_schema.table tail",
 * tail the rest of the definition (from "USING" on)
 */
static char *
IndexStatement(const CitusIndexRun *citus, const char *if_not_exists, const char *index,
			   const char *table, const char *tail)
{
	return psprintf("CREATE %sINDEX %s%s ON %s %s", citus->unique ? "UNIQUE " : "",
					if_not_exists, quote_identifier(index),
					quote_qualified_identifier(citus->table_schema, table), tail);
}

/* Close the run's connections to the nodes */
static void
DisconnectRun(CitusIndexRun *citus)
{
	ListCell   *lc;

	foreach(lc, citus->nodes)
		CitusNodeDisconnect(lfirst(lc));
}

static Oid
IndexedTable(const BgddlJob *job)
{
	return (Oid) CatalogKindStateInt(job->kind_state, STATE_TABLE_OID);
}

/* Citus's name of a shard's relation: name_shardid (it must fit) */
static char *
ShardName(const char *name, int64 shard_id)
{
	return psprintf("%s_%lld", name, (long long) shard_id);
}

static bool
ShardNameFits(const char *name)
{
	return strlen(name) + 1 + SHARD_ID_DIGITS < NAMEDATALEN;
}

/*
 * CREATE [UNIQUE] INDEX on a hash-distributed or reference table (not a
 * partitioned one) whose shards' names Citus makes by appending the shard
 * id (short names); the other statements on Citus tables run in the
 * session (kind_index.c says so).
 */
static KindAcceptance
CitusIndexAccepts(Node *parsetree, const char **reason)
{
	IndexStmt  *stmt;
	Oid			relid;
	char	   *column;

	if (!IsA(parsetree, IndexStmt))
		return KIND_NOT_ACCEPTED;
	stmt = (IndexStmt *) parsetree;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid) || !PgCitusInstalled() ||
		PgCitusDistribution(relid, &column) == 0 ||
		get_rel_relkind(relid) != RELKIND_RELATION ||
		!ShardNameFits(get_rel_name(relid)) ||
		(stmt->idxname != NULL && !ShardNameFits(stmt->idxname)) ||
		(stmt->if_not_exists && stmt->idxname != NULL &&
		 OidIsValid(get_relname_relid(stmt->idxname, get_rel_namespace(relid)))))
		return KIND_NOT_ACCEPTED;
	return KIND_ACCEPTED;
}

/*
 * The table's owner only, as CREATE INDEX checks first; a unique index on a
 * hash-distributed table must contain its distribution column
 */
static void
CitusIndexValidate(KindSubmit *submit)
{
	IndexStmt  *stmt = CheckedNode(IndexStmt, submit->pstmt->utilityStmt);
	Oid			relid = RangeVarGetRelidExtended(stmt->relation, NoLock, 0,
												 RangeVarCallbackOwnsRelation, NULL);
	char	   *column;
	bool		has_column = false;
	ListCell   *lc;

	KindIndexSources(submit, relid, stmt->unique);
	if (!stmt->unique || PgCitusDistribution(relid, &column) != CITUS_HASH_DISTRIBUTED)
		return;
	foreach(lc, stmt->indexParams)
		has_column |= ((IndexElem *) lfirst(lc))->name != NULL &&
			strcmp(((IndexElem *) lfirst(lc))->name, column) == 0;
	if (!has_column)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a unique index on distributed table \"%s\" must contain its distribution column \"%s\"",
						get_rel_name(relid), column),
				 errdetail("Each shard's index is unique only within its shard; with the distribution column in it, that is unique over the table."),
				 errhint("Add \"%s\" to the index's columns.", column)));
}

/*
 * The shell's index, by CREATE INDEX's own code (every check it makes), not
 * concurrently (the shell is empty), then invalid until the shards have it
 */
static void
CitusIndexReserve(KindSubmit *submit)
{
	IndexStmt  *stmt = copyObject(CheckedNode(IndexStmt, submit->pstmt->utilityStmt));
	Oid			relid = RangeVarGetRelidExtended(stmt->relation, ShareLock, 0,
												 RangeVarCallbackOwnsRelation, NULL);
	ObjectAddress index;
	char	   *name;

	stmt->concurrent = false;
	stmt = transformIndexStmt(relid, stmt, submit->query_string);
	index = DefineIndex(relid, stmt, InvalidOid, InvalidOid, InvalidOid,
						false, true, true, false, false);
	CommandCounterIncrement();
	name = get_rel_name(index.objectId);
	if (!ShardNameFits(name))
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("index name \"%s\" is too long for the names of its shards' indexes", name),
				 errdetail("Citus names a shard's index by appending the shard id to the index's name."),
				 errhint("Give the index a shorter name, or SET background_ddl = off to let Citus build it.")));
	index_set_state_flags(index.objectId, INDEX_DROP_CLEAR_VALID);
	CacheInvalidateRelcacheByRelid(relid);
	CommandCounterIncrement();
	PgRelationSetExtensionMember(index.objectId, CatalogRequire()->extension_oid, true);

	submit->target_oid = index.objectId;
	submit->target_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 name);
	submit->strategy = pstrdup("an index per shard placement, built on the Citus nodes");
	CatalogKindStateSetInt(&submit->kind_state, STATE_VARIANT, 1);
	CatalogKindStateSetInt(&submit->kind_state, STATE_TABLE_OID, relid);
}

static char *
PlacementKey(int64 shard_id, int group_id)
{
	return psprintf("shard_%lld_group_%d", (long long) shard_id, group_id);
}

/* The node of a group, added to the run's nodes if it is new */
static CitusNode *
RunNode(CitusIndexRun *citus, const CitusNode *placement_node)
{
	ListCell   *lc;
	CitusNode  *node;

	foreach(lc, citus->nodes)
		if (((CitusNode *) lfirst(lc))->group_id == placement_node->group_id)
			return lfirst(lc);
	node = palloc0(sizeof(CitusNode));
	node->name = pstrdup(placement_node->name);
	node->port = placement_node->port;
	node->group_id = placement_node->group_id;
	citus->nodes = lappend(citus->nodes, node);
	return node;
}

/*
 * The placements, the shell index's definition and the names, from the
 * catalogs; the node jobs already submitted, from the job row; in context.
 * Caller is in a transaction.
 */
static CitusIndexRun *
LoadRun(const BgddlJob *job, MemoryContext context)
{
	MemoryContext old_context;
	CitusIndexRun *citus;
	Oid			table_oid = IndexedTable(job);
	const char *prefix;
	List	   *placements;
	ListCell   *lc;
	int			i = 0;

	old_context = MemoryContextSwitchTo(context);
	citus = palloc0(sizeof(CitusIndexRun));
	citus->database = get_database_name(MyDatabaseId);
	citus->role = GetUserNameFromId(job->identity.owner_oid, false);
	citus->application_name = psprintf("background_ddl job %lld", (long long) job->id);
	citus->schema = get_namespace_name(PgExtensionSchema(CatalogRequire()->extension_oid));
	citus->table_schema = get_namespace_name(get_rel_namespace(table_oid));
	citus->table_name = get_rel_name(table_oid);
	citus->index_name = get_rel_name(job->target_oid);
	if (citus->table_name == NULL || citus->index_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the table or the index of background DDL job %lld was dropped",
						(long long) job->id)));
	citus->index_definition = TextDatumGetCString(DirectFunctionCall1(pg_get_indexdef,
																	  ObjectIdGetDatum(job->target_oid)));
	citus->unique = strncmp(citus->index_definition, "CREATE UNIQUE INDEX ", 20) == 0;
	prefix = IndexStatement(citus, "", citus->index_name, citus->table_name, "USING ");
	if (strncmp(citus->index_definition, prefix, strlen(prefix)) != 0)
		elog(ERROR, "unexpected definition of index \"%s\": %s", citus->index_name,
			 citus->index_definition);
	citus->definition_tail = citus->index_definition + strlen(prefix) - strlen("USING ");
	placements = CitusNodesPlacements(table_oid);
	citus->builds = palloc0(sizeof(PlacementBuild) * Max(1, list_length(placements)));
	foreach(lc, placements)
	{
		CitusPlacement *placement = lfirst(lc);
		PlacementBuild *build = &citus->builds[i++];

		build->shard_id = placement->shard_id;
		build->node = RunNode(citus, &placement->node);
		build->node_job = CatalogKindStateInt(job->kind_state,
											  PlacementKey(placement->shard_id, placement->node.group_id));
		strlcpy(build->state, build->node_job != 0 ? "submitted" : "", sizeof(build->state));
	}
	citus->nbuilds = i;
	citus->round_context = AllocSetContextCreate(context, "background_ddl Citus round",
												 ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(old_context);
	return citus;
}

static void
CitusIndexStart(JobRun *run)
{
	/* Again after letting go (a pause rolled back): the last run's connections go */
	if (run->kind_run != NULL)
		DisconnectRun(run->kind_run);
	JobStepBegin("background_ddl: reading the shard placements", STEP_READ_COMMITTED);
	run->kind_run = LoadRun(&run->job, JobContext());
	JobStepEnd();
}

static void
CitusIndexPlan(JobRun *run)
{
	CitusIndexRun *citus = run->kind_run;

	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	run->job.planned = true;
	run->job.work_total = citus->nbuilds;
	run->job.strategy = MemoryContextStrdup(JobContext(),
											psprintf("an index per shard placement: %d placements on %d Citus nodes, at most %d at once per node",
													 citus->nbuilds, list_length(citus->nodes),
													 background_ddl_citus_jobs_per_node));
	CatalogJobRecordPlan(&run->job);
	JobStepEnd();
}

static bool
BuildEnded(const PlacementBuild *build)
{
	return strcmp(build->state, "succeeded") == 0 || strcmp(build->state, "failed") == 0 ||
		strcmp(build->state, "cancelled") == 0;
}

/* The run remembers the first node of a round it lost, and why, for waiting_on */
static void
NodeLost(CitusIndexRun *citus, const CitusNode *node, const char *why)
{
	if (citus->unreachable == NULL)
		citus->unreachable = MemoryContextStrdup(citus->round_context,
												 psprintf("Citus node %s: %s", CitusNodeName(node), why));
}

/* The connection to a node, or NULL: the node cannot be reached (NodeLost) */
static PGconn *
ConnectRunNode(CitusIndexRun *citus, CitusNode *node)
{
	char	   *error;
	PGconn	   *conn = CitusNodeConnect(node, citus->database, citus->role,
										citus->application_name, &error);

	if (conn == NULL)
		NodeLost(citus, node, error);
	return conn;
}

/* Run a statement on a node (CitusNodeExec); NULL if the connection was lost (NodeLost) */
static PGresult *
RunOnNode(CitusIndexRun *citus, CitusNode *node, const char *sql, int nparams,
		  const char *const *params)
{
	bool		lost;
	PGresult   *result = CitusNodeExec(node, sql, nparams, params, &lost);

	if (lost)
		NodeLost(citus, node, "the connection was lost");
	return result;
}

/*
 * The node's placement jobs that have not ended, as a bigint[] literal,
 * only those last seen in state if it is given; NULL if there are none
 */
static char *
NodeJobIds(const CitusIndexRun *citus, const CitusNode *node, const char *state)
{
	StringInfoData ids;

	initStringInfo(&ids);
	for (int i = 0; i < citus->nbuilds; i++)
		if (citus->builds[i].node == node && citus->builds[i].node_job != 0 &&
			!BuildEnded(&citus->builds[i]) &&
			(state == NULL || strcmp(citus->builds[i].state, state) == 0))
			appendStringInfo(&ids, "%s%lld", ids.len > 0 ? "," : "{",
							 (long long) citus->builds[i].node_job);
	if (ids.len == 0)
		return NULL;
	appendStringInfoChar(&ids, '}');
	return ids.data;
}

/*
 * The statement that pauses or resumes ($1) those of the node jobs $2 that
 * are in one of the states $3 there (one purged or ended meanwhile is left)
 */
static char *
ControlStatement(const CitusIndexRun *citus)
{
	const char *schema = quote_identifier(citus->schema);

	return psprintf("SELECT count(*) FILTER (WHERE CASE $1 WHEN 'pause' THEN %s.pause_ddl(s.id) "
					"ELSE %s.resume_ddl(s.id) END) "
					"FROM %s.pg_stat_background_ddl s "
					"WHERE s.id = ANY ($2::bigint[]) AND s.state = ANY ($3::text[])",
					schema, schema, schema);
}

/* Read the state of a node's unfinished placement jobs; false if the node was lost */
static bool
PollNode(CitusIndexRun *citus, CitusNode *node)
{
	const char *params[3];
	PGresult   *result;

	params[0] = NodeJobIds(citus, node, NULL);
	if (params[0] == NULL)
		return true;
	result = RunOnNode(citus, node,
					   psprintf("SELECT id, state, rows_done, error, error_sqlstate, error_detail "
								"FROM %s.pg_stat_background_ddl WHERE id = ANY ($1::bigint[])",
								quote_identifier(citus->schema)),
					   1, params);
	if (result == NULL)
		return false;
	/* A placement's job no longer in the node's catalog (purged) cannot end: an error */
	for (int i = 0; i < citus->nbuilds; i++)
	{
		PlacementBuild *build = &citus->builds[i];
		bool		found = false;

		if (build->node != node || build->node_job == 0 || BuildEnded(build))
			continue;
		for (int row = 0; row < PQntuples(result) && !found; row++)
			found = strtoll(PQgetvalue(result, row, 0), NULL, 10) == build->node_job;
		if (!found)
		{
			PQclear(result);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("background DDL job %lld on Citus node %s is gone",
							(long long) build->node_job, CitusNodeName(node)),
					 errdetail("It built the index of shard %lld.", (long long) build->shard_id),
					 errhint("Check background_ddl.history_retention on the node.")));
		}
	}
	for (int row = 0; row < PQntuples(result); row++)
	{
		int64		id = strtoll(PQgetvalue(result, row, 0), NULL, 10);

		for (int i = 0; i < citus->nbuilds; i++)
		{
			PlacementBuild *build = &citus->builds[i];

			if (build->node != node || build->node_job != id)
				continue;
			strlcpy(build->state, PQgetvalue(result, row, 1), sizeof(build->state));
			build->rows = PQgetisnull(result, row, 2) ? 0 : strtoll(PQgetvalue(result, row, 2), NULL, 10);
			if (strcmp(build->state, "failed") == 0 || strcmp(build->state, "cancelled") == 0)
			{
				int			code = PgSqlstateCode(PQgetisnull(result, row, 4) ? NULL :
												  PQgetvalue(result, row, 4));
				char	   *message = pstrdup(PQgetisnull(result, row, 3) ?
											  "the job was cancelled" : PQgetvalue(result, row, 3));
				char	   *detail = PQgetisnull(result, row, 5) ? NULL : pstrdup(PQgetvalue(result, row, 5));

				PQclear(result);
				ereport(ERROR,
						(errcode(code),
						 errmsg("%s", message),
						 errdetail("%s%sThe index of shard %lld on Citus node %s (background DDL job %lld there) %s.",
								   detail ? detail : "", detail ? " " : "",
								   (long long) build->shard_id, CitusNodeName(node),
								   (long long) build->node_job,
								   strcmp(build->state, "failed") == 0 ? "failed" : "was cancelled")));
			}
		}
	}
	PQclear(result);

	/* Jobs paused with this one (pause_ddl) run again with it */
	params[1] = NodeJobIds(citus, node, "paused");
	if (params[1] != NULL)
	{
		params[0] = "resume";
		params[2] = "{paused}";
		result = RunOnNode(citus, node, ControlStatement(citus), 3, params);
		if (result == NULL)
			return false;
		PQclear(result);
	}
	return true;
}

/* The statement that builds a placement's index on its node */
static char *
PlacementStatement(const CitusIndexRun *citus, int64 shard_id)
{
	return IndexStatement(citus, "", ShardName(citus->index_name, shard_id),
						  ShardName(citus->table_name, shard_id), citus->definition_tail);
}

/*
 * Submit a node's next placements, within citus_jobs_per_node; false if
 * the node was lost.  Each job id is recorded as soon as it is known.
 */
static bool
SubmitOnNode(JobRun *run, CitusIndexRun *citus, CitusNode *node)
{
	int			running = 0;

	for (int i = 0; i < citus->nbuilds; i++)
		running += citus->builds[i].node == node && citus->builds[i].node_job != 0 &&
			!BuildEnded(&citus->builds[i]);
	for (int i = 0; i < citus->nbuilds && running < background_ddl_citus_jobs_per_node; i++)
	{
		PlacementBuild *build = &citus->builds[i];
		const char *params[2];
		PGresult   *result;
		bool		foreground;

		if (build->node != node || build->node_job != 0)
			continue;
		params[0] = PlacementStatement(citus, build->shard_id);
		params[1] = psprintf("background_ddl job %lld on %s: shard %lld",
							 (long long) run->job.id, CitusNodeName(node), (long long) build->shard_id);
		/*
		 * A cancel or pause waits until the node's answer is recorded: one
		 * that interrupted the wait for it would leave the node's job
		 * running, unknown to the discard (a shutdown does not wait: the
		 * next worker's submit, with the same key, finds that job)
		 */
		HOLD_CANCEL_INTERRUPTS();
		result = RunOnNode(citus, node, psprintf("SELECT %s.submit_ddl($1, $2)",
												 quote_identifier(citus->schema)),
						   2, params);
		if (result == NULL)
		{
			RESUME_CANCEL_INTERRUPTS();
			return false;
		}
		foreground = PQntuples(result) != 1 || PQgetisnull(result, 0, 0);
		if (!foreground)
			build->node_job = strtoll(PQgetvalue(result, 0, 0), NULL, 10);
		PQclear(result);
		if (foreground)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("Citus node %s built the index of shard %lld in the foreground",
							CitusNodeName(node), (long long) build->shard_id),
					 errdetail("Its submit_ddl() returned no job."),
					 errhint("Install background_ddl on every node of the cluster, with the same version and shared_preload_libraries.")));
		strlcpy(build->state, "submitted", sizeof(build->state));
		running++;

		/*
		 * Recorded before the job lets go for a pause or a cancel, so that
		 * those find it (a crash before is met by the key: the same job)
		 */
		JobStepBeginRecording("background_ddl: recording a shard's job");
		MemoryContextSwitchTo(JobContext());
		CatalogKindStateSetInt(&run->job.kind_state, PlacementKey(build->shard_id, node->group_id),
							   build->node_job);
		CatalogJobRecordKindState(&run->job);
		JobStepEnd();
		RESUME_CANCEL_INTERRUPTS();
		RoundMemory(citus);
	}
	return true;
}

/* What the job waits for while the nodes build (waiting_on): each node's count */
static char *
NodesActivity(const CitusIndexRun *citus)
{
	StringInfoData activity;
	ListCell   *lc;

	initStringInfo(&activity);
	appendStringInfoString(&activity, "the shards' indexes (");
	foreach(lc, citus->nodes)
	{
		CitusNode  *node = lfirst(lc);
		int			total = 0;
		int			done = 0;
		int			running = 0;

		for (int i = 0; i < citus->nbuilds; i++)
		{
			if (citus->builds[i].node != node)
				continue;
			total++;
			done += strcmp(citus->builds[i].state, "succeeded") == 0;
			running += citus->builds[i].node_job != 0 && !BuildEnded(&citus->builds[i]);
		}
		appendStringInfo(&activity, "%s%s: %d of %d done, %d running",
						 foreach_current_index(lc) > 0 ? "; " : "", CitusNodeName(node),
						 done, total, running);
	}
	appendStringInfoChar(&activity, ')');
	return activity.data;
}

/*
 * One round over the nodes: read their jobs' states, submit the next
 * placements; done when every placement's index is built
 */
static JobStepResult
CitusIndexBackfillStep(JobRun *run)
{
	CitusIndexRun *citus = run->kind_run;
	ListCell   *lc;
	int64		done = 0;
	int64		rows = 0;

	MemoryContextReset(citus->round_context);
	RoundMemory(citus);
	citus->unreachable = NULL;
	foreach(lc, citus->nodes)
	{
		CitusNode  *node = lfirst(lc);

		if (ConnectRunNode(citus, node) != NULL && PollNode(citus, node))
			SubmitOnNode(run, citus, node);
		RoundMemory(citus);
	}
	for (int i = 0; i < citus->nbuilds; i++)
	{
		done += strcmp(citus->builds[i].state, "succeeded") == 0;
		rows += citus->builds[i].rows;
	}
	JobStepBegin("background_ddl: recording the progress", STEP_READ_COMMITTED);
	CatalogJobSetBackfillTotals(&run->job, done, rows, done);
	JobStepEnd();
	RoundMemory(citus);
	if (done == citus->nbuilds)
	{
		JobStepWaitingFor(JOB_WAIT_NODES, NULL);
		MemoryContextSwitchTo(JobContext());
		return JOB_STEP_DONE;
	}
	JobStepWaitingFor(JOB_WAIT_NODES, citus->unreachable != NULL ? citus->unreachable : NodesActivity(citus));
	MemoryContextSwitchTo(JobContext());
	JobStepSleep(POLL_INTERVAL_MS);
	return JOB_STEP_MORE;
}

/*
 * Run statements on a node that holds Citus's metadata; false if it was
 * lost.  A statement it refuses is an error, unless discarding: then a
 * WARNING.
 */
static bool
OnMetadataNodeConnected(CitusIndexRun *citus, CitusNode *node, const char *const *statements,
						int nstatements, bool discarding)
{
	bool		lost = false;
	char	   *error = NULL;

	for (int i = 0; i < nstatements && !lost && error == NULL; i++)
	{
		PGresult   *result = discarding ?
			CitusNodeTryExec(node, statements[i], 0, NULL, &error) :
			RunOnNode(citus, node, statements[i], 0, NULL);

		lost = !discarding && result == NULL;
		if (result != NULL)
			PQclear(result);
	}
	if (error != NULL)
		ereport(WARNING,
				(errmsg("could not remove the index \"%s\" from the shell table on Citus node %s",
						citus->index_name, CitusNodeName(node)),
				 errdetail("%s", error),
				 errhint("Run there: %s", statements[nstatements - 1])));
	return !lost;
}

/* The same, connecting first and closing the connection after, also on an error */
static bool
OnMetadataNode(CitusIndexRun *citus, CitusNode *node, const char *const *statements,
			   int nstatements, bool discarding)
{
	volatile bool reached = false;

	if (ConnectRunNode(citus, node) == NULL)
		return false;
	PG_TRY();
	{
		reached = OnMetadataNodeConnected(citus, node, statements, nstatements, discarding);
	}
	PG_FINALLY();
	{
		CitusNodeDisconnect(node);
	}
	PG_END_TRY();
	return reached;
}

/*
 * Run statements on the nodes that hold Citus's metadata
 * (CitusNodesWithMetadata), with Citus's propagation off (the shells only);
 * false if one could not be reached (NodeLost).  Each connection is closed
 * after, also on an error.
 */
static bool
OnMetadataNodes(CitusIndexRun *citus, List *nodes, const char *const *statements,
				int nstatements, bool discarding)
{
	ListCell   *lc;
	bool		all_reached = true;

	foreach(lc, nodes)
		all_reached &= OnMetadataNode(citus, lfirst(lc), statements, nstatements, discarding);
	return all_reached;
}

/*
 * Every placement has its index: the shells of the metadata nodes get it,
 * and the coordinator's becomes valid, with the job's success
 */
static JobStepResult
CitusIndexCutOver(JobRun *run)
{
	CitusIndexRun *citus = run->kind_run;
	Oid			table_oid = IndexedTable(&run->job);
	const char *statements[2];
	List	   *nodes;
	bool		reached;
	int64		rows = 0;

	MemoryContextReset(citus->round_context);
	RoundMemory(citus);
	statements[0] = "SET citus.enable_ddl_propagation TO off";
	statements[1] = IndexStatement(citus, "IF NOT EXISTS ", citus->index_name, citus->table_name,
								   citus->definition_tail);
	JobStepBegin("background_ddl: reading the Citus nodes", STEP_READ_COMMITTED);
	RoundMemory(citus);
	nodes = CitusNodesWithMetadata();
	JobStepEnd();
	RoundMemory(citus);
	citus->unreachable = NULL;
	reached = OnMetadataNodes(citus, nodes, statements, 2, false);
	JobStepWaitingFor(JOB_WAIT_NODES, reached ? NULL : citus->unreachable);
	MemoryContextSwitchTo(JobContext());
	if (!reached)
	{
		JobStepSleep(1000);
		return JOB_STEP_MORE;
	}
	JobStepHoldPoint("cutting over");
	JobStepBegin("background_ddl: cutting over", STEP_READ_COMMITTED);
	JobStepLockRelation(table_oid, ShareUpdateExclusiveLock, 1000);
	if (get_rel_name(run->job.target_oid) == NULL)
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	index_set_state_flags(run->job.target_oid, INDEX_CREATE_SET_VALID);
	CacheInvalidateRelcacheByRelid(table_oid);
	PgRelationSetExtensionMember(run->job.target_oid, CatalogRequire()->extension_oid, false);
	for (int i = 0; i < citus->nbuilds; i++)
		rows += citus->builds[i].rows;
	JobRunSucceeded(run, run->job.target_oid, false, rows);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/*
 * A placement's job: cancelled if it has not ended (it drops what it made),
 * its index dropped if it succeeded (also if it did while we cancelled it);
 * a node that cannot be reached or refuses keeps it, with a WARNING saying
 * what to do there
 */
static void
DiscardPlacement(CitusIndexRun *citus, PlacementBuild *build)
{
	char	   *index = quote_qualified_identifier(citus->table_schema,
												   ShardName(citus->index_name, build->shard_id));
	char	   *read_state = psprintf("SELECT state FROM %s.pg_stat_background_ddl WHERE id = $1::bigint",
									  quote_identifier(citus->schema));
	char	   *cancel = psprintf("SELECT %s.cancel_ddl($1::bigint)", quote_identifier(citus->schema));
	const char *params[1];
	char	   *error = NULL;
	bool		done = false;

	if (build->node_job == 0)
		return;
	params[0] = psprintf("%lld", (long long) build->node_job);
	citus->unreachable = NULL;
	if (ConnectRunNode(citus, build->node) == NULL)
		error = citus->unreachable;
	/* A job ends once: the second look finds it ended, the third cannot be needed */
	for (int look = 0; look < 3 && !done && error == NULL; look++)
	{
		PGresult   *result = CitusNodeTryExec(build->node, read_state, 1, params, &error);
		char	   *state;

		if (result == NULL)
			break;
		state = pstrdup(PQntuples(result) == 1 ? PQgetvalue(result, 0, 0) : "gone");
		PQclear(result);
		if (strcmp(state, "succeeded") == 0)
			result = CitusNodeTryExec(build->node, psprintf("DROP INDEX IF EXISTS %s", index),
									  0, NULL, &error);
		else if (strcmp(state, "failed") == 0 || strcmp(state, "cancelled") == 0 ||
				 strcmp(state, "cancelling") == 0 || strcmp(state, "gone") == 0)
			break;
		else
			result = CitusNodeTryExec(build->node, cancel, 1, params, &error);
		/* cancel_ddl is false for a job that has just ended: look again */
		done = result != NULL &&
			(strcmp(state, "succeeded") == 0 || strcmp(PQgetvalue(result, 0, 0), "t") == 0);
		if (result != NULL)
			PQclear(result);
	}
	if (error != NULL)
		ereport(WARNING,
				(errmsg("could not remove the index of shard %lld on Citus node %s",
						(long long) build->shard_id, CitusNodeName(build->node)),
				 errdetail("%s", error),
				 errhint("Run cancel_ddl(%lld) there, or DROP INDEX %s there.",
						 (long long) build->node_job, index)));
}

/*
 * Cancel the placements' jobs still running, drop the indexes of those that
 * succeeded and the shells' index, then (unless keep_target) the
 * coordinator's.  In the worker's transaction.
 */
static void
CitusIndexDiscard(const BgddlJob *job, bool keep_target)
{
	CitusIndexRun *citus;
	const char *statements[2];

	if (OidIsValid(job->target_oid) && get_rel_name(job->target_oid) != NULL &&
		get_rel_name(IndexedTable(job)) != NULL)
	{
		citus = LoadRun(job, JobContext());
		/* Its WARNINGs (what a node kept) stay with the job: ddl_messages() */
		JobMessagesCatch(true);
		for (int i = 0; i < citus->nbuilds; i++)
			DiscardPlacement(citus, &citus->builds[i]);
		statements[0] = "SET citus.enable_ddl_propagation TO off";
		statements[1] = psprintf("DROP INDEX IF EXISTS %s",
								 quote_qualified_identifier(citus->table_schema, citus->index_name));
		if (!OnMetadataNodes(citus, CitusNodesWithMetadata(), statements, 2, true))
			ereport(WARNING,
					(errmsg("could not remove the index \"%s\" from the shell tables of every Citus node",
							citus->index_name),
					 errdetail("A node that holds Citus's metadata cannot be reached.")));
		JobMessagesCatch(false);
		DisconnectRun(citus);
	}
	if (!keep_target)
		PgRelationDrop(job->target_oid);
}

/*
 * The job was paused (in the pausing transaction, the job's worker gone):
 * so are its placements' jobs still running on the nodes.  Its worker
 * resumes them when the job resumes, or at once if this pause is rolled
 * back.  A node that cannot be reached goes on building, with a WARNING.
 */
static void
CitusIndexPaused(const BgddlJob *job)
{
	CitusIndexRun *citus;
	ListCell   *lc;

	if (get_rel_name(job->target_oid) == NULL || get_rel_name(IndexedTable(job)) == NULL)
		return;
	citus = LoadRun(job, CurrentMemoryContext);
	foreach(lc, citus->nodes)
	{
		CitusNode  *node = lfirst(lc);
		const char *params[3] = {"pause", NULL, "{queued,running}"};
		char	   *error = NULL;
		PGresult   *result = NULL;

		params[1] = NodeJobIds(citus, node, NULL);
		if (params[1] == NULL)
			continue;
		if (CitusNodeConnect(node, citus->database, citus->role, citus->application_name,
							 &error) != NULL)
			result = CitusNodeTryExec(node, ControlStatement(citus), 3, params, &error);
		if (result != NULL)
			PQclear(result);
		else
			ereport(WARNING,
					(errmsg("could not pause the jobs of background DDL job %lld on Citus node %s",
							(long long) job->id, CitusNodeName(node)),
					 errdetail("%s", error),
					 errhint("They go on building; pause_ddl() pauses them there: %s.", params[1])));
		CitusNodeDisconnect(node);
	}
}

/* The removal talks to the nodes: the worker does it */
static bool
CitusIndexDiscardsInAnyTransaction(const BgddlJob *job)
{
	return false;
}

/* The transaction that submitted it cannot use the index: the nodes build it after COMMIT */
static Oid
CitusIndexBuildHere(const BgddlJob *job)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("index \"%s\" of a distributed table is built on the Citus nodes after COMMIT",
					get_rel_name(job->target_oid)),
			 errdetail("Background DDL job %lld submitted it in this transaction.", (long long) job->id),
			 errhint("Use it after COMMIT, once the job has succeeded, or SET background_ddl = off to let Citus build it.")));
	return InvalidOid;			/* keep compiler quiet */
}

const KindRoutine kind_citus_index_routine = {
	.name = "CREATE INDEX",
	.variant_key = STATE_VARIANT,
	.stands_for = OBJECT_INDEX,
	.accepts = CitusIndexAccepts,
	.validate = CitusIndexValidate,
	.reserve = CitusIndexReserve,
	.start = CitusIndexStart,
	.plan = CitusIndexPlan,
	.backfill_step = CitusIndexBackfillStep,
	.cut_over = CitusIndexCutOver,
	.paused = CitusIndexPaused,
	.discard = CitusIndexDiscard,
	.discards_in_any_transaction = CitusIndexDiscardsInAnyTransaction,
	.build_here = CitusIndexBuildHere,
};
