# Writes that reach a captured partition through its partitioned table.  A
# writer's INSERT INTO the partitioned table takes its snapshot, then locks
# the partition it routes the row to only when it gets there: it can wait
# there behind a job that installs its capture triggers on that partition,
# and then fire them with a snapshot that does not see the install.  The
# trigger must log the row all the same.  Each case holds the job at the
# end of its install (its locks taken, the triggers made, not committed),
# sends the writer's INSERT, which waits for the partition's lock, lets the
# install commit and the INSERT go on, and commits the writer only once the
# job has read every row (a manual cut-over, phase ready): the row is then
# the job's only by its mark, and the result must have it.
#  1. VACUUM FULL of a leaf partition, written through its parent;
#  2. a materialized view of a partition two levels down, written through
#     the root;
#  3. a materialized view joining a table to the partitioned table, written
#     through the partitioned table;
#  4. VACUUM FULL of a plain table, written by a REPEATABLE READ transaction
#     whose snapshot is older than the install.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('routed_writes', q{
background_ddl.batch_time = '20ms'
});
$node->safe_psql('postgres', q{
CREATE TABLE p (id int NOT NULL, v text) PARTITION BY RANGE (id);
CREATE TABLE p_1 PARTITION OF p FOR VALUES FROM (MINVALUE) TO (1001);
CREATE TABLE p_2 PARTITION OF p FOR VALUES FROM (1001) TO (MAXVALUE) PARTITION BY HASH (id);
CREATE TABLE p_2a PARTITION OF p_2 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE p_2b PARTITION OF p_2 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO p SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
CREATE TABLE r (id int NOT NULL, v text);
INSERT INTO r SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
CREATE TABLE d (id int PRIMARY KEY, pid int NOT NULL);
INSERT INTO d SELECT g, g FROM generate_series(1, 20000) g;
INSERT INTO d VALUES (30001, 30001);
});

# The writer's session, and its backend
my $writer = $node->background_psql('postgres');
$writer->set_query_timer_restart;
my $writer_pid = $writer->query_safe('SELECT pg_backend_pid()');

# The writer begins its transaction ($begin, BEGIN by default); submit
# $statement (a manual cut-over), held at the end of its install; the
# writer's INSERT waits for the lock of the table it writes, then goes on
# once the install has committed, its transaction open until the job is
# ready; then the job is completed.  Returns the job.
sub write_during_install
{
	my ($case, $statement, $insert, $begin) = @_;
	$writer->query_safe($begin // 'BEGIN');
	my ($job, $hold) = submit_held_at($node, 'installing capture: before its commit', $statement,
		before => 'SET background_ddl.cutover = manual;');
	$writer->query_until(qr/sent/, "\\echo sent\n$insert;\n");
	ok( $node->poll_query_until('postgres',
			"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $writer_pid"),
		"$case: the INSERT waits for the table the install locks");
	release_hold($node, $hold);
	$writer->query_until(qr/inserted/, "\\echo inserted\n");
	ok( $node->poll_query_until('postgres',
			"SELECT phase = 'ready' FROM pg_stat_background_ddl WHERE id = $job"),
		"$case: the job has read every row, and waits for complete_ddl");
	$writer->query_safe('COMMIT');
	$node->safe_psql('postgres', "CALL complete_ddl($job)");
	is(job_field($node, $job, 'state'), 'succeeded', "$case: the job succeeded");
	check_no_leftovers($node, $job);
	return $job;
}

# 1. VACUUM FULL of a leaf partition
write_during_install('VACUUM FULL of a leaf', 'VACUUM FULL p_1', 'INSERT INTO p VALUES (-1, \'routed\')');
is($node->safe_psql('postgres', "SELECT v FROM p_1 WHERE id = -1"),
	'routed', '1: the partition keeps the row written through its parent');
is(differences($node, 'p_1', 'SELECT * FROM p WHERE id <= 1000'), '0',
	'1: and every other row');

# 2. A materialized view of a partition two levels down
write_during_install('a view of a partition', 'CREATE MATERIALIZED VIEW mv AS SELECT id, v FROM p_2a',
	'INSERT INTO p SELECT g, \'routed\' FROM generate_series(20001, 20010) g');
is(differences($node, 'mv', 'SELECT id, v FROM p_2a'), '0',
	"2: the view has the rows written through the root, as the partition does");

# 3. A materialized view joining a table to the partitioned table
write_during_install('a join', 'CREATE MATERIALIZED VIEW mj AS SELECT d.id, p.v FROM d JOIN p ON p.id = d.pid',
	'INSERT INTO p VALUES (30001, \'routed\')');
is(differences($node, 'mj', 'SELECT d.id, p.v FROM d JOIN p ON p.id = d.pid'), '0',
	'3: the view has the row joined to one written through the partitioned table');

# 4. A REPEATABLE READ writer of a plain table
write_during_install('a REPEATABLE READ writer', 'VACUUM FULL r', 'INSERT INTO r VALUES (-1, \'older snapshot\')',
	'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM r');
is($node->safe_psql('postgres', "SELECT v FROM r WHERE id = -1"),
	'older snapshot', '4: the table keeps the row of a transaction whose snapshot is older than the install');

$writer->quit;
done_testing();
