# Loading rules and life across databases: the library must be preloaded;
# jobs run in every database that has them; no scheduler stays connected to
# a database without work (it would block DROP DATABASE); a database dropped
# WITH (FORCE) under a running job does not disturb the others.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('setup');
$node->init;
$node->start;

# Not preloaded: CREATE EXTENSION says how to fix it.
my ($rc, $stdout, $stderr) = $node->psql('postgres', 'CREATE EXTENSION background_ddl');
isnt($rc, 0, 'CREATE EXTENSION fails without shared_preload_libraries');
like($stderr, qr/background_ddl must be loaded via shared_preload_libraries/, 'error says why');
like($stderr, qr/HINT:  Add background_ddl to shared_preload_libraries/, 'hint says how to fix it');

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'background_ddl'");
$node->restart;

# Submitting in a database without the extension.
($rc, $stdout, $stderr) = $node->psql('postgres',
	'SET background_ddl = on; CREATE MATERIALIZED VIEW m AS SELECT 1 AS x');
isnt($rc, 0, 'submit without the extension fails');
like($stderr, qr/extension "background_ddl" is not installed in this database/, 'error says why');

for my $db ('db1', 'db2', 'db3')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
		CREATE EXTENSION background_ddl;
		CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 100000) g;
		CREATE FUNCTION slow(int) RETURNS int LANGUAGE plpgsql AS
		  $$ BEGIN PERFORM pg_sleep(0.01); RETURN $1; END $$;});
}

# Jobs in two databases at once.
for my $db ('db1', 'db2')
{
	$node->safe_psql($db, 'SET background_ddl = on; CREATE MATERIALIZED VIEW m AS SELECT id FROM t WHERE id % 2 = 0');
}
for my $db ('db1', 'db2')
{
	is($node->safe_psql($db, "SELECT wait_ddl(last_ddl_job_id, '60s') FROM (SELECT max(id) AS last_ddl_job_id FROM pg_stat_background_ddl) j"),
		'succeeded', "$db: job succeeded");
	is($node->safe_psql($db, 'SELECT count(*) FROM m'), '50000', "$db: content");
}

# Once the jobs are done, nothing of ours stays connected to a database.
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type LIKE 'background_ddl%' AND datname IS NOT NULL"),
	'schedulers and workers leave databases without work');
$node->safe_psql('postgres', 'DROP DATABASE db2');
pass('DROP DATABASE of a database that had jobs works');

# A long job in db3, dropped WITH (FORCE) while it runs.
$node->safe_psql('db3', 'SET background_ddl = on; CREATE MATERIALIZED VIEW slow_mv AS SELECT slow(id) FROM t');
ok( $node->poll_query_until('db3',
		"SELECT count(*) = 1 FROM pg_stat_background_ddl WHERE state = 'running'"),
	'db3: job running');
$node->safe_psql('postgres', 'DROP DATABASE db3 WITH (FORCE)');
pass('DROP DATABASE WITH (FORCE) stops the job with its database');

# The launcher and db1 carry on.
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'background_ddl launcher'"),
	'1', 'launcher still running');
$node->safe_psql('db1', 'SET background_ddl = on; CREATE MATERIALIZED VIEW m2 AS SELECT id FROM t WHERE id < 10');
is($node->safe_psql('db1', "SELECT wait_ddl(max(id), '60s') FROM pg_stat_background_ddl"),
	'succeeded', 'db1: a new job still runs');

# Finished jobs older than background_ddl.history_retention are purged, with
# whatever recomputed rows they left (that table has no foreign key to the
# jobs: a row left behind, as a crash between a job's end and its clean-up
# could leave one, goes with its job).
my $old_job = $node->safe_psql('db1', 'SELECT max(id) FROM pg_stat_background_ddl');
$node->safe_psql('db1', qq{INSERT INTO background_ddl.recomputed VALUES ($old_job, '(0,1)', NULL)});
$node->safe_psql('postgres',
	"ALTER SYSTEM SET background_ddl.history_retention = 0; SELECT pg_reload_conf();");
$node->safe_psql('db1', 'SET background_ddl = on; CREATE MATERIALIZED VIEW m3 AS SELECT id FROM t WHERE id < 10');
ok( $node->poll_query_until('db1', qq{
		SELECT NOT EXISTS (SELECT FROM background_ddl.job WHERE id = $old_job)
		   AND NOT EXISTS (SELECT FROM background_ddl.recomputed WHERE job_id = $old_job)}),
	'history_retention: a finished job is purged with the recomputed rows it left');
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET background_ddl.history_retention; SELECT pg_reload_conf();");

$node->stop;
done_testing();
