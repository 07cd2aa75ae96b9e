# ALTER TABLE ... ATTACH PARTITION as a job, while pgbench writes to the
# parent, its partitions, the default partition and the table attached:
# the rows of the table attached and of the default partition are checked
# in chunks against helper checks NOT VALID, which PostgreSQL enforces on
# every write meanwhile (no writer fails or waits for the scan); paused,
# resumed and killed (kill -9) in the middle, the job resumes from its
# checkpoint; at the end ATTACH reads no row (its checks are implied by the
# valid helpers), the table's index is attached, not built, and the helpers
# are dropped.  A row out of the bound, in the table attached or in the
# default partition, fails the job with PostgreSQL's error in the middle of
# its chunks; a cancel leaves both tables as they were; a role that owns the
# parent and the table attached, but not the default partition, attaches it
# as the blocking statement lets it; partition DDL during a job neither fails
# nor deadlocks, and a table attached that is dropped ends its job.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('attach_partition', q{
background_ddl.batch_time = '10ms'
restart_after_crash = on
});
# The partition key is slow(id): the job's checks of the rows take seconds
create_slow_function($node, 'slow', 'int');
$node->safe_psql('postgres', q{
CREATE TABLE ev (id int, account int, payload text) PARTITION BY RANGE (slow(id));
CREATE INDEX ev_account ON ev (account);
CREATE TABLE ev_old PARTITION OF ev FOR VALUES FROM (0) TO (100000);
CREATE TABLE ev_def PARTITION OF ev DEFAULT;
INSERT INTO ev SELECT g, g % 100, md5(g::text) FROM generate_series(0, 99999) g;
INSERT INTO ev SELECT g, g % 100, 'far' FROM generate_series(1000000, 1009999) g;
CREATE TABLE ev_new (id int, account int, payload text);
INSERT INTO ev_new SELECT g, g % 100, md5(g::text) FROM generate_series(100000, 129999) g;
CREATE INDEX ev_new_account ON ev_new (account);
});

# The helpers' validity, as "table:valid ..." (or "none")
sub helpers
{
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(conrelid::regclass || ':' || convalidated, ' ' ORDER BY conrelid::regclass::text), 'none')"
		  . " FROM pg_constraint WHERE conname LIKE '%partition_bound' OR conname LIKE '%excluded'");
}

sub bound_of
{
	my ($table) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT inhparent::regclass || ' ' || pg_get_expr(c.relpartbound, c.oid)"
		  . " FROM pg_class c JOIN pg_inherits ON inhrelid = c.oid WHERE c.oid = '$table'::regclass), 'not attached')");
}

# Writers: the old partition, the default partition (out of every new
# bound) and the table attached (in its bound), by updates, deletes and
# inserts; any error aborts a client, and is looked for at the end.
my $script = <<'EOS';
\set id random(0, 99999)
\set far random(1000000, 1009999)
\set nid random(100000, 129999)
UPDATE ev SET payload = md5(random()::text) WHERE id = :id;
UPDATE ev SET account = account + 1 WHERE id = :far;
UPDATE ev_new SET payload = 'w' WHERE id = :nid;
DELETE FROM ev_new WHERE id = :nid + 1 AND :id < 2000;
INSERT INTO ev_new VALUES (:nid, 0, 'inserted');
INSERT INTO ev VALUES (:far + 100000, 0, 'inserted');
EOS
my ($writers, $writers_err) = start_pgbench($node, $script);
ok( $node->poll_query_until('postgres', "SELECT count(*) > 50 FROM ev_new WHERE payload = 'inserted'"),
	'the writers write');

# 1. Held, paused, resumed and killed in the middle; it succeeds.
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "ALTER SYSTEM SET log_min_messages = debug1; SELECT pg_reload_conf();");
my ($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE ev ATTACH PARTITION ev_new FOR VALUES FROM (100000) TO (300000)',
	before => 'SET bgddl_test.slow = on;');
is(helpers(), 'ev_def:false ev_new:false', 'the helpers are NOT VALID on the table attached and the default partition');
my ($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO ev_new VALUES (5, 0, NULL)');
like($err, qr/violates check constraint "ev_new_partition_bound"/, 'a row out of the bound is refused in the table attached');
($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO ev VALUES (150000, 0, NULL)');
like($err, qr/violates check constraint "ev_def_ev_new_excluded"/,
	"a row of the new bound is refused in the default partition (where it would go until the ATTACH)");
$node->safe_psql('postgres', "SELECT pause_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'paused'), 'paused');
$node->safe_psql('postgres', "SELECT resume_ddl($job)");
ok( $node->poll_query_until('postgres',
		"SELECT chunks_done >= 6 FROM pg_stat_background_ddl WHERE id = $job"),
	'resumed: it checkpointed more chunks');
my $done_before = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
kill_and_recover($node, job_field($node, $job, 'pid'));
$writers->finish;    # the crash ended the writers' connections
($writers, $writers_err) = start_pgbench($node, $script);
my $done_after = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
cmp_ok($done_after, '>=', $done_before, "the checkpoint survived the crash ($done_before blocks)");
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
$node->safe_psql('postgres', "ALTER SYSTEM RESET log_min_messages; SELECT pg_reload_conf();");
is(bound_of('ev_new'), 'ev FOR VALUES FROM (100000) TO (300000)', 'the table is attached with its bound');
is(helpers(), 'none', 'the helpers are dropped');
# (the worker's lines: the submit's rolled-back ATTACH says it too, with the test's name)
ok($node->log_contains(qr/\[\d+\] DEBUG:  partition constraint for table "ev_new" is implied by existing constraints/, $offset),
	"the worker's ATTACH read no row of the table attached");
ok( $node->log_contains(
		qr/\[\d+\] DEBUG:  updated partition constraint for default partition "ev_def" is implied by existing constraints/,
		$offset),
	'nor of the default partition');
is( $node->safe_psql('postgres', "SELECT inhparent::regclass FROM pg_inherits WHERE inhrelid = 'ev_new_account'::regclass"),
	'ev_account', "the table's index is attached to the parent's");
is( $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM ev WHERE id >= 100000 AND id < 300000) = (SELECT count(*) FROM ev_new)"
		  . " AND (SELECT count(*) FROM ev_def WHERE id >= 100000 AND id < 300000) = 0"),
	't', 'the parent reads the rows of the table attached, none from the default partition');

# 2. A row out of the bound at the end of the table attached: the job fails
# in the middle of its chunks, with PostgreSQL's error; the helpers are
# dropped, the table is not attached.
$node->safe_psql('postgres', q{
CREATE TABLE ev_bad (id int, account int, payload text);
INSERT INTO ev_bad SELECT g, g % 100, md5(g::text) FROM generate_series(300000, 399999) g;
INSERT INTO ev_bad VALUES (42, 0, 'out of the bound');
CREATE INDEX ev_bad_account ON ev_bad (account);
});
$job = submit_job($node, 'ALTER TABLE ev ATTACH PARTITION ev_bad FOR VALUES FROM (300000) TO (400000)');
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is( job_field($node, $job, q{error || ' ' || error_sqlstate}),
	'partition constraint of relation "ev_bad" is violated by some row 23514',
	"with PostgreSQL's error");
cmp_ok(job_field($node, $job, 'chunks_done'), '>=', 1, 'after it had checkpointed chunks');
is(helpers(), 'none', 'the helpers are dropped');
is(bound_of('ev_bad'), 'not attached', 'the table is not attached');

# 3. A row of the new bound in the default partition.
$node->safe_psql('postgres', q{
DELETE FROM ev_bad WHERE id = 42;
INSERT INTO ev VALUES (350000, 0, 'in the default partition');
});
$job = submit_job($node, 'ALTER TABLE ev ATTACH PARTITION ev_bad FOR VALUES FROM (300000) TO (400000)');
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is( job_field($node, $job, 'error'),
	'updated partition constraint for default partition "ev_def" would be violated by some row',
	"with PostgreSQL's error for the default partition");
is(helpers(), 'none', 'the helpers are dropped');
$node->safe_psql('postgres', 'DELETE FROM ev WHERE id = 350000');

# 4. Cancelled in the middle: both tables as they were.
($job, $hold) = submit_held_at($node, 'chunk 1', 'ALTER TABLE ev ATTACH PARTITION ev_bad FOR VALUES FROM (300000) TO (400000)');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'cancelled');
is(helpers(), 'none', 'the helpers are dropped');
is(bound_of('ev_bad'), 'not attached', 'the table is not attached');

# 5. A role that owns the parent and the table attached, not the default
# partition: ATTACH needs no more, and neither does the job (the default
# partition's helper is its owner's).  Without owning the table attached,
# PostgreSQL's error at submit.
$node->safe_psql('postgres', q{
CREATE ROLE attacher;
ALTER TABLE ev OWNER TO attacher;
ALTER TABLE ev_bad OWNER TO attacher;
CREATE TABLE ev_other (id int, account int, payload text);
INSERT INTO ev_other VALUES (450000, 0, NULL);
CREATE INDEX ev_other_account ON ev_other (account);
});
($ret, $out, $err) = $node->psql('postgres',
	'SET ROLE attacher; SET background_ddl = on; ALTER TABLE ev ATTACH PARTITION ev_other FOR VALUES FROM (400000) TO (500000)');
like($err, qr/must be owner of table ev_other/, "PostgreSQL's error for a table the role does not own");
$job = submit_job($node, 'ALTER TABLE ev ATTACH PARTITION ev_bad FOR VALUES FROM (300000) TO (400000)',
	before => 'SET ROLE attacher;');
ok(wait_job_state($node, $job, 'succeeded'), "the role's job succeeded");
is(bound_of('ev_bad'), 'ev FOR VALUES FROM (300000) TO (400000)', 'the table is attached');
is(helpers(), 'none', 'the helpers are dropped');

my $writers_said = stop_pgbench($writers, $writers_err);
unlike($writers_said, qr/ERROR|aborted/, 'no writer failed') or diag($writers_said);

# 6. (Without writers, whose rows the default partition takes.) The tree
# changes while a job runs: a partition created and one
# detached (no deadlock, no failure: each chunk locks the parent first, as
# they do), the default partition detached (the job attaches the table all
# the same, and the detached table keeps no helper); then the table
# attached is dropped: the job ends, and the default partition's helper is
# dropped.
$node->safe_psql('postgres', q{
CREATE TABLE ev_six (id int, account int, payload text);
INSERT INTO ev_six SELECT g, g % 100, md5(g::text) FROM generate_series(600000, 619999) g;
CREATE INDEX ev_six_account ON ev_six (account);
});
($job, $hold) = submit_held_at($node, 'chunk 1', 'ALTER TABLE ev ATTACH PARTITION ev_six FOR VALUES FROM (600000) TO (700000)',
	before => 'SET bgddl_test.slow = on;');
release_hold($node, $hold);
($ret, $out, $err) = $node->psql('postgres', q{
CREATE TABLE ev_seven PARTITION OF ev FOR VALUES FROM (700000) TO (800000);
ALTER TABLE ev DETACH PARTITION ev_seven;
DROP TABLE ev_seven;
ALTER TABLE ev DETACH PARTITION ev_def;
}, on_error_stop => 1);
is($ret, 0, 'partition DDL ran while the job checked its rows') or diag($err);
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
is(bound_of('ev_six'), 'ev FOR VALUES FROM (600000) TO (700000)', 'the table is attached');
is(helpers(), 'none', 'no helper is left, on the detached default partition either');
$node->safe_psql('postgres', q{
ALTER TABLE ev ATTACH PARTITION ev_def DEFAULT;
CREATE TABLE ev_eight (id int, account int, payload text);
INSERT INTO ev_eight SELECT g, g % 100, md5(g::text) FROM generate_series(800000, 819999) g;
CREATE INDEX ev_eight_account ON ev_eight (account);
});
($job, $hold) = submit_held_at($node, 'chunk 1', 'ALTER TABLE ev ATTACH PARTITION ev_eight FOR VALUES FROM (800000) TO (900000)');
$node->safe_psql('postgres', 'DROP TABLE ev_eight');
release_hold($node, $hold);
ok( $node->poll_query_until('postgres',
		"SELECT state IN ('cancelled', 'failed') FROM pg_stat_background_ddl WHERE id = $job"),
	'the job ended when the table attached was dropped');
is(helpers(), 'none', "the default partition's helper is dropped");


done_testing();
