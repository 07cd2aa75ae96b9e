# On a Citus cluster (a coordinator and two workers, both libraries
# preloaded everywhere), a statement of a job kind on a distributed or a
# reference table runs as Citus runs it, in the session, with a NOTICE that
# says why, even with background_ddl on: the index is on every shard (and a
# unique one enforced there), a view or table over a distributed table has
# the distributed query's rows.  Tables that are not Citus's are jobs as
# usual.  Skipped where Citus is not installed, unless BGDDL_REQUIRE_CITUS
# says the run must have it (scripts/test builds it).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
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

# CREATE INDEX on a distributed table: on every shard, in the session.
my (undef, $stderr) = background('CREATE INDEX ev_p_idx ON ev (p)');
like($stderr, qr/runs in this session.*\n.*"ev" is a Citus table/,
	'CREATE INDEX on a distributed table: runs in the session, saying why');
is(shards_with_index('ev', 'ev_p_idx'), $shards, 'CREATE INDEX: the index is on every shard');

# A unique index is enforced on the shards.
background('CREATE UNIQUE INDEX ev_id_idx ON ev (id)');
is(shards_with_index('ev', 'ev_id_idx'), $shards, 'CREATE UNIQUE INDEX: on every shard');
my ($rc, $out, $err) = $coordinator->psql('postgres', "INSERT INTO ev VALUES (1, 1, 'dup')");
like($err, qr/duplicate key value violates unique constraint "ev_id_idx_\d+"/,
	'CREATE UNIQUE INDEX: a duplicate is refused by the shard');

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

# CREATE INDEX on a reference table: on its placements.
background('CREATE INDEX ref_name ON ref (name)');
is($coordinator->safe_psql('postgres', q{
SELECT count(*) FROM run_command_on_placements('ref',
  $$SELECT count(*) FROM pg_indexes WHERE tablename = '%s' AND indexname LIKE 'ref_name%%'$$)
 WHERE success AND result = '1'}),
	$coordinator->safe_psql('postgres',
		"SELECT count(*) FROM pg_dist_placement JOIN pg_dist_shard USING (shardid)
		  WHERE logicalrelid = 'ref'::regclass"),
	'CREATE INDEX on a reference table: on every placement');

is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_background_ddl'),
	'0', 'no job for a statement on Citus tables');

# A table that is not Citus's: a job as usual, on the coordinator.
my $job = submit_job($coordinator,
	'CREATE MATERIALIZED VIEW local_mv AS SELECT id FROM local_t WHERE id % 2 = 0');
ok(wait_job_state($coordinator, $job, 'succeeded'), 'a local table: a job that succeeds');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM local_mv'), '500',
	'a local table: its content');

$_->stop for ($coordinator, @workers);
done_testing();
