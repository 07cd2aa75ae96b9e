/*-------------------------------------------------------------------------
 *
 * sql_submit.c
 *	  submit_ddl(statement, idempotency_key, after): submit one statement as
 *	  a background job, for tools that cannot set a session variable (pg_cron,
 *	  ORMs, a task runner that retries its tasks).
 *
 * The statement runs as it would with background_ddl on, in the caller's
 * transaction (a rolled-back call leaves no job), through the same hook as
 * any other: validated at submit, with PostgreSQL's errors.  With an
 * idempotency key, a call whose key names a job of the same role still in
 * the catalog returns that job instead, if it was submitted for the same
 * statement; a second call that races the first waits for its transaction
 * (a lock on the key).  Keys are per role: another role's job with the
 * same key is another key.  The key stays with the job until the job is
 * purged (background_ddl.history_retention).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "catalog/catalog_job.h"
#include "engine/job_xact.h"
#include "session/session_submit.h"

PG_FUNCTION_INFO_V1(submit_ddl);

/*
 * The class of the locks on idempotency keys (an advisory lock tag's
 * field4): SQL's advisory lock functions take classes 1 and 2 only, so no
 * session can take or hold one of these
 */
#define IDEMPOTENCY_LOCK_CLASS	0xBDD2

/* The job ids of an int8[] (without NULLs), as int64 * */
static List *
JobIds(ArrayType *array)
{
	Datum	   *values;
	bool	   *nulls;
	int			n;
	List	   *ids = NIL;

	deconstruct_array(array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &values, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		int64	   *id;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("after must not contain NULL")));
		id = palloc(sizeof(int64));
		*id = DatumGetInt64(values[i]);
		ids = lappend(ids, id);
	}
	return ids;
}

/*
 * The job this role already submitted with this key, if any: the same
 * statement, or an error.  Keys are the role's own (another role's jobs
 * with the same key are not seen), and the lock on the key, held until the
 * end of the transaction, is the role's and one no SQL can take.
 */
static int64
JobOfKey(const char *key, const char *statement)
{
	LOCKTAG		tag;
	char	   *command;
	int64		job_id;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hash_bytes((const unsigned char *) key, strlen(key)),
						 GetUserId(), IDEMPOTENCY_LOCK_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	job_id = CatalogJobByKey(key, GetUserId(), &command);
	if (job_id == 0)
		return 0;
	if (strcmp(command, SessionStatementText(statement, 0, 0)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("idempotency key \"%s\" was used for another statement", key),
				 errdetail("Background DDL job %lld was submitted with it for: %s",
						   (long long) job_id, command)));
	return job_id;
}

/*
 * Refuse, before running anything, what submit_ddl cannot run: more than one
 * statement, transaction control (it runs inside the caller's transaction),
 * a COPY from or to the client (there is no client protocol in it)
 */
static void
CheckSubmittable(List *raw_statements)
{
	Node	   *statement;

	if (list_length(raw_statements) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("submit_ddl takes one statement")));
	statement = linitial_node(RawStmt, raw_statements)->stmt;
	if (IsA(statement, TransactionStmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("submit_ddl cannot run transaction control statements"),
				 errdetail("It runs its statement in the caller's transaction.")));
	if (IsA(statement, CopyStmt) && ((CopyStmt *) statement)->filename == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("submit_ddl cannot run COPY %s", ((CopyStmt *) statement)->is_from ?
						"FROM STDIN" : "TO STDOUT"),
				 errdetail("It runs its statement with no client to copy from or to.")));
}

Datum
submit_ddl(PG_FUNCTION_ARGS)
{
	char	   *statement;
	char	   *key = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	List	   *after = PG_ARGISNULL(2) ? NIL : JobIds(PG_GETARG_ARRAYTYPE_P(2));
	int64		last_before = JobXactLastJob();
	int64		job_id;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the statement of submit_ddl must not be NULL")));
	statement = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CheckSubmittable(raw_parser(statement, RAW_PARSE_DEFAULT));
	if (key != NULL && (job_id = JobOfKey(key, statement)) != 0)
		PG_RETURN_INT64(job_id);

	SessionSubmitWith(key, after);
	PG_TRY();
	{
		int			nestlevel = NewGUCNestLevel();
		int			result;

		(void) set_config_option("background_ddl", "on", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if ((result = SPI_execute(statement, false, 0)) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("submit_ddl cannot run this statement: %s", SPI_result_code_string(result))));
		SPI_finish();
		AtEOXact_GUC(true, nestlevel);
	}
	PG_FINALLY();
	{
		SessionSubmitWith(NULL, NIL);
	}
	PG_END_TRY();

	/* A statement that is not a job ran as PostgreSQL runs it */
	job_id = JobXactLastJob();
	if (job_id == last_before)
		PG_RETURN_NULL();
	PG_RETURN_INT64(job_id);
}
