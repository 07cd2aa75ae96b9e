# A constraint job's chunks checked by several processes: the worker and
# parallel workers (max_parallel_maintenance_workers, within the job's
# workers), as the submitting role; not when the check is not parallel safe
# or the settings allow none; a violating row found by any of them fails
# the job with PostgreSQL's error; a foreign key's unmatched rows found by
# them are checked by the worker (more than they report: the chunk again, by
# the worker alone); pause, kill -9 of a parallel worker in the middle of a
# chunk, resume from the checkpoint; a foreign key's rows looked up in the
# referenced keys in memory, as the query would find them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

# Two workers per job whatever BGDDL_WORKERS_PER_JOB says (the last line wins)
my $node = bgddl_node('parallel_chunks', q{
restart_after_crash = on
background_ddl.max_workers_per_job = 2
});
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
-- about 60 rows a block
CREATE TABLE t AS SELECT g AS a, md5(g::text) AS payload FROM generate_series(1, 30000) g;
CREATE TABLE small AS SELECT g AS a, md5(g::text) AS payload FROM generate_series(1, 10000) g;
-- Fails, naming the role, for a row checked by a parallel worker while
-- bgddl_test.refuse_parallel is on; with bgddl_test.slow on, sleeps 10 ms
-- every 50 values, so that a job lasts seconds
CREATE FUNCTION checked(x int) RETURNS bool LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF current_setting('bgddl_test.refuse_parallel', true) = 'on'
     AND (SELECT backend_type FROM pg_stat_activity WHERE pid = pg_backend_pid()) = 'parallel worker' THEN
    RAISE EXCEPTION 'row % checked by a parallel worker as %', x, current_user;
  END IF;
  IF x % 50 = 0 AND current_setting('bgddl_test.slow', true) = 'on' THEN
    PERFORM pg_sleep(0.01);
  END IF;
  RETURN x > 0;
END $$;
CREATE FUNCTION checked_unsafe(x int) RETURNS bool LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS
  $$ SELECT checked(x) $$;
});

# 1. Parallel workers check chunks, as the submitting role.
my $job = submit_job($node, 'ALTER TABLE small ADD CONSTRAINT small_checked CHECK (checked(a))',
	user => 'alice', before => 'SET bgddl_test.refuse_parallel = on; SET bgddl_test.slow = on;');
ok(wait_job_state($node, $job, 'failed'), 'a job whose check refuses parallel workers fails');
like(job_field($node, $job, 'error'), qr/^row \d+ checked by a parallel worker as alice$/,
	'a parallel worker checked rows, as the submitting role');
is(constraint_state($node, 'small_checked'), 'absent', 'the constraint is dropped');

# 2. None when the settings allow none, or the check is not parallel safe.
$job = submit_job($node, 'ALTER TABLE small ADD CONSTRAINT small_checked CHECK (checked(a))',
	user => 'alice',
	before => 'SET bgddl_test.refuse_parallel = on; SET bgddl_test.slow = on;'
	  . ' SET max_parallel_maintenance_workers = 0;');
ok(wait_job_state($node, $job, 'succeeded'), 'with max_parallel_maintenance_workers = 0, none');
is(constraint_state($node, 'small_checked'), 'true', 'the constraint is valid');
$node->safe_psql('postgres', 'ALTER TABLE small DROP CONSTRAINT small_checked');
$job = submit_job($node, 'ALTER TABLE small ADD CONSTRAINT small_unsafe CHECK (checked_unsafe(a))',
	user => 'alice', before => 'SET bgddl_test.refuse_parallel = on; SET bgddl_test.slow = on;');
ok(wait_job_state($node, $job, 'succeeded'), 'with a check that is not parallel safe, none');
$node->safe_psql('postgres', 'ALTER TABLE small DROP CONSTRAINT small_unsafe');

# 3. Paused in the middle of a parallel chunk, then kill -9 of a parallel
# worker in the middle of one: the job resumes from its checkpoint, and
# succeeds.
$job = submit_job($node, 'ALTER TABLE t ADD CONSTRAINT t_checked CHECK (checked(a))',
	user => 'alice', before => 'SET bgddl_test.slow = on;');
ok($node->poll_query_until('postgres', "SELECT workers = 2 FROM pg_stat_background_ddl WHERE id = $job"),
	'the view counts the parallel worker among the workers');
$node->safe_psql('postgres', "SELECT pause_ddl($job)");
ok(wait_job_state($node, $job, 'paused'), 'paused');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'parallel worker'"),
	'no parallel worker is left');
$node->safe_psql('postgres', "SELECT resume_ddl($job)");
# kill -9 of a parallel worker, polled for (with the usual bound, while the
# job runs) until one is found and killed (it ends with its chunk); returns
# whether one was, the job's state and its checked blocks then
sub kill_a_parallel_worker
{
	my ($job) = @_;
	my ($state, $done, $killed) = ('running', 0, 0);
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (!$killed && time() < $deadline && $state =~ /^(queued|running)$/)
	{
		($state, $done, my $pid) = split /\|/, $node->safe_psql('postgres', qq{
SELECT state, work_done,
       (SELECT pid FROM pg_stat_activity WHERE backend_type = 'parallel worker' LIMIT 1)
  FROM background_ddl.job WHERE id = $job}), -1;
		$killed = $pid ne '' && kill('KILL', $pid);
		usleep(10_000) unless $killed;
	}
	return ($killed, $state, $done);
}
my $log_offset = -s $node->logfile;
my ($killed, $state, $done_before) = kill_a_parallel_worker($job);
# On a loaded machine the resumed job was once seen to end (in 4 s) before
# any poll saw a parallel worker (whether a chunk gets parallel workers
# depends on how long its worker's last chunk took): then the same job
# again, without the pause, at most twice
for (my $again = 1; !$killed && $state eq 'succeeded' && $again <= 2; $again++)
{
	diag("job $job succeeded before a parallel worker was seen; once more");
	$node->safe_psql('postgres', 'ALTER TABLE t DROP CONSTRAINT t_checked');
	$job = submit_job($node, 'ALTER TABLE t ADD CONSTRAINT t_checked CHECK (checked(a))',
		user => 'alice', before => 'SET bgddl_test.slow = on;');
	$log_offset = -s $node->logfile;
	($killed, $state, $done_before) = kill_a_parallel_worker($job);
}
ok($killed, "resumed, with a parallel worker again, killed (the job was $state)");
cmp_ok($done_before, '>', 0, "the job had checked $done_before blocks");
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
$node->wait_for_log(qr/database system is ready to accept connections/, $log_offset);
$node->poll_query_until('postgres', 'SELECT true');
cmp_ok($node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job"),
	'>=', $done_before, 'the checkpoint survived the crash');
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
is(constraint_state($node, 't_checked'), 'true', 'the constraint is valid');
is(job_field($node, $job, 'rows_done'), '30000', 'every row was checked');
$node->safe_psql('postgres', 'ALTER TABLE t DROP CONSTRAINT t_checked');

# 4. Violating rows found by any of the processes: PostgreSQL's error.
$node->safe_psql('postgres', 'UPDATE small SET a = -a WHERE a IN (3333, 6666)');
$job = submit_job($node, 'ALTER TABLE small ADD CONSTRAINT small_positive CHECK (checked(a))',
	user => 'alice', before => 'SET bgddl_test.slow = on;');
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is( job_field($node, $job, q{error || ' ' || error_sqlstate}),
	'check constraint "small_positive" of relation "small" is violated by some row 23514',
	"with PostgreSQL's error");
is(constraint_state($node, 'small_positive'), 'absent', 'and dropped its constraint');

# 5. A foreign key: parallel workers find the unmatched rows, the worker
# checks them.  A table big enough for chunks worth parallel workers.
$node->safe_psql('postgres', q{
CREATE TABLE p (id int PRIMARY KEY);
INSERT INTO p SELECT generate_series(1, 1000);
CREATE TABLE c (id int, parent int) WITH (autovacuum_enabled = off);
INSERT INTO c SELECT g, g % 1000 + 1 FROM generate_series(1, 1000000) g;
VACUUM ANALYZE c;
});
$log_offset = -s $node->logfile;
$job = submit_job($node, 'ALTER TABLE c ADD CONSTRAINT c_parent FOREIGN KEY (parent) REFERENCES p',
	before => 'SET log_min_messages = debug1;');
ok(wait_job_state($node, $job, 'succeeded'), 'the foreign key job succeeded');
ok($node->log_contains(qr/background DDL job $job checked blocks \d+ to \d+ of "c", processes: 2/,
		$log_offset),
	'with chunks checked by two processes');
ok($node->log_contains(qr/foreign key "c_parent": 1000 keys of "p" read into memory/, $log_offset),
	'which looked the rows up in the referenced keys, read into memory');
is(constraint_state($node, 'c_parent'), 'true', 'the foreign key is valid');
$node->safe_psql('postgres', q{
ALTER TABLE c DROP CONSTRAINT c_parent;
UPDATE c SET parent = -5 WHERE id = 900000;
});
$job = submit_job($node, 'ALTER TABLE c ADD CONSTRAINT c_parent FOREIGN KEY (parent) REFERENCES p');
ok(wait_job_state($node, $job, 'failed'), 'with an unmatched row, the job failed');
is( job_field($node, $job, q{error || ' / ' || error_detail || ' / ' || error_sqlstate}),
	'insert or update on table "c" violates foreign key constraint "c_parent" / Key (parent)=(-5) is not present in table "p". / 23503',
	"with PostgreSQL's error");
is(constraint_state($node, 'c_parent'), 'absent', 'and dropped its constraint');

# More unmatched rows than the processes report (1024): the worker checks
# the chunk again alone, and fails.
$node->safe_psql('postgres', q{
UPDATE c SET parent = 5 WHERE id = 900000;
UPDATE c SET parent = -7 WHERE id BETWEEN 500000 AND 502999;
});
$job = submit_job($node, 'ALTER TABLE c ADD CONSTRAINT c_parent FOREIGN KEY (parent) REFERENCES p',
	before => 'SET log_min_messages = debug1;');
ok(wait_job_state($node, $job, 'failed'), 'with 3,000 unmatched rows, the job failed');
like(job_field($node, $job, 'error_detail'), qr/^Key \(parent\)=\(-7\) is not present in table "p"\.$/,
	"with PostgreSQL's error");
is(constraint_state($node, 'c_parent'), 'absent', 'and dropped its constraint');

# 6. The referenced keys in memory find what the query finds: a key of two
# columns, one of them text, MATCH FULL (all nulls pass; one null fails; a
# text that differs in case is not the key); a key whose type is not the
# referenced column's (bigint to int) is looked up by the query.
$node->safe_psql('postgres', q{
CREATE TABLE p2 (a int, b text, PRIMARY KEY (a, b));
INSERT INTO p2 SELECT g, 'k' || g FROM generate_series(1, 1000) g;
CREATE TABLE c2 (a int, b text) WITH (autovacuum_enabled = off);
INSERT INTO c2 SELECT g % 1000 + 1, 'k' || (g % 1000 + 1) FROM generate_series(1, 300000) g;
INSERT INTO c2 VALUES (NULL, NULL);
VACUUM ANALYZE c2;
});
my $full = 'ALTER TABLE c2 ADD CONSTRAINT c2_p2 FOREIGN KEY (a, b) REFERENCES p2 MATCH FULL';
$log_offset = -s $node->logfile;
$job = submit_job($node, $full, before => 'SET log_min_messages = debug1;');
ok(wait_job_state($node, $job, 'succeeded'), 'a MATCH FULL key of two columns: the job succeeded');
ok($node->log_contains(qr/foreign key "c2_p2": 1000 keys of "p2" read into memory/, $log_offset),
	'its rows looked up in the referenced keys in memory');
$node->safe_psql('postgres', q{
ALTER TABLE c2 DROP CONSTRAINT c2_p2;
UPDATE c2 SET b = NULL WHERE a = 500 AND ctid > '(1000,0)';
});
$job = submit_job($node, $full);
ok(wait_job_state($node, $job, 'failed'), 'with a row whose key is half null, the job failed');
is( job_field($node, $job, q{error || ' / ' || error_detail}),
	'insert or update on table "c2" violates foreign key constraint "c2_p2" / MATCH FULL does not allow mixing of null and nonnull key values.',
	"with PostgreSQL's error");
$node->safe_psql('postgres', q{
UPDATE c2 SET b = 'k500' WHERE a = 500 AND b IS NULL;
UPDATE c2 SET b = 'K7' WHERE a = 7 AND ctid > '(1500,0)';
});
$job = submit_job($node, $full);
ok(wait_job_state($node, $job, 'failed'), 'with a key that differs in case, the job failed');
is(job_field($node, $job, 'error_detail'), 'Key (a, b)=(7, K7) is not present in table "p2".',
	"with PostgreSQL's error");

$node->safe_psql('postgres', q{
CREATE TABLE c3 (parent bigint) WITH (autovacuum_enabled = off);
INSERT INTO c3 SELECT g % 1000 + 1 FROM generate_series(1, 1000000) g;
UPDATE c3 SET parent = -9 WHERE ctid = '(3000,1)';
VACUUM ANALYZE c3;
});
$log_offset = -s $node->logfile;
$job = submit_job($node, 'ALTER TABLE c3 ADD CONSTRAINT c3_parent FOREIGN KEY (parent) REFERENCES p',
	before => 'SET log_min_messages = debug1;');
ok(wait_job_state($node, $job, 'failed'), 'a bigint key to an int column: the job failed');
is(job_field($node, $job, 'error_detail'), 'Key (parent)=(-9) is not present in table "p".',
	"with PostgreSQL's error");
ok(!$node->log_contains(qr/keys of "p" read into memory/, $log_offset),
	'found by the query, the types differing');

done_testing();
