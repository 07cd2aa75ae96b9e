# ALTER TABLE ... ADD CHECK and VALIDATE CONSTRAINT as jobs: the rows are
# checked in chunks as the submitting role; a crash resumes from the last
# checkpoint; writers are never blocked while the rows are checked and their
# rows are checked by the NOT VALID constraint; a rewrite of the table in
# the middle of the job makes it check from the first block again (a
# violating row moved into the checked blocks is found); pause, resume,
# cancel, a constraint dropped by another session, SET NOT NULL, a foreign
# key, whose rows moved by an unchecked UPDATE are caught, and ADD PRIMARY
# KEY USING INDEX, killed in the middle.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('alter_table', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});
create_slow_function($node, 'slow', 'int');
$node->safe_psql('postgres', q{
CREATE TABLE t AS SELECT g AS a, g % 10 AS b, md5(g::text) AS payload
  FROM generate_series(1, 30000) g;
CREATE ROLE alice LOGIN;
ALTER TABLE t OWNER TO alice;
GRANT CREATE ON SCHEMA public TO alice;
-- true only when evaluated as alice: the rows are checked as the role that
-- submitted the statement, as ALTER TABLE checks them
CREATE FUNCTION as_alice(x int) RETURNS bool LANGUAGE sql IMMUTABLE AS
  $$ SELECT current_user = 'alice' OR x IS NULL $$;
});

# 1. As the submitting role, resumed after kill -9 of its worker.
my $job = submit_job($node, 'ALTER TABLE t ADD CONSTRAINT t_alice CHECK (as_alice(slow(a)))',
	user => 'alice', before => 'SET bgddl_test.slow = on;');
is(constraint_state($node, 't_alice'), 'false', 'the constraint is there, NOT VALID, while the job runs');
ok( $node->poll_query_until('postgres',
		"SELECT chunks_done >= 3 AND progress > 0 FROM pg_stat_background_ddl WHERE id = $job"),
	'the job checkpointed some chunks');
my $pid = job_field($node, $job, 'pid');
my $done_before = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
kill_and_recover($node, $pid);
my $done_after = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
cmp_ok($done_after, '>=', $done_before, "the checkpoint survived the crash ($done_before blocks)");
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
is(constraint_state($node, 't_alice'), 'true', 'the constraint is valid');
is(job_field($node, $job, 'rows_done'), '30000', 'every row was checked');
cmp_ok(job_field($node, $job, 'attempts'), '>=', 2, 'in a second attempt');
$node->safe_psql('postgres', 'ALTER TABLE t DROP CONSTRAINT t_alice');

# 2. Writers during the job: never blocked, their rows checked by the NOT
# VALID constraint; a violating row written before the job is found at the
# end of the table.
$node->safe_psql('postgres', 'INSERT INTO t VALUES (-1, 0, NULL)');
my $hold = hold_at($node, 'chunk 2');
$job = submit_job($node, 'ALTER TABLE t ADD CONSTRAINT t_pos CHECK (slow(a) > 0)',
	before => 'SET bgddl_test.slow = on;');
ok(held_at_hold($node), 'the job is held after its second chunk');
my ($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO t VALUES (-2, 0, NULL)');
like($err, qr/violates check constraint "t_pos"/, 'a new violating row is refused at once');
($ret, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '5s';
UPDATE t SET b = b + 1 WHERE a % 1000 = 0;
DELETE FROM t WHERE a % 1000 = 1;
INSERT INTO t SELECT g, 1, 'new' FROM generate_series(400001, 401000) g;
});
is($ret, 0, 'writers are not blocked while the job checks the rows');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is( job_field($node, $job, q{error || ' ' || error_sqlstate}),
	'check constraint "t_pos" of relation "t" is violated by some row 23514',
	"with PostgreSQL's error");
is(constraint_state($node, 't_pos'), 'absent', 'and dropped its constraint');

# 3. A rewrite in the middle of the job.  A row that violates the
# constraint was written at the end of the table before it existed; once
# the job has checked the first blocks, VACUUM FULL moves that row among
# them.  The job checks the rewritten table from its first block, and
# finds it (without that it would succeed).
$node->safe_psql('postgres', q{
CREATE TABLE r AS SELECT g AS a FROM generate_series(1, 20000) g;
INSERT INTO r VALUES (0);
ALTER TABLE r ADD CONSTRAINT r_not_zero CHECK (slow(a) <> 0) NOT VALID;
});
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE r VALIDATE CONSTRAINT r_not_zero',
	before => 'SET bgddl_test.slow = on;');
my $checked = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
my $row_block = $node->safe_psql('postgres', "SELECT (ctid::text::point)[0] FROM r WHERE a = 0");
cmp_ok($row_block, '>=', $checked, "the violating row (block $row_block) is past the blocks checked ($checked)");
$node->safe_psql('postgres', q{
DELETE FROM r WHERE a BETWEEN 1 AND 19000;
VACUUM FULL r;
});
$row_block = $node->safe_psql('postgres', "SELECT (ctid::text::point)[0] FROM r WHERE a = 0");
cmp_ok($row_block, '<', $checked, "the rewrite moved it to block $row_block, among them");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
like(job_field($node, $job, 'error'), qr/check constraint "r_not_zero" of relation "r" is violated by some row/,
	'it found the row');
like(slurp_file($node->logfile), qr/"r" was rewritten; its rows are checked again from its first block/,
	'after checking the rewritten table from its first block');
is(constraint_state($node, 'r_not_zero'), 'false', 'the constraint stays NOT VALID, as after a failed VALIDATE');

# 4. Paused and resumed; then cancelled: the constraint is dropped.
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE t ADD CONSTRAINT t_paused CHECK (slow(a) > -100)',
	before => 'SET bgddl_test.slow = on;');
$node->safe_psql('postgres', "SELECT pause_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'paused'), 'paused');
my $paused_at = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
$node->safe_psql('postgres', "SELECT resume_ddl($job)");
ok(wait_job_state($node, $job, 'succeeded'), 'resumed, and succeeded');
is(constraint_state($node, 't_paused'), 'true', 'the constraint is valid');
cmp_ok($paused_at, '>', 0, "it resumed from block $paused_at");

($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE t ADD CONSTRAINT t_cancelled CHECK (a > -100)');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'cancelled');
is(constraint_state($node, 't_cancelled'), 'absent', 'and its constraint dropped');

# 5. The constraint dropped by another session: the job ends, cancelled.
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE t ADD CONSTRAINT t_dropped CHECK (a > -100)');
$node->safe_psql('postgres', 'ALTER TABLE t DROP CONSTRAINT t_dropped');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'the job ended');
is(job_field($node, $job, 'error'), 'the constraint was dropped', 'saying why');

# 6. SET NOT NULL: its helper CHECK refuses nulls while the rows are
# checked; at the end PostgreSQL's SET NOT NULL finds the column proven by
# the valid helper and reads no row, and the helper is dropped.
$node->safe_psql('postgres', 'ALTER TABLE t ADD COLUMN n int; UPDATE t SET n = a;');
$hold = hold_at($node, 'chunk 2');
my $log_offset = -s $node->logfile;
$job = submit_job($node, 'ALTER TABLE t ALTER COLUMN n SET NOT NULL',
	before => 'SET log_min_messages = debug1;');
ok(held_at_hold($node), 'the SET NOT NULL job is held after its second chunk');
($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO t (a, n) VALUES (1, NULL)');
like($err, qr/violates check constraint "t_n_not_null"/, 'a null is refused by the helper meanwhile');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
is( $node->safe_psql('postgres',
		"SELECT attnotnull FROM pg_attribute WHERE attrelid = 't'::regclass AND attname = 'n'"),
	't', 'the column is NOT NULL');
is(constraint_state($node, 't_n_not_null'), 'absent', 'the helper is gone');
ok( $node->log_contains(
		qr/existing constraints on column "t.n" are sufficient to prove that it does not contain nulls/,
		$log_offset),
	'SET NOT NULL read no row at the end');

# 7. A foreign key, and the row PostgreSQL does not check: an UPDATE that
# leaves the key as it was moves a row that never had its referenced row
# from the blocks not checked yet into one checked already.  The capture
# logged it; the job checks it again, and fails as the blocking statement
# would have.
$node->safe_psql('postgres', q{
CREATE TABLE p (id int PRIMARY KEY);
INSERT INTO p SELECT generate_series(1, 1000);
});

# A table $name (id, parent, pad) whose row 0 has no referenced row, at its
# end in a full page, with free space at its start; a foreign key job on it,
# held after its first chunk: returns the job and the blocks it checked.
sub orphan_table_job
{
	my ($name) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE $name (id int, parent int, pad text) WITH (fillfactor = 100, autovacuum_enabled = off);
INSERT INTO $name SELECT g, g % 1000 + 1, 'x' FROM generate_series(1, 30000) g;
INSERT INTO $name VALUES (0, -5, 'orphan');
INSERT INTO $name SELECT g, g % 1000 + 1, 'x' FROM generate_series(30001, 30500) g;
DELETE FROM $name WHERE id BETWEEN 1 AND 400;
VACUUM $name;
});
	$hold = hold_at($node, 'chunk 1');
	my $job_id = submit_job($node,
		"ALTER TABLE $name ADD CONSTRAINT ${name}_parent FOREIGN KEY (parent) REFERENCES p");
	ok(held_at_hold($node), "the foreign key job on $name is held after its first chunk");
	return ($job_id,
		$node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job_id"));
}

($job, $checked) = orphan_table_job('c');
$row_block = $node->safe_psql('postgres', "SELECT (ctid::text::point)[0] FROM c WHERE id = 0");
cmp_ok($row_block, '>=', $checked, "the orphan row (block $row_block) is past the blocks checked ($checked)");
($ret, $out, $err) = $node->psql('postgres', "UPDATE c SET pad = 'moved' WHERE id = 0");
is($ret, 0, 'an UPDATE that leaves its key as it was is not checked');
$row_block = $node->safe_psql('postgres', "SELECT (ctid::text::point)[0] FROM c WHERE id = 0");
cmp_ok($row_block, '<', $checked, "it moved the row to block $row_block, among those checked");
($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO c VALUES (1, -6, NULL)');
like($err, qr/violates foreign key constraint "c_parent"/, 'a new row without its referenced row is refused');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is( job_field($node, $job, q{error || ' / ' || error_detail || ' / ' || error_sqlstate}),
	'insert or update on table "c" violates foreign key constraint "c_parent" / Key (parent)=(-5) is not present in table "p". / 23503',
	"with PostgreSQL's error");
is(constraint_state($node, 'c_parent'), 'absent', 'and dropped its constraint');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_trigger WHERE tgname LIKE 'background_ddl_capture%'"),
	'its capture triggers are gone');

# The same, with kill -9 of the worker after the UPDATE: the captured row
# survives the crash with the job's capture, and the resumed job fails.
($job, $checked) = orphan_table_job('c2');
$node->safe_psql('postgres', "UPDATE c2 SET pad = 'moved' WHERE id = 0");
$row_block = $node->safe_psql('postgres', "SELECT (ctid::text::point)[0] FROM c2 WHERE id = 0");
cmp_ok($row_block, '<', $checked, "the orphan row moved to block $row_block, among those checked");
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();");
kill_and_recover($node, job_field($node, $job, 'pid'));
eval { $hold->quit; };
ok(wait_job_state($node, $job, 'failed'), 'the job resumed after the crash, and failed');
like(job_field($node, $job, 'error_detail'), qr/Key \(parent\)=\(-5\) is not present in table "p"/,
	'on the row captured before the crash');
is(constraint_state($node, 'c2_parent'), 'absent', 'and dropped its constraint');

# A capture that stopped (its backlog outgrew its bound: set here by hand)
# is not trusted: the cut-over checks every row, under SHARE, and finds the
# row moved into a checked block; with no such row the job succeeds, and
# its capture triggers are dropped after it.
($job, $checked) = orphan_table_job('c4');
$node->safe_psql('postgres', "UPDATE c4 SET pad = 'moved' WHERE id = 0");
cmp_ok($node->safe_psql('postgres', "SELECT (ctid::text::point)[0] FROM c4 WHERE id = 0"),
	'<', $checked, 'the orphan row moved into a checked block');
$node->safe_psql('postgres', "UPDATE background_ddl.capture SET stopped = true WHERE job_id = $job");
$log_offset = -s $node->logfile;
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'with its capture stopped, the job failed');
like(job_field($node, $job, 'error_detail'), qr/Key \(parent\)=\(-5\) is not present in table "p"/,
	'on the row its cut-over found');
ok( $node->log_contains(
		qr/job $job: the changes to "c4" were not all captured; its cut-over checks every row/,
		$log_offset),
	'its cut-over checked every row');
$node->safe_psql('postgres', "UPDATE c4 SET parent = 5 WHERE id = 0");
($job, $hold) = submit_held_at($node, 'chunk 1', 'ALTER TABLE c4 ADD CONSTRAINT c4_parent FOREIGN KEY (parent) REFERENCES p');
$node->safe_psql('postgres', "UPDATE background_ddl.capture SET stopped = true WHERE job_id = $job");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'with no such row, it succeeded');
is(constraint_state($node, 'c4_parent'), 'true', 'the foreign key is valid');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_trigger WHERE tgname LIKE 'background_ddl_capture%'"),
	'its capture triggers are dropped after it');

# The same job under writers, with the orphan fixed: it succeeds.  Its
# capture comes with the submit (the statement holds CREATE TRIGGER's lock)
# and logs the new version of each updated row, nothing of an INSERT (the
# key checks it) or a DELETE; its cut-over drops the capture triggers in
# the transaction that marks the key valid.
$node->safe_psql('postgres', "UPDATE c SET parent = 5 WHERE id = 0");
($job, $hold) = submit_held_at($node, 'chunk 1', 'ALTER TABLE c ADD CONSTRAINT c_parent FOREIGN KEY (parent) REFERENCES p');
is( $node->safe_psql('postgres', qq{
SELECT string_agg(t.tgtype || ' ' || (t.xmin = c.xmin), ', ' ORDER BY t.tgtype)
  FROM pg_trigger t, pg_constraint c
 WHERE t.tgname LIKE 'background_ddl_capture_${job}%' AND c.conname = 'c_parent'}),
	'17 true, 32 true',
	'its capture triggers (AFTER UPDATE FOR EACH ROW, and TRUNCATE) came with the submit');
my $updated = $node->safe_psql('postgres', 'SELECT count(*) FROM c WHERE id % 7 = 0');
$node->safe_psql('postgres', q{
UPDATE c SET pad = 'again' WHERE id % 7 = 0;
DELETE FROM c WHERE id % 11 = 0;
INSERT INTO c SELECT g, g % 1000 + 1, 'new' FROM generate_series(40001, 41000) g;
});
is($node->safe_psql('postgres', "SELECT count(*) FROM background_ddl.dirty WHERE job_id = $job"),
	$updated, 'one mark per updated row, none for the rows inserted or deleted');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
is(constraint_state($node, 'c_parent'), 'true', 'the foreign key is valid');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'background_ddl_capture%'"),
	'0', 'its capture triggers went with the cut-over');
is($node->safe_psql('postgres', "SELECT count(*) FROM background_ddl.dirty"), '0', 'and its marks');
is(job_field($node, $job, 'phase'), '', 'nothing left to clean up');

# ADD PRIMARY KEY USING INDEX of an index whose columns allow nulls: killed
# (kill -9) while held after its second chunk, the job resumes from its
# checkpoint; writers meanwhile are not blocked, and a null they write is
# refused by the helper; at the end the key is there and the helper gone.
$node->safe_psql('postgres', q{
CREATE TABLE k AS SELECT g AS a, g % 10 AS b, md5(g::text) AS pad FROM generate_series(1, 60000) g;
CREATE UNIQUE INDEX k_ab ON k (a, b);
});
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE k ADD CONSTRAINT k_pkey PRIMARY KEY USING INDEX k_ab');
($ret, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '5s';
UPDATE k SET pad = 'w' WHERE a % 100 = 0;
INSERT INTO k VALUES (60001, 1, 'new');
});
is($ret, 0, 'writers are not blocked while the job checks the rows') or diag($err);
($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO k VALUES (60002, NULL)');
like($err, qr/violates check constraint "k_not_null"/, 'a null in a key column is refused');
$checked = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
kill_and_recover($node, job_field($node, $job, 'pid'));
eval { $hold->quit };    # its session died with the crash
$node->safe_psql('postgres', 'ALTER SYSTEM RESET background_ddl.test_hold_point; SELECT pg_reload_conf();');
cmp_ok($node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job"),
	'>=', $checked, "the checkpoint survived the crash ($checked blocks)");
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
is( $node->safe_psql('postgres',
		"SELECT string_agg(conname || ':' || contype::text || ':' || conindid::regclass, ' ' ORDER BY conname)"
		  . " FROM pg_constraint WHERE conrelid = 'k'::regclass"),
	'k_pkey:p:k_pkey', 'the primary key is there, on its index renamed, and no helper');
is( $node->safe_psql('postgres',
		"SELECT string_agg(attname || ':' || attnotnull, ' ' ORDER BY attnum) FROM pg_attribute"
		  . " WHERE attrelid = 'k'::regclass AND attnum > 0"),
	'a:true b:true pad:false', 'its columns are NOT NULL');

# A type change of a constraint's column in the middle of its job: ALTER
# COLUMN ... TYPE drops the constraint and adds it again, NOT VALID, under a
# new OID, and its rewrite does not check it.  The job takes the new one and
# checks every row again from the first block: here the USING expression
# made a row already checked violate it, and the job fails on it (without
# that, it would end saying the constraint was dropped, and leave it NOT
# VALID).  A SET NOT NULL job whose column changes type before its cut-over
# ends as the two statements would: the column NOT NULL, of the new type,
# and no helper left.
$node->safe_psql('postgres', 'CREATE TABLE ty AS SELECT g AS a, g AS n FROM generate_series(1, 200000) g');
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE ty ADD CONSTRAINT ty_pos CHECK (a > 0)');
$node->safe_psql('postgres',
	'ALTER TABLE ty ALTER COLUMN a TYPE bigint USING CASE WHEN a = 1 THEN -1 ELSE a END');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the CHECK job failed');
like(job_field($node, $job, 'error'), qr/check constraint "ty_pos" of relation "ty" is violated by some row/,
	'on the row the type change made violate its constraint');
like(slurp_file($node->logfile), qr/job $job: its constraint was created again \(a type change of its columns\)/,
	'after checking every row again');

($job, $hold) = submit_held_at($node, 'cutting over', 'ALTER TABLE ty ALTER COLUMN n SET NOT NULL');
$node->safe_psql('postgres', 'ALTER TABLE ty ALTER COLUMN n TYPE bigint');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the SET NOT NULL job succeeded');
is( $node->safe_psql('postgres',
		"SELECT string_agg(attname || ':' || atttypid::regtype || ':' || attnotnull, ' ' ORDER BY attnum)"
		  . " FROM pg_attribute WHERE attrelid = 'ty'::regclass AND attnum > 0"),
	'a:bigint:false n:bigint:true', 'n is NOT NULL, of its new type');
is(constraint_state($node, 'ty_n_not_null'), 'absent', 'and the helper is gone');

done_testing();
