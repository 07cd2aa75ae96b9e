# A job survives a kill -9 of its worker and an immediate shutdown in the
# middle of its backfill: it resumes from its last checkpoint, the chunks
# committed before the crash are not computed again, and the final content
# equals the query; also for an aggregating view (partial aggregation: the
# partial rows of the checkpointed chunks survive in the staging relation).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
# pg_stat_statements after us: its hook calls ours (the regress suite has
# the other order).
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'background_ddl,pg_stat_statements'
background_ddl.batch_time = '20ms'
restart_after_crash = on
});
$node->append_conf('postgresql.conf', workers_per_job_conf());
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION background_ddl;
CREATE EXTENSION pg_stat_statements;
CREATE TABLE events AS
  SELECT g AS id, g % 1000 AS account, md5(g::text) AS payload
  FROM generate_series(1, 1500000) g;
});

my $plain_query = q{SELECT id, account, upper(payload) || md5(payload) AS p FROM events WHERE account < 700};
my $agg_query = q{SELECT account, count(*) AS n, sum(id) AS s, max(md5(md5(payload))) AS m,
	avg(id) AS a FROM events WHERE account < 700 GROUP BY account};
my $query = $plain_query;

# Submit a job and wait until it has checkpointed at least $min_chunks.
sub submit_and_wait_for_chunks
{
	my ($name, $min_chunks) = @_;
	my $job = $node->safe_psql('postgres',
		"SET background_ddl = on; CREATE MATERIALIZED VIEW $name AS $query; SELECT last_ddl_job();");
	ok( $node->poll_query_until('postgres',
			"SELECT chunks_done >= $min_chunks FROM pg_stat_background_ddl WHERE id = $job"),
		"$name: job $job checkpointed $min_chunks chunks");
	return $job;
}

sub check_resumed_job
{
	my ($name, $job, $before) = @_;

	ok( $node->poll_query_until('postgres',
			"SELECT state FROM pg_stat_background_ddl WHERE id = $job", 'succeeded'),
		"$name: job $job succeeded after the restart");

	# Chunks may have committed between our look and the crash; every one
	# we saw must still be there, committed at the same time, but the last
	# of each worker, whose commit may not have reached the disk.
	ok(chunks_kept($before, checkpoints($node, $job), $node),
		"$name: the chunks checkpointed before the crash were kept, not recomputed");
	is( $node->safe_psql('postgres',
			"SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
		'2', "$name: one resume");
	# With the tiling below: the resumed attempt computed exactly the blocks
	# that no checkpoint of the first covered (with two workers per job, a
	# gap the crash left below the last checkpoint, too).
	is( $node->safe_psql('postgres',
			"SELECT count(*) FILTER (WHERE attempt = 2) > 0
			        AND max(done_at) FILTER (WHERE attempt = 1) < min(done_at) FILTER (WHERE attempt = 2)
			   FROM background_ddl.chunk WHERE job_id = $job"),
		't', "$name: the resumed attempt computed only what the first left");
	is( $node->safe_psql('postgres',
			"SELECT bool_and(start_block = coalesce(prev_end, 0))
			   FROM (SELECT start_block, lag(end_block) OVER (ORDER BY start_block) AS prev_end
			           FROM background_ddl.chunk WHERE job_id = $job) c"),
		't', "$name: chunks tile the table with no gap and no overlap");
	is(differences($node, $name, $query), '0',
		"$name: content equals the query, no row lost or duplicated");
	is( $node->safe_psql('postgres',
			"SELECT rows_done = (SELECT count(*) FROM $name) FROM pg_stat_background_ddl WHERE id = $job"),
		't', "$name: rows_done counts each row once");
}

# 1. kill -9 of the worker: the postmaster restarts all processes.
my $job = submit_and_wait_for_chunks('mv_killed', 5);

# The hook chain kept pg_stat_statements working.
is( $node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_stat_statements WHERE query LIKE 'CREATE MATERIALIZED VIEW mv_killed%'"),
	't', 'pg_stat_statements saw the submit');

my $before = checkpoints($node, $job);
my $worker_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_background_ddl WHERE id = $job");
ok($worker_pid =~ /^\d+$/, "worker pid $worker_pid is shown while running");
kill_and_recover($node, $worker_pid);
check_resumed_job('mv_killed', $job, $before);
ok($before ne '', 'some chunks were checkpointed before the kill');

# 2. Immediate shutdown, then start again.
$job = submit_and_wait_for_chunks('mv_immediate', 5);
$node->stop('immediate');
$node->start;
$before = checkpoints($node, $job);
check_resumed_job('mv_immediate', $job, $before);

# 3. An aggregating view: partial aggregation, killed mid-build
$query = $agg_query;
$job = submit_and_wait_for_chunks('mv_agg_killed', 5);
is($node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	'partial aggregation', 'mv_agg_killed: partial aggregation');
$before = checkpoints($node, $job);
ok($node->poll_query_until('postgres', "SELECT pid IS NOT NULL FROM pg_stat_background_ddl WHERE id = $job"),
	'mv_agg_killed: running');
kill_and_recover($node, $node->safe_psql('postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job"));
check_resumed_job('mv_agg_killed', $job, $before);
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'partial_$job'"),
	'0', 'mv_agg_killed: the staging relation was dropped');
$query = $plain_query;

# 4. A one-batch job killed in its batch's transaction (held where the batch
# starts: a one-batch job computes the whole query at the cut-over) restarts
# from scratch and succeeds.
my $hold = hold_at($node, 'cutting over');
$job = $node->safe_psql('postgres', q{
SET background_ddl = on;
CREATE MATERIALIZED VIEW mv_one_batch AS SELECT account, count(*) AS n FROM events, pg_sleep(0) GROUP BY account;
SELECT last_ddl_job();});
ok(held_at_hold($node), 'one-batch job held as its batch starts');
ok( $node->safe_psql('postgres',
		"SELECT state = 'running' AND pid IS NOT NULL FROM pg_stat_background_ddl WHERE id = $job"),
	'one-batch job running');
$node->stop('immediate');
$node->start;
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();");
ok( $node->poll_query_until('postgres',
		"SELECT state FROM pg_stat_background_ddl WHERE id = $job", 'succeeded'),
	'one-batch job succeeded after the restart');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM mv_one_batch'), '1500000',
	'one-batch job content complete');

$node->stop;
done_testing();
