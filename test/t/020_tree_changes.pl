# A job survives what is done to its tables while it runs:
#  - a job that left the whole query to its cut-over (its changes spread
#    over the table), whose driving table is then rewritten (VACUUM FULL)
#    or whose partition tree changes right before the cut-over, restarts
#    its build and ends exact (it used to run its cut-over again and again
#    for ever);
#  - partial aggregation over a partitioned table whose tree changes in the
#    backfill restarts with its staging relation emptied (it used to fail:
#    "relation partial_<job> already exists");
#  - ctid chunks over a partitioned table whose partition is detached and
#    another attached mid-backfill restart and end exact.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('tree_changes', q{
background_ddl.batch_time = '10ms'
background_ddl.lock_timeout = '100ms'
});

$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL) WITH (fillfactor = 50);
INSERT INTO t SELECT g, g FROM generate_series(1, 60000) g;
CREATE TABLE p (id int NOT NULL, k int NOT NULL, v int NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (1) TO (20001);
CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (20001) TO (40001);
CREATE TABLE p3 PARTITION OF p FOR VALUES FROM (40001) TO (60001);
CREATE TABLE p4 PARTITION OF p FOR VALUES FROM (60001) TO (80001);
INSERT INTO p SELECT g, g % 37, g FROM generate_series(1, 80000) g;
ANALYZE t, p;
});

# Hold the job in its backfill, change most of its driving rows, and let it
# go on to its cut-over, where it is held again: it has left the whole
# query to the cut-over by then
sub leave_all_to_cutover
{
	my ($name, $query, $table) = @_;
	my $hold = hold_at($node, 'chunk 2');
	my $job = submit_job($node, "CREATE MATERIALIZED VIEW $name AS $query");
	ok(held_at_hold($node), "$name: the job waits in its backfill");
	$node->safe_psql('postgres', "UPDATE $table SET v = v + 1 WHERE id % 7 = $_") for (1 .. 5);
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET background_ddl.test_hold_point = 'cutting over'; SELECT pg_reload_conf();");
	$hold->query_safe('SELECT pg_advisory_unlock(4242)');
	$hold->query_safe('SELECT pg_advisory_lock(4242)');
	ok(held_at_hold($node), "$name: then at its cut-over");
	is($node->safe_psql('postgres', "SELECT kind_state->>'recompute_all' FROM background_ddl.job WHERE id = $job"),
		'1', "$name: it left the whole query to the cut-over");
	return ($job, $hold);
}

# The job succeeds within the usual bound, exact, having restarted its
# build once (the log says why), and leaves nothing behind
sub restarted_and_exact
{
	my ($name, $job, $query, $why) = @_;
	ok(wait_job_state($node, $job, 'succeeded'), "$name: the job succeeded");
	is(differences($node, $name, $query), '0', "$name: its content equals the query");
	like(slurp_file($node->logfile), qr/background DDL job $job: $why, restarting the backfill/,
		"$name: it restarted its build");
	unlike(slurp_file($node->logfile), qr/background DDL job $job .*(makes no progress|failed|interrupted)/,
		"$name: without an error or a lost attempt");
	check_no_leftovers($node, $job);
	return;
}

# 1. A plain table rewritten before the cut-over of a job that recomputes
#    the whole query there.
my ($job, $hold) = leave_all_to_cutover('mv_plain', 'SELECT id, v FROM t', 't');
$node->safe_psql('postgres', 'VACUUM FULL t');
release_hold($node, $hold);
restarted_and_exact('mv_plain', $job, 'SELECT id, v FROM t', 'table "t" was rewritten');

# 2. The same over a partitioned table whose tree changes before the
#    cut-over: a partition created, with rows.
($job, $hold) = leave_all_to_cutover('mv_tree', 'SELECT id, k, v FROM p', 'p');
$node->safe_psql('postgres', q{
CREATE TABLE p5 PARTITION OF p FOR VALUES FROM (80001) TO (100001);
INSERT INTO p SELECT g, g % 37, g FROM generate_series(80001, 85000) g;
});
release_hold($node, $hold);
restarted_and_exact('mv_tree', $job, 'SELECT id, k, v FROM p',
	'a partition of "p" was attached, detached, created, dropped or rewritten');

# 3. Partial aggregation over the partitioned table: a partition detached
#    and another attached in the backfill.  The restart empties the staging
#    relation and keeps it.
my $agg_query = 'SELECT k, count(*) AS n, sum(v) AS s FROM p GROUP BY k';
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node, "CREATE MATERIALIZED VIEW mv_agg AS $agg_query");
ok(held_at_hold($node), 'mv_agg: the job waits in its backfill');
like($node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	qr/^partial aggregation/, 'mv_agg: partial aggregation, with a staging relation');
$node->safe_psql('postgres', q{
ALTER TABLE p DETACH PARTITION p2;
CREATE TABLE p6 (LIKE p);
INSERT INTO p6 SELECT g, g % 37, g FROM generate_series(100001, 104000) g;
ALTER TABLE p ATTACH PARTITION p6 FOR VALUES FROM (100001) TO (120001);
});
release_hold($node, $hold);
restarted_and_exact('mv_agg', $job, $agg_query,
	'a partition of "p" was attached, detached, created, dropped or rewritten');

# 4. ctid chunks over the partitioned table: a partition dropped and one
#    attached mid-backfill.
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node, 'CREATE MATERIALIZED VIEW mv_chunks AS SELECT id, v FROM p WHERE k < 30');
ok(held_at_hold($node), 'mv_chunks: the job waits in its backfill');
$node->safe_psql('postgres', q{
DROP TABLE p3;
ALTER TABLE p ATTACH PARTITION p2 FOR VALUES FROM (20001) TO (40001);
});
release_hold($node, $hold);
restarted_and_exact('mv_chunks', $job, 'SELECT id, v FROM p WHERE k < 30',
	'a partition of "p" was attached, detached, created, dropped or rewritten');

$node->stop;
done_testing();
