# A session's later statement that waits for one of its jobs never waits for
# itself: it holds no lock of its analysis and no snapshot while it waits,
# so an index build (which waits for writers and for older snapshots) ends
# and the statement goes on; where its transaction holds what the job needs,
# it fails with a deadlock error instead of waiting for ever.  A statement
# on a partitioned table waits for a job on one of its partitions, a DROP
# INDEX for the CLUSTER job that orders by the index.  An index build that
# already waits for the snapshot of a statement that then waits for it
# ends: a utility statement waits before its portal takes a snapshot, and
# at a subcommand sets its snapshot aside, which is all the job's own build
# waits for; a session whose older snapshot the build waits to go, and
# which waits for the statement's transaction, is a deadlock error.  A
# statement goes on as soon as its job has succeeded, while the job's worker
# may still clean up.  A statement whose checks at submit lock a table that
# an index build of the session holds waits for the build before them.
# Each race is made deterministic with a hold point.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BackgroundDdlTest;

my $node = bgddl_node('order');
$node->safe_psql('postgres',
	'CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 20000) g');

# The session's standard error, once it says $pattern: psql writes its
# messages through another pipe than the \echo that query_until waited for,
# and they may come after it (bounded by the session's timer)
sub stderr_until
{
	my ($session, $pattern) = @_;
	pump_until($session->{run}, $session->{timeout}, \$session->{stderr}, $pattern);
	return $session->{stderr};
}

# Until the session sees the hold point that hold_at set (its backend takes
# a configuration reload before the next statement it reads), a bounded poll
sub poll_session_setting
{
	my ($session) = @_;
	my $want = $node->safe_psql('postgres', 'SHOW background_ddl.test_hold_point');
	foreach (1 .. 300)
	{
		my $got = $session->query('SHOW background_ddl.test_hold_point');
		$session->{stderr} = '';
		return 1 if $got eq $want;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# Until the session's statement waits in the job's wait (wait event
# Extension), a bounded poll
sub waits
{
	my ($pid) = @_;
	return $node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid");
}

# 1. A duplicate inserted after a unique index job, in a later transaction:
# the INSERT waits for the job, whose build (held before it starts) then
# waits for writers and older snapshots: none of the INSERT's.  The build
# ends, and the INSERT fails as it would with the index there.
my $hold = hold_at($node, 'chunk 0');
my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->set_query_timer_restart;
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_safe('SET background_ddl = on');
$session->query('CREATE UNIQUE INDEX t_id ON t (id)');
$session->{stderr} = '';
my $job = $session->query_safe('SELECT last_ddl_job()');
ok(held_at_hold($node), 'the index job is held before its build');
$session->query_until(qr/sent/, "\\echo sent\nINSERT INTO t VALUES (7);\n");
ok(waits($pid), 'the INSERT waits for the job');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_locks WHERE pid = $pid AND relation = 't'::regclass"),
	'0', 'holding no lock on the table');
is($node->safe_psql('postgres', "SELECT backend_xmin IS NULL FROM pg_stat_activity WHERE pid = $pid"),
	't', 'and no snapshot');
release_hold($node, $hold);
$session->query_until(qr/done/, "\\echo done\n");
stderr_until($session, qr/ERROR:.*\n/);
like($session->{stderr}, qr/waiting for background DDL job $job, which this statement would change/,
	'the INSERT said why it waited');
like($session->{stderr}, qr/duplicate key value violates unique constraint "t_id"/,
	'then failed on the index, as with the setting off');
is($node->safe_psql('postgres', "SELECT state FROM pg_stat_background_ddl WHERE id = $job"),
	'succeeded', 'the index job succeeded');
is($node->safe_psql('postgres', "SELECT indisvalid FROM pg_index WHERE indexrelid = 't_id'::regclass"),
	't', 'its index is valid');
$session->{stderr} = '';

# 2. Archive, then purge, the purge in a transaction that already holds a
# lock the job's capture needs: it fails with a deadlock error at once,
# rather than wait for ever; in a new transaction it waits and purges.
$hold = hold_at($node, 'installing capture');
$session->query('CREATE TABLE t_arch AS SELECT id FROM t WHERE id <= 100');
$session->{stderr} = '';
$job = $session->query_safe('SELECT last_ddl_job()');
ok(held_at_hold($node), 'the table job is held before it installs its capture');
$session->query_safe('BEGIN');
$session->query_safe('LOCK TABLE t IN SHARE MODE');
$session->query_until(qr/sent/, "\\echo sent\nDELETE FROM t WHERE id <= 100;\n");
ok(waits($pid), 'the DELETE waits for the job');
release_hold($node, $hold);
$session->query_until(qr/done/, "\\echo done\n");
stderr_until($session, qr/DETAIL:.*\n/);
like($session->{stderr}, qr/ERROR:  this statement cannot wait for background DDL job $job: the job waits for this transaction/,
	'the DELETE fails instead of waiting for ever');
like($session->{stderr}, qr/DETAIL:  Job $job asks for a lock on "t" that this transaction holds/,
	'saying which lock');
$session->{stderr} = '';
$session->query_safe('ROLLBACK');
$session->query('DELETE FROM t WHERE id <= 100');
like($session->{stderr}, qr/waiting for background DDL job $job/, 'in a new transaction it waits');
is($node->safe_psql('postgres', 'SELECT (SELECT count(*) FROM t_arch) || \' \' || (SELECT count(*) FROM t)'),
	'100 19900', 'the archive has the rows the purge deleted');

# Cases 3 and 4: the session submits a job (held before its first chunk),
# then a later statement that waits for it; the job, let go, succeeds, and the
# statement goes on
sub later_statement_waits
{
	my ($submit, $later, $job_name, $later_name) = @_;
	my $hold = hold_at($node, 'chunk 0');
	$session->query($submit);
	$session->{stderr} = '';
	my $job = $session->query_safe('SELECT last_ddl_job()');
	ok(held_at_hold($node), "$job_name is held before its first chunk");
	$session->query_until(qr/sent/, "\\echo sent\n$later;\n");
	ok(waits($pid), "$later_name waits for the job");
	release_hold($node, $hold);
	$session->query_until(qr/done/, "\\echo done\n");
	stderr_until($session, qr/waiting for background DDL job $job.*\n/);
	is($node->safe_psql('postgres', "SELECT state FROM pg_stat_background_ddl WHERE id = $job"),
		'succeeded', "$job_name succeeded");
	return;
}

# 3. A partition's VACUUM FULL, then an ALTER TABLE of its partitioned
# table, which changes the partition too: the ALTER waits for the job (the
# job would fail, its table altered under it), and both succeed, as with the
# setting off.
$node->safe_psql('postgres', q{
CREATE TABLE pt (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (100000);
INSERT INTO pt SELECT g, md5(g::text) FROM generate_series(0, 20000) g;
});
later_statement_waits('VACUUM FULL pt1', 'ALTER TABLE pt ADD COLUMN w int',
	"the partition's rewrite", 'the ALTER TABLE of the partitioned table');
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || count(w) FROM pt}),
	'20001 0', 'and the partition has the new column, every row there');

# 4. CLUSTER, then DROP INDEX of the index it orders the table by: the DROP
# waits for the job (which needs the index), and both succeed.
$node->safe_psql('postgres', q{
CREATE TABLE ct (id int NOT NULL, v text);
INSERT INTO ct SELECT (g * 7919) % 20000, md5(g::text) FROM generate_series(1, 20000) g;
CREATE INDEX ct_id ON ct (id);
});
later_statement_waits('CLUSTER ct USING ct_id', 'DROP INDEX ct_id', 'the CLUSTER job',
	'the DROP INDEX');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'ct_id'}),
	'0', 'and the index is gone');

# 5. A unique index job (CREATE INDEX CONCURRENTLY), then a COMMENT on
# its index, sent alone and in a transaction block: the COMMENT waits at the
# end of its parse analysis, before its portal takes a snapshot, and is held
# there, holding none, while the build (held by lock 81 until then) ends:
# it waits for the transactions with older snapshots to end, and this one
# has none.  Both succeed, as with the setting off (had the COMMENT held its
# snapshot, the build would wait for its transaction to end, and in a block
# the COMMENT's wait would fail with the deadlock error).
$node->safe_psql('postgres', q{
CREATE FUNCTION gate81(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 1 THEN PERFORM pg_advisory_xact_lock_shared(81); END IF; RETURN x; END $$;
CREATE TABLE gt AS SELECT g AS id FROM generate_series(1, 1000) g;
CREATE TABLE gt2 AS SELECT g AS id FROM generate_series(1, 1000) g;
CREATE TABLE gt4 AS SELECT g AS id FROM generate_series(1, 1000) g;
});
my $gate = $node->background_psql('postgres');

# Until the index job's build waits for lock 81 (in gate81), a bounded poll
sub held_by_gate
{
	return $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 81 AND NOT granted});
}

# An index job ($index: its CREATE statement), gated by lock 81, then a
# statement that waits for it ($statement, in a transaction block of its
# own with in_block) held before its wait while the build goes on: with
# waiting_on, the statement holds its snapshot there, and the build begins
# to wait for older snapshots, the statement's among them, as waiting_on
# says; without, it holds none, and the job ends meanwhile.  Then the
# statement waits (or finds the job done), and succeeds.
sub statement_waits_for_build
{
	my ($case, $index, $statement, %opt) = @_;
	$gate->query_safe('SELECT pg_advisory_lock(81)');
	my $hold = hold_at($node, 'statement: before its wait');
	ok(poll_session_setting($session), "$case: the session has the hold point");
	$session->query($index);
	$session->{stderr} = '';
	my $job = $session->query_safe('SELECT last_ddl_job()');
	ok(held_by_gate(), "$case: the index job builds, held by lock 81");
	$session->query_safe('BEGIN') if $opt{in_block};
	$session->query_until(qr/sent/, "\\echo sent\n$statement\n");
	ok(held_at_hold($node), "$case: the statement is held before its wait");
	is($node->safe_psql('postgres', "SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = $pid"),
		$opt{waiting_on} ? 't' : 'f',
		"$case: " . ($opt{waiting_on} ? 'with its snapshot' : 'holding no snapshot'));
	$gate->query_safe('SELECT pg_advisory_unlock(81)');
	if ($opt{waiting_on})
	{
		ok( $node->poll_query_until('postgres',
				"SELECT waiting_on FROM pg_stat_background_ddl WHERE id = $job", $opt{waiting_on}),
			"$case: the build waits for older snapshots, the statement's among them");
	}
	else
	{
		ok(wait_job_state($node, $job, 'succeeded'), "$case: the job ends while the statement is held");
	}
	release_hold($node, $hold);
	$session->query_until(qr/done/, "\\echo done\n");
	stderr_until($session, qr/waiting for background DDL job $job.*\n.*\n/);
	unlike($session->{stderr}, qr/ERROR/, "$case: the statement waited, without error")
	  or diag($session->{stderr});
	is($node->safe_psql('postgres', "SELECT state FROM pg_stat_background_ddl WHERE id = $job"),
		'succeeded', "$case: the index job succeeded");
	$session->{stderr} = '';
	$session->query_safe('COMMIT') if $opt{in_block};
	return;
}

statement_waits_for_build('alone', 'CREATE UNIQUE INDEX gt_gate ON gt (gate81(id))',
	"COMMENT ON INDEX gt_gate IS 'unique';");
is($node->safe_psql('postgres', "SELECT obj_description('gt_gate'::regclass, 'pg_class')"),
	'unique', 'alone: the COMMENT is on its index');
statement_waits_for_build('in a block', 'CREATE UNIQUE INDEX gt2_gate ON gt2 (gate81(id))',
	"COMMENT ON INDEX gt2_gate IS 'in a block';", in_block => 1);
is($node->safe_psql('postgres', "SELECT obj_description('gt2_gate'::regclass, 'pg_class')"),
	'in a block', 'in a block: the COMMENT is on its index');

# 6. At a subcommand (CREATE TABLE ... INHERITS waits where it adds the
# parent, after it created its table, in its portal's snapshot), with the
# job's own (chunked) build of an index: the statement sets its snapshot
# aside while it waits, and that build waits for older snapshots to go, not
# for their transactions (WaitForOlderSnapshots would wait for the
# statement's transaction to end: a deadlock, failed by the statement's
# wait)
statement_waits_for_build('at a subcommand', 'CREATE INDEX gt4_gate ON gt4 (gate81(id))',
	'CREATE TABLE gt4_child () INHERITS (gt4);',
	waiting_on => 'transactions with snapshots older than the index');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_inherits WHERE inhparent = 'gt4'::regclass"),
	'1', 'at a subcommand: the table inherits');
# 7. The session's own transaction block updated a row that another
# session, in REPEATABLE READ with its snapshot taken, waits to update;
# then a COMMENT of the session waits for an index job.  The build waits
# for that snapshot to go, which waits for the session's transaction: the
# COMMENT's wait follows the older snapshots the build waits for and fails
# with the deadlock error, rather than wait for ever.  Rolled back, the
# other session updates its row and ends, and the job succeeds.
$node->safe_psql('postgres', q{
CREATE TABLE gt3 AS SELECT g AS id FROM generate_series(1, 1000) g;
CREATE TABLE rowlock (id int PRIMARY KEY, v int);
INSERT INTO rowlock VALUES (1, 0);
});
$gate->query_safe('SELECT pg_advisory_lock(81)');
$session->query('CREATE INDEX gt3_gate ON gt3 (gate81(id))');
$session->{stderr} = '';
$job = $session->query_safe('SELECT last_ddl_job()');
ok(held_by_gate(), '7: the index job builds, held by lock 81');
$session->query_safe('BEGIN');
$session->query_safe('UPDATE rowlock SET v = 1 WHERE id = 1');
my $older = $node->background_psql('postgres');
my $older_pid = $older->query_safe('SELECT pg_backend_pid()');
$older->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$older->query_safe('SELECT count(*) FROM rowlock');
$older->query_until(qr/sent/, "\\echo sent\nUPDATE rowlock SET v = 2 WHERE id = 1;\n\\echo updated\n");
ok( $node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $older_pid"),
	"7: the other session waits for the session's row, with its snapshot");
$session->query_until(qr/sent/, "\\echo sent\nCOMMENT ON INDEX gt3_gate IS 'never';\n");
ok(waits($pid), '7: the COMMENT waits for the job');
$gate->query_safe('SELECT pg_advisory_unlock(81)');
$session->query_until(qr/done/, "\\echo done\n");
stderr_until($session, qr/DETAIL:.*\n/);
like($session->{stderr},
	qr/ERROR:  this statement cannot wait for background DDL job $job: the job waits for this transaction\n.*DETAIL:  Process $older_pid, which job $job waits for, waits for this transaction/,
	'7: the COMMENT fails with the deadlock error, naming the other session');
$session->{stderr} = '';
$session->query_safe('ROLLBACK');
$older->query_until(qr/updated/, '');
$older->query_safe('COMMIT');
ok(wait_job_state($node, $job, 'succeeded'), '7: the job succeeded');
$older->quit;

# 8. A statement that waits for a view job goes on once the job has
# succeeded, while its worker still cleans up (held there: its capture
# triggers to drop, which a writer of the table could delay for as long as
# it runs).  The job's query waits on lock 81 until the statement waits.
$node->safe_psql('postgres', 'CREATE TABLE gt5 AS SELECT g AS id FROM generate_series(1, 1000) g');
$gate->query_safe('SELECT pg_advisory_lock(81)');
my $cleaning = hold_at($node, 'cleaning up');
ok(poll_session_setting($session), '8: the session has the hold point');
$session->query('CREATE MATERIALIZED VIEW gt5_mv AS SELECT gate81(id) AS id FROM gt5');
$session->{stderr} = '';
$job = $session->query_safe('SELECT last_ddl_job()');
ok(held_by_gate(), '8: the job computes its view, held by lock 81');
$session->query_until(qr/sent/, "\\echo sent\nSELECT count(*) AS n FROM gt5_mv;\n\\echo counted\n");
ok(waits($pid), '8: the SELECT waits for the job');
$gate->query_safe('SELECT pg_advisory_unlock(81)');
ok(held_at_hold($node), '8: the job succeeded, its worker held before its clean-up');
is(job_field($node, $job, 'state'), 'succeeded', '8: the job is succeeded');
$session->query_until(qr/counted/, '');
ok(held_at_hold($node), '8: the SELECT went on while the worker still waits to clean up');
release_hold($node, $cleaning);
check_no_leftovers($node, $job);
$session->{stderr} = '';
is($session->query_safe('SELECT count(*) FROM gt5_mv'), '1000', '8: the view has every row');

# 9. An index job (its build held by lock 81, holding its table's lock as
# CREATE INDEX CONCURRENTLY holds it), then a statement whose checks at
# submit run it on the table, under a lock that the build's conflicts with
# (ADD CONSTRAINT, ALTER COLUMN ... TYPE): the statement waits for the build
# before its checks, as with the setting off it would have run after it,
# and then is a job of its own, or fails with PostgreSQL's error.  (Without
# the wait, its checks would give up on the build's lock, with a lock
# timeout error.)
sub checks_wait_for_build
{
	my ($case, $table, $statement, $outcome) = @_;
	$gate->query_safe('SELECT pg_advisory_lock(81)');
	$session->query("CREATE INDEX ${table}_gate ON $table (gate81(id))");
	$session->{stderr} = '';
	my $job = $session->query_safe('SELECT last_ddl_job()');
	ok(held_by_gate(), "$case: the index job builds, held by lock 81");
	$session->query_until(qr/sent/, "\\echo sent\n$statement;\n");
	like(stderr_until($session, qr/waiting for background DDL job $job.*\n/),
		qr/waiting for background DDL job $job, which this statement would change/,
		"$case: the statement waits for the build before its checks");
	ok(waits($pid), "$case: and goes on waiting");
	$gate->query_safe('SELECT pg_advisory_unlock(81)');
	$session->query_until(qr/done/, "\\echo done\n");
	stderr_until($session, $outcome);
	is(job_field($node, $job, 'state'), 'succeeded', "$case: the index job succeeded");
	my $stderr = $session->{stderr};
	$session->{stderr} = '';
	return $stderr;
}

$node->safe_psql('postgres', q{
CREATE TABLE gt6 AS SELECT g AS id, g AS v FROM generate_series(1, 1000) g;
CREATE TABLE gt7 AS SELECT g AS id, g AS v FROM generate_series(1, 1000) g;
CREATE TABLE gp (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE gp1 PARTITION OF gp FOR VALUES FROM (0) TO (100000);
INSERT INTO gp SELECT g, g FROM generate_series(1, 1000) g;
});
foreach my $statement ('ALTER TABLE gt6 ADD CONSTRAINT gt6_v CHECK (v > 0)',
	'ALTER TABLE gt7 ALTER COLUMN v TYPE bigint')
{
	my ($table) = $statement =~ /ALTER TABLE (\w+)/;
	my $stderr = checks_wait_for_build("9, $table", $table, $statement,
		qr/(submitted for public\.$table|ERROR:.*)\n/);
	unlike($stderr, qr/ERROR/, "9, $table: the statement is a job, without error");
	my $later = $session->query_safe('SELECT last_ddl_job()');
	ok(wait_job_state($node, $later, 'succeeded'), "9, $table: its job succeeded");
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_constraint WHERE conname = 'gt6_v' AND convalidated}),
	'1', '9: the constraint is there, validated');
is($node->safe_psql('postgres', q{SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'gt7'::regclass AND attname = 'v'}),
	'bigint', '9: the column has its new type');
# A partitioned table's partition key: PostgreSQL's error, after the wait
like(checks_wait_for_build('9, gp', 'gp', 'ALTER TABLE gp ALTER COLUMN id TYPE bigint',
		qr/ERROR:.*\n/),
	qr/ERROR:  cannot alter column "id" because it is part of the partition key of relation "gp"/,
	"9, gp: the partition key's error, as with the setting off");

$gate->quit;
$session->quit;

done_testing();
