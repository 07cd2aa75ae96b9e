# Jobs under a steady write load: an aggregating view and a join view are
# built while pgbench changes single rows of events at a fixed rate and,
# a few times a second, rows of the joined table accounts.  Each job must
# finish within a generous bound, be exact at its cut-over snapshot, and
# handle the changes of accounts by their join keys, not by recomputing
# everything; a TRUNCATE of accounts in the middle of a job is recomputed in
# batches; and no mark is left once the jobs have ended.
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

my $rows = 200000;
my $node = bgddl_node('load', "max_connections = 40\n");
history_setup($node, $rows);
$node->safe_psql('postgres', 'VACUUM ANALYZE events, accounts');

my $dir = PostgreSQL::Test::Utils::tempdir;
open my $fh, '>', "$dir/events.sql" or die;
print $fh <<"EOS";
\\set id random(1, $rows)
\\set acc random(0, 999)
UPDATE events SET payload = md5(random()::text), account = :acc WHERE id = :id;
EOS
close $fh;
open $fh, '>', "$dir/hot.sql" or die;
print $fh <<"EOS";
\\set id random(1, 3000)
UPDATE events SET payload = md5(random()::text) WHERE id = :id;
EOS
close $fh;
accounts_script($dir);

# A steady load: $rate single-row updates of events a second ($script: spread
# over the table, or the hot rows of its first blocks), and 5 of accounts
sub start_load
{
	my ($rate, $script) = @_;
	my @common = ('-n', '-T', '600', '-h', $node->host, '-p', $node->port, 'postgres');
	my $pgbench = $ENV{PGBENCH} // 'pgbench';
	my ($err1, $err2) = ('', '');
	return (
		[ IPC::Run::start([ $pgbench, '-c', '2', '-j', '2', '-R', $rate, '-f', "$dir/$script.sql", @common ],
			'>', \my $out1, '2>', \$err1), \$err1 ],
		[ IPC::Run::start([ $pgbench, '-c', '1', '-R', '5', '-f', "$dir/accounts.sql", @common ],
			'>', \my $out2, '2>', \$err2), \$err2 ]);
}

# Stop the load; none of its writes may have failed meanwhile (the capture
# triggers run in their transactions)
sub stop_load
{
	my ($what, @load) = @_;
	my $errors = join('', map { stop_pgbench(@$_) } @load);
	unlike($errors, qr/aborted/, "$what: no writer failed") or diag($errors);
	return;
}

my $agg_query = 'SELECT account, count(*) AS n, sum(id) AS s, max(payload) AS hi FROM %s GROUP BY account';
my $join_query = 'SELECT e.id, a.name, e.payload FROM %s e JOIN %s a USING (account)';

my @load = start_load(300, 'events');
$node->poll_query_until('postgres',
	"SELECT count(*) > 100 FROM history WHERE tab = 'accounts'")
  or die 'no load';

# The blocking statements under the same load give the bound: ten times as long, at least a minute
my $start = time;
$node->safe_psql('postgres', 'CREATE MATERIALIZED VIEW agg_blocking AS ' . sprintf($agg_query, 'events'));
$node->safe_psql('postgres',
	'CREATE MATERIALIZED VIEW join_blocking AS ' . sprintf($join_query, 'events', 'accounts'));
my $bound = 10 * (time - $start);
$bound = 60 if $bound < 60;

# Both jobs wait in their backfill while the writers change rows they have
# read and rows they have not
sub writes_while_held
{
	my ($hold, $count, $tab) = @_;
	ok(held_at_hold($node, $count), "$count jobs wait in their backfill");
	my $seq = $node->safe_psql('postgres', 'SELECT max(seq) FROM history');
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) FILTER (WHERE tab = '$tab') >= 300 AND count(*) FILTER (WHERE tab = 'accounts') >= 3
			   FROM history WHERE seq > $seq"),
		'300 rows and 3 accounts were changed meanwhile');
	release_hold($node, $hold);
	return;
}
my $hold = hold_at($node, 'chunk 2');
my $agg = submit_job($node, 'CREATE MATERIALIZED VIEW agg_load AS ' . sprintf($agg_query, 'events'));
my $join = submit_job($node,
	'CREATE MATERIALIZED VIEW join_load AS ' . sprintf($join_query, 'events', 'accounts'));
writes_while_held($hold, 2, 'events');
is($node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $join"),
	'ctid chunks', 'the join view: a change to accounts is pinned to rows by its join key');
# Poll until the jobs have ended, at most $bound seconds
sub ended_within
{
	my ($bound, @jobs) = @_;
	my $start = time;
	my $ended = '';
	while (time - $start < $bound)
	{
		$ended = $node->safe_psql('postgres',
			'SELECT bool_and(state NOT IN (\'queued\', \'running\')) FROM pg_stat_background_ddl WHERE id IN ('
			  . join(', ', @jobs) . ')');
		last if $ended eq 't';
		select(undef, undef, undef, 0.2);
	}
	return $ended eq 't';
}
ok(ended_within($bound, $agg, $join),
	sprintf('both jobs ended under the load within %.0f s, ten times the blocking builds', $bound));
stop_load('the spread load', @load);

check_exact_at_cutover($node, 'agg_load', $agg, sprintf($agg_query, 'events_at(SNAP)'), 900);
check_exact_at_cutover($node, 'join_load', $join, sprintf($join_query, 'events_at(SNAP)', 'accounts_at(SNAP)'), $rows - 1);
my ($changed, $recomputed, $passes) = split /\|/, $node->safe_psql('postgres',
	"SELECT (SELECT count(*) FROM history h WHERE h.tab = 'accounts' AND h.at BETWEEN j.started_at AND j.cutover_at),
	        j.rows_recomputed, j.catchup_passes
	   FROM pg_stat_background_ddl j WHERE j.id = $join");
cmp_ok($changed, '>', 0, "the join view: $changed rows of accounts changed while it ran");
cmp_ok($recomputed, '<', $rows / 2,
	"the join view: its catch-up recomputed $recomputed rows in $passes passes, not everything");
# Changes spread over the whole table make every unit of partial
# aggregation dirty: the job either caught up, or left it to the cut-over
my $agg_passes = $node->safe_psql('postgres', "SELECT catchup_passes FROM pg_stat_background_ddl WHERE id = $agg");
ok($agg_passes >= 1 || slurp_file($node->logfile) =~ /job $agg: the changed rows are spread over most of the table/,
	"the aggregating view caught up in $agg_passes passes, or its cut-over recomputed it whole");
check_no_leftovers($node, $_) for ($agg, $join);

# Changes to a few hot rows: partial aggregation recomputes their units only
@load = start_load(300, 'hot');
$node->poll_query_until('postgres',
	"SELECT count(*) > 500 FROM history WHERE tab = 'events' AND id <= 3000 AND at > now() - interval '10 s'")
  or die 'no load';
$hold = hold_at($node, 'chunk 2');
my $hot = submit_job($node, 'CREATE MATERIALIZED VIEW agg_hot AS ' . sprintf($agg_query, 'events'));
writes_while_held($hold, 1, 'events');
ok(ended_within($bound, $hot), 'the aggregating view over hot rows ended under the load');
stop_load('the load on hot rows', @load);
check_exact_at_cutover($node, 'agg_hot', $hot, sprintf($agg_query, 'events_at(SNAP)'), 900);
my $hot_passes = $node->safe_psql('postgres',
	"SELECT catchup_passes FROM pg_stat_background_ddl WHERE id = $hot");
cmp_ok($hot_passes, '>=', 1, "the aggregating view over hot rows caught up in $hot_passes passes");
unlike(slurp_file($node->logfile), qr/job $hot: the changed rows are spread/,
	'and recomputed parts of the table, not the whole result');
check_no_leftovers($node, $hot);

# A TRUNCATE of the joined table while a job catches up: every row is
# recomputed, in batches, before the cut-over (TRUNCATE fires no row
# trigger: the history records the deletions itself)
$hold = hold_at($node, 'catching up');
my $truncated = submit_job($node,
	'CREATE MATERIALIZED VIEW join_truncated AS ' . sprintf($join_query, 'events', 'accounts'));
ok(held_at_hold($node), 'the job waits before its catch-up');
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO history (tab, id, deleted) SELECT 'accounts', account, true FROM accounts;
TRUNCATE accounts;
INSERT INTO accounts SELECT g, 'after truncate ' || g FROM generate_series(0, 499) g;
COMMIT;
UPDATE events SET payload = 'after the backfill' WHERE id % 1000 = 7;
});
release_hold($node, $hold);
check_exact_at_cutover($node, 'join_truncated', $truncated,
	sprintf($join_query, 'events_at(SNAP)', 'accounts_at(SNAP)'), $rows / 4);
# (every row of the result, about half of events: the accounts left join half of them)
my ($recomputed_rows, $result_rows) = split /\|/, $node->safe_psql('postgres',
	"SELECT rows_recomputed, (SELECT count(*) FROM join_truncated) FROM pg_stat_background_ddl WHERE id = $truncated");
cmp_ok($recomputed_rows, '>=', 0.9 * $result_rows,
	"after the TRUNCATE the catch-up recomputed every row ($recomputed_rows, for $result_rows in the result)");
unlike(slurp_file($node->logfile), qr/job $truncated: .*recomputed at cut-over/,
	'and the cut-over did not recompute the whole result');
check_no_leftovers($node, $truncated);

# Changes all over the table while an aggregating view backfills: the job
# leaves the whole query to its cut-over, and a crash there loses nothing
$hold = hold_at($node, 'chunk 2');
my $spread = submit_job($node, 'CREATE MATERIALIZED VIEW agg_spread AS ' . sprintf($agg_query, 'events'));
ok(held_at_hold($node), 'the job waits in its backfill');
# (a seventh of the rows, in every block: more than half of the table to
# recompute, whether the projection during the backfill says so or the
# first catch-up pass; and fewer marks than the log's bound, which would
# stop the capture, and leave the whole result to the cut-over that way)
$node->safe_psql('postgres', "UPDATE events SET payload = md5(payload) WHERE id % 7 = 1");
$node->safe_psql('postgres',
	"ALTER SYSTEM SET background_ddl.test_hold_point = 'cutting over'; SELECT pg_reload_conf();");
$hold->query_safe('SELECT pg_advisory_unlock(4242)');
$hold->query_safe('SELECT pg_advisory_lock(4242)');
ok(held_at_hold($node), 'then at its cut-over');
like(slurp_file($node->logfile), qr/job $spread: the changed rows are spread over most of the table/,
	'it left the whole query to the cut-over');
is($node->safe_psql('postgres', "SELECT kind_state->>'recompute_all' FROM background_ddl.job WHERE id = $spread"),
	'1', 'and recorded so with the job');
$node->stop('immediate');
$node->start;
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
check_exact_at_cutover($node, 'agg_spread', $spread, sprintf($agg_query, 'events_at(SNAP)'), 900);
check_no_leftovers($node, $spread);

# A view held after its backfill's fourth chunk (one worker's), $change made
# to its tables, then released: the job leaves the whole query to its
# cut-over from its backfill, without a catch-up pass, and is exact
sub spread_seen_in_backfill
{
	my ($what, $view, $query, $change) = @_;
	$node->safe_psql('postgres',
		'ALTER SYSTEM SET background_ddl.max_workers_per_job = 1; SELECT pg_reload_conf();');
	my ($job, $hold) = submit_held_at($node, 'chunk 4', "CREATE MATERIALIZED VIEW $view AS $query");
	$node->safe_psql('postgres', $change);
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'succeeded'), "$what: the job succeeded");
	$node->safe_psql('postgres',
		'ALTER SYSTEM RESET background_ddl.max_workers_per_job; SELECT pg_reload_conf();');
	like(slurp_file($node->logfile), qr/job $job: the changed rows are spread over most of the table/,
		"$what: it left the whole query to its cut-over");
	is(job_field($node, $job, 'catchup_passes'), '0', "$what: from its backfill, with no catch-up pass");
	is(differences($node, $view, $query), '0', "$what: its content equals the query");
	check_no_leftovers($node, $job);
	return;
}

# Changes all over the table seen at the end of a backfill, whose chunks
# (one worker's, growing four times at each) have made its units of
# partial aggregation a large part of the table (judged from the dirty
# units alone, a few large units all dirty did not count as spread: the
# job made a catch-up pass, which found the whole table dirty)
spread_seen_in_backfill('late spread', 'agg_late', sprintf($agg_query, 'events'),
	'UPDATE events SET payload = md5(payload) WHERE id % 100 = 0');

# A join whose joined table changed under it, the rows of 40 of its 1,000
# accounts (4 % of events, in every block): one worker's catch-up of them
# would take 0.8 of the backfill's time were the writers to stop, and longer
# than the whole query while they go on at that pace.  (Fewer than a
# twentieth of each chunk's rows changed: its first catch-up pass would not
# have left the whole query to the cut-over, and before, it caught up row
# by row.)
spread_seen_in_backfill('a chased join', 'join_chase', sprintf($join_query, 'events', 'accounts'),
	"UPDATE accounts SET name = name || '.' WHERE account < 40");

# A role under row security: the driving rows that a changed join key
# stands for are looked up as that role, under its policy
$node->safe_psql('postgres', q{
CREATE ROLE analyst LOGIN;
GRANT SELECT, TRIGGER ON events, accounts TO analyst;
GRANT CREATE ON SCHEMA public TO analyst;
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
CREATE POLICY low_accounts ON events TO analyst USING (account < 500);
});
$hold = hold_at($node, 'catching up');
my $secured = submit_job($node,
	'CREATE MATERIALIZED VIEW join_secured AS ' . sprintf($join_query, 'events', 'accounts'),
	user => 'analyst');
ok(held_at_hold($node), 'the job of a role under row security waits before its catch-up');
$node->safe_psql('postgres',
	"UPDATE accounts SET name = 'secured ' || account WHERE account % 10 = 3; "
	  . "UPDATE events SET payload = 'secured' WHERE id % 500 = 3;");
release_hold($node, $hold);
check_exact_at_cutover($node, 'join_secured', $secured,
	sprintf($join_query, 'events_at(SNAP)', 'accounts_at(SNAP)') . ' WHERE e.account < 500', 1000);
check_no_leftovers($node, $secured);

# The dirty log's bound is twice the driving table's rows, and at least
# 100,000 marks: a job held before its catch-up captures the changes of a
# 200,000-row table past 100,000 marks, and stops capturing past 400,000
# (an old and a new version per updated row, 50,000 a transaction)
$hold = hold_at($node, 'catching up');
my $bounded = submit_job($node, 'CREATE MATERIALIZED VIEW bounded AS SELECT id, payload FROM events');
ok(held_at_hold($node), 'a job waits before its catch-up');
$node->safe_psql('postgres', 'UPDATE events SET payload = md5(payload) WHERE id % 8 = ' . ($_ % 8))
  for (0 .. 9);
ok($node->poll_query_until('postgres',
		"SELECT stopped FROM background_ddl.capture WHERE job_id = $bounded"),
	'its capture stopped');
my ($waiting) = slurp_file($node->logfile) =~ /job $bounded stops capturing changes: (\d+) of them wait/;
cmp_ok($waiting // 0, '>', 300000,
	"past about twice the table's rows, not at the least bound ($waiting marks)");
release_hold($node, $hold);
check_exact_at_cutover($node, 'bounded', $bounded, 'SELECT id, payload FROM events_at(SNAP)', 900);
check_no_leftovers($node, $bounded);

# The cut-over's last pass, row by row, counts in rows_recomputed: a join
# job held before its cut-over, then 200 of its driving rows changed (half
# of them join an account)
$hold = hold_at($node, 'cutting over');
my $last = submit_job($node,
	'CREATE MATERIALIZED VIEW join_last AS ' . sprintf($join_query, 'events', 'accounts'));
ok(held_at_hold($node), 'a join job waits before its cut-over');
my $before = job_field($node, $last, 'rows_recomputed');
$node->safe_psql('postgres', "UPDATE events SET payload = 'last pass' WHERE id % 1000 = 11");
release_hold($node, $hold);
check_exact_at_cutover($node, 'join_last', $last,
	sprintf($join_query, 'events_at(SNAP)', 'accounts_at(SNAP)'), $rows / 4);
cmp_ok(job_field($node, $last, 'rows_recomputed'), '>', $before,
	"its rows_recomputed counts the cut-over's rows (from $before)");
unlike(slurp_file($node->logfile), qr/job $last: .*recomputed at cut-over/,
	'which recomputed them, not the whole result');
check_no_leftovers($node, $last);

is($node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.dirty'), '0',
	'no mark is left in the dirty log');
$node->stop;
done_testing();
