/*-------------------------------------------------------------------------
 *
 * citus_nodes.c
 *	  The nodes of a Citus cluster as a job's worker talks to them: where a
 *	  distributed table's shard placements are, and a libpq connection to a
 *	  node, as the job's role.
 *
 * Citus is found by name at run time (pg_citus.c); its catalogs are read
 * with SQL, never through its C API.  A connection goes to the node that
 * pg_dist_node names, to the job's database, as the job's role, with the
 * options of citus.node_conninfo (as Citus's own connections): the node's
 * pg_hba.conf (or a .pgpass, or a certificate) must let that role in, as
 * it must for Citus.  It is never another role than the job's, so it gives
 * the role nothing on a node that Citus does not give it already.
 *
 * Each statement is short (submitting a job, reading its row), never a
 * build, and has a statement_timeout on the node.  A connection and a
 * statement never block the worker: they wait on the socket and the
 * worker's latch together, as postgres_fdw does, and serve interrupts
 * meanwhile, so that a cancel, a pause or a shutdown is not held up by a
 * node that does not answer.  A connection counts as an open file of the
 * worker (AcquireExternalFD).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "citus/citus_nodes.h"
#include "pg/pg_compat.h"

#define NODE_CONNECT_TIMEOUT_S	10
#define NODE_STATEMENT_TIMEOUT_MS	60000

/* A column of the current SPI result row, as text (NULL if null) */
static char *
SpiText(uint64 row, int column)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, column);
}

/*
 * The shard placements of a distributed or reference table, by shard and
 * node, in the caller's memory context.  Caller is in a transaction.
 */
List *
CitusNodesPlacements(Oid relid)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[] = {OIDOID};
	Datum		values[] = {ObjectIdGetDatum(relid)};
	List	   *placements = NIL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT s.shardid, n.nodename, n.nodeport, n.groupid "
							  "FROM pg_catalog.pg_dist_shard s "
							  "JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid "
							  "JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid "
							  "AND n.noderole = 'primary' "
							  "WHERE s.logicalrelid = $1 ORDER BY s.shardid, n.groupid",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the shard placements of \"%s\"", get_rel_name(relid));
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);
		CitusPlacement *placement = palloc0(sizeof(CitusPlacement));

		placement->shard_id = strtoll(SpiText(row, 1), NULL, 10);
		placement->node.name = pstrdup(SpiText(row, 2));
		placement->node.port = atoi(SpiText(row, 3));
		placement->node.group_id = atoi(SpiText(row, 4));
		placements = lappend(placements, placement);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return placements;
}

/*
 * The nodes other than the coordinator that hold Citus's metadata (and the
 * shell tables), active.  Caller is in a transaction.
 */
List *
CitusNodesWithMetadata(void)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *nodes = NIL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT nodename, nodeport, groupid FROM pg_catalog.pg_dist_node "
					"WHERE hasmetadata AND isactive AND noderole = 'primary' AND groupid <> 0 "
					"ORDER BY groupid", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the nodes of the Citus cluster");
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);
		CitusNode  *node = palloc0(sizeof(CitusNode));

		node->name = pstrdup(SpiText(row, 1));
		node->port = atoi(SpiText(row, 2));
		node->group_id = atoi(SpiText(row, 3));
		nodes = lappend(nodes, node);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return nodes;
}

static bool ConnectPolled(PGconn *conn);

/* A node's notices (a job submitted there, say) are not the worker's to log */
static void
IgnoreNotice(void *arg, const char *message)
{
}

/* Append a conninfo keyword and its value, quoted as libpq reads it */
static void
AppendConnOption(StringInfo conninfo, const char *keyword, const char *value)
{
	appendStringInfo(conninfo, " %s='", keyword);
	for (const char *c = value; *c != '\0'; c++)
	{
		if (*c == '\'' || *c == '\\')
			appendStringInfoChar(conninfo, '\\');
		appendStringInfoChar(conninfo, *c);
	}
	appendStringInfoChar(conninfo, '\'');
}

/*
 * The connection to a node's database as role (made now if there is none,
 * or the last one broke); NULL if the node cannot be reached, with *error
 * saying why.  Needs no transaction.
 */
PGconn *
CitusNodeConnect(CitusNode *node, const char *database, const char *role,
				 const char *application_name, char **error)
{
	const char *node_conninfo = GetConfigOption("citus.node_conninfo", true, false);
	StringInfoData conninfo;
	char		port[16];
	char		timeout[16];
	volatile bool connected;

	*error = NULL;
	if (node->conn != NULL && PQstatus(node->conn) == CONNECTION_OK)
		return node->conn;
	CitusNodeDisconnect(node);

	initStringInfo(&conninfo);
	appendStringInfoString(&conninfo, node_conninfo != NULL ? node_conninfo : "");
	snprintf(port, sizeof(port), "%d", node->port);
	snprintf(timeout, sizeof(timeout), "%d", NODE_CONNECT_TIMEOUT_S);
	AppendConnOption(&conninfo, "host", node->name);
	AppendConnOption(&conninfo, "port", port);
	AppendConnOption(&conninfo, "dbname", database);
	AppendConnOption(&conninfo, "user", role);
	AppendConnOption(&conninfo, "application_name", application_name);
	AppendConnOption(&conninfo, "connect_timeout", timeout);
	AppendConnOption(&conninfo, "options",
					 psprintf("-c statement_timeout=%d", NODE_STATEMENT_TIMEOUT_MS));
	if (!AcquireExternalFD())
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to Citus node %s", CitusNodeName(node)),
				 errdetail("There are too many open files on the local server."),
				 errhint("Raise the server's max_files_per_process setting.")));
	node->conn = PQconnectStart(conninfo.data);
	if (node->conn == NULL)
	{
		ReleaseExternalFD();
		*error = pstrdup("out of memory");
		return NULL;
	}
	PG_TRY();
	{
		connected = ConnectPolled(node->conn);
	}
	PG_CATCH();
	{
		CitusNodeDisconnect(node);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!connected)
	{
		*error = pstrdup(PQerrorMessage(node->conn));
		(*error)[strcspn(*error, "\n")] = '\0';	/* libpq's ends with a newline */
		if ((*error)[0] == '\0')
			*error = psprintf("timeout expired after %d s", NODE_CONNECT_TIMEOUT_S);
		CitusNodeDisconnect(node);
		return NULL;
	}
	PQsetNoticeProcessor(node->conn, IgnoreNotice, NULL);
	return node->conn;
}

void
CitusNodeDisconnect(CitusNode *node)
{
	if (node->conn != NULL)
	{
		PQfinish(node->conn);
		ReleaseExternalFD();
	}
	node->conn = NULL;
}

/*
 * Wait until the connection's socket is ready (for reading, or writing),
 * the worker's latch is set, or timeout_ms (-1: none) passes, serving
 * interrupts
 */
static void
WaitForSocket(PGconn *conn, bool for_writing, long timeout_ms)
{
	int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
		(for_writing ? WL_SOCKET_WRITEABLE : WL_SOCKET_READABLE) |
		(timeout_ms >= 0 ? WL_TIMEOUT : 0);

	(void) WaitLatchOrSocket(MyLatch, events, PQsocket(conn), timeout_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Drive PQconnectPoll to its end, for at most NODE_CONNECT_TIMEOUT_S (libpq
 * applies connect_timeout only where it blocks); false if it failed.  An
 * interrupt closes the connection (the caller's node->conn) on its way out.
 */
static bool
ConnectPolled(PGconn *conn)
{
	TimestampTz give_up_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 NODE_CONNECT_TIMEOUT_S * 1000);
	PostgresPollingStatusType status = PGRES_POLLING_WRITING;

	if (PQstatus(conn) == CONNECTION_BAD)
		return false;
	while (status != PGRES_POLLING_OK && status != PGRES_POLLING_FAILED)
	{
		long		left_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), give_up_at);

		if (left_ms <= 0)
			return false;
		WaitForSocket(conn, status == PGRES_POLLING_WRITING, left_ms);
		status = PQconnectPoll(conn);
	}
	return status == PGRES_POLLING_OK;
}

/*
 * Send a statement and wait for its last result, serving interrupts; NULL
 * if the connection failed
 */
static PGresult *
ExecPolled(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	PGresult   *last = NULL;
	PGresult   *next;

	if (!PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0))
		return NULL;
	for (;;)
	{
		while (PQisBusy(conn))
		{
			WaitForSocket(conn, false, -1);
			if (!PQconsumeInput(conn))
			{
				PQclear(last);
				return NULL;
			}
		}
		next = PQgetResult(conn);
		if (next == NULL)
			return last;
		PQclear(last);
		last = next;
	}
}

/* "host:port", for messages */
char *
CitusNodeName(const CitusNode *node)
{
	return psprintf("%s:%d", node->name, node->port);
}

/*
 * Run a statement on a node: its result (the caller clears it), or NULL:
 * with *refusal the node's error (the caller clears it), or without it the
 * connection failed (it is closed).
 */
static PGresult *
NodeExec(CitusNode *node, const char *sql, int nparams, const char *const *params,
		 PGresult **refusal)
{
	PGresult   *volatile result = NULL;
	ExecStatusType status;

	/* Interrupted mid-statement: the connection is in no state to reuse */
	PG_TRY();
	{
		result = ExecPolled(node->conn, sql, nparams, params);
	}
	PG_CATCH();
	{
		CitusNodeDisconnect(node);
		PG_RE_THROW();
	}
	PG_END_TRY();
	status = PQresultStatus(result);

	*refusal = NULL;
	if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)
		return result;
	if (PQstatus(node->conn) != CONNECTION_OK ||
		PQresultErrorField(result, PG_DIAG_SQLSTATE) == NULL)
	{
		PQclear(result);
		CitusNodeDisconnect(node);
		return NULL;
	}
	*refusal = result;
	return NULL;
}

/*
 * Run a statement on a node; NULL if the connection failed (*lost says so,
 * and the caller waits for the node), else the result, which the caller
 * clears.  A statement that the node refuses is an error here, with the
 * node's SQLSTATE, message, detail and hint, and where it came from.
 */
PGresult *
CitusNodeExec(CitusNode *node, const char *sql, int nparams, const char *const *params,
			  bool *lost)
{
	PGresult   *refusal;
	PGresult   *result = NodeExec(node, sql, nparams, params, &refusal);
	char	   *fields[4];
	const int	codes[4] = {PG_DIAG_SQLSTATE, PG_DIAG_MESSAGE_PRIMARY,
		PG_DIAG_MESSAGE_DETAIL, PG_DIAG_MESSAGE_HINT};

	*lost = result == NULL && refusal == NULL;
	if (refusal == NULL)
		return result;
	/* libpq's memory is not freed by an error: copy what it says first */
	for (int i = 0; i < 4; i++)
		fields[i] = PQresultErrorField(refusal, codes[i]) ?
			pstrdup(PQresultErrorField(refusal, codes[i])) : NULL;
	PQclear(refusal);
	ereport(ERROR,
			(errcode(PgSqlstateCode(fields[0])),
			 errmsg("%s", fields[1] ? fields[1] : "the statement failed"),
			 fields[2] ? errdetail("%s", fields[2]) : 0,
			 fields[3] ? errhint("%s", fields[3]) : 0,
			 errcontext("on Citus node %s", CitusNodeName(node))));
	return NULL;				/* keep compiler quiet */
}

/*
 * Run a statement on a node, for what must go on if the node refuses it
 * or is lost: the result (the caller clears it), or NULL with *error
 * saying why (a sentence, for an errdetail).
 */
PGresult *
CitusNodeTryExec(CitusNode *node, const char *sql, int nparams, const char *const *params,
				 char **error)
{
	PGresult   *refusal;
	PGresult   *result = NodeExec(node, sql, nparams, params, &refusal);

	*error = NULL;
	if (result != NULL)
		return result;
	if (refusal == NULL)
		*error = psprintf("The connection to Citus node %s was lost.", CitusNodeName(node));
	else
	{
		*error = psprintf("Citus node %s refused it: %s", CitusNodeName(node),
						  PQresultErrorField(refusal, PG_DIAG_MESSAGE_PRIMARY));
		PQclear(refusal);
	}
	return NULL;
}
