# What a job cost, against the server's own counters on a quiet server
# (nothing else writes: autovacuum off, no other session):
#  1. the WAL bytes of a materialized view's job are within 10% of what
#     pg_stat_wal counted while it ran (its workers wrote all but the
#     submit's and the scheduler's few records);
#  2. a job whose hash join spills to temporary files (work_mem of 64kB,
#     taken from its session, where merge and nested loop joins are off)
#     counts the bytes it wrote to them, within 10% of the size of the
#     files, which pg_stat_database counts for the database (a hash join
#     writes each block of its batch files once);
#  3. a job that writes no temporary file counts none; the pages it dirtied
#     are about its view's (no more than a third more: catalogs, its row);
#  4. a new materialized view, and a table of CREATE TABLE AS, have their
#     statistics when they are published (autovacuum is off: the job
#     collected them);
#  5. a job that waits for a lock counts its failed tries (retries) and the
#     time it waited (waited), and its waiting_on says how many tries
#     failed; a crash of its worker counts as a retry, and as nothing else;
#     a manual cut-over's wait counts, live, as the time it was ready, and
#     the changes written meanwhile count as the changes it caught up, and
#     the writer's session measured what its capture trigger took;
#  6. with one worker (max_workers), a job submitted while another holds it
#     counts the time it was queued, and the job it waited for did not wait
#     (beyond its start);
#  7. with background_ddl.estimate, the submit keeps estimate_ddl's
#     prediction, next to the rows and bytes the job made.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('job_costs', q{
autovacuum = off
background_ddl.max_workers = 1
background_ddl.batch_time = '50ms'
background_ddl.lock_timeout = '100ms'
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE TABLE big (id int, payload text);
INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 200000) g;
VACUUM (FREEZE, ANALYZE) big;
CHECKPOINT;
});

# The server's WAL and temporary file counters now, once no job worker is
# left (a worker's counters reach the server's when it exits)
sub counters
{
	$node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'background_ddl worker'})
	  or die 'a job worker did not exit';
	$node->safe_psql('postgres', 'SELECT pg_stat_force_next_flush()');
	return split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT wal_bytes FROM pg_stat_wal),
       (SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database())});
}

# 1. WAL
my ($wal_before, $temp_before) = counters();
my $job = submit_job($node, 'CREATE MATERIALIZED VIEW mv AS SELECT id, payload FROM big WHERE id % 2 = 0');
ok(wait_job_state($node, $job, 'succeeded'), "1: job $job succeeded");
check_no_leftovers($node, $job);
my ($wal_after, $temp_after) = counters();
my $server_wal = $wal_after - $wal_before;
my $job_wal = job_field($node, $job, 'wal_bytes');
cmp_ok($job_wal, '>', 0.9 * $server_wal, "1: the job's WAL, $job_wal bytes, is more than 90% of the server's, $server_wal");
cmp_ok($job_wal, '<=', $server_wal, '1: and no more than it');
is(job_field($node, $job, 'temp_bytes'), '0', '3: the job wrote no temporary file');
my ($dirtied, $mv_size) = split /\|/, job_field($node, $job, "dirtied_bytes || '|' || pg_relation_size('mv')");
cmp_ok($dirtied, '>=', $mv_size, "3: it dirtied $dirtied bytes, at least the view's $mv_size");
cmp_ok($dirtied, '<=', 4 / 3 * $mv_size, '3: and no more than a third more');

# 2. Temporary files
$node->safe_psql('postgres', 'CREATE TABLE other AS TABLE big; VACUUM ANALYZE other');
($wal_before, $temp_before) = counters();
$job = submit_job($node,
	'CREATE MATERIALIZED VIEW joined AS SELECT b.id, o.payload FROM big b JOIN other o ON o.id = b.id',
	before => "SET work_mem = '64kB'; SET enable_mergejoin = off; SET enable_nestloop = off;");
ok(wait_job_state($node, $job, 'succeeded'), "2: job $job succeeded");
($wal_after, $temp_after) = counters();
my $server_temp = $temp_after - $temp_before;
my $job_temp = job_field($node, $job, 'temp_bytes');
cmp_ok($server_temp, '>', 1000000, "2: the server counted $server_temp bytes of temporary files");
cmp_ok(abs($job_temp - $server_temp), '<=', 0.1 * $server_temp,
	"2: the job's, $job_temp bytes, are within 10% of them");
is($node->safe_psql('postgres', 'SELECT count(*) FROM joined'), '200000', '2: the view has its rows');

# 4. Statistics at publication
is( $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_stats WHERE tablename = 'mv') || ' ' ||
       (SELECT reltuples BETWEEN 90000 AND 110000 FROM pg_class WHERE relname = 'mv')}),
	'2 true', '4: the view has statistics of its two columns, and its row count');
$job = submit_job($node, 'CREATE TABLE copied AS SELECT id, payload FROM big WHERE id <= 50000');
ok(wait_job_state($node, $job, 'succeeded'), "4: CREATE TABLE AS job $job succeeded");
is( $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_stats WHERE tablename = 'copied') || ' ' ||
       (SELECT n_distinct FROM pg_stats WHERE tablename = 'copied' AND attname = 'id') || ' ' ||
       (SELECT reltuples FROM pg_class WHERE relname = 'copied')}),
	'2 -1 50000', '4: so does the table');
is(job_field($node, $job, "coalesce(nullif(waited - 'queued', '{}')::text, '-') || ' ' || coalesce(retries::text, '-')"),
	'- -', '5: a job that did not wait (but to start), nor try anything again, counts neither');

# 5. Waits and retries
$node->safe_psql('postgres', 'CREATE TABLE locked AS SELECT g AS id FROM generate_series(1, 1000) g');
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; INSERT INTO locked VALUES (0)');
$job = submit_job($node, 'CREATE MATERIALIZED VIEW waited AS SELECT id FROM locked');
ok( $node->poll_query_until('postgres', qq{
SELECT (retries->>'lock')::int >= 3 AND waiting_on ~ '^a lock.*; [0-9]+ tries failed so far\$'
  FROM pg_stat_background_ddl WHERE id = $job}),
	"5: job $job counts its failed tries for a lock, and says how many failed");
$holder->query_safe('COMMIT');
$holder->quit;
ok(wait_job_state($node, $job, 'succeeded'), '5: once the lock is let go, the job succeeds');
my ($lock_tries, $lock_waited, $reasons) = split /\|/, job_field($node, $job,
	"(retries->>'lock') || '|' || (waited->>'lock') || '|' || " .
	"(SELECT string_agg(k, ',') FROM jsonb_object_keys(waited - 'queued' || retries) k)");
cmp_ok($lock_tries, '>=', 3, "5: $lock_tries tries failed");
cmp_ok($lock_waited, '>', 0.2, "5: it waited $lock_waited s for the lock");
is($node->safe_psql('postgres', 'SELECT count(*) FROM waited'), '1001', '5: the view has the rows');
is($reasons, 'lock', '5: for nothing else');

my $hold;
($job, $hold) = submit_held_at($node, 'cutting over', 'CREATE MATERIALIZED VIEW crashed AS SELECT id FROM locked');
kill_held_worker($node, $job, $hold);
ok(wait_job_state($node, $job, 'succeeded'), "5: job $job succeeds after its worker's crash");
is(job_field($node, $job, 'retries'), '{"crash": 1}', '5: the crash is its one retry');

$node->safe_psql('postgres', "ALTER SYSTEM SET background_ddl.cutover = manual; SELECT pg_reload_conf()");
$job = submit_job($node, 'CREATE MATERIALIZED VIEW completed AS SELECT id FROM big');
ok( $node->poll_query_until('postgres', qq{
SELECT (waited->>'cutover')::float8 >= 2 FROM pg_stat_background_ddl WHERE id = $job}),
	"5: job $job, ready, counts the time it waits for complete_ddl while it waits");
is(job_field($node, $job, 'changes_caught_up') . ' ' . job_field($node, $job, "coalesce(capture_overhead_us::text, '-')"),
	'0 -', '5: it has caught up with no change yet, and measured no capture');
$node->safe_psql('postgres', 'INSERT INTO big SELECT g FROM generate_series(200001, 200040) g');
ok( $node->poll_query_until('postgres', qq{
SELECT capture_overhead_us BETWEEN 0.1 AND 100000 FROM pg_stat_background_ddl WHERE id = $job}),
	'5: the writer measured its capture trigger (2 calls of its 40)');
$node->safe_psql('postgres', "CALL complete_ddl($job)");
is(job_field($node, $job, 'changes_caught_up'), '40', '5: the job caught up with the 40 rows inserted meanwhile');
is($node->safe_psql('postgres', 'SELECT count(*) FROM completed'), '200040', '5: which the view has');
cmp_ok(job_field($node, $job, "(waited->>'cutover')::float8"), '>=', 2,
	'5: and keeps it once published');
is(job_field($node, $job, 'state'), 'succeeded', '5: which it is');

# 6. Queued
$node->safe_psql('postgres', "ALTER SYSTEM RESET background_ddl.cutover; SELECT pg_reload_conf()");
my $first;
($first, $hold) = submit_held_at($node, 'cutting over', 'CREATE MATERIALIZED VIEW queued_first AS SELECT id FROM locked');
$job = submit_job($node, 'CREATE MATERIALIZED VIEW queued_second AS SELECT id FROM locked');
ok( $node->poll_query_until('postgres', qq{
SELECT state = 'queued' AND now() - submitted_at >= '1 s' FROM pg_stat_background_ddl WHERE id = $job}),
	"6: job $job is queued for a second while job $first holds the one worker");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), "6: job $job succeeds once job $first let go of the worker");
cmp_ok(job_field($node, $job, "(waited->>'queued')::float8"), '>=', 1, '6: it counts the time it was queued');
cmp_ok(job_field($node, $first, "coalesce((waited->>'queued')::float8, 0)"), '<', 1,
	'6: the first job, which had the worker at once, counts less than that');

# 7. background_ddl.estimate: the submit keeps estimate_ddl's prediction,
#    next to what the job made and cost
$job = submit_job($node, 'CREATE MATERIALIZED VIEW estimated AS SELECT id, payload FROM big WHERE id % 2 = 0',
	before => 'SET background_ddl.estimate = on;');
ok(wait_job_state($node, $job, 'succeeded'), "7: job $job succeeded");
my ($estimated_rows, $rows, $estimated_bytes, $bytes) = split /\|/, $node->safe_psql('postgres',
	"SELECT estimate->>'rows', rows_done, estimate->>'bytes', pg_relation_size('estimated')
	   FROM pg_stat_background_ddl WHERE id = $job");
cmp_ok(abs($estimated_rows - $rows), '<=', $rows / 4,
	"7: the rows estimated at submit ($estimated_rows) are within a quarter of those made ($rows)");
cmp_ok(abs($estimated_bytes - $bytes), '<=', $bytes / 2,
	"7: the bytes estimated ($estimated_bytes) are within half of the view's size ($bytes)");
is( job_field($node, $job, q{estimate ?& ARRAY['wal_bytes', 'seconds', 'sampled_blocks', 'total_blocks']}),
	't', '7: with the WAL, time and sample the estimate measured');
is(job_field($node, $first, 'estimate IS NULL'), 't', '7: a job submitted without the setting keeps none');

done_testing();
