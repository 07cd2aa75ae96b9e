# Several workers per job, and fairness between jobs:
#  - a job whose backfill has chunks left gets a helper (workers = 2);
#  - a job submitted while every worker slot is taken gets its first worker
#    from a helper that leaves, before the first job ends;
#  - a helper leaves while writers keep the captured table busy;
#  - both jobs are exact.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('workers', q{
background_ddl.max_workers = 2
background_ddl.max_workers_per_job = 2
background_ddl.batch_time = '20ms'
});

# In a session with bgddl_test.slow set (the jobs' sessions, whose settings
# their workers take), slow() takes about 0.2 ms a row: the jobs below take
# seconds; the checks of their results do not.
$node->safe_psql('postgres', q{
CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO a SELECT g, g FROM generate_series(1, 30000) g;
CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO b SELECT g, g FROM generate_series(1, 30000) g;
});
create_slow_function($node, 'slow', 'int');
my %slow = (before => 'SET bgddl_test.slow = on;');

my $query_a = 'SELECT id, slow(v) AS v FROM a';
my $query_b = 'SELECT id, slow(v) AS v FROM b';

my $job_a = submit_job($node, "CREATE MATERIALIZED VIEW mv_a AS $query_a", %slow);
ok( $node->poll_query_until('postgres',
		"SELECT workers = 2 FROM pg_stat_background_ddl WHERE id = $job_a"),
	'a job with chunks left gets a helper');

my $job_b = submit_job($node, "CREATE MATERIALIZED VIEW mv_b AS $query_b", %slow);
ok(wait_job_state($node, $job_a, 'succeeded'), 'the first job succeeded');
ok(wait_job_state($node, $job_b, 'succeeded'), 'the second job succeeded');
# Checked from the catalog once both ended, not observed in passing (a
# loaded machine may finish the first job between two polls): with two
# worker slots, the second job can start before the first ends only if the
# first one's helper gave its slot up.
is( $node->safe_psql('postgres',
		"SELECT b.started_at < a.finished_at FROM background_ddl.job a, background_ddl.job b
		  WHERE a.id = $job_a AND b.id = $job_b"),
	't', 'the second job got a worker while the first still ran: its helper left');
is(differences($node, 'mv_a', $query_a), '0', 'the first job is exact');
is(differences($node, 'mv_b', $query_b), '0', 'the second job is exact');
is( $node->safe_psql('postgres',
		"SELECT bool_and(start_block = coalesce(prev_end, 0))
		   FROM (SELECT start_block, lag(end_block) OVER (ORDER BY start_block) AS prev_end
		           FROM background_ddl.chunk WHERE job_id = $job_a) c"),
	't', "the chunks of both workers tile the table");

# Writers busy on the captured table: the helper leaves them the CPU.
$node->safe_psql('postgres', 'DROP MATERIALIZED VIEW mv_a');
my $job_c = submit_job($node, "CREATE MATERIALIZED VIEW mv_c AS $query_a", %slow);
ok( $node->poll_query_until('postgres',
		"SELECT workers = 2 FROM pg_stat_background_ddl WHERE id = $job_c"),
	'busy writers: the job starts with a helper');
my $writer = $node->background_psql('postgres');
$writer->set_query_timer_restart;
my $writer_pid = $writer->query_safe('SELECT pg_backend_pid()');
$writer->query_until(qr/writing/, q{
\echo writing
DO $$ BEGIN
  FOR i IN 1..1000000 LOOP
    UPDATE a SET v = v WHERE id = 1 + i % 100;
    COMMIT;
  END LOOP;
END $$;
});
ok( $node->poll_query_until('postgres',
		"SELECT state = 'running' AND workers = 1 FROM pg_stat_background_ddl WHERE id = $job_c"),
	'busy writers: the helper left');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($writer_pid)");
eval { $writer->quit };    # the cancel ended its psql (ON_ERROR_STOP)
ok(wait_job_state($node, $job_c, 'succeeded'), 'busy writers: the job succeeded');
is(differences($node, 'mv_c', $query_a), '0', 'busy writers: the job is exact');

$node->stop;
done_testing();
