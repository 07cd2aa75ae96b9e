# The other kinds of job under faults and concurrency:
#  - CREATE TABLE AS and REFRESH MATERIALIZED VIEW, with writers on the base
#    table, survive a killed worker and an immediate shutdown with exactly
#    the query's content (the chunks checkpointed before a crash kept), and
#    a cancel in the backfill or at the cut-over leaves nothing (for
#    REFRESH: the old content, untouched);
#  - readers of a view being refreshed read the old content, and are not
#    queued behind the swap while it waits for its lock;
#  - CREATE UNIQUE INDEX, interrupted in the middle of its build (killed, crashed,
#    cancelled) leaves no invalid index, and a rebuilt index is complete
#    under concurrent writes; CREATE INDEX IF NOT EXISTS rebuilds the invalid
#    index an interrupted CREATE INDEX CONCURRENTLY left, if it has the same
#    definition; two index jobs on one table do not deadlock;
#    an index job whose table is dropped ends cancelled.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('kinds', q{
background_ddl.batch_time = '20ms'
background_ddl.lock_timeout = '50ms'
restart_after_crash = on
});

$node->safe_psql('postgres', q{
CREATE EXTENSION amcheck;
CREATE TABLE events (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL);
INSERT INTO events SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 200000) g;
-- Holds an index build at the row with id 1000 while advisory lock 77 is held.
CREATE FUNCTION gate(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 1000 THEN PERFORM pg_advisory_xact_lock_shared(77); END IF; RETURN x; END $$;
-- A value stored out of line (TOAST) for one row in a hundred.
CREATE FUNCTION big(x int) RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT CASE WHEN x % 100 = 0 THEN (SELECT string_agg(md5(x::text || g), '') FROM generate_series(1, 200) g) END $$;
CREATE MATERIALIZED VIEW mv AS SELECT id, account, upper(payload) AS p, big(id) AS b FROM events WHERE account < 500;
CREATE UNIQUE INDEX mv_id ON mv (id);
CREATE INDEX mv_account ON mv (account);
});

my $query = 'SELECT id, account, upper(payload) AS p, big(id) AS b FROM events WHERE account < 500';

sub held
{
	my ($objid) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) >= 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = $objid AND NOT granted");
}

sub crash
{
	my ($fault, $job, $hold) = @_;
	if ($fault eq 'kill')
	{
		kill_and_recover($node, $node->safe_psql('postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job"));
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}
	eval { $hold->quit } if $hold;    # its session died with the crash
	$node->poll_query_until('postgres', 'SELECT true');
	return;
}

sub hidden_left
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE relnamespace = 'background_ddl'::regnamespace
		   AND (relname LIKE 'ctas\\_%' OR relname LIKE 'refresh\\_%')");
}

my $round = 0;

# CREATE TABLE AS, under writes: a crash mid-backfill, and at the cut-over;
# a cancel at both.  Crash recovery empties an UNLOGGED table: its build starts over.
for my $case ([ 'chunk 2', 'kill', '' ], [ 'cutting over', 'immediate', '' ],
	[ 'chunk 2', 'immediate', 'UNLOGGED' ], [ 'chunk 2', 'cancel', '' ], [ 'cutting over', 'cancel', '' ])
{
	my ($point, $fault, $persistence) = @$case;
	my $label = "CREATE $persistence TABLE AS, $point / $fault";
	my $name = 'ctas_' . ++$round;
	my $hold = hold_at($node, $point);
	my $job = submit_job($node, "CREATE $persistence TABLE $name AS $query");
	ok(held(4242), "$label: held");
	write_some($node, $round, 200000);
	if ($fault eq 'cancel')
	{
		is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', "$label: cancelled");
		release_hold($node, $hold);
		ok(wait_job_state($node, $job, 'cancelled'), "$label: job ended cancelled");
		is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = '$name'"),
			'0', "$label: no table left");
	}
	else
	{
		my $before = checkpoints($node, $job);
		crash($fault, $job, $hold);
		$node->safe_psql('postgres',
			'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
		ok(wait_job_state($node, $job, 'succeeded'), "$label: job succeeded");
		is($node->safe_psql('postgres', "SELECT relkind FROM pg_class WHERE relname = '$name'"),
			'r', "$label: it is a table");
		is(differences($node, $name, $query), '0', "$label: content equals the query");
		ok(chunks_kept($before, checkpoints($node, $job), $node),
			"$label: the chunks checkpointed before the crash were kept, not recomputed ($before)")
		  if $point eq 'chunk 2' && $persistence eq '';
		like(slurp_file($node->logfile),
			qr/background DDL job $job: crash recovery emptied the unlogged "ctas_\d+", restarting the backfill/,
			"$label: the emptied table was noticed")
		  if $persistence eq 'UNLOGGED';
	}
	check_no_leftovers($node, $job);
	is(hidden_left(), '0', "$label: no hidden table left");
}

# REFRESH, under writes: crashes, and a cancel that leaves the old content.
for my $case ([ 'chunk 2', 'kill' ], [ 'cutting over', 'immediate' ], [ 'catching up', 'cancel' ],
	[ 'cutting over', 'cancel' ])
{
	my ($point, $fault) = @$case;
	my $label = "REFRESH, $point / $fault";
	$round++;
	my $old = $node->safe_psql('postgres', 'SELECT md5(string_agg(mv::text, \',\' ORDER BY id)) FROM mv');
	my $hold = hold_at($node, $point);
	my $job = submit_job($node, 'REFRESH MATERIALIZED VIEW mv');
	ok(held(4242), "$label: held");
	write_some($node, $round, 200000);
	is($node->safe_psql('postgres', 'SELECT md5(string_agg(mv::text, \',\' ORDER BY id)) FROM mv'),
		$old, "$label: readers see the old content meanwhile");
	if ($fault eq 'cancel')
	{
		is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', "$label: cancelled");
		release_hold($node, $hold);
		ok(wait_job_state($node, $job, 'cancelled'), "$label: job ended cancelled");
		is($node->safe_psql('postgres', 'SELECT md5(string_agg(mv::text, \',\' ORDER BY id)) FROM mv'),
			$old, "$label: the old content is untouched");
	}
	else
	{
		my $before = checkpoints($node, $job);
		crash($fault, $job, $hold);
		$node->safe_psql('postgres',
			'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
		ok(wait_job_state($node, $job, 'succeeded'), "$label: job succeeded");
		is(differences($node, 'mv', $query), '0', "$label: content equals the query");
		ok(chunks_kept($before, checkpoints($node, $job), $node),
			"$label: the chunks checkpointed before the crash were kept, not recomputed ($before)")
		  if $point eq 'chunk 2';
	}
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT bt_index_parent_check(indexrelid, true) FROM pg_index
			                        WHERE indrelid = 'mv'::regclass AND indisvalid) c"),
		'2', "$label: both indexes valid and complete");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM verify_heapam('mv', check_toast => true)"),
		'0', "$label: heap and TOAST verify (no tuple older than relfrozenxid)");
	is($node->safe_psql('postgres',
			"SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class WHERE relname = 'mv'"),
		't', "$label: the view's TOAST table holds its long values");
	check_no_leftovers($node, $job);
	is(hidden_left(), '0', "$label: no hidden heap left");
}

# The swap waits for a reader of the old content with the short lock
# timeout, retried: meanwhile other readers are not queued behind it.
{
	my $label = 'REFRESH swap';
	my $hold = hold_at($node, 'cutting over');
	my $job = submit_job($node, 'REFRESH MATERIALIZED VIEW mv');
	ok(held(4242), "$label: held before the cut-over");
	my $reader = $node->background_psql('postgres');
	$reader->set_query_timer_restart;
	$reader->query_safe('BEGIN; SELECT count(*) FROM mv;');
	release_hold($node, $hold);
	ok( $node->poll_query_until('postgres',
			"SELECT phase FROM pg_stat_background_ddl WHERE id = $job", 'cutting over'),
		"$label: cutting over while a reader holds the view");
	my $served = 0;
	for (1 .. 5)
	{
		my ($ret) = $node->psql('postgres', "SET lock_timeout = '2s'; SELECT count(*) FROM mv");
		$served++ if $ret == 0;
	}
	is($served, 5, "$label: other readers are served while the swap waits");
	is($node->safe_psql('postgres', "SELECT state FROM pg_stat_background_ddl WHERE id = $job"),
		'running', "$label: the job waits for the reader");
	$reader->query_safe('COMMIT');
	$reader->quit;
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded once the reader is done");
	is(differences($node, 'mv', $query), '0', "$label: content equals the query");
}

# CREATE UNIQUE INDEX (built by CREATE INDEX CONCURRENTLY: a unique index
# is not built chunk by chunk, 029_chunked_index.pl tests that build):
# interrupted inside the build, while the invalid index exists.  Rows are
# written during every build.
sub invalid_indexes
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_index WHERE indrelid = 'events'::regclass AND NOT indisvalid");
}

for my $fault ('kill', 'immediate', 'cancel')
{
	my $label = "CREATE INDEX, in the build / $fault";
	my $name = "events_gate_$fault";
	my $gate = $node->background_psql('postgres');
	$gate->set_query_timer_restart;
	$gate->query_safe('SELECT pg_advisory_lock(77)');
	my $job = submit_job($node, "CREATE UNIQUE INDEX $name ON events (gate(id))");
	ok(held(77), "$label: the build is held");
	is(invalid_indexes(), '1', "$label: the invalid index exists meanwhile");
	like($node->safe_psql('postgres', "SELECT phase FROM pg_stat_background_ddl WHERE id = $job"),
		qr/^building index/, "$label: the view shows the build's phase");
	is( $node->safe_psql('postgres', qq{
			SELECT v.phase = p.phase AND v.progress BETWEEN 0 AND 60
			  FROM pg_stat_background_ddl v JOIN pg_stat_progress_create_index p ON p.pid = v.pid
			 WHERE v.id = $job}),
		't', "$label: as pg_stat_progress_create_index names it, at most 60% done in the first scan");
	write_some($node, ++$round, 200000);
	if ($fault eq 'cancel')
	{
		is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', "$label: cancel_ddl");
		ok(wait_job_state($node, $job, 'cancelled'), "$label: job ended cancelled");
		$gate->quit;
		is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = '$name'"),
			'0', "$label: no index left");
	}
	else
	{
		# Either way the server restarts, and the session holding the gate
		# ends with it.  The progress shown before (the build's, which the
		# scheduler recorded) does not go back, while the build starts over.
		ok( $node->poll_query_until('postgres',
				"SELECT progress > 0 FROM pg_stat_background_ddl WHERE id = $job"),
			"$label: the view shows the build's progress");
		my $progress = job_field($node, $job, 'progress');
		crash($fault, $job, $gate);
		cmp_ok(job_field($node, $job, 'progress'), '>=', $progress,
			"$label: the progress shown before the crash ($progress) does not go back");
		ok(wait_job_state($node, $job, 'succeeded'), "$label: job succeeded");
		like(slurp_file($node->logfile),
			qr/background DDL job $job: dropped the invalid index "$name" left by an interrupted build/,
			"$label: the invalid index was dropped, and the build restarted");
		is($node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
			'2', "$label: two attempts");
		is($node->safe_psql('postgres',
				"SELECT count(*) FROM (SELECT bt_index_parent_check('$name'::regclass, true)) c"),
			'1', "$label: the index is consistent and holds every row");
		is($node->safe_psql('postgres',
				"SET enable_seqscan = off; SET enable_bitmapscan = off;
				 SELECT count(*) FROM events WHERE gate(id) > 0"),
			$node->safe_psql('postgres', 'SELECT count(*) FROM events'),
			"$label: an index scan finds every row");
		$node->safe_psql('postgres', "DROP INDEX $name");
	}
	is(invalid_indexes(), '0', "$label: no invalid index left");
}

# Paused in the middle: REFRESH keeps its checkpoints, CREATE UNIQUE INDEX
# drops its invalid index when it resumes and builds again.
{
	my $label = 'REFRESH paused';
	my $hold = hold_at($node, 'chunk 2');
	my $job = submit_job($node, 'REFRESH MATERIALIZED VIEW mv');
	ok(held(4242), "$label: held");
	is($node->safe_psql('postgres', "SELECT pause_ddl($job)"), 't', "$label: pause_ddl");
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'paused'), "$label: paused");
	write_some($node, ++$round, 200000);
	is($node->safe_psql('postgres', "SELECT resume_ddl($job)"), 't', "$label: resume_ddl");
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	is(differences($node, 'mv', $query), '0', "$label: content equals the query");
	check_no_leftovers($node, $job);
}
{
	my $label = 'CREATE INDEX paused';
	my $gate = $node->background_psql('postgres');
	$gate->set_query_timer_restart;
	$gate->query_safe('SELECT pg_advisory_lock(77)');
	my $job = submit_job($node, 'CREATE UNIQUE INDEX events_paused ON events (gate(id))');
	ok(held(77), "$label: the build is held");
	is($node->safe_psql('postgres', "SELECT pause_ddl($job)"), 't', "$label: pause_ddl");
	ok(wait_job_state($node, $job, 'paused'), "$label: paused");
	$gate->quit;
	is($node->safe_psql('postgres', "SELECT resume_ddl($job)"), 't', "$label: resume_ddl");
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	is(invalid_indexes(), '0', "$label: no invalid index left");
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'events_paused'"),
		'1', "$label: one index of that name");
}

# What an interrupted CREATE INDEX CONCURRENTLY leaves (run with the setting
# off, cancelled in its build): an invalid index.  CREATE INDEX IF NOT EXISTS
# of another definition skips it, as PostgreSQL does; of the same definition
# it becomes a job that rebuilds it (here killed in the middle of that
# build, under writes), and the index is valid and complete.
{
	my $label = 'CREATE INDEX IF NOT EXISTS, over an invalid index';
	my $gate = $node->background_psql('postgres');
	$gate->set_query_timer_restart;
	$gate->query_safe('SELECT pg_advisory_lock(77)');
	my $builder = $node->background_psql('postgres', on_error_stop => 0);
	$builder->query_until(qr/building/, q{
		\echo building
		CREATE INDEX CONCURRENTLY events_left ON events (gate(id));
	});
	ok(held(77), "$label: a blocking CREATE INDEX CONCURRENTLY is held in its build");
	$node->safe_psql('postgres', q{
		SELECT pg_cancel_backend(pid) FROM pg_stat_progress_create_index
		 WHERE relid = 'events'::regclass});
	ok($node->poll_query_until('postgres',
			"SELECT NOT indisvalid FROM pg_index WHERE indexrelid = 'events_left'::regclass
			   AND NOT EXISTS (SELECT FROM pg_stat_progress_create_index)"),
		"$label: it was cancelled, and left its index invalid");
	$builder->quit;
	my $left_oid = $node->safe_psql('postgres', "SELECT 'events_left'::regclass::oid");
	my $jobs = $node->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_background_ddl');

	my ($ret, $out, $err) = $node->psql('postgres',
		'SET background_ddl = on; CREATE INDEX IF NOT EXISTS events_left ON events (gate(account))');
	like($err, qr/relation "events_left" already exists, skipping/,
		"$label: another definition skips the name, as PostgreSQL does");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_background_ddl'), $jobs,
		"$label: and submits no job");

	# The definitions are compared by a dry run, which needs the table's
	# SHARE UPDATE EXCLUSIVE lock: if another session holds it for longer
	# than lock_timeout, the statement says so and skips the name as
	# PostgreSQL does (after waiting for that lock, as PostgreSQL does).
	my $locker = $node->background_psql('postgres');
	$locker->query_safe('BEGIN; LOCK events IN SHARE UPDATE EXCLUSIVE MODE');
	my $skipper = $node->background_psql('postgres', on_error_stop => 0);
	$skipper->query_until(qr/submitting/, q{
		\echo submitting
		SET background_ddl = on;
		CREATE INDEX CONCURRENTLY IF NOT EXISTS events_left ON events (gate(id));
	});
	ok($node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_locks WHERE relation = 'events'::regclass AND NOT granted"),
		"$label: with the table locked elsewhere, the statement waits for it");
	$locker->query_safe('COMMIT');
	$locker->quit;
	$skipper->query("SELECT 1");
	like($skipper->{stderr}, qr/invalid index "events_left" is not rebuilt in the background.*relation "events_left" already exists, skipping/s,
		"$label: then skips the name, saying why it was not rebuilt");
	$skipper->quit;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_background_ddl'), $jobs,
		"$label: no job");

	my $job = submit_job($node,
		'CREATE INDEX CONCURRENTLY IF NOT EXISTS events_left ON events (gate(id))');
	ok($job > 0, "$label: the same definition is a job");
	is(job_field($node, $job, 'strategy'), 'rebuild of an invalid index, chunk by chunk',
		"$label: the job says what it does");
	ok(held(77), "$label: its rebuild is held in its build");
	isnt($node->safe_psql('postgres', "SELECT 'events_left'::regclass::oid"), $left_oid,
		"$label: the invalid index was dropped and its name taken by the rebuild");
	write_some($node, ++$round, 200000);
	crash('kill', $job, $gate);
	ok(wait_job_state($node, $job, 'succeeded'), "$label: succeeded");
	is($node->safe_psql('postgres',
			"SELECT indisvalid FROM pg_index WHERE indexrelid = 'events_left'::regclass"),
		't', "$label: the index is valid");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT bt_index_parent_check('events_left'::regclass, true)) c"),
		'1', "$label: consistent, and holds every row");
	is(invalid_indexes(), '0', "$label: no invalid index left");
	$node->safe_psql('postgres', 'DROP INDEX events_left');
}

# REINDEX TABLE as a job, one index at a time: killed in the middle of its
# third index's rebuild, under writes, it resumes there (the two indexes
# rebuilt before are not rebuilt again; the new index the interrupted
# rebuild left is dropped), and every index ends valid and complete.
# Cancelled in the middle of a rebuild, it drops what that rebuild left and
# the index stays as it was.
{
	my $label = 'REINDEX TABLE';
	$node->safe_psql('postgres', q{
		CREATE TABLE rx (id int PRIMARY KEY, account int NOT NULL);
		INSERT INTO rx SELECT g, g % 100 FROM generate_series(1, 100000) g;
		CREATE INDEX rx_account ON rx (account);
		CREATE INDEX rx_gate ON rx (gate(id));
	});
	my $oids = sub {
		return $node->safe_psql('postgres',
			"SELECT string_agg(relname || '=' || oid, ' ' ORDER BY relname) FROM pg_class
			  WHERE relname IN ('rx_pkey', 'rx_account', 'rx_gate')");
	};
	my $before = $oids->();
	my $gate = $node->background_psql('postgres');
	$gate->set_query_timer_restart;
	$gate->query_safe('SELECT pg_advisory_lock(77)');
	my $job = submit_job($node, 'REINDEX TABLE rx');
	ok(held(77), "$label: the rebuild of the third index is held");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_class WHERE relname LIKE 'rx\\_gate\\_ccnew%'"),
		'1', "$label: its new index exists meanwhile");
	like(job_field($node, $job, 'phase'), qr/\(index rx_gate, 3 of 3\)$/,
		"$label: the view names the index being rebuilt");
	my $held_at = $oids->();
	isnt($held_at, $before, "$label: the first two indexes were rebuilt ($held_at)");
	$node->safe_psql('postgres',
		'INSERT INTO rx SELECT g, g % 100 FROM generate_series(100001, 110000) g;
		 UPDATE rx SET account = account + 1 WHERE id % 7 = 0; DELETE FROM rx WHERE id % 11 = 0');
	crash('kill', $job, $gate);
	ok(wait_job_state($node, $job, 'succeeded'), "$label: killed, it succeeded");
	like(slurp_file($node->logfile),
		qr/background DDL job $job: dropped the invalid index "rx_gate_ccnew" left by an interrupted rebuild of "rx_gate"/,
		"$label: the new index of the interrupted rebuild was dropped");
	my ($account) = $held_at =~ /rx_account=(\d+)/;
	my ($pkey) = $held_at =~ /rx_pkey=(\d+)/;
	my ($gate_oid) = $before =~ /rx_gate=(\d+)/;
	like($oids->(), qr/rx_account=$account rx_gate=\d+ rx_pkey=$pkey$/,
		"$label: the indexes rebuilt before the crash were not rebuilt again");
	unlike($oids->(), qr/rx_gate=$gate_oid /, "$label: the third was rebuilt");
	is( $node->safe_psql('postgres', q{
			SELECT count(*) FROM (SELECT bt_index_parent_check(c.oid::regclass, true)
			  FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
			 WHERE i.indrelid = 'rx'::regclass AND i.indisvalid) c}),
		'3', "$label: three valid indexes, each consistent and holding every row");
	is( $node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname ~ '^rx_.*_cc(new|old)'"),
		'0', "$label: nothing left of the rebuilds");

	# Killed after the swap (the new index valid under the name, the old
	# one invalid, named _ccold), while the rebuild waits for a reader of
	# the table before it drops the old one: the old one is dropped, and
	# the index is done.
	my $reader = $node->background_psql('postgres');
	$reader->query_safe('BEGIN; SELECT count(*) FROM rx WHERE id = 1');
	$job = submit_job($node, 'REINDEX INDEX rx_account');
	ok( $node->poll_query_until('postgres', qq{
			SELECT phase LIKE 'waiting for readers before marking dead%'
			  FROM pg_stat_background_ddl WHERE id = $job}),
		"$label, after the swap: the rebuild waits for a reader before it drops the old index");
	my $swapped = $node->safe_psql('postgres', "SELECT 'rx_account'::regclass::oid");
	is( $node->safe_psql('postgres',
			"SELECT indisvalid FROM pg_index WHERE indexrelid = 'rx_account_ccold'::regclass"),
		'f', "$label, after the swap: the old index is invalid, named _ccold");
	crash('kill', $job, $reader);
	ok(wait_job_state($node, $job, 'succeeded'), "$label, after the swap: killed, it succeeded");
	like(slurp_file($node->logfile),
		qr/background DDL job $job: dropped index "rx_account_ccold", which an interrupted rebuild had replaced/,
		"$label, after the swap: the old index was dropped");
	is( $node->safe_psql('postgres',
			"SELECT indexrelid = $swapped AND indisvalid FROM pg_index WHERE indexrelid = 'rx_account'::regclass"),
		't', "$label, after the swap: the new index is the one, valid, not rebuilt again");
	is( $node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname ~ '^rx_.*_cc(new|old)'"),
		'0', "$label, after the swap: nothing left of the rebuild");

	$before = $oids->();
	$gate = $node->background_psql('postgres');
	$gate->set_query_timer_restart;
	$gate->query_safe('SELECT pg_advisory_lock(77)');
	$job = submit_job($node, 'REINDEX INDEX rx_gate');
	ok(held(77), "$label, cancelled: the rebuild is held");
	is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', "$label, cancelled: cancel_ddl");
	$gate->quit;
	ok(wait_job_state($node, $job, 'cancelled'), "$label, cancelled: it ended cancelled");
	is($oids->(), $before, "$label, cancelled: the index is the one it was");
	is( $node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname ~ '^rx_.*_cc(new|old)'"),
		'0', "$label, cancelled: nothing left of the rebuild");

	# Paused in the middle of a rebuild: resumed, it drops what the rebuild
	# left and rebuilds the index again.
	$gate = $node->background_psql('postgres');
	$gate->set_query_timer_restart;
	$gate->query_safe('SELECT pg_advisory_lock(77)');
	$job = submit_job($node, 'REINDEX INDEX rx_gate');
	ok(held(77), "$label, paused: the rebuild is held");
	is($node->safe_psql('postgres', "SELECT pause_ddl($job)"), 't', "$label, paused: pause_ddl");
	ok(wait_job_state($node, $job, 'paused'), "$label, paused: paused");
	$gate->quit;
	is($node->safe_psql('postgres', "SELECT resume_ddl($job)"), 't', "$label, paused: resume_ddl");
	ok(wait_job_state($node, $job, 'succeeded'), "$label, paused: resumed, it succeeded");
	my ($paused_oid) = $before =~ /rx_gate=(\d+)/;
	unlike($oids->(), qr/rx_gate=$paused_oid /, "$label, paused: the index was rebuilt");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_class WHERE relname ~ '^rx_.*_cc(new|old)'
			 UNION ALL SELECT count(*) FROM (SELECT bt_index_parent_check('rx_gate'::regclass, true)) c"),
		"0\n1", "$label, paused: nothing left of the interrupted rebuild; the index consistent");
	$node->safe_psql('postgres', 'DROP TABLE rx');
}

# Two index jobs on one table: the second is submitted while the first
# builds, and waits for it; neither deadlocks.
{
	my $label = 'two index jobs';
	my $gate = $node->background_psql('postgres');
	$gate->set_query_timer_restart;
	$gate->query_safe('SELECT pg_advisory_lock(77)');
	my $first = submit_job($node, 'CREATE INDEX events_first ON events (gate(id))');
	ok(held(77), "$label: the first build is held");
	my $second = submit_job($node, 'CREATE INDEX events_second ON events (account)');
	ok($second > $first, "$label: the second is submitted while the first builds");
	$gate->quit;
	ok(wait_job_state($node, $first, 'succeeded'), "$label: the first succeeded");
	ok(wait_job_state($node, $second, 'succeeded'), "$label: the second succeeded");
	is(invalid_indexes(), '0', "$label: no invalid index");
}

# The table of an index job is dropped before the build: the job ends
# cancelled, saying why, and leaves nothing.
{
	my $label = 'CREATE INDEX, table dropped';
	$node->safe_psql('postgres',
		'CREATE TABLE doomed (a int); INSERT INTO doomed SELECT generate_series(1, 1000)');
	my $hold = hold_at($node, 'chunk 0');
	my $job = submit_job($node, 'CREATE INDEX doomed_a ON doomed (a)');
	ok(held(4242), "$label: held before the build");
	$node->safe_psql('postgres', 'DROP TABLE doomed');
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'cancelled'), "$label: cancelled");
	is($node->safe_psql('postgres', "SELECT error FROM pg_stat_background_ddl WHERE id = $job"),
		'the table was dropped', "$label: the error says why");
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'doomed_a'"),
		'0', "$label: nothing left");
}

$node->stop;
done_testing();
