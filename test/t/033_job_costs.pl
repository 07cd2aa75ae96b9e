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
#  3. a job that writes no temporary file counts none;
#  4. a new materialized view, and a table of CREATE TABLE AS, have their
#     statistics when they are published (autovacuum is off: the job
#     collected them).
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
background_ddl.batch_time = '50ms'
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

done_testing();
