# A manual cut-over (background_ddl.cutover = manual): the job builds, then
# waits in phase ready, kept caught up, until complete_ddl publishes it.
#  1. a materialized view under writes: ready, not usable, its catch-up
#     passes go on and its worker holds no snapshot between them;
#     complete_ddl returns once it is published, exact at its cut-over
#     snapshot, and the job says it was completed;
#  2. alter_ddl(cutover => 'manual') stops a running job before its
#     cut-over, and alter_ddl(cutover => 'auto') lets it go on;
#  3. killed while ready, the job comes back to ready, and is published by
#     complete_ddl;
#  4. ALTER COLUMN ... TYPE whose USING fails for a row written while the job
#     waits: the job fails, and complete_ddl fails with its error;
#  5. complete_ddl's refusals: in a transaction block, another role's job, a
#     paused job; a timeout leaves the job completing; a later statement of
#     the submitting session that uses the result is refused, not left
#     waiting; a cancel while ready leaves nothing;
#  6. indexes (CREATE INDEX CONCURRENTLY's, our own build's) and a
#     constraint wait, ready, invalid (NOT VALID), until complete_ddl;
#     REINDEX, in use before its job's cut-over, is not held back: the
#     submit says so, and alter_ddl refuses to make its cut-over manual;
#  7. a cut-over window (background_ddl.cutover_window): a job waits, ready,
#     while the time of day is out of it, and cuts over once alter_ddl
#     gives it one that the time is in; complete_ddl publishes a job
#     waiting for its window at once; the session's later statement that
#     uses the result of a job waiting for its window is refused;
#  8. a write limit (background_ddl.cutover_max_writes): a job waits, ready,
#     while more rows a second are written to its tables, and cuts over once
#     the writers stop;
#  9. a cut-over that waits for a lock says who holds it, and their query
#     (another role's query only to those pg_stat_activity shows it to).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('manual_cutover', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});
history_setup($node, 30000);
$node->safe_psql('postgres', q{
CREATE ROLE bob LOGIN;
CREATE TABLE r (id int PRIMARY KEY, v text NOT NULL);
INSERT INTO r SELECT g, g::text FROM generate_series(1, 20000) g;
CREATE TABLE plain (a int);
INSERT INTO plain SELECT generate_series(1, 1000);
});

# About 100 transactions a second
my ($writers, $err) = start_pgbench($node, events_write_script(), '-R', '100');

my $manual = 'SET background_ddl.cutover = manual;';
my $query = 'SELECT id, account, payload FROM events WHERE account % 3 = 0';

# Poll until a job is ready and waits for complete_ddl
sub wait_ready
{
	my ($job) = @_;
	return $node->poll_query_until('postgres',
		"SELECT state || '/' || phase || '/' || waiting_on FROM pg_stat_background_ddl WHERE id = $job",
		"running/ready/complete_ddl($job) to publish it");
}

# 1. Under writes: ready, kept caught up, published by complete_ddl
my $job = submit_job($node, "CREATE MATERIALIZED VIEW mv AS $query", before => $manual);
ok(wait_ready($job), "1: job $job is ready and waits for complete_ddl");
is(job_field($node, $job, 'cutover'), 'manual', '1: its cut-over is manual');
my ($ret, $out, $stderr) = $node->psql('postgres', 'SELECT count(*) FROM mv');
like($stderr, qr/"mv" is being built by background DDL job $job/, '1: the view is not usable yet');
# (more than the 20 passes a job makes before an automatic cut-over)
ok( $node->poll_query_until('postgres',
		"SELECT catchup_passes > 20 FROM pg_stat_background_ddl WHERE id = $job"),
	'1: while ready, its catch-up passes go on under the writes, one a second');
ok( $node->poll_query_until('postgres', qq{
SELECT a.backend_xmin IS NULL AND a.backend_xid IS NULL
       AND NOT EXISTS (SELECT FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation')
  FROM pg_stat_activity a JOIN pg_stat_background_ddl j ON j.pid = a.pid WHERE j.id = $job}),
	'1: between its passes the ready job holds no snapshot, transaction or lock');
is(job_field($node, $job, 'phase'), 'ready', '1: still ready');
$node->safe_psql('postgres', "CALL complete_ddl($job)");
is(job_field($node, $job, 'state'), 'succeeded', '1: complete_ddl returned once the job succeeded');
is(job_field($node, $job, 'cutover'), 'completed', '1: the job says complete_ddl published it');
check_exact_at_cutover($node, 'mv',
	$job, 'SELECT id, account, payload FROM events_at(SNAP) WHERE account % 3 = 0', 1000);
check_no_leftovers($node, $job);

# 2. alter_ddl stops a running job before its cut-over, and lets it go on
my $hold;
($job, $hold) = submit_held_at($node, 'catching up', "CREATE MATERIALIZED VIEW mv2 AS $query");
is($node->safe_psql('postgres', "SELECT alter_ddl($job, cutover => 'manual')"),
	't', '2: alter_ddl makes the cut-over of a running job manual');
release_hold($node, $hold);
ok(wait_ready($job), "2: job $job is ready");
is($node->safe_psql('postgres', "SELECT alter_ddl($job, cutover => 'auto')"),
	't', "2: alter_ddl(cutover => 'auto')");
ok(wait_job_state($node, $job, 'succeeded'), '2: the job is published without complete_ddl');
is(job_field($node, $job, 'cutover'), 'auto', '2: its cut-over is automatic');
($ret, $out, $stderr) =
  $node->psql('postgres', "SELECT alter_ddl($job, cutover => 'later')");
like($stderr, qr/invalid value for cutover: "later"/, '2: alter_ddl refuses an unknown cut-over');

my $stopped = stop_pgbench($writers, $err);
unlike($stopped, qr/aborted|ERROR/, 'no writer failed');

# 3. Killed while ready: ready again after the restart, then published
$job = submit_job($node, 'CREATE MATERIALIZED VIEW mv3 AS SELECT a, a * 2 AS b FROM plain',
	before => $manual);
ok(wait_ready($job), "3: job $job is ready");
kill_and_recover($node, job_field($node, $job, 'pid'));
$node->safe_psql('postgres', 'INSERT INTO plain SELECT generate_series(1001, 1100)');
ok(wait_ready($job), '3: after the crash the job is ready again');
cmp_ok(job_field($node, $job, 'attempts'), '>=', 2, '3: it was started again');
$node->safe_psql('postgres', "CALL complete_ddl($job)");
is(differences($node, 'mv3', 'SELECT a, a * 2 AS b FROM plain'), '0',
	'3: published with the rows written while it waited');
check_no_leftovers($node, $job);

# 4. A job that fails while ready: complete_ddl fails with its error
$job = submit_job($node, 'ALTER TABLE r ALTER COLUMN v TYPE int USING v::int', before => $manual);
ok(wait_ready($job), "4: ALTER COLUMN ... TYPE job $job is ready");
$node->safe_psql('postgres', "INSERT INTO r VALUES (0, 'not a number')");
($ret, $out, $stderr) = $node->psql('postgres', "CALL complete_ddl($job)");
like($stderr, qr/invalid input syntax for type integer: "not a number"/,
	'4: complete_ddl fails with the job\'s error');
is(job_field($node, $job, 'state'), 'failed', '4: the job failed');
is($node->safe_psql('postgres', q{SELECT format_type(atttypid, atttypmod) FROM pg_attribute
   WHERE attrelid = 'r'::regclass AND attname = 'v'}), 'text', '4: the table is as it was');
check_no_leftovers($node, $job);

# 5. Refusals, a timeout, the session's later statement, a cancel
($ret, $out, $stderr) = $node->psql('postgres',
	"SET background_ddl = on; $manual CREATE MATERIALIZED VIEW mv5 AS SELECT a FROM plain");
like($stderr, qr/DETAIL:  Once built, it waits for complete_ddl\(\d+\) to publish it\./,
	'5: the submit says that the job waits for complete_ddl');
$job = $node->safe_psql('postgres', q{SELECT id FROM pg_stat_background_ddl WHERE target = 'public.mv5'});
ok(wait_ready($job), "5: job $job is ready");
($ret, $out, $stderr) = $node->psql('postgres', "BEGIN; CALL complete_ddl($job); COMMIT;");
like($stderr, qr/complete_ddl\(\) cannot run inside a transaction block.*\n.*\n.*alter_ddl\($job, cutover => 'auto'\)/,
	'5: complete_ddl refuses a transaction block, and says what works there');
($ret, $out, $stderr) = $node->psql('postgres', "CALL complete_ddl($job)", extra_params => [ '-U', 'bob' ]);
like($stderr, qr/permission denied to complete background DDL job $job/,
	'5: another role may not complete the job');
$node->safe_psql('postgres', "SELECT pause_ddl($job)");
($ret, $out, $stderr) = $node->psql('postgres', "CALL complete_ddl($job)");
like($stderr, qr/background DDL job $job is paused/, '5: a paused job is refused');
$node->safe_psql('postgres', "SELECT resume_ddl($job)");
ok(wait_ready($job), '5: resumed, it is ready again');
is(job_field($node, $job, 'cutover'), 'manual', '5: refused, complete_ddl changed nothing');
$hold = hold_at($node, 'cutting over');
($ret, $out, $stderr) = $node->psql('postgres', "CALL complete_ddl($job, interval '100 ms')");
like($stderr, qr/timed out waiting for background DDL job $job/, '5: complete_ddl with a timeout times out');
ok(held_at_hold($node), '5: ... and the job goes on to its cut-over');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), '5: and is published');

($ret, $out, $stderr) = $node->psql('postgres', qq{
SET background_ddl = on; $manual
CREATE MATERIALIZED VIEW mv6 AS SELECT a FROM plain;
SELECT count(*) FROM mv6;});
like($stderr,
	qr/this statement would wait for background DDL job (\d+), whose cut-over is manual.*\n.*\n.*CALL complete_ddl\(\1\)/,
	'5: the session\'s later statement that uses the result is refused, and told what to do');
$job = $node->safe_psql('postgres', q{SELECT id FROM pg_stat_background_ddl WHERE target = 'public.mv6'});
ok(wait_ready($job), "5: job $job is ready");
is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', '5: cancel_ddl of a ready job');
ok(wait_job_state($node, $job, 'cancelled'), '5: the job is cancelled');
check_no_leftovers($node, $job);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'mv6'}),
	'0', '5: nothing of it is left');

# 6. Indexes and constraints: once built (checked) each waits, ready, with
#    its index invalid (its constraint NOT VALID) until complete_ddl; a
#    unique index checks the keys of new rows meanwhile, as during CREATE
#    INDEX CONCURRENTLY.  REINDEX is not held back: the submit says so, and
#    alter_ddl refuses to make its cut-over manual.
# All three at once, with two workers: a ready job gives its worker back to
# a job with work to do, and waits for a worker again (not kept caught up
# meanwhile); complete_ddl gives it one.
my $row = 100000;
my @held = (
	[ 'plain_u', 'CREATE UNIQUE INDEX plain_u ON plain (a)', 'CREATE INDEX CONCURRENTLY\'s' ],
	[ 'plain_b', 'CREATE INDEX plain_b ON plain (a)', 'our own build\'s' ],
	[ 'plain_pos', 'ALTER TABLE plain ADD CONSTRAINT plain_pos CHECK (a > 0)', 'a constraint' ]);
sub held_state
{
	my ($name) = @_;
	return $node->safe_psql('postgres', $name eq 'plain_pos'
		? q{SELECT convalidated::text FROM pg_constraint WHERE conname = 'plain_pos'}
		: "SELECT indisready::text || ' ' || indisvalid::text FROM pg_index WHERE indexrelid = '$name'::regclass");
}
my $log_offset = -s $node->logfile;
# (the index jobs' workers held before their builds until all three are
# submitted: the constraint's submit asks for its lock on the table as a job
# does, and a build under way would hold it longer than lock_timeout)
$hold = hold_at($node, 'chunk 0');
my %jobs = map { ($_->[0] => submit_job($node, $_->[1], before => $manual)) } @held;
ok(held_at_hold($node, 2), '6: the index jobs\' workers wait before their builds');
release_hold($node, $hold);
for my $held (@held)
{
	my ($name, $statement, $what) = @$held;
	ok( $node->poll_query_until('postgres',
			"SELECT phase FROM pg_stat_background_ddl WHERE id = $jobs{$name}", 'ready'),
		"6: $what, once built, waits for complete_ddl (three jobs, two workers)");
	is(held_state($name), $name eq 'plain_pos' ? 'false' : 'true false', "6: $what: ready for writes, not valid");
}
like(slurp_file($node->logfile, $log_offset),
	qr/asks the worker of job \d+, which is ready and waits for its cut-over, to give its slot back, for job \d+/,
	'6: a ready job gave its worker back to a job with work to do');
($ret, $out, $stderr) = $node->psql('postgres', 'INSERT INTO plain VALUES (5)');
like($stderr, qr/duplicate key value violates unique constraint "plain_u"/,
	'6: the unique index checks the keys of new rows already');
for my $held (@held)
{
	my ($name, $statement, $what) = @$held;
	$row++;
	$node->safe_psql('postgres', "INSERT INTO plain VALUES ($row)");
	$node->safe_psql('postgres', "CALL complete_ddl($jobs{$name})");
	is(job_field($node, $jobs{$name}, 'state') . ' ' . job_field($node, $jobs{$name}, 'cutover'),
		'succeeded completed', "6: complete_ddl published $what");
	is(held_state($name), $name eq 'plain_pos' ? 'true' : 'true true', "6: $what is valid");
	check_no_leftovers($node, $jobs{$name});
}
is( $node->safe_psql('postgres', q{CREATE EXTENSION IF NOT EXISTS amcheck;
	  SELECT bool_and(bt_index_check(indexrelid, true) IS NOT NULL) FROM pg_index WHERE indrelid = 'plain'::regclass}),
	't', '6: both indexes have every row, those written while they waited too (amcheck, heapallindexed)');
($ret, $out, $stderr) = $node->psql('postgres',
	"SET background_ddl = on; $manual REINDEX INDEX plain_b");
like($stderr, qr/Its cut-over does not wait for complete_ddl: what a REINDEX job makes is in use before it/,
	'6: the submit of a REINDEX says that its cut-over does not wait');
$job = $node->safe_psql('postgres', q{SELECT max(id) FROM pg_stat_background_ddl WHERE kind = 'REINDEX'});
ok(wait_job_state($node, $job, 'succeeded'), '6: the REINDEX job succeeds');
is(job_field($node, $job, 'cutover'), 'auto', '6: its cut-over was automatic');
($job, $hold) = submit_held_at($node, 'cutting over', 'REINDEX INDEX plain_u');
($ret, $out, $stderr) = $node->psql('postgres', "SELECT alter_ddl($job, cutover => 'manual')");
like($stderr, qr/the cut-over of background DDL job $job cannot wait/,
	'6: alter_ddl refuses to make a REINDEX job\'s cut-over manual');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), '6: and the job goes on');

# 7. A cut-over window
my $later = $node->safe_psql('postgres',
	q{SELECT to_char(now() + interval '2 hours', 'HH24:MI') || '-' || to_char(now() + interval '3 hours', 'HH24:MI')});
my $around = $node->safe_psql('postgres',
	q{SELECT to_char(now() - interval '1 hour', 'HH24:MI') || '-' || to_char(now() + interval '1 hour', 'HH24:MI')});
($ret, $out, $stderr) = $node->psql('postgres',
	"SET background_ddl = on; SET background_ddl.cutover_window = '$later'; "
	  . 'CREATE MATERIALIZED VIEW mv7 AS SELECT a FROM plain');
like($stderr, qr/Once built, it waits for its cut-over window, $later\./,
	'7: the submit says that the job waits for its window');
$job = $node->safe_psql('postgres', q{SELECT id FROM pg_stat_background_ddl WHERE target = 'public.mv7'});
ok( $node->poll_query_until('postgres',
		"SELECT phase || '/' || waiting_on FROM pg_stat_background_ddl WHERE id = $job",
		"ready/its cut-over window, $later (" . $node->safe_psql('postgres', 'SHOW TimeZone') .
		  "), or complete_ddl($job)"),
	"7: job $job is ready, and waits for its window ($later) ");
is(job_field($node, $job, 'cutover_window'), $later, '7: the view shows its window');
($ret, $out, $stderr) =
  $node->psql('postgres', "SELECT alter_ddl($job, cutover_window => '25:00-01:00')");
like($stderr, qr/invalid value for cutover_window: "25:00-01:00"/, '7: alter_ddl refuses a window that is not one');
($ret, $out, $stderr) = $node->psql('postgres', "SET background_ddl.cutover_window = '01:00'");
like($stderr, qr/invalid value for parameter "background_ddl.cutover_window": "01:00"/,
	'7: so does the setting');
$node->safe_psql('postgres', "SELECT alter_ddl($job, cutover_window => '$around')");
ok(wait_job_state($node, $job, 'succeeded'), "7: in its new window ($around), the job cuts over");
is(differences($node, 'mv7', 'SELECT a FROM plain'), '0', '7: the view has its rows');
$job = submit_job($node, 'CREATE MATERIALIZED VIEW mv8 AS SELECT a FROM plain',
	before => "SET background_ddl.cutover_window = '$later';");
ok( $node->poll_query_until('postgres',
		"SELECT phase FROM pg_stat_background_ddl WHERE id = $job", 'ready'),
	"7: job $job waits for its window");
$node->safe_psql('postgres', "CALL complete_ddl($job)");
is( $node->safe_psql('postgres',
		"SELECT state || '/' || cutover || '/' || coalesce(cutover_window, 'none') FROM pg_stat_background_ddl WHERE id = $job"),
	'succeeded/completed/none', '7: complete_ddl published it at once, out of its window');
($ret, $out, $stderr) = $node->psql('postgres', qq{
SET background_ddl = on; SET background_ddl.cutover_window = '$later';
CREATE MATERIALIZED VIEW mv10 AS SELECT a FROM plain;
SELECT count(*) FROM mv10;});
like($stderr,
	qr/this statement would wait for background DDL job (\d+), whose cut-over waits for its window, $later/,
	'7: the session\'s later statement that uses the result of a job waiting for its window is refused');
$job = $node->safe_psql('postgres', q{SELECT id FROM pg_stat_background_ddl WHERE target = 'public.mv10'});
is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', '7: cancelled');
ok(wait_job_state($node, $job, 'cancelled'), '7: the job is cancelled');

# 8. A write limit: about 300 rows a second are written to events
($writers, $err) = start_pgbench($node, events_write_script(), '-R', '100');
$job = submit_job($node, "CREATE MATERIALIZED VIEW mv9 AS $query",
	before => 'SET background_ddl.cutover_max_writes = 50;');
ok( $node->poll_query_until('postgres', qq{
SELECT phase = 'ready' AND waiting_on ~ '^fewer than 50 rows written a second to its tables \\(\\d+ now\\), or complete_ddl\\($job\\)\$'
  FROM pg_stat_background_ddl WHERE id = $job}),
	"8: job $job is ready, and waits for fewer writes to its tables");
is(job_field($node, $job, 'cutover_max_writes'), '50', '8: the view shows its limit');
my $passes = job_field($node, $job, 'catchup_passes');
ok( $node->poll_query_until('postgres',
		"SELECT catchup_passes >= $passes + 5 FROM pg_stat_background_ddl WHERE id = $job"),
	'8: it keeps catching up');
is(job_field($node, $job, 'state || phase'), 'runningready', '8: and waits, while the writers write');
$stopped = stop_pgbench($writers, $err);
unlike($stopped, qr/aborted|ERROR/, '8: no writer failed');
ok(wait_job_state($node, $job, 'succeeded'), '8: once the writers stop, it cuts over');
is(differences($node, 'mv9', "($query)"), '0', '8: the view has its query\'s rows');

# 9. Waiting for a lock: who holds it, and what they run
my $holder = $node->background_psql('postgres');
$holder->query_safe("BEGIN; LOCK TABLE plain IN ACCESS SHARE MODE; SELECT 'holding   plain'");
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$job = submit_job($node, 'VACUUM FULL plain');
ok( $node->poll_query_until('postgres', qq{
SELECT waiting_on LIKE 'a lock: AccessExclusiveLock on plain held by pid $holder_pid ($holder_pid: idle in transaction, SELECT pg_backend_pid()%)'
  FROM pg_stat_background_ddl WHERE id = $job}),
	"9: job $job waits for a lock, and says who holds it and their last query");
my $seen = '';
foreach my $look (1 .. 300)
{
	$seen = $node->safe_psql('postgres', "SELECT waiting_on FROM pg_stat_background_ddl WHERE id = $job",
		extra_params => [ '-U', 'bob' ]);
	last if $seen =~ /held by pid/;
	usleep(50_000);
}
like($seen, qr/^a lock: AccessExclusiveLock on plain held by pid $holder_pid \($holder_pid: \?, <insufficient privilege>\)(; \d+ tries failed so far)?$/,
	'9: to another role, the pid but not the query');
$holder->query_safe('COMMIT');
$holder->quit;
ok(wait_job_state($node, $job, 'succeeded'), '9: once the lock is let go, the job succeeds');

done_testing();
