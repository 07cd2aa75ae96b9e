/*-------------------------------------------------------------------------
 *
 * catalog_replication.c
 *	  Nothing of ours is sent or applied by logical replication.
 *
 * PostgreSQL 15 puts every permanent table into a FOR ALL TABLES
 * publication, the extension's catalog tables and the relations its jobs
 * create among them, with no way to leave one out.  Left alone, a
 * subscriber would receive the publisher's jobs and chunks (and fail on
 * duplicate keys against its own), and changes of relations it does not
 * have (background_ddl.ctas_N), which stop its subscription.  So:
 *
 *	- on the publisher, the row changes of our relations are not decoded:
 *	  they carry the mark of a transient heap (pg_relation.c:
 *	  PgRelationSetDecoded), the catalog tables from CREATE EXTENSION on,
 *	  a job's hidden and staging relations from their creation; a relation
 *	  that becomes the user's (the table of a CREATE TABLE AS) loses it in
 *	  the cut-over;
 *	- the catalog tables without a primary key have REPLICA IDENTITY FULL,
 *	  so that the executor lets us delete from them under a publication
 *	  that publishes deletes;
 *	- on a subscriber, the initial copy of a table (CREATE SUBSCRIPTION,
 *	  ALTER SUBSCRIPTION ... REFRESH PUBLICATION) would still copy the
 *	  publisher's catalog rows: a trigger that fires only in replica mode
 *	  (ENABLE REPLICA, so it costs nothing in other sessions) drops every
 *	  row that a logical replication worker writes into them.
 *
 * What is left (the README says so): while a job runs, its hidden or
 * staging relation is listed in pg_publication_tables, so a CREATE
 * SUBSCRIPTION or REFRESH PUBLICATION at that moment fails on a relation
 * the subscriber does not have; and a relation's mark is not kept by
 * pg_upgrade (CREATE EXTENSION sets it; pg_upgrade does not run it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "replication/logicalworker.h"

#include "pg/pg_relation.h"

PG_FUNCTION_INFO_V1(skip_replicated_row);
PG_FUNCTION_INFO_V1(hide_from_decoding);

/*
 * BEFORE ROW trigger of the catalog tables (ENABLE REPLICA): a row that a
 * logical replication worker copies or applies into them is dropped.  Kept:
 * the rows of any other session (one with session_replication_role =
 * replica), and the rows that our own code writes in a replication worker
 * (a capture trigger fired by the apply of a user's table), which it writes
 * in the catalog's security context (catalog_access.c).
 */
Datum
skip_replicated_row(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("skip_replicated_row() must be called as a BEFORE ROW trigger")));
	if (IsLogicalWorker() &&
		!(GetUserId() == BOOTSTRAP_SUPERUSERID && InSecurityRestrictedOperation()))
		return PointerGetDatum(NULL);
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		return PointerGetDatum(trigdata->tg_newtuple);
	return PointerGetDatum(trigdata->tg_trigtuple);
}

/* Keep a relation's changes out of logical decoding (the extension script) */
Datum
hide_from_decoding(PG_FUNCTION_ARGS)
{
	if (!creating_extension)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("hide_from_decoding() is only for the extension's script")));
	PgRelationSetDecoded(PG_GETARG_OID(0), false);
	PG_RETURN_VOID();
}
