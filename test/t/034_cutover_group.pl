# Jobs published together (background_ddl.cutover_group): the jobs that one
# transaction submits under a group name are built each on its own and
# published in one transaction once all are built.
#  1. a materialized view, CREATE TABLE AS, REFRESH, ALTER COLUMN ... TYPE
#     and an index under writes, one of them held back (it starts after a job whose
#     cut-over is manual): the others wait, ready, their workers given back,
#     through a crash; then all are published by one transaction (one
#     cut-over snapshot, one xmin of their catalog rows), each exact at
#     that snapshot, the index valid only then, nothing left;
#  2. a crash of the publisher in the middle of the publication publishes
#     nothing; its next worker publishes all;
#  3. a job of a group that fails cancels the others: nothing of any is
#     left;
#  4. cancel_ddl of one job cancels the group;
#  5. what cannot be a group's: outside a transaction block, REINDEX, a
#     job that reads another job of its group, a job with other settings, a
#     later statement of the submitting transaction that uses a job's
#     result;
#  6. pg_bgddl submit --atomic -f FILE;
#  7. constraints (a foreign key, a check on a partitioned table, SET NOT
#     NULL) published with a view, not valid until then; a partition
#     created in the middle of the publication restarts a check;
#  8. a constraint dropped in the middle of the publication cancels the
#     group; dropped before its job starts, both jobs end at once, each
#     with its own reason;
#  9. another role's transaction under the same group name makes a group
#     of its own;
# 10. ATTACH PARTITION, ADD PRIMARY KEY [USING INDEX], UNIQUE in a group;
# 11. indexes that CREATE INDEX CONCURRENTLY builds (unique, GIN): held
#     back invalid once built, through a crash, and made valid by the
#     group's transaction;
# 12. a crash at the end of the publication's transaction publishes nothing;
# 13. a job paused once ready holds its group until resumed;
# 14. a unique index on a partitioned table in a group, through a crash;
# 15. a savepoint rolled back over a group's first job; a prepared group;
# 16. constraints added to a table after a job of the group that reads it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('cutover_group', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
max_prepared_transactions = 2
});
history_setup($node, 20000);
# (the CREATE TABLE AS of test 1 lasts seconds, under the writes)
create_slow_function($node, 'slow', 'bigint');
$node->safe_psql('postgres', q{
CREATE TABLE w (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO w SELECT g, g FROM generate_series(1, 5000) g;
CREATE MATERIALIZED VIEW per_account AS SELECT account, count(*) AS n FROM events GROUP BY account;
CREATE TABLE small (a int);
INSERT INTO small SELECT generate_series(1, 1000);
});

# Submit statements in one transaction under a group name; returns the
# group's job ids, by id
sub submit_group
{
	my ($group, @statements) = @_;
	$node->safe_psql('postgres',
		"SET background_ddl = on; BEGIN; SET LOCAL background_ddl.cutover_group = '$group'; "
		  . join('; ', @statements) . '; COMMIT;');
	return split /\n/, $node->safe_psql('postgres',
		"SELECT id FROM pg_stat_background_ddl WHERE cutover_group = '$group' ORDER BY id");
}

# Submit a group with the publisher to be held at hold point $point: returns
# the hold (release_hold) and the group's jobs once the publisher is held
sub submit_group_held
{
	my ($point, $what, $group, @statements) = @_;
	my $hold = hold_at($node, $point);
	my @ids = submit_group($group, @statements);
	ok(held_at_hold($node), $what);
	return ($hold, @ids);
}

# The job of group $group whose worker publishes the group
sub group_publisher
{
	my ($group) = @_;
	return $node->safe_psql('postgres',
		"SELECT DISTINCT published_by FROM background_ddl.job WHERE cutover_group = '$group'");
}

my $write_script = events_write_script() . "UPDATE w SET n = n + 1 WHERE id = :id;\n";
my ($writers, $err) = start_pgbench($node, $write_script, '-R', '100');

# A job outside the groups whose cut-over is manual: a job of a group that
# starts after it waits, unbuilt, until complete_ddl publishes it
sub gate
{
	my ($name) = @_;
	my $gate = submit_job($node, "CREATE MATERIALIZED VIEW $name AS SELECT a FROM small",
		before => 'SET background_ddl.cutover = manual;');
	ok( $node->poll_query_until('postgres',
			"SELECT phase FROM pg_stat_background_ddl WHERE id = $gate", 'ready'),
		"gate job $gate is ready");
	return $gate;
}

# 1. Five kinds in a group, one held back (it starts after a gate job); a
#    crash while the others wait for it
my $gate = gate('gate1');
my @jobs = submit_group('release-1',
	'SET LOCAL bgddl_test.slow = on',
	'CREATE MATERIALIZED VIEW mv AS SELECT id, account, payload FROM events WHERE account % 3 = 0',
	"SET LOCAL background_ddl.after = '$gate'",
	'CREATE TABLE big_ids AS SELECT slow(id) AS id FROM events WHERE id % 2 = 0',
	"SET LOCAL background_ddl.after = ''",
	'REFRESH MATERIALIZED VIEW per_account',
	'ALTER TABLE w ALTER COLUMN n TYPE bigint',
	'CREATE INDEX events_payload ON events (payload)');
is(scalar @jobs, 5, '1: five jobs in the group');
my ($mv_job, $ctas_job, $refresh_job, $alter_job, $index_job) = @jobs;

# The four built wait for the fifth, ready, their workers given back
sub others_ready
{
	return $node->poll_query_until('postgres', qq{
SELECT count(*) = 4 FROM pg_stat_background_ddl
 WHERE id IN ($mv_job, $refresh_job, $alter_job, $index_job) AND phase = 'ready'
   AND waiting_on LIKE 'the other jobs of its group "release-1" to be built: %$ctas_job%'});
}
ok(others_ready(), '1: four jobs are ready and wait for the fifth, their workers given back');
is(job_field($node, $ctas_job, 'waiting_on'), "job $gate", '1: the fifth waits for the gate job');
my ($ret, $out, $stderr) = $node->psql('postgres', 'SELECT count(*) FROM mv');
like($stderr, qr/"mv" is being built by background DDL job $mv_job/, '1: the view is not usable yet');
is( $node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_background_ddl
	 WHERE id IN ($mv_job, $refresh_job, $alter_job, $index_job) AND state = 'succeeded'"),
	'0', '1: none is published');
is( $node->safe_psql('postgres',
		q{SELECT indisready::text || ' ' || indisvalid::text FROM pg_index WHERE indexrelid = 'events_payload'::regclass}),
	'true false', '1: the index is built and kept up to date by the writers, not valid');

my $stopped = stop_pgbench($writers, $err);
unlike($stopped, qr/aborted|ERROR/, '1: no writer failed before the crash');
kill_and_recover($node, $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'background_ddl scheduler'"));
ok(others_ready(), '1: after a crash, the four are ready again');
($writers, $err) = start_pgbench($node, $write_script, '-R', '100');
$node->safe_psql('postgres', "CALL complete_ddl($gate)");
ok( $node->poll_query_until('postgres',
		"SELECT string_agg(state, ',') FROM pg_stat_background_ddl WHERE id IN (" . join(', ', @jobs) . ')',
		'succeeded,succeeded,succeeded,succeeded,succeeded'),
	'1: once the fifth is built, all five succeed');
is( $node->safe_psql('postgres', "SELECT count(DISTINCT cutover_snapshot) || ' ' || count(*)
	  FROM pg_stat_background_ddl WHERE id IN ($mv_job, $ctas_job, $refresh_job, $alter_job)"),
	'1 4', '1: the views and tables were published at one snapshot');
is( $node->safe_psql('postgres', q{SELECT count(DISTINCT x) FROM (
	  SELECT xmin::text AS x FROM pg_class
	   WHERE oid IN ('mv'::regclass, 'big_ids'::regclass, 'per_account'::regclass)
	  UNION ALL SELECT xmin::text FROM pg_index WHERE indexrelid = 'events_payload'::regclass) a}),
	'1', '1: ... by one transaction, which made the index valid too (the xmin of their catalog rows)');
is( $node->safe_psql('postgres', q{CREATE EXTENSION IF NOT EXISTS amcheck;
	  SELECT bt_index_check('events_payload', true) IS NOT NULL}),
	't', '1: the index has every row of the table (amcheck, heapallindexed)');
check_exact_at_cutover($node, 'mv', $mv_job,
	'SELECT id, account, payload FROM events_at(SNAP) WHERE account % 3 = 0', 1000);
check_exact_at_cutover($node, 'big_ids', $ctas_job,
	'SELECT id FROM events_at(SNAP) WHERE id % 2 = 0', 1000);
check_exact_at_cutover($node, 'per_account', $refresh_job,
	'SELECT account, count(*) AS n FROM events_at(SNAP) GROUP BY account', 100);
is( $node->safe_psql('postgres', q{SELECT format_type(atttypid, atttypmod) FROM pg_attribute
	  WHERE attrelid = 'w'::regclass AND attname = 'n'}),
	'bigint', '1: the column has its new type');
is($node->safe_psql('postgres', 'SELECT count(*) FROM w'), '5000', '1: the table has its rows');
check_no_leftovers($node, $_) for @jobs;
# (The last job built publishes, the fifth unless a job's build restarted;
# the line follows the commit the test saw)
$node->wait_for_log(qr/published its group "release-1"/);
my ($publisher) = slurp_file($node->logfile) =~
  /background DDL job (\d+) published its group "release-1": jobs $mv_job, $ctas_job, $refresh_job, $alter_job, $index_job, in [\d.]+ ms/;
ok(defined $publisher && grep({ $_ == $publisher } @jobs),
	'1: the log says which job published which jobs');
diag("job $publisher published group release-1, not job $ctas_job, the last one built")
  if defined $publisher && $publisher != $ctas_job;

$stopped = stop_pgbench($writers, $err);
unlike($stopped, qr/aborted|ERROR/, '1: no writer failed after the crash');

# 2. A crash in the middle of the publication publishes nothing; the next
#    worker of the publisher publishes all
my $hold;
($hold, @jobs) = submit_group_held('publishing its group',
	'2: the publisher is held in the publication', 'release-2',
	'CREATE MATERIALIZED VIEW mv2 AS SELECT a FROM small',
	'CREATE TABLE doubled AS SELECT a * 2 AS b FROM small');
$publisher = group_publisher('release-2');
my ($other) = grep { $_ ne $publisher } @jobs;
is( $node->safe_psql('postgres',
		"SELECT waiting_on FROM pg_stat_background_ddl WHERE id = $other"),
	"the publication of its group 'release-2' by job $publisher",
	'2: the job handed over says which job publishes it');
is( $node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_background_ddl
	 WHERE cutover_group = 'release-2' AND state = 'succeeded'"),
	'0', '2: none is published yet');
kill_and_recover($node, job_field($node, $publisher, 'pid'));
eval { $hold->quit };
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
ok(wait_job_state($node, $_, 'succeeded'), "2: job $_ succeeded after the crash") for @jobs;
is( $node->safe_psql('postgres', "SELECT count(DISTINCT cutover_snapshot)
	  FROM pg_stat_background_ddl WHERE cutover_group = 'release-2'"),
	'1', '2: both were published at one snapshot');
is(differences($node, 'mv2', 'SELECT a FROM small'), '0', '2: the view is exact');
is(differences($node, 'doubled', 'SELECT a * 2 AS b FROM small'), '0', '2: the table is exact');
check_no_leftovers($node, $_) for @jobs;

# 3. A job that fails cancels its group: nothing of any is left
@jobs = submit_group('release-3',
	'CREATE MATERIALIZED VIEW mv3 AS SELECT a FROM small',
	'CREATE TABLE broken AS SELECT 1 / (a - 500) AS x FROM small');
ok(wait_job_state($node, $jobs[1], 'failed'), '3: the job that divides by zero failed');
ok(wait_job_state($node, $jobs[0], 'cancelled'), '3: the other job of its group is cancelled');
is(job_field($node, $jobs[0], 'error'), "job $jobs[1] of its group \"release-3\" failed",
	'3: its error says why');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_class WHERE relname IN ('mv3', 'broken')}),
	'0', '3: neither object is left');
check_no_leftovers($node, $_) for @jobs;

# 4. cancel_ddl of a job that waits for the rest of its group cancels the
#    group, the job not yet started too
# A group of two views, the second started after a gate job: returns the
# gate and the group's jobs once the first is ready (test: its number)
sub gated_group
{
	my ($test, $group, $first, $second) = @_;
	my $gate = gate("gate$test");
	my @jobs = submit_group($group,
		"CREATE MATERIALIZED VIEW $first AS SELECT a FROM small",
		"SET LOCAL background_ddl.after = '$gate'",
		"CREATE MATERIALIZED VIEW $second AS SELECT a * 2 AS b FROM small");
	ok( $node->poll_query_until('postgres',
			"SELECT phase FROM pg_stat_background_ddl WHERE id = $jobs[0]", 'ready'),
		"$test: the first job is ready");
	return ($gate, @jobs);
}
($gate, @jobs) = gated_group(4, 'release-4', 'mv4', 'mv5');
is($node->safe_psql('postgres', "SELECT cancel_ddl($jobs[0])"), 't', '4: cancel_ddl of it');
ok(wait_job_state($node, $jobs[1], 'cancelled'), '4: the other job of the group is cancelled too');
is(job_field($node, $jobs[1], 'error'), "job $jobs[0] of its group \"release-4\" was cancelled",
	'4: its error says why');
is( $node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname IN ('mv4', 'mv5')}),
	'0', '4: neither view is left');
$node->safe_psql('postgres', "SELECT cancel_ddl($gate)");

# 5. What a group refuses
($ret, $out, $stderr) = $node->psql('postgres', q{SET background_ddl = on;
SET background_ddl.cutover_group = 'g';
CREATE MATERIALIZED VIEW mv5 AS SELECT a FROM small});
like($stderr, qr/background_ddl.cutover_group groups the jobs of one transaction block/,
	'5: outside a transaction block');
$node->safe_psql('postgres', 'CREATE INDEX small_a ON small (a)');
($ret, $out, $stderr) = $node->psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'g';
REINDEX INDEX small_a; COMMIT});
like($stderr, qr/this REINDEX job cannot be published with a group/,
	'5: REINDEX (CONCURRENTLY swaps the new index in itself)');
($ret, $out, $stderr) = $node->psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'g';
CREATE MATERIALIZED VIEW mv5 AS SELECT a FROM small;
CREATE MATERIALIZED VIEW mv6 AS SELECT a FROM mv5; COMMIT});
like($stderr, qr/this job would start after job \d+ of its group "g"|is published with its group "g", not before/,
	'5: a job that reads another job of its group');
($ret, $out, $stderr) = $node->psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'g';
CREATE MATERIALIZED VIEW mv5 AS SELECT a FROM small;
SET LOCAL work_mem = '8MB';
CREATE MATERIALIZED VIEW mv6 AS SELECT a FROM small; COMMIT});
like($stderr, qr/this job cannot join job \d+ in group "g"/, '5: a job with other settings');
($ret, $out, $stderr) = $node->psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'g';
CREATE MATERIALIZED VIEW mv5 AS SELECT a FROM small;
SELECT count(*) FROM mv5; COMMIT});
like($stderr, qr/background DDL job \d+ is published with its group "g", not before/,
	'5: a later statement of its transaction that uses a job\'s result');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_class WHERE relname IN ('mv5', 'mv6')}),
	'0', '5: nothing was submitted');

# 6. pg_bgddl submit --atomic -f FILE: the file in one transaction, as one
#    group named after the file
my $file = $node->basedir . '/release-6.sql';
append_to_file($file, q{
CREATE MATERIALIZED VIEW mv6 AS SELECT a FROM small;
CREATE TABLE tripled AS SELECT a * 3 AS c FROM small;
});
my ($out6, $err6) = ('', '');
IPC::Run::run([ 'pg_bgddl', '-h', $node->host, '-p', $node->port, '-d', 'postgres',
	'submit', '--wait', '--atomic', '-f', $file ], '>', \$out6, '2>', \$err6);
is($?, 0, '6: pg_bgddl submit --wait --atomic succeeded');
like($out6, qr/^group (\d+)\n\1\n\d+\n/, '6: it prints the group and its jobs');
is( $node->safe_psql('postgres', "SELECT string_agg(state, ',') || ' ' || count(DISTINCT cutover_snapshot)
	  FROM pg_stat_background_ddl WHERE cutover_group = 'release-6.sql'"),
	'succeeded,succeeded 1', '6: both jobs were published at one snapshot');
my $file_with_commit = $node->basedir . '/with-commit.sql';
append_to_file($file_with_commit, q{
CREATE MATERIALIZED VIEW mv7 AS SELECT a FROM small;
COMMIT;
});
IPC::Run::run([ 'pg_bgddl', '-h', $node->host, '-p', $node->port, '-d', 'postgres',
	'submit', '--atomic', '-f', $file_with_commit ], '>', \$out6, '2>', \$err6);
like($err6, qr/statement 2 \(line 3\) ends the transaction of --atomic/,
	'6: a file with its own COMMIT is refused');
is( $node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'mv7'}),
	'0', '6: ... before it runs: nothing of the file is submitted');

# 7. Constraints in a group with a view: a foreign key, a check on a
#    partitioned table and a SET NOT NULL stay NOT VALID until the group's
#    transaction marks them valid with the view's publication; a partition
#    created in the middle of the publication stops it (the check must read
#    the new partition's rows first), and the group is published again
$node->safe_psql('postgres', q{
CREATE TABLE parent_t (id int PRIMARY KEY);
INSERT INTO parent_t SELECT generate_series(1, 1000);
CREATE TABLE child_t (id int, parent_id int);
INSERT INTO child_t SELECT g, g % 1000 + 1 FROM generate_series(1, 20000) g;
CREATE TABLE pt (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (10000);
INSERT INTO pt SELECT g, g FROM generate_series(1, 9999) g;
CREATE TABLE nn (x int);
INSERT INTO nn SELECT generate_series(1, 5000);
});
$hold = hold_at($node, 'publishing its group');
@jobs = submit_group('release-7',
	'CREATE MATERIALIZED VIEW mv7 AS SELECT a FROM small',
	'ALTER TABLE child_t ADD CONSTRAINT child_parent FOREIGN KEY (parent_id) REFERENCES parent_t',
	'ALTER TABLE pt ADD CONSTRAINT pt_v CHECK (v > 0)',
	'ALTER TABLE nn ALTER COLUMN x SET NOT NULL');
is(scalar @jobs, 4, '7: four jobs in the group');
ok(held_at_hold($node), '7: the publisher is held in the publication');
is( $node->safe_psql('postgres', q{SELECT string_agg(conname || ' ' || convalidated, ', ' ORDER BY conname, conrelid)
	  FROM pg_constraint WHERE conname IN ('child_parent', 'pt_v')}),
	'child_parent false, pt_v false, pt_v false', '7: the constraints are all checked, and not valid yet');
is($node->safe_psql('postgres', q{SELECT attnotnull FROM pg_attribute WHERE attrelid = 'nn'::regclass AND attname = 'x'}),
	'f', '7: the column is not NOT NULL yet');
($ret, $out, $stderr) = $node->psql('postgres', 'SELECT count(*) FROM mv7');
like($stderr, qr/"mv7" is being built by background DDL job $jobs[0]/, '7: the view is not usable yet');
$node->safe_psql('postgres', q{
CREATE TABLE pt_2 PARTITION OF pt FOR VALUES FROM (10000) TO (20000);
INSERT INTO pt SELECT g, g FROM generate_series(10000, 10999) g;
});
release_hold($node, $hold);
ok(wait_job_state($node, $_, 'succeeded'), "7: job $_ succeeded") for @jobs;
like(slurp_file($node->logfile),
	qr/background DDL job $jobs[2]: 1 tables that carry its constraint were added below "pt"; their rows are checked too/,
	'7: the publication stopped for the new partition, whose rows were checked');
is( $node->safe_psql('postgres', q{SELECT string_agg(conname || ' ' || convalidated, ', ' ORDER BY conname, conrelid)
	  FROM pg_constraint WHERE conname IN ('child_parent', 'pt_v')}),
	'child_parent true, pt_v true, pt_v true, pt_v true', '7: the constraints are valid');
is($node->safe_psql('postgres', q{SELECT attnotnull FROM pg_attribute WHERE attrelid = 'nn'::regclass AND attname = 'x'}),
	't', '7: the column is NOT NULL');
is( $node->safe_psql('postgres', q{SELECT count(DISTINCT x) FROM (
	  SELECT xmin::text AS x FROM pg_class WHERE oid = 'mv7'::regclass
	  UNION ALL SELECT xmin::text FROM pg_constraint
	   WHERE conname IN ('child_parent', 'pt_v') AND conrelid <> 'pt_2'::regclass
	  UNION ALL SELECT xmin::text FROM pg_attribute WHERE attrelid = 'nn'::regclass AND attname = 'x') a}),
	'1', '7: one transaction published the view and made the constraints valid (the xmin of their catalog rows)');
is(differences($node, 'mv7', 'SELECT a FROM small'), '0', '7: the view is exact');
is( $node->safe_psql('postgres', q{SELECT count(*) FROM pg_constraint WHERE conrelid = 'nn'::regclass}),
	'0', '7: the helper of SET NOT NULL is dropped');
check_no_leftovers($node, $_) for @jobs;
($ret, $out, $stderr) = $node->psql('postgres', 'INSERT INTO child_t VALUES (0, 5000)');
like($stderr, qr/violates foreign key constraint "child_parent"/, '7: the foreign key is in force');

# 8. A job whose constraint is dropped in the middle of the publication:
#    its group is cancelled, nothing of any is left
$node->safe_psql('postgres', q{CREATE TABLE c8 (x int); INSERT INTO c8 SELECT generate_series(1, 1000);});
($hold, @jobs) = submit_group_held('publishing its group',
	'8: the publisher is held in the publication', 'release-8',
	'CREATE MATERIALIZED VIEW mv8 AS SELECT a FROM small',
	'ALTER TABLE c8 ADD CONSTRAINT c8_pos CHECK (x > 0)');
$publisher = group_publisher('release-8');
$node->safe_psql('postgres', 'ALTER TABLE c8 DROP CONSTRAINT c8_pos');
release_hold($node, $hold);
ok(wait_job_state($node, $_, 'cancelled'), "8: job $_ is cancelled") for @jobs;
is(job_field($node, $jobs[1], 'error'), 'the constraint was dropped', '8: the constraint\'s job says why');
is(job_field($node, $jobs[0], 'error'),
	$publisher eq $jobs[0]
	  ? "job $jobs[1] of its group \"release-8\" was cancelled: the constraint was dropped"
	  : "job $jobs[1] of its group \"release-8\" was cancelled",
	'8: the view\'s job says why');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'mv8'}),
	'0', '8: the view is not left');
check_no_leftovers($node, $_) for @jobs;

# 8b. A job whose constraint is dropped before it starts (after a gate job,
#     its group's view ready): both end at once, held while they remove
#     what they made; each says why, neither takes the other's reason
$gate = gate('gate8');
@jobs = submit_group('release-8b',
	'CREATE MATERIALIZED VIEW mv8 AS SELECT a FROM small',
	"SET LOCAL background_ddl.after = '$gate'",
	'ALTER TABLE c8 ADD CONSTRAINT c8_neg CHECK (x > -1)');
ok( $node->poll_query_until('postgres', "SELECT phase FROM pg_stat_background_ddl WHERE id = $jobs[0]", 'ready'),
	'8b: the view is ready');
$node->safe_psql('postgres', 'ALTER TABLE c8 DROP CONSTRAINT c8_neg');
$hold = hold_at($node, 'removing what the job created');
$node->safe_psql('postgres', "CALL complete_ddl($gate)");
ok(held_at_hold($node, 2), '8b: both jobs are held while they remove what they made');
release_hold($node, $hold);
ok(wait_job_state($node, $_, 'cancelled'), "8b: job $_ is cancelled") for @jobs;
is(job_field($node, $jobs[1], 'error'), 'the constraint was dropped', '8b: the constraint\'s job says why');
is(job_field($node, $jobs[0], 'error'), "job $jobs[1] of its group \"release-8b\" was cancelled",
	'8b: the view\'s job says why');
check_no_leftovers($node, $_) for @jobs;

# 9. A group is one transaction's jobs: another role's transaction under the
#    same name makes a group of its own, which neither joins nor waits for
#    the first
$node->safe_psql('postgres', q{CREATE ROLE mallory LOGIN;
GRANT SELECT ON small TO mallory; GRANT CREATE ON SCHEMA public TO mallory;});
my @victim;
($gate, @victim) = gated_group(9, 'shared', 'v9', 'v10');
$node->safe_psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'shared';
CREATE MATERIALIZED VIEW m9 AS SELECT a FROM small; COMMIT;}, extra_params => [ '-U', 'mallory' ]);
my $mallory_job = $node->safe_psql('postgres',
	"SELECT id FROM pg_stat_background_ddl WHERE target = 'public.m9'");
ok(wait_job_state($node, $mallory_job, 'succeeded'), '9: the other role\'s job is published on its own');
is( $node->safe_psql('postgres', "SELECT phase || ' ' || (state IN ('queued', 'running'))
	 FROM pg_stat_background_ddl WHERE id = $victim[0]"),
	'ready true', '9: the first group is not published with it');
is( $node->safe_psql('postgres', "SELECT count(DISTINCT group_id) FROM background_ddl.job
	 WHERE id IN ($victim[0], $victim[1], $mallory_job)"),
	'2', '9: two groups of one name');
($ret, $out, $stderr) = $node->psql('postgres', "SELECT cancel_ddl($victim[0])",
	extra_params => [ '-U', 'mallory' ]);
like($stderr, qr/permission denied|must be/, '9: the other role cannot cancel the first group');
$node->safe_psql('postgres', "CALL complete_ddl($gate)");
ok(wait_job_state($node, $_, 'succeeded'), "9: job $_ of the first group succeeded") for @victim;

# 10. ATTACH PARTITION and ADD PRIMARY KEY USING INDEX published with a view,
#     in one transaction; then ADD PRIMARY KEY and UNIQUE that build their
#     index, held in the middle of the publication: built, not valid, no key
$node->safe_psql('postgres', q{
CREATE TABLE ap (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE ap_1 PARTITION OF ap FOR VALUES FROM (0) TO (1000);
CREATE TABLE ap_2 (id int, v int);
INSERT INTO ap_2 SELECT g, g FROM generate_series(1000, 1999) g;
CREATE TABLE k (id int, v int);
INSERT INTO k SELECT g, g FROM generate_series(1, 5000) g;
CREATE UNIQUE INDEX k_id ON k (id);
});
@jobs = submit_group('release-10',
	'ALTER TABLE ap ATTACH PARTITION ap_2 FOR VALUES FROM (1000) TO (2000)',
	'ALTER TABLE k ADD PRIMARY KEY USING INDEX k_id',
	'CREATE MATERIALIZED VIEW mv10 AS SELECT a FROM small');
ok(wait_job_state($node, $_, 'succeeded'), "10: job $_ succeeded") for @jobs;
is( $node->safe_psql('postgres', q{SELECT count(DISTINCT x) FROM (
	  SELECT xmin::text AS x FROM pg_class WHERE oid = 'mv10'::regclass
	  UNION ALL SELECT xmin::text FROM pg_inherits WHERE inhrelid = 'ap_2'::regclass
	  UNION ALL SELECT xmin::text FROM pg_constraint WHERE conrelid = 'k'::regclass AND contype = 'p') a}),
	'1', '10: the partition attached, the key and the view in one transaction');
is( $node->safe_psql('postgres', q{SELECT count(*) FROM pg_constraint WHERE conrelid IN ('ap_2'::regclass, 'k'::regclass) AND contype = 'c'}),
	'0', '10: no helper is left');
check_no_leftovers($node, $_) for @jobs;
$node->safe_psql('postgres', q{
CREATE TABLE k2 (id int, v int);
INSERT INTO k2 SELECT g, g FROM generate_series(1, 5000) g;
CREATE TABLE k3 (id int, v int);
INSERT INTO k3 SELECT g, g FROM generate_series(1, 5000) g;
});
($hold, @jobs) = submit_group_held('publishing its group',
	'10: keys that build their index, held in the publication', 'release-10b',
	'ALTER TABLE k2 ADD PRIMARY KEY (id)',
	'ALTER TABLE k3 ADD CONSTRAINT k3_v_key UNIQUE (v)',
	'CREATE MATERIALIZED VIEW mv10b AS SELECT a FROM small');
is( $node->safe_psql('postgres', q{SELECT string_agg(indisready || ' ' || indisvalid, ', ' ORDER BY indexrelid)
	  FROM pg_index WHERE indrelid IN ('k2'::regclass, 'k3'::regclass)}),
	'true false, true false', '10: their indexes are built, not valid');
is( $node->safe_psql('postgres', q{SELECT count(*) FROM pg_constraint
	  WHERE conrelid IN ('k2'::regclass, 'k3'::regclass) AND contype IN ('p', 'u')}),
	'0', '10: no key yet');
release_hold($node, $hold);
ok(wait_job_state($node, $_, 'succeeded'), "10: job $_ succeeded") for @jobs;
is( $node->safe_psql('postgres', q{SELECT count(DISTINCT x) || ' ' || count(*) FROM (
	  SELECT xmin::text AS x FROM pg_class WHERE oid = 'mv10b'::regclass
	  UNION ALL SELECT xmin::text FROM pg_constraint
	   WHERE conrelid IN ('k2'::regclass, 'k3'::regclass) AND contype IN ('p', 'u')
	  UNION ALL SELECT xmin::text FROM pg_index
	   WHERE indrelid IN ('k2'::regclass, 'k3'::regclass) AND indisvalid) a}),
	'1 5', '10: the keys, their valid indexes and the view in one transaction');
is( $node->safe_psql('postgres', q{SELECT string_agg(pg_get_constraintdef(oid), ', ' ORDER BY conname)
	  FROM pg_constraint WHERE conrelid IN ('k2'::regclass, 'k3'::regclass)}),
	'PRIMARY KEY (id), UNIQUE (v)', '10: the keys as the statements make them, no helper left');
check_no_leftovers($node, $_) for @jobs;

# 11. Indexes that CREATE INDEX CONCURRENTLY builds, in a group held back by
#     a gate: once built each stays invalid (a unique one checks its keys
#     meanwhile, as during CREATE INDEX CONCURRENTLY), a crash does not
#     build it again, and the group's transaction makes them valid
$node->safe_psql('postgres', q{CREATE TABLE u (id int, tags int[]);
INSERT INTO u SELECT g, ARRAY[g % 7, g % 11] FROM generate_series(1, 20000) g;});
$gate = gate('gate11');
@jobs = submit_group('release-11',
	'CREATE UNIQUE INDEX u_id ON u (id)',
	'CREATE INDEX u_tags ON u USING gin (tags)',
	"SET LOCAL background_ddl.after = '$gate'",
	'CREATE MATERIALIZED VIEW mv11 AS SELECT a FROM small');
ok( $node->poll_query_until('postgres', qq{SELECT count(*) = 2 FROM pg_stat_background_ddl
	 WHERE id IN ($jobs[0], $jobs[1]) AND phase = 'ready'}),
	'11: both indexes are built and wait for the view');
is( $node->safe_psql('postgres', q{SELECT string_agg(indisready || ' ' || indisvalid, ', ' ORDER BY indexrelid)
	  FROM pg_index WHERE indrelid = 'u'::regclass}),
	'true false, true false', '11: ready for inserts, not valid');
($ret, $out, $stderr) = $node->psql('postgres', 'INSERT INTO u VALUES (5, NULL)');
like($stderr, qr/duplicate key value violates unique constraint "u_id"/,
	'11: the unique index checks the keys of new rows already');
my $held_oids = $node->safe_psql('postgres',
	q{SELECT string_agg(indexrelid::text, ' ' ORDER BY indexrelid) FROM pg_index WHERE indrelid = 'u'::regclass});
kill_and_recover($node, $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'background_ddl scheduler'"));
ok( $node->poll_query_until('postgres', qq{SELECT count(*) = 2 FROM pg_stat_background_ddl
	 WHERE id IN ($jobs[0], $jobs[1]) AND phase = 'ready'}),
	'11: after a crash both are ready again');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(indexrelid::text, ' ' ORDER BY indexrelid) FROM pg_index WHERE indrelid = 'u'::regclass}),
	$held_oids, '11: ... the same indexes, not built again');
$node->safe_psql('postgres', 'INSERT INTO u SELECT g, ARRAY[g] FROM generate_series(20001, 20100) g');
$node->safe_psql('postgres', "CALL complete_ddl($gate)");
ok(wait_job_state($node, $_, 'succeeded'), "11: job $_ succeeded") for @jobs;
is( $node->safe_psql('postgres', q{SELECT count(DISTINCT x) || ' ' || bool_and(v) FROM (
	  SELECT xmin::text AS x, true AS v FROM pg_class WHERE oid = 'mv11'::regclass
	  UNION ALL SELECT xmin::text, indisvalid FROM pg_index WHERE indrelid = 'u'::regclass) a}),
	'1 true', '11: the group\'s transaction made both valid and published the view');
is( $node->safe_psql('postgres', q{SELECT bt_index_check('u_id', true) IS NOT NULL}),
	't', '11: the unique index has every row (amcheck, heapallindexed)');
like( $node->safe_psql('postgres', q{SET enable_seqscan = off;
	  EXPLAIN (COSTS OFF) SELECT count(*) FROM u WHERE tags @> ARRAY[20050]}),
	qr/Bitmap Index Scan on u_tags/, '11: the planner uses the GIN index');
is( $node->safe_psql('postgres', q{SET enable_seqscan = off;
	  SELECT count(*) FROM u WHERE tags @> ARRAY[20050]}),
	'1', '11: the GIN index has a row written while it was held');
check_no_leftovers($node, $_) for @jobs;

# 12. A crash at the end of the publication's transaction, every job
#     published in it but not committed: others see none of it meanwhile,
#     and after the crash none is published; the next worker publishes all
$node->safe_psql('postgres', q{CREATE TABLE c12 (x int); INSERT INTO c12 SELECT generate_series(1, 3000);});
($hold, @jobs) = submit_group_held('publishing its group: before its commit',
	'12: the publisher is held before its commit', 'release-12',
	'CREATE MATERIALIZED VIEW mv12 AS SELECT a FROM small',
	'ALTER TABLE c12 ADD CONSTRAINT c12_pos CHECK (x > 0)',
	'CREATE UNIQUE INDEX c12_x ON c12 (x)');
my $unpublished = q{SELECT (SELECT relispopulated FROM pg_class WHERE relname = 'mv12') || ' '
	|| (SELECT convalidated FROM pg_constraint WHERE conname = 'c12_pos') || ' '
	|| (SELECT indisvalid FROM pg_index WHERE indexrelid = 'c12_x'::regclass)};
is($node->safe_psql('postgres', $unpublished), 'false false false',
	'12: others see none of the group published');
$publisher = group_publisher('release-12');
my $log_at_crash = -s $node->logfile;
kill_and_recover($node, job_field($node, $publisher, 'pid'));
eval { $hold->quit };
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
ok(wait_job_state($node, $_, 'succeeded'), "12: job $_ succeeded after the crash") for @jobs;
is($node->safe_psql('postgres', $unpublished), 'true true true', '12: all are published');
my @publications = slurp_file($node->logfile) =~ /published its group "release-12"/g;
is(scalar @publications, 1, '12: by one publication ...');
like(slurp_file($node->logfile, $log_at_crash), qr/published its group "release-12"/,
	'12: ... after the crash: the one in the crash published nothing');
is(differences($node, 'mv12', 'SELECT a FROM small'), '0', '12: the view is exact');
check_no_leftovers($node, $_) for @jobs;

# 13. A job paused once ready holds its group: the publisher waits for it,
#     says so, and publishes once it is resumed
($gate, @jobs) = gated_group(13, 'release-13', 'mv13', 'mv14');
is($node->safe_psql('postgres', "SELECT pause_ddl($jobs[0])"), 't', '13: pause_ddl of it');
$node->safe_psql('postgres', "CALL complete_ddl($gate)");
ok( $node->poll_query_until('postgres',
		"SELECT waiting_on FROM pg_stat_background_ddl WHERE id = $jobs[1]",
		"job $jobs[0] of its group \"release-13\" to be handed over to it; paused: $jobs[0] (resume_ddl resumes a job)"),
	'13: the publisher waits for the paused job, and says so');
$node->safe_psql('postgres', "SELECT resume_ddl($jobs[0])");
ok(wait_job_state($node, $_, 'succeeded'), "13: job $_ succeeded once resumed") for @jobs;

# 14. A unique index on a partitioned table (two leaves and a sub-partitioned
#     table) in a group held back by a gate: each leaf's index, once built,
#     stays invalid, through a crash; the group's transaction makes the
#     leaves' and the partitioned tables' indexes valid
$node->safe_psql('postgres', q{
CREATE TABLE pi (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE pi_1 PARTITION OF pi FOR VALUES FROM (0) TO (5000);
CREATE TABLE pi_2 PARTITION OF pi FOR VALUES FROM (5000) TO (10000) PARTITION BY RANGE (id);
CREATE TABLE pi_2a PARTITION OF pi_2 FOR VALUES FROM (5000) TO (10000);
INSERT INTO pi SELECT g, g FROM generate_series(1, 9999) g;
});
$gate = gate('gate14');
@jobs = submit_group('release-14',
	'CREATE UNIQUE INDEX pi_id ON pi (id)',
	"SET LOCAL background_ddl.after = '$gate'",
	'CREATE MATERIALIZED VIEW mv15 AS SELECT a FROM small');
my $tree_indexes = q{SELECT string_agg(c.relname || ' ' || i.indisvalid, ', ' ORDER BY c.relname)
	FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	WHERE i.indrelid IN ('pi'::regclass, 'pi_1'::regclass, 'pi_2'::regclass, 'pi_2a'::regclass)};
ok( $node->poll_query_until('postgres',
		"SELECT phase FROM pg_stat_background_ddl WHERE id = $jobs[0]", 'ready'),
	'14: the partitioned index is built and waits for the view');
is($node->safe_psql('postgres', $tree_indexes),
	'pi_1_id_idx false, pi_2_id_idx false, pi_2a_id_idx false, pi_id false',
	'14: every index of the tree is invalid');
($ret, $out, $stderr) = $node->psql('postgres', 'INSERT INTO pi VALUES (7, 7)');
like($stderr, qr/duplicate key value violates unique constraint "pi_1_id_idx"/,
	'14: a leaf\'s index checks the keys of new rows already');
my $tree_oids = $node->safe_psql('postgres',
	q{SELECT string_agg(indexrelid::text, ' ' ORDER BY indexrelid) FROM pg_index
	   WHERE indrelid IN ('pi_1'::regclass, 'pi_2a'::regclass)});
kill_and_recover($node, $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'background_ddl scheduler'"));
ok( $node->poll_query_until('postgres',
		"SELECT phase FROM pg_stat_background_ddl WHERE id = $jobs[0]", 'ready'),
	'14: after a crash it is ready again');
is( $node->safe_psql('postgres', q{SELECT string_agg(indexrelid::text, ' ' ORDER BY indexrelid) FROM pg_index
	   WHERE indrelid IN ('pi_1'::regclass, 'pi_2a'::regclass)}),
	$tree_oids, '14: ... with the same leaves\' indexes, not built again');
$node->safe_psql('postgres', "CALL complete_ddl($gate)");
ok(wait_job_state($node, $_, 'succeeded'), "14: job $_ succeeded") for @jobs;
is($node->safe_psql('postgres', $tree_indexes),
	'pi_1_id_idx true, pi_2_id_idx true, pi_2a_id_idx true, pi_id true', '14: every index of the tree is valid');
is( $node->safe_psql('postgres', q{SELECT count(DISTINCT x) FROM (
	  SELECT xmin::text AS x FROM pg_class WHERE oid = 'mv15'::regclass
	  UNION ALL SELECT xmin::text FROM pg_index
	   WHERE indrelid IN ('pi'::regclass, 'pi_1'::regclass, 'pi_2'::regclass, 'pi_2a'::regclass)) a}),
	'1', '14: ... made valid by the group\'s transaction, with the view');
is( $node->safe_psql('postgres', q{SELECT bool_and(bt_index_check(indexrelid, true) IS NOT NULL) FROM pg_index
	   WHERE indrelid IN ('pi_1'::regclass, 'pi_2a'::regclass)}),
	't', '14: the leaves\' indexes have every row (amcheck, heapallindexed)');
check_no_leftovers($node, $_) for @jobs;

# 15. Transaction edges: a savepoint rolled back over the group's first job
#     leaves the later ones one group; a prepared transaction's group is
#     published once COMMIT PREPARED has run
$node->safe_psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'release-15';
SAVEPOINT s;
CREATE MATERIALIZED VIEW mv16 AS SELECT a FROM small;
ROLLBACK TO SAVEPOINT s;
CREATE MATERIALIZED VIEW mv17 AS SELECT a FROM small;
CREATE MATERIALIZED VIEW mv18 AS SELECT a * 2 AS b FROM small;
COMMIT;});
# The group's two jobs succeed, published at one snapshot
sub two_published_together
{
	my ($group, $what) = @_;
	my @ids = split /\n/, $node->safe_psql('postgres',
		"SELECT id FROM pg_stat_background_ddl WHERE cutover_group = '$group' ORDER BY id");
	is(scalar @ids, 2, "15: $what");
	ok(wait_job_state($node, $_, 'succeeded'), "15: job $_ succeeded") for @ids;
	is( $node->safe_psql('postgres', "SELECT count(DISTINCT cutover_snapshot) FROM pg_stat_background_ddl
		 WHERE cutover_group = '$group'"),
		'1', "15: group $group published at one snapshot");
	return;
}
two_published_together('release-15', 'the job rolled back to its savepoint is not in the group');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'mv16'}),
	'0', '15: nothing of the job rolled back');
$node->safe_psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'release-16';
CREATE MATERIALIZED VIEW mv19 AS SELECT a FROM small;
CREATE TABLE t16 AS SELECT a FROM small;
PREPARE TRANSACTION 'group16';});
is( $node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_background_ddl WHERE cutover_group = 'release-16'"),
	'0', '15: a prepared group\'s jobs do not exist yet');
$node->safe_psql('postgres', "COMMIT PREPARED 'group16'");
two_published_together('release-16', 'once committed, the group has its two jobs');

# 16. A constraint added to a table that a job of the group reads, after
#     that job: adding a constraint changes no row the job reads, and the
#     group's cancel would remove it, so the two are built side by side,
#     one group; without a group the constraint starts after the job
$node->safe_psql('postgres', q{CREATE TABLE c16 (x int); INSERT INTO c16 SELECT generate_series(1, 2000);});
@jobs = submit_group('release-17',
	'CREATE MATERIALIZED VIEW mv20 AS SELECT x FROM c16',
	'ALTER TABLE c16 ADD CONSTRAINT c16_pos CHECK (x > 0)',
	'CREATE INDEX c16_x ON c16 (x)');
is(scalar @jobs, 3, '16: a view, a check and an index of one table in one group');
ok(wait_job_state($node, $_, 'succeeded'), "16: job $_ succeeded") for @jobs;
is(differences($node, 'mv20', 'SELECT x FROM c16'), '0', '16: the view is exact');
$node->safe_psql('postgres', q{SET background_ddl = on; BEGIN;
CREATE MATERIALIZED VIEW mv21 AS SELECT x FROM c16;
ALTER TABLE c16 ADD CONSTRAINT c16_pos2 CHECK (x > 0); COMMIT;});
is( $node->safe_psql('postgres', q{SELECT after_jobs = ARRAY[(SELECT id FROM pg_stat_background_ddl WHERE target = 'public.mv21')]
	  FROM pg_stat_background_ddl WHERE command LIKE '%c16_pos2%'}),
	't', '16: without a group, the constraint still starts after the view (were the view to fail, it would not be added)');

# 17. A control function between the publisher's look at its group and its
#     locks: another member is paused after the publisher found every member
#     handed over, before it holds them.  The publisher finds out under its
#     locks and goes round again without computing anything twice (its
#     backfill is over: it used to take its first chunk again, and fail on
#     that chunk's checkpoint), waits for the paused job, and publishes once
#     it is resumed.
$node->safe_psql('postgres', q{CREATE TABLE c17 (x int); INSERT INTO c17 SELECT generate_series(1, 20000);});
my $log_before_17 = -s $node->logfile;
($hold, @jobs) = submit_group_held('publishing its group: before its locks',
	'17: the publisher is held after its look at the group', 'release-18',
	'CREATE MATERIALIZED VIEW mv22 AS SELECT x FROM c17',
	'CREATE MATERIALIZED VIEW mv23 AS SELECT x * 2 AS y FROM c17');
$publisher = group_publisher('release-18');
my ($member) = grep { $_ != $publisher } @jobs;
is($node->safe_psql('postgres', "SELECT pause_ddl($member)"), 't', '17: the other member is paused meanwhile');
release_hold($node, $hold);
ok( $node->poll_query_until('postgres',
		"SELECT waiting_on LIKE '%paused: $member %' FROM pg_stat_background_ddl WHERE id = $publisher"),
	'17: the publisher waits for the paused job');
$node->safe_psql('postgres', "SELECT resume_ddl($member)");
ok(wait_job_state($node, $_, 'succeeded'), "17: job $_ succeeded") for @jobs;
unlike(slurp_file($node->logfile, $log_before_17), qr/duplicate key/, '17: no chunk was computed twice');
is(differences($node, 'mv22', 'SELECT x FROM c17'), '0', '17: the first view is exact');
is(differences($node, 'mv23', 'SELECT x * 2 AS y FROM c17'), '0', '17: the second view is exact');
check_no_leftovers($node, $_) for @jobs;

$node->stop;
done_testing();
