# The index build of our own (kind_chunked_index.c), for a btree that is not
# unique on a heap table, checkpointed chunk by chunk, under writers that
# insert, update (HOT and not), delete and roll savepoints back:
#  - a kill -9 of the worker or an immediate shutdown in the middle of the
#    scan resumes from the last checkpoint (at most one chunk lost), and one
#    at the write or the validation resumes there; each ends with an index
#    that amcheck finds consistent and holding every row (heapallindexed),
#    and an index scan finds what a sequential scan finds;
#  - the planner cannot use the index before it is valid;
#  - a pause in the middle keeps the checkpoints; a VACUUM while it is
#    paused (it may reclaim the rows whose tids the entries hold) makes the
#    scan start over, and the index is exact still;
#  - cancel_ddl leaves no index and no persisted entries.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('chunked_index', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
}, allows_streaming => 1);

# autovacuum off for the table: a VACUUM while the job's worker is down
# makes its scan start over (tested below), which the crash tests must not
# depend on.  The table starts all-visible (the validation reads only the
# blocks that are not); the writers clear that of the blocks they change.
$node->safe_psql('postgres', q{
CREATE EXTENSION amcheck;
CREATE TABLE w (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL)
  WITH (autovacuum_enabled = off);
INSERT INTO w SELECT g, g % 5000, md5(g::text) FROM generate_series(1, 600000) g;
CREATE SEQUENCE w_new START 1000000;
VACUUM w;
});

# Writers: HOT updates (payload is in no index of the jobs but one),
# updates of the indexed column, deletes, inserts, and writes rolled back.
# A crash ends their sessions: they start again after it.
my $writes = q{
\set id random(1, 600000)
BEGIN;
UPDATE w SET payload = md5(random()::text) WHERE id = :id;
UPDATE w SET account = account + 1 WHERE id = :id + 1;
SAVEPOINT s;
UPDATE w SET account = -1 WHERE id = :id + 2;
INSERT INTO w VALUES (nextval('w_new'), -2, 'rolled back');
ROLLBACK TO SAVEPOINT s;
DELETE FROM w WHERE id = :id + 3;
INSERT INTO w VALUES (nextval('w_new'), :id % 5000, md5(:id::text));
COMMIT;
};

sub inserted
{
	return $node->safe_psql('postgres', 'SELECT count(*) FROM w WHERE id >= 1000000');
}

sub chunks
{
	my ($job) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM background_ddl.chunk WHERE job_id = $job");
}

# The index holds every row, consistently, and scans find what the table has
sub check_index
{
	my ($label, $name, $column) = @_;
	is($node->safe_psql('postgres', "SELECT indisvalid AND indisready FROM pg_index WHERE indexrelid = '$name'::regclass"),
		't', "$label: the index is valid");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT bt_index_parent_check('$name'::regclass, true)) c"),
		'1', "$label: amcheck finds the index consistent, holding every row");
	is( $node->safe_psql('postgres',
			"SET enable_seqscan = off; SET enable_bitmapscan = off;
			 SELECT count(*), sum(id) FROM w WHERE $column IS NOT NULL"),
		$node->safe_psql('postgres', "SELECT count(*), sum(id) FROM w WHERE $column IS NOT NULL"),
		"$label: an index scan finds every row");
	return;
}

sub crash
{
	my ($fault, $job, $hold) = @_;
	if ($fault eq 'kill')
	{
		kill_and_recover($node, job_field($node, $job, 'pid'));
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}
	eval { $hold->quit };    # its session died with the crash
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
	return;
}

# Crashes in the middle of the scan, at the write, at the validation
my $round = 0;
for my $case ([ 'chunk 2', 'kill' ], [ 'chunk 2', 'immediate' ], [ 'writing the index', 'kill' ],
	[ 'validating the index', 'immediate' ])
{
	my ($point, $fault) = @$case;
	my $label = "$point / $fault";
	my $name = 'w_account_' . ++$round;
	my $offset = -s $node->logfile;
	my @writers = start_pgbench($node, $writes);
	my $inserted = inserted();
	my ($job, $hold) = submit_held_at($node, $point, "CREATE INDEX $name ON w (account)");
	is(job_field($node, $job, 'strategy'), 'index built chunk by chunk', "$label: our own build");
	is($node->safe_psql('postgres', "SELECT indisvalid FROM pg_index WHERE indexrelid = '$name'::regclass"),
		'f', "$label: the planner cannot use the index yet");
	my $before = chunks($job);
	ok($point !~ /^chunk/ || $before >= 2, "$label: chunks checkpointed before the crash ($before)");
	my $progress = job_field($node, $job, 'progress');
	cmp_ok($progress, '>=', 99.9, "$label: every block scanned, the progress shows it")
	  if $point !~ /^chunk/;
	crash($fault, $job, $hold);
	cmp_ok(job_field($node, $job, 'progress'), '>=', $progress,
		"$label: the progress shown before the crash ($progress) does not go back");
	stop_pgbench(@writers);
	@writers = start_pgbench($node, $writes);
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	unlike(stop_pgbench(@writers), qr/aborted/, "$label: the writers ran after the crash");
	ok(inserted() > $inserted, "$label: rows were written during the job");
	my $log = slurp_file($node->logfile, $offset);
	unlike($log, qr/starts over/, "$label: the scan did not start over");
	is(job_field($node, $job, 'attempts'), '2', "$label: two attempts");
	ok(job_field($node, $job, 'chunks_done') >= $before, "$label: chunks_done did not go back")
	  if $point =~ /^chunk/;
	check_index($label, $name, 'account');
	is(chunks($job), '0', "$label: the entries are deleted");
}

# An expression index with a predicate, built while rows are written
{
	my $label = 'an expression index with a predicate';
	my @writers = start_pgbench($node, $writes);
	my $job = submit_job($node, 'CREATE INDEX w_lower ON w (lower(payload)) WHERE account % 2 = 0');
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	unlike(stop_pgbench(@writers), qr/aborted/, "$label: the writers ran throughout");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT bt_index_parent_check('w_lower'::regclass, true)) c"),
		'1', "$label: amcheck finds it consistent, holding every row");
	is( $node->safe_psql('postgres',
			"SET enable_seqscan = off; SET enable_bitmapscan = off;
			 SELECT count(*) FROM w WHERE lower(payload) > '' AND account % 2 = 0"),
		$node->safe_psql('postgres', "SELECT count(*) FROM w WHERE lower(payload) > '' AND account % 2 = 0"),
		"$label: an index scan finds every row");
}

# Paused in the middle: the checkpoints are kept; with a VACUUM while it is
# paused, the scan starts over.
for my $vacuum (0, 1)
{
	my $label = 'paused in the scan' . ($vacuum ? ', VACUUM meanwhile' : '');
	my $name = 'w_paused_' . ++$round;
	my $offset = -s $node->logfile;
	my @writers = start_pgbench($node, $writes);
	my ($job, $hold) = submit_held_at($node, 'chunk 2', "CREATE INDEX $name ON w (account)");
	is($node->safe_psql('postgres', "SELECT pause_ddl($job)"), 't', "$label: pause_ddl");
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'paused'), "$label: paused");
	my $before = chunks($job);
	ok($before >= 2, "$label: its checkpoints are there ($before)");
	$node->safe_psql('postgres', 'VACUUM w') if $vacuum;
	is($node->safe_psql('postgres', "SELECT resume_ddl($job)"), 't', "$label: resume_ddl");
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	unlike(stop_pgbench(@writers), qr/aborted/, "$label: the writers ran throughout");
	my $log = slurp_file($node->logfile, $offset);
	if ($vacuum)
	{
		like($log, qr/background DDL job $job: the scan of table "w" for index "$name" starts over/,
			"$label: the scan started over");
	}
	else
	{
		unlike($log, qr/starts over/, "$label: the scan went on from its checkpoint");
	}
	check_index($label, $name, 'account');
}

# Paused before the validation, with a VACUUM meanwhile: rows that no chunk
# saw (added in one transaction during the scan, after its blocks) are in
# blocks that VACUUM sets all-visible, and the validation reads them all the
# same.  (Paused twice: in the scan, to hold it at the validation next.)
{
	my $label = 'paused before the validation, VACUUM meanwhile';
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', 'VACUUM w');
	my ($job, $hold) = submit_held_at($node, 'chunk 2', 'CREATE INDEX w_unseen ON w (account)');
	$node->safe_psql('postgres',
		"INSERT INTO w SELECT nextval('w_new'), g % 5000, 'unseen' FROM generate_series(1, 20000) g");
	is($node->safe_psql('postgres', "SELECT pause_ddl($job)"), 't', "$label: pause_ddl in the scan");
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'paused'), "$label: paused in the scan");
	$hold = hold_at($node, 'validating the index');
	is($node->safe_psql('postgres', "SELECT resume_ddl($job)"), 't', "$label: resume_ddl");
	ok(held_at_hold($node), "$label: held before the validation");
	is($node->safe_psql('postgres', "SELECT pause_ddl($job)"), 't', "$label: pause_ddl");
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'paused'), "$label: paused before the validation");
	$node->safe_psql('postgres', 'VACUUM w');
	is($node->safe_psql('postgres', "SELECT resume_ddl($job)"), 't', "$label: resume_ddl again");
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	unlike(slurp_file($node->logfile, $offset), qr/starts over/, "$label: the scan did not start over");
	check_index($label, 'w_unseen', 'account');
}

# Cancelled in the middle: nothing left
{
	my $label = 'cancelled';
	my ($job, $hold) = submit_held_at($node, 'chunk 2', 'CREATE INDEX w_cancelled ON w (account)');
	is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', "$label: cancel_ddl");
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'cancelled'), "$label: cancelled");
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'w_cancelled'"),
		'0', "$label: no index left");
	is(chunks($job), '0', "$label: no entries left");
}

# max_rate paces the scan: the rows it scans a second, measured over a
# window of 200,000 rows after the first 150,000 (each worker's first chunk
# is 256 blocks, more than the limit's share of a batch: it waits after
# it), are within 20 % of it.  The limit is set before the first chunk
# (rows made faster before it are paid back by waiting after).
{
	my $label = 'max_rate';
	my ($job, $hold) = submit_held_at($node, 'chunk 0', 'CREATE INDEX w_paced ON w (account)');
	$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 50000)");
	release_hold($node, $hold);
	my $rows = "SELECT rows_done FROM pg_stat_background_ddl WHERE id = $job";
	ok($node->poll_query_until('postgres', "SELECT ($rows) >= 150000"), "$label: the scan runs");
	my ($rows1, $time1) = ($node->safe_psql('postgres', $rows), time);
	ok($node->poll_query_until('postgres', "SELECT ($rows) >= $rows1 + 200000"), "$label: the scan goes on");
	my ($rows2, $time2) = ($node->safe_psql('postgres', $rows), time);
	my $rate = ($rows2 - $rows1) / ($time2 - $time1);
	ok(abs($rate - 50000) <= 10000, "$label: the scan's rate is within 20 % of max_rate ($rate rows/s)");
	$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 'infinity')");
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded once the limit is lifted");
	check_index($label, 'w_paced', 'account');
}

# max_rate paces the write too, in its one transaction (a worker that
# would wait long waits in place there, rather than give its slot back and
# lose the write): the entries at 200,000 rows/s take their time, where
# unpaced they take a fraction of a second, and the view says why.
{
	my $label = 'max_rate in the write';
	my ($job, $hold) = submit_held_at($node, 'writing the index',
		'CREATE INDEX w_write_paced ON w (account)');
	my $entries = $node->safe_psql('postgres', 'SELECT count(*) FROM w');
	$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 200000)");
	my $start = time;
	release_hold($node, $hold);
	ok( $node->poll_query_until('postgres',
			"SELECT waiting_on LIKE 'the rate limit of 200000 rows/s%' FROM pg_stat_background_ddl WHERE id = $job"
		),
		"$label: the write waits for the rate limit");
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	my $seconds = time - $start;
	ok($seconds >= 0.8 * $entries / 200000,
		"$label: $entries entries written in $seconds s, at most about the rate");
	check_index($label, 'w_write_paced', 'account');
}

# A failover in the middle of the scan: the promoted standby resumes from
# the chunks it received (their entries are WAL-logged), under writers
{
	my $label = 'failover';
	$node->backup('failover');
	my $standby = PostgreSQL::Test::Cluster->new('failover_standby');
	$standby->init_from_backup($node, 'failover', has_streaming => 1);
	$standby->start;
	# (the limit set before its first chunk: a job that starts at once may
	# otherwise be done before it)
	my ($job, $hold) = submit_held_at($node, 'chunk 0', 'CREATE INDEX w_failover ON w (account)');
	$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 50000)");
	release_hold($node, $hold);
	ok($node->poll_query_until('postgres', "SELECT count(*) >= 3 FROM background_ddl.chunk WHERE job_id = $job"),
		"$label: chunks checkpointed on the primary");
	$node->wait_for_catchup($standby);
	my $received = $standby->safe_psql('postgres', "SELECT count(*) FROM background_ddl.chunk WHERE job_id = $job");
	$node->stop('immediate');
	$standby->promote;
	my $offset = -s $standby->logfile;
	my @writers = start_pgbench($standby, $writes);
	$standby->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 'infinity')");
	ok(wait_job_state($standby, $job, 'succeeded'), "$label: the promoted standby finished the job");
	unlike(stop_pgbench(@writers), qr/aborted/, "$label: the writers ran");
	unlike(slurp_file($standby->logfile, $offset), qr/starts over/, "$label: the scan did not start over");
	ok( $standby->safe_psql('postgres', "SELECT chunks_done FROM pg_stat_background_ddl WHERE id = $job") >= $received,
		"$label: it went on from the $received chunks it had");
	is( $standby->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT bt_index_parent_check('w_failover'::regclass, true)) c"),
		'1', "$label: amcheck finds the index consistent, holding every row");
	$standby->stop;
	# The old primary, back, finishes the job it ran (nothing of the
	# standby's timeline reaches it)
	$node->start;
	$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 'infinity')");
	ok(wait_job_state($node, $job, 'succeeded'), "$label: the old primary, restarted, finished its own");
}

# Two workers scan the chunks (whatever BGDDL_WORKERS_PER_JOB says): a
# helper's chunk lost in a crash, below chunks committed after it, is a gap
# that the first worker scans after the restart.  The index's expression is
# slow (bgddl_test.slow), and a block holds 7 rows, so that the first
# worker is still scanning when the helper comes, and holds in its chunk.
create_slow_function($node, 'slow', 'int');
$node->safe_psql('postgres', q{
ALTER SYSTEM SET background_ddl.max_workers_per_job = 2;
SELECT pg_reload_conf();
CREATE TABLE h (id int, v int, t text);
INSERT INTO h SELECT g, CASE WHEN g % 7 <> 0 THEN g % 1000 END, repeat(md5(g::text), 30)
  FROM generate_series(1, 25000) g;
VACUUM h;
});
{
	my $label = "a helper's chunk lost in a crash";
	my $offset = -s $node->logfile;
	my ($job, $hold) = submit_held_at($node, 'helping', 'CREATE INDEX h_slow ON h (slow(id))',
		before => 'SET bgddl_test.slow = on;');
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'background_ddl: waiting for the job''s other workers'"),
		"$label: the first worker scanned the other chunks, and waits for the helper's");
	my $helper = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE query LIKE '%(helping)'");
	kill_and_recover($node, $helper);
	eval { $hold->quit };
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	unlike(slurp_file($node->logfile, $offset), qr/starts over/, "$label: the scan did not start over");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT bt_index_parent_check('h_slow'::regclass, true)) c"),
		'1', "$label: amcheck finds the index consistent, holding every row");
}

# The chunks' entries, each sorted by its scan, merged, and the btree
# written in the merge's order (index_btree_load.c; amcheck checks that
# order, the pages' high keys and downlinks): descending, nulls first and
# last, several columns, included columns, another collation, ties across
# chunks (every chunk holds every value of v; the nulls make posting lists
# longer than one may be), keys of 960 bytes (a tree of several levels),
# no deduplication, a low fillfactor, no entry lost or doubled; and with
# more chunks than a small maintenance_work_mem lets the write merge (each
# chunk's entries handed to the btree build's sort one after the other),
# which a last key column that sleeps a millisecond every 17 values makes.
$node->safe_psql('postgres', q{
CREATE FUNCTION paced(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF x % 17 = 0 THEN
    PERFORM pg_sleep(0.001);
  END IF;
  RETURN x;
END $$});
for my $case ([ 'h_desc', '(v DESC NULLS LAST, t) INCLUDE (id)', '', 3 ],
	[ 'h_nulls_first', '(v NULLS FIRST)', '', 3 ],
	[ 'h_collate', '(t COLLATE "C" DESC, v)', '', 3 ],
	[ 'h_lower', '(lower(t), v DESC)', '', 3 ],
	[ 'h_no_dedup', '(v) WITH (deduplicate_items = off)', '', 3 ],
	[ 'h_fillfactor', '(t, v) WITH (fillfactor = 10)', '', 3 ],
	[ 'h_no_merge', '(v, paced(v))', q{SET maintenance_work_mem = '1MB';}, 33 ])
{
	my ($name, $columns, $before, $min_chunks) = @$case;
	my $job = submit_job($node, "CREATE INDEX $name ON h $columns", before => $before);
	ok(wait_job_state($node, $job, 'succeeded'), "$name: succeeded");
	my $chunks = job_field($node, $job, 'chunks_done');
	ok($chunks >= $min_chunks, "$name: in $min_chunks chunks or more ($chunks)");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT bt_index_parent_check('$name'::regclass, true)) c"),
		'1', "$name: amcheck finds the index in order, holding every row");
}
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.max_workers_per_job; SELECT pg_reload_conf();');

# The build waits for older snapshots, not for their transactions; but for
# one that waits for a lock of the job, in the lock manager, as PostgreSQL
# does.  An ALTER TABLE that took its snapshot, then queued for the table
# while the chunks ran (held by lock 81), closes a cycle once the build
# waits for it: the job's deadlock detector finds it (the worker's
# deadlock_timeout is 10 ms, the ALTER's a minute here) and the job gives
# way; the ALTER succeeds, and the index ends valid in one attempt.
$node->safe_psql('postgres', q{
CREATE FUNCTION gate81(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 1 THEN PERFORM pg_advisory_xact_lock_shared(81); END IF; RETURN x; END $$;
CREATE TABLE g AS SELECT g AS id FROM generate_series(1, 20000) g;
});
my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(81)');
my $gate_job = submit_job($node, 'CREATE INDEX g_gate ON g (gate81(id))');
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 81 AND NOT granted}),
	'g_gate: the index job builds, held by lock 81');
my $offset = -s $node->logfile;
my $alter = $node->background_psql('postgres');
my $alter_pid = $alter->query_safe('SELECT pg_backend_pid()');
$alter->query_until(qr/sent/,
	"\\echo sent\nSET deadlock_timeout = '1min';\nALTER TABLE g ADD COLUMN extra int;\n\\echo altered\n");
ok( $node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Lock' AND backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = $alter_pid"),
	'g_gate: the ALTER TABLE queues for the table, with its snapshot');
$gate->query_safe('SELECT pg_advisory_unlock(81)');
ok(wait_job_state($node, $gate_job, 'succeeded'), 'g_gate: the job succeeded');
$alter->query_until(qr/altered/, '');
like(slurp_file($node->logfile, $offset),
	qr/background DDL job $gate_job gave way in a deadlock, and goes on: deadlock detected/,
	'g_gate: the job gave way in the deadlock');
is( $node->safe_psql('postgres', q{
	SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = 'g_gate'::regclass)
	   AND EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'g'::regclass AND attname = 'extra')}),
	't', 'g_gate: the ALTER added its column, and the index is valid');
is(job_field($node, $gate_job, 'attempts'), '1', 'g_gate: in one attempt');
$gate->quit;
$alter->quit;

$node->stop;
done_testing();
