# On a Citus cluster (a coordinator and two workers, both libraries
# preloaded everywhere).  CREATE INDEX on a distributed or a reference table
# is a job on the coordinator and a job per shard placement on its node: the
# index valid on every placement and on the shells, used by a distributed
# plan, amcheck clean; a unique violation on one shard fails it and leaves
# no index anywhere; a worker node killed and the coordinator restarted in
# the middle, it resumes with no placement built twice; cancelled, nothing is
# left on any node.  As a table owner that is no superuser: the nodes' jobs
# are that role's, a role with only SELECT gets nothing, pause_ddl pauses
# the nodes' jobs and resume_ddl resumes them, a node down is named in
# waiting_on, and a node that refuses a drop at cancel keeps its indexes
# and the job says so.  A view or table over a distributed table runs as Citus
# runs it, in the session, with a NOTICE that says why: the distributed
# query's rows.  Tables that are not Citus's are jobs as usual.  Skipped
# where Citus is not installed, unless BGDDL_REQUIRE_CITUS says the run must
# have it (scripts/test builds it).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use Time::HiRes qw(usleep);
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
if (!-f "$pkglibdir/citus.so")
{
	plan skip_all => 'Citus is not installed (bash ../shared/deps/citus/build.sh installs it)'
	  unless $ENV{BGDDL_REQUIRE_CITUS};
	BAIL_OUT("Citus is required (BGDDL_REQUIRE_CITUS) but not installed in $pkglibdir");
}

# A node that Citus nodes reach over TCP on localhost
sub citus_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'citus, background_ddl'
listen_addresses = 'localhost'
citus.node_conninfo = 'sslmode=disable'
max_worker_processes = 24
restart_after_crash = on
background_ddl.batch_time = '20ms'
});
	$node->append_conf('pg_hba.conf', "host all all 127.0.0.1/32 trust\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	return $node;
}

my $coordinator = citus_node('coordinator');
my @workers = (citus_node('worker1'), citus_node('worker2'));
$coordinator->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('localhost', " . $coordinator->port . ")");
$coordinator->safe_psql('postgres', "SELECT citus_add_node('localhost', " . $_->port . ")")
  for @workers;
$coordinator->safe_psql('postgres', q{
CREATE EXTENSION background_ddl;
CREATE EXTENSION amcheck;
CREATE TABLE ev (id bigint, account int, p text);
SELECT create_distributed_table('ev', 'id');
INSERT INTO ev SELECT g, g % 100, 'p' || g FROM generate_series(1, 50000) g;
CREATE TABLE ref (account int PRIMARY KEY, name text);
SELECT create_reference_table('ref');
INSERT INTO ref SELECT g, 'a' || g FROM generate_series(0, 99) g;
CREATE TABLE local_t AS SELECT g AS id FROM generate_series(1, 1000) g;
});

# Run SQL with background_ddl on; returns (stdout, stderr)
sub background
{
	my ($sql) = @_;
	my ($stdout, $stderr);
	$coordinator->psql('postgres', "SET background_ddl = on; $sql",
		stdout => \$stdout, stderr => \$stderr);
	return ($stdout, $stderr);
}

my $shards = $coordinator->safe_psql('postgres',
	"SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'ev'::regclass");
ok($shards > 1, "ev has $shards shards");

sub shards_with_index
{
	my ($table, $index) = @_;
	return $coordinator->safe_psql('postgres', qq{
SELECT count(*) FROM run_command_on_shards('$table',
  \$\$SELECT count(*) FROM pg_indexes WHERE tablename = '%s' AND indexname LIKE '${index}%%'\$\$)
 WHERE success AND result = '1'});
}

# The nodes' background_ddl jobs that built the placements of coordinator job $job
sub node_jobs
{
	my ($job) = @_;
	my $count = 0;
	$count += $_->safe_psql('postgres',
		"SELECT count(*) FROM background_ddl.job WHERE idempotency_key LIKE 'background_ddl job $job on %'")
	  for ($coordinator, @workers);
	return $count;
}

# Placements (of shards of $table) whose index named like $index is valid
sub valid_placements
{
	my ($table, $index) = @_;
	return $coordinator->safe_psql('postgres', qq{
SELECT count(*) FROM run_command_on_placements('$table',
  \$\$SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = '%s'::regclass AND c.relname LIKE '${index}\\_%%' AND i.indisvalid\$\$)
 WHERE success AND result = '1'});
}

# Indexes named like $index anywhere: placements, shells, the coordinator.
# (Citus hides a node's shards and their indexes from queries on pg_class,
# not on pg_index.)
sub indexes_anywhere
{
	my ($table, $index) = @_;
	my $count = 0;
	$count += $_->safe_psql('postgres',
		"SELECT count(*) FROM pg_index WHERE indexrelid::regclass::text LIKE '$index%'")
	  for ($coordinator, @workers);
	return $count;
}

# Poll until placements' jobs on a node wait at its hold point (as many as
# background_ddl.citus_jobs_per_node may)
sub held_on
{
	my ($node) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted");
}

my $placements = $coordinator->safe_psql('postgres',
	"SELECT count(*) FROM pg_dist_placement JOIN pg_dist_shard USING (shardid)
	  WHERE logicalrelid = 'ev'::regclass");

# CREATE INDEX on a distributed table: one job, a job per placement on its
# node, the index valid on every placement, on the shells and on the
# coordinator, used by a distributed query, amcheck clean on each shard.
my $job = submit_job($coordinator, 'CREATE INDEX ev_p_idx ON ev (p)');
like($job, qr/^\d+$/, 'CREATE INDEX on a distributed table: a job');
ok(wait_job_state($coordinator, $job, 'succeeded'), 'the index job succeeded');
is(valid_placements('ev', 'ev_p_idx'), $shards, 'the index is valid on every shard');
is(node_jobs($job), $placements, 'one node job per placement');
is( $coordinator->safe_psql('postgres',
		"SELECT indisvalid FROM pg_index WHERE indexrelid = 'ev_p_idx'::regclass"),
	't', 'the coordinator\'s index is valid');
is( $coordinator->safe_psql('postgres', q{
SELECT count(*) FROM run_command_on_workers(
  $$SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.ev_p_idx'::regclass$$)
 WHERE success AND result = 't'}),
	scalar(@workers), 'the shells of the workers have it, valid');
is( $coordinator->safe_psql('postgres', q{
SELECT count(*) FROM run_command_on_shards('ev',
  $$SELECT bool_and(bt_index_check(indexrelid, true) IS NOT NULL) FROM pg_index WHERE indrelid = '%s'::regclass$$)
 WHERE success AND result = 't'}),
	$shards, 'amcheck: every shard\'s index is consistent with its table');
like( $coordinator->safe_psql('postgres', q{
SET citus.propagate_set_commands = 'local';
BEGIN;
SET LOCAL enable_seqscan = off;
EXPLAIN SELECT * FROM ev WHERE p = 'p77';
COMMIT;}),
	qr/(Index (Only )?Scan using|Bitmap Index Scan on) ev_p_idx_\d+/, 'a distributed query uses it');
like( $coordinator->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	qr/^an index per shard placement: $placements placements on 2 Citus nodes/,
	'the strategy names the placements and the nodes');

# A unique index must contain the distribution column, as Citus requires
my (undef, $stderr) = background('CREATE UNIQUE INDEX ev_account_u ON ev (account)');
like($stderr, qr/a unique index on distributed table "ev" must contain its distribution column "id"/,
	'a unique index without the distribution column: refused at submit');

# A unique violation on one shard: the job fails with PostgreSQL's error,
# and leaves no index anywhere
$coordinator->safe_psql('postgres', "INSERT INTO ev VALUES (7, 7, 'dup')");
$job = submit_job($coordinator, 'CREATE UNIQUE INDEX ev_u ON ev (id)');
ok(wait_job_state($coordinator, $job, 'failed'), 'a duplicate on one shard: the job failed');
like( $coordinator->safe_psql('postgres', "SELECT error || ' / ' || error_sqlstate FROM pg_stat_background_ddl WHERE id = $job"),
	qr/could not create unique index "ev_u_\d+" \/ 23505/, 'with the shard\'s error');
ok($coordinator->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_index WHERE indexrelid::regclass::text LIKE 'ev\\_u%'"),
	'the coordinator\'s index is gone');
ok( $workers[0]->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_index WHERE indexrelid::regclass::text LIKE 'ev\\_u%'")
	  && $workers[1]->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_index WHERE indexrelid::regclass::text LIKE 'ev\\_u%'"),
	'no index of it is left on any node');
$coordinator->safe_psql('postgres', "DELETE FROM ev WHERE p = 'dup'");

# A unique index that holds: a duplicate is refused by the shard
$job = submit_job($coordinator, 'CREATE UNIQUE INDEX ev_id_idx ON ev (id)');
ok(wait_job_state($coordinator, $job, 'succeeded'), 'CREATE UNIQUE INDEX: succeeded');
is(valid_placements('ev', 'ev_id_idx'), $shards, 'CREATE UNIQUE INDEX: valid on every shard');
my ($rc, $out, $err) = $coordinator->psql('postgres', "INSERT INTO ev VALUES (1, 1, 'dup')");
like($err, qr/duplicate key value violates unique constraint "ev_id_idx_\d+"/,
	'CREATE UNIQUE INDEX: a duplicate is refused by the shard');

# A worker node killed in the middle of a placement's build, and the
# coordinator restarted: resumed, each placement built by one node job
my $hold = hold_at($workers[0], 'chunk 0');
$job = submit_job($coordinator, 'CREATE INDEX ev_a_idx ON ev (account, p)');
ok(held_on($workers[0]), 'a placement\'s job held on worker 1');
# kill -9 of a held job's worker: the node's postmaster restarts every process
kill 'KILL', $workers[0]->safe_psql('postgres',
	"SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted LIMIT 1");
$coordinator->restart;
ok($workers[0]->poll_query_until('postgres', 'SELECT true'), 'worker 1 is back after its crash');
$workers[0]->safe_psql('postgres',
	"ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();");
ok(wait_job_state($coordinator, $job, 'succeeded'), 'after the crash and the restart: succeeded');
is(valid_placements('ev', 'ev_a_idx'), $shards, 'valid on every shard');
is(node_jobs($job), $placements, 'no placement was built by two jobs');

# Cancel in the middle: nothing left on any node
$hold = hold_at($workers[1], 'chunk 0');
$job = submit_job($coordinator, 'CREATE INDEX ev_c_idx ON ev (p, account)');
ok(held_on($workers[1]), 'a placement\'s job held on worker 2');
ok($coordinator->poll_query_until('postgres',
		"SELECT waiting_on ~ '^the shards'' indexes \\(localhost:\\d+: \\d+ of 16 done, \\d running; localhost:\\d+: \\d+ of 16 done, \\d running\\)\$'
		   FROM pg_stat_background_ddl WHERE id = $job"),
	'waiting_on: each node\'s placements done and running');
ok($coordinator->poll_query_until('postgres',
		"SELECT rows_done IS NOT NULL AND chunks_done > 0 FROM pg_stat_background_ddl WHERE id = $job"),
	'some placements are done');
$coordinator->safe_psql('postgres', "SELECT cancel_ddl($job)");
release_hold($workers[1], $hold);
ok(wait_job_state($coordinator, $job, 'cancelled'), 'cancelled');
ok($coordinator->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_index WHERE indexrelid::regclass::text LIKE 'ev\\_c\\_idx%'")
	  && $workers[0]->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_index WHERE indexrelid::regclass::text LIKE 'ev\\_c\\_idx%'")
	  && $workers[1]->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_index WHERE indexrelid::regclass::text LIKE 'ev\\_c\\_idx%'"),
	'cancel: no index of it on any node');
ok( $workers[1]->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_background_ddl WHERE state NOT IN ('succeeded', 'failed', 'cancelled')"),
	'cancel: no job of it left running on the nodes');

# As a table owner that is not a superuser.  The nodes' jobs are that
# role's; a role with only SELECT cannot build one nor control the owner's.
$coordinator->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
CREATE TABLE al (id bigint, p text);
SELECT create_distributed_table('al', 'id');
INSERT INTO al SELECT g, 'p' || g FROM generate_series(1, 20000) g;
GRANT SELECT ON al TO bob;
});

# Run SQL on the coordinator as a role; returns (stdout, stderr)
sub as_role
{
	my ($role, $sql) = @_;
	my ($stdout, $stderr);
	$coordinator->psql('postgres', $sql, stdout => \$stdout, stderr => \$stderr,
		extra_params => [ '-U', $role ]);
	return ($stdout, $stderr);
}

# Poll (bounded, as the usual poll) until a query run as a role returns t
sub poll_as
{
	my ($role, $sql) = @_;
	for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default; $i++)
	{
		my ($out) = as_role($role, $sql);
		return 1 if defined $out && $out eq 't';
		usleep(100_000);
	}
	return 0;
}

# The states of the nodes' jobs of coordinator job $job on a node
sub node_job_states
{
	my ($node, $job) = @_;
	return $node->safe_psql('postgres', qq{
SELECT string_agg(DISTINCT state, ',' ORDER BY state) FROM background_ddl.job
 WHERE idempotency_key LIKE 'background_ddl job $job on %'});
}

(undef, $stderr) = as_role('bob', 'SET background_ddl = on; CREATE INDEX al_b_idx ON al (p)');
like($stderr, qr/must be owner of table al/, 'a role with only SELECT: refused at submit');
$hold = hold_at($workers[1], 'chunk 0');
$job = submit_job($coordinator, 'CREATE INDEX al_p_idx ON al (p)', user => 'alice');
ok(held_on($workers[1]), 'the owner\'s job: a placement\'s job held on worker 2');
ok(poll_as('alice', "SELECT waiting_on LIKE 'the shards'' indexes (%' FROM pg_stat_background_ddl WHERE id = $job"),
	'the owner reads waiting_on');
(undef, $stderr) = as_role('bob', "SELECT pause_ddl($job)");
like($stderr, qr/permission denied to pause background DDL job $job/, 'a role with only SELECT cannot pause it');
(undef, $stderr) = as_role('bob', "SELECT cancel_ddl($job)");
like($stderr, qr/permission denied to cancel background DDL job $job/, 'nor cancel it');
is( $workers[1]->safe_psql('postgres', qq{
SELECT count(*) FROM background_ddl.job
 WHERE idempotency_key LIKE 'background_ddl job $job on %' AND owner_oid <> 'alice'::regrole}),
	'0', 'the nodes\' jobs are the owner\'s');

# pause_ddl pauses the nodes' jobs still running; resume_ddl resumes them
($out) = as_role('alice', "SELECT pause_ddl($job)");
is($out, 't', 'pause_ddl as the owner');
like(node_job_states($workers[1], $job), qr/^(paused|paused,succeeded)$/,
	'paused: its jobs on worker 2 are paused');
like(node_job_states($workers[0], $job), qr/^(paused|paused,succeeded|succeeded)$/,
	'paused: none runs on worker 1');
release_hold($workers[1], $hold);
like(node_job_states($workers[1], $job), qr/^(paused|paused,succeeded)$/,
	'the hold released: still paused until resume_ddl');
($out) = as_role('alice', "SELECT resume_ddl($job)");
ok(wait_job_state($coordinator, $job, 'succeeded'), 'resumed: the owner\'s job succeeded');
is(valid_placements('al', 'al_p_idx'), $shards, 'resumed: valid on every shard');
is(node_jobs($job), $placements, 'resumed: one node job per placement');

# A worker node down: the owner sees which in waiting_on; back up, the job ends
$workers[1]->stop;
$job = submit_job($coordinator, 'CREATE INDEX al_i_idx ON al (id, p)', user => 'alice');
my $port2 = $workers[1]->port;
ok(poll_as('alice', "SELECT waiting_on ~ '^Citus node localhost:$port2: .*failed'
                       FROM pg_stat_background_ddl WHERE id = $job"),
	'a node down: waiting_on names it');
$workers[1]->start;
ok(wait_job_state($coordinator, $job, 'succeeded'), 'the node back: succeeded');
is(valid_placements('al', 'al_i_idx'), $shards, 'the node back: valid on every shard');

# At cancel, a node that refuses to drop its placements' indexes keeps them
# and the job says so (a WARNING with it); the other nodes' and the
# coordinator's are dropped.
$workers[1]->safe_psql('postgres', q{
SET citus.enable_ddl_propagation TO off;
CREATE FUNCTION refuse_drop() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
	IF current_query() LIKE '%al_r_idx%' THEN RAISE EXCEPTION 'refused by the test'; END IF;
END $$;
CREATE EVENT TRIGGER refuse_drop ON ddl_command_start WHEN TAG IN ('DROP INDEX')
  EXECUTE FUNCTION refuse_drop();
});
$hold = hold_at($workers[0], 'chunk 0');
$job = submit_job($coordinator, 'CREATE INDEX al_r_idx ON al (p, id)', user => 'alice');
ok(poll_as('alice', "SELECT waiting_on LIKE '%localhost:$port2: 16 of 16 done%' FROM pg_stat_background_ddl WHERE id = $job"),
	'worker 2 built its placements');
($out) = as_role('alice', "SELECT cancel_ddl($job)");
release_hold($workers[0], $hold);
ok(wait_job_state($coordinator, $job, 'cancelled'), 'cancelled while worker 2 refuses drops');
ok( $workers[0]->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_index WHERE indexrelid::regclass::text LIKE 'al\\_r\\_idx%'"),
	'worker 1 keeps no index of it');
is(indexes_anywhere('al', 'al_r_idx'), 16, 'only worker 2\'s placements\' indexes are left');
is( (as_role('alice', qq{
SELECT count(*) FILTER (WHERE message ~ '^could not remove the index of shard \\d+ on Citus node localhost:$port2\$'
                          AND hint LIKE 'Run cancel_ddl(%) there, or DROP INDEX public.al_r_idx_% there.')
       || ' ' || count(*) FILTER (WHERE message = 'could not remove the index "al_r_idx" from the shell table on Citus node localhost:$port2')
  FROM ddl_messages($job) WHERE severity = 'WARNING'}))[0],
	'16 1', 'the job keeps a WARNING per index kept, with what to run there');
$workers[1]->safe_psql('postgres', q{
SET citus.enable_ddl_propagation TO off;
DROP EVENT TRIGGER refuse_drop;
DO $$DECLARE i text; BEGIN
  FOR i IN SELECT indexrelid::regclass::text FROM pg_index WHERE indexrelid::regclass::text LIKE 'al_r_idx%' LOOP
    EXECUTE format('DROP INDEX %s', i);
  END LOOP; END $$;
});

# A view, a table and a refresh over the distributed table: the distributed
# query's rows.
my $expected = $coordinator->safe_psql('postgres',
	'SELECT count(*), sum(n) FROM (SELECT account, count(*) AS n FROM ev GROUP BY account) q');
background('CREATE MATERIALIZED VIEW ev_mv AS SELECT account, count(*) AS n FROM ev GROUP BY account');
is($coordinator->safe_psql('postgres', 'SELECT count(*), sum(n) FROM ev_mv'),
	$expected, 'CREATE MATERIALIZED VIEW over a distributed table: the distributed result');
background('CREATE TABLE ev_t AS SELECT account, count(*) AS n FROM ev GROUP BY account');
is($coordinator->safe_psql('postgres', 'SELECT count(*), sum(n) FROM ev_t'),
	$expected, 'CREATE TABLE AS over a distributed table: the distributed result');
$coordinator->safe_psql('postgres', "INSERT INTO ev VALUES (100001, 1000, 'new')");
background('REFRESH MATERIALIZED VIEW ev_mv');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM ev_mv'),
	'101', 'REFRESH over a distributed table: the new distributed result');
background('CREATE MATERIALIZED VIEW ref_mv AS SELECT e.id, r.name FROM ev e JOIN ref r USING (account) WHERE e.id <= 10');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM ref_mv'),
	'10', 'a view joining a reference table: its rows');

# CREATE INDEX on a reference table: a job, on every placement
$job = submit_job($coordinator, 'CREATE INDEX ref_name ON ref (name)');
ok(wait_job_state($coordinator, $job, 'succeeded'), 'CREATE INDEX on a reference table: succeeded');
my $ref_placements = $coordinator->safe_psql('postgres',
	"SELECT count(*) FROM pg_dist_placement JOIN pg_dist_shard USING (shardid)
	  WHERE logicalrelid = 'ref'::regclass");
is(valid_placements('ref', 'ref_name'), $ref_placements, 'CREATE INDEX on a reference table: on every placement');

# A table that is not Citus's: a job as usual, on the coordinator.
$job = submit_job($coordinator,
	'CREATE MATERIALIZED VIEW local_mv AS SELECT id FROM local_t WHERE id % 2 = 0');
ok(wait_job_state($coordinator, $job, 'succeeded'), 'a local table: a job that succeeds');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM local_mv'), '500',
	'a local table: its content');

$_->stop for ($coordinator, @workers);
done_testing();
