# Views, tables and refreshes over a partitioned table are computed in
# chunks of its partitions (query_driving.c), on a partition set made by
# pg_partman (daily partitions and a default) with a day sub-partitioned by
# hash:
#  - exact at the cut-over snapshot while pgbench writes, with updates that
#    move rows across partitions (into the default one too), for a filter, a
#    partial aggregation, a CREATE TABLE AS, a REFRESH and a query that
#    partition pruning restricts to some partitions;
#  - partitions created, attached, dropped and detached (concurrently) in
#    the middle of a job restart its build with a new capture, and the
#    result is exact;
#  - killed (kill -9) in the middle, a job resumes from its checkpoints;
#  - cancelled, a job leaves no trigger on any partition;
#  - a role with SELECT on the partitioned table only (and TRIGGER on its
#    partitions) gets chunks, as its query needs no privilege on them; that
#    privilege is checked at every chunk.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;
use IPC::Run;

my $node = bgddl_node('partviews', q{
restart_after_crash = on
background_ddl.batch_time = '10ms'
max_connections = 40
});

my $rows = 90000;
$node->safe_psql('postgres', qq{
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE TABLE events (id bigint NOT NULL, day timestamptz NOT NULL, account int NOT NULL,
                     payload text) PARTITION BY RANGE (day);
SELECT partman.create_parent('public.events', 'day', 'native', 'daily', p_premake := 2,
                             p_start_partition := (current_date - 3)::text);
CREATE TABLE events_hashday PARTITION OF events
  FOR VALUES FROM (current_date + 20) TO (current_date + 21) PARTITION BY HASH (account);
CREATE TABLE events_hashday_0 PARTITION OF events_hashday FOR VALUES WITH (MODULUS 2, REMAINDER 0);
-- a partition whose columns are in another order than the partitioned table's
CREATE TABLE events_hashday_1 (payload text, account int NOT NULL, day timestamptz NOT NULL,
                               id bigint NOT NULL);
ALTER TABLE events_hashday ATTACH PARTITION events_hashday_1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);

-- Every row version, for the tables as of a snapshot (see history_setup)
CREATE TABLE history (seq bigserial, xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
                      at timestamptz NOT NULL DEFAULT clock_timestamp(),
                      id bigint NOT NULL, day timestamptz, account int, payload text,
                      deleted boolean NOT NULL);
CREATE FUNCTION record_history() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO history (id, deleted) VALUES (OLD.id, true);
  ELSE
    INSERT INTO history (id, day, account, payload, deleted)
      VALUES (NEW.id, NEW.day, NEW.account, NEW.payload, false);
  END IF;
  RETURN NULL;
END \$\$;
-- (a cross-partition update fires it as a delete, then an insert)
CREATE TRIGGER history AFTER INSERT OR UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION record_history();
CREATE FUNCTION events_at(snap pg_snapshot)
  RETURNS TABLE (id bigint, day timestamptz, account int, payload text)
LANGUAGE sql STABLE AS \$\$
  SELECT id, day, account, payload FROM (
    SELECT DISTINCT ON (id) id, day, account, payload, deleted FROM history
     WHERE pg_visible_in_snapshot(xid, snap)
     ORDER BY id, seq DESC) h
   WHERE NOT deleted \$\$;

-- 6 daily partitions (3 days back, today, 2 ahead), the default (30 days
-- ahead) and the hash-partitioned day: 9 leaves of 10,000 rows
INSERT INTO events
  SELECT g, CASE WHEN g % 9 < 6 THEN current_date - 3 + g % 9
                 WHEN g % 9 = 6 THEN current_date + 30 ELSE current_date + 20 END
            + (g % 1000) * interval '1 minute',
         g % 500, md5(g::text)
    FROM generate_series(1, $rows) g;
CREATE INDEX ON events (id);
CREATE SEQUENCE new_ids START 1000000;  -- ids stay unique (events_at needs it)
ANALYZE events;
});
is( $node->safe_psql('postgres', "SELECT count(*) FROM pg_partition_tree('events') WHERE isleaf"),
	'9', 'pg_partman made 7 leaves, and the hash-partitioned day 2');

# 1. Exact under writes that move rows across partitions.
my $pgbench = $ENV{PGBENCH} // 'pgbench';
my $dir = PostgreSQL::Test::Utils::tempdir;
open my $fh, '>', "$dir/moves.sql" or die;
print $fh <<"EOS";
\\set id random(1, $rows)
\\set id2 random(1, $rows)
\\set acc random(0, 499)
\\set d random(-3, 2)
UPDATE events SET day = current_date + :d + interval '7 minutes' WHERE id = :id;
UPDATE events SET account = :acc, payload = md5(random()::text) WHERE id = :id2;
UPDATE events SET day = current_date + 30 WHERE id = :id2 + 1 AND :acc < 50;
UPDATE events SET day = current_date + 20, account = :acc WHERE id = :id2 + 2 AND :acc < 100;
DELETE FROM events WHERE id = :id2 + 3 AND :acc < 100;
INSERT INTO events VALUES (nextval('new_ids'), current_date + :d, :acc, 'inserted');
EOS
close $fh;
my @pgbench = ($pgbench, '-n', '-c', '4', '-j', '2', '-T', '60', '-f', "$dir/moves.sql",
	'-h', $node->host, '-p', $node->port, 'postgres');
my $writers = IPC::Run::start(\@pgbench, '>', \my $out, '2>', \my $err);
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 200 FROM history WHERE at > now() - interval '1 min'"),
	'the writers write');

my $today = $node->safe_psql('postgres', 'SELECT current_date');
my %query = (
	mv_filter => 'SELECT id, day, account, upper(payload) AS p FROM %s WHERE account < 250',
	mv_agg => 'SELECT account, count(*) AS n, sum(id) AS s, min(day) AS first, max(payload) AS m
	             FROM %s GROUP BY account',
	t_ctas => 'SELECT id, account, payload FROM %s WHERE id % 3 = 0',
	mv_pruned => "SELECT id, day, account FROM %s WHERE day >= timestamptz '$today'");
# A materialized view refreshed while the writers write
$node->safe_psql('postgres', 'CREATE MATERIALIZED VIEW mv_refresh AS ' . sprintf($query{mv_filter}, 'events'));
$query{mv_refresh} = $query{mv_filter};
my %job = (mv_refresh => submit_job($node, 'REFRESH MATERIALIZED VIEW mv_refresh'));
for my $name (grep { $_ ne 'mv_refresh' } sort keys %query)
{
	my $kind = $name =~ /^t_/ ? 'TABLE' : 'MATERIALIZED VIEW';
	$job{$name} = submit_job($node, "CREATE $kind $name AS " . sprintf($query{$name}, 'events'));
}
is( $node->safe_psql('postgres',
		"SELECT string_agg(strategy, ', ' ORDER BY target) FROM pg_stat_background_ddl
		  WHERE id IN ($job{mv_filter}, $job{mv_agg}, $job{t_ctas}, $job{mv_refresh})"),
	'partial aggregation of 9 partitions of "events", ctid chunks of 9 partitions of "events", '
	  . 'ctid chunks of 9 partitions of "events", ctid chunks of 9 partitions of "events"',
	'the jobs over the partitioned table run in chunks of its 9 partitions');
# Pruned at submit: today and the days after (3 daily, the default and the
# hash day's 2), not the 3 days back.
is( $node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job{mv_pruned}"),
	'ctid chunks of 6 partitions of "events"', 'partition pruning leaves 6 partitions to read');
for my $name (sort keys %query)
{
	check_exact_at_cutover($node, $name, $job{$name}, sprintf($query{$name}, 'events_at(SNAP)'), 400);
	# (the aggregate's units all change: its cut-over may take them all; on
	# a slow machine the writers can spread their changes over the whole
	# table before another job's second chunk too, which the job logs)
	next if $name eq 'mv_agg';
	my $chunks = $node->safe_psql('postgres',
		"SELECT chunks_done FROM pg_stat_background_ddl WHERE id = $job{$name}");
	ok( $chunks > 1
		  || slurp_file($node->logfile) =~
		  /job $job{$name}: the changed rows are spread over most of the table/,
		"$name: computed in $chunks chunks, or left the spread changes to its cut-over");
}
check_no_leftovers($node, $job{$_}) for sort keys %job;
ok( $node->safe_psql('postgres',
		"SELECT sum(rows_recomputed) > 0 FROM pg_stat_background_ddl
		  WHERE id IN ($job{mv_filter}, $job{t_ctas}, $job{mv_pruned}, $job{mv_refresh})"),
	'the catch-up recomputed changed rows');
$writers->kill_kill;
$writers->finish;

# 2. A partition created, one attached, one dropped and one (of the
# sub-partitioned day) detached concurrently in the middle of a job restart its build; the result
# is exact.
my $q2 = 'SELECT id, day, account, payload FROM events WHERE account % 7 <> 3';
$node->safe_psql('postgres', q{
CREATE TABLE events_attached (LIKE events);
INSERT INTO events_attached SELECT 600000 + g, current_date + 45, g % 500, 'attached' FROM generate_series(1, 1000) g;
});
my $oldest = $node->safe_psql('postgres',
	"SELECT min(relid::regclass::text) FROM pg_partition_tree('events') WHERE relid::regclass::text ~ '^events_p'");
my $hold = hold_at($node, 'chunk 3');
my $job = submit_job($node, "CREATE MATERIALIZED VIEW mv_tree AS $q2");
ok(held_at_hold($node), 'the job waits after three chunks');
$node->safe_psql('postgres', qq{
CREATE TABLE events_new PARTITION OF events FOR VALUES FROM (current_date + 40) TO (current_date + 41);
INSERT INTO events SELECT 500000 + g, current_date + 40, g % 500, 'new' FROM generate_series(1, 2000) g;
ALTER TABLE events ATTACH PARTITION events_attached FOR VALUES FROM (current_date + 45) TO (current_date + 46);
DROP TABLE $oldest;
});
$node->safe_psql('postgres', 'ALTER TABLE events_hashday DETACH PARTITION events_hashday_1 CONCURRENTLY');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
ok( $node->log_contains(
		"background DDL job $job: a partition of \"events\" was attached, detached, created, dropped or rewritten, restarting the backfill"),
	'the change of the tree restarted the build');
is(differences($node, 'mv_tree', $q2), '0', 'its content equals the query on the new tree');
is( $node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	'ctid chunks of 9 partitions of "events"', 'it read the partitions of the new tree');
check_no_leftovers($node, $job);
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_trigger WHERE tgrelid = 'events_hashday_1'::regclass AND tgname LIKE 'background%'"),
	'0', 'the detached partition keeps no capture trigger');

# 3. Killed (kill -9) in the middle: the job resumes from its checkpoints.
$hold = hold_at($node, 'chunk 2');
$job = submit_job($node, "CREATE MATERIALIZED VIEW mv_crash AS $q2");
ok(held_at_hold($node), 'the job waits after two chunks');
my $before = checkpoints($node, $job);
my $pid = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_background_ddl WHERE id = $job");
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.test_hold_point');
kill_and_recover($node, $pid);
eval { $hold->quit };
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded after the crash');
ok(chunks_kept($before, checkpoints($node, $job), $node), "the chunks checkpointed before the crash were kept ($before)");
is($node->safe_psql('postgres', "SELECT attempts FROM pg_stat_background_ddl WHERE id = $job"),
	'2', 'one resume');
is(differences($node, 'mv_crash', $q2), '0', 'its content equals the query');

# 4. Cancelled, a job leaves no trigger on any partition.
$hold = hold_at($node, 'chunk 2');
$job = submit_job($node, "CREATE MATERIALIZED VIEW mv_cancelled AS $q2");
ok(held_at_hold($node), 'the job waits after two chunks');
is( $node->safe_psql('postgres',
		"SELECT count(DISTINCT tgrelid) FROM pg_trigger WHERE tgname LIKE 'background\\_ddl\\_capture\\_${job}\\_%'"),
	'9', 'the job captures the changes of each of the 9 partitions');
is($node->safe_psql('postgres', "SELECT cancel_ddl($job)"), 't', 'cancel_ddl');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'the job is cancelled');
check_no_leftovers($node, $job);
is($node->safe_psql('postgres', "SELECT to_regclass('mv_cancelled')"), '', 'no view left');

# 5. A role with SELECT on the partitioned table only, and TRIGGER on its
# partitions: chunks, without any privilege to read the partitions.
$node->safe_psql('postgres', q{
CREATE ROLE reader LOGIN;
GRANT SELECT ON events TO reader;
GRANT CREATE ON SCHEMA public TO reader;
SELECT format('GRANT TRIGGER ON %s TO reader', relid::regclass)
  FROM pg_partition_tree('events') WHERE isleaf \gexec
});
$job = submit_job($node, "CREATE MATERIALIZED VIEW mv_reader AS $q2", user => 'reader');
ok(wait_job_state($node, $job, 'succeeded'), 'the job of reader succeeded');
is( $node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	'ctid chunks of 9 partitions of "events"', 'in chunks of the partitions');
is(differences($node, 'mv_reader', $q2), '0', 'its content equals the query');
# Its privilege on the partitioned table is checked at every chunk: revoked
# after the first (the job's only worker held there), the job fails.
$node->safe_psql('postgres',
	'ALTER SYSTEM SET background_ddl.max_workers_per_job = 1; SELECT pg_reload_conf();');
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node, "CREATE MATERIALIZED VIEW mv_revoked AS $q2", user => 'reader');
ok(held_at_hold($node), 'the job waits after its first chunk');
$node->safe_psql('postgres', 'REVOKE SELECT ON events FROM reader');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'SELECT on the partitioned table revoked: the job failed');
is( $node->safe_psql('postgres', "SELECT error_sqlstate || ' ' || error FROM pg_stat_background_ddl WHERE id = $job"),
	'42501 permission denied for table events', "with PostgreSQL's error");
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET background_ddl.max_workers_per_job; SELECT pg_reload_conf(); GRANT SELECT ON events TO reader;');

$node->safe_psql('postgres', 'REVOKE TRIGGER ON events_new FROM reader');
$job = submit_job($node, "CREATE MATERIALIZED VIEW mv_reader2 AS $q2", user => 'reader');
ok(wait_job_state($node, $job, 'succeeded'), 'without TRIGGER on one partition, the job succeeded');
is( $node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	'one batch: no TRIGGER privilege on table "events_new"', 'in one batch, and says why');

$node->stop;
done_testing();
