/*-------------------------------------------------------------------------
 *
 * kind_index.c
 *	  Background CREATE [UNIQUE] INDEX [CONCURRENTLY].
 *
 * The index is built as CREATE INDEX CONCURRENTLY builds it, so writers of
 * the table are never blocked, and the planner ignores it until it is
 * valid.
 *
 * At submit: the blocking statement's checks (ownership of the table, the
 * access method and what it supports, operator classes, immutable
 * expressions and predicate, the CREATE privilege on the schema and the
 * tablespace, the name), done with the statement transformed as
 * CREATE INDEX transforms it.  What name resolution decided is stored with
 * the job: the analysed expressions and predicate (bound to OIDs), and the
 * schema-qualified operator classes and collations; the worker parses the
 * statement again and puts these back, so that later search_path changes
 * or look-alike objects cannot change the index.  The index's
 * name, chosen as CREATE INDEX would choose it if none was given, is
 * reserved by a placeholder: an empty, unpopulated materialized view of
 * that name, which nobody can read.
 *
 * In the worker, one transaction drops the placeholder, records the OID the
 * index will have, and starts CREATE INDEX CONCURRENTLY with it
 * (DefineIndex), whose first phase commits all three together: the name is
 * never free, and the job always knows its index.  The build runs as the
 * submitting role, under statement_timeout; pg_stat_progress_create_index
 * shows it, and so does pg_stat_background_ddl.
 *
 * After a crash, the invalid index left behind is dropped and the name
 * reserved again in one transaction, and the build restarts.  A failed or
 * cancelled job drops the index (or the placeholder), with the short lock
 * timeout and retries, and leaves no invalid index.  Partitioned tables are
 * refused: CREATE INDEX CONCURRENTLY cannot build their indexes either.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_opclass.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_utilcmd.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"

#include "decompose.h"
#include "job_kind.h"
#include "job_step.h"
#include "placeholder.h"


static IndexStmt *
IndexStatement(JobSubmit *submit)
{
	return castNode(IndexStmt, submit->pstmt->utilityStmt);
}

/*
 * CREATE INDEX, unless IF NOT EXISTS finds the name, or the table is a
 * job's placeholder: empty, so the blocking statement is instant (and
 * placeholder.c decides whether it may run at all).
 */
static bool
IndexAccepts(Node *parsetree)
{
	IndexStmt  *stmt;
	Oid			relid;

	if (!IsA(parsetree, IndexStmt))
		return false;
	stmt = (IndexStmt *) parsetree;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (PlaceholderOfUnfinishedJob(relid))
		return false;
	if (!stmt->if_not_exists || stmt->idxname == NULL)
		return true;
	return !OidIsValid(relid) ||
		!OidIsValid(get_relname_relid(stmt->idxname, get_rel_namespace(relid)));
}

/* The name CREATE INDEX chooses when none is given (as indexcmds.c does) */
static char *
ChooseIndexNameLikeCreateIndex(Relation rel, IndexStmt *stmt)
{
	List	   *elems = list_concat_copy(stmt->indexParams, stmt->indexIncludingParams);
	List	   *names = NIL;
	char		addition[NAMEDATALEN * 2] = "";
	ListCell   *lc;

	foreach(lc, elems)
	{
		IndexElem  *elem = lfirst(lc);
		const char *origname = elem->indexcolname ? elem->indexcolname :
			elem->name ? elem->name : "expr";
		char	   *name = pstrdup(origname);

		for (int i = 1; list_member(names, makeString(name)); i++)
		{
			char		suffix[NAMEDATALEN];

			snprintf(suffix, sizeof(suffix), "%d", i);
			name = psprintf("%.*s%s",
							pg_mbcliplen(origname, strlen(origname),
										 NAMEDATALEN - 1 - strlen(suffix)),
							origname, suffix);
		}
		names = lappend(names, makeString(name));
		if (strlen(addition) + strlen(name) + 1 >= NAMEDATALEN)
			break;
		if (addition[0] != '\0')
			strlcat(addition, "_", sizeof(addition));
		strlcat(addition, name, sizeof(addition));
	}
	if (stmt->primary)
		return ChooseRelationName(RelationGetRelationName(rel), NULL, "pkey",
								  RelationGetNamespace(rel), true);
	return ChooseRelationName(RelationGetRelationName(rel), addition, "idx",
							  RelationGetNamespace(rel), false);
}

/* A schema-qualified name list for a catalog object in a namespace */
static List *
QualifiedName(Oid namespace_oid, const char *name)
{
	return list_make2(makeString(get_namespace_name(namespace_oid)), makeString(pstrdup(name)));
}

/*
 * Check one key column as DefineIndex would, and qualify its operator class
 * and collation names so that the worker finds the same ones.
 */
static void
CheckKeyColumn(Relation rel, IndexElem *elem, Oid am_oid, const char *am_name)
{
	Oid			type;

	if (elem->expr != NULL)
	{
		type = exprType(elem->expr);
		if (contain_mutable_functions_after_planning((Expr *) elem->expr))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("functions in index expression must be marked IMMUTABLE")));
	}
	else
	{
		AttrNumber	attno = get_attnum(RelationGetRelid(rel), elem->name);

		if (attno == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" does not exist", elem->name)));
		type = get_atttype(RelationGetRelid(rel), attno);
	}
	if (elem->collation != NIL)
	{
		Oid			collation = get_collation_oid(elem->collation, false);
		HeapTuple	tuple = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));

		if (HeapTupleIsValid(tuple))
		{
			Form_pg_collation form = (Form_pg_collation) GETSTRUCT(tuple);

			elem->collation = QualifiedName(form->collnamespace, NameStr(form->collname));
			ReleaseSysCache(tuple);
		}
	}
	{
		Oid			opclass = ResolveOpClass(elem->opclass, type, am_name, am_oid);
		HeapTuple	tuple = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));

		if (HeapTupleIsValid(tuple) && elem->opclass != NIL)
		{
			Form_pg_opclass form = (Form_pg_opclass) GETSTRUCT(tuple);

			elem->opclass = QualifiedName(form->opcnamespace, NameStr(form->opcname));
		}
		if (HeapTupleIsValid(tuple))
			ReleaseSysCache(tuple);
	}
}

/*
 * The blocking statement's checks: the table (owned by the caller, not
 * partitioned, not temporary), the statement as CREATE INDEX transforms
 * it, the access method, the columns, the CREATE privileges, the name.
 * Leaves the transformed statement in submit->pstmt.
 */
static void
IndexValidate(JobSubmit *submit)
{
	IndexStmt  *stmt = copyObject(IndexStatement(submit));

	/*
	 * ACCESS SHARE, not the build's SHARE UPDATE EXCLUSIVE: another job's
	 * build holds that for its whole length, and waits for our snapshot.
	 */
	Oid			relid = RangeVarGetRelidExtended(stmt->relation, AccessShareLock, 0,
												 RangeVarCallbackOwnsRelation, NULL);
	Relation	rel = table_open(relid, NoLock);
	Oid			am_oid;
	IndexAmRoutine *am;
	ListCell   *lc;
	AclResult	aclresult;
	const char *refusal = NULL;

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		refusal = "CREATE INDEX CONCURRENTLY cannot build the index of a partitioned table.";
	else if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		refusal = "The job would run in another session, and a temporary table belongs to this one.";
	if (refusal != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("CREATE INDEX on \"%s\" cannot run as a background job",
						RelationGetRelationName(rel)),
				 errdetail("%s", refusal),
				 errhint("SET background_ddl = off to build it in this session%s.",
						 rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ?
						 ", or build an index on each partition in the background" : "")));
	if (rel->rd_rel->relkind != RELKIND_RELATION && rel->rd_rel->relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot create index on relation \"%s\"", RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind)));

	stmt = transformIndexStmt(relid, stmt, submit->query_string);
	am_oid = get_index_am_oid(stmt->accessMethod, false);
	am = GetIndexAmRoutineByAmId(am_oid, false);
	if (stmt->unique && !am->amcanunique)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" does not support unique indexes", stmt->accessMethod)));
	if (stmt->indexIncludingParams != NIL && !am->amcaninclude)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" does not support included columns", stmt->accessMethod)));
	if (list_length(stmt->indexParams) > 1 && !am->amcanmulticol)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" does not support multicolumn indexes", stmt->accessMethod)));
	foreach(lc, stmt->indexParams)
		CheckKeyColumn(rel, lfirst(lc), am_oid, stmt->accessMethod);
	if (stmt->whereClause != NULL &&
		contain_mutable_functions_after_planning((Expr *) stmt->whereClause))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("functions in index predicate must be marked IMMUTABLE")));

	aclresult = pg_namespace_aclcheck(RelationGetNamespace(rel), GetUserId(), ACL_CREATE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_SCHEMA, get_namespace_name(RelationGetNamespace(rel)));
	if (stmt->tableSpace != NULL)
	{
		Oid			tablespace = get_tablespace_oid(stmt->tableSpace, false);

		aclresult = pg_tablespace_aclcheck(tablespace, GetUserId(), ACL_CREATE);
		if (tablespace != MyDatabaseTableSpace && aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_TABLESPACE, stmt->tableSpace);
	}

	if (stmt->idxname == NULL)
		stmt->idxname = ChooseIndexNameLikeCreateIndex(rel, stmt);
	else if (OidIsValid(get_relname_relid(stmt->idxname, RelationGetNamespace(rel))))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", stmt->idxname)));
	stmt->relation = makeRangeVar(get_namespace_name(RelationGetNamespace(rel)),
								  pstrdup(RelationGetRelationName(rel)), -1);
	stmt->concurrent = true;
	stmt->if_not_exists = false;
	table_close(rel, NoLock);

	submit->pstmt = copyObject(submit->pstmt);
	submit->pstmt->utilityStmt = (Node *) stmt;
	submit->table_oid = relid;
}

/*
 * What name resolution decided for a transformed statement, in a form that
 * PostgreSQL 15 can write and read back (utility statements it cannot):
 * per key column its expression, operator class and collation, and the
 * predicate.
 */
static char *
ResolvedParts(IndexStmt *stmt)
{
	List	   *exprs = NIL;
	List	   *opclasses = NIL;
	List	   *collations = NIL;
	ListCell   *lc;

	foreach(lc, stmt->indexParams)
	{
		IndexElem  *elem = lfirst(lc);

		exprs = lappend(exprs, elem->expr);
		opclasses = lappend(opclasses, elem->opclass);
		collations = lappend(collations, elem->collation);
	}
	return nodeToString(list_make4(exprs, stmt->whereClause, opclasses, collations));
}

/*
 * The statement the worker runs: the submitted one, parsed and transformed
 * again (against the table by OID), with the parts name resolution
 * decided at submit put back, named name, concurrent.
 */
static IndexStmt *
StatementToRun(const BgddlJob *job, const char *name)
{
	RawStmt    *raw = linitial_node(RawStmt, raw_parser(job->command, RAW_PARSE_DEFAULT));
	IndexStmt  *stmt = castNode(IndexStmt, raw->stmt);
	List	   *parts = stringToNode(job->utility_stmt);
	ListCell   *elem_cell;
	int			i = 0;

	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(job->driving_oid)),
								  get_rel_name(job->driving_oid), -1);
	stmt->idxname = pstrdup(name);
	stmt->concurrent = true;
	stmt->if_not_exists = false;
	stmt = transformIndexStmt(job->driving_oid, stmt, job->command);
	if (list_length(stmt->indexParams) != list_length(linitial(parts)))
		elog(ERROR, "the index of background DDL job " INT64_FORMAT " changed its columns",
			 job->id);
	foreach(elem_cell, stmt->indexParams)
	{
		IndexElem  *elem = lfirst(elem_cell);

		elem->expr = list_nth(linitial(parts), i);
		elem->opclass = list_nth(lthird(parts), i);
		elem->collation = list_nth(lfourth(parts), i);
		i++;
	}
	stmt->whereClause = lsecond(parts);
	return stmt;
}

/*
 * Reserve the name: an empty, unpopulated materialized view of that name in
 * the table's schema, made by running CREATE MATERIALIZED VIEW name AS
 * SELECT WITH NO DATA as the submitting role.
 */
static Oid
ReserveIndexName(JobSubmit *submit, Oid namespace_oid, const char *name)
{
	RawStmt    *raw = linitial_node(RawStmt, raw_parser("SELECT", RAW_PARSE_DEFAULT));
	Query	   *empty = parse_analyze_fixedparams(raw, "SELECT", NULL, 0, NULL);
	CreateTableAsStmt *ctas = makeNode(CreateTableAsStmt);
	PlannedStmt *pstmt = makeNode(PlannedStmt);
	Oid			relid;

	ctas->query = (Node *) empty;
	ctas->objtype = OBJECT_MATVIEW;
	ctas->into = makeNode(IntoClause);
	ctas->into->rel = makeRangeVar(get_namespace_name(namespace_oid), pstrdup(name), -1);
	ctas->into->skipData = true;
	ctas->into->viewQuery = (Node *) copyObject(empty);
	pstmt->commandType = CMD_UTILITY;
	pstmt->utilityStmt = (Node *) ctas;
	pstmt->stmt_location = -1;
	submit->run_utility(submit, pstmt);
	CommandCounterIncrement();
	relid = get_relname_relid(name, namespace_oid);
	if (!OidIsValid(relid))
		elog(ERROR, "placeholder \"%s\" was not created", name);
	return relid;
}

static void
IndexReserve(JobSubmit *submit)
{
	IndexStmt  *stmt = IndexStatement(submit);
	Oid			namespace_oid = get_rel_namespace(submit->table_oid);

	submit->target_oid = ReserveIndexName(submit, namespace_oid, stmt->idxname);
	submit->target_name = quote_qualified_identifier(get_namespace_name(namespace_oid),
													 stmt->idxname);
	submit->strategy = pstrdup(STRATEGY_CONCURRENT_INDEX);
	submit->utility_stmt = ResolvedParts(stmt);
}

static void
IndexStart(JobRun *run)
{
	run->query_role = run->job.identity.owner_oid;
}

static void
IndexPlan(JobRun *run)
{
	JobStepBegin("background_ddl: planning", STEP_READ_COMMITTED);
	run->job.planned = true;
	JobRecordPlan(&run->job);
	JobStepEnd();
}

/* Is the relation an index; if so, is it valid? */
static bool
IsIndex(Oid relid, bool *valid)
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
 * After a crash in the middle of the build: drop the invalid index and
 * reserve its name again, in one transaction (a LockingStep: dropping an
 * index locks its table).
 */
static void
RestartBuildStep(JobRun *run)
{
	char	   *name = get_rel_name(run->job.target_oid);
	Oid			namespace_oid = get_rel_namespace(run->job.target_oid);
	JobSubmit	reserve = {0};
	Oid			saved_userid;
	int			saved_sec_context;

	PlaceholderDrop(run->job.target_oid);
	ereport(LOG,
			(errmsg("background DDL job " INT64_FORMAT ": dropped the invalid index \"%s\" left by an interrupted build; the build restarts",
					run->job.id, name)));
	reserve.query_string = run->job.command;
	reserve.run_utility = JobRunUtility;
	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(run->query_role, saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	run->job.target_oid = ReserveIndexName(&reserve, namespace_oid, name);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	JobRecordTarget(run->job.id, run->job.target_oid);
}

/*
 * CREATE INDEX CONCURRENTLY with the stored statement.  Its first phase
 * commits the placeholder's drop, the index's OID in the job row and the
 * invalid index together.  Runs as the submitting role, with
 * statement_timeout armed for the whole build.
 */
static void
BuildIndex(JobRun *run)
{
	IndexStmt  *stmt;
	Relation	pg_class;
	Oid			tablespace;
	Oid			index_oid;
	Oid			saved_userid;
	int			saved_sec_context;

	/*
	 * Wait for other index builds on the table (CREATE INDEX CONCURRENTLY
	 * holds ShareUpdateExclusive throughout) before taking a snapshot: a
	 * build waits for older snapshots, so waiting for its lock with one
	 * would deadlock.
	 */
	JobStepBegin("background_ddl: building the index", STEP_NO_SNAPSHOT);
	LockRelationOid(run->job.driving_oid, ShareUpdateExclusiveLock);
	PushActiveSnapshot(GetTransactionSnapshot());
	/* The placeholder's name now: it may have been renamed */
	stmt = StatementToRun(&run->job, get_rel_name(run->job.target_oid));
	PlaceholderDrop(run->job.target_oid);
	tablespace = stmt->tableSpace ? get_tablespace_oid(stmt->tableSpace, false) :
		GetDefaultTablespace(get_rel_persistence(run->job.driving_oid), false);
	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	index_oid = GetNewRelFileNode(tablespace, pg_class, get_rel_persistence(run->job.driving_oid));
	table_close(pg_class, RowExclusiveLock);
	run->job.target_oid = index_oid;
	JobRecordTarget(run->job.id, index_oid);

	GetUserIdAndSecContext(&saved_userid, &saved_sec_context);
	SetUserIdAndSecContext(run->query_role,
						   saved_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (StatementTimeout > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, StatementTimeout);
	(void) DefineIndex(run->job.driving_oid, stmt, index_oid, InvalidOid, InvalidOid,
					   false, true, false, false, true);
	disable_timeout(STATEMENT_TIMEOUT, false);
	SetUserIdAndSecContext(saved_userid, saved_sec_context);
	JobStepEnd();
}

/* The whole build is one step of the backfill */
static JobStepResult
IndexBackfillStep(JobRun *run)
{
	bool		valid;
	bool		is_index;
	bool		exists;

	JobStepHoldPoint("chunk 0");
	JobStepBegin("background_ddl: checking the index", STEP_READ_COMMITTED);
	exists = JobRunTargetExists(run);
	is_index = IsIndex(run->job.target_oid, &valid);
	JobStepEnd();
	if (!exists)
		return JOB_STEP_TARGET_GONE;
	if (is_index && valid)
		return JOB_STEP_DONE;
	if (is_index)
	{
		JobRunLockingStep(run, RestartBuildStep, JOB_PHASE_BACKFILLING,
						  "background_ddl: dropping an invalid index");
		return JOB_STEP_MORE;
	}
	BuildIndex(run);
	return JOB_STEP_DONE;
}

static JobStepResult
IndexCatchUp(JobRun *run)
{
	return JOB_STEP_DONE;
}

/* The index is valid: the job succeeded */
static JobStepResult
IndexCutOver(JobRun *run)
{
	bool		valid;

	JobStepHoldPoint("cutting over");
	JobStepBegin("background_ddl: cutting over", STEP_READ_COMMITTED);
	if (!IsIndex(run->job.target_oid, &valid))
	{
		JobStepEnd();
		return JOB_STEP_TARGET_GONE;
	}
	if (!valid)
		elog(ERROR, "index %u of background DDL job " INT64_FORMAT " is not valid",
			 run->job.target_oid, run->job.id);
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	JobStepEnd();
	return JOB_STEP_DONE;
}

/*
 * Drop the index (valid or not) or the placeholder.  Dropping an index
 * takes ACCESS EXCLUSIVE on its table, so the caller runs this with the
 * short lock timeout (worker.c): it is never done in cancel_ddl's
 * transaction.
 */
static void
IndexDiscard(const BgddlJob *job, bool keep_target)
{
	if (!keep_target)
		PlaceholderDrop(job->target_oid);
}

/* A placeholder can go in any transaction; an index needs its table locked */
static bool
IndexDiscardsInAnyTransaction(const BgddlJob *job)
{
	return get_rel_relkind(job->target_oid) != RELKIND_INDEX;
}

const JobKindRoutine index_kind_routine = {
	.stands_for = OBJECT_INDEX,
	.kind = JOB_KIND_CREATE_INDEX,
	.accepts = IndexAccepts,
	.validate = IndexValidate,
	.reserve = IndexReserve,
	.start = IndexStart,
	.plan = IndexPlan,
	.backfill_step = IndexBackfillStep,
	.catch_up = IndexCatchUp,
	.cut_over = IndexCutOver,
	.discard = IndexDiscard,
	.discards_in_any_transaction = IndexDiscardsInAnyTransaction,
};
