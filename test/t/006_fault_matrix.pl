# The fault matrix: a job is held at an exact point of its life (the test
# hold point), then its worker is killed with SIGKILL, or the server is shut
# down in immediate mode, or the job is cancelled.  Whatever the point:
#  - a crash ends in succeeded, with exactly the query's content, attempts
#    counting the real restarts only, and the chunks checkpointed before the
#    fault kept, not computed again;
#  - a cancel ends in cancelled, leaving nothing (no object, trigger, mark,
#    map or chunk), and costs no attempt;
#  - in no case is anything left behind;
#  - a job whose every attempt crashes the server stops after max_attempts;
#  - a job whose steps loop without doing work fails, saying so.
# Writers change the base tables during every job, so that the catch-up has
# work and exactness is tested too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('faults', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});

$node->safe_psql('postgres', q{
CREATE TABLE accounts (account int PRIMARY KEY, name text NOT NULL);
INSERT INTO accounts SELECT g, 'account ' || g FROM generate_series(0, 999) g;
CREATE TABLE events (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL);
INSERT INTO events SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 300000) g;
CREATE FUNCTION slow_volatile(int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN RETURN $1; END $$;
});

my %queries = (
	chunked => 'SELECT e.id, a.name, upper(e.payload) AS p FROM events e JOIN accounts a USING (account)',
	one_batch => 'SELECT e.id, slow_volatile(e.account) AS account FROM events e',
);

my $scenario = 0;
for my $point ('planning', 'installing capture', 'chunk 0', 'chunk 2', 'catching up',
	'cutting over', 'cleaning up')
{
	for my $fault ('kill', 'immediate', 'cancel')
	{
		$scenario++;
		my $kind = 'chunked';
		my $name = "mv_$scenario";
		my $label = "$point / $fault";
		my $query = $queries{$kind};
		my $hold = hold_at($node, $point);
		my $job = submit_job($node, "CREATE MATERIALIZED VIEW $name AS $query");
		ok(held_at_hold($node), "$label: job $job held at the point");
		my $already_succeeded = $point eq 'cleaning up';
		write_some($node, $scenario, 300000) unless $already_succeeded;
		my $before = checkpoints($node, $job);
		my $attempts_before = $node->safe_psql('postgres',
			"SELECT attempts FROM pg_stat_background_ddl WHERE id = $job");

		if ($fault eq 'cancel')
		{
			is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"),
				$already_succeeded ? 'f' : 't', "$label: cancel_ddl says whether it cancelled");
			release_hold($node, $hold);
		}
		else
		{
			my $progress = job_field($node, $job, 'progress');
			if ($fault eq 'kill')
			{
				my $pid = $node->safe_psql('postgres',
					"SELECT pid FROM pg_stat_background_ddl WHERE id = $job");
				ok($pid =~ /^\d+$/, "$label: the worker has a pid");
				kill_and_recover($node, $pid);
			}
			else
			{
				$node->stop('immediate');
				$node->start;
			}
			eval { $hold->quit };    # its session died with the crash
			$node->poll_query_until('postgres', 'SELECT true');    # recovery done
			cmp_ok(job_field($node, $job, 'progress'), '>=', $progress,
				"$label: the progress shown before the crash ($progress) does not go back");
			$node->safe_psql('postgres',
				'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
		}

		my $cancelled = $fault eq 'cancel' && !$already_succeeded;
		my $final = $cancelled ? 'cancelled' : 'succeeded';
		ok(wait_job_state($node, $job, $final), "$label: job ended $final");
		check_no_leftovers($node, $job);
		my $attempts = $node->safe_psql('postgres',
			"SELECT attempts FROM pg_stat_background_ddl WHERE id = $job");
		if ($cancelled)
		{
			is($node->safe_psql('postgres',
					"SELECT (SELECT count(*) FROM pg_class WHERE relname = '$name')
					      + (SELECT count(*) FROM background_ddl.chunk WHERE job_id = $job)"),
				'0', "$label: no object and no chunk left");
			is($attempts, $attempts_before, "$label: the cancel cost no attempt");
			next;
		}
		is(differences($node, $name, $query), '0', "$label: content equals the query");
		my $crash_restarts = ($fault ne 'cancel' && !$already_succeeded) ? 1 : 0;
		is($attempts, $attempts_before + $crash_restarts,
			"$label: attempts count the crash restarts only");
		ok(chunks_kept($before, checkpoints($node, $job), $fault eq 'cancel' ? undef : $node),
			"$label: the chunks checkpointed before the fault were kept, not recomputed")
		  if $before ne '';
		$node->safe_psql('postgres', "DROP MATERIALIZED VIEW $name");
	}
}

# A one-batch job, killed in its batch, restarts and is exact.
my $hold = hold_at($node, 'cutting over');
my $job = submit_job($node, "CREATE MATERIALIZED VIEW one_batch AS $queries{one_batch}");
ok(held_at_hold($node), 'one batch: held');
kill_and_recover($node, $node->safe_psql('postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job"));
eval { $hold->quit };
$node->poll_query_until('postgres', 'SELECT true');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
ok(wait_job_state($node, $job, 'succeeded'), 'one batch: succeeded after the kill');
is(differences($node, 'one_batch', $queries{one_batch}), '0', 'one batch: content equals the query');
is($node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
	'2', 'one batch: two attempts');

# A paused job stays paused across an immediate restart, then resumes.
$hold = hold_at($node, 'chunk 2');
$job = submit_job($node, "CREATE MATERIALIZED VIEW paused_mv AS $queries{chunked}");
ok(held_at_hold($node), 'pause: held');
is($node->safe_psql('postgres', "SELECT pause_ddl($job)"), 't', 'pause: paused');
release_hold($node, $hold);
my $before = checkpoints($node, $job);
$node->stop('immediate');
$node->start;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'background_ddl scheduler'"),
	'pause: after the restart, nothing runs for the paused job');
is($node->safe_psql('postgres', "SELECT state || ' ' || attempts FROM pg_stat_background_ddl WHERE id = $job"),
	'paused 1', 'pause: still paused after the restart, no attempt used');
is($node->safe_psql('postgres', "SELECT resume_ddl($job)"), 't', 'pause: resumed');
ok(wait_job_state($node, $job, 'succeeded'), 'pause: succeeded after resume');
ok(chunks_kept($before, checkpoints($node, $job)), 'pause: chunks before the pause were kept');
is(differences($node, 'paused_mv', $queries{chunked}), '0', 'pause: content equals the query');

# A rate limit set while a job plans paces its first chunks too (one block
# each at 200 rows/s: 50 rows a batch), rather than 64 blocks at once
# followed by a long pause.
$job = submit_paced($node, "CREATE MATERIALIZED VIEW paced_mv AS $queries{chunked}", 200);
ok($node->poll_query_until('postgres', "SELECT count(*) >= 3 FROM background_ddl.chunk WHERE job_id = $job"),
	'paced from its start: three chunks done');
is($node->safe_psql('postgres',
		"SELECT max(end_block - start_block) FROM background_ddl.chunk WHERE job_id = $job"),
	'1', 'paced from its start: each chunk is one block');
$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 'infinity')");
ok(wait_job_state($node, $job, 'succeeded'), 'paced from its start: job succeeded');
is(differences($node, 'paced_mv', $queries{chunked}), '0', 'paced from its start: content equals the query');

# What the view showed is not lost with a crash, though a view job's chunks
# commit without waiting for the flush (pipelined): the commit of a chunk
# that wrote the job row is flushed, as other sessions see it at once.
# Nothing else flushes it here: the WAL writer sleeps 10 s, one worker runs
# the job, and the job is paced to a chunk of one block every half second,
# so that each chunk writes the job row (at most every 250 ms).  The worker
# is held before its fourth chunk.  The server comes back with no room for
# background_ddl's processes (max_worker_processes = 1, taken by the
# logical replication launcher), so that no worker computes a lost chunk
# again before the progress is read.
$node->safe_psql('postgres', q{
ALTER SYSTEM SET wal_writer_delay = '10s';
ALTER SYSTEM SET background_ddl.max_workers_per_job = 1;
SELECT pg_reload_conf();
});
($job, $hold) = submit_held_at($node, 'planning', "CREATE MATERIALIZED VIEW shown_mv AS $queries{chunked}");
$node->safe_psql('postgres', qq{
SELECT alter_ddl($job, max_rate => 200);
ALTER SYSTEM SET background_ddl.test_hold_point = 'chunk 3';
SELECT pg_reload_conf();
});
$hold->query_safe('SELECT pg_advisory_unlock(4242)');
$hold->query_safe('SELECT pg_advisory_lock(4242)');
ok(held_at_hold($node), 'shown progress: held before its fourth chunk');
my $shown = job_field($node, $job, 'progress');
$node->stop('immediate');
eval { $hold->quit };
$node->append_conf('postgresql.conf', "max_worker_processes = 1\n");
$node->start;
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'background_ddl%'"),
	'0', 'shown progress: the server is back without background_ddl\'s processes');
cmp_ok(job_field($node, $job, 'progress'), '>=', $shown,
	"shown progress: the progress shown ($shown) is there after an immediate restart");
$node->adjust_conf('postgresql.conf', 'max_worker_processes', '8');
$node->safe_psql('postgres', qq{
ALTER SYSTEM RESET wal_writer_delay;
ALTER SYSTEM RESET background_ddl.max_workers_per_job;
ALTER SYSTEM RESET background_ddl.test_hold_point;
SELECT alter_ddl($job, max_rate => 'infinity');
});
$node->restart;
ok(wait_job_state($node, $job, 'succeeded'), 'shown progress: job succeeded');
is(differences($node, 'shown_mv', $queries{chunked}), '0', 'shown progress: content equals the query');

# Waiting holds no snapshot: a session in CALL await_ddl() advertises no xmin
# (it commits between its looks at the job).
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node, "CREATE MATERIALIZED VIEW waited_mv AS $queries{chunked}");
ok(held_at_hold($node), 'wait: held');
my $waiter = $node->background_psql('postgres');
$waiter->set_query_timer_restart;
$waiter->query_until(qr/waiting/, "\\echo waiting\nCALL await_ddl($job);\n");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'CALL await_ddl($job);' AND backend_xmin IS NULL AND state = 'active'"),
	'wait: the waiting session holds no xmin');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'wait: job succeeded');
$waiter->quit;

# A crash while a job is being cancelled.  The job is paced (max_rate) so
# that it is cancelled in the middle of its build, and its worker is held
# before it has removed what the job made: an index or a constraint job is
# then cancelling (its index or constraint needs its table locked, so its
# worker drops it); a view or a table rewrite is cancelled, its capture
# triggers left to its worker.  The worker is killed, or the server stopped
# in immediate mode.  After the restart a new worker finishes the removal:
# the job ends cancelled, costs no attempt, and leaves nothing.
# (JOB: the job's id)
my $capture_installed = "SELECT count(*) > 0 FROM pg_trigger WHERE tgname LIKE 'background\\_ddl\\_capture\\_JOB\\_%'";
my %cancelled = (
	index => {
		statement => 'CREATE INDEX cancelled_index ON events (payload)',
		paced_from => 'chunk 0',
		under_way => "SELECT count(*) = 1 FROM pg_index WHERE indexrelid = to_regclass('cancelled_index') AND NOT indisvalid",
		held_at => 'removing what the job created',
		left => 'cancelling false' },
	check => {
		statement => 'ALTER TABLE events ADD CONSTRAINT cancelled_check CHECK (account >= 0)',
		paced_from => 'chunk 0',
		under_way => "SELECT count(*) = 1 FROM pg_constraint WHERE conname = 'cancelled_check' AND NOT convalidated",
		held_at => 'removing what the job created',
		left => 'cancelling false' },
	view => {
		statement => "CREATE MATERIALIZED VIEW cancelled_view AS $queries{chunked}",
		paced_from => 'planning',
		under_way => $capture_installed,
		held_at => 'cleaning up',
		left => 'cancelled true' },
	rewrite => {
		statement => 'VACUUM FULL events',
		paced_from => 'planning',
		under_way => $capture_installed,
		held_at => 'cleaning up',
		left => 'cancelled true' });
my $events_storage = $node->safe_psql('postgres', "SELECT pg_relation_filenode('events')");
for my $case ([ 'index', 'kill' ], [ 'index', 'immediate' ], [ 'check', 'kill' ],
	[ 'view', 'kill' ], [ 'view', 'immediate' ], [ 'rewrite', 'kill' ])
{
	my ($kind, $fault) = @$case;
	my %c = %{ $cancelled{$kind} };
	my $label = "crash while cancelling: $kind held at '$c{held_at}', $fault";
	my ($job, $paced) = submit_held_at($node, $c{paced_from}, $c{statement});
	$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 2000)");
	release_hold($node, $paced);
	ok($node->poll_query_until('postgres', $c{under_way} =~ s/JOB/$job/gr), "$label: the build is under way");
	if ($kind eq 'view')
	{
		# The backlog of changed rows shows while the backfill goes on (rows
		# of the last pages, not backfilled yet: changes among the few rows
		# backfilled would look spread over the table, and leave the whole
		# query to the cut-over, which ends the backfill)
		$node->safe_psql('postgres', "UPDATE events SET payload = 'cancelled $job' WHERE id > 299900");
		ok( $node->poll_query_until('postgres',
				"SELECT dirty_rows > 0 FROM pg_stat_background_ddl WHERE id = $job"),
			"$label: the view shows the changed rows waiting");
	}
	my $attempts_before = job_field($node, $job, 'attempts');
	my $hold = hold_at($node, $c{held_at});
	is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', "$label: cancelled");
	ok(held_at_hold($node), "$label: the worker is held before its removal");
	is($node->safe_psql('postgres',
			"SELECT state || ' ' || cleanup_pending FROM background_ddl.job WHERE id = $job"),
		$c{left}, "$label: the removal is left to the worker");
	crash_held_worker($node, $job, $hold, $fault);
	ok(wait_job_state($node, $job, 'cancelled'), "$label: the job ended cancelled");
	check_no_leftovers($node, $job);
	is($node->safe_psql('postgres',
			"SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'cancelled\\_%')
			      + (SELECT count(*) FROM pg_constraint WHERE conname LIKE 'cancelled\\_%')
			      + (SELECT count(*) FROM pg_index WHERE indrelid = 'events'::regclass AND NOT indisvalid)"),
		'0', "$label: no object left");
	is($node->safe_psql('postgres', "SELECT pg_relation_filenode('events')"), $events_storage,
		"$label: the table's storage is the same");
	is(job_field($node, $job, 'attempts'), $attempts_before, "$label: the crash cost no attempt");
}

# The guard against a loop of steps that does no work: a worker whose
# cut-over does nothing and asks for another step (a bug, simulated here by
# background_ddl.test_fault) fails its job after a few such rounds, saying
# so, rather than spin for ever; nothing is left behind.  Every kind's steps
# must do nothing more once their work is done (a view's backfill took its
# first chunk again, and failed on its checkpoint): one job of each kind.
$node->safe_psql('postgres', q{
CREATE TABLE idle (id int PRIMARY KEY, k int NOT NULL, p text);
INSERT INTO idle SELECT g, g % 100, md5(g::text) FROM generate_series(1, 20000) g;
CREATE MATERIALIZED VIEW idle_refreshed AS SELECT k, count(*) FROM idle GROUP BY k;
ALTER SYSTEM SET background_ddl.test_fault = 'cut-over without work';
SELECT pg_reload_conf();
});
ok( $node->poll_query_until('postgres',
		"SELECT current_setting('background_ddl.test_fault') = 'cut-over without work'"),
	'idle loop: the fault is set');
my $idle_columns = "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
	FROM pg_attribute WHERE attrelid = 'idle'::regclass AND attnum > 0 AND NOT attisdropped";
my $columns_before = $node->safe_psql('postgres', $idle_columns);
for my $statement (
	'CREATE MATERIALIZED VIEW idle_view AS SELECT id, upper(p) AS p FROM idle',
	'CREATE MATERIALIZED VIEW idle_agg AS SELECT k, count(*) FROM idle GROUP BY k',
	'CREATE TABLE idle_copy AS SELECT id, k FROM idle',
	'REFRESH MATERIALIZED VIEW idle_refreshed',
	'CREATE INDEX idle_k ON idle (k)',
	'ALTER TABLE idle ADD CONSTRAINT idle_k_positive CHECK (k >= 0)',
	'ALTER TABLE idle ALTER COLUMN id TYPE bigint',
	'VACUUM FULL idle')
{
	$job = submit_job($node, $statement);
	ok(wait_job_state($node, $job, 'failed'), "idle loop: $statement: the job failed");
	like(job_field($node, $job, "error || ' / ' || error_detail"),
		qr/^background DDL job $job makes no progress \/ Its cut-over was tried \d+ times in a row without a batch of work in between; the last one asked for one more step\.$/,
		"idle loop: $statement: saying why");
	check_no_leftovers($node, $job);
}
is( $node->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM pg_class WHERE relname IN ('idle_view', 'idle_agg', 'idle_copy', 'idle_k'))
		       + (SELECT count(*) FROM pg_constraint WHERE conname = 'idle_k_positive')
		       + (SELECT count(*) FROM pg_index WHERE NOT indisvalid)}),
	'0', 'idle loop: no view, table, index or constraint left');
is($node->safe_psql('postgres', $idle_columns), $columns_before, 'idle loop: the table\'s columns unchanged');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.test_fault; SELECT pg_reload_conf();');

# The crash-loop cut-off: a job whose every attempt crashes the server (its
# query kills its own worker with SIGKILL, through COPY FROM PROGRAM, only
# in a background worker) is failed once it has been started
# background_ddl.max_attempts times, with an error that says so, and leaves
# nothing behind; the server goes on.
$node->safe_psql('postgres', q{
ALTER SYSTEM SET background_ddl.max_attempts = 2;
SELECT pg_reload_conf();
CREATE TABLE crash_sink (line text);
CREATE FUNCTION crash_in_worker(int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN
       IF (SELECT backend_type FROM pg_stat_activity WHERE pid = pg_backend_pid()) <> 'client backend' THEN
         EXECUTE format('COPY crash_sink FROM PROGRAM %L', 'kill -9 ' || pg_backend_pid());
       END IF;
       RETURN $1;
     END $$;
});
my $offset = -s $node->logfile;
# (the first attempt may end the submitting session, once the job is
# committed, before it has read the job's id: found by its target instead)
$node->psql('postgres',
	'SET background_ddl = on; CREATE MATERIALIZED VIEW crash_loop AS SELECT id, crash_in_worker(account) AS a FROM events');
ok( $node->poll_query_until('postgres',
		"SELECT state FROM pg_stat_background_ddl WHERE target = 'public.crash_loop'", 'failed'),
	'crash loop: the job failed');
$job = $node->safe_psql('postgres', "SELECT id FROM pg_stat_background_ddl WHERE target = 'public.crash_loop'");
is($node->safe_psql('postgres', "SELECT attempts || ' ' || error FROM pg_stat_background_ddl WHERE id = $job"),
	'2 the job was started 2 times without finishing', 'crash loop: after max_attempts attempts, saying so');
my $crashes = () = slurp_file($node->logfile, $offset) =~ /terminated by signal 9/g;
is($crashes, 2, 'crash loop: each attempt crashed the server');
is($node->safe_psql('postgres', "SELECT to_regclass('crash_loop') IS NULL"), 't', 'crash loop: no view left');
check_no_leftovers($node, $job);
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.max_attempts; SELECT pg_reload_conf();');

$node->stop;
done_testing();
