# CREATE INDEX on a partitioned table as one job, on a partition set made by
# pg_partman (daily partitions and a default) with a day sub-partitioned by
# hash:
#  - killed (kill -9 of its worker) in the middle of the third partition's
#    build, the job resumes there: the indexes of the partitions finished
#    before are kept (same OIDs), the interrupted one is built again;
#  - writers on every partition are never blocked beyond their lock_timeout
#    while a job builds, attaches and validates;
#  - a partition created in the middle of the job gets its index; one
#    detached or dropped is skipped;
#  - at the end the parent index is valid, used by the planner, and every
#    partition's index passes amcheck's bt_index_check;
#  - a partition's matching index is attached instead of built, and cancel
#    detaches it again and leaves nothing the job created;
#  - a unique violation in one partition fails the job with PostgreSQL's
#    error and leaves no invalid index;
#  - CREATE INDEX IF NOT EXISTS rebuilds the invalid index that the recipe
#    done by hand left, and survives a kill in the middle.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('partitions', q{
restart_after_crash = on
background_ddl.lock_timeout = '100ms'
});

# In a session with bgddl_test.slow set (the jobs' sessions, whose settings
# their workers take), slowk() sleeps 10 ms every 50 rows: a partition's
# build takes about a second.
$node->safe_psql('postgres', q{
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE EXTENSION amcheck;
CREATE TABLE events (id bigint NOT NULL, at timestamptz NOT NULL, account int NOT NULL,
                     payload text) PARTITION BY RANGE (at);
SELECT partman.create_parent('public.events', 'at', 'native', 'daily', p_premake := 2,
                             p_start_partition := (current_date - 3)::text);
CREATE TABLE events_hashday PARTITION OF events
  FOR VALUES FROM (current_date + 20) TO (current_date + 21) PARTITION BY HASH (account);
CREATE TABLE events_hashday_0 PARTITION OF events_hashday FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE events_hashday_1 PARTITION OF events_hashday FOR VALUES WITH (MODULUS 2, REMAINDER 1);
-- 6 daily partitions (3 days back, today, 2 ahead), the default (30 days
-- ahead) and the hash-partitioned day: 9 leaves of 4,000 rows
INSERT INTO events
  SELECT g, CASE WHEN g % 9 < 6 THEN current_date - 3 + g % 9
                 WHEN g % 9 = 6 THEN current_date + 30 ELSE current_date + 20 END
            + (g % 1000) * interval '1 minute',
         g % 500, md5(g::text)
    FROM generate_series(1, 36000) g;
ANALYZE events;
});
create_slow_function($node, 'slowk', 'bigint');
my $leaves = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_partition_tree('events') WHERE isleaf");
is($leaves, '9', 'pg_partman made 7 leaves, and the hash-partitioned day 2');

# The indexes attached (at any depth) under a parent index, with their OIDs
sub attached_indexes
{
	my ($index) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT string_agg(relid::regclass::text || '=' || relid::oid, ' ' ORDER BY relid::regclass::text)
		  FROM pg_partition_tree('$index') WHERE isleaf});
}

# Every leaf index under a parent index is valid and passes bt_index_check,
# and every leaf of the table has one.
sub check_index_tree
{
	my ($index, $what) = @_;
	is( $node->safe_psql('postgres', qq{
			SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = '$index'::regclass)
			   AND (SELECT bool_and(i.indisvalid) FROM pg_partition_tree('$index') t
			          JOIN pg_index i ON i.indexrelid = t.relid)
			   AND (SELECT count(*) FROM pg_partition_tree('$index') WHERE isleaf) = $leaves}),
		't', "$what: the parent index and every partition's index are valid, one per leaf");
	is( $node->safe_psql('postgres', qq{
			SELECT count(*) FROM (SELECT bt_index_check(relid::regclass, true)
			                        FROM pg_partition_tree('$index') WHERE isleaf) c}),
		$leaves, "$what: bt_index_check passes on every partition's index");
	return;
}

# 1. Killed (kill -9 of its worker) in the middle of the third partition's
# build, then stopped (immediate shutdown) in the middle of the sixth: it
# resumes there each time.
my $job = submit_job($node, 'CREATE INDEX events_slow_idx ON events (slowk(id))',
	before => 'SET bgddl_test.slow = on;');

# Wait until the job builds the index of its partition number $done + 1,
# interrupt it ($how), and check that it resumes there.
sub interrupt_building
{
	my ($done, $how, $attempts) = @_;
	my $n = $done + 1;
	# (the view's phase is the build's progress, read in the same look: between
	# two steps of the build it is the job's own)
	ok( $node->poll_query_until('postgres', qq{
			SELECT j.kind_state ->> 'partitions_done' = '$done'
			   AND coalesce(j.kind_state ->> 'building_index', '0') <> '0'
			   AND p.relid = (j.kind_state ->> 'building_table')::oid
			   AND v.phase ~ '\\(partition events_\\S+, $n of 9\\)\$'
			  FROM background_ddl.job j
			  JOIN pg_stat_background_ddl v ON v.id = j.id
			  JOIN pg_stat_progress_create_index p ON p.pid = v.pid
			 WHERE j.id = $job}),
		"the job builds the index of partition $n, and the view names it ($n of 9)");
	my $before = attached_indexes('events_slow_idx');
	my $interrupted = $node->safe_psql('postgres',
		"SELECT kind_state ->> 'building_index' FROM background_ddl.job WHERE id = $job");
	is(scalar(split ' ', $before), $done, "$done partitions were indexed before the $how");
	if ($how eq 'crash')
	{
		kill_and_recover($node, $node->safe_psql('postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job"));
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}
	ok( $node->poll_query_until('postgres', qq{
			SELECT (kind_state ->> 'partitions_done')::int > $done OR state = 'succeeded'
			  FROM background_ddl.job WHERE id = $job}),
		"after the $how the job went on");
	ok(chunks_kept($before, attached_indexes('events_slow_idx')),
		"the partitions' indexes built before the $how are kept ($before)");
	# (on a loaded machine the build read as going on may have ended before
	# the $how: then its index is valid, and kept)
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_index WHERE indexrelid = $interrupted AND NOT indisvalid"),
		'0', "the invalid index the $how left was dropped");
	is( $node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
		$attempts, "attempts counts the $how");
	return;
}
interrupt_building(2, 'crash', 2);
interrupt_building(5, 'immediate shutdown', 3);
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
ok( $node->log_contains("background DDL job $job: dropped the index \"\\S+\" left by an interrupted build"),
	'the log says the interrupted builds were dropped');
check_index_tree('events_slow_idx', 'after the crash');

# 2. Writers on every partition while a job builds; in the middle of the
# job, a partition created, one detached and one dropped.
$node->safe_psql('postgres', q{
CREATE TABLE writer_stats (iterations int, errors int, max_latency interval);
CREATE TABLE writer_stop (stop boolean);
CREATE TABLE events_spare PARTITION OF events FOR VALUES FROM (current_date + 60) TO (current_date + 61);
INSERT INTO events VALUES (400000, current_date + 60, 1, 'spare');
});
my $hold = hold_at($node, 'chunk 3');
$job = submit_job($node, 'CREATE INDEX events_account_idx ON events (account, slowk(id))',
	before => 'SET bgddl_test.slow = on;');
ok(held_at_hold($node), 'the job waits before its fourth partition');
my $writer = $node->background_psql('postgres');
$writer->set_query_timer_restart;
$writer->query_until(qr/writing/, q{
\echo writing
SET lock_timeout = '1s';
DO $$
DECLARE
  started timestamptz;
  worst interval := '0';
  n int := 0;
  failed int := 0;
BEGIN
  LOOP
    EXIT WHEN EXISTS (SELECT FROM writer_stop);
    started := clock_timestamp();
    BEGIN
      INSERT INTO events VALUES (100000 + n, current_date - 3 + n % 6 + interval '1 hour', n % 500, 'w');
      INSERT INTO events VALUES (200000 + n, current_date + 20, n % 500, 'w');
      UPDATE events SET payload = 'u' WHERE id = 1 + n % 36000;
    EXCEPTION WHEN lock_not_available THEN
      failed := failed + 1;
    END;
    worst := greatest(worst, clock_timestamp() - started);
    n := n + 1;
    COMMIT;
  END LOOP;
  INSERT INTO writer_stats VALUES (n, failed, worst);
  COMMIT;
END $$;
});
$node->safe_psql('postgres', q{
CREATE TABLE events_extra PARTITION OF events FOR VALUES FROM (current_date + 40) TO (current_date + 41);
INSERT INTO events VALUES (300000, current_date + 40, 1, 'extra');
ALTER TABLE events DETACH PARTITION events_spare;
DROP TABLE events_default;
});
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'with writers busy, the job succeeded');
$node->safe_psql('postgres', 'INSERT INTO writer_stop VALUES (true)');
$writer->query_safe('SELECT 1');
$writer->quit;
my ($iterations, $errors, $latency) = split /\|/, $node->safe_psql('postgres',
	'SELECT iterations, errors, extract(epoch FROM max_latency) FROM writer_stats');
ok($iterations > 0, "the writers wrote ($iterations rounds of three statements)");
is($errors, '0', 'no writer waited beyond its lock_timeout of 1 s');
diag("longest round of the writers: ${latency} s");
# (a leaf was added before the job, one created, one detached and one
# dropped during it: as many leaves as before)
check_index_tree('events_account_idx', 'with writers');
ok( attached_indexes('events_account_idx') =~ /events_extra_account_slowk_idx/,
	'the partition created in the middle of the job has its index');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_index WHERE indrelid = 'events_spare'::regclass
		    AND indexrelid::regclass::text LIKE '%account%'"),
	'0', 'the partition detached in the middle of the job was skipped');
my $plan = $node->safe_psql('postgres',
	"SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT * FROM events WHERE account = 7");
like($plan, qr/Index Cond: \(account = 7\)/, 'the planner uses the index');

# 3. A partition's matching index is attached; cancel detaches it again and
# drops what the job built.
my $first_leaf = $node->safe_psql('postgres',
	"SELECT relid::regclass FROM pg_partition_tree('events') WHERE isleaf ORDER BY relid LIMIT 1");
$node->safe_psql('postgres', "CREATE INDEX pre_payload ON $first_leaf (payload)");
$hold = hold_at($node, 'chunk 3');
$job = submit_job($node, 'CREATE INDEX events_payload_idx ON events (payload)');
ok(held_at_hold($node), 'the job waits after three partitions');
like(attached_indexes('events_payload_idx'), qr/pre_payload/,
	'the existing matching index is attached, not built again');
# A table attached meanwhile with its own matching index: PostgreSQL attaches
# that index to the job's (invalid) one.
$node->safe_psql('postgres', q{
CREATE TABLE events_late (LIKE events);
CREATE INDEX late_payload ON events_late (payload);
ALTER TABLE events ATTACH PARTITION events_late FOR VALUES FROM (current_date + 50) TO (current_date + 51);
});
like(attached_indexes('events_payload_idx'), qr/late_payload/,
	'a partition attached meanwhile brings its index');
# An index the job built, rebuilt by REINDEX CONCURRENTLY (a new OID): still the job's.
my $built = $node->safe_psql('postgres', q{
	SELECT relid::regclass FROM pg_partition_tree('events_payload_idx')
	 WHERE isleaf AND relid::regclass::text NOT IN ('pre_payload', 'late_payload') LIMIT 1});
$node->safe_psql('postgres', "REINDEX INDEX CONCURRENTLY $built");
is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', 'cancel_ddl');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'the job is cancelled');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(indexrelid::regclass::text, ' ' ORDER BY indexrelid::regclass::text) FROM pg_index i JOIN pg_attribute a
		    ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] AND a.attname = 'payload'}),
	'late_payload pre_payload', 'cancel left no index on payload but those that existed');
is( $node->safe_psql('postgres',
		"SELECT bool_and(indisvalid AND NOT relispartition) FROM pg_index JOIN pg_class ON oid = indexrelid
		  WHERE indexrelid IN ('pre_payload'::regclass, 'late_payload'::regclass)"),
	't', 'the indexes that existed are valid and detached again');
$node->safe_psql('postgres', 'DROP TABLE events_late');

# 4. A unique violation in one partition fails the job with PostgreSQL's error.
$node->safe_psql('postgres',
	"INSERT INTO events SELECT id, at, account, payload FROM events WHERE id = 13");
$job = submit_job($node, 'CREATE UNIQUE INDEX events_id_at ON events (id, at, account)');
ok(wait_job_state($node, $job, 'failed'), 'a duplicate key fails the job');
like( $node->safe_psql('postgres', "SELECT error_sqlstate || ' ' || error FROM pg_stat_background_ddl WHERE id = $job"),
	qr/^23505 could not create unique index/, "with PostgreSQL's error");
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_index WHERE NOT indisvalid OR indexrelid::regclass::text LIKE 'events%id_at%'"),
	'0', 'and leaves no index, valid or not');

# 5. PostgreSQL's recipe done by hand and left unfinished: the index ON ONLY
# the table, one leaf's index built and attached, another's build cancelled
# and its invalid index attached.  CREATE INDEX IF NOT EXISTS of the same
# definition rebuilds it; killed in the middle, it resumes, and the whole
# tree is valid.  gated() holds a build at one row of the second leaf while
# advisory lock 78 is held.
my ($leaf1, $leaf2) = split /\n/, $node->safe_psql('postgres',
	"SELECT relid::regclass FROM pg_partition_tree('events') WHERE isleaf ORDER BY relid LIMIT 2");
my $gated_id = $node->safe_psql('postgres', "SELECT min(id) FROM $leaf2");
$node->safe_psql('postgres', qq{
CREATE FUNCTION gated(x bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS
  \$\$ BEGIN IF x = $gated_id THEN PERFORM pg_advisory_xact_lock_shared(78); END IF; RETURN x; END \$\$;
CREATE INDEX events_by_hand ON ONLY events (gated(id));
});
$node->safe_psql('postgres', "CREATE INDEX CONCURRENTLY by_hand_1 ON $leaf1 (gated(id))");
my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(78)');
my $builder = $node->background_psql('postgres', on_error_stop => 0);
$builder->query_until(qr/building/, qq{
	\\echo building
	CREATE INDEX CONCURRENTLY by_hand_2 ON $leaf2 (gated(id));
});
sub gate_held
{
	return $node->poll_query_until('postgres',
		"SELECT count(*) >= 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 78 AND NOT granted");
}
ok(gate_held(), "a partition's concurrent build is held in its build");
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_progress_create_index WHERE relid = '$leaf2'::regclass");
ok($node->poll_query_until('postgres', 'SELECT NOT EXISTS (SELECT FROM pg_stat_progress_create_index)'),
	'and cancelled');
$builder->quit;
$node->safe_psql('postgres', 'ALTER INDEX events_by_hand ATTACH PARTITION by_hand_1');
$node->safe_psql('postgres', 'ALTER INDEX events_by_hand ATTACH PARTITION by_hand_2');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(relid::regclass || ' ' || indisvalid, ', ' ORDER BY relid::regclass::text)
		  FROM pg_partition_tree('events_by_hand') JOIN pg_index ON indexrelid = relid}),
	'by_hand_1 true, by_hand_2 false, events_by_hand false',
	'the tree left by hand: an invalid index attached to an invalid one');
my $kept = $node->safe_psql('postgres', "SELECT 'by_hand_1'::regclass::oid");
$job = submit_job($node, 'CREATE INDEX IF NOT EXISTS events_by_hand ON events (gated(id))');
is(job_field($node, $job, 'strategy'),
	'concurrent rebuild of an invalid index, partition by partition',
	'the same definition is a job that rebuilds the index');
ok(gate_held(), "the rebuild of the second leaf's index is held in its build");
kill_and_recover($node, $node->safe_psql('postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job"));
eval { $gate->quit };    # its session died with the crash
ok(wait_job_state($node, $job, 'succeeded'), 'killed in the middle, the rebuild succeeded');
check_index_tree('events_by_hand', 'the rebuilt index');
is($node->safe_psql('postgres', "SELECT 'by_hand_1'::regclass::oid"), $kept,
	'the valid partition index is kept');
ok($node->log_contains("background DDL job $job: dropped the invalid index \"by_hand_2\" of partition"),
	'the invalid one was dropped, to be built again');
is( $node->safe_psql('postgres', qq{
		SELECT indisvalid AND inhparent = 'events_by_hand'::regclass
		  FROM pg_index JOIN pg_inherits ON inhrelid = indexrelid
		 WHERE indexrelid = 'by_hand_2'::regclass AND indrelid = '$leaf2'::regclass}),
	't', 'it was built again under its name, valid and attached');

$node->stop;
done_testing();
