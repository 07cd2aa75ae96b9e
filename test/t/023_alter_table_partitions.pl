# ALTER TABLE ... ADD CHECK, SET NOT NULL and VALIDATE CONSTRAINT of a
# partitioned table or of a table with inheritance children: each table
# below it is checked in its own chunks; a partition rewritten in the middle
# of its check is checked again from its first block; a table attached
# while the job runs (also between its last chunk and its cut-over) is
# checked before the constraint is marked valid (an attached table whose own
# NOT VALID copy of the constraint hid a violating row fails the job); a
# partition created, detached or dropped while the chunks run neither fails
# the job nor the partition DDL (no deadlock: the job locks the parent
# first); a crash resumes from the checkpoint; a cancel drops the constraint
# from every table, as ALTER TABLE DROP CONSTRAINT drops it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('alter_table_partitions', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});
create_slow_function($node, 'slow', 'int');
$node->safe_psql('postgres', q{
CREATE TABLE pt (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (40000);
CREATE TABLE pt2 PARTITION OF pt FOR VALUES FROM (40000) TO (80000) PARTITION BY RANGE (id);
CREATE TABLE pt2a PARTITION OF pt2 FOR VALUES FROM (40000) TO (60000);
CREATE TABLE pt2b PARTITION OF pt2 FOR VALUES FROM (60000) TO (80000);
INSERT INTO pt SELECT g, g % 100 FROM generate_series(0, 79999) g;
});

# The constraint's validity on each table that has one, as "table:valid ..."
sub constraint_states
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(conrelid::regclass || ':' || convalidated, ' ' ORDER BY conrelid::regclass::text), 'absent')"
		  . " FROM pg_constraint WHERE conname = '$name'");
}

# 1. A partition rewritten in the middle of its check, one detached and one
# created during the chunks: the job checks every table that carries the
# constraint at its end, and a crash in the middle resumes from the
# checkpoint.
my $offset = -s $node->logfile;
my ($job, $hold) = submit_held_at($node, 'chunk 1', 'ALTER TABLE pt ADD CONSTRAINT v_small CHECK (slow(v) < 100)',
	before => 'SET bgddl_test.slow = on;');
is(constraint_states('v_small'), 'pt:false pt1:false pt2:false pt2a:false pt2b:false',
	'the constraint is NOT VALID on every table while the job runs');
$node->safe_psql('postgres', q{
DELETE FROM pt1 WHERE id % 2 = 0;
VACUUM FULL pt1;
ALTER TABLE pt2 DETACH PARTITION pt2b;
CREATE TABLE pt3 PARTITION OF pt FOR VALUES FROM (80000) TO (90000);
INSERT INTO pt SELECT g, 1 FROM generate_series(80000, 89999) g;
});
my ($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO pt VALUES (85000, 500)');
like($err, qr/violates check constraint "v_small"/, 'a violating row is refused in the new partition');
release_hold($node, $hold);
ok( $node->poll_query_until('postgres',
		"SELECT chunks_done >= 4 FROM pg_stat_background_ddl WHERE id = $job"),
	'the job checkpointed some chunks');
my $done_before = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
kill_and_recover($node, job_field($node, $job, 'pid'));
my $done_after = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
cmp_ok($done_after, '>=', $done_before, "the checkpoint survived the crash ($done_before blocks)");
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
ok($node->log_contains(qr/"pt1" was rewritten; its rows are checked again from its first block/, $offset),
	'the rewritten partition was checked again');
ok($node->log_contains(qr/1 tables that carry its constraint were added below "pt"/, $offset),
	'the partition created meanwhile was checked too');
is(constraint_states('v_small'), 'pt:true pt1:true pt2:true pt2a:true pt2b:false pt3:true',
	'valid on the tables of the tree; the detached one keeps its NOT VALID copy');
$node->safe_psql('postgres', 'ALTER TABLE pt DROP CONSTRAINT v_small; ALTER TABLE pt2 ATTACH PARTITION pt2b FOR VALUES FROM (60000) TO (80000)');

# 2. A table attached between the last chunk and the cut-over, whose own
# NOT VALID constraint of the same name hid a violating row: the cut-over
# finds it, the job checks it and fails with PostgreSQL's error, and the
# constraint is dropped from the tree (the attached table's copy too: ATTACH
# PARTITION made it the parent's).
($job, $hold) = submit_held_at($node, 'cutting over', 'ALTER TABLE pt ADD CONSTRAINT v_chk CHECK (v < 100)');
$node->safe_psql('postgres', q{
CREATE TABLE pt4 (id int, v int);
INSERT INTO pt4 VALUES (95000, 500);
ALTER TABLE pt4 ADD CONSTRAINT v_chk CHECK (v < 100) NOT VALID;
ALTER TABLE pt ATTACH PARTITION pt4 FOR VALUES FROM (90000) TO (100000);
});
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is(job_field($node, $job, 'error'), 'check constraint "v_chk" of relation "pt4" is violated by some row',
	"with PostgreSQL's error, on the attached table");
is(constraint_states('v_chk'), 'absent', 'the constraint is gone from every table');
$node->safe_psql('postgres', 'DELETE FROM pt4');

# 3. Partition DDL while the chunks run: none fails, none deadlocks with
# the job, which succeeds.
$job = submit_job($node, 'ALTER TABLE pt ADD CONSTRAINT v_ddl CHECK (slow(v) < 100)',
	before => 'SET bgddl_test.slow = on;');
for my $round (1 .. 5)
{
	my $low = 100000 + $round * 1000;
	my $high = $low + 1000;
	($ret, $out, $err) = $node->psql('postgres', qq{
CREATE TABLE pt_r$round PARTITION OF pt FOR VALUES FROM ($low) TO ($high);
INSERT INTO pt SELECT g, 2 FROM generate_series($low, $high - 1) g;
ALTER TABLE pt DETACH PARTITION pt_r$round;
DROP TABLE pt_r$round;
}, on_error_stop => 1);
	is($ret, 0, "partition DDL round $round succeeded while the job ran") or diag($err);
}
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
is(constraint_states('v_ddl'), 'pt:true pt1:true pt2:true pt2a:true pt2b:true pt3:true pt4:true',
	'valid on every table of the tree');

# 4. SET NOT NULL of a partitioned table: a null in a partition fails it
# with PostgreSQL's error; without one, every partition's column is NOT
# NULL and the helper is gone.
$node->safe_psql('postgres', 'UPDATE pt SET v = NULL WHERE id = 70000');
$job = submit_job($node, 'ALTER TABLE pt ALTER COLUMN v SET NOT NULL');
ok(wait_job_state($node, $job, 'failed'), 'the SET NOT NULL job failed');
is(job_field($node, $job, 'error'), 'column "v" of relation "pt2b" contains null values', "PostgreSQL's error");
$node->safe_psql('postgres', 'UPDATE pt SET v = 1 WHERE id = 70000');
$job = submit_job($node, 'ALTER TABLE pt ALTER COLUMN v SET NOT NULL');
ok(wait_job_state($node, $job, 'succeeded'), 'the SET NOT NULL job succeeded');
is( $node->safe_psql('postgres',
		"SELECT string_agg(attrelid::regclass || ':' || attnotnull, ' ' ORDER BY attrelid::regclass::text)"
		  . " FROM pg_attribute WHERE attname = 'v' AND attrelid::regclass::text ~ '^pt[0-9a-z]*\$'"),
	'pt:true pt1:true pt2:true pt2a:true pt2b:true pt3:true pt4:true',
	'every table of the tree has the column NOT NULL');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_constraint WHERE conname LIKE '%not_null%'"),
	'0', 'no helper is left');

# 5. Inheritance: the children's rows are checked too; VALIDATE of a NOT
# VALID constraint; a cancel drops an added constraint from every table.
$node->safe_psql('postgres', q{
CREATE TABLE ih (id int, v int);
CREATE TABLE ih_c1 () INHERITS (ih);
CREATE TABLE ih_c2 () INHERITS (ih);
INSERT INTO ih SELECT g, 1 FROM generate_series(1, 1000) g;
INSERT INTO ih_c1 SELECT g, 1 FROM generate_series(1, 1000) g;
INSERT INTO ih_c2 SELECT g, 1 FROM generate_series(1, 1000) g;
INSERT INTO ih_c2 VALUES (0, -1);
ALTER TABLE ih ADD CONSTRAINT ih_pos CHECK (v > 0) NOT VALID;
});
$job = submit_job($node, 'ALTER TABLE ih VALIDATE CONSTRAINT ih_pos');
ok(wait_job_state($node, $job, 'failed'), 'the VALIDATE job failed');
is(job_field($node, $job, 'error'), 'check constraint "ih_pos" of relation "ih_c2" is violated by some row',
	'on the child that has the violating row');
is(constraint_states('ih_pos'), 'ih:false ih_c1:false ih_c2:false', 'the constraint is left NOT VALID');
$node->safe_psql('postgres', 'DELETE FROM ih_c2 WHERE v < 0');
$job = submit_job($node, 'ALTER TABLE ih VALIDATE CONSTRAINT ih_pos');
ok(wait_job_state($node, $job, 'succeeded'), 'the VALIDATE job succeeded');
is(constraint_states('ih_pos'), 'ih:true ih_c1:true ih_c2:true', 'valid on the parent and its children');

($job, $hold) = submit_held_at($node, 'chunk 1', 'ALTER TABLE pt ADD CONSTRAINT v_cancel CHECK (v < 100)');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'cancelled');
is(constraint_states('v_cancel'), 'absent', 'the constraint is gone from every table');

done_testing();
