/*-------------------------------------------------------------------------
 *
 * job_identity.c
 *	  A job runs as the submitter's own session would, never with more.
 *
 * At submit we record the session user, the current user and the settings
 * the session changed (SET, SET LOCAL, a function's SET clause, and what the
 * client sent at connection, such as DateStyle).  The job worker then
 * becomes that session:
 *
 *	1. session_user is the submitter's session user (is_superuser follows),
 *	   set through session_authorization as its reset value.  On PostgreSQL
 *	   15 a background worker cannot connect as a NOLOGIN role or past a
 *	   role's connection limit, so it connects as the bootstrap superuser
 *	   and changes its session authorization, as only a superuser may.
 *	2. The settings of ALTER ROLE ... SET and ALTER DATABASE ... SET for that
 *	   role and database are in force, as at login; settings the bootstrap
 *	   superuser's own role carries (which the connection applied) are put
 *	   back to what the submitter's login would have had, and emptied if
 *	   only that role's settings define them (a custom app.token).
 *	3. The recorded session settings are applied on top, as the session user
 *	   (a non-superuser cannot apply a superuser-only setting this way).
 *
 * The job's statements then run as the current user of the submit (the
 * owner of what the job builds) under SECURITY_RESTRICTED_OPERATION, in a
 * GUC nest level of their own, as REFRESH MATERIALIZED VIEW runs a view's
 * query: they cannot SET ROLE or SESSION AUTHORIZATION, create temporary
 * objects, or leave settings behind.  statement_timeout is armed for each
 * batch as for a statement; temp_file_limit and the other limits apply as
 * always.  Only the catalog writes of catalog_access.c switch identity, to
 * the bootstrap superuser, and for that write alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_db_role_setting.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"

#include "catalog/job_identity.h"
#include "catalog/settings.h"

/*
 * Settings never taken from the submitting session: identity (set apart),
 * transaction control (the worker runs its own transactions), what belongs
 * to the client connection, and our own.  What is taken is kept with the
 * job only until it ends (catalog_job.c: CatalogJobFinish), readable meanwhile by
 * superusers and pg_read_all_data, as the session's own settings are.
 */
static const char *const uncaptured_settings[] = {
	"session_authorization", "role", "is_superuser",
	"transaction_isolation", "transaction_read_only", "transaction_deferrable",
	"default_transaction_isolation", "default_transaction_read_only",
	"default_transaction_deferrable", "session_replication_role",
	"client_encoding", "application_name", "client_min_messages",
	"idle_in_transaction_session_timeout", "idle_session_timeout",
	"transaction_timeout"
};

/*
 * Settings the worker fixes for its own transactions, whatever the job says.
 * A worker looks for a deadlock sooner than any session does (deadlock_timeout
 * is a second by default): in a deadlock with a user's statement (a DETACH
 * PARTITION that waits for the CREATE INDEX CONCURRENTLY of the partition,
 * which waits for the DETACH's snapshot), the job is the one to give way,
 * and tries again later (job_worker.c), not the user's statement.
 */
static const char *const worker_settings[][2] = {
	{"default_transaction_isolation", "read committed"},
	{"default_transaction_read_only", "off"},
	{"default_transaction_deferrable", "off"},
	{"deadlock_timeout", "10ms"},
};

/* Server settings as the worker had them before connecting (name -> value) */
typedef struct ServerSetting
{
	char		name[NAMEDATALEN * 2];
	char	   *value;
} ServerSetting;

static HTAB *server_settings = NULL;

static bool
IsCapturedSetting(struct config_generic *setting)
{
	if (setting->source != PGC_S_SESSION && setting->source != PGC_S_CLIENT)
		return false;
	if (strncmp(setting->name, BGDDL_EXTENSION_NAME, strlen(BGDDL_EXTENSION_NAME)) == 0)
		return false;
	for (int i = 0; i < lengthof(uncaptured_settings); i++)
	{
		if (pg_strcasecmp(setting->name, uncaptured_settings[i]) == 0)
			return false;
	}
	return true;
}

/*
 * Record the identity and settings of the current session, for a job it
 * submits.  Allocated in the current memory context.
 */
void
JobIdentityCapture(JobIdentity *identity)
{
	struct config_generic **settings = get_guc_variables();
	int			nsettings = GetNumConfigOptions();

	identity->session_user_oid = GetSessionUserId();
	identity->owner_oid = GetUserId();
	identity->settings = NIL;
	for (int i = 0; i < nsettings; i++)
	{
		if (!IsCapturedSetting(settings[i]))
			continue;
		identity->settings = lappend(identity->settings, pstrdup(settings[i]->name));
		identity->settings = lappend(identity->settings,
									 GetConfigOptionByName(settings[i]->name, NULL, false));
	}
}

/*
 * Remember every setting as the postmaster gave it to us (postgresql.conf,
 * command line, defaults), before connecting applies the bootstrap
 * superuser's role settings.  Called once, before the worker connects.
 */
void
JobIdentitySaveServerSettings(void)
{
	struct config_generic **settings = get_guc_variables();
	int			nsettings = GetNumConfigOptions();
	HASHCTL		ctl;

	ctl.keysize = NAMEDATALEN * 2;
	ctl.entrysize = sizeof(ServerSetting);
	ctl.hcxt = TopMemoryContext;
	server_settings = hash_create("background_ddl server settings", nsettings, &ctl,
								  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	for (int i = 0; i < nsettings; i++)
	{
		const char *value = GetConfigOption(settings[i]->name, true, false);
		ServerSetting *entry;
		char		key[NAMEDATALEN * 2] = {0};

		if (value == NULL || strlen(settings[i]->name) >= sizeof(key))
			continue;
		strlcpy(key, settings[i]->name, sizeof(key));
		entry = hash_search(server_settings, key, HASH_ENTER, NULL);
		entry->value = MemoryContextStrdup(TopMemoryContext, value);
	}
}

/* The pg_db_role_setting entries for (database, role), as name=value strings */
static List *
RoleSettings(Relation relsetting, Snapshot snapshot, Oid database_oid, Oid role_oid)
{
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *entries = NIL;

	ScanKeyInit(&keys[0], Anum_pg_db_role_setting_setdatabase, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(database_oid));
	ScanKeyInit(&keys[1], Anum_pg_db_role_setting_setrole, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(role_oid));
	scan = systable_beginscan(relsetting, DbRoleSettingDatidRolidIndexId, true,
							  snapshot, 2, keys);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		config = heap_getattr(tuple, Anum_pg_db_role_setting_setconfig,
										  RelationGetDescr(relsetting), &isnull);
		Datum	   *elems;
		int			nelems;

		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, NULL, &nelems);
		for (int i = 0; i < nelems; i++)
			entries = lappend(entries, TextDatumGetCString(elems[i]));
	}
	systable_endscan(scan);
	return entries;
}

/* The value a name=value list gives the setting, or NULL */
static char *
SettingIn(List *entries, const char *name)
{
	ListCell   *lc;
	char	   *found = NULL;

	foreach(lc, entries)
	{
		char	   *entry_name;
		char	   *entry_value;

		ParseLongOption(lfirst(lc), &entry_name, &entry_value);
		if (entry_value != NULL && pg_strcasecmp(entry_name, name) == 0)
			found = entry_value;
	}
	return found;
}

/*
 * Put in force the settings the submitter's login would have: its own
 * (database-specific first), then the database's and everyone's, for every
 * setting its role names or the bootstrap superuser's role changed.  Caller
 * is in a transaction.
 */
static void
ApplyLoginSettings(Oid role_oid)
{
	Relation	relsetting = table_open(DbRoleSettingRelationId, AccessShareLock);
	Snapshot	snapshot = RegisterSnapshot(GetCatalogSnapshot(DbRoleSettingRelationId));
	List	   *sources[4];
	List	   *names = NIL;
	ListCell   *lc;

	sources[0] = RoleSettings(relsetting, snapshot, MyDatabaseId, role_oid);
	sources[1] = RoleSettings(relsetting, snapshot, InvalidOid, role_oid);
	sources[2] = RoleSettings(relsetting, snapshot, MyDatabaseId, InvalidOid);
	sources[3] = RoleSettings(relsetting, snapshot, InvalidOid, InvalidOid);
	if (role_oid != BOOTSTRAP_SUPERUSERID)
	{
		names = list_concat(RoleSettings(relsetting, snapshot, MyDatabaseId, BOOTSTRAP_SUPERUSERID),
							RoleSettings(relsetting, snapshot, InvalidOid, BOOTSTRAP_SUPERUSERID));
	}
	names = list_concat(names, list_concat_copy(sources[0], sources[1]));
	UnregisterSnapshot(snapshot);
	table_close(relsetting, AccessShareLock);

	foreach(lc, names)
	{
		char	   *name;
		char	   *ignored;
		char	   *value = NULL;

		ParseLongOption(lfirst(lc), &name, &ignored);
		for (int i = 0; i < lengthof(sources) && value == NULL; i++)
			value = SettingIn(sources[i], name);
		if (value == NULL && server_settings != NULL)
		{
			char		key[NAMEDATALEN * 2] = {0};
			ServerSetting *entry;

			strlcpy(key, name, sizeof(key));
			entry = hash_search(server_settings, key, HASH_FIND, NULL);
			if (entry != NULL)
				value = entry->value;
		}

		/*
		 * A setting the server does not know either: a custom one (app.token)
		 * that only the bootstrap superuser's role settings made exist.  It
		 * cannot be made not to exist; it is emptied.
		 */
		(void) set_config_option(name, value != NULL ? value : "", PGC_SUSET,
								 PGC_S_DATABASE_USER, GUC_ACTION_SET, true, WARNING, false);
	}
}

/*
 * Become the submitter's session for the rest of this worker's life.
 * Caller is a background worker connected as the bootstrap superuser, in a
 * transaction.
 */
void
JobIdentityBecome(const JobIdentity *identity, int64 job_id)
{
	HeapTuple	role_tuple;
	char	   *session_user_name;
	GucContext	settings_context;
	ListCell   *lc;

	role_tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(identity->session_user_oid));
	if (!HeapTupleIsValid(role_tuple) ||
		!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(identity->owner_oid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("a role that submitted background DDL job %lld no longer exists",
						(long long) job_id)));
	session_user_name = pstrdup(NameStr(((Form_pg_authid) GETSTRUCT(role_tuple))->rolname));
	ReleaseSysCache(role_tuple);

	/* As its reset value: RESET SESSION AUTHORIZATION keeps it */
	(void) set_config_option("session_authorization", session_user_name,
							 PGC_SUSET, PGC_S_OVERRIDE, GUC_ACTION_SET, true, 0, false);
	Assert(GetSessionUserId() == identity->session_user_oid);

	ApplyLoginSettings(identity->session_user_oid);

	settings_context = superuser_arg(identity->session_user_oid) ? PGC_SUSET : PGC_USERSET;
	for (lc = list_head(identity->settings); lc != NULL;
		 lc = lnext(identity->settings, lnext(identity->settings, lc)))
	{
		const char *name = lfirst(lc);
		const char *value = lfirst(lnext(identity->settings, lc));

		(void) set_config_option(name, value, settings_context, PGC_S_SESSION,
								 GUC_ACTION_SET, true, WARNING, false);
	}
	for (int i = 0; i < lengthof(worker_settings); i++)
		(void) set_config_option(worker_settings[i][0], worker_settings[i][1], PGC_SUSET,
								 PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
}

/*
 * Enter the context of the job's own statements: role (the submit's current
 * user, or a materialized view's owner for REFRESH),
 * SECURITY_RESTRICTED_OPERATION, a GUC nest level of their own, and
 * statement_timeout armed.  Small batches lose with parallel query, one big
 * batch may gain.  Pair with JobQueryLeave in the same transaction; an error
 * unwinds all of it through the transaction's abort (and JobStepAbort for
 * the timeout).
 */
void
JobQueryEnter(Oid role, JobQueryContext *context, bool small_batches)
{
	GetUserIdAndSecContext(&context->saved_userid, &context->saved_sec_context);
	SetUserIdAndSecContext(role,
						   context->saved_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	context->guc_nest_level = NewGUCNestLevel();
	if (small_batches)
		(void) set_config_option("max_parallel_workers_per_gather", "0",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	/* A worker's batch is a statement; a session's statement is armed already */
	context->timeout_armed = IsBackgroundWorker && StatementTimeout > 0;
	if (context->timeout_armed)
		enable_timeout_after(STATEMENT_TIMEOUT, StatementTimeout);
}

void
JobQueryLeave(JobQueryContext *context)
{
	if (context->timeout_armed)
		disable_timeout(STATEMENT_TIMEOUT, false);
	AtEOXact_GUC(false, context->guc_nest_level);
	SetUserIdAndSecContext(context->saved_userid, context->saved_sec_context);
}
