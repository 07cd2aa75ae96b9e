# A production server around the jobs: clean stops, signals from a DBA, a
# reload, a limit that will be hit again, DROP DATABASE, a hot standby, a
# synchronous standby that is down, and a promotion mid-backfill.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('primary', q{
background_ddl.batch_time = '20ms'
background_ddl.max_workers_per_job = 1
}, allows_streaming => 1);

$node->safe_psql('postgres', q{
CREATE TABLE events (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL);
INSERT INTO events SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 300000) g;
CREATE TABLE slow_rows (id int);
-- (its index builds in about 20 s: longer than a round waits for the view's worker, which the
-- rate limit may send away for 5 s; a build of 3,000 rows once ended within that wait)
INSERT INTO slow_rows SELECT generate_series(1, 10000);
CREATE FUNCTION slow_id(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.001); RETURN $1; END $$;
CREATE ROLE watcher LOGIN;  -- no privileges: reads what a job waits for all the same
});

# The worker pid of a running job, polled until it has one
sub worker_pid
{
	my ($job, $db) = @_;
	$node->poll_query_until($db // 'postgres',
		"SELECT pid IS NOT NULL FROM pg_stat_background_ddl WHERE id = $job")
	  or return undef;
	return $node->safe_psql($db // 'postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job");
}

sub job_row
{
	my ($job, $columns) = @_;
	return $node->safe_psql('postgres', "SELECT $columns FROM pg_stat_background_ddl WHERE id = $job");
}

# --- Clean stops: ten fast and smart stops mid-job are no attempt --------
my $mv_query = 'SELECT id, account, upper(payload) AS p FROM events';
my $mv = submit_paced($node, "CREATE MATERIALIZED VIEW mv_stops AS $mv_query", 5000);
my $index = submit_job($node, 'CREATE INDEX slow_idx ON slow_rows (slow_id(id))');
my $log_start = -s $node->logfile;
for my $round (1 .. 10)
{
	my $mode = $round % 2 ? 'fast' : 'smart';
	ok(defined worker_pid($mv) && defined worker_pid($index), "stop $round: both jobs have a worker");
	$node->stop($mode);
	$node->start;
	note("after stop $round: " . $node->safe_psql('postgres',
		"SELECT string_agg(id || ' ' || attempts || ' ' || in_flight, ', ' ORDER BY id) FROM background_ddl.job"));
}
is( $node->safe_psql('postgres',
		"SELECT string_agg(state || ' ' || attempts, ', ' ORDER BY id) FROM background_ddl.job
		  WHERE id IN ($mv, $index)"),
	'running 1, running 1', 'after ten stops: both still running, attempts 1');
$node->safe_psql('postgres', "SELECT alter_ddl($mv, max_rate => 'infinity')");
ok(wait_job_state($node, $mv, 'succeeded'), 'the view succeeded after ten stops');
ok(wait_job_state($node, $index, 'succeeded'), 'the index succeeded after ten stops');
is(job_row($mv, 'attempts') . job_row($index, 'attempts'), '11', 'neither stop was an attempt');
is(differences($node, 'mv_stops', $mv_query), '0', 'the view is exact');
is($node->safe_psql('postgres', "SELECT indisvalid FROM pg_index WHERE indexrelid = 'slow_idx'::regclass"),
	't', 'the index is valid');
my $log = slurp_file($node->logfile, $log_start);
like($log, qr/background DDL job $mv stops: its worker was asked to exit/, 'the log says why the job stopped');
unlike($log, qr/canceling statement due to user request/, 'no "canceling statement" in the log');

# --- pg_cancel_backend and pg_terminate_backend of a worker --------------
my $sig = submit_paced($node, "CREATE MATERIALIZED VIEW mv_signals AS $mv_query", 20000);
my $pid = worker_pid($sig);
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
ok( $node->poll_query_until('postgres',
		"SELECT pid IS NOT NULL AND pid <> $pid FROM pg_stat_background_ddl WHERE id = $sig"),
	'pg_cancel_backend: the job goes on in another worker');
$pid = worker_pid($sig);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok( $node->poll_query_until('postgres',
		"SELECT pid IS NOT NULL AND pid <> $pid FROM pg_stat_background_ddl WHERE id = $sig"),
	'pg_terminate_backend: the job goes on in another worker');
$node->safe_psql('postgres', "SELECT alter_ddl($sig, max_rate => 'infinity')");
ok(wait_job_state($node, $sig, 'succeeded'), 'the signalled job succeeded');
is(job_row($sig, 'attempts'), '1', 'signals cost no attempt');
is(differences($node, 'mv_signals', $mv_query), '0', 'the signalled job is exact');

# A statement_timeout (SQLSTATE 57014 as a cancel) is still the job's error
my $timeout = submit_job($node, 'CREATE MATERIALIZED VIEW mv_timeout AS SELECT x FROM (SELECT 1 AS x, pg_sleep(2)) s',
	before => "SET statement_timeout = '200ms';");
ok(wait_job_state($node, $timeout, 'failed'), 'statement_timeout: the job failed');
is(job_row($timeout, 'error_sqlstate || attempts'), '570141', 'statement_timeout: 57014, one attempt');

# --- A reload reaches a running job ---------------------------------------
my $hold = hold_at($node, 'chunk 3');
my $reload_query = 'SELECT id, md5(md5(md5(payload))) AS p FROM events';
my $reload = submit_job($node, "CREATE MATERIALIZED VIEW mv_reload AS $reload_query");
ok(held_at_hold($node), 'reload: the job is held after its third chunk');
my $reloaded_at = $node->safe_psql('postgres',
	"ALTER SYSTEM SET background_ddl.batch_time = '1s'; SELECT pg_reload_conf(); SELECT clock_timestamp()");
$reloaded_at = (split /\n/, $reloaded_at)[-1];
release_hold($node, $hold);
ok(wait_job_state($node, $reload, 'succeeded'), 'reload: the job succeeded');
cmp_ok(
	$node->safe_psql('postgres',
		"SELECT max(extract(epoch FROM duration)) FROM background_ddl.chunk
		  WHERE job_id = $reload AND done_at > '$reloaded_at'"),
	'>=', 0.2, 'reload: chunks after it grew toward the new batch time of 1 s');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.batch_time; SELECT pg_reload_conf()');

# --- The job row is written a few times a second, not once per chunk ------
my $job_updates = "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relid = 'background_ddl.job'::regclass";
my $updates_before = $node->safe_psql('postgres', $job_updates);
my $busy = submit_job($node, "CREATE MATERIALIZED VIEW mv_busy AS $reload_query");
$node->safe_psql('postgres', "SELECT alter_ddl($busy, batch_time => '10ms')");
ok(wait_job_state($node, $busy, 'succeeded'), 'job row: the job succeeded');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type LIKE 'background_ddl worker%'"),
	'job row: its workers exited (and flushed their statistics)');
my $chunks = job_row($busy, 'chunks_done');
my $updates = $node->safe_psql('postgres', $job_updates) - $updates_before;
cmp_ok($chunks, '>=', 30, "job row: the job took $chunks chunks");
cmp_ok($updates, '<', $chunks / 2, "job row: $updates updates for $chunks chunks");
is(differences($node, 'mv_busy', $reload_query), '0', 'job row: the job is exact');

# --- A configured limit will be hit again: one attempt --------------------
my $tmp = submit_job($node, 'CREATE INDEX events_payload_idx ON events (payload)',
	before => "SET temp_file_limit = '64kB'; SET maintenance_work_mem = '1MB';");
ok(wait_job_state($node, $tmp, 'failed'), 'temp_file_limit: the job failed');
is(job_row($tmp, 'error_sqlstate || attempts'), '534001', 'temp_file_limit: 53400 at the first attempt');

# --- A removal that cannot finish ends the failed job at once --------------
$hold = hold_at($node, 'chunk 1');
my $stuck = submit_job($node, 'CREATE TABLE ctas_stuck AS SELECT id, 1 / (id - 250000) AS x FROM events');
ok(held_at_hold($node), 'stuck: the job is held after its first chunk');
my $hidden = $node->safe_psql('postgres',
	"SELECT 'background_ddl.ctas_' || target_oid FROM background_ddl.job WHERE id = $stuck");
$node->safe_psql('postgres', "CREATE VIEW on_hidden AS SELECT * FROM $hidden");
release_hold($node, $hold);
ok(wait_job_state($node, $stuck, 'failed'), 'stuck: the job failed');
like(job_row($stuck, 'error'),
	qr/^division by zero \(what the job created could not all be removed: cannot drop table .*ctas_\d+ because other objects depend on it\)$/,
	'stuck: the error says what stayed and why');
is(job_row($stuck, 'attempts'), '1', 'stuck: the removal was not retried');
$node->safe_psql('postgres', "DROP VIEW on_hidden; DROP TABLE $hidden; DROP MATERIALIZED VIEW IF EXISTS ctas_stuck");

# --- DROP DATABASE while a job runs ---------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE dropme');
$node->safe_psql('dropme', q{
CREATE EXTENSION background_ddl;
CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 100000) g;
});
my $dropme_oid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'dropme'");
# Slow rows, not a rate limit: a rate-limited worker may give its slot back
# between chunks, and the job then has no worker to look at
create_slow_function($node, 'slow', 'int', 'dropme');
my $doomed = submit_job($node, 'CREATE MATERIALIZED VIEW doomed AS SELECT slow(id) AS id FROM t',
	db => 'dropme', before => 'SET bgddl_test.slow = on;');
ok(defined worker_pid($doomed, 'dropme'), 'DROP DATABASE: the job has a worker');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE dropme');
is($ret, 0, 'DROP DATABASE without FORCE works while a job runs') or diag($err);
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE datid = $dropme_oid"), '0',
	'nothing of ours is left in the dropped database');
my $after_drop = submit_job($node, 'CREATE MATERIALIZED VIEW after_drop AS SELECT 1 AS x');
ok(wait_job_state($node, $after_drop, 'succeeded'), 'jobs of other databases go on');

# --- A hot standby shows the primary's jobs and controls nothing -----------
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;

my $running = submit_paced($node, "CREATE MATERIALIZED VIEW mv_standby AS $mv_query", 2000);
ok(defined worker_pid($running), 'standby: a job runs on the primary');
$node->wait_for_catchup($standby);
is( $standby->safe_psql('postgres',
		"SELECT state, waiting_on FROM pg_stat_background_ddl WHERE id = $running"),
	'running|runs on the primary', 'standby: the committed state, waiting on the primary');
for my $call ("cancel_ddl($running)", "pause_ddl($running)", "resume_ddl($running)",
	"alter_ddl($running, max_rate => 10)")
{
	my $name = (split /\(/, $call)[0];
	($ret, $out, $err) = $standby->psql('postgres',
		"DO \$\$ BEGIN PERFORM $call; EXCEPTION WHEN read_only_sql_transaction THEN RAISE NOTICE '%', SQLERRM; END \$\$");
	like($err, qr/NOTICE:  cannot execute $name\(\) during recovery/, "standby: $name refused with 25006");
}
($ret, $out, $err) = $standby->psql('postgres',
	'SET background_ddl = on; CREATE INDEX standby_idx ON events (account)');
like($err, qr/cannot execute CREATE INDEX in a read-only transaction/,
	'standby: a statement is refused as PostgreSQL refuses it');

# --- A synchronous standby that is down delays only its own commits -------
$node->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = '*'; SELECT pg_reload_conf()");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'"),
	'sync: the standby is synchronous');
$standby->stop;
ok( $node->poll_query_until('postgres',
		"SELECT waiting_on LIKE 'the synchronous standby%' FROM pg_stat_background_ddl WHERE id = $running"),
	'sync: a job whose commits wait says so');
is( $node->safe_psql('postgres',
		"SELECT waiting_on LIKE 'the synchronous standby%' FROM pg_stat_background_ddl WHERE id = $running",
		extra_params => [ '-U', 'watcher' ]),
	't', 'sync: a role without privileges reads it too');

my $waiting = $node->background_psql('postgres');
$waiting->set_query_timer_restart;
$waiting->query_until(qr/submitting/, q{
\echo submitting
SET background_ddl = on;
CREATE MATERIALIZED VIEW sync_waits AS SELECT 1 AS x;
});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND backend_type = 'client backend'"),
	'sync: a submit waits for the standby');
($ret, $out, $err) = $node->psql('postgres', q{
SET synchronous_commit = local;
SET lock_timeout = '10s';
SET background_ddl = on;
CREATE MATERIALIZED VIEW sync_local AS SELECT pg_sleep(3) IS NULL AS x;
SELECT cancel_ddl(last_ddl_job());
});
is($ret, 0, 'sync: a local session submits and cancels meanwhile') or diag($err);
is($out, 't', 'sync: the cancel took');

$standby->start;
$waiting->quit;
ok($node->poll_query_until('postgres',
		"SELECT state = 'succeeded' FROM pg_stat_background_ddl WHERE target = 'public.sync_waits'"),
	'sync: the waiting submit committed once the standby was back');
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET synchronous_standby_names; SELECT pg_reload_conf()");

# --- A promotion mid-backfill: the new primary resumes, exact under writes ---
ok( $node->poll_query_until('postgres',
		"SELECT state = 'running' AND pid IS NOT NULL FROM pg_stat_background_ddl WHERE id = $running"),
	'promotion: the job runs on the primary');
$node->wait_for_catchup($standby);
$node->stop('immediate');
$standby->promote;
write_some($standby, $_, 300000) for 1 .. 3;
$standby->safe_psql('postgres', "SELECT alter_ddl($running, max_rate => 'infinity')");
ok(wait_job_state($standby, $running, 'succeeded'), 'promotion: the promoted standby finished the job');
is(differences($standby, 'mv_standby', $mv_query), '0', 'promotion: the view is exact under writes');

done_testing();
