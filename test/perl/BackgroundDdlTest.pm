# Helpers shared by the TAP tests of background_ddl.
package BackgroundDdlTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

our @EXPORT = qw(bgddl_node workers_per_job_conf submit_job wait_job_state hold_at
  held_at_hold submit_held_at submit_paced release_hold start_pgbench stop_pgbench check_no_leftovers differences write_some checkpoints chunks_kept
  history_setup accounts_script check_exact_at_cutover create_slow_function
  kill_and_recover cut_over_after_writes job_field constraint_state table_schema
  check_rewritten_table kill_held_worker crash_held_worker start_table_writers mirrored_table_setup
  mirrored_writes_script restart_table_writers stop_table_writers events_write_script diag_jobs);

# The postgresql.conf line for BGDDL_WORKERS_PER_JOB, if set: scripts/test
# runs the crash and exactness tests with 1 worker per job, and with the
# default (2).
sub workers_per_job_conf
{
	my $per_job = $ENV{BGDDL_WORKERS_PER_JOB};
	return defined $per_job && $per_job ne ''
	  ? "background_ddl.max_workers_per_job = $per_job\n"
	  : '';
}

# A started node with the library preloaded, the extension created in
# database postgres, and the given extra postgresql.conf lines; more
# arguments go to init (allows_streaming => 1 for a primary).
sub bgddl_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'background_ddl'\n" . workers_per_job_conf() . ($conf // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION background_ddl');
	return $node;
}

# Kill a server process with SIGKILL and wait until the server has gone
# through its crash restart and takes connections again (a query right
# after the kill may still reach the server before it restarts).
sub kill_and_recover
{
	my ($node, $pid) = @_;
	my $offset = -s $node->logfile;

	kill 'KILL', $pid;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	# Not before: a psql that cannot connect exits before it reads its
	# query, and IPC::Run dies writing it (Broken pipe)
	$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
	$node->poll_query_until('postgres', 'SELECT true')
	  or die "the server did not accept connections after its crash restart";
}

# An immutable function $name($type) that returns its argument and, in a
# session with bgddl_test.slow on (a job's session, whose settings its
# workers take), sleeps 10 ms every 50 values: about 0.2 ms a row, so that
# jobs last seconds while the checks of their results do not.  In database
# $db, postgres by default.
sub create_slow_function
{
	my ($node, $name, $type, $db) = @_;
	$node->safe_psql($db // 'postgres', qq{
CREATE FUNCTION $name(x $type) RETURNS $type LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN
  IF x % 50 = 0 AND current_setting('bgddl_test.slow', true) = 'on' THEN
    PERFORM pg_sleep(0.01);
  END IF;
  RETURN x;
END \$\$});
	return;
}

# Submit a statement as a background job (optionally as another role, with
# more SQL before it) and return the job's id.
sub submit_job
{
	my ($node, $sql, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my @params = $opts{user} ? (extra_params => [ '-U', $opts{user} ]) : ();
	my $before = $opts{before} // '';
	return $node->safe_psql($db,
		"$before SET background_ddl = on; $sql; SELECT last_ddl_job();", @params);
}

# A column (or expression) of a job's row in pg_stat_background_ddl
sub job_field
{
	my ($node, $job, $field) = @_;
	return $node->safe_psql('postgres', "SELECT $field FROM pg_stat_background_ddl WHERE id = $job");
}

# For a failed assertion about jobs: their rows and what the server log
# says of them
sub diag_jobs
{
	my ($node, @jobs) = @_;
	my $ids = join(',', @jobs);
	diag($node->safe_psql('postgres',
		"SELECT id, state, phase, strategy, attempts, kind_state - 'driving' FROM background_ddl.job WHERE id IN ($ids) ORDER BY id"));
	my $pattern = join('|', map { "job $_\\b" } @jobs);
	diag(join('', grep { /$pattern/ } split(/^/, slurp_file($node->logfile))));
	return;
}

# Whether a constraint of that name is valid: 'true', 'false', or 'absent'
sub constraint_state
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT convalidated::text FROM pg_constraint WHERE conname = '$name'), 'absent')");
}

# Poll (with the usual bound) until a job is in the given state.
sub wait_job_state
{
	my ($node, $job, $state, $db) = @_;
	return $node->poll_query_until($db // 'postgres',
		"SELECT state FROM pg_stat_background_ddl WHERE id = $job", $state);
}

# Make workers that reach a test hold point ('planning', 'installing
# capture', 'chunk N', 'catching up', 'cutting over', 'cleaning up') wait
# there; returns the session that holds them.
sub hold_at
{
	my ($node, $point) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET background_ddl.test_hold_point = '$point'; SELECT pg_reload_conf();");
	my $session = $node->background_psql('postgres');
	$session->set_query_timer_restart;
	$session->query_safe('SELECT pg_advisory_lock(4242)');
	return $session;
}

# Poll (with the usual bound) until $count workers (default 1) wait at the hold point
sub held_at_hold
{
	my ($node, $count) = @_;
	$count //= 1;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = $count FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted");
}

# Submit a job (submit_job's arguments) whose worker is held at a hold
# point, and check that it waits there; returns the job and the session that
# holds it (for release_hold)
sub submit_held_at
{
	my ($node, $point, $statement, %opts) = @_;
	my $hold = hold_at($node, $point);
	my $job = submit_job($node, $statement, %opts);
	ok(held_at_hold($node), "job $job is held at '$point': $statement");
	return ($job, $hold);
}

# Submit a job (submit_job's arguments) paced by max_rate => $rate from its
# start: held while it plans, the limit set, then let go (a limit set after
# the submit may come after a fast job's end); returns the job
sub submit_paced
{
	my ($node, $statement, $rate, %opts) = @_;
	my ($job, $hold) = submit_held_at($node, 'planning', $statement, %opts);
	$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => $rate)");
	release_hold($node, $hold);
	return $job;
}

# Start pgbench in the background on database postgres of $node: 2
# clients for up to 15 minutes, running $script (its text) with more options
# @args (-U alice, say).  Returns its IPC::Run handle and a reference to its
# standard error, where a client that failed says so.
sub start_pgbench
{
	my ($node, $script, @args) = @_;
	my $file = PostgreSQL::Test::Utils::tempdir . '/writes.sql';
	my ($out, $err) = ('', '');

	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $script;
	close $fh;
	my $handle = IPC::Run::start(
		[
			$ENV{PGBENCH} // 'pgbench', '-n', '-c', '2', '-j', '2', '-T', '900', '-f', $file,
			'-h', $node->host, '-p', $node->port, @args, 'postgres'
		],
		'>', \$out, '2>', \$err);
	return ($handle, \$err);
}

# Stop a pgbench of start_pgbench and return what it wrote to standard
# error.  (SIGTERM, then its output read to the end: IPC::Run's kill_kill
# drops what was not read yet.)
sub stop_pgbench
{
	my ($handle, $err) = @_;

	$handle->signal('TERM');
	eval { $handle->finish };
	return $$err;
}

# Let held workers go on (and stop holding new ones)
sub release_hold
{
	my ($node, $session) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();");
	$session->query_safe('SELECT pg_advisory_unlock(4242)');
	$session->quit;
	return;
}

# After a job has ended: its clean-up finishes (polled, with a bound), and
# it leaves no capture trigger, dirty mark, recomputed row or tid map.
sub check_no_leftovers
{
	my ($node, $job, $db) = @_;
	$db //= 'postgres';
	ok( $node->poll_query_until($db,
			"SELECT NOT cleanup_pending FROM background_ddl.job WHERE id = $job"),
		"job $job: clean-up done");
	is( $node->safe_psql($db,
			"SELECT (SELECT count(*) FROM pg_trigger
			          WHERE tgname LIKE 'background\\_ddl\\_capture\\_${job}\\_%')
			      + (SELECT count(*) FROM background_ddl.dirty WHERE job_id = $job)
			      + (SELECT count(*) FROM background_ddl.recomputed WHERE job_id = $job)
			      + (SELECT count(*) FROM background_ddl.chunk WHERE job_id = $job AND tid_map IS NOT NULL)
			      + (SELECT count(*) FROM pg_class WHERE relname = 'partial_$job'
			                AND relnamespace = 'background_ddl'::regnamespace)"),
		'0', "job $job: no triggers, marks, recomputed rows, tid maps or staging relation left");
	return;
}

# What a job has checkpointed: each chunk's range and the time it was
# committed (a chunk computed again would have a new one), for chunks_kept
sub checkpoints
{
	my ($node, $job) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(format('%s-%s@%s', start_block, end_block, done_at), ' ' ORDER BY start_block), '')
		   FROM background_ddl.chunk WHERE job_id = $job");
}

# Whether every checkpoint of $before (space-separated "start-end@committed"
# tokens) is still in $after: kept, not computed again.  With several
# workers per job a later checkpoint can fill a gap below earlier ones, so
# $before need not be a prefix of $after.  After a crash, pass $node: each
# worker commits its chunks without waiting for the WAL flush (it flushes
# the previous one first), so each may lose its last chunk: as many
# checkpoints as workers per job may be missing, all among the newest
# (twice as many, as two workers' commits can finish in another order than
# they took their timestamps).
sub chunks_kept
{
	my ($before, $after, $node) = @_;
	# (a checkpoint's time has a space in it: split before each "start-end@")
	my $split = sub { $_[0] =~ /@/ ? split(/ (?=\d+-\d+@)/, $_[0]) : split(' ', $_[0]) };
	my %after = map { $_ => 1 } $split->($after);
	my @before = sort { ((split /@/, $a)[1] // $a) cmp ((split /@/, $b)[1] // $b) } $split->($before);
	my $may_lose = defined $node
	  ? $node->safe_psql('postgres', 'SHOW background_ddl.max_workers_per_job')
	  : 0;
	my @newest = $may_lose ? splice(@before, -(@before < 2 * $may_lose ? @before : 2 * $may_lose)) : ();
	my $lost_newest = grep { !$after{$_} } @newest;
	return !(grep { !$after{$_} } @before) && $lost_newest <= $may_lose;
}

# How many rows a relation and a query's result differ by (as multisets)
sub differences
{
	my ($node, $name, $query, $db) = @_;
	return $node->safe_psql($db // 'postgres',
		"SELECT (SELECT count(*) FROM (TABLE $name EXCEPT ALL $query) a)
		      + (SELECT count(*) FROM ($query EXCEPT ALL TABLE $name) b)");
}

# Some writes to a table events(id, account, payload) of ids up to $max_id:
# updates, deletes, and inserts of new ids above it.
sub write_some
{
	my ($node, $round, $max_id) = @_;
	$node->safe_psql('postgres', qq{
UPDATE events SET payload = 'changed $round' WHERE id % 997 = $round % 997;
DELETE FROM events WHERE id % 1999 = $round % 1999;
INSERT INTO events SELECT $max_id + g * 50 + $round, g % 1000, 'new' FROM generate_series(1, 20) g
  ON CONFLICT DO NOTHING;
});
	return;
}

# Tables accounts(account, name) and events(id, account, payload) of $rows
# rows, whose every row version is also appended to a history table (from a
# trigger, after the row lock, with the writing transaction's xid), and
# functions events_at(snapshot) and accounts_at(snapshot) that rebuild them
# as of a snapshot with pg_visible_in_snapshot(): a job's result can then be
# compared with its query at the job's cut-over snapshot, long after it.
sub history_setup
{
	my ($node, $rows) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE accounts (account int PRIMARY KEY, name text NOT NULL);
CREATE TABLE events (id bigserial PRIMARY KEY, account int NOT NULL, payload text NOT NULL)
  WITH (fillfactor = 80);
CREATE INDEX ON events (account);   -- updates of account are not HOT

-- History of every row version, in commit order per row.
CREATE TABLE history (seq bigserial, xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
                      at timestamptz NOT NULL DEFAULT clock_timestamp(),
                      tab text NOT NULL, id bigint NOT NULL, account int, payload text,
                      deleted boolean NOT NULL);
CREATE FUNCTION record_history() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  IF TG_TABLE_NAME = 'events' THEN
    IF TG_OP = 'DELETE' THEN
      INSERT INTO history (tab, id, deleted) VALUES ('events', OLD.id, true);
    ELSE
      INSERT INTO history (tab, id, account, payload, deleted)
        VALUES ('events', NEW.id, NEW.account, NEW.payload, false);
    END IF;
  ELSE
    IF TG_OP = 'DELETE' THEN
      INSERT INTO history (tab, id, deleted) VALUES ('accounts', OLD.account, true);
    ELSE
      INSERT INTO history (tab, id, payload, deleted) VALUES ('accounts', NEW.account, NEW.name, false);
    END IF;
  END IF;
  RETURN NULL;
END \$\$;
CREATE TRIGGER history AFTER INSERT OR UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION record_history();
CREATE TRIGGER history AFTER INSERT OR UPDATE OR DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION record_history();

INSERT INTO accounts SELECT g, 'account ' || g FROM generate_series(0, 999) g;
INSERT INTO events (account, payload) SELECT g % 1000, md5(g::text) FROM generate_series(1, $rows) g;

-- The base tables as of a snapshot.
CREATE FUNCTION events_at(snap pg_snapshot) RETURNS TABLE (id bigint, account int, payload text)
LANGUAGE sql STABLE AS \$\$
  SELECT id, account, payload FROM (
    SELECT DISTINCT ON (id) id, account, payload, deleted FROM history
     WHERE tab = 'events' AND pg_visible_in_snapshot(xid, snap)
     ORDER BY id, seq DESC) h
   WHERE NOT deleted \$\$;
CREATE FUNCTION accounts_at(snap pg_snapshot) RETURNS TABLE (account int, name text)
LANGUAGE sql STABLE AS \$\$
  SELECT id::int, payload FROM (
    SELECT DISTINCT ON (id) id, payload, deleted FROM history
     WHERE tab = 'accounts' AND pg_visible_in_snapshot(xid, snap)
     ORDER BY id, seq DESC) h
   WHERE NOT deleted \$\$;
});
	return;
}

# A pgbench script that renames one random account: $dir/accounts.sql
sub accounts_script
{
	my ($dir) = @_;
	open my $fh, '>', "$dir/accounts.sql" or die;
	print $fh <<'EOS';
\set acc random(0, 999)
UPDATE accounts SET name = 'renamed ' || md5(random()::text) WHERE account = :acc;
EOS
	close $fh;
	return "$dir/accounts.sql";
}

# A job succeeds, and its result equals its query at its cut-over snapshot
# (SNAP in $query_at), both ways; writes happened while it ran.
# The jobs run under writes (history_setup's log of them): each is let go
# past its cut-over, held there by the 'cutting over' hold point ($hold),
# only once more than $min_writes row versions were written since it
# started, so that every job surely ran under writes, however slow the
# writers are on a busy machine.  Polls with the usual bounds; stops holding
# jobs when done.  Returns whether every job got so far.
sub cut_over_after_writes
{
	my ($node, $hold, $min_writes, @jobs) = @_;
	my $ids = join(',', @jobs);
	while (1)
	{
		# a worker of one of the jobs held at the point, or all of them past it
		return 0
		  unless $node->poll_query_until('postgres',
			"SELECT count(*) > 0 OR (SELECT bool_and(state IN ('succeeded', 'failed', 'cancelled'))
			                            FROM pg_stat_background_ddl j WHERE j.id IN ($ids))
			   FROM pg_locks l JOIN pg_stat_background_ddl j ON j.pid = l.pid
			  WHERE l.locktype = 'advisory' AND l.objid = 4242 AND NOT l.granted AND j.id IN ($ids)");
		my $held = $node->safe_psql('postgres',
			"SELECT string_agg(j.id::text, ',') FROM pg_locks l JOIN pg_stat_background_ddl j ON j.pid = l.pid
			  WHERE l.locktype = 'advisory' AND l.objid = 4242 AND NOT l.granted AND j.id IN ($ids)");
		last if $held eq '';
		return 0
		  unless $node->poll_query_until('postgres',
			"SELECT bool_and((SELECT count(*) FROM history h WHERE h.at >= j.started_at) > $min_writes)
			   FROM pg_stat_background_ddl j WHERE j.id IN ($held)");
		$hold->query_safe('SELECT pg_advisory_unlock(4242)');
		$hold->query_safe('SELECT pg_advisory_lock(4242)');
	}
	release_hold($node, $hold);
	return 1;
}

sub check_exact_at_cutover
{
	my ($node, $name, $job, $query_at, $min_rows) = @_;
	ok( $node->poll_query_until('postgres',
			"SELECT state FROM pg_stat_background_ddl WHERE id = $job", 'succeeded'),
		"$name: job $job succeeded");
	my $snapshot = $node->safe_psql('postgres',
		"SELECT cutover_snapshot FROM pg_stat_background_ddl WHERE id = $job");
	ok($snapshot =~ /^\d+:\d+:/, "$name: cut-over snapshot recorded ($snapshot)");
	my $writes = $node->safe_psql('postgres',
		"SELECT count(*) FROM history h, pg_stat_background_ddl j
		  WHERE j.id = $job AND h.at BETWEEN j.started_at AND j.cutover_at");
	cmp_ok($writes, '>', 100, "$name: $writes row versions were written while the job ran");
	(my $query = $query_at) =~ s/SNAP/'$snapshot'::pg_snapshot/g;
	my $diff = $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM (TABLE $name EXCEPT ALL ($query)) a) || ' ' ||
		        (SELECT count(*) FROM (($query) EXCEPT ALL TABLE $name) b)");
	is($diff, '0 0', "$name: content equals the query at the cut-over snapshot (extra, missing)");
	my $rows = $node->safe_psql('postgres', "SELECT count(*) FROM $name");
	cmp_ok($rows, '>', $min_rows // 1000, "$name: $rows rows");
	return;
}


# A table's schema as pg_dump --schema-only writes it (without the random
# key of its \restrict lines)
sub table_schema
{
	my ($node, $db, $table) = @_;
	my ($out, $err) = run_command([ 'pg_dump', '--schema-only', '-t', $table, '-d', $node->connstr($db) ]);
	return $out =~ s/^\\(un)?restrict .*$//mgr;
}

# After a job that rewrote table t: it holds exactly the rows of table
# mirror, every index and the heap with its TOAST pass amcheck (installed),
# and nothing of the job is left (no hidden heap or index copy either)
sub check_rewritten_table
{
	my ($node, $job, $what) = @_;
	is(differences($node, 't', 'TABLE mirror'), '0', "$what: the table holds the mirror's rows");
	is( $node->safe_psql('postgres', q{
SELECT count(*) FROM pg_index i,
  LATERAL bt_index_parent_check(i.indexrelid, true)
 WHERE i.indrelid = 't'::regclass}),
		$node->safe_psql('postgres', q{SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass}),
		"$what: every index passes amcheck with every row");
	# (its rows against the relfrozenxid and relminmxid that came with the storage)
	is($node->safe_psql('postgres', q{SELECT count(*) FROM verify_heapam('t', check_toast => true)}),
		'0', "$what: the heap and its TOAST pass amcheck");
	check_no_leftovers($node, $job);
	is( $node->safe_psql('postgres', q{
SELECT count(*) FROM pg_class WHERE relnamespace = 'background_ddl'::regnamespace
   AND (relname LIKE 'rewrite\_%' OR relname LIKE 'index\_%')}),
		'0', "$what: no hidden heap or index copy left");
	return;
}

# Kill (-9) the worker of a held job, the hold point reset first, and wait
# for the crash restart (the hold's session died with it)
sub kill_held_worker
{
	my ($node, $job, $hold) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();");
	kill_and_recover($node, job_field($node, $job, 'pid'));
	eval { $hold->quit };
	return;
}

# The worker of a held job crashes: killed ($fault 'kill', as
# kill_held_worker) or the server stopped in immediate mode and started
# again ('immediate')
sub crash_held_worker
{
	my ($node, $job, $hold, $fault) = @_;
	if ($fault eq 'kill')
	{
		kill_held_worker($node, $job, $hold);
		return;
	}
	$node->safe_psql('postgres',
		"ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();");
	$node->stop('immediate');
	eval { $hold->quit };
	$node->start;
	return;
}


# The tables of $setup (SQL that makes a table t (id, k, a, c, ...) as
# role alice) in database postgres and in database blocking, alice's, where
# $alter (the blocking statement) then changes them, for their schema
# (table_schema).  In postgres, t gets 60000 rows, a tenth with a TOASTed c,
# and a plain copy, mirror, keyed by id; a third of each is deleted; the
# writers' new ids come from sequence ids (start_table_writers).
sub mirrored_table_setup
{
	my ($node, $setup, $alter) = @_;
	$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN CREATEDB;
GRANT CREATE ON SCHEMA public TO alice;
CREATE DATABASE blocking OWNER alice;
});
	$node->safe_psql('blocking', "$setup $alter");
	$node->safe_psql('postgres', qq{
$setup
INSERT INTO t SELECT g, g, md5(g::text), CASE WHEN g % 10 = 0 THEN repeat(md5(g::text), 200) END
  FROM generate_series(1, 60000) g;
CREATE TABLE mirror AS TABLE t;
ALTER TABLE mirror ADD PRIMARY KEY (id);
CREATE SEQUENCE ids START 100001;
DELETE FROM t WHERE id % 3 = 0;
DELETE FROM mirror WHERE id % 3 = 0;
});
	return;
}

# A pgbench script for mirrored_table_setup's tables (t with a column n int
# too): updates of k, a, c and n, deletes and inserts, each made to mirror in
# the same transaction.  The values of a are upper-case, of c lower-case.
sub mirrored_writes_script
{
	return <<'EOS';
\set id random(1, 60000)
\set v random(1, 1000000)
BEGIN;
UPDATE t SET a = upper(md5(:v::text)), k = -k WHERE id = :id;
UPDATE mirror SET a = upper(md5(:v::text)), k = -k WHERE id = :id;
UPDATE t SET c = repeat(md5(:v::text), 100), n = n + 1 WHERE id = :id + 1;
UPDATE mirror SET c = repeat(md5(:v::text), 100), n = n + 1 WHERE id = :id + 1;
DELETE FROM t WHERE id = :id + 2 AND :v % 4 = 0;
DELETE FROM mirror WHERE id = :id + 2 AND :v % 4 = 0;
SELECT nextval('ids') AS new_id \gset
INSERT INTO t VALUES (:new_id, :new_id, upper(md5(:v::text)), NULL, 0);
INSERT INTO mirror VALUES (:new_id, :new_id, upper(md5(:v::text)), NULL, 0);
COMMIT;
EOS
}

# The writers of start_table_writers: the node, the script, pgbench's more
# arguments, its handle and standard error
my %table_writers;

# start_pgbench of a script as alice (with more arguments @args: -R 100,
# say), that takes ids from sequence ids; returns once they have written
# (50 ids taken)
sub start_table_writers
{
	my ($node, $script, @args) = @_;
	my $before = $node->safe_psql('postgres', 'SELECT last_value FROM ids');
	%table_writers = (node => $node, script => $script, args => [@args]);
	@table_writers{qw(run err)} = start_pgbench($node, $script, '-U', 'alice', @args);
	ok($node->poll_query_until('postgres', "SELECT last_value > $before + 50 FROM ids"),
		'the writers write');
	return;
}

# After a crash, which ended their connections: start the writers again
sub restart_table_writers
{
	$table_writers{run}->finish;
	start_table_writers(@table_writers{qw(node script)}, @{ $table_writers{args} });
	return;
}

# Stop the writers, and check that none failed
sub stop_table_writers
{
	my ($what) = @_;
	my $said = stop_pgbench(@table_writers{qw(run err)});
	unlike($said, qr/ERROR|aborted/, "$what: no writer failed") or diag($said);
	return;
}

# A pgbench script for history_setup's events: updates, inserts and
# deletes on the first 2000 rows, so that the catch-up goes row by row
# (writes over most of the table would be left to the cut-over, which
# recomputes the whole view)
sub events_write_script
{
	return q{
\set id random(1, 2000)
\set acc random(0, 999)
UPDATE events SET payload = md5(random()::text) WHERE id = :id;
UPDATE events SET account = :acc WHERE id = :id + 1;
INSERT INTO events (account, payload) VALUES (:acc, 'inserted');
DELETE FROM events WHERE id = :id + 2;
};
}

1;
