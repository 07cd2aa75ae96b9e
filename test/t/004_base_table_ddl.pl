# DDL and maintenance on base tables while a job runs.  The job's query
# calls gate(), which blocks on advisory lock 1 for the row with v = 1, so
# the test can hold the worker inside its first chunk (holding ACCESS SHARE
# on the base tables), queue the DDL behind it, and let go.
#   VACUUM: harmless.  VACUUM FULL, CLUSTER, ALTER TABLE ... TYPE of the
#   driving table: the backfill restarts.  A rewrite of another base table:
#   the cut-over recomputes.  TRUNCATE: captured.  Each ends exact.
#   DROP TABLE ... CASCADE: the job is cancelled, nothing is left.
#   A change that breaks the query: the job fails with the query's error.
#   Capture triggers disabled by the table owner: the cut-over recomputes.
#   kill -9 while the job is inside a catch-up batch: it resumes, exact.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('ddl');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'background_ddl'
background_ddl.batch_time = '10ms'
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION background_ddl;
CREATE FUNCTION gate(v int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF v IN (1, 5000) THEN PERFORM pg_advisory_xact_lock_shared(v); END IF;
  RETURN v;
END $$;
});

my $gate = $node->background_psql('postgres');
$gate->set_query_timer_restart;

# Fresh base tables for a scenario: t (driving, 30000 rows or $rows) and u (joined).
sub make_tables
{
	my ($suffix, $rows) = @_;
	$rows //= 30000;
	$node->safe_psql('postgres', qq{
CREATE TABLE t_$suffix (id int PRIMARY KEY, v int NOT NULL, pad text NOT NULL);
INSERT INTO t_$suffix SELECT g, g, repeat('x', 50) FROM generate_series(1, $rows) g;
CREATE TABLE u_$suffix (v int PRIMARY KEY, label text NOT NULL);
INSERT INTO u_$suffix SELECT g, 'label ' || g FROM generate_series(1, 30000) g;
});
	return ("t_$suffix", "u_$suffix");
}

# Submit a job and hold its worker at the gate, inside its first chunk.
sub submit_held
{
	my ($name, $query) = @_;
	$gate->query_safe('SELECT pg_advisory_lock(1)');
	my $job = $node->safe_psql('postgres',
		"SET background_ddl = on; CREATE MATERIALIZED VIEW $name AS $query; SELECT last_ddl_job();");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 1 AND NOT granted"),
		"$name: worker held at the gate");
	return $job;
}

# Start statements (each its own transaction) of which one will wait for the
# held worker's lock; returns once it waits, with the handle.
sub start_sql
{
	my @statements = @_;
	my $handle = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			map { ('-c', $_) } @statements
		],
		'>', \my $out, '2>', \my $err);
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity
			  WHERE backend_type = 'client backend' AND wait_event_type = 'Lock'
			    AND wait_event = 'relation'"),
		"'$statements[-1]' waits for the worker");
	return $handle;
}

sub release_gate { $gate->query_safe('SELECT pg_advisory_unlock(1)'); }

sub wait_state
{
	my ($job, $state) = @_;
	return $node->poll_query_until('postgres',
		"SELECT state FROM pg_stat_background_ddl WHERE id = $job", $state);
}

sub check_exact
{
	my ($name, $query) = @_;
	is(differences($node, $name, $query), '0', "$name: content equals the query");
}

sub restarts_logged
{
	my ($job) = @_;
	my $log = slurp_file($node->logfile);
	my @restarts = ($log =~ /background DDL job $job: table "[^"]+" was rewritten, restarting the backfill/g);
	return scalar @restarts;
}

# 1. Plain VACUUM runs alongside and changes nothing.
my ($t, $u) = make_tables('vacuum');
my $q = "SELECT id, gate(v) AS v FROM $t WHERE id % 3 = 1";
my $job = submit_held('mv_vacuum', $q);
$node->safe_psql('postgres', "DELETE FROM $t WHERE id % 10 = 0; VACUUM $t");
pass('plain VACUUM ran while the job held its lock');
release_gate();
ok(wait_state($job, 'succeeded'), 'mv_vacuum: succeeded');
is(restarts_logged($job), 0, 'mv_vacuum: no restart');
check_exact('mv_vacuum', "SELECT id, v FROM $t WHERE id % 3 = 1");

# 2-4. Rewrites of the driving table restart the backfill.
for my $rewrite ('VACUUM FULL', 'CLUSTER', 'ALTER TYPE')
{
	(my $suffix = lc $rewrite) =~ s/ /_/g;
	($t, $u) = make_tables($suffix);
	my $sql = $rewrite eq 'VACUUM FULL' ? "VACUUM FULL $t"
	  : $rewrite eq 'CLUSTER' ? "CLUSTER $t USING ${t}_pkey"
	  : "ALTER TABLE $t ALTER COLUMN pad TYPE bytea USING pad::bytea";
	$job = submit_held("mv_$suffix", "SELECT id, gate(v) AS v FROM $t");
	# (rows of the held chunk only: deletes spread over the chunks a helper
	# did meanwhile would leave the whole query to the cut-over, and stop
	# the held chunk, whose lock the rewrite is to wait for)
	$node->safe_psql('postgres', "DELETE FROM $t WHERE id % 7 = 0 AND id <= 50");
	my $ddl = start_sql($sql);
	release_gate();
	$ddl->finish;
	ok(wait_state($job, 'succeeded'), "mv_$suffix: succeeded after $rewrite");
	cmp_ok(restarts_logged($job), '>=', 1, "mv_$suffix: $rewrite restarted the backfill");
	check_exact("mv_$suffix", "SELECT id, v FROM $t");
	check_no_leftovers($node, $job);
}

# 5. A rewrite of another base table: the cut-over recomputes.  One worker:
#    the UPDATE's changes spread over the table, and a first worker not
#    held (a helper took the gated chunk) would leave the whole query to
#    the cut-over at once, stopping the held chunk that VACUUM FULL is to
#    wait for.
$node->safe_psql('postgres',
	'ALTER SYSTEM SET background_ddl.max_workers_per_job = 1; SELECT pg_reload_conf();');
($t, $u) = make_tables('other');
$job = submit_held('mv_other', "SELECT t.id, gate(t.v) AS v, u.label FROM $t t JOIN $u u USING (v)");
my $ddl = start_sql("UPDATE $u SET label = 'changed' WHERE v % 5 = 0", "VACUUM FULL $u");
release_gate();
$ddl->finish;
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET background_ddl.max_workers_per_job; SELECT pg_reload_conf();');
ok(wait_state($job, 'succeeded'), 'mv_other: succeeded');
check_exact('mv_other', "SELECT t.id, t.v, u.label FROM $t t JOIN $u u USING (v)");
check_no_leftovers($node, $job);

# 6. TRUNCATE of the driving table is captured.
($t, $u) = make_tables('truncate');
$job = submit_held('mv_truncate', "SELECT id, gate(v) AS v FROM $t");
# One transaction (one -c): the job cannot cut over between the two.
$ddl = start_sql("TRUNCATE $t; INSERT INTO $t VALUES (5, 5, 'after truncate')");
release_gate();
$ddl->finish;
ok(wait_state($job, 'succeeded'), 'mv_truncate: succeeded');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mv_truncate'), '1', 'mv_truncate: only the row inserted after TRUNCATE');
check_exact('mv_truncate', "SELECT id, v FROM $t");
check_no_leftovers($node, $job);

# 7. DROP TABLE ... CASCADE of a base table cancels the job, leaving nothing.
($t, $u) = make_tables('drop');
$job = submit_held('mv_drop', "SELECT t.id, gate(t.v) AS v, u.label FROM $t t JOIN $u u USING (v)");
$ddl = start_sql("DROP TABLE $u CASCADE");
release_gate();
$ddl->finish;
ok(wait_state($job, 'cancelled'), 'mv_drop: cancelled');
like($node->safe_psql('postgres', "SELECT error FROM pg_stat_background_ddl WHERE id = $job"),
	qr/dropped/, 'mv_drop: the error says why');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'mv_drop'"), '0',
	'mv_drop: no placeholder left');
check_no_leftovers($node, $job);

# 8. A change that breaks the query fails the job with the query's error.
#    Every chunk holds a gated row, so that no worker (a helper neither)
#    computes a chunk with the old function while the first is held.
$node->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION gate(v int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF v % 1000 = 1 THEN PERFORM pg_advisory_xact_lock_shared(1); END IF;
  RETURN v;
END $$;});
($t, $u) = make_tables('broken');
$gate->query_safe('SELECT pg_advisory_lock(1)');
$job = $node->safe_psql('postgres',
	"SET background_ddl = on; CREATE MATERIALIZED VIEW mv_broken AS SELECT id, gate(v) AS v FROM $t;
	 SELECT last_ddl_job();");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) >= 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 1 AND NOT granted"),
	"mv_broken: worker held at the gate");
$node->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION gate(v int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RAISE EXCEPTION 'gate is broken';
END $$;});
release_gate();
ok(wait_state($job, 'failed'), 'mv_broken: failed');
like($node->safe_psql('postgres', "SELECT error FROM pg_stat_background_ddl WHERE id = $job"),
	qr/gate is broken/, 'mv_broken: with the error the query gives');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'mv_broken'"), '0',
	'mv_broken: no placeholder left');
check_no_leftovers($node, $job);

# 9. A table owner disables the capture triggers: the changes made meanwhile
#    were not logged, so the cut-over must recompute everything.
$node->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION gate(v int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF v IN (1, 5000) THEN PERFORM pg_advisory_xact_lock_shared(v); END IF;
  RETURN v;
END $$;});
($t, $u) = make_tables('disabled');
$job = submit_held('mv_disabled', "SELECT id, gate(v) AS v, pad FROM $t");
$node->safe_psql('postgres', "ALTER TABLE $t DISABLE TRIGGER ALL; UPDATE $t SET pad = 'unlogged' WHERE id % 4 = 0");
release_gate();
ok(wait_state($job, 'succeeded'), 'mv_disabled: succeeded');
like(slurp_file($node->logfile), qr/background DDL job $job: a capture trigger was changed, disabled or dropped/,
	'mv_disabled: the cut-over noticed the disabled trigger');
check_exact('mv_disabled', "SELECT id, v, pad FROM $t");

# 10. A crash inside a catch-up batch.  Row 2 moves to v = 5000 after its
#     chunk was read (the table fits in one chunk); recomputing it stops at
#     gate(5000), where we kill the worker.  After the restart the job redoes
#     the batch and ends exact.
($t, $u) = make_tables('crash', 2000);
$gate->query_safe('SELECT pg_advisory_lock(5000)');
$job = submit_held('mv_crash', "SELECT id, gate(v) AS v FROM $t");
$node->safe_psql('postgres', "UPDATE $t SET v = 5000 WHERE id = 2; DELETE FROM $t WHERE id = 3");
release_gate();
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 5000 AND NOT granted"),
	'mv_crash: worker held inside a catch-up batch');
is($node->safe_psql('postgres', "SELECT phase FROM pg_stat_background_ddl WHERE id = $job"),
	'catching up', 'mv_crash: phase is catching up');
my $pid = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job");
kill_and_recover($node, $pid);
# The crash restart ends every session, ours holding the gate too.
ok(wait_state($job, 'succeeded'), 'mv_crash: succeeded after the crash');
is($node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
	'2', 'mv_crash: resumed once');
check_exact('mv_crash', "SELECT id, v FROM $t");
check_no_leftovers($node, $job);
$gate = $node->background_psql('postgres');
$gate->set_query_timer_restart;

$gate->quit;
$node->stop;
done_testing();
