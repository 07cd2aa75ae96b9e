/*-------------------------------------------------------------------------
 *
 * pg_bgddl.c
 *	  Command-line client of background_ddl: submit long DDL as background
 *	  jobs, list and watch them, wait for them, cancel, pause and resume.
 *
 * It is a PostgreSQL client program like vacuumdb or pg_dump, built on
 * PostgreSQL's frontend libraries (libpgfeutils, libpgcommon): it connects
 * like them (-d dbname or a connection string, -h, -p, -U, -W and -w for
 * the password prompt, the PG* environment variables, .pgpass), logs as
 * they do (pg_logging: "pg_bgddl: error: ...", PG_COLOR), and splits the
 * statements of a file (submit -f) with psql's own lexer.  It runs only the
 * extension's SQL interface: SET background_ddl = on and the statement for
 * submit, pg_stat_background_ddl for list and watch, cancel_ddl, pause_ddl
 * and resume_ddl, and with -v ddl_messages for the messages of ended jobs.
 * Any role may use it: it needs no privilege beyond those the extension
 * grants to PUBLIC.
 *
 * Like PostgreSQL's own client programs it runs its queries with an empty
 * search_path, and it names every object of the extension by the schema the
 * extension is installed in (found in pg_extension), so that a role that
 * can create objects in a schema of the user's search_path cannot stand in
 * for them.  Only the statements given to submit run with the user's
 * search_path.  Whether the library was preloaded is found by calling one
 * of its C functions (last_ddl_job), which fails when it was not.
 *
 * Everything that came from the server is printed through Printable: a
 * role can put any byte into the name of the object a job builds, into the
 * errors and messages its statements raise, and into a NOTIFY payload, and
 * raw control characters would let it clear the screen of whoever runs
 * pg_bgddl or fake lines of its output.
 *
 * wait and watch LISTEN on the background_ddl channel, where the extension
 * sends '<id> <state>' at every state change, and look again at the view
 * when notified (and every few seconds in any case).  Any role may NOTIFY
 * on that channel, so a notification is only a hint to look again: the
 * view is the truth, and a payload of another shape is ignored.
 *
 * Exit codes: see the EXIT_* constants and --help.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "common/logging.h"
#include "common/string.h"
#include "fe_utils/connect_utils.h"
#include "fe_utils/psqlscan.h"
#include "libpq-fe.h"
#include "pqexpbuffer.h"

#define PG_BGDDL_VERSION "1.0"

#define EXIT_OK				0	/* done; for wait: every job succeeded */
#define EXIT_JOB_FAILED		1	/* a job failed (its error is printed) */
#define EXIT_JOB_CANCELLED	2	/* a job was cancelled (and none failed) */
#define EXIT_USAGE			3	/* bad usage, or no connection to the server */
#define EXIT_REJECTED		4	/* the server refused the statement or the command */
#define EXIT_NO_SUCH_JOB	5	/* an id that no job has, in this database */
#define EXIT_NOT_INSTALLED	6	/* the extension is not installed in this database */
#define EXIT_NOT_PRELOADED	7	/* the library is not in shared_preload_libraries */

/* Seconds between looks at the view when no notification comes */
#define POLL_SECONDS_WAIT	10
#define POLL_SECONDS_WATCH	1

/* How many of a job's messages ddl_messages returns (job_messages.c) */
#define JOB_MESSAGES_KEPT	100

/* What _PG_init says when the library is loaded other than at server start */
#define NOT_PRELOADED_ERROR	"must be loaded via shared_preload_libraries"

static const char *progname = "pg_bgddl";
static bool quiet = false;
static bool verbose = false;
static enum trivalue prompt_password = TRI_DEFAULT;	/* -W: TRI_YES, -w: TRI_NO */

/*
 * The connection's client encoding, for Printable; until there is a
 * connection (the text is then the user's own), UTF-8.
 */
static int	client_encoding = -1;
static bool client_encoding_utf8 = true;

/* The extension's schema, quoted, to qualify its objects with */
static char *extension_schema = NULL;

/* The user's search_path, for the statements of submit alone */
static char *user_search_path = NULL;

/* The states of a job, as the extension names them in the view and in NOTIFY */
static const char *const job_states[] = {
	"queued", "running", "paused", "cancelling", "succeeded", "failed", "cancelled"
};


#define UNENDED_JOBS "state NOT IN ('succeeded', 'failed', 'cancelled')"

/*
 * One job as pg_stat_background_ddl shows it.  Every text field is as
 * Printable made it, never as the server sent it.
 */
typedef struct Job
{
	long long	id;
	char	   *kind;
	char	   *target;
	char	   *state;
	char	   *phase;
	double		progress;
	long long	rows_done;
	double		rate;
	char	   *eta;
	char	   *error;
	char	   *error_detail;
	char	   *error_hint;
	char	   *waiting_on;
	long long	messages;		/* how many its statements raised */
	long long	chain;			/* the first job of its chain (its own id if none) */
	int			chain_position;
} Job;

/* The columns of JOB_QUERY, in its order */
typedef enum JobColumn
{
	JOB_ID,
	JOB_KIND,
	JOB_TARGET,
	JOB_STATE,
	JOB_PHASE,
	JOB_PROGRESS,
	JOB_ROWS_DONE,
	JOB_RATE,
	JOB_ETA,
	JOB_ERROR,
	JOB_ERROR_DETAIL,
	JOB_ERROR_HINT,
	JOB_WAITING_ON,
	JOB_MESSAGES,
	JOB_CHAIN,
	JOB_CHAIN_POSITION
} JobColumn;

/* Jobs from the view; its schema (the extension's) is the one %s */
#define JOB_QUERY \
	"SELECT id, kind, target, state, coalesce(phase, ''), coalesce(progress, 0), " \
	"coalesce(rows_done, 0), coalesce(rate, 0), coalesce(to_char(eta, 'HH24:MI:SS'), ''), " \
	"coalesce(error, ''), coalesce(error_detail, ''), coalesce(error_hint, ''), " \
	"coalesce(waiting_on, ''), coalesce(messages, 0), chain, chain_position " \
	"FROM %s.pg_stat_background_ddl "

static void fail(int code, const char *format,...)
			pg_attribute_printf(2, 3) pg_attribute_noreturn();

/*
 * The length of the valid UTF-8 character at text, and its code point; 0
 * if the bytes there are not one (a stray continuation byte, an overlong
 * form, a surrogate, or a sequence cut short by the string's end).
 */
static int
Utf8CharLength(const unsigned char *text, unsigned int *code)
{
	int			length;

	/* the lead byte says how many continuation bytes follow */
	if (text[0] < 0x80)
		length = 1;
	else if (text[0] >= 0xc2 && text[0] <= 0xdf)
		length = 2;
	else if ((text[0] & 0xf0) == 0xe0)
		length = 3;
	else if (text[0] >= 0xf0 && text[0] <= 0xf4)
		length = 4;
	else
		return 0;
	*code = length == 1 ? text[0] : text[0] & (0x7f >> length);
	for (int i = 1; i < length; i++)
	{
		/* the terminating zero byte is no continuation byte either */
		if ((text[i] & 0xc0) != 0x80)
			return 0;
		*code = (*code << 6) | (text[i] & 0x3f);
	}
	if ((length == 3 && *code < 0x800) || (*code >= 0xd800 && *code <= 0xdfff) ||
		(length == 4 && (*code < 0x10000 || *code > 0x10ffff)))
		return 0;
	return length;
}

/*
 * Text from the server made safe to print, the way psql shows such
 * characters in its output: newline as \n, carriage return as \r, tab as
 * \t, any other control byte (below 0x20, and 0x7f) as \xHH.  A multibyte
 * character is kept as it is if it is valid in the client encoding and no
 * control character; a C1 control in UTF-8 becomes \uHHHH, as in psql.
 * SQL_ASCII text is taken as UTF-8 (which it usually is) and a byte that is
 * not part of a valid UTF-8 character becomes \xHH; in the other
 * single-byte encodings, the bytes 0x80 to 0x9f, the C1 controls of the
 * ISO 8859 encodings that some terminals obey, also become \xHH.
 *
 * Returns a pg_malloc'd string (an empty one for NULL).
 */
static char *
Printable(const char *text)
{
	const unsigned char *from = (const unsigned char *) (text ? text : "");
	/* the longest escape, \xHH, is four bytes in place of one */
	char	   *printable = pg_malloc(strlen((const char *) from) * 4 + 1);
	char	   *to = printable;

	while (*from != '\0')
	{
		unsigned int code;
		int			length;

		if (*from == '\n' || *from == '\r' || *from == '\t')
		{
			*to++ = '\\';
			*to++ = *from == '\n' ? 'n' : *from == '\r' ? 'r' : 't';
			from++;
			continue;
		}
		if (*from < 0x20 || *from == 0x7f)
		{
			to += sprintf(to, "\\x%02X", *from++);
			continue;
		}
		if (client_encoding_utf8)
		{
			length = Utf8CharLength(from, &code);
			if (length == 0)
				to += sprintf(to, "\\x%02X", *from++);
			else if (code >= 0x80 && code <= 0x9f)
			{
				to += sprintf(to, "\\u%04X", code);
				from += length;
			}
			else
			{
				memcpy(to, from, length);
				to += length;
				from += length;
			}
			continue;
		}
		length = PQmblenBounded((const char *) from, client_encoding);
		if (length <= 1)
		{
			if (*from >= 0x80 && *from <= 0x9f)
				to += sprintf(to, "\\x%02X", *from++);
			else
				*to++ = *from++;
			continue;
		}
		/* the server checks its text, but a control byte inside stays escaped */
		for (int i = 1; i < length; i++)
			if (from[i] < 0x20 || from[i] == 0x7f)
				length = 0;
		if (length == 0)
			to += sprintf(to, "\\x%02X", *from++);
		else
		{
			memcpy(to, from, length);
			to += length;
			from += length;
		}
	}
	*to = '\0';
	return printable;
}

/*
 * Print the error on one line and exit.  The message may hold text from the
 * server or from libpq, which quotes the server: escaped with Printable
 * (libpq's trailing newline dropped first).
 */
static void
fail(int code, const char *format,...)
{
	va_list		args;
	char		message[4096];
	size_t		length;

	va_start(args, format);
	vsnprintf(message, sizeof(message), format, args);
	va_end(args);
	length = strlen(message);
	while (length > 0 && message[length - 1] == '\n')
		message[--length] = '\0';
	pg_log_error("%s", Printable(message));
	exit(code);
}

/*
 * A message from the server as psql shows it: "SEVERITY:  message", then
 * DETAIL and HINT lines; each part escaped.  prefix goes before the first
 * line (which job raised it).
 */
static void
PrintServerMessage(const char *prefix, const char *severity, const char *message,
				   const char *detail, const char *hint)
{
	char	   *printable_severity = Printable(severity);
	char	   *printable_message = Printable(message);

	fprintf(stderr, "%s%s:  %s\n", prefix, printable_severity, printable_message);
	free(printable_severity);
	free(printable_message);
	if (detail != NULL && detail[0] != '\0')
	{
		char	   *printable_detail = Printable(detail);

		fprintf(stderr, "DETAIL:  %s\n", printable_detail);
		free(printable_detail);
	}
	if (hint != NULL && hint[0] != '\0')
	{
		char	   *printable_hint = Printable(hint);

		fprintf(stderr, "HINT:  %s\n", printable_hint);
		free(printable_hint);
	}
}

static void
usage(void)
{
	printf("%s runs long DDL as background_ddl jobs and follows them.\n\n", progname);
	printf("Usage:\n");
	printf("  %s [OPTION]... submit [--wait] \"SQL\"   submit; prints each job's id\n", progname);
	printf("  %s [OPTION]... submit [--wait] -f FILE  submit the statements of a file as one\n"
		   "                                          chain: each job after the one before\n", progname);
	printf("  %s [OPTION]... submit [--wait] --atomic -f FILE\n"
		   "                                          submit them in one transaction, as one\n"
		   "                                          group: built side by side, published\n"
		   "                                          together in one transaction\n", progname);
	printf("  %s [OPTION]... list [--all]             jobs not yet ended (--all: every job)\n", progname);
	printf("  %s [OPTION]... watch [ID]...            live progress until the jobs end\n", progname);
	printf("  %s [OPTION]... wait ID...               block until the jobs end\n", progname);
	printf("  %s [OPTION]... cancel|pause|resume ID\n", progname);
	printf("  %s [OPTION]... complete ID              publish a job whose cut-over waits\n"
		   "                                          (manual, a window, a write limit) and\n"
		   "                                          wait until it has ended\n", progname);
	printf("  %s [OPTION]... show ID                  every column of the job: its progress,\n"
		   "                                          limits, cut-over and what it cost\n", progname);
	printf("\nConnection options:\n");
	printf("  -d, --dbname=DBNAME      database name or connection string\n");
	printf("  -h, --host=HOSTNAME      database server host or socket directory\n");
	printf("  -p, --port=PORT          database server port\n");
	printf("  -U, --username=USERNAME  user name to connect as\n");
	printf("  -w, --no-password        never prompt for password\n");
	printf("  -W, --password           force password prompt\n");
	printf("\nOther options:\n");
	printf("  -q, --quiet              print nothing but errors (and job ids from submit)\n");
	printf("  -v, --verbose            print what is being done; for wait and watch, also the\n");
	printf("                           messages (INFO, NOTICE, WARNING) each ended job's\n");
	printf("                           statements raised, and notifications ignored\n");
	printf("  -V, --version            output version information, then exit\n");
	printf("  -?, --help               show this help, then exit\n");
	printf("\nControl characters in what the server sends (names, errors, messages) are shown\n");
	printf("escaped, as \\n, \\r, \\t or \\xHH.\n");
	printf("\nExit status: 0 done (wait: every job succeeded), 1 a job failed, 2 a job was cancelled,\n");
	printf("3 usage or connection error, 4 statement or command refused by the server, 5 no such job,\n");
	printf("6 extension not installed in the database, 7 library not in shared_preload_libraries.\n");
}

/*
 * Run a statement built from format (its %s stand for the arguments, in
 * practice the extension's schema) and return the result, also when the
 * server raised an error; only a lost connection is fatal.
 */
static PGresult *TryQueryV(PGconn *conn, int nparams, const char *const *params, const char *format,
							va_list args)
			pg_attribute_printf(4, 0);

static PGresult *
TryQueryV(PGconn *conn, int nparams, const char *const *params, const char *format, va_list args)
{
	char		sql[2048];
	PGresult   *result;

	vsnprintf(sql, sizeof(sql), format, args);
	result = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(result) != PGRES_TUPLES_OK && PQresultStatus(result) != PGRES_COMMAND_OK &&
		PQresultErrorField(result, PG_DIAG_SQLSTATE) == NULL)
		fail(EXIT_USAGE, "lost the connection: %s", PQerrorMessage(conn));
	return result;
}

static PGresult *TryQuery(PGconn *conn, int nparams, const char *const *params, const char *format,...)
			pg_attribute_printf(4, 5);

static PGresult *
TryQuery(PGconn *conn, int nparams, const char *const *params, const char *format,...)
{
	va_list		args;
	PGresult   *result;

	va_start(args, format);
	result = TryQueryV(conn, nparams, params, format, args);
	va_end(args);
	return result;
}

static PGresult *Query(PGconn *conn, int error_code, int nparams, const char *const *params,
					   const char *format,...)
			pg_attribute_printf(5, 6);

/* As TryQuery, but an error is fatal, with the given exit code */
static PGresult *
Query(PGconn *conn, int error_code, int nparams, const char *const *params, const char *format,...)
{
	va_list		args;
	PGresult   *result;

	va_start(args, format);
	result = TryQueryV(conn, nparams, params, format, args);
	va_end(args);
	if (PQresultStatus(result) != PGRES_TUPLES_OK && PQresultStatus(result) != PGRES_COMMAND_OK)
		fail(error_code, "%s", PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY));
	return result;
}

static void
SetSearchPath(PGconn *conn, const char *search_path)
{
	const char *params[] = {search_path};

	PQclear(Query(conn, EXIT_USAGE, 1, params,
				  "SELECT pg_catalog.set_config('search_path', $1, false)"));
}

/* Job ids announced by the submit NOTICEs */
static char **submitted_ids;
static int	nsubmitted;

/*
 * The server's source file of the submit NOTICE.  Any role's function can
 * raise a NOTICE with the same text, but only C code sets the source file
 * that the server reports (PL/pgSQL's RAISE reports its own).
 */
#define SUBMIT_NOTICE_SOURCE_FILE	"session_submit.c"

/*
 * The notices of the session: the submit NOTICE of each job is collected,
 * any other notice printed (escaped) unless -q.  Installed for the whole
 * connection, as libpq's default would print the text raw.
 */
static void
ReceiveNotice(void *arg, const PGresult *result)
{
	const char *message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
	const char *source_file = PQresultErrorField(result, PG_DIAG_SOURCE_FILE);
	long long	id;
	int			end = 0;

	if (message != NULL && source_file != NULL &&
		strcmp(source_file, SUBMIT_NOTICE_SOURCE_FILE) == 0 &&
		sscanf(message, "background DDL job %lld submitted for %n", &id, &end) == 1 && end > 0)
	{
		submitted_ids = pg_realloc(submitted_ids, sizeof(char *) * (nsubmitted + 1));
		submitted_ids[nsubmitted] = pg_malloc(32);
		snprintf(submitted_ids[nsubmitted++], 32, "%lld", id);
	}
	else if (!quiet)
		PrintServerMessage("", PQresultErrorField(result, PG_DIAG_SEVERITY), message,
						   PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL),
						   PQresultErrorField(result, PG_DIAG_MESSAGE_HINT));
}

/*
 * Connect with the options given (NULL: libpq's default) and check that the
 * library is preloaded and the extension installed in the database.  On
 * return the session's search_path is empty (the user's is kept in
 * user_search_path) and extension_schema is set.
 */
static PGconn *
Connect(const char *dbname, const char *host, const char *port, const char *user)
{
	const char *keywords[] = {"host", "port", "user", "password", "dbname",
	"fallback_application_name", NULL};
	const char *values[] = {host, port, user, NULL, dbname, progname, NULL};
	char	   *password = prompt_password == TRI_YES ? simple_prompt("Password: ", false) : NULL;
	PGconn	   *conn;
	PGresult   *result;
	const char *encoding;
	const char *schema;

	/*
	 * As connectDatabase (fe_utils) connects, prompting for a password when
	 * the server asks for one and -w does not forbid it; its own failure
	 * exit status (1) would say "a job failed" here, so the loop is ours.
	 */
	for (;;)
	{
		values[3] = password;
		conn = PQconnectdbParams(keywords, values, true);
		if (PQstatus(conn) == CONNECTION_BAD && PQconnectionNeedsPassword(conn) &&
			password == NULL && prompt_password != TRI_NO)
		{
			PQfinish(conn);
			password = simple_prompt("Password: ", false);
			continue;
		}
		break;
	}
	if (password != NULL)
		free(password);
	if (PQstatus(conn) != CONNECTION_OK)
		fail(EXIT_USAGE, "could not connect: %s", PQerrorMessage(conn));
	client_encoding = PQclientEncoding(conn);
	encoding = PQparameterStatus(conn, "client_encoding");
	client_encoding_utf8 = encoding != NULL &&
		(strcmp(encoding, "UTF8") == 0 || strcmp(encoding, "SQL_ASCII") == 0);
	PQsetNoticeReceiver(conn, ReceiveNotice, NULL);

	/*
	 * With an empty search_path (as pg_dump and vacuumdb run since
	 * CVE-2018-1058), a name the client's queries do not qualify resolves in
	 * pg_catalog only, whatever a role created in the user's schemas.
	 */
	result = Query(conn, EXIT_USAGE, 0, NULL,
				   "SELECT pg_catalog.current_setting('search_path'), "
				   "pg_catalog.set_config('search_path', '', false)");
	user_search_path = pg_strdup(PQgetvalue(result, 0, 0));
	PQclear(result);

	result = Query(conn, EXIT_USAGE, 0, NULL,
				   "SELECT n.nspname FROM pg_extension e "
				   "JOIN pg_namespace n ON n.oid = e.extnamespace "
				   "WHERE e.extname = 'background_ddl'");
	if (PQntuples(result) == 0)
	{
		PQclear(result);

		/*
		 * Which of the two to fix first: a preloaded library defines its
		 * settings in every backend, and pg_settings (readable by any role)
		 * does not show a mere placeholder that a postgresql.conf line of a
		 * library not loaded makes.
		 */
		result = Query(conn, EXIT_USAGE, 0, NULL,
					   "SELECT EXISTS (SELECT FROM pg_settings "
					   "WHERE name = 'background_ddl.max_workers')");
		if (strcmp(PQgetvalue(result, 0, 0), "t") != 0)
			fail(EXIT_NOT_PRELOADED,
				 "background_ddl is not in shared_preload_libraries of the server (add it and restart)");
		fail(EXIT_NOT_INSTALLED,
			 "extension background_ddl is not installed in database \"%s\" (CREATE EXTENSION background_ddl)",
			 PQdb(conn));
	}
	schema = PQgetvalue(result, 0, 0);
	extension_schema = PQescapeIdentifier(conn, schema, strlen(schema));
	if (extension_schema == NULL)
		fail(EXIT_USAGE, "%s", PQerrorMessage(conn));
	PQclear(result);

	/*
	 * A C function of the extension loads the library in this backend if
	 * the server did not preload it, and its _PG_init then refuses.  (Reading
	 * shared_preload_libraries instead would need pg_read_all_settings.)
	 */
	result = TryQuery(conn, 0, NULL, "SELECT %s.last_ddl_job()", extension_schema);
	if (PQresultStatus(result) != PGRES_TUPLES_OK)
	{
		const char *message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);

		if (message != NULL && strstr(message, NOT_PRELOADED_ERROR) != NULL)
			fail(EXIT_NOT_PRELOADED,
				 "background_ddl is not in shared_preload_libraries of the server (add it and restart)");
		fail(EXIT_USAGE, "%s", message);
	}
	PQclear(result);
	if (verbose)
	{
		char	   *database = Printable(PQdb(conn));

		fprintf(stderr, "%s: connected to database \"%s\"\n", progname, database);
		free(database);
	}
	return conn;
}

/* A text column, escaped; "" for NULL */
static char *
PrintableField(PGresult *result, int row, int column)
{
	return Printable(PQgetisnull(result, row, column) ? "" : PQgetvalue(result, row, column));
}

/* Read jobs (the rows of a JOB_QUERY result) */
static Job *
ReadJobs(PGresult *result, int *njobs)
{
	Job		   *jobs = pg_malloc0((PQntuples(result) + 1) * sizeof(Job));

	for (int row = 0; row < PQntuples(result); row++)
	{
		Job		   *job = &jobs[row];

		job->id = atoll(PQgetvalue(result, row, JOB_ID));
		job->kind = PrintableField(result, row, JOB_KIND);
		job->target = PrintableField(result, row, JOB_TARGET);
		job->state = PrintableField(result, row, JOB_STATE);
		job->phase = PrintableField(result, row, JOB_PHASE);
		job->progress = atof(PQgetvalue(result, row, JOB_PROGRESS));
		job->rows_done = atoll(PQgetvalue(result, row, JOB_ROWS_DONE));
		job->rate = atof(PQgetvalue(result, row, JOB_RATE));
		job->eta = PrintableField(result, row, JOB_ETA);
		job->error = PrintableField(result, row, JOB_ERROR);
		job->error_detail = PrintableField(result, row, JOB_ERROR_DETAIL);
		job->error_hint = PrintableField(result, row, JOB_ERROR_HINT);
		job->waiting_on = PrintableField(result, row, JOB_WAITING_ON);
		job->messages = atoll(PQgetvalue(result, row, JOB_MESSAGES));
		job->chain = atoll(PQgetvalue(result, row, JOB_CHAIN));
		job->chain_position = atoi(PQgetvalue(result, row, JOB_CHAIN_POSITION));
	}
	*njobs = PQntuples(result);
	return jobs;
}

static void
FreeJobs(Job *jobs, int njobs)
{
	for (int i = 0; i < njobs; i++)
	{
		free(jobs[i].kind);
		free(jobs[i].target);
		free(jobs[i].state);
		free(jobs[i].phase);
		free(jobs[i].eta);
		free(jobs[i].error);
		free(jobs[i].error_detail);
		free(jobs[i].error_hint);
		free(jobs[i].waiting_on);
	}
	free(jobs);
}

/* The jobs with the given ids (all of them must exist), in that order */
static Job *
LoadJobs(PGconn *conn, char **ids, int nids)
{
	Job		   *jobs = pg_malloc0((nids + 1) * sizeof(Job));

	for (int i = 0; i < nids; i++)
	{
		const char *params[] = {ids[i]};
		PGresult   *result = Query(conn, EXIT_USAGE, 1, params,
								   JOB_QUERY "WHERE id = $1::bigint", extension_schema);
		int			found;
		Job		   *job = ReadJobs(result, &found);

		if (found != 1)
			fail(EXIT_NO_SUCH_JOB, "background DDL job %s does not exist in database \"%s\"",
				 ids[i], PQdb(conn));
		jobs[i] = *job;
		free(job);
		PQclear(result);
	}
	return jobs;
}

static bool
StateIsFinal(const char *state)
{
	return strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
		strcmp(state, "cancelled") == 0;
}

static void
CheckIds(char **ids, int nids)
{
	for (int i = 0; i < nids; i++)
	{
		char	   *end;

		errno = 0;
		(void) strtoll(ids[i], &end, 10);
		if (errno != 0 || end == ids[i] || *end != '\0')
			fail(EXIT_USAGE, "invalid job id \"%s\"", ids[i]);
	}
}

static void
Listen(PGconn *conn)
{
	PQclear(Query(conn, EXIT_USAGE, 0, NULL, "LISTEN background_ddl"));
}

/*
 * The job id and state of a notification payload of the extension's shape,
 * '<job id> <state>' (digits, one space, a state); false for anything else.
 */
static bool
ParseNotification(const char *payload, long long *id, const char **state)
{
	char	   *end;

	if (payload[0] < '0' || payload[0] > '9')
		return false;
	errno = 0;
	*id = strtoll(payload, &end, 10);
	if (errno != 0 || *end != ' ')
		return false;
	for (int i = 0; i < (int) lengthof(job_states); i++)
	{
		if (strcmp(end + 1, job_states[i]) == 0)
		{
			*state = job_states[i];
			return true;
		}
	}
	return false;
}

static double
SecondsNow(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec + now.tv_nsec / 1e9;
}

/*
 * Sleep until a notification about one of the jobs arrives or seconds pass;
 * returns whether one came.  Any role may notify on the channel: a payload
 * that is not '<job id> <state>' is ignored (reported, escaped, with -v),
 * one about another job too, and the caller only takes a notification as
 * the hint to look at the view again, never its state as the job's.
 */
static bool
AwaitNotification(PGconn *conn, double seconds, char **ids, int nids)
{
	double		deadline = SecondsNow() + seconds;
	bool		notified = false;

	while (!notified)
	{
		double		left = deadline - SecondsNow();
		struct pollfd readable;
		PGnotify   *notify;

		if (left <= 0)
			break;
		readable.fd = PQsocket(conn);
		readable.events = POLLIN;
		if (poll(&readable, 1, (int) (left * 1000) + 1) < 0 && errno != EINTR)
			fail(EXIT_USAGE, "poll() failed: %s", strerror(errno));
		if (!PQconsumeInput(conn))
			fail(EXIT_USAGE, "lost the connection: %s", PQerrorMessage(conn));
		while ((notify = PQnotifies(conn)) != NULL)
		{
			long long	id;
			const char *state;

			if (!ParseNotification(notify->extra, &id, &state))
			{
				if (verbose)
				{
					char	   *payload = Printable(notify->extra);

					fprintf(stderr, "%s: ignored a notification from pid %d that is not \"<job id> <state>\": \"%s\"\n",
							progname, notify->be_pid, payload);
					free(payload);
				}
			}
			else
			{
				for (int i = 0; i < nids; i++)
				{
					if (atoll(ids[i]) == id)
					{
						if (verbose)
							fprintf(stderr, "%s: notified: job %lld %s\n", progname, id, state);
						notified = true;
						break;
					}
				}
			}
			PQfreemem(notify);
		}
	}
	return notified;
}

/*
 * -v: the messages (INFO, NOTICE, WARNING) an ended job's own statements
 * raised, which a session that ran the statement in the foreground would
 * have seen; as psql shows them, after "job <id>: ".  The extension keeps
 * the first JOB_MESSAGES_KEPT and counts all; a role that may not read the
 * job's command may not read them either (one line says so).
 */
static void
PrintJobMessages(PGconn *conn, const Job *job)
{
	char		id[32];
	char		prefix[48];
	const char *params[] = {id};
	PGresult   *result;
	int			printed;

	if (job->messages == 0)
		return;
	snprintf(id, sizeof(id), "%lld", job->id);
	snprintf(prefix, sizeof(prefix), "job %lld: ", job->id);
	result = TryQuery(conn, 1, params,
					  "SELECT severity, message, detail, hint FROM %s.ddl_messages($1::bigint) "
					  "ORDER BY seq", extension_schema);
	if (PQresultStatus(result) != PGRES_TUPLES_OK)
	{
		char	   *why = Printable(PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY));

		fprintf(stderr, "%sits %lld messages are not readable: %s\n", prefix, job->messages, why);
		free(why);
		PQclear(result);
		return;
	}
	printed = PQntuples(result);
	for (int row = 0; row < printed; row++)
		PrintServerMessage(prefix, PQgetvalue(result, row, 0), PQgetvalue(result, row, 1),
						   PQgetisnull(result, row, 2) ? NULL : PQgetvalue(result, row, 2),
						   PQgetisnull(result, row, 3) ? NULL : PQgetvalue(result, row, 3));
	if (job->messages > printed)
		fprintf(stderr, "%s%lld more messages (only the first %d are kept)\n",
				prefix, job->messages - printed, JOB_MESSAGES_KEPT);
	PQclear(result);
}

/* -v: the messages of the jobs that have ended and not been reported yet */
static void
ReportEndedJobs(PGconn *conn, Job *jobs, int njobs, bool *reported)
{
	for (int i = 0; i < njobs; i++)
	{
		if (reported[i] || !StateIsFinal(jobs[i].state))
			continue;
		if (verbose)
			PrintJobMessages(conn, &jobs[i]);
		reported[i] = true;
	}
}

/* The exit code for ended jobs: any failure first, then any cancel */
static int
EndedJobsExitCode(Job *jobs, int njobs)
{
	int			code = EXIT_OK;

	for (int i = 0; i < njobs; i++)
	{
		if (strcmp(jobs[i].state, "failed") == 0)
		{
			fprintf(stderr, "%s: job %lld (%s %s) failed: %s\n", progname, jobs[i].id,
					jobs[i].kind, jobs[i].target, jobs[i].error);
			if (jobs[i].error_detail[0] != '\0')
				fprintf(stderr, "DETAIL:  %s\n", jobs[i].error_detail);
			if (jobs[i].error_hint[0] != '\0')
				fprintf(stderr, "HINT:  %s\n", jobs[i].error_hint);
			code = EXIT_JOB_FAILED;
		}
		else if (strcmp(jobs[i].state, "cancelled") == 0)
		{
			if (!quiet)
				fprintf(stderr, "%s: job %lld (%s %s) was cancelled\n", progname, jobs[i].id,
						jobs[i].kind, jobs[i].target);
			if (code == EXIT_OK)
				code = EXIT_JOB_CANCELLED;
		}
	}
	return code;
}

/* wait ID...: until every job has ended */
static int
WaitForJobs(PGconn *conn, char **ids, int nids)
{
	bool	   *reported = pg_malloc0((nids + 1) * sizeof(bool));

	Listen(conn);
	for (;;)
	{
		Job		   *jobs = LoadJobs(conn, ids, nids);
		bool		all_ended = true;

		for (int i = 0; i < nids; i++)
			all_ended &= StateIsFinal(jobs[i].state);
		/* each job's messages as soon as it has ended */
		ReportEndedJobs(conn, jobs, nids, reported);
		if (all_ended)
		{
			int			code = EndedJobsExitCode(jobs, nids);

			if (!quiet)
				for (int i = 0; i < nids; i++)
					printf("%lld %s\n", jobs[i].id, jobs[i].state);
			FreeJobs(jobs, nids);
			free(reported);
			return code;
		}
		FreeJobs(jobs, nids);
		(void) AwaitNotification(conn, POLL_SECONDS_WAIT, ids, nids);
	}
}

/* One line of watch: a bar, percent, rows, rate, ETA, phase */
static void
PrintProgressLine(const Job *job, bool terminal)
{
	char		bar[21];
	int			filled = (int) (job->progress / 5.0);
	char		chain[64] = "";

	for (int i = 0; i < 20; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[20] = '\0';
	if (job->chain != job->id)
		snprintf(chain, sizeof(chain), " (chain %lld, #%d)", job->chain, job->chain_position);
	printf("%s%6lld [%s] %5.1f%% %12lld rows %10.0f rows/s ETA %-8s %-10s %s %s%s%s%s\n",
		   terminal ? "\033[2K" : "", job->id, bar, job->progress, job->rows_done, job->rate,
		   job->eta[0] ? job->eta : "-", job->state, job->phase[0] ? job->phase : "-",
		   job->target, chain, job->waiting_on[0] ? ", waiting on " : "", job->waiting_on);
}

/*
 * Add to the watched jobs those of their chains submitted since (a chain's
 * file may still be being submitted); returns how many it added
 */
static int
AddChainJobs(PGconn *conn, char ***watched, int *nwatched, bool **reported)
{
	PQExpBufferData ids;
	const char *params[1];
	PGresult   *result;
	int			added;

	initPQExpBuffer(&ids);
	appendPQExpBufferChar(&ids, '{');
	for (int i = 0; i < *nwatched; i++)
		appendPQExpBuffer(&ids, "%s%s", i > 0 ? "," : "", (*watched)[i]);
	appendPQExpBufferChar(&ids, '}');
	params[0] = ids.data;
	result = Query(conn, EXIT_USAGE, 1, params,
				   "SELECT id FROM %s.pg_stat_background_ddl WHERE chain IN "
				   "(SELECT chain FROM %s.pg_stat_background_ddl WHERE id = ANY ($1::bigint[])) "
				   "AND id <> ALL ($1::bigint[]) ORDER BY id", extension_schema, extension_schema);
	added = PQntuples(result);
	if (added > 0)
	{
		*watched = pg_realloc(*watched, sizeof(char *) * (*nwatched + added + 1));
		*reported = pg_realloc(*reported, sizeof(bool) * (*nwatched + added + 1));
		for (int i = 0; i < added; i++)
		{
			(*watched)[*nwatched] = pg_strdup(PQgetvalue(result, i, 0));
			(*reported)[*nwatched] = false;
			(*nwatched)++;
		}
	}
	PQclear(result);
	termPQExpBuffer(&ids);
	return added;
}

/*
 * watch [ID]...: redraw in place on a terminal, plain lines otherwise; the
 * jobs of a watched job's chain are watched too, also those submitted
 * later
 */
static int
WatchJobs(PGconn *conn, char **ids, int nids)
{
	bool		terminal = isatty(fileno(stdout));
	char	  **watched = pg_malloc0((nids + 1) * sizeof(char *));
	int			nwatched = nids;
	int			lines_drawn = 0;
	char	   *last = NULL;
	bool	   *reported;

	if (nids == 0)
	{
		PGresult   *result = Query(conn, EXIT_USAGE, 0, NULL,
								   "SELECT id FROM %s.pg_stat_background_ddl "
								   "WHERE " UNENDED_JOBS " ORDER BY id", extension_schema);

		nwatched = PQntuples(result);
		watched = pg_malloc0((nwatched + 1) * sizeof(char *));
		for (int i = 0; i < nwatched; i++)
			watched[i] = pg_strdup(PQgetvalue(result, i, 0));
		PQclear(result);
		if (nwatched == 0)
		{
			if (!quiet)
				printf("no background DDL jobs are running\n");
			return EXIT_OK;
		}
	}
	else
		memcpy(watched, ids, sizeof(char *) * nids);
	reported = pg_malloc0((nwatched + 1) * sizeof(bool));
	Listen(conn);
	for (;;)
	{
		Job		   *jobs;
		bool		all_ended = true;
		char		snapshot[8192] = "";

		(void) AddChainJobs(conn, &watched, &nwatched, &reported);
		jobs = LoadJobs(conn, watched, nwatched);

		for (int i = 0; i < nwatched; i++)
		{
			all_ended &= StateIsFinal(jobs[i].state);
			snprintf(snapshot + strlen(snapshot), sizeof(snapshot) - strlen(snapshot),
					 "%s %.1f %lld %s|", jobs[i].state, jobs[i].progress, jobs[i].rows_done,
					 jobs[i].waiting_on);
		}
		if (terminal)
		{
			if (lines_drawn > 0)
				printf("\033[%dA", lines_drawn);
			for (int i = 0; i < nwatched; i++)
				PrintProgressLine(&jobs[i], true);
			lines_drawn = nwatched;
		}
		else if (last == NULL || strcmp(last, snapshot) != 0 || all_ended)
		{
			/* Not a terminal: a line per job whenever something moved */
			for (int i = 0; i < nwatched; i++)
				PrintProgressLine(&jobs[i], false);
		}
		fflush(stdout);

		/*
		 * Messages of ended jobs: on a terminal only once every line has been
		 * drawn for the last time, since they would push the lines that the
		 * next redraw goes back up to.
		 */
		if (!terminal || all_ended)
			ReportEndedJobs(conn, jobs, nwatched, reported);
		free(last);
		last = pg_strdup(snapshot);
		if (all_ended)
		{
			int			code = EndedJobsExitCode(jobs, nwatched);

			FreeJobs(jobs, nwatched);
			free(reported);
			return code;
		}
		FreeJobs(jobs, nwatched);
		(void) AwaitNotification(conn, POLL_SECONDS_WATCH, watched, nwatched);
	}
}

/* list [--all] */
static int
ListJobs(PGconn *conn, bool all)
{
	PGresult   *result = Query(conn, EXIT_USAGE, 0, NULL,
							   all ? JOB_QUERY "ORDER BY id" :
							   JOB_QUERY "WHERE " UNENDED_JOBS " ORDER BY id",
							   extension_schema);
	int			njobs;
	Job		   *jobs = ReadJobs(result, &njobs);

	printf("%6s  %-26s %-30s %-10s %-20s %6s %12s %10s %8s  %s\n",
		   "id", "kind", "target", "state", "phase", "%", "rows", "rows/s", "ETA", "waiting on");
	for (int i = 0; i < njobs; i++)
		printf("%6lld  %-26s %-30s %-10s %-20s %6.1f %12lld %10.0f %8s  %s\n",
			   jobs[i].id, jobs[i].kind, jobs[i].target, jobs[i].state,
			   jobs[i].phase[0] ? jobs[i].phase : "-", jobs[i].progress, jobs[i].rows_done,
			   jobs[i].rate, jobs[i].eta[0] ? jobs[i].eta : "-",
			   jobs[i].waiting_on[0] ? jobs[i].waiting_on : "-");
	if (!quiet)
		printf("(%d job%s)\n", njobs, njobs == 1 ? "" : "s");
	FreeJobs(jobs, njobs);
	PQclear(result);
	return EXIT_OK;
}

/* cancel|pause|resume ID (verb is one of these three) */
static int
ControlJob(PGconn *conn, const char *verb, char *id)
{
	const char *params[] = {id};
	PGresult   *result;

	FreeJobs(LoadJobs(conn, &id, 1), 1);	/* unknown ids: EXIT_NO_SUCH_JOB */
	result = Query(conn, EXIT_REJECTED, 1, params, "SELECT %s.%s_ddl($1::bigint)",
				   extension_schema, verb);
	if (!quiet)
		printf("%s %s: %s\n", verb, id,
			   strcmp(PQgetvalue(result, 0, 0), "t") == 0 ? "done" : "nothing to do (the job has ended, or is already so)");
	PQclear(result);
	return EXIT_OK;
}

/*
 * complete ID: CALL complete_ddl, which returns once the job has ended; the
 * exit code as wait's (a refusal, a paused job: EXIT_REJECTED)
 */
static int
CompleteJob(PGconn *conn, char *id)
{
	const char *params[] = {id};
	PGresult   *result;
	Job		   *job;
	int			code;

	FreeJobs(LoadJobs(conn, &id, 1), 1);	/* unknown ids: EXIT_NO_SUCH_JOB */
	result = TryQuery(conn, 1, params, "CALL %s.complete_ddl($1::bigint)", extension_schema);
	job = LoadJobs(conn, &id, 1);
	if (!StateIsFinal(job->state))
		fail(EXIT_REJECTED, "%s", Printable(PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY)));
	code = EndedJobsExitCode(job, 1);
	if (!quiet)
		printf("%lld %s\n", job->id, job->state);
	FreeJobs(job, 1);
	PQclear(result);
	return code;
}

/* show ID: every column of the job's row of the view, one a line, as psql's \x */
static int
ShowJob(PGconn *conn, char *id)
{
	const char *params[] = {id};
	PGresult   *result;

	FreeJobs(LoadJobs(conn, &id, 1), 1);	/* unknown ids: EXIT_NO_SUCH_JOB */
	result = Query(conn, EXIT_REJECTED, 1, params,
				   "SELECT * FROM %s.pg_stat_background_ddl WHERE id = $1::bigint", extension_schema);
	for (int column = 0; PQntuples(result) == 1 && column < PQnfields(result); column++)
		if (!PQgetisnull(result, 0, column))
			printf("%-20s %s\n", PQfname(result, column), Printable(PQgetvalue(result, 0, column)));
	PQclear(result);
	return EXIT_OK;
}

static char *
ReadFile(const char *path)
{
	FILE	   *file = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	size_t		size = 0;
	size_t		capacity = 4096;
	char	   *text = pg_malloc(capacity);
	size_t		got;

	if (file == NULL)
		fail(EXIT_USAGE, "could not open \"%s\": %s", path, strerror(errno));
	while ((got = fread(text + size, 1, capacity - size - 1, file)) > 0)
	{
		size += got;
		if (size + 1 == capacity)
			text = pg_realloc(text, capacity *= 2);
	}
	text[size] = '\0';
	if (file != stdin)
		fclose(file);
	return text;
}

/*
 * The line of text on which a statement starts, looking from *from on (the
 * lexer leaves out what comes before a statement: blanks and comments); *from
 * moves past it
 */
static int
StatementLine(const char *text, const char **from, const char *statement)
{
	char		prefix[64];
	const char *start;
	int			line = 1;

	strlcpy(prefix, statement, sizeof(prefix));
	start = strstr(*from, prefix);
	if (start == NULL)
		start = *from;
	for (const char *c = text; c < start; c++)
		line += *c == '\n';
	*from = start + strlen(prefix);
	return line;
}

/*
 * The statements of a file, split as psql splits them (its lexer: quotes,
 * dollar quotes, comments), with the line each starts on; a backslash
 * command is refused
 */
static char **
SplitStatements(PGconn *conn, const char *text, int *nstatements, int **lines)
{
	const char *from = text;
	PsqlScanCallbacks callbacks = {NULL};
	PsqlScanState scan = psql_scan_create(&callbacks);
	const char *std_strings = PQparameterStatus(conn, "standard_conforming_strings");
	PQExpBufferData buffer;
	char	  **statements = NULL;

	*nstatements = 0;
	initPQExpBuffer(&buffer);
	psql_scan_setup(scan, text, strlen(text), PQclientEncoding(conn),
					std_strings != NULL && strcmp(std_strings, "on") == 0);
	for (;;)
	{
		promptStatus_t prompt;
		PsqlScanResult result = psql_scan(scan, &buffer, &prompt);
		bool		blank = strspn(buffer.data, " \t\r\n;") == (size_t) buffer.len;

		if (result == PSCAN_BACKSLASH)
			fail(EXIT_USAGE, "submit -f: backslash commands are not supported (statement %d)",
				 *nstatements + 1);
		if (!blank && (result == PSCAN_SEMICOLON || result == PSCAN_EOL || result == PSCAN_INCOMPLETE))
		{
			statements = pg_realloc(statements, sizeof(char *) * (*nstatements + 1));
			*lines = pg_realloc(*lines, sizeof(int) * (*nstatements + 1));
			(*lines)[*nstatements] = StatementLine(text, &from, buffer.data);
			statements[(*nstatements)++] = pg_strdup(buffer.data);
		}
		resetPQExpBuffer(&buffer);
		if (result != PSCAN_SEMICOLON)
			break;
	}
	psql_scan_finish(scan);
	psql_scan_destroy(scan);
	termPQExpBuffer(&buffer);
	return statements;
}

/*
 * Run one statement as the user wrote it; a refusal ends the program,
 * naming the statement by its number and line in the file (number 0: not
 * from a file)
 */
static void
RunUserStatement(PGconn *conn, const char *sql, int number, int line)
{
	PGresult   *result = PQexec(conn, sql);

	if (PQresultStatus(result) != PGRES_COMMAND_OK && PQresultStatus(result) != PGRES_TUPLES_OK &&
		PQresultStatus(result) != PGRES_EMPTY_QUERY)
	{
		if (PQresultErrorField(result, PG_DIAG_SQLSTATE) == NULL)
			fail(EXIT_USAGE, "lost the connection: %s", PQerrorMessage(conn));
		/* the jobs submitted before it go on: say which */
		for (int i = 0; i < nsubmitted; i++)
			printf("%s\n", submitted_ids[i]);
		fflush(stdout);
		if (number > 0)
			fail(EXIT_REJECTED, "statement %d (line %d) refused: %s", number, line,
				 PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY));
		fail(EXIT_REJECTED, "statement refused: %s", PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY));
	}
	PQclear(result);
}

/*
 * Would the server make a job of this statement?  explain_ddl refuses a
 * statement of no job's kind with FEATURE_NOT_SUPPORTED (a job's statement
 * that it refuses so for another reason only waits first); it explains a
 * query too, which is no job: one that returns rows.
 */
static bool
IsJobStatement(PGconn *conn, const char *sql)
{
	const char *params[] = {sql};
	PGresult   *result = TryQuery(conn, 1, params, "SELECT %s.explain_ddl($1)", extension_schema);
	const char *sqlstate = PQresultErrorField(result, PG_DIAG_SQLSTATE);
	bool		job = sqlstate == NULL || strcmp(sqlstate, "0A000") != 0;

	PQclear(result);
	if (job && sqlstate == NULL)
	{
		result = PQprepare(conn, "", sql, 0, NULL);
		if (PQresultStatus(result) == PGRES_COMMAND_OK)
		{
			PQclear(result);
			result = PQdescribePrepared(conn, "");
			job = PQresultStatus(result) == PGRES_COMMAND_OK && PQnfields(result) == 0;
		}
		PQclear(result);
	}
	return job;
}

/* Wait until the jobs submitted so far have ended; did they all succeed? */
static bool
SubmittedJobsSucceeded(PGconn *conn)
{
	Listen(conn);
	for (;;)
	{
		Job		   *jobs = LoadJobs(conn, submitted_ids, nsubmitted);
		bool		all_ended = true;
		bool		all_succeeded = true;

		for (int i = 0; i < nsubmitted; i++)
		{
			all_ended &= StateIsFinal(jobs[i].state);
			all_succeeded &= strcmp(jobs[i].state, "succeeded") == 0;
		}
		FreeJobs(jobs, nsubmitted);
		if (all_ended)
			return all_succeeded;
		(void) AwaitNotification(conn, POLL_SECONDS_WAIT, submitted_ids, nsubmitted);
	}
}

/*
 * The word at *sql (letters and underscores), after blanks and comments,
 * copied into word (up to size - 1 characters); *sql moves past it
 */
static void
NextWord(const char **sql, char *word, size_t size)
{
	const char *c = *sql;
	size_t		length = 0;

	for (;;)
	{
		while (*c == ' ' || *c == '\t' || *c == '\r' || *c == '\n')
			c++;
		if (c[0] == '-' && c[1] == '-')
			c += strcspn(c, "\n");
		else if (c[0] == '/' && c[1] == '*')
		{
			/* (comments nest, as in the server's lexer) */
			int			depth = 0;

			do
			{
				if (c[0] == '/' && c[1] == '*')
					depth++, c++;
				else if (c[0] == '*' && c[1] == '/')
					depth--, c++;
				c++;
			} while (depth > 0 && *c != '\0');
		}
		else
			break;
	}
	while ((isalpha((unsigned char) *c) || *c == '_') && length + 1 < size)
		word[length++] = *c++;
	word[length] = '\0';
	*sql = c;
}

/*
 * Does the statement end or start a transaction block (BEGIN, START
 * TRANSACTION, COMMIT, END, ROLLBACK, ABORT, PREPARE TRANSACTION)?  Told
 * before it runs, since --atomic's transaction would be ended by it.
 */
static bool
ControlsTransaction(const char *sql)
{
	static const char *const words[] = {"begin", "start", "commit", "end", "rollback", "abort"};
	char		word[16];

	NextWord(&sql, word, sizeof(word));
	for (size_t i = 0; i < lengthof(words); i++)
		if (pg_strcasecmp(word, words[i]) == 0)
			return true;
	if (pg_strcasecmp(word, "prepare") != 0)
		return false;
	NextWord(&sql, word, sizeof(word));
	return pg_strcasecmp(word, "transaction") == 0;
}

/*
 * submit [--wait] SQL | -f FILE.  The statements run as the user wrote them,
 * with the user's search_path (which the job keeps for its worker too); the
 * client's own queries again without.  A file is one chain: each of its
 * statements that becomes a job starts after the job before it
 * (background_ddl.after), so that a migration runs in order; the others run
 * in their place in the file: with --wait, once the jobs before them have
 * succeeded (if one did not, the rest of the file is not run), else at once.
 * The chain's id is its first job's.  With group (submit --atomic), the
 * file runs in one transaction instead, with background_ddl.cutover_group
 * set to group for it: its jobs are built side by side and published
 * together, and none is submitted if a statement fails.
 */
static int
SubmitStatements(PGconn *conn, const char *sql, const char *file_text, bool wait,
				 const char *group)
{
	char	  **statements = NULL;
	int		   *lines = NULL;
	int			nstatements = 1;

	if (file_text != NULL)
		statements = SplitStatements(conn, file_text, &nstatements, &lines);
	PQclear(Query(conn, EXIT_USAGE, 0, NULL, "SET background_ddl = on"));
	if (group != NULL)
	{
		const char *params[] = {group};

		PQclear(Query(conn, EXIT_USAGE, 0, NULL, "BEGIN"));
		PQclear(Query(conn, EXIT_USAGE, 1, params,
					  "SELECT pg_catalog.set_config('background_ddl.cutover_group', $1, true)"));
	}
	SetSearchPath(conn, user_search_path);
	for (int i = 0; group != NULL && i < nstatements; i++)
	{
		if (!ControlsTransaction(statements[i]))
			RunUserStatement(conn, statements[i], i + 1, lines[i]);
		if (ControlsTransaction(statements[i]) || PQtransactionStatus(conn) != PQTRANS_INTRANS)
			fail(EXIT_REJECTED, "statement %d (line %d) ends the transaction of --atomic: leave out the file's own BEGIN, COMMIT and ROLLBACK",
				 i + 1, lines[i]);
	}
	if (group != NULL)
	{
		SetSearchPath(conn, "");
		PQclear(Query(conn, EXIT_REJECTED, 0, NULL, "COMMIT"));
	}
	for (int i = 0; group == NULL && i < nstatements; i++)
	{
		/*
		 * In the file's own transaction block nothing of ours runs that could
		 * fail (and abort it), and nothing waits: its jobs start at its
		 * COMMIT, and its statements see them done (the server builds a job
		 * there that a later statement of the block uses)
		 */
		bool		in_block = PQtransactionStatus(conn) != PQTRANS_IDLE;

		if (file_text == NULL)
		{
			RunUserStatement(conn, sql, 0, 0);
			break;
		}
		if (nsubmitted > 0)
		{
			const char *params[] = {submitted_ids[nsubmitted - 1]};

			if (wait && !in_block && !IsJobStatement(conn, statements[i]) &&
				!SubmittedJobsSucceeded(conn))
			{
				fprintf(stderr, "%s: statements %d to %d (lines %d to %d) not run: a job before them did not succeed\n",
						progname, i + 1, nstatements, lines[i], lines[nstatements - 1]);
				break;
			}
			PQclear(Query(conn, EXIT_USAGE, 1, params,
						  "SELECT pg_catalog.set_config('background_ddl.after', $1, false)"));
		}
		RunUserStatement(conn, statements[i], i + 1, lines[i]);
	}
	if (PQtransactionStatus(conn) != PQTRANS_IDLE)
		fail(EXIT_REJECTED, "the file ends inside a transaction block, which is rolled back: add its COMMIT");
	SetSearchPath(conn, "");
	PQclear(Query(conn, EXIT_USAGE, 0, NULL, "RESET background_ddl.after"));
	if (nsubmitted == 0)
		fail(EXIT_REJECTED, "the statement ran in the foreground: no background DDL job was submitted");
	if (group != NULL)
		printf("group %s\n", submitted_ids[0]);
	else if (file_text != NULL)
		printf("chain %s\n", submitted_ids[0]);
	for (int i = 0; i < nsubmitted; i++)
		printf("%s\n", submitted_ids[i]);
	fflush(stdout);
	return wait ? WaitForJobs(conn, submitted_ids, nsubmitted) : EXIT_OK;
}

int
main(int argc, char **argv)
{
	static struct option options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"username", required_argument, NULL, 'U'},
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"wait", no_argument, NULL, 1},
		{"password", no_argument, NULL, 'W'},
		{"no-password", no_argument, NULL, 'w'},
		{"all", no_argument, NULL, 'a'},
		{"file", required_argument, NULL, 'f'},
		{"atomic", no_argument, NULL, 2},
		{NULL, 0, NULL, 0}
	};
	const char *dbname = NULL;
	const char *host = NULL;
	const char *port = NULL;
	const char *user = NULL;
	const char *file = NULL;
	bool		wait = false;
	bool		atomic = false;
	bool		all = false;
	const char *command;
	int			c;
	PGconn	   *conn;
	int			code;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-?") == 0)
		{
			usage();
			return EXIT_OK;
		}
	}
	pg_logging_init(argv[0]);
	progname = get_progname(argv[0]);
	while ((c = getopt_long(argc, argv, "d:h:p:U:qvVwWaf:", options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd': dbname = optarg; break;
			case 'h': host = optarg; break;
			case 'p': port = optarg; break;
			case 'U': user = optarg; break;
			case 'q': quiet = true; break;
			case 'v': verbose = true; break;
			case 1: wait = true; break;
			case 2: atomic = true; break;
			case 'w': prompt_password = TRI_NO; break;
			case 'W': prompt_password = TRI_YES; break;
			case 'a': all = true; break;
			case 'f': file = optarg; break;
			case 'V':
				printf("%s (background_ddl) %s\n", progname, PG_BGDDL_VERSION);
				return EXIT_OK;
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
				return EXIT_USAGE;
		}
	}
	if (optind >= argc)
		fail(EXIT_USAGE, "no command given (try \"%s --help\")", progname);
	command = argv[optind++];

	if (strcmp(command, "submit") == 0)
	{
		if ((file == NULL) == (optind >= argc) || (file != NULL && optind < argc) ||
			argc - optind > 1)
			fail(EXIT_USAGE, "submit takes one SQL string or -f FILE");
		if (atomic && file == NULL)
			fail(EXIT_USAGE, "submit --atomic takes -f FILE");
		conn = Connect(dbname, host, port, user);
		/* The group is named after the file (a name to read; the transaction makes it one) */
		code = SubmitStatements(conn, file ? NULL : argv[optind], file ? ReadFile(file) : NULL, wait,
								atomic ? (strcmp(file, "-") == 0 ? "stdin" : get_progname(file)) : NULL);
	}
	else if (strcmp(command, "list") == 0)
	{
		if (optind < argc)
			fail(EXIT_USAGE, "list takes no arguments");
		conn = Connect(dbname, host, port, user);
		code = ListJobs(conn, all);
	}
	else if (strcmp(command, "watch") == 0 || strcmp(command, "wait") == 0)
	{
		bool		watching = strcmp(command, "watch") == 0;

		if (!watching && optind >= argc)
			fail(EXIT_USAGE, "wait takes one or more job ids");
		CheckIds(argv + optind, argc - optind);
		conn = Connect(dbname, host, port, user);
		code = watching ? WatchJobs(conn, argv + optind, argc - optind) :
			WaitForJobs(conn, argv + optind, argc - optind);
	}
	else if (strcmp(command, "cancel") == 0 || strcmp(command, "pause") == 0 ||
			 strcmp(command, "resume") == 0)
	{
		if (argc - optind != 1)
			fail(EXIT_USAGE, "%s takes one job id", command);
		CheckIds(argv + optind, 1);
		conn = Connect(dbname, host, port, user);
		code = ControlJob(conn, command, argv[optind]);
	}
	else if (strcmp(command, "complete") == 0 || strcmp(command, "show") == 0)
	{
		if (argc - optind != 1)
			fail(EXIT_USAGE, "%s takes one job id", command);
		CheckIds(argv + optind, 1);
		conn = Connect(dbname, host, port, user);
		code = strcmp(command, "show") == 0 ? ShowJob(conn, argv[optind]) :
			CompleteJob(conn, argv[optind]);
	}
	else
		fail(EXIT_USAGE, "unknown command \"%s\" (try \"%s --help\")", command, progname);

	PQfinish(conn);
	return code;
}
