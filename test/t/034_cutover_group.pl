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
#  5. what cannot be a group's: outside a transaction block, a unique index, a
#     job that reads another job of its group, a job with other settings, a
#     later statement of the submitting transaction that uses a job's
#     result;
#  6. pg_bgddl submit --atomic -f FILE.
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
like(slurp_file($node->logfile),
	qr/background DDL job $ctas_job published its group "release-1": jobs $mv_job, $ctas_job, $refresh_job, $alter_job, $index_job, in [\d.]+ ms/,
	'1: the log says which job published which jobs');

$stopped = stop_pgbench($writers, $err);
unlike($stopped, qr/aborted|ERROR/, '1: no writer failed after the crash');

# 2. A crash in the middle of the publication publishes nothing; the next
#    worker of the publisher publishes all
my $hold = hold_at($node, 'publishing its group');
@jobs = submit_group('release-2',
	'CREATE MATERIALIZED VIEW mv2 AS SELECT a FROM small',
	'CREATE TABLE doubled AS SELECT a * 2 AS b FROM small');
ok(held_at_hold($node), '2: the publisher is held in the publication');
my $publisher = $node->safe_psql('postgres',
	"SELECT id FROM pg_stat_background_ddl WHERE cutover_group = 'release-2' AND pid IS NOT NULL");
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
$gate = gate('gate4');
@jobs = submit_group('release-4',
	'CREATE MATERIALIZED VIEW mv4 AS SELECT a FROM small',
	"SET LOCAL background_ddl.after = '$gate'",
	'CREATE MATERIALIZED VIEW mv5 AS SELECT a * 2 AS b FROM small');
ok( $node->poll_query_until('postgres',
		"SELECT phase FROM pg_stat_background_ddl WHERE id = $jobs[0]", 'ready'),
	'4: the first job is ready');
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
($ret, $out, $stderr) = $node->psql('postgres', q{SET background_ddl = on; BEGIN;
SET LOCAL background_ddl.cutover_group = 'g';
CREATE UNIQUE INDEX ON small (a); COMMIT});
like($stderr, qr/a CREATE INDEX job cannot be published with a group/,
	'5: a unique index (CREATE INDEX CONCURRENTLY makes it valid itself)');
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

$node->stop;
done_testing();
