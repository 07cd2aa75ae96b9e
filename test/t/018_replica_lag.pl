# The replica-lag throttle: with background_ddl.max_replica_lag set, a job
# waits between its batches while a streaming standby replays further behind
# than that, says which standby in waiting_on, and goes on once the standby
# catches up (pg_wal_replay_resume) or once alter_ddl lifts the limit for it.
# Every role reads what the job waits for (shared memory, not the worker's
# activity, which only privileged roles read).
# Chains of jobs on the primary (background_ddl.after) are replayed as any
# catalog change.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $primary = bgddl_node('primary', q{
background_ddl.batch_time = '20ms'
background_ddl.max_replica_lag = '1s'
wal_sender_timeout = '5s'
}, allows_streaming => 1);
$primary->safe_psql('postgres',
	'CREATE TABLE events AS SELECT g AS id, g % 100 AS account FROM generate_series(1, 40000) g');
# A role with no privileges: it sees what a job waits for, as the job's role
# does, but not the standby's name (as pg_stat_replication hides it); a role
# that may build the view, whose job waits for the standby as a superuser's
$primary->safe_psql('postgres', 'CREATE ROLE watcher LOGIN');
$primary->safe_psql('postgres',
	'CREATE ROLE builder LOGIN; GRANT SELECT, TRIGGER ON events TO builder; GRANT CREATE ON SCHEMA public TO builder');
create_slow_function($primary, 'slowk', 'int');
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "shared_preload_libraries = 'background_ddl'\n");
$standby->start;
$primary->wait_for_catchup($standby);

my $query = 'SELECT id, slowk(id) AS k, account FROM events';

# The query of a job's chunks as committed (the job row counts a helper's
# only later)
sub committed_chunks_query
{
	my ($job) = @_;
	return "SELECT count(*) FROM background_ddl.chunk WHERE job_id = $job";
}

# Wait until each of a job's workers (as many as the view counts) waits for
# the standby (a helper finishes the chunk it had when the first began to
# wait)
sub each_worker_waits
{
	my ($job) = @_;
	return $primary->poll_query_until('postgres',
		"SELECT count(*) = (SELECT workers FROM pg_stat_background_ddl WHERE id = $job)
		   FROM pg_stat_activity
		  WHERE backend_type = 'background_ddl worker' AND query LIKE 'background_ddl: waiting for % s behind %'");
}

# Start a slow job with the standby's replay paused; wait until the job
# waits for the standby, and check what the view says.
sub job_waiting_for_the_standby
{
	my ($name, $user) = @_;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	my $job = submit_job($primary, "CREATE MATERIALIZED VIEW $name AS $query",
		before => 'SET bgddl_test.slow = on;', user => $user);
	ok( $primary->poll_query_until('postgres',
			"SELECT waiting_on LIKE 'standby \"standby\": % s behind (% MB of WAL), more than max_replica_lag 1000 ms'
			   FROM pg_stat_background_ddl WHERE id = $job"),
		"$name: the job waits for the standby, and says so");
	is( $primary->safe_psql('postgres',
			"SELECT waiting_on LIKE 'a standby: % s behind%' FROM pg_stat_background_ddl WHERE id = $job",
			extra_params => [ '-U', 'watcher' ]),
		't', "$name: a role without privileges reads it too, without the standby's name");
	# Once each of its workers waits, it stays put while the standby does not
	# replay: the lag it reports grows, and no chunk is committed meanwhile
	ok(each_worker_waits($job), "$name: each of its workers waits");
	my $chunk_rows = committed_chunks_query($job);
	my $chunks = $primary->safe_psql('postgres', $chunk_rows);
	ok( $primary->poll_query_until('postgres',
			"SELECT substring(waiting_on from ': ([0-9.]+) s behind')::float8 >= 2.5
			   FROM pg_stat_background_ddl WHERE id = $job"),
		"$name: the lag it reports grows while replay is paused");
	is( $primary->safe_psql('postgres',
			"SELECT ($chunk_rows) = $chunks AND state = 'running' FROM pg_stat_background_ddl WHERE id = $job"),
		't', "$name: no chunk while it waits");
	return $job;
}

# Resume the standby's replay: the job succeeds, and the standby catches up
sub replay_resumed
{
	my ($job, $name) = @_;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
	ok(wait_job_state($primary, $job, 'succeeded'), "$name: once the standby replays again, the job succeeds");
	$primary->wait_for_catchup($standby);
	return;
}

my $job = job_waiting_for_the_standby('mv_lag');
replay_resumed($job, 'mv_lag');
is(differences($primary, 'mv_lag', $query), '0', 'its content equals the query');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM mv_lag'), '40000', 'the standby has the view');

# An ordinary role's job waits as a superuser's does (it reads the standbys'
# positions as the extension's catalog role, not as its own)
$job = job_waiting_for_the_standby('mv_builder', 'builder');
replay_resumed($job, "mv_builder (an ordinary role's)");

# alter_ddl lifts the limit for one job
$job = job_waiting_for_the_standby('mv_lifted');
is($primary->safe_psql('postgres', "SELECT alter_ddl($job, max_replica_lag => '0')"), 't', 'alter_ddl');
ok(wait_job_state($primary, $job, 'succeeded'), 'without its limit, the job succeeds with replay still paused');
is( $primary->safe_psql('postgres', "SELECT max_replica_lag FROM pg_stat_background_ddl WHERE id = $job"),
	'00:00:00', 'the view shows its own limit');
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$primary->wait_for_catchup($standby);

# A helper that joins a job while it waits for the standby waits too, from
# its first chunk on: the samples of the WAL position are the workers'
# together, so a helper started after replay stopped sees how far behind the
# standby is (with samples of its own it judged the standby no further
# behind than its own age, and took chunks for a second).  The job runs
# alone until it waits, then may have a helper.
{
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	my ($job, $hold) = submit_held_at($primary, 'planning',
		"CREATE MATERIALIZED VIEW mv_helper AS $query", before => 'SET bgddl_test.slow = on;');
	$primary->safe_psql('postgres', "SELECT alter_ddl($job, workers => 1)");
	release_hold($primary, $hold);
	my $lag = "substring(waiting_on from ': ([0-9.]+) s behind')::float8";
	ok($primary->poll_query_until('postgres', "SELECT $lag >= 1.5 FROM pg_stat_background_ddl WHERE id = $job"),
		'mv_helper: alone, the job waits for the standby');
	my $chunk_rows = committed_chunks_query($job);
	my $chunks = $primary->safe_psql('postgres', $chunk_rows);
	$primary->safe_psql('postgres', "SELECT alter_ddl($job, workers => 2)");
	ok($primary->poll_query_until('postgres', "SELECT workers = 2 FROM pg_stat_background_ddl WHERE id = $job"),
		'mv_helper: a helper joins it');
	ok(each_worker_waits($job), 'mv_helper: the helper waits as the first worker does');
	is( $primary->safe_psql('postgres',
			"SELECT ($chunk_rows) = $chunks AND workers = 2 FROM pg_stat_background_ddl WHERE id = $job"),
		't', 'mv_helper: no chunk while it waits, by the helper either');
	replay_resumed($job, 'mv_helper');
	is(differences($primary, 'mv_helper', $query), '0', 'mv_helper: its content equals the query');
}

# A job paced to last some 10 s (a look before each of its small chunks,
# each of which moves the WAL) with a limit of its own, 3 s: once the
# standby has stopped for longer, the job waits for it.
{
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	my ($job, $hold) = submit_held_at($primary, 'planning',
		'CREATE MATERIALIZED VIEW mv_long AS SELECT id, account FROM events');
	$primary->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 4000, max_replica_lag => '3s')");
	release_hold($primary, $hold);
	ok( $primary->poll_query_until('postgres',
			"SELECT state = 'succeeded' OR waiting_on LIKE 'standby \"standby\": % s behind%'
			   FROM pg_stat_background_ddl WHERE id = $job"),
		'mv_long: the job waits for the standby, or ends');
	like(job_field($primary, $job, 'waiting_on'), qr/s behind .* more than max_replica_lag 3000 ms/,
		'mv_long: it waits, the standby more than 3 s behind');
	replay_resumed($job, 'mv_long');
}

# An index built chunk by chunk waits for the standby in its write too,
# which is one transaction and waits in place: held before the write, with
# replay paused and the write paced to last a few seconds (max_rate), it
# comes to wait for the standby before the index is ready, and ends once
# replay resumes.
{
	my ($job, $hold) = submit_held_at($primary, 'writing the index',
		'CREATE INDEX events_account ON events (account)');
	$primary->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 10000)");
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	release_hold($primary, $hold);
	ok( $primary->poll_query_until('postgres',
			"SELECT waiting_on LIKE 'standby \"standby\": % s behind%' FROM pg_stat_background_ddl WHERE id = $job"),
		'the write of an index waits for the standby');
	is( $primary->safe_psql('postgres',
			"SELECT indisready FROM pg_index WHERE indexrelid = 'events_account'::regclass"),
		'f', 'in the middle of the write: the index is not ready yet');
	replay_resumed($job, 'the index job');
	is( $standby->safe_psql('postgres',
			'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM events WHERE account >= 0'),
		'40000', 'the standby finds every row through the index');
}

# A chain on the primary: the second job starts after the first, on the standby too.
my $first = submit_job($primary, 'CREATE MATERIALIZED VIEW mv_first AS SELECT account, count(*) AS n FROM events GROUP BY account');
my $second = $primary->safe_psql('postgres',
	"SELECT submit_ddl('CREATE MATERIALIZED VIEW mv_second AS SELECT sum(n) AS n FROM mv_first', 'chain-1')");
is( $primary->safe_psql('postgres', "SELECT submit_ddl('CREATE MATERIALIZED VIEW mv_second AS SELECT sum(n) AS n FROM mv_first', 'chain-1')"),
	$second, 'a retried submit_ddl with the same key returns the same job');
ok(wait_job_state($primary, $second, 'succeeded'), 'the view over the view succeeded');
is( $primary->safe_psql('postgres',
		"SELECT (SELECT finished_at FROM pg_stat_background_ddl WHERE id = $first)
		      <= (SELECT started_at FROM pg_stat_background_ddl WHERE id = $second)"),
	't', 'it started after the first had finished');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT n FROM mv_second'), '40000', 'the standby reads the chain\'s result');

$standby->stop;
$primary->stop;
done_testing();
