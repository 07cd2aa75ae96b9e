# Differential test of exactness: while pgbench writes to the base tables
# (INSERT, HOT and non-HOT UPDATE, DELETE, savepoint rollbacks, COPY
# bursts), background jobs build materialized views with tiny chunks (plain,
# joined, aggregated, DISTINCT); each
# result must equal the query evaluated at the job's recorded cut-over
# snapshot.  A snapshot cannot be re-read afterwards, so every write also
# appends the row's new state to a history table (from a trigger, after the
# row lock, with the writing transaction's xid); the base tables as of the
# snapshot are rebuilt from it with pg_visible_in_snapshot().
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('exact');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'background_ddl'
background_ddl.batch_time = '10ms'
max_connections = 40
});
$node->append_conf('postgresql.conf', workers_per_job_conf());
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION background_ddl');
history_setup($node, 150000);

my $pgbench = $ENV{PGBENCH} // 'pgbench';
my $dir = PostgreSQL::Test::Utils::tempdir;
my $max_id = 150000;

# The write mix on events; a second script also changes accounts.
open my $fh, '>', "$dir/events.sql" or die;
print $fh <<"EOS";
\\set id random(1, $max_id)
\\set id2 random(1, $max_id)
\\set id3 random(1, $max_id)
\\set acc random(0, 999)
\\set kind random(1, 10)
UPDATE events SET payload = md5(random()::text) WHERE id = :id;
UPDATE events SET account = :acc WHERE id = :id2;
BEGIN;
SAVEPOINT s;
UPDATE events SET account = -1, payload = 'rolled back' WHERE id = :id3;
ROLLBACK TO SAVEPOINT s;
UPDATE events SET payload = 'after rollback ' || :acc WHERE id = :id3;
COMMIT;
DELETE FROM events WHERE id = (SELECT id FROM events WHERE id >= :id2 ORDER BY id LIMIT 1) AND :kind <= 3;
INSERT INTO events (account, payload) VALUES (:acc, 'inserted');
COPY events (account, payload) FROM PROGRAM 'seq 0 7 50 | sed -e s/\$/,copied/' WITH (FORMAT csv);
EOS
close $fh;
accounts_script($dir);

# Run pgbench scripts in the background for up to $seconds; returns its
# handle and a reference to its standard error (where a client whose write
# failed says it aborted).
sub start_writers
{
	my ($seconds, @scripts) = @_;
	my @args = ($pgbench, '-n', '-c', '4', '-j', '2', '-T', $seconds,
		(map { ('-f', $_) } @scripts),
		'-h', $node->host, '-p', $node->port, 'postgres');
	my $err = '';
	return (IPC::Run::start(\@args, '>', \my $out, '2>', \$err), \$err);
}

# Stop the writers; none of their writes may have failed meanwhile (the
# capture triggers run in their transactions)
sub stop_writers
{
	my ($writers, $err, $round) = @_;
	my $errors = stop_pgbench($writers, $err);
	unlike($errors, qr/aborted/, "$round: no writer failed") or diag($errors);
	return;
}

sub submit
{
	my ($name, $query) = @_;
	return $node->safe_psql('postgres',
		"SET background_ddl = on; CREATE MATERIALIZED VIEW $name AS $query; SELECT last_ddl_job();");
}


# Round 1: only events changes: row-level catch-up, also for the join.
my ($writers, $writers_err) = start_writers(60, "$dir/events.sql");
$node->poll_query_until('postgres', "SELECT count(*) > 200 FROM history WHERE at > now() - interval '1 min' AND payload <> 'x'");
# Each job cuts over only once writes happened while it ran (however slow
# the writers are on a busy machine)
my $hold = hold_at($node, 'cutting over');
my $filter = submit('mv_filter', 'SELECT id, account, upper(payload) AS p FROM events WHERE account < 500');
my $join = submit('mv_join', 'SELECT e.id, a.name, e.payload FROM events e JOIN accounts a USING (account)');
# Partial aggregation: a changed row recomputes its chunk's partial rows.
my $agg_query = 'SELECT account, count(*) AS n, sum(id) AS s, min(payload) AS lo, max(payload) AS hi,
	avg(length(payload)) AS len, count(*) FILTER (WHERE payload LIKE \'a%%\') AS a FROM %s GROUP BY account';
my $agg = submit('mv_agg', sprintf($agg_query, 'events'));
my $distinct = submit('mv_distinct', 'SELECT DISTINCT account % 100 AS a, length(payload) AS l FROM events');
my $latest_query = 'SELECT DISTINCT ON (account) account, id, payload FROM %s ORDER BY account, id DESC';
my $latest = submit('mv_latest', sprintf($latest_query, 'events'));
# Through a view (pulled up into the query): chunks of events, as without it.
$node->safe_psql('postgres',
	'CREATE VIEW events_view AS SELECT id, account, upper(payload) AS p FROM events WHERE account < 600');
my $via_view = submit('mv_via_view', 'SELECT id, p FROM events_view WHERE account >= 100');
is($node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $via_view"),
	'ctid chunks', 'a query over a view is computed in chunks');
is($node->safe_psql('postgres',
		"SELECT string_agg(DISTINCT strategy, ', ') FROM pg_stat_background_ddl WHERE id IN ($agg, $distinct, $latest)"),
	'partial aggregation', 'aggregate, DISTINCT and DISTINCT ON jobs use partial aggregation');
ok(cut_over_after_writes($node, $hold, 200, $filter, $join, $agg, $distinct, $via_view, $latest),
	'round 1 jobs cut over under writes');
ok( $node->poll_query_until('postgres',
		"SELECT bool_and(state = 'succeeded') FROM pg_stat_background_ddl WHERE id IN ($filter, $join, $agg, $distinct, $via_view, $latest)"),
	'round 1 jobs finished');
stop_writers($writers, $writers_err, 'round 1');
check_exact_at_cutover($node, 'mv_filter', $filter,
	"SELECT id, account, upper(payload) AS p FROM events_at(SNAP) WHERE account < 500");
check_exact_at_cutover($node, 'mv_join', $join,
	"SELECT e.id, a.name, e.payload FROM events_at(SNAP) e JOIN accounts_at(SNAP) a USING (account)");
# Under writes spread over the whole table, each job caught up, or (the
# usual case here for partial aggregation; for the row-by-row jobs when the
# machine is slow, their chunks taking long while the writers go on) the
# cut-over recomputed the whole result
my $log = slurp_file($node->logfile);
for my $job ($filter, $join, $agg, $distinct, $latest)
{
	ok($node->safe_psql('postgres', "SELECT (kind_state->>'catchup_passes')::int FROM background_ddl.job WHERE id = $job") >= 1
		  || $log =~ /job $job: the changed rows are spread over most of the table/,
		"round 1 job $job caught up, or left the spread changes to its cut-over")
	  or diag_jobs($node, $job);
}
# Writers at full speed may outpace the worker: the passes are bounded, and
# the cut-over takes the rest.
cmp_ok($node->safe_psql('postgres', "SELECT max((kind_state->>'catchup_passes')::int) FROM background_ddl.job WHERE id IN ($filter, $join, $agg, $distinct)"),
	'<=', 20, 'round 1 jobs converged within the bounded number of passes');
check_exact_at_cutover($node, 'mv_agg', $agg, sprintf($agg_query, 'events_at(SNAP)'), 900);
check_exact_at_cutover($node, 'mv_distinct', $distinct,
	'SELECT DISTINCT account % 100 AS a, length(payload) AS l FROM events_at(SNAP)', 100);
check_exact_at_cutover($node, 'mv_via_view', $via_view,
	'SELECT id, upper(payload) AS p FROM events_at(SNAP) WHERE account < 600 AND account >= 100');
check_exact_at_cutover($node, 'mv_latest', $latest, sprintf($latest_query, 'events_at(SNAP)'), 900);
check_no_leftovers($node, $_) for ($filter, $join, $agg, $distinct, $via_view, $latest);

# Round 2: the joined table changes too (its join key marks the driving rows).
($writers, $writers_err) = start_writers(60, "$dir/events.sql", "$dir/accounts.sql");
$node->poll_query_until('postgres', "SELECT count(*) > 200 FROM history WHERE tab = 'accounts' AND at > now() - interval '1 min'");
$hold = hold_at($node, 'cutting over');
my $left = submit('mv_left',
	'SELECT e.id, a.name FROM events e LEFT JOIN accounts a ON a.account = e.account AND a.account % 2 = 0');
# An aggregate over a join to the changing dimension table
my $dim_query = 'SELECT a.name, count(*) AS n, sum(e.id) AS s FROM %s e JOIN %s a USING (account)
	GROUP BY a.name HAVING count(*) > 100';
my $dim = submit('mv_agg_dim', sprintf($dim_query, 'events', 'accounts'));
ok(cut_over_after_writes($node, $hold, 200, $left, $dim), 'round 2 jobs cut over under writes');
ok( $node->poll_query_until('postgres',
		"SELECT bool_and(state = 'succeeded') FROM pg_stat_background_ddl WHERE id IN ($left, $dim)"),
	'round 2 jobs finished');
stop_writers($writers, $writers_err, 'round 2');
check_exact_at_cutover($node, 'mv_left', $left,
	"SELECT e.id, a.name FROM events_at(SNAP) e LEFT JOIN accounts_at(SNAP) a ON a.account = e.account AND a.account % 2 = 0");
check_exact_at_cutover($node, 'mv_agg_dim', $dim, sprintf($dim_query, 'events_at(SNAP)', 'accounts_at(SNAP)'), 500);
check_no_leftovers($node, $_) for ($left, $dim);

$node->stop;
done_testing();
