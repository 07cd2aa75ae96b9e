/*-------------------------------------------------------------------------
 *
 * pg_bgddl.c
 *	  Command-line client of background_ddl: submit long DDL as background
 *	  jobs, list and watch them, wait for them, cancel, pause and resume.
 *
 * It connects like any libpq client (-d dbname or a connection string,
 * -h, -p, -U, the PG* environment variables, .pgpass) and runs only the
 * extension's SQL interface: SET background_ddl = on and the statement for
 * submit, pg_stat_background_ddl for list and watch, cancel_ddl, pause_ddl
 * and resume_ddl.  wait and watch LISTEN on the background_ddl channel,
 * where the extension sends '<id> <state>' at every state change, and look
 * again at the view when woken (and every few seconds in any case).
 *
 * Exit codes: see the EXIT_* constants and --help.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "libpq-fe.h"

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

static const char *progname = "pg_bgddl";
static bool quiet = false;
static bool verbose = false;

/* One job as pg_stat_background_ddl shows it */
typedef struct Job
{
	long long	id;
	char		kind[64];
	char		target[256];
	char		state[32];
	char		phase[64];
	double		progress;
	long long	rows_done;
	double		rate;
	char		eta[64];
	char		error[1024];
	char		waiting_on[256];
} Job;

static void fail(int code, const char *format,...)
			__attribute__((format(printf, 2, 3), noreturn));

static void
fail(int code, const char *format,...)
{
	va_list		args;

	char		message[4096];
	size_t		length;

	va_start(args, format);
	vsnprintf(message, sizeof(message), format, args);
	va_end(args);
	/* libpq's messages end with a newline: one line each */
	length = strlen(message);
	while (length > 0 && message[length - 1] == '\n')
		message[--length] = '\0';
	fprintf(stderr, "%s: error: %s\n", progname, message);
	exit(code);
}

static void
usage(void)
{
	printf("%s runs long DDL as background_ddl jobs and follows them.\n\n", progname);
	printf("Usage:\n");
	printf("  %s [OPTION]... submit [--wait] \"SQL\"   submit; prints each job's id\n", progname);
	printf("  %s [OPTION]... submit [--wait] -f FILE  submit the statements of a file\n", progname);
	printf("  %s [OPTION]... list [--all]             jobs not yet ended (--all: every job)\n", progname);
	printf("  %s [OPTION]... watch [ID]...            live progress until the jobs end\n", progname);
	printf("  %s [OPTION]... wait ID...               block until the jobs end\n", progname);
	printf("  %s [OPTION]... cancel|pause|resume ID\n", progname);
	printf("\nConnection options:\n");
	printf("  -d, --dbname=DBNAME      database name or connection string\n");
	printf("  -h, --host=HOSTNAME      database server host or socket directory\n");
	printf("  -p, --port=PORT          database server port\n");
	printf("  -U, --username=USERNAME  user name to connect as\n");
	printf("\nOther options:\n");
	printf("  -q, --quiet              print nothing but errors (and job ids from submit)\n");
	printf("  -v, --verbose            print what is being done\n");
	printf("  -V, --version            output version information, then exit\n");
	printf("  -?, --help               show this help, then exit\n");
	printf("\nExit status: 0 done (wait: every job succeeded), 1 a job failed, 2 a job was cancelled,\n");
	printf("3 usage or connection error, 4 statement or command refused by the server, 5 no such job,\n");
	printf("6 extension not installed in the database, 7 library not in shared_preload_libraries.\n");
}

/* Connect with the options given (NULL: libpq's default) and check the extension */
static PGconn *
Connect(const char *dbname, const char *host, const char *port, const char *user)
{
	const char *keywords[] = {"host", "port", "user", "dbname", "fallback_application_name", NULL};
	const char *values[] = {host, port, user, dbname, progname, NULL};
	PGconn	   *conn = PQconnectdbParams(keywords, values, true);
	PGresult   *result;

	if (PQstatus(conn) != CONNECTION_OK)
		fail(EXIT_USAGE, "could not connect: %s", PQerrorMessage(conn));
	result = PQexec(conn,
					"SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'background_ddl'), "
					"'background_ddl' = ANY (string_to_array(replace("
					"current_setting('shared_preload_libraries'), ' ', ''), ','))");
	if (PQresultStatus(result) != PGRES_TUPLES_OK)
		fail(EXIT_USAGE, "%s", PQerrorMessage(conn));
	if (strcmp(PQgetvalue(result, 0, 1), "t") != 0)
		fail(EXIT_NOT_PRELOADED,
			 "background_ddl is not in shared_preload_libraries of the server (add it and restart)");
	if (strcmp(PQgetvalue(result, 0, 0), "t") != 0)
		fail(EXIT_NOT_INSTALLED,
			 "extension background_ddl is not installed in database \"%s\" (CREATE EXTENSION background_ddl)",
			 PQdb(conn));
	PQclear(result);
	if (verbose)
		fprintf(stderr, "%s: connected to database \"%s\"\n", progname, PQdb(conn));
	return conn;
}

/* Run a query that returns rows; any error is fatal with the given code */
static PGresult *
Query(PGconn *conn, int error_code, const char *sql, int nparams, const char *const *params)
{
	PGresult   *result = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(result) != PGRES_TUPLES_OK && PQresultStatus(result) != PGRES_COMMAND_OK)
	{
		const char *sqlstate = PQresultErrorField(result, PG_DIAG_SQLSTATE);

		if (sqlstate == NULL)
			fail(EXIT_USAGE, "lost the connection: %s", PQerrorMessage(conn));
		fail(error_code, "%s", PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY));
	}
	return result;
}

static void
CopyField(char *into, size_t size, PGresult *result, int row, int column)
{
	snprintf(into, size, "%s", PQgetisnull(result, row, column) ? "" : PQgetvalue(result, row, column));
}

#define JOB_QUERY \
	"SELECT id, kind, target, state, coalesce(phase, ''), coalesce(progress, 0), " \
	"coalesce(rows_done, 0), coalesce(rate, 0), coalesce(to_char(eta, 'HH24:MI:SS'), ''), " \
	"coalesce(error, ''), coalesce(waiting_on, '') FROM pg_stat_background_ddl "

/* Read jobs (the rows of a JOB_QUERY result) */
static Job *
ReadJobs(PGresult *result, int *njobs)
{
	Job		   *jobs = calloc(PQntuples(result) + 1, sizeof(Job));

	for (int row = 0; row < PQntuples(result); row++)
	{
		Job		   *job = &jobs[row];

		job->id = atoll(PQgetvalue(result, row, 0));
		CopyField(job->kind, sizeof(job->kind), result, row, 1);
		CopyField(job->target, sizeof(job->target), result, row, 2);
		CopyField(job->state, sizeof(job->state), result, row, 3);
		CopyField(job->phase, sizeof(job->phase), result, row, 4);
		job->progress = atof(PQgetvalue(result, row, 5));
		job->rows_done = atoll(PQgetvalue(result, row, 6));
		job->rate = atof(PQgetvalue(result, row, 7));
		CopyField(job->eta, sizeof(job->eta), result, row, 8);
		CopyField(job->error, sizeof(job->error), result, row, 9);
		CopyField(job->waiting_on, sizeof(job->waiting_on), result, row, 10);
	}
	*njobs = PQntuples(result);
	return jobs;
}

/* The jobs with the given ids (all of them must exist), in that order */
static Job *
LoadJobs(PGconn *conn, char **ids, int nids)
{
	Job		   *jobs = calloc(nids + 1, sizeof(Job));

	for (int i = 0; i < nids; i++)
	{
		const char *params[] = {ids[i]};
		PGresult   *result = Query(conn, EXIT_USAGE, JOB_QUERY "WHERE id = $1::bigint", 1, params);
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
	PQclear(Query(conn, EXIT_USAGE, "LISTEN background_ddl", 0, NULL));
}

/*
 * Sleep until a notification on the channel arrives or seconds pass; returns
 * whether one came.
 */
static bool
AwaitNotification(PGconn *conn, double seconds)
{
	int			socket = PQsocket(conn);
	fd_set		readable;
	struct timeval timeout;
	PGnotify   *notify;
	bool		notified = false;

	FD_ZERO(&readable);
	FD_SET(socket, &readable);
	timeout.tv_sec = (long) seconds;
	timeout.tv_usec = (long) ((seconds - (long) seconds) * 1e6);
	if (select(socket + 1, &readable, NULL, NULL, &timeout) < 0 && errno != EINTR)
		fail(EXIT_USAGE, "select() failed: %s", strerror(errno));
	if (!PQconsumeInput(conn))
		fail(EXIT_USAGE, "lost the connection: %s", PQerrorMessage(conn));
	while ((notify = PQnotifies(conn)) != NULL)
	{
		if (verbose)
			fprintf(stderr, "%s: notified: %s\n", progname, notify->extra);
		notified = true;
		PQfreemem(notify);
	}
	return notified;
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
	Listen(conn);
	for (;;)
	{
		Job		   *jobs = LoadJobs(conn, ids, nids);
		bool		all_ended = true;

		for (int i = 0; i < nids; i++)
			all_ended &= StateIsFinal(jobs[i].state);
		if (all_ended)
		{
			int			code = EndedJobsExitCode(jobs, nids);

			if (!quiet)
				for (int i = 0; i < nids; i++)
					printf("%lld %s\n", jobs[i].id, jobs[i].state);
			free(jobs);
			return code;
		}
		free(jobs);
		(void) AwaitNotification(conn, POLL_SECONDS_WAIT);
	}
}

/* One line of watch: a bar, percent, rows, rate, ETA, phase */
static void
PrintProgressLine(const Job *job, bool terminal)
{
	char		bar[21];
	int			filled = (int) (job->progress / 5.0);

	for (int i = 0; i < 20; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[20] = '\0';
	printf("%s%6lld [%s] %5.1f%% %12lld rows %10.0f rows/s ETA %-8s %-10s %s %s%s%s\n",
		   terminal ? "\033[2K" : "", job->id, bar, job->progress, job->rows_done, job->rate,
		   job->eta[0] ? job->eta : "-", job->state, job->phase[0] ? job->phase : "-",
		   job->target, job->waiting_on[0] ? ", waiting on " : "", job->waiting_on);
}

/* watch [ID]...: redraw in place on a terminal, plain lines otherwise */
static int
WatchJobs(PGconn *conn, char **ids, int nids)
{
	bool		terminal = isatty(fileno(stdout));
	char	  **watched = ids;
	int			nwatched = nids;
	int			lines_drawn = 0;
	char	   *last = NULL;

	if (nids == 0)
	{
		PGresult   *result = Query(conn, EXIT_USAGE,
								   "SELECT id FROM pg_stat_background_ddl "
								   "WHERE state NOT IN ('succeeded', 'failed', 'cancelled') ORDER BY id",
								   0, NULL);

		nwatched = PQntuples(result);
		watched = calloc(nwatched + 1, sizeof(char *));
		for (int i = 0; i < nwatched; i++)
			watched[i] = strdup(PQgetvalue(result, i, 0));
		PQclear(result);
		if (nwatched == 0)
		{
			if (!quiet)
				printf("no background DDL jobs are running\n");
			return EXIT_OK;
		}
	}
	Listen(conn);
	for (;;)
	{
		Job		   *jobs = LoadJobs(conn, watched, nwatched);
		bool		all_ended = true;
		char		snapshot[8192] = "";

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
		free(last);
		last = strdup(snapshot);
		if (all_ended)
		{
			int			code = EndedJobsExitCode(jobs, nwatched);

			free(jobs);
			return code;
		}
		free(jobs);
		(void) AwaitNotification(conn, POLL_SECONDS_WATCH);
	}
}

/* list [--all] */
static int
ListJobs(PGconn *conn, bool all)
{
	PGresult   *result = Query(conn, EXIT_USAGE,
							   all ? JOB_QUERY "ORDER BY id" :
							   JOB_QUERY "WHERE state NOT IN ('succeeded', 'failed', 'cancelled') ORDER BY id",
							   0, NULL);
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
	free(jobs);
	PQclear(result);
	return EXIT_OK;
}

/* cancel|pause|resume ID */
static int
ControlJob(PGconn *conn, const char *verb, char *id)
{
	char		sql[64];
	const char *params[] = {id};
	PGresult   *result;

	(void) LoadJobs(conn, &id, 1);	/* unknown ids: EXIT_NO_SUCH_JOB */
	snprintf(sql, sizeof(sql), "SELECT %s_ddl($1::bigint)", verb);
	result = Query(conn, EXIT_REJECTED, sql, 1, params);
	if (!quiet)
		printf("%s %s: %s\n", verb, id,
			   strcmp(PQgetvalue(result, 0, 0), "t") == 0 ? "done" : "nothing to do (the job has ended, or is already so)");
	PQclear(result);
	return EXIT_OK;
}

/* Job ids announced by the submit NOTICEs */
static char **submitted_ids;
static int	nsubmitted;

static void
CollectSubmittedJob(void *arg, const PGresult *result)
{
	const char *message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
	long long	id;

	if (message != NULL && sscanf(message, "background DDL job %lld submitted", &id) == 1)
	{
		submitted_ids = realloc(submitted_ids, sizeof(char *) * (nsubmitted + 1));
		submitted_ids[nsubmitted] = malloc(32);
		snprintf(submitted_ids[nsubmitted++], 32, "%lld", id);
	}
	else if (!quiet)
		fprintf(stderr, "%s", PQresultErrorMessage(result));
}

static char *
ReadFile(const char *path)
{
	FILE	   *file = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	size_t		size = 0;
	size_t		capacity = 4096;
	char	   *text = malloc(capacity);
	size_t		got;

	if (file == NULL)
		fail(EXIT_USAGE, "could not open \"%s\": %s", path, strerror(errno));
	while ((got = fread(text + size, 1, capacity - size - 1, file)) > 0)
	{
		size += got;
		if (size + 1 == capacity)
			text = realloc(text, capacity *= 2);
	}
	text[size] = '\0';
	if (file != stdin)
		fclose(file);
	return text;
}

/* submit [--wait] SQL | -f FILE */
static int
SubmitStatements(PGconn *conn, const char *sql, bool wait)
{
	PGresult   *result;

	PQclear(Query(conn, EXIT_USAGE, "SET background_ddl = on", 0, NULL));
	PQsetNoticeReceiver(conn, CollectSubmittedJob, NULL);
	result = PQexec(conn, sql);
	if (PQresultStatus(result) != PGRES_COMMAND_OK && PQresultStatus(result) != PGRES_TUPLES_OK)
	{
		if (PQresultErrorField(result, PG_DIAG_SQLSTATE) == NULL)
			fail(EXIT_USAGE, "lost the connection: %s", PQerrorMessage(conn));
		fail(EXIT_REJECTED, "statement refused: %s", PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY));
	}
	PQclear(result);
	if (nsubmitted == 0)
		fail(EXIT_REJECTED, "the statement ran in the foreground: no background DDL job was submitted");
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
		{"wait", no_argument, NULL, 'w'},
		{"all", no_argument, NULL, 'a'},
		{"file", required_argument, NULL, 'f'},
		{NULL, 0, NULL, 0}
	};
	const char *dbname = NULL;
	const char *host = NULL;
	const char *port = NULL;
	const char *user = NULL;
	const char *file = NULL;
	bool		wait = false;
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
	while ((c = getopt_long(argc, argv, "d:h:p:U:qvVwaf:", options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd': dbname = optarg; break;
			case 'h': host = optarg; break;
			case 'p': port = optarg; break;
			case 'U': user = optarg; break;
			case 'q': quiet = true; break;
			case 'v': verbose = true; break;
			case 'w': wait = true; break;
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
		conn = Connect(dbname, host, port, user);
		code = SubmitStatements(conn, file ? ReadFile(file) : argv[optind], wait);
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
	else
		fail(EXIT_USAGE, "unknown command \"%s\" (try \"%s --help\")", command, progname);

	PQfinish(conn);
	return code;
}
