# Security, tried as an attacker would: a database owner, a table owner, a
# role with only SELECT, each trying to get more through the extension.
#  1. A database owner fakes the catalog (tables with triggers, views calling
#     a function that makes it superuser): every entry point ignores it.
#  2. A job is the submitter's session: session_user, current_user,
#     is_superuser; row security and SECURITY DEFINER code see the submitter.
#  3. Role and database settings apply to the job (also superuser-only ones).
#  4. SELECT alone puts no trigger on another role's table.
#  5. Capture triggers cannot be dropped, renamed or disabled by the table
#     owner; a superuser's disable-and-enable is noticed; nothing is left.
#  6. command holds the statement alone, not its neighbours.
#  7. DROP EXTENSION with an unfinished job is refused; after a cancel it
#     works and leaves nothing.  A refused DROP (of the extension or its
#     schema) waits for no lock on a user's table.
#  8. A superuser's REFRESH of another role's view and index on its table
#     run that role's code as that role, as the blocking statements do.
# Also: what a job may not do (as in REFRESH), pg_dump during a job, odd
# identifiers.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;
use IPC::Run;

my $node = bgddl_node('security', "background_ddl.batch_time = '20ms'\n");

$node->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE team NOLOGIN;
GRANT team TO alice;
GRANT CREATE ON SCHEMA public TO alice, bob, team, mallory;
CREATE DATABASE evil OWNER mallory;
});

sub is_superuser
{
	my ($role) = @_;
	return $node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = '$role'");
}

# 1. A fake catalog in a database without the extension.
$node->safe_psql('evil', q{
CREATE SCHEMA background_ddl;
CREATE FUNCTION background_ddl.escalate() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN ALTER ROLE mallory SUPERUSER; RETURN NEW; END $$;
CREATE FUNCTION background_ddl.escalate_id() RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN ALTER ROLE mallory SUPERUSER; RETURN 1; END $$;
CREATE TABLE background_ddl.job_rows (database_oid oid, owner_oid oid, kind text,
  target_oid oid, target_name text, command text, settings text[], state text);
CREATE VIEW background_ddl.job AS SELECT background_ddl.escalate_id() AS id, * FROM background_ddl.job_rows;
CREATE TABLE background_ddl.chunk (job_id bigint);
CREATE TABLE background_ddl.dirty (job_id bigint, source_tid tid, whole_table boolean);
CREATE TRIGGER escalate BEFORE INSERT OR UPDATE OR DELETE ON background_ddl.chunk
  FOR EACH ROW EXECUTE FUNCTION background_ddl.escalate();
CREATE TRIGGER escalate BEFORE INSERT ON background_ddl.dirty
  FOR EACH ROW EXECUTE FUNCTION background_ddl.escalate();
CREATE TABLE t AS SELECT 1 AS x;
CREATE MATERIALIZED VIEW m AS SELECT x FROM t WITH NO DATA;
}, extra_params => [ '-U', 'mallory' ]);

my ($rc, $stdout, $stderr) = $node->psql('evil',
	'SET background_ddl = on; CREATE MATERIALIZED VIEW m2 AS SELECT x FROM t',
	extra_params => [ '-U', 'mallory' ]);
like($stderr, qr/extension "background_ddl" is not installed in this database/,
	'fake catalog: submit says the extension is not installed');
for my $entry ('SELECT * FROM m', 'REFRESH MATERIALIZED VIEW m', 'INSERT INTO t VALUES (2)',
	'DROP MATERIALIZED VIEW m')
{
	$node->psql('evil', "SET background_ddl = off; $entry", extra_params => [ '-U', 'mallory' ]);
	$node->psql('evil', "SET background_ddl = on; $entry", extra_params => [ '-U', 'mallory' ]);
}
is(is_superuser('mallory'), 'f', 'fake catalog: the database owner is still not a superuser');

# ... and in a database with the extension: objects named like the catalog
# in the caller's search_path are never used.
$node->safe_psql('postgres', q{
CREATE TABLE public.job (id bigint);
CREATE FUNCTION public.escalate() RETURNS trigger LANGUAGE plpgsql SECURITY INVOKER AS
  $$ BEGIN ALTER ROLE mallory SUPERUSER; RETURN NEW; END $$;
CREATE TRIGGER escalate BEFORE INSERT ON public.job FOR EACH ROW EXECUTE FUNCTION public.escalate();
CREATE TABLE mallory_t AS SELECT g AS id FROM generate_series(1, 1000) g;
ALTER TABLE mallory_t OWNER TO mallory;
});
my $job = submit_job($node, 'CREATE MATERIALIZED VIEW mallory_mv AS SELECT id FROM mallory_t',
	user => 'mallory', before => 'SET search_path = public, pg_catalog, pg_temp;');
ok(wait_job_state($node, $job, 'succeeded'), 'search_path tricks: the job succeeds');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.job'), '0',
	'search_path tricks: the look-alike table was never written');
is(is_superuser('mallory'), 'f', 'search_path tricks: still not a superuser');

# 2. The job is the submitter's session.
$node->safe_psql('postgres', q{
CREATE TABLE t AS SELECT g AS id, CASE WHEN g % 2 = 0 THEN 'alice' ELSE 'bob' END AS who
  FROM generate_series(1, 1000) g;
GRANT SELECT ON t TO alice, bob, team;
ALTER TABLE t ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON t USING (who = session_user);
CREATE FUNCTION secret() RETURNS text LANGUAGE sql SECURITY DEFINER STABLE AS
  $$ SELECT CASE WHEN session_user = 'postgres' THEN 'the secret' ELSE 'nothing' END $$;
CREATE FUNCTION identity(int) RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT concat_ws(' ', session_user, current_user, current_setting('is_superuser'),
       current_setting('work_mem'), current_setting('temp_file_limit'),
       current_setting('extra_float_digits'), current_setting('app.tenant', true), secret()) $$;
ALTER ROLE alice SET work_mem = '7MB';
ALTER ROLE alice SET temp_file_limit = '1234kB';
ALTER ROLE postgres SET work_mem = '99MB';
ALTER DATABASE postgres SET extra_float_digits = 2;
});
my $identity_query = 'SELECT DISTINCT identity(id) AS identity FROM t';
my $blocking = $node->safe_psql('postgres',
	"SET app.tenant = 'acme'; SET ROLE team; $identity_query", extra_params => [ '-U', 'alice' ]);
is($blocking, 'alice team off 7MB 1234kB 2 acme nothing', 'blocking statement: the identity seen');
$job = submit_job($node, "CREATE MATERIALIZED VIEW who AS $identity_query",
	user => 'alice', before => "SET app.tenant = 'acme'; SET ROLE team;");
ok(wait_job_state($node, $job, 'succeeded'), 'identity: job succeeded');
is($node->safe_psql('postgres', 'SELECT identity FROM who'), $blocking,
	'identity: session_user, current_user, is_superuser, role, database and session settings as in the blocking statement; SECURITY DEFINER code sees the submitter');

# Row security on session_user: the same rows as the blocking statement.
$job = submit_job($node, 'CREATE MATERIALIZED VIEW alice_rows AS SELECT id, who FROM t',
	user => 'alice');
ok(wait_job_state($node, $job, 'succeeded'), 'row security: job succeeded');
is($node->safe_psql('postgres', "SELECT count(*), min(who), max(who) FROM alice_rows"),
	'500|alice|alice', 'row security on session_user: only the submitter\'s rows');

# 3. Role settings apply to every batch, like statement_timeout per statement:
# set once the job is submitted (paused in its submitting transaction), so
# that only the job's batch, not the submit itself, runs under it.
$node->safe_psql('postgres', q{
CREATE FUNCTION slow(int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.3); RETURN $1; END $$;
});
$job = $node->safe_psql('postgres',
	"SET background_ddl = on; BEGIN;
	 CREATE MATERIALIZED VIEW too_slow AS SELECT slow(id) FROM t WHERE id < 3;
	 SELECT pause_ddl(last_ddl_job()); COMMIT; SELECT last_ddl_job();",
	extra_params => [ '-U', 'alice' ]);
($job) = $job =~ /(\d+)$/;
$node->safe_psql('postgres', "ALTER ROLE alice SET statement_timeout = '100ms'; SELECT resume_ddl($job)");
ok(wait_job_state($node, $job, 'failed'), 'statement_timeout of the role: a batch over it fails');
is($node->safe_psql('postgres', "SELECT error || ' ' || error_sqlstate FROM pg_stat_background_ddl WHERE id = $job"),
	'canceling statement due to statement timeout 57014', 'statement_timeout: the error says so');
$node->safe_psql('postgres', 'ALTER ROLE alice RESET statement_timeout');

# 4. SELECT alone puts no trigger on another role's table.
$node->safe_psql('postgres', q{
CREATE TABLE alice_busy AS SELECT g AS id FROM generate_series(1, 50000) g;
ALTER TABLE alice_busy OWNER TO alice;
GRANT SELECT ON alice_busy TO bob;
});
my $hold = hold_at($node, 'cutting over');
my $notice;
$node->psql('postgres',
	'SET background_ddl = on; CREATE MATERIALIZED VIEW bob_copy AS SELECT id FROM alice_busy',
	extra_params => [ '-U', 'bob' ], stderr => \$notice);
like($notice, qr/DETAIL:  It runs in one batch: no TRIGGER privilege on table "alice_busy"/,
	'SELECT only: the submit says the job runs in one batch, and why');
$job = $node->safe_psql('postgres', "SELECT id FROM pg_stat_background_ddl WHERE target = 'public.bob_copy'");
ok( held_at_hold($node),
	'SELECT only: job held before its cut-over');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'alice_busy'::regclass"),
	'0', 'SELECT only: no trigger on the other role\'s table');
is($node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	'one batch: no TRIGGER privilege on table "alice_busy"', 'SELECT only: the view says why');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'SELECT only: job succeeded in one batch');

# With TRIGGER granted, the job is chunked and captures.
$node->safe_psql('postgres', 'GRANT TRIGGER ON alice_busy TO bob');
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node, 'CREATE MATERIALIZED VIEW bob_copy2 AS SELECT id FROM alice_busy', user => 'bob');
ok( held_at_hold($node),
	'TRIGGER granted: job held in its backfill');
is($node->safe_psql('postgres',
		"SELECT count(*) || ' ' || bool_and(tgisinternal) || ' ' || bool_and(tgenabled = 'A')
		   FROM pg_trigger WHERE tgrelid = 'alice_busy'::regclass"),
	'2 true true', 'TRIGGER granted: two internal capture triggers that fire always');

# 5. The table owner cannot drop, rename or disable them.
my ($row_trigger) = $node->safe_psql('postgres',
	"SELECT tgname FROM pg_trigger WHERE tgrelid = 'alice_busy'::regclass AND tgname NOT LIKE '%truncate%'");
for my $attempt ("DROP TRIGGER $row_trigger ON alice_busy",
	"ALTER TRIGGER $row_trigger ON alice_busy RENAME TO hidden",
	'ALTER TABLE alice_busy DISABLE TRIGGER ALL',
	"ALTER TABLE alice_busy DISABLE TRIGGER $row_trigger")
{
	($rc, $stdout, $stderr) = $node->psql('postgres', $attempt, extra_params => [ '-U', 'alice' ]);
	isnt($rc, 0, "table owner: refused: $attempt");
}
like($stderr, qr/is a system trigger/, 'table owner: disabling says it is a system trigger');
($rc, $stdout, $stderr) = $node->psql('postgres', "ALTER TRIGGER $row_trigger ON alice_busy RENAME TO hidden");
like($stderr, qr/cannot rename trigger .* It captures changes for a background DDL job/s,
	'even a superuser cannot rename a capture trigger');

# A superuser disables and enables it between two checks: noticed, exact.
$node->safe_psql('postgres', qq{
ALTER TABLE alice_busy DISABLE TRIGGER $row_trigger;
DELETE FROM alice_busy WHERE id <= 10;
ALTER TABLE alice_busy ENABLE ALWAYS TRIGGER $row_trigger;
});
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'disabled and enabled again: job succeeded');
like(slurp_file($node->logfile), qr/background DDL job $job: a capture trigger was changed, disabled or dropped/,
	'disabled and enabled again: noticed');
is(differences($node, 'bob_copy2', 'SELECT id FROM alice_busy'), '0',
	'disabled and enabled again: the result is exact');
check_no_leftovers($node, $job);

# 6. command holds the statement alone.
$node->psql('postgres',
	"SET background_ddl = on; ALTER ROLE bob PASSWORD 'hunter2'; CREATE MATERIALIZED VIEW neighbours AS SELECT id FROM t ; SELECT 'after'");
is($node->safe_psql('postgres', "SELECT command FROM pg_stat_background_ddl WHERE target = 'public.neighbours'"),
	'CREATE MATERIALIZED VIEW neighbours AS SELECT id FROM t', 'command excludes the neighbouring statements');

# What a job may not do, as in REFRESH: each fails the job, as the submitter.
$node->safe_psql('postgres', q{
CREATE FUNCTION try(stmt text, x int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN EXECUTE stmt; RETURN x; END $$;
});
for my $stmt ('SET ROLE postgres', q{SELECT set_config('role', 'postgres', false)},
	'SET SESSION AUTHORIZATION postgres', 'CREATE TEMP TABLE sneaky (a int)',
	q{COPY (SELECT 1) TO '/dev/null'})
{
	(my $quoted = $stmt) =~ s/'/''/g;
	$job = submit_job($node, "CREATE MATERIALIZED VIEW forbidden AS SELECT try('$quoted', id) FROM t WHERE id = 2",
		user => 'alice');
	ok(wait_job_state($node, $job, 'failed'), "inside a job: $stmt fails the job");
	like($node->safe_psql('postgres', "SELECT error FROM pg_stat_background_ddl WHERE id = $job"),
		qr/within security-(definer function|restricted operation)|must be superuser or have privileges of the pg_write_server_files role/,
		"inside a job: $stmt: refused as in REFRESH");
}

# pg_dump during a job does not dump the capture triggers.
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node, 'CREATE MATERIALIZED VIEW dumped AS SELECT id FROM alice_busy');
ok( held_at_hold($node),
	'pg_dump: job held with its triggers installed');
my ($dump, $dump_err);
IPC::Run::run([ 'pg_dump', '-s', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$dump, '2>', \$dump_err);
like($dump, qr/CREATE TABLE public.alice_busy/, 'pg_dump: ran');
unlike($dump, qr/public\.dumped/, 'pg_dump: the placeholder is not dumped (test/t/014_dump.pl)');
unlike($dump, qr/background_ddl_capture/, 'pg_dump: the capture triggers are not dumped');

# 7. DROP EXTENSION during the job: refused, naming it.
($rc, $stdout, $stderr) = $node->psql('postgres', 'DROP EXTENSION background_ddl CASCADE');
like($stderr, qr/cannot drop extension background_ddl because background DDL jobs are unfinished.*Unfinished jobs: $job \(running\).*HINT:  Cancel them with cancel_ddl/s,
	'DROP EXTENSION mid-job: refused, with the job and a hint');
is($node->safe_psql('postgres', 'SELECT cancel_ddl(' . $job . ')'), 't', 'DROP EXTENSION: the job cancelled');
release_hold($node, $hold);
$node->safe_psql('postgres', q{
DROP EXTENSION background_ddl CASCADE;
DROP TABLE public.job;
});
is($node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'background_ddl%')
		      + (SELECT count(*) FROM pg_class WHERE relname = 'dumped')"),
	'0', 'DROP EXTENSION after the cancel: nothing left behind');

# 7b. A DROP that is refused locks nothing of a user's table.  A succeeded
# job whose capture triggers are still to drop (a writer holds its table):
# with another job unfinished, DROP EXTENSION is refused at once, not after
# queueing behind the writer for the table; with that job alone, the DROP
# asks for the table's lock as a job does (never queueing longer than
# background_ddl.lock_timeout) and fails naming the job.  DROP SCHEMA of the
# catalog's schema is refused up front.  (The statement timeout only bounds
# a regression: the DROPs must fail long before it.)
$node->safe_psql('postgres', q{
CREATE EXTENSION background_ddl;
CREATE TABLE busy AS SELECT g AS id FROM generate_series(1, 20000) g;
CREATE TABLE calm AS SELECT g AS id FROM generate_series(1, 20000) g;
});
$hold = hold_at($node, 'cleaning up');
my $ended = submit_job($node, 'CREATE MATERIALIZED VIEW busy_mv AS SELECT id FROM busy');
ok(held_at_hold($node), 'refused DROP: the job is about to drop its triggers');
my $writer = $node->background_psql('postgres');
$writer->set_query_timer_restart;
$writer->query_safe('BEGIN; INSERT INTO busy VALUES (0);');
release_hold($node, $hold);
ok( $node->poll_query_until('postgres',
		"SELECT state = 'succeeded' AND cleanup_pending AND phase = 'cleaning up'
		   FROM pg_stat_background_ddl WHERE id = $ended"),
	'refused DROP: the job succeeded, its clean-up waits for the table');
$hold = hold_at($node, 'chunk 0');
my $unfinished = submit_job($node, 'CREATE MATERIALIZED VIEW calm_mv AS SELECT id FROM calm');
ok(held_at_hold($node), 'refused DROP: another job is unfinished');
($rc, $stdout, $stderr) = $node->psql('postgres',
	"SET statement_timeout = '60s'; DROP EXTENSION background_ddl CASCADE");
like($stderr, qr/background DDL jobs are unfinished.*Unfinished jobs: $unfinished \(running\)/s,
	'refused DROP: refused at once, before any clean-up');
($rc, $stdout, $stderr) = $node->psql('postgres',
	"SET statement_timeout = '60s'; DROP SCHEMA background_ddl CASCADE");
like($stderr, qr/cannot drop schema background_ddl, which extension background_ddl keeps its catalog in/,
	'refused DROP: DROP SCHEMA of the catalog refused up front');
$node->safe_psql('postgres', "SELECT cancel_ddl($unfinished)");
release_hold($node, $hold);
ok(wait_job_state($node, $unfinished, 'cancelled'), 'refused DROP: the other job cancelled');
check_no_leftovers($node, $unfinished);
($rc, $stdout, $stderr) = $node->psql('postgres',
	"SET statement_timeout = '60s'; DROP EXTENSION background_ddl CASCADE");
like($stderr,
	qr/(lock timeout.*while dropping the capture triggers of background DDL job $ended|while a worker cleans up after background DDL job $ended)/s,
	'refused DROP: the clean-up does not wait for the table');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'background_ddl'"),
	'1', 'refused DROP: the extension is still there');
$writer->query_safe('COMMIT');
$writer->quit;
check_no_leftovers($node, $ended);
$node->safe_psql('postgres', 'DROP EXTENSION background_ddl CASCADE');
is($node->safe_psql('postgres', "SELECT count(*) FROM busy_mv"), '20000',
	'refused DROP: the job\'s view is intact');

# Odd identifiers everywhere.
$node->safe_psql('postgres', q{
CREATE EXTENSION background_ddl;
CREATE SCHEMA "we""ird sch";
CREATE TABLE "we""ird sch"."ta ble ""q""" AS SELECT g AS "i d" FROM generate_series(1, 20000) g;
});
$job = submit_job($node, q{CREATE MATERIALIZED VIEW "we""ird sch"."m v ""x""" AS SELECT "i d" FROM "we""ird sch"."ta ble ""q"""});
ok(wait_job_state($node, $job, 'succeeded'), 'odd identifiers: job succeeded');
is($node->safe_psql('postgres', "SELECT target, strategy FROM pg_stat_background_ddl WHERE id = $job"),
	q{"we""ird sch"."m v ""x"""|ctid chunks}, 'odd identifiers: quoted target, chunked');
is($node->safe_psql('postgres', q{SELECT count(*) FROM "we""ird sch"."m v ""x"""}), '20000',
	'odd identifiers: content');
check_no_leftovers($node, $job);

# 8. A superuser's job on another role's objects runs that role's code as
# that role, as the blocking statement does: REFRESH of alice's view (its
# query as its owner) and the job's own (chunked) index build on alice's
# table (its expressions as the table's owner).
# only_alice fails anywhere else.
$node->safe_psql('postgres', q{
CREATE FUNCTION only_alice(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN
       IF current_user <> 'alice' THEN RAISE EXCEPTION 'only_alice ran as %', current_user; END IF;
       RETURN x;
     END $$;
SET ROLE alice;
CREATE TABLE alice_owned AS SELECT g AS id FROM generate_series(1, 200000) g;
CREATE MATERIALIZED VIEW alice_view AS SELECT only_alice(id) AS id FROM alice_owned;
RESET ROLE;
});
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT only_alice(1)');
like($err, qr/only_alice ran as postgres/, "only_alice fails as anyone but alice");
$job = submit_job($node, 'REFRESH MATERIALIZED VIEW alice_view');
ok(wait_job_state($node, $job, 'succeeded'), "a superuser's REFRESH of alice's view runs its query as alice")
  or diag(job_field($node, $job, 'error'));
is($node->safe_psql('postgres', 'SELECT count(*) FROM alice_view'), '200000', "REFRESH as alice: every row");
$job = submit_job($node, 'CREATE INDEX alice_expr ON alice_owned (only_alice(id))');
is(job_field($node, $job, 'strategy'), 'index built chunk by chunk', 'the index job is our own build');
ok(wait_job_state($node, $job, 'succeeded'),
	"a superuser's index on alice's table runs its expression as alice")
  or diag(job_field($node, $job, 'error'));
is($node->safe_psql('postgres', q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'alice_expr'::regclass}),
	't', 'the index is valid');

is(is_superuser('mallory') . is_superuser('alice') . is_superuser('bob'), 'fff',
	'nobody became a superuser');
$node->stop;
done_testing();
