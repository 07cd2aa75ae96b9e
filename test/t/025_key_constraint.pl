# ALTER TABLE ... ADD PRIMARY KEY (columns) and ADD UNIQUE (columns) as jobs,
# while pgbench inserts, updates (HOT and not), deletes and rolls back
# savepoints: the key's unique index is built as CREATE UNIQUE INDEX
# CONCURRENTLY builds it, a primary key's columns that allow nulls are
# checked in chunks against a helper CHECK NOT VALID (which refuses a null
# written meanwhile), and the key is added with the index at the end.
# Killed (kill -9) in the middle of the build, the job drops the invalid
# index and builds it again; the index passes amcheck with every heap
# tuple.  A duplicate committed by a writer during the build fails the job
# with PostgreSQL's error; a cancel in the middle of the build leaves
# nothing.  Builds are held in the middle by a writer's open transaction,
# which CREATE INDEX CONCURRENTLY waits for.  A second primary key while a
# job adds one is refused at submit.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('key_constraint', q{
background_ddl.batch_time = '10ms'
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION amcheck;
CREATE TABLE kt (id bigint, b int, pad text, u int);
INSERT INTO kt SELECT g, g % 100, md5(g::text), g FROM generate_series(1, 200000) g;
CREATE INDEX kt_b ON kt (b);
CREATE SEQUENCE kt_ids START 1000000;
CREATE ROLE alice LOGIN;
ALTER TABLE kt OWNER TO alice;
-- (ALTER TABLE ... ADD PRIMARY KEY needs CREATE on the schema, as CREATE INDEX)
GRANT CREATE ON SCHEMA public TO alice;
ALTER SEQUENCE kt_ids OWNER TO alice;
});

# What the key's jobs leave on kt: its constraints and indexes, and relations named kt_*
sub leftovers
{
	return $node->safe_psql('postgres', q{
SELECT coalesce(string_agg(x, ' ' ORDER BY x), 'none') FROM (
  SELECT 'constraint:' || conname AS x FROM pg_constraint WHERE conrelid = 'kt'::regclass
  UNION ALL
  SELECT relname || ':' || relkind::text FROM pg_class
   WHERE relname LIKE 'kt\_%' AND relname NOT IN ('kt_b', 'kt_ids')) s});
}

# Submit a key's statement and hold its build in its first wait: held
# before the build (the hold point), an open transaction writes kt, which
# CREATE INDEX CONCURRENTLY waits for once it has made its invalid index.
# Returns the job and the holding session.
sub submit_held_build
{
	my ($sql, %opts) = @_;
	my ($job, $hold) = submit_held_at($node, 'building the index', $sql, %opts);
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("BEGIN; INSERT INTO kt VALUES (nextval('kt_ids'), 0, 'holder')");
	release_hold($node, $hold);
	return ($job, $holder);
}

# Poll until the job's index exists, invalid: its build waits for the holder
sub building
{
	my ($name) = @_;
	return $node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM pg_index WHERE indexrelid::regclass::text = '$name' AND NOT indisvalid)"
		  . " AND EXISTS (SELECT FROM pg_stat_progress_create_index WHERE relid = 'kt'::regclass)");
}

# Writers: inserts of new keys, updates of a column no index has (HOT) and
# of an indexed one, deletes, and a savepoint rolled back; any error aborts
# a client, and is looked for at the end.
my $script = <<'EOS';
\set id random(1, 200000)
UPDATE kt SET pad = md5(random()::text) WHERE id = :id;
UPDATE kt SET b = b + 1 WHERE id = :id + 1;
DELETE FROM kt WHERE id = :id + 2 AND :id % 10 = 0;
INSERT INTO kt VALUES (nextval('kt_ids'), 1, 'inserted');
BEGIN;
SAVEPOINT s;
INSERT INTO kt VALUES (nextval('kt_ids'), 2, 'rolled back');
ROLLBACK TO s;
UPDATE kt SET pad = 'savepoint' WHERE id = :id + 3;
COMMIT;
EOS
my ($writers, $writers_err);

sub start_writers
{
	$node->safe_psql('postgres', "UPDATE kt SET pad = 'old' WHERE pad = 'inserted'");
	($writers, $writers_err) = start_pgbench($node, $script, '-U', 'alice');
	ok($node->poll_query_until('postgres', "SELECT count(*) > 50 FROM kt WHERE pad = 'inserted'"),
		'the writers write');
}
start_writers();

# 1. ADD PRIMARY KEY (id) as the table's owner, killed in the middle of its
# build: it builds the index again and succeeds; a null written meanwhile
# is refused by the helper.
my ($job, $holder) = submit_held_build('ALTER TABLE kt ADD PRIMARY KEY (id)', user => 'alice');
ok(building('kt_pkey'), 'the build is in the middle: its index invalid');
is( job_field($node, $job, 'strategy'),
	"unique index built concurrently, the key's columns checked for nulls in chunks, then the key added with it",
	'the strategy says what the job does');
my ($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO kt VALUES (NULL, 0, NULL)');
like($err, qr/violates check constraint "kt_not_null"/, 'a null in the key is refused at once');
($ret, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '5s';
UPDATE kt SET pad = 'w' WHERE id % 1000 = 0;
INSERT INTO kt VALUES (nextval('kt_ids'), 3, 'new');
});
is($ret, 0, 'writers are not blocked while the index is built') or diag($err);
my $offset = -s $node->logfile;
kill_and_recover($node, job_field($node, $job, 'pid'));
eval { $holder->quit };    # its session died with the crash
$writers->finish;          # and the writers' connections
start_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
ok($node->log_contains(qr/dropped the invalid index "kt_pkey" left by an interrupted build/, $offset),
	'it dropped the invalid index of the first build');
cmp_ok(job_field($node, $job, 'attempts'), '>=', 2, 'in a second attempt');
is(job_field($node, $job, 'chunks_done'), '0', 'its one nullable column was searched for nulls in the index, not in chunks');
is(leftovers(), 'constraint:kt_pkey kt_pkey:i', 'the primary key is there, on its index, and no helper');
is( $node->safe_psql('postgres',
		"SELECT attnotnull FROM pg_attribute WHERE attrelid = 'kt'::regclass AND attname = 'id'"),
	't', 'its column is NOT NULL');
($ret, $out, $err) = $node->psql('postgres', "SELECT bt_index_check('kt_pkey', true)");
is($ret, 0, 'the index passes amcheck with every heap tuple') or diag($err);
is( $node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM kt'),
	't', 'the keys are unique');
($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO kt VALUES (1, 0, NULL)');
like($err, qr/duplicate key value violates unique constraint "kt_pkey"/, 'and enforced');

# 2. ADD UNIQUE (b, id) INCLUDE (pad) under the writers: no helper, the
# same index and constraint as the blocking statement's.  Its index built
# again under another OID before the cut-over (REINDEX CONCURRENTLY) is
# found by its name.
my $hold = hold_at($node, 'cutting over');
$job = submit_job($node, 'ALTER TABLE kt ADD CONSTRAINT kt_b_id UNIQUE (b, id) INCLUDE (pad)', user => 'alice');
ok(held_at_hold($node), 'held before its cut-over');
my $built = $node->safe_psql('postgres', "SELECT 'kt_b_id'::regclass::oid");
$node->safe_psql('postgres', 'REINDEX INDEX CONCURRENTLY kt_b_id');
isnt($node->safe_psql('postgres', "SELECT 'kt_b_id'::regclass::oid"), $built, 'its index was built again');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the unique constraint job succeeded');
is( $node->safe_psql('postgres', "SELECT conindid = 'kt_b_id'::regclass FROM pg_constraint WHERE conname = 'kt_b_id'"),
	't', 'on the index built again');
is( $node->safe_psql('postgres',
		"SELECT pg_get_constraintdef(oid) || ' ' || pg_get_indexdef(conindid) FROM pg_constraint WHERE conname = 'kt_b_id'"),
	'UNIQUE (b, id) INCLUDE (pad) CREATE UNIQUE INDEX kt_b_id ON public.kt USING btree (b, id) INCLUDE (pad)',
	'the constraint and its index are the statement\'s');
($ret, $out, $err) = $node->psql('postgres', "SELECT bt_index_check('kt_b_id', true)");
is($ret, 0, 'its index passes amcheck') or diag($err);
$node->safe_psql('postgres', 'ALTER TABLE kt DROP CONSTRAINT kt_b_id');

# 3. A duplicate committed by a writer while the build waits (u is unique
# before; the writers leave it alone): the job fails with PostgreSQL's
# error, and leaves nothing.
($job, $holder) = submit_held_build('ALTER TABLE kt ADD UNIQUE (u)');
ok(building('kt_u_key'), 'the unique build is in the middle');
$node->safe_psql('postgres', "UPDATE kt SET u = 5 WHERE id = 10");
$holder->query_safe('COMMIT');
$holder->quit;
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is(job_field($node, $job, 'error'), 'could not create unique index "kt_u_key"', "with PostgreSQL's error");
is(job_field($node, $job, 'error_detail'), 'Key (u)=(5) is duplicated.', 'naming the duplicated key');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_class WHERE relname = 'kt_u_key'"),
	'its index is dropped');
is(leftovers(), 'constraint:kt_pkey kt_pkey:i', 'and nothing else is left');

# 4. Cancelled in the middle of its build: nothing left.
$node->safe_psql('postgres', 'ALTER TABLE kt DROP CONSTRAINT kt_pkey');
($job, $holder) = submit_held_build('ALTER TABLE kt ADD CONSTRAINT kt_key PRIMARY KEY (id, b)');
ok(building('kt_key'), 'the build of the named key is in the middle');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)");
# (dropping its index waits for the writer's transaction, as DROP INDEX does)
$holder->quit;
ok(wait_job_state($node, $job, 'cancelled'), 'cancelled');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_class WHERE relname = 'kt_key'"),
	'its index is dropped');
is(leftovers(), 'none', 'and its helper: the table is as it was');

# 5. A second primary key while a job adds one (its index built, the job
# held before its cut-over): refused at submit with ALTER TABLE's error for
# a second one, as the blocking statement refuses it after the first.
$node->safe_psql('postgres', 'CREATE UNIQUE INDEX kt_id_b ON kt (id, b)');
($job, $hold) = submit_held_at($node, 'cutting over', 'ALTER TABLE kt ADD PRIMARY KEY (id)', user => 'alice');
foreach my $second ('PRIMARY KEY (u)', 'PRIMARY KEY USING INDEX kt_id_b')
{
	($ret, $out, $err) = $node->psql('postgres',
		"SET ROLE alice; SET background_ddl = on; ALTER TABLE kt ADD $second");
	like($err, qr/ERROR:  multiple primary keys for table "kt" are not allowed/,
		"a second primary key is refused at submit: $second");
}
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the first succeeded');
$node->safe_psql('postgres', 'DROP INDEX kt_id_b');
is(leftovers(), 'constraint:kt_pkey kt_pkey:i', 'and it is the only key');

my $writers_said = stop_pgbench($writers, $writers_err);
unlike($writers_said, qr/ERROR|aborted/, 'no writer failed') or diag($writers_said);

done_testing();
