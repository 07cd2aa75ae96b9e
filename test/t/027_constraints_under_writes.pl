# The constraint kind's FOREIGN KEY, CHECK and SET NOT NULL jobs while
# pgbench writes to their table as the table's owner (updates of the key and
# of other columns, inserts, deletes, rows of the referenced table inserted,
# referenced and deleted, a rolled-back savepoint):
#  1. a foreign key job killed (kill -9 of its worker) after its second
#     chunk resumes from its checkpoint and succeeds;
#  2. a CHECK job paused and resumed succeeds;
#  3. a SET NOT NULL job succeeds, its helper dropped;
#  4. a job cancelled leaves nothing;
#  5. a row without its referenced row fails the foreign key job with
#     PostgreSQL's error, its constraint dropped;
# each time no row of the table violates what was made valid, and no writer
# fails.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('constraints_under_writes', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
CREATE TABLE p (id int PRIMARY KEY);
INSERT INTO p SELECT generate_series(1, 1000);
CREATE TABLE c (id int PRIMARY KEY, parent int, v int, n int, pad text);
INSERT INTO c SELECT g, g % 1000 + 1, g, g, md5(g::text) FROM generate_series(1, 100000) g;
CREATE INDEX c_parent_idx ON c (parent);
CREATE SEQUENCE c_ids START 200001;
});

# Each client inserts and deletes a referenced key of its own: no two
# clients wait for each other's key.
my $script = <<'EOS';
\set id random(1, 100000)
\set p random(1, 1000)
\set q 2000 + :client_id
BEGIN;
UPDATE c SET parent = :p WHERE id = :id;
UPDATE c SET pad = md5(random()::text) WHERE id = :id + 1;
INSERT INTO c VALUES (nextval('c_ids'), :p, 1, 1, 'inserted');
DELETE FROM c WHERE id = :id + 2 AND :id % 4 = 0;
SAVEPOINT s;
INSERT INTO c VALUES (nextval('c_ids'), NULL, 1, 1, 'rolled back');
ROLLBACK TO s;
INSERT INTO p VALUES (:q);
INSERT INTO c VALUES (nextval('c_ids'), :q, 1, 1, 'references a new key');
DELETE FROM c WHERE parent = :q;
DELETE FROM p WHERE id = :q;
COMMIT;
EOS
my ($writers, $writers_err);

sub start_writers
{
	$node->safe_psql('postgres', "UPDATE c SET pad = 'old' WHERE pad = 'inserted'");
	($writers, $writers_err) = start_pgbench($node, $script, '-U', 'alice');
	ok($node->poll_query_until('postgres', "SELECT count(*) > 50 FROM c WHERE pad = 'inserted'"),
		'the writers write');
}
start_writers();

sub orphans
{
	return $node->safe_psql('postgres',
		'SELECT count(*) FROM c WHERE parent IS NOT NULL AND NOT EXISTS (SELECT FROM p WHERE p.id = c.parent)');
}

# 1. A foreign key, killed after its second chunk.
my ($job, $hold) = submit_held_at($node, 'chunk 2',
	'ALTER TABLE c ADD CONSTRAINT c_parent FOREIGN KEY (parent) REFERENCES p', user => 'alice');
my $done_before = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
cmp_ok($done_before, '>', 0, "held after $done_before blocks checked");
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();");
kill_and_recover($node, job_field($node, $job, 'pid'));
eval { $hold->quit };      # its session died with the crash
$writers->finish;          # and the writers' connections
start_writers();
my $done_after = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
cmp_ok($done_after, '>=', $done_before, "the checkpoint survived the crash ($done_after blocks)");
ok(wait_job_state($node, $job, 'succeeded'), 'the foreign key job resumed and succeeded');
cmp_ok(job_field($node, $job, 'attempts'), '>=', 2, 'in a second attempt');
is(constraint_state($node, 'c_parent'), 'true', 'the foreign key is valid');
is(orphans(), '0', 'no row lacks its referenced row');
check_no_leftovers($node, $job);

# 2. A CHECK, paused and resumed.
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE c ADD CONSTRAINT c_v CHECK (v > 0)',
	user => 'alice');
$node->safe_psql('postgres', "SELECT pause_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'paused'), 'the CHECK job paused');
$node->safe_psql('postgres', "SELECT resume_ddl($job)");
ok(wait_job_state($node, $job, 'succeeded'), 'resumed, it succeeded');
is(constraint_state($node, 'c_v'), 'true', 'the CHECK is valid');
is($node->safe_psql('postgres', 'SELECT count(*) FROM c WHERE NOT v > 0'), '0', 'no row violates it');

# 3. SET NOT NULL.
$job = submit_job($node, 'ALTER TABLE c ALTER COLUMN n SET NOT NULL', user => 'alice');
ok(wait_job_state($node, $job, 'succeeded'), 'the SET NOT NULL job succeeded');
is( $node->safe_psql('postgres',
		"SELECT attnotnull FROM pg_attribute WHERE attrelid = 'c'::regclass AND attname = 'n'"),
	't', 'the column is NOT NULL');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_constraint WHERE conrelid = 'c'::regclass AND contype = 'c' AND conname <> 'c_v'"),
	'0', 'its helper is dropped');

# 4. Cancelled.
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE c ADD CONSTRAINT c_cancelled CHECK (v < 0 OR v > 0)',
	user => 'alice');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'the job is cancelled');
is(constraint_state($node, 'c_cancelled'), 'absent', 'its constraint is dropped');
check_no_leftovers($node, $job);

# 5. A row without its referenced row (the writers leave it alone).
$node->safe_psql('postgres',
	"ALTER TABLE c DROP CONSTRAINT c_parent; INSERT INTO c VALUES (-1, -7, 1, 1, 'orphan');");
$job = submit_job($node, 'ALTER TABLE c ADD CONSTRAINT c_parent FOREIGN KEY (parent) REFERENCES p',
	user => 'alice');
ok(wait_job_state($node, $job, 'failed'), 'the foreign key job failed');
is( job_field($node, $job, q{error || ' / ' || error_detail || ' / ' || error_sqlstate}),
	'insert or update on table "c" violates foreign key constraint "c_parent" / Key (parent)=(-7) is not present in table "p". / 23503',
	"with PostgreSQL's error");
is(constraint_state($node, 'c_parent'), 'absent', 'its constraint is dropped');
check_no_leftovers($node, $job);

my $writers_said = stop_pgbench($writers, $writers_err);
unlike($writers_said, qr/ERROR|aborted/, 'no writer failed') or diag($writers_said);
$node->stop;
done_testing();
