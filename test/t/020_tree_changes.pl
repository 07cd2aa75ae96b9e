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
#    another attached mid-backfill restart and end exact;
#  - partition DDL and writers never deadlock with a job: its restart
#    locks the partitioned table before its partitions (PostgreSQL's
#    order), so a writer in the middle of a transaction makes it wait at
#    the parent, holding no partition; a DETACH PARTITION of the partition
#    whose index a job builds (CREATE INDEX CONCURRENTLY waits for the
#    DETACH's snapshot) finds the job giving way, not an attempt lost;
#    pg_partman's run_maintenance() during a view job and an index job
#    over its set succeeds, and so do the jobs, in one attempt each.
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

# 5. A restart under a writer: the tree changes while the job is held,
#    and a writer updates a row through the parent (in the partition
#    created last of those the job captures) and stays in its transaction.
#    The restart waits for it at the partitioned table, holding none of its
#    partitions; the writer moves a row into another partition meanwhile
#    (its deadlock_timeout short: a cycle would fail it), and a DETACH
#    PARTITION queues behind it.  All of them succeed.
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node, 'CREATE MATERIALIZED VIEW mv_order AS SELECT id, k, v FROM p');
ok(held_at_hold($node), 'mv_order: the job waits in its backfill');
$node->safe_psql('postgres', 'CREATE TABLE p7 PARTITION OF p FOR VALUES FROM (120001) TO (140001)');
my $writer = $node->background_psql('postgres');
$writer->set_query_timer_restart;
$writer->query_safe("SET deadlock_timeout = '10ms'");
$writer->query_safe('BEGIN');
$writer->query_safe('UPDATE p SET v = v + 1 WHERE id = 100002');
release_hold($node, $hold);
ok( $node->poll_query_until('postgres',
		"SELECT waiting_on LIKE 'a lock: AccessExclusiveLock on p held by pid %' FROM pg_stat_background_ddl WHERE id = $job"),
	'mv_order: its restart waits for the writer at the partitioned table');
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM pg_locks l JOIN pg_partition_tree('p') t ON t.relid = l.relation
		 WHERE t.level > 0 AND l.pid IN (SELECT pid FROM pg_stat_background_ddl WHERE id = $job)}),
	'0', 'mv_order: holding none of its partitions');
$writer->query_safe('UPDATE p SET id = 10 WHERE id = 100003');
pass('mv_order: the writer moves a row into another partition meanwhile');
my $detach = $node->background_psql('postgres');
$detach->set_query_timer_restart;
$detach->query_until(qr/detaching/, "\\echo detaching\nALTER TABLE p DETACH PARTITION p7;\n\\echo detached\n");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE 'ALTER TABLE p DETACH%' AND wait_event_type = 'Lock'"),
	'mv_order: a DETACH PARTITION waits its turn');
$writer->query_safe('COMMIT');
$detach->query_until(qr/detached/, '');
$detach->quit;
$writer->quit;
pass('mv_order: the writer committed and the DETACH PARTITION ended');
restarted_and_exact('mv_order', $job, 'SELECT id, k, v FROM p',
	'a partition of "p" was attached, detached, created, dropped or rewritten');
is($node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
	'1', 'mv_order: in one attempt');
unlike(slurp_file($node->logfile), qr/deadlock detected/, 'no deadlock so far');

# 6. The index job builds a partition's index as CREATE INDEX CONCURRENTLY
#    does, whose last wait is for every older snapshot: a DETACH PARTITION
#    of that partition, waiting for the build with its snapshot taken,
#    closes a cycle.  The job looks for it first (its deadlock_timeout is
#    10 ms) and gives way: the DETACH succeeds, the job ends in one attempt.
#    (The DETACH's own deadlock_timeout is long here, so that it cannot
#    look first: with the default second, it could when the build's wait
#    began within 10 ms of its look.)
create_slow_function($node, 'slowk', 'int');
$node->safe_psql('postgres', q{
CREATE TABLE q (id int NOT NULL, v int NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE q1 PARTITION OF q FOR VALUES FROM (1) TO (100001);
CREATE TABLE q2 PARTITION OF q FOR VALUES FROM (100001) TO (200001);
INSERT INTO q SELECT g, g FROM generate_series(1, 15000) g;
INSERT INTO q SELECT g, g FROM generate_series(100001, 100100) g;
ANALYZE q;
});
$job = submit_job($node, 'CREATE INDEX q_slow_idx ON q (slowk(v))',
	before => 'SET bgddl_test.slow = on;');
ok( $node->poll_query_until('postgres', qq{
		SELECT p.relid = 'q1'::regclass AND p.phase = 'building index: scanning table'
		  FROM pg_stat_progress_create_index p
		 WHERE p.pid = (SELECT pid FROM pg_stat_background_ddl WHERE id = $job)}),
	'q_slow_idx: the job builds the index of q1');
my $offset = -s $node->logfile;
is($node->psql('postgres', "SET deadlock_timeout = '1min'; ALTER TABLE q DETACH PARTITION q1"),
	0, 'q_slow_idx: DETACH PARTITION of the partition being indexed succeeds');
ok(wait_job_state($node, $job, 'succeeded'), 'q_slow_idx: the job succeeded');
is($node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
	'1', 'q_slow_idx: in one attempt');
like(slurp_file($node->logfile, $offset),
	qr/background DDL job $job gives its worker back until .*: a lock held by a statement that waited for the job \(a deadlock, in which the job gave way\)/,
	'q_slow_idx: the job gave way in the deadlock');
like(slurp_file($node->logfile, $offset),
	qr/background DDL job $job gave way in a deadlock, and goes on: deadlock detected\n.*DETAIL:  Process \d+ waits for/,
	'q_slow_idx: the log says what deadlocked with it');
like($node->safe_psql('postgres', "SELECT string_agg(message, ' ') FROM ddl_messages($job)"),
	qr/gave way in a deadlock/, 'q_slow_idx: and so do its messages');
is($node->safe_psql('postgres', q{
	SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = 'q_slow_idx'::regclass)
	   AND NOT EXISTS (SELECT FROM pg_index WHERE indrelid = 'q1'::regclass)}),
	't', 'q_slow_idx: valid over q2, and nothing left on the detached q1');

# 7. pg_partman's maintenance (partitions made ahead, old ones detached and
#    dropped) during a view job and during an index job over its set, each
#    job started again and again while the maintenance runs: no statement
#    fails, every job succeeds exact, in one attempt.
$node->safe_psql('postgres', q{
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE TABLE ev (id int NOT NULL, at timestamptz NOT NULL, v int NOT NULL) PARTITION BY RANGE (at);
SELECT partman.create_parent('public.ev', 'at', 'native', 'daily', p_premake := 2,
                             p_start_partition := (current_date - 6)::text);
UPDATE partman.part_config SET retention = '30 days', retention_keep_table = false
 WHERE parent_table = 'public.ev';
INSERT INTO ev SELECT g, current_date - 6 + (g % 8) * interval '1 day' + (g % 1000) * interval '1 minute', g
  FROM generate_series(1, 40000) g;
ANALYZE ev;
});
my $ev_query = 'SELECT id, at, slowk(v) AS v FROM ev WHERE v % 3 = 0';
for my $round (1 .. 6)
{
	my $kind = $round % 2 ? 'view' : 'index';
	my $name = "ev_$round";
	# a view job is held at its cut-over until the maintenance has ended
	# (its result is compared with the query's afterwards)
	my $hold = $kind eq 'view' ? hold_at($node, 'cutting over') : undef;
	my $job = submit_job($node,
		$kind eq 'view' ? "CREATE MATERIALIZED VIEW $name AS $ev_query" : "CREATE INDEX $name ON ev (slowk(v))",
		before => 'SET bgddl_test.slow = on;');
	# a partition more made ahead, and (from the second round) the oldest
	# dropped (deadlock_timeout long, as in 6.)
	$node->safe_psql('postgres', qq{
		SET deadlock_timeout = '1min';
		UPDATE partman.part_config SET premake = premake + 1,
		       retention = CASE WHEN $round > 1 THEN (7 - $round) || ' days' ELSE retention END
		 WHERE parent_table = 'public.ev';
		SELECT partman.run_maintenance('public.ev');
		INSERT INTO ev SELECT g, now() + (g % 3) * interval '1 day', g FROM generate_series(1, 300) g;
	});
	if ($hold)
	{
		ok(held_at_hold($node), "$name: the job reached its cut-over");
		release_hold($node, $hold);
	}
	ok(wait_job_state($node, $job, 'succeeded'), "$name: the $kind job succeeded");
	is($node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
		'1', "$name: in one attempt");
	if ($kind eq 'view')
	{
		is(differences($node, $name, $ev_query), '0', "$name: its content equals the query");
		next;
	}
	is( $node->safe_psql('postgres', qq{
			SELECT bool_and(i.indisvalid)
			   AND count(*) FILTER (WHERE t.isleaf) = (SELECT count(*) FROM pg_partition_tree('ev') WHERE isleaf)
			  FROM pg_partition_tree('$name') t JOIN pg_index i ON i.indexrelid = t.relid}),
		't', "$name: valid, with a valid index on every leaf of ev");
}
unlike(slurp_file($node->logfile), qr/ERROR:  deadlock detected|background DDL job \d+ (failed|could not)/,
	'no statement failed in a deadlock, no job failed');

$node->stop;
done_testing();
