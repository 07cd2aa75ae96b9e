# pg_bgddl, the command-line client: every command and exit code, watch
# without and with a terminal, wait woken by NOTIFY, the notifications
# themselves, the waiting_on column of pg_stat_background_ddl, and live
# throttling with alter_ddl.  What a role can make the server send (names,
# errors, messages, NOTIFY payloads) is printed escaped, never raw; any role
# can use the client, and look-alike objects in its search_path do not
# fool it; -v prints the messages of ended jobs; a migration file is one
# chain of jobs, in order; -w and -W ask for a password as PostgreSQL's
# client programs do; show prints a job's every column, complete publishes
# a job whose cut-over is manual.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;
use IPC::Run;
use Time::HiRes qw(time);

my $node = bgddl_node('client', "background_ddl.max_workers = 1\nbackground_ddl.batch_time = '20ms'\n");
$node->safe_psql('postgres', q{
CREATE TABLE events AS SELECT g AS id, g % 100 AS account, md5(g::text) AS payload
  FROM generate_series(1, 200000) g;
CREATE DATABASE without_extension;
CREATE ROLE plain LOGIN;
CREATE SCHEMA lookalike;
CREATE VIEW lookalike.pg_stat_background_ddl AS SELECT * FROM public.pg_stat_background_ddl WHERE false;
CREATE FUNCTION lookalike.last_ddl_job() RETURNS bigint LANGUAGE sql AS 'SELECT NULL::bigint';
GRANT USAGE ON SCHEMA lookalike TO plain;
GRANT SELECT ON lookalike.pg_stat_background_ddl TO plain;
ALTER ROLE plain SET search_path = lookalike, public;
});

# Run pg_bgddl against the node; returns (exit code, stdout, stderr)
sub client
{
	my @args = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_bgddl', '-h', $node->host, '-p', $node->port, '-d', 'postgres', @args ],
		'>', \$out, '2>', \$err, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return ($? >> 8, $out, $err);
}

sub client_code { my ($code) = client(@_); return $code; }

# Start pg_bgddl in the background, its stdout and stderr into the given scalars
sub start_client
{
	my ($out, $err, @args) = @_;
	return IPC::Run::start([ 'pg_bgddl', '-h', $node->host, '-p', $node->port, '-d', 'postgres', @args ],
		'>', $out, '2>', $err, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
}

# Poll until a pg_bgddl waiting for a job has looked at the view and sleeps
sub client_sleeping
{
	my ($label) = @_;
	return ok($node->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity
			  WHERE state = 'idle'
			    AND query LIKE '%pg_stat_background_ddl WHERE id = \$1::bigint'"),
		$label);
}

# Submit a job held at a test hold point; returns (hold session, job id)
sub submit_held
{
	my ($point, $sql, $label) = @_;
	my $hold = hold_at($node, $point);
	my $job = submit_job($node, $sql);
	ok($node->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted"),
		$label);
	return ($hold, $job);
}

# Usage, version, help
my ($code, $out, $err) = client('--help');
is($code, 0, 'help: exit 0');
like($out, qr/Exit status: 0 done/, 'help: lists the exit codes');
($code, $out) = client('--version');
like($out, qr/^pg_bgddl \(background_ddl\) \d/, 'version');
($code, $out, $err) = client('frobnicate');
is($code, 3, 'unknown command: exit 3');
like($err, qr/^pg_bgddl: error: unknown command "frobnicate"/, 'unknown command: one clear line');
is(client_code('--no-such-option', 'list'), 3, 'unknown option: exit 3');
is(client_code('wait'), 3, 'wait without an id: exit 3');
is(client_code('wait', 'abc'), 3, 'wait with a bad id: exit 3');
is(client_code('submit'), 3, 'submit without SQL: exit 3');

# Setup problems
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_bgddl', '-h', $node->host, '-p', '1', 'list' ], '>', \$out, '2>', \$err);
	is($? >> 8, 3, 'unreachable server: exit 3');
	like($err, qr/^pg_bgddl: error: could not connect: .*\n/, 'unreachable server: says so');
}
($code, $out, $err) = client('-d', 'without_extension', 'list');
is($code, 6, 'extension not installed: exit 6');
like($err, qr/extension background_ddl is not installed in database "without_extension"/,
	'extension not installed: says so');
my $bare = PostgreSQL::Test::Cluster->new('bare');
$bare->init;
$bare->start;
{
	my ($o, $e) = ('', '');
	IPC::Run::run([ 'pg_bgddl', '-h', $bare->host, '-p', $bare->port, '-d', 'postgres', 'list' ],
		'>', \$o, '2>', \$e);
	is($? >> 8, 7, 'library not preloaded: exit 7');
	like($e, qr/not in shared_preload_libraries/, 'library not preloaded: says so');
}
$bare->stop;

# submit, list, wait
($code, $out, $err) = client('submit', 'CREATE MATERIALIZED VIEW mv1 AS SELECT account, count(*) AS n FROM events GROUP BY account');
is($code, 0, 'submit: exit 0');
like($out, qr/^(\d+)\n$/, 'submit: prints the job id');
my ($job1) = $out =~ /(\d+)/;
($code, $out) = client('wait', $job1);
is($code, 0, 'wait for a job that succeeds: exit 0');
is($out, "$job1 succeeded\n", 'wait: prints the final state');
($code, $out) = client('list', '--all');
like($out, qr/^\s+$job1\s+CREATE MATERIALIZED VIEW\s+public\.mv1\s+succeeded/m, 'list --all shows the job');
($code, $out) = client('list');
unlike($out, qr/public\.mv1/, 'list shows only jobs not yet ended');

# Any role can use the client (it reads no superuser-only setting), and the
# objects of a look-alike schema first in its search_path are not used.
($code, $out, $err) = client('-U', 'plain', 'list', '--all');
is($code, 0, 'list as an ordinary role: exit 0');
is($err, '', 'list as an ordinary role: no error');
like($out, qr/^\s+$job1\s+CREATE MATERIALIZED VIEW\s+public\.mv1\s+succeeded/m,
	'list as an ordinary role: the extension\'s view, not the look-alike');

# submit runs the statement with the user's search_path (only the client's
# own queries run without)
$node->safe_psql('postgres', 'CREATE SCHEMA app');
($code, $out) = client('-d', 'dbname=postgres options=-csearch_path=app,public', 'submit', '--wait',
	'CREATE MATERIALIZED VIEW in_app AS SELECT id FROM events WHERE id <= 10');
is($code, 0, 'submit with a search_path: exit 0');
is($node->safe_psql('postgres', "SELECT count(*) FROM app.in_app"), '10',
	'submit: the statement ran with the user\'s search_path');
($code, $out, $err) = client('submit', 'CREATE MATERIALIZED VIEW mv1 AS SELECT 1');
is($code, 4, 'submit refused by the server: exit 4');
like($err, qr/^pg_bgddl: error: statement refused: relation "mv1" already exists\n$/, 'submit refused: the error');
($code, $out, $err) = client('submit', 'SELECT 1');
is($code, 4, 'a statement that runs in the foreground: exit 4');

# A look-alike of the submit NOTICE, which any role's function can raise, is
# no job: the client takes job ids only from the NOTICE that the extension's
# own code raised (its source file, which no SQL or PL/pgSQL can set)
$node->safe_psql('postgres', q{
CREATE FUNCTION fake_submit() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'background DDL job 999999 submitted for public.fake';
  RETURN 1;
END $$;
});
($code, $out, $err) = client('submit', 'SELECT fake_submit()');
is($code, 4, 'a look-alike submit NOTICE: no job, exit 4');
unlike($out, qr/999999/, 'a look-alike submit NOTICE: its id is not taken');
like($err, qr/^NOTICE:  background DDL job 999999 submitted for public.fake$/m,
	'a look-alike submit NOTICE: printed as any other notice');
($code, $out, $err) = client('wait', '999999');
is($code, 5, 'unknown id: exit 5');
like($err, qr/background DDL job 999999 does not exist/, 'unknown id: says so');
is(client_code('cancel', '999999'), 5, 'cancel of an unknown id: exit 5');

# submit --wait of a job that fails (division by zero in a batch)
($code, $out, $err) = client('submit', '--wait',
	'CREATE TABLE t_fail AS SELECT id / (id - 150000) AS x FROM events');
is($code, 1, 'a job that fails: exit 1');
like($err, qr/failed: division by zero/, 'a job that fails: its error is printed');

# Control characters that a role put into a job's target name and into the
# error (detail, hint) that makes it fail are printed escaped, never raw:
# they could clear the screen of whoever runs pg_bgddl, or fake its lines.
$node->safe_psql('postgres', q{
CREATE FUNCTION hostile(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF x = 150000 THEN
    RAISE EXCEPTION E'bad\x1b[2J\nroot: all jobs succeeded'
      USING DETAIL = E'de\x1btail\r', HINT = E'hi\tnt';
  END IF;
  RETURN x;
END $$;
});
my $evil = "evil\x1b[2J\nname";
($code, $out, $err) = client('submit', qq{CREATE MATERIALIZED VIEW "$evil" AS SELECT hostile(id) AS id FROM events});
is($code, 0, 'a job with control characters in its target: submitted');
my ($job_evil) = $out =~ /^(\d+)$/m;
($code, $out, $err) = client('wait', $job_evil);
is($code, 1, 'a job whose error has control characters fails: exit 1');
unlike($out . $err, qr/\e/, 'wait: no raw ESC');
like($err,
	qr/^pg_bgddl: job $job_evil \(CREATE MATERIALIZED VIEW \S*evil\\x1B\[2J\\nname\S*\) failed: bad\\x1B\[2J\\nroot: all jobs succeeded\n/m,
	'wait: target and error escaped, on one line');
like($err, qr/^DETAIL:  de\\x1Btail\\r\nHINT:  hi\\tnt\n/m, 'wait: detail and hint escaped');
($code, $out, $err) = client('list', '--all');
is($code, 0, 'list --all with such a job: exit 0');
unlike($out, qr/\e/, 'list --all: no raw ESC');
like($out, qr/^\s+$job_evil\s+CREATE MATERIALIZED VIEW\s+\S*evil\\x1B\[2J\\nname\S*\s+failed\s/m,
	'list --all: the target escaped, on the job\'s line');
($code, $out, $err) = client('submit', qq{CREATE MATERIALIZED VIEW mv_refused AS SELECT * FROM "no\x1bsuch\ntable"});
is($code, 4, 'a refused statement naming control characters: exit 4');
like($err, qr/^pg_bgddl: error: statement refused: relation "no\\x1Bsuch\\ntable" does not exist\n$/,
	'a refused statement: its error escaped, on one line');

# submit -f with two statements: two jobs, one chain
my $file = PostgreSQL::Test::Utils::tempdir() . '/migration.sql';
open my $fh, '>', $file or die;
print $fh "CREATE TABLE t_a AS SELECT id FROM events WHERE account = 1;\n"
  . "CREATE INDEX ON events (account);\n";
close $fh;
($code, $out) = client('submit', '--wait', '-f', $file);
is($code, 0, 'submit -f --wait: exit 0');
like($out, qr/^chain (\d+)\n\1\n\d+\n\d+ succeeded\n\d+ succeeded\n$/,
	'submit -f: the chain, both job ids, then both states');

# A migration as one chain: a view, a statement that is not a job (with
# --wait it runs once the jobs before it have succeeded), a view over the
# view (split by psql's lexer: semicolons in quotes and comments), a table
# after it, a comment on that table (which its placeholder would refuse), an
# index on the table, a view over it and a refresh of that view; run in
# order.
open $fh, '>', $file or die;
print $fh <<'EOS';
-- a migration; this comment has a ; in it
CREATE MATERIALIZED VIEW c_daily AS SELECT account, count(*) AS n, ';' AS semi FROM events GROUP BY account;
COMMENT ON TABLE events IS 'events; counted by c_daily';
CREATE MATERIALIZED VIEW c_total AS SELECT sum(n) AS n, $x$;$x$ AS semi FROM c_daily;
CREATE TABLE c_top AS SELECT account FROM events WHERE account < 3;
COMMENT ON TABLE c_top IS 'the top accounts';
CREATE INDEX c_top_account ON c_top (account);
CREATE MATERIALIZED VIEW c_top_n AS SELECT account, count(*) AS n FROM c_top GROUP BY account;
REFRESH MATERIALIZED VIEW c_top_n
EOS
close $fh;
($code, $out, $err) = client('submit', '--wait', '-f', $file);
is($code, 0, 'a migration as one chain: exit 0');
my ($chain, @chain_jobs) = $out =~ /^chain (\d+)\n(\d+)\n(\d+)\n(\d+)\n(\d+)\n(\d+)\n(\d+)\n/;
is(scalar(@chain_jobs), 6, 'the chain and its six jobs are printed');
is($chain, $chain_jobs[0], 'the chain is named by its first job');
is( $node->safe_psql('postgres',
		"SELECT string_agg(format('%s:%s:%s:%s', id = $chain, chain = $chain, chain_position, after_jobs), ' ' ORDER BY id)
		   FROM pg_stat_background_ddl WHERE id IN (" . join(',', @chain_jobs) . ")"),
	"t:t:1: f:t:2:{$chain_jobs[0]} f:t:3:{$chain_jobs[1]} f:t:4:{$chain_jobs[2]} "
	  . "f:t:5:{$chain_jobs[3]} f:t:6:{$chain_jobs[4]}",
	'each job starts after the one before; the view shows the chain and the place in it');
is( $node->safe_psql('postgres',
		"SELECT bool_and(b.started_at >= a.finished_at) FROM pg_stat_background_ddl a
		   JOIN pg_stat_background_ddl b ON b.after_jobs = ARRAY[a.id]
		  WHERE a.id IN (" . join(',', @chain_jobs) . ")"),
	't', 'the jobs ran in order');
is($node->safe_psql('postgres', "SELECT n || semi FROM c_total"), '200000;', 'the view over the view is exact');
is( $node->safe_psql('postgres',
		"SELECT indisvalid AND indrelid = 'c_top'::regclass FROM pg_index WHERE indexrelid = 'c_top_account'::regclass"),
	't', 'the index on the table of a CREATE TABLE AS job of the chain is valid, on that table');
is( $node->safe_psql('postgres',
		"SELECT (SELECT array_agg(n ORDER BY account) FROM c_top_n)
		      = (SELECT array_agg(n ORDER BY account) FROM (SELECT account, count(*) AS n FROM events
		                                                     WHERE account < 3 GROUP BY account) q)"),
	't', 'the view over the table of the chain, refreshed after it, is exact');
is($node->safe_psql('postgres', "SELECT obj_description('events'::regclass)"), 'events; counted by c_daily',
	'the statement that is not a job ran');
is($node->safe_psql('postgres', "SELECT obj_description('c_top'::regclass)"), 'the top accounts',
	'a statement that is not a job ran after the jobs before it: on the table, not its placeholder');

# A failing job in the middle of a chain cancels the rest: exit 1
open $fh, '>', $file or die;
print $fh "CREATE MATERIALIZED VIEW f_first AS SELECT account FROM events GROUP BY account;\n"
  . "CREATE MATERIALIZED VIEW f_fails AS SELECT 1 / (account - 7) AS x FROM f_first;\n"
  . "CREATE MATERIALIZED VIEW f_never AS SELECT count(*) FROM f_fails;\n"
  . "COMMENT ON TABLE events IS 'never';\n"
  . "CREATE MATERIALIZED VIEW f_never_submitted AS SELECT 1;\n";
close $fh;
($code, $out, $err) = client('submit', '--wait', '-f', $file);
is($code, 1, 'a chain whose middle job fails: exit 1');
like($err, qr/failed: division by zero/, 'the failure is printed');
like($err, qr/statements 4 to 5 \(lines 4 to 5\) not run: a job before them did not succeed/,
	'the statements after the failed job that are not jobs, and those after them, are not run');
isnt($node->safe_psql('postgres', "SELECT obj_description('events'::regclass)"), 'never',
	'the statement that is not a job did not run');
is($node->safe_psql('postgres', "SELECT to_regclass('f_never_submitted') IS NULL"), 't',
	'the job after it was not submitted');
my @failed_chain = $out =~ /^(\d+)$/mg;
is( $node->safe_psql('postgres',
		"SELECT string_agg(state || coalesce(':' || error, ''), ' ' ORDER BY id) FROM pg_stat_background_ddl
		  WHERE id IN (" . join(',', @failed_chain) . ")"),
	"succeeded failed:division by zero cancelled:job $failed_chain[1] failed",
	'the first succeeded, the second failed, the third was cancelled, saying why');

# A migration in transaction blocks (as Django and Flyway write them), with
# --wait: nothing of the client's own runs in the file's transactions, where
# an error would abort them; the statements of a block see its jobs done
# (archived, then purged: the archive keeps the rows); the jobs of a block
# start at its COMMIT.
$node->safe_psql('postgres', 'CREATE TABLE m_src AS SELECT g AS id FROM generate_series(1, 1000) g');
open $fh, '>', $file or die;
print $fh <<'EOS';
BEGIN;
CREATE TABLE m_arch AS SELECT id FROM m_src WHERE id <= 100;
DELETE FROM m_src WHERE id <= 100;
COMMIT;
BEGIN;
CREATE UNIQUE INDEX m_src_id ON m_src (id);
ALTER TABLE m_src ADD CONSTRAINT m_src_key UNIQUE USING INDEX m_src_id;
COMMIT;
CREATE MATERIALIZED VIEW m_count AS SELECT count(*) AS n FROM m_src;
INSERT INTO m_src VALUES (5000);
EOS
close $fh;
($code, $out, $err) = client('submit', '--wait', '-f', $file);
is($code, 0, 'a migration in transaction blocks: exit 0') or diag($err);
is( $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM m_arch) || ' ' || (SELECT count(*) FROM m_src) || ' '
		     || (SELECT n FROM m_count) || ' '
		     || (SELECT string_agg(conname, ',') FROM pg_constraint WHERE conrelid = 'm_src'::regclass)"),
	'100 901 900 m_src_key',
	'archived before the purge, the constraint on the built index, the count before the insert');

# A statement the server refuses in a transaction block: named by its line,
# exit 4, and nothing of the block applied.
open $fh, '>', $file or die;
print $fh "BEGIN;\n"
  . "CREATE TABLE m_never AS SELECT id FROM m_src;\n"
  . "-- a comment\n"
  . "\n"
  . "ALTER TABLE m_src ADD COLUMN id int;\n"
  . "COMMIT;\n";
close $fh;
($code, $out, $err) = client('submit', '--wait', '-f', $file);
is($code, 4, 'a statement refused in a transaction block: exit 4');
like($err, qr/^pg_bgddl: error: statement 3 \(line 5\) refused: column "id" of relation "m_src" already exists\n\z/m,
	'the refusal names the statement and its line');
like($err, qr/^NOTICE:  background DDL job \d+ is built in this session, now$/m,
	'the NOTICE that the block\'s job is built in the session is printed, not taken for a submit');
is($node->safe_psql('postgres', "SELECT to_regclass('m_never') IS NULL"), 't',
	'nothing of the block was applied');

# cancel, pause, resume (held in its planning step)
my $hold = hold_at($node, 'planning');
($code, $out) = client('submit', 'CREATE MATERIALIZED VIEW mv2 AS SELECT id FROM events');
my ($job2) = $out =~ /(\d+)/;
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted"),
	'job held');
($code, $out) = client('pause', $job2);
is($code, 0, 'pause: exit 0');
ok(wait_job_state($node, $job2, 'paused'), 'pause: paused');
like($node->safe_psql('postgres', "SELECT waiting_on FROM pg_stat_background_ddl WHERE id = $job2"),
	qr/^paused/, 'waiting_on: paused');
($code, $out) = client('resume', $job2);
is($code, 0, 'resume: exit 0');
($code, $out) = client('cancel', $job2);
is($code, 0, 'cancel: exit 0');
($code, $out, $err) = client('wait', $job2);
is($code, 2, 'wait for a cancelled job: exit 2');
release_hold($node, $hold);

# waiting_on: a free worker (max_workers = 1), and a lock held by a session
($hold, my $first) = submit_held('planning', 'CREATE MATERIALIZED VIEW mv3 AS SELECT id FROM events',
	'first job holds the only worker');
my $second = submit_job($node, 'CREATE MATERIALIZED VIEW mv4 AS SELECT id FROM events');
ok($node->poll_query_until('postgres',
		"SELECT waiting_on LIKE 'a free worker (1 in the queue%' FROM pg_stat_background_ddl WHERE id = $second"),
	'waiting_on: a free worker, first in the queue');
my $locker = $node->background_psql('postgres');
$locker->set_query_timer_restart;
$locker->query_safe('BEGIN; LOCK TABLE events IN ROW EXCLUSIVE MODE;');
release_hold($node, $hold);
ok($node->poll_query_until('postgres',
		"SELECT waiting_on ~ '^a lock: ShareRowExclusiveLock on events held by pid [0-9]+' FROM pg_stat_background_ddl WHERE id = $first"),
	'waiting_on: the lock, with the pid that holds it');
$locker->query_safe('COMMIT');
$locker->quit;
ok(wait_job_state($node, $first, 'succeeded'), 'first job succeeded once the lock was gone');
ok(wait_job_state($node, $second, 'succeeded'), 'second job succeeded');
is($node->safe_psql('postgres', "SELECT waiting_on IS NULL FROM pg_stat_background_ddl WHERE id = $second"),
	't', 'waiting_on: NULL once ended');

# NOTIFY at each state change
my $listener = $node->background_psql('postgres');
$listener->set_query_timer_restart;
$listener->query_safe('LISTEN background_ddl');
my $job5 = submit_job($node, 'CREATE MATERIALIZED VIEW mv5 AS SELECT id FROM events');
ok(wait_job_state($node, $job5, 'succeeded'), 'job for notifications succeeded');
# The scheduler sends them once the change has committed: poll, bounded
my $notes = '';
for (my $i = 0; $i < 100 && $notes !~ /payload "$job5 succeeded"/; $i++)
{
	$notes .= $listener->query_safe('SELECT 1');
	select(undef, undef, undef, 0.1) if $notes !~ /payload "$job5 succeeded"/;
}
$listener->quit;
like($notes, qr/payload "$job5 queued"/, 'NOTIFY: queued');
like($notes, qr/payload "$job5 running"/, 'NOTIFY: running');
like($notes, qr/payload "$job5 succeeded"/, 'NOTIFY: succeeded');

# wait is woken by NOTIFY: it returns within 1 s of the end, although it
# looks at the view only every 10 s otherwise.
($hold, my $job6) = submit_held('cutting over', 'CREATE MATERIALIZED VIEW mv6 AS SELECT id FROM events',
	'job 6 held before its cut-over');
my ($wait_out, $wait_err) = ('', '');
my $waiter = start_client(\$wait_out, \$wait_err, 'wait', $job6);
client_sleeping('wait is sleeping');
release_hold($node, $hold);
ok(wait_job_state($node, $job6, 'succeeded'), 'job 6 succeeded');
my $ended = time();
$waiter->finish;
my $woke_after = time() - $ended;
cmp_ok($woke_after, '<', 1.0, sprintf('wait returned %.2f s after the job ended (NOTIFY)', $woke_after));
is($wait_out, "$job6 succeeded\n", 'wait printed the state');

# Any role can NOTIFY on the channel: a payload that is not "<job id>
# <state>" is ignored, never printed raw (with -v, reported escaped).
($hold, my $job_n) = submit_held('cutting over', 'CREATE MATERIALIZED VIEW mv_notify AS SELECT id FROM events',
	'job held before its cut-over (notify)');
my ($n_out, $n_err) = ('', '');
my $n_waiter = start_client(\$n_out, \$n_err, '-v', 'wait', $job_n);
client_sleeping('wait -v is sleeping');
$node->safe_psql('postgres', q{NOTIFY background_ddl, E'\x1b[2J fake'}, extra_params => [ '-U', 'plain' ]);
# (until it has printed anything about the notification)
$n_waiter->pump until $n_err =~ /notif/;
release_hold($node, $hold);
$n_waiter->finish;
is($? >> 8, 0, 'wait after a hostile NOTIFY: exit 0');
unlike($n_out . $n_err, qr/\e/, 'a hostile NOTIFY: no raw ESC printed');
like($n_err, qr/^pg_bgddl: ignored a notification from pid \d+ that is not "<job id> <state>": "\\x1B\[2J fake"$/m,
	'a hostile NOTIFY: reported escaped with -v');
is($n_out, "$job_n succeeded\n", 'wait after a hostile NOTIFY: the state from the view');

# watch, not on a terminal: plain lines, until the job ends
($hold, my $job7) = submit_held('chunk 3', 'CREATE MATERIALIZED VIEW mv7 AS SELECT id, upper(payload) FROM events',
	'job 7 held at chunk 3');
my ($watch_out, $watch_err) = ('', '');
my $watcher = start_client(\$watch_out, \$watch_err, 'watch', $job7);
release_hold($node, $hold);
$watcher->finish;
is($? >> 8, 0, 'watch: exit 0 when the job succeeded');
like($watch_out, qr/^\s+$job7 \[[#.]{20}\]\s+[\d.]+% .* backfilling public\.mv7(, waiting on .*)?$/m,
	'watch: a progress line while it runs');
like($watch_out, qr/^\s+$job7 \[#{20}\] 100\.0% .* succeeded /m, 'watch: the last line says succeeded');
unlike($watch_out, qr/\e\[/, 'watch: no terminal escapes when not on a terminal');

# watch on a terminal: the line is redrawn in place
($hold, my $job8) = submit_held('chunk 3', 'CREATE MATERIALIZED VIEW mv8 AS SELECT id, upper(payload) FROM events',
	'job 8 held at chunk 3');
my $tty_out = '';
my $tty = IPC::Run::start(
	[ 'pg_bgddl', '-h', $node->host, '-p', $node->port, '-d', 'postgres', 'watch', $job8 ],
	'<pty<', \my $tty_in, '>pty>', \$tty_out,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
$tty->pump until $tty_out =~ /backfilling/;
release_hold($node, $hold);
$tty->finish;
like($tty_out, qr/\e\[1A\e\[2K\s+$job8 \[#{20}\] 100\.0%/, 'watch on a terminal: the line redrawn in place');

# alter_ddl: a rate limit on a running job, held within 20 %, shown in the
# view and in waiting_on, then lifted.
($hold, my $job9) = submit_held('planning', 'CREATE MATERIALIZED VIEW mv9 AS SELECT id, upper(payload) FROM events',
	'job 9 held');
my ($ret, $stdout, $stderr) = $node->psql('postgres', "SELECT alter_ddl($job9, max_rate => 0)");
like($stderr, qr/ERROR:  max_rate must be .*\n.*HINT:  To stop a job for a while, use pause_ddl\($job9\)/s,
	'alter_ddl: a rate of 0 is refused, with a hint to pause');
($ret, $stdout, $stderr) = $node->psql('postgres', "SELECT alter_ddl($job9, workers => 0)");
like($stderr, qr/workers must be between 1 and background_ddl.max_workers/, 'alter_ddl: 0 workers refused');
is($node->safe_psql('postgres', "SELECT alter_ddl($job9, max_rate => 20000, batch_time => '50ms', workers => 1)"),
	't', 'alter_ddl: limits set');
is($node->safe_psql('postgres', "SELECT max_rate, batch_time, max_workers FROM pg_stat_background_ddl WHERE id = $job9"),
	'20000|00:00:00.05|1', 'the view shows the limits');
release_hold($node, $hold);
# The rate over the checkpoints: the rows of chunks 5 to 14 over the time
# from chunk 4's commit to chunk 14's (the limit was set while the job was
# held, so it applies from its second chunk on).
ok($node->poll_query_until('postgres', "SELECT count(*) >= 14 FROM background_ddl.chunk WHERE job_id = $job9"),
	'throttled job made 14 chunks');
my $rate = $node->safe_psql('postgres', qq{
	SELECT round(sum(rows_done) FILTER (WHERE n > 4)
	             / extract(epoch FROM max(done_at) - min(done_at) FILTER (WHERE n = 4)))
	  FROM (SELECT rows_done, done_at, row_number() OVER (ORDER BY done_at) AS n
	          FROM background_ddl.chunk WHERE job_id = $job9) c WHERE n <= 14});
ok($rate > 16000 && $rate < 24000, "throttled rate $rate rows/s is within 20 % of 20000");
ok($node->poll_query_until('postgres',
		"SELECT waiting_on LIKE 'the rate limit of 20000 rows/s%' FROM pg_stat_background_ddl WHERE id = $job9"),
	'waiting_on: the rate limit');
is($node->safe_psql('postgres', "SELECT alter_ddl($job9, max_rate => 'infinity')"), 't', 'alter_ddl: limit lifted');
ok(wait_job_state($node, $job9, 'succeeded'), 'job 9 succeeded once the limit was lifted');
is($node->safe_psql('postgres', "SELECT alter_ddl($job9, max_rate => 100)"), 'f', 'alter_ddl of an ended job: false');
is(differences($node, 'mv9', 'SELECT id, upper(payload) FROM events'), '0', 'throttled job: content equals the query');

# -v: once a job has ended, the messages its own statements raised, as
# psql shows them (escaped), and how many more there were than it keeps;
# only for a role that may read them.
$node->safe_psql('postgres', q{
CREATE FUNCTION chatty(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF x = 1 THEN
    RAISE WARNING E'first\x1b[31m row' USING DETAIL = E'line one\nline two', HINT = 'Just saying.';
  ELSIF x <= 150 THEN
    RAISE NOTICE 'row %', x;
  END IF;
  RETURN x;
END $$;
});
my $job_chatty = submit_job($node, 'CREATE MATERIALIZED VIEW mv_chatty AS SELECT chatty(id) AS id FROM events WHERE id <= 1000');
($code, $out, $err) = client('-v', 'wait', $job_chatty);
is($code, 0, 'wait -v for a job that raised messages: exit 0');
is($out, "$job_chatty succeeded\n", 'wait -v: the state on stdout');
unlike($err, qr/\e/, 'wait -v: no raw ESC');
like($err, qr/^job $job_chatty: WARNING:  first\\x1B\[31m row\nDETAIL:  line one\\nline two\nHINT:  Just saying\.\n/m,
	'wait -v: a warning with its detail and hint, escaped');
like($err, qr/^job $job_chatty: NOTICE:  row 2\n/m, 'wait -v: a notice');
my $raised = $node->safe_psql('postgres', "SELECT messages FROM pg_stat_background_ddl WHERE id = $job_chatty");
is($raised, '150', 'the job raised 150 messages');
like($err, qr/^job $job_chatty: 50 more messages \(only the first 100 are kept\)$/m,
	'wait -v: how many more messages there were');
($code, $out, $err) = client('-v', 'watch', $job_chatty);
is($code, 0, 'watch -v of an ended job: exit 0');
like($err, qr/^job $job_chatty: NOTICE:  row 2\n/m, 'watch -v: the messages');
($code, $out, $err) = client('-U', 'plain', '-v', 'wait', $job_chatty);
is($code, 0, 'wait -v by a role that may not read the messages: exit 0');
like($err, qr/^job $job_chatty: its 150 messages are not readable: permission denied/m,
	'wait -v by another role: one line says the messages are not readable');
unlike($err, qr/NOTICE/, 'wait -v by another role: no message');

# show and complete: a job whose cut-over is manual
my $manual_job = $node->safe_psql('postgres', q{SET background_ddl = on; SET background_ddl.cutover = manual;
CREATE MATERIALIZED VIEW client_mv AS SELECT id FROM events WHERE id <= 1000; SELECT last_ddl_job();});
ok($node->poll_query_until('postgres', "SELECT phase FROM pg_stat_background_ddl WHERE id = $manual_job", 'ready'),
	"job $manual_job is ready");
($code, $out) = client('show', $manual_job);
is($code, 0, 'show: exit 0');
like($out, qr/^phase +ready\n(?s:.*)^cutover +manual\n/m, 'show: every column, one a line');
$node->safe_psql('postgres', "SELECT pause_ddl($manual_job)");
($code, $out, $err) = client('complete', $manual_job);
is($code, 4, 'complete of a paused job: exit 4');
like($err, qr/background DDL job $manual_job is paused/, 'complete: the server\'s refusal');
$node->safe_psql('postgres', "SELECT resume_ddl($manual_job)");
($code, $out) = client('complete', $manual_job);
is($code, 0, 'complete: exit 0 once the job is published');
is($out, "$manual_job succeeded\n", 'complete: the job\'s end');
($code, $out) = client('show', $manual_job);
like($out, qr/^cutover +completed\n(?s:.*)^wal_bytes +[1-9]\d*\n/m, 'show: completed, and what it cost');
is(client_code('show', '999999'), 5, 'show of an unknown id: exit 5');

# Passwords, as PostgreSQL's client programs ask for them: a role that
# authenticates with scram-sha-256 (pg_hba.conf), -w never prompts, -W
# prompts on the terminal before connecting, and without either the client
# prompts when the server asks.
$node->safe_psql('postgres', "SET password_encryption = 'scram-sha-256'; CREATE ROLE pwuser LOGIN PASSWORD 'secret'");
my $hba = $node->data_dir . '/pg_hba.conf';
my $hba_conf = PostgreSQL::Test::Utils::slurp_file($hba);
open my $hba_fh, '>', $hba or die;
print $hba_fh "local all pwuser scram-sha-256\n" . $hba_conf;
close $hba_fh;
$node->reload;
($code, $out, $err) = client('-U', 'pwuser', '-w', 'list');
is($code, 3, '-w: no prompt, no connection (exit 3)');
like($err, qr/^pg_bgddl: error: could not connect: .*(no password supplied|password authentication failed)/,
	'-w: says why');
for my $option ('-W', undef)
{
	my ($tty_in, $tty_out) = ('', '');
	my $label = defined $option ? '-W' : 'asked by the server';
	my $prompt = IPC::Run::start(
		[ 'pg_bgddl', '-h', $node->host, '-p', $node->port, '-d', 'postgres', '-U', 'pwuser',
		  (defined $option ? ($option) : ()), 'list' ],
		'<pty<', \$tty_in, '>pty>', \$tty_out,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	$prompt->pump until $tty_out =~ /Password: /;
	$tty_in .= "secret\n";
	$prompt->finish;
	is($prompt->result(0), 0, "$label: prompted on the terminal, connected (exit 0)");
	like($tty_out, qr/Password: .*\(\d+ jobs?\)/s, "$label: the password was not echoed, and the list printed");
	unlike($tty_out, qr/secret/, "$label: the password is not shown");
}

# The library not preloaded, the extension installed: found by calling its
# C function (qualified: the look-alike first in the search_path does not
# answer instead), which any role may.
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->restart;
($code, $out, $err) = client('-U', 'plain', 'list');
is($code, 7, 'library not preloaded, extension installed: exit 7 for an ordinary role');
like($err, qr/^pg_bgddl: error: background_ddl is not in shared_preload_libraries/,
	'library not preloaded, extension installed: says so');

$node->stop;
done_testing();
