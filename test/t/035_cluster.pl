# CLUSTER as a job: the table copied a chunk of rows at a time in the
# index's order, while pgbench writes to it as its owner (updates of the
# clustered key among them, inserts, deletes, TOAST), each write made to a
# mirror table too, in the same transaction:
#  1. a job killed (kill -9 of its worker) after its second chunk resumes
#     from its checkpoint and succeeds; the table is in the index's order
#     but for the rows written during the job, and its schema is what a
#     blocking CLUSTER makes of it (pg_dump);
#  2. CLUSTER without an index (the one the table is clustered on), killed
#     once every row is copied and before its chunks are regrouped by block,
#     resumes: with no writer, every row in the index's order;
#  3. a job cancelled during its backfill leaves the table as it was;
#  4. the index dropped during the job fails it, the table as it was;
#  5. what runs as PostgreSQL runs it: an index of two keys, one of a
#     column that may be null (a NOTICE says why), CLUSTER (VERBOSE); and
#     PostgreSQL's errors, with
#     no job: a partial index, an index that is not there, no clustered
#     index, a role that does not own the table;
#  6. CLUSTER and VACUUM FULL of a partitioned table: a job per partition,
#     each partition in its own index's order;
#  7. two sessions' rewrites of one table at once both succeed;
#  8. CLUSTER on an index of one column that may be null: ascending (its
#     rows of a null key last), under writes that make it null and not,
#     killed while it copies the rows of a null key; descending (nulls
#     first) with no writer: every row in the index's order;
#  9. an index of three keys, its rows updated in place first (HOT: a
#     row's tuple id moves within its block, its index entry does not),
#     copied in chunks of about 100 rows, which end inside a key's rows
#     (and not inside its rows of a block): every row once, in order;
# 10. two keys of 30,000 rows each, in chunks of about 1,500 rows, under
#     writes: a chunk reads the rest of its last key from where the chunk
#     before stopped, not from the key's first row again (the table's and
#     the index's rows read, counted by the statistics, stay under 4 a row
#     copied: 2.0 by hand, 12.7 read again from each key's first row), and
#     the table is exact;
# 11. the same, killed (kill -9 of its worker) once a chunk has ended inside
#     the first key's rows: it resumes inside the key (reading the rest of
#     it from the checkpoint's bound), under writes, and the table is exact;
# each time the table holds exactly the mirror's rows, its indexes pass
# amcheck with every row, it keeps its OID, and no writer fails.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('cluster', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION amcheck;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, a text, c text);
INSERT INTO t SELECT g, (g * 7919) % 60000, md5(g::text),
                     CASE WHEN g % 10 = 0 THEN repeat(md5(g::text), 200) END
  FROM generate_series(1, 60000) g;
CREATE INDEX t_k ON t (k);
CREATE INDEX t_a ON t (a);
CREATE INDEX t_part ON t (k) WHERE id % 2 = 0;
CREATE TABLE mirror AS TABLE t;
ALTER TABLE mirror ADD PRIMARY KEY (id);
CREATE SEQUENCE ids START 100001;
GRANT SELECT ON t TO bob;
});

my $script = <<'EOS';
\set id random(1, 60000)
\set v random(1, 1000000)
BEGIN;
UPDATE t SET a = md5(:v::text), k = :v % 60000 WHERE id = :id;
UPDATE mirror SET a = md5(:v::text), k = :v % 60000 WHERE id = :id;
UPDATE t SET c = repeat(md5(:v::text), 100) WHERE id = :id + 1;
UPDATE mirror SET c = repeat(md5(:v::text), 100) WHERE id = :id + 1;
DELETE FROM t WHERE id = :id + 2 AND :v % 4 = 0;
DELETE FROM mirror WHERE id = :id + 2 AND :v % 4 = 0;
SELECT nextval('ids') AS new_id \gset
INSERT INTO t VALUES (:new_id, :v % 60000, md5(:v::text), NULL);
INSERT INTO mirror VALUES (:new_id, :v % 60000, md5(:v::text), NULL);
COMMIT;
EOS

sub filenode
{
	return $node->safe_psql('postgres', q{SELECT pg_relation_filenode('t')});
}

# Rows that come after a row of a greater key, in the table's physical order
sub descents
{
	return $node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT k, lag(k) OVER (ORDER BY ctid) AS before FROM t) s WHERE k < before});
}

sub clustered_on
{
	return $node->safe_psql('postgres', q{
SELECT coalesce(string_agg(indexrelid::regclass::text, ','), 'none') FROM pg_index
 WHERE indrelid = 't'::regclass AND indisclustered});
}

sub last_id
{
	return $node->safe_psql('postgres', 'SELECT last_value FROM ids');
}

my $table_oid = $node->safe_psql('postgres', q{SELECT 't'::regclass::oid});
cmp_ok(descents(), '>', 5000, 'the table is not in the order of t_k');

# 1. Killed after its second chunk, under writes.
start_table_writers($node, $script);
my $filenode = filenode();
my $ids_before = last_id();
my ($job, $hold) = submit_held_at($node, 'chunk 2', 'CLUSTER t USING t_k', user => 'alice');
is( $node->safe_psql('postgres', "SET lock_timeout = '1s'; SELECT count(*) > 0 FROM t"),
	't', 'the table is read during the job');
like(job_field($node, $job, 'strategy'), qr/in the order of index "t_k"/, "the view says the job's order");
my $done_before = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
cmp_ok($done_before, '>', 0, "held after $done_before blocks' worth of rows copied");
kill_held_worker($node, $job, $hold);
restart_table_writers();
cmp_ok($node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job"),
	'>=', $done_before, 'the checkpoint survived the crash');
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
my $ids_after = last_id();
stop_table_writers('killed after a chunk');
isnt(filenode(), $filenode, 'the table has new storage');
is($node->safe_psql('postgres', q{SELECT 't'::regclass::oid}), $table_oid, 'and its OID');
check_rewritten_table($node, $job, 'killed after a chunk');
is(clustered_on(), 't_k', 'the table is clustered on t_k');
# (each transaction of the writers moves at most three rows and adds one)
my $bound = 4 * ($ids_after - $ids_before) + 1;
cmp_ok(descents(), '<=', $bound, "in t_k's order but for the rows written during the job (at most $bound)");
my $dump_job = table_schema($node, 'postgres', 't');
$node->safe_psql('postgres', 'SET ROLE alice; CLUSTER t USING t_k');
is(table_schema($node, 'postgres', 't'), $dump_job, "the table's schema is a blocking CLUSTER's (pg_dump)");

# 2. CLUSTER without an index, killed before it regroups its chunks by block.
my $shuffle = q{
SET ROLE alice;
CREATE TEMP TABLE moved AS SELECT * FROM t WHERE id % 2 = 0;
DELETE FROM t WHERE id % 2 = 0;
INSERT INTO t SELECT * FROM moved ORDER BY random();
};
$node->safe_psql('postgres', $shuffle);
cmp_ok(descents(), '>', 5000, 'half the rows written again in random order: out of order again');
($job, $hold) = submit_held_at($node, 'regrouping', 'CLUSTER t', user => 'alice');
kill_held_worker($node, $job, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
check_rewritten_table($node, $job, 'killed before regrouping');
is(descents(), '0', "with no writer, every row is in t_k's order");
is(clustered_on(), 't_k', 'the table is still clustered on t_k');

# 3. Cancelled during its backfill.
$node->safe_psql('postgres', $shuffle);
start_table_writers($node, $script);
$filenode = filenode();
$node->safe_psql('postgres', 'ALTER TABLE t ALTER a SET NOT NULL');
($job, $hold) = submit_held_at($node, 'chunk 2', 'CLUSTER t USING t_a', user => 'alice');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)", extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'the job is cancelled');
stop_table_writers('cancelled');
is(filenode(), $filenode, 'the table keeps its storage');
is(clustered_on(), 't_k', 'and its clustered index');
check_rewritten_table($node, $job, 'cancelled');

# 4. The index dropped during the job.
$node->safe_psql('postgres', 'SET ROLE alice; CREATE INDEX t_k_id ON t (k, id)');
($job, $hold) = submit_held_at($node, 'chunk 2', 'CLUSTER t USING t_k_id', user => 'alice');
$node->safe_psql('postgres', 'SET ROLE alice; DROP INDEX t_k_id');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
like(job_field($node, $job, 'error'),
	qr/the index that background DDL job \d+ orders table "t" by was dropped/, 'saying why');
is(filenode(), $filenode, 'the table keeps its storage');
is(clustered_on(), 't_k', 'and its clustered index');
check_rewritten_table($node, $job, 'index dropped');

# 5. What runs as PostgreSQL runs it, and PostgreSQL's errors.
my $jobs = $node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job');
$node->safe_psql('postgres', 'ALTER TABLE t ALTER a DROP NOT NULL; CREATE INDEX t_a_k ON t (a, k)');
my ($rc, $out, $err) = $node->psql('postgres',
	'SET ROLE alice; SET background_ddl = on; CLUSTER t USING t_a_k');
like($err, qr/runs in this session.*\n.*DETAIL:  The index's keys are not all columns .* declared NOT NULL unless there is one/,
	'an index of two keys, one of a column that may be null: in this session, saying why');
is(clustered_on(), 't_a_k', 'and clustered on it there');
($rc, $out, $err) = $node->psql('postgres',
	'SET ROLE alice; SET background_ddl = on; CLUSTER (VERBOSE) t USING t_k');
like($err, qr/INFO:  clustering "public.t"/, 'CLUSTER (VERBOSE): as PostgreSQL runs it');
foreach my $case (
	[ 'CLUSTER t USING t_part', 'alice', qr/cannot cluster on partial index "t_part"/ ],
	[ 'CLUSTER t USING nosuch', 'alice', qr/index "nosuch" for table "t" does not exist/ ],
	[ 'CLUSTER mirror', 'alice', qr/there is no previously clustered index for table "mirror"/ ],
	[ 'CLUSTER t USING t_k', 'bob', qr/must be owner of table t/ ])
{
	my ($statement, $role, $error) = @$case;
	($rc, $out, $err) = $node->psql('postgres', "SET ROLE $role; SET background_ddl = on; $statement");
	like($err, $error, "$statement as $role: PostgreSQL's error");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job'), $jobs, 'and no job');
is(differences($node, 't', 'TABLE mirror'), '0', "the table holds the mirror's rows");

# 6. A partitioned table: CLUSTER and VACUUM FULL of it are a job per
# partition (PostgreSQL runs them a partition at a time, each in a
# transaction of its own), each partition clustered on its own index.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE parted (id int NOT NULL, k int NOT NULL, a text) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10000);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (10000) TO (20000);
INSERT INTO parted SELECT g, (g * 7919) % 5000, md5(g::text) FROM generate_series(0, 19999) g;
CREATE INDEX parted_k ON parted (k);
CREATE TABLE parted_mirror AS TABLE parted;
});
my $part_descents = q{
SELECT count(*) FROM (SELECT tableoid, k, lag(k) OVER (PARTITION BY tableoid ORDER BY ctid) AS before
                        FROM parted) s WHERE k < before};
cmp_ok($node->safe_psql('postgres', $part_descents), '>', 1000, 'the partitions are not in the order of k');
$jobs = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM background_ddl.job');
($rc, $out, $err) = $node->psql('postgres',
	'SET ROLE alice; SET background_ddl = on; CLUSTER parted USING parted_k');
is(() = $err =~ /NOTICE:  background DDL job \d+ submitted for public\.parted_\d/g, 2,
	'CLUSTER of the partitioned table: a job per partition');
is($node->safe_psql('postgres', "SELECT string_agg(command, '; ' ORDER BY id) FROM background_ddl.job WHERE id > $jobs"),
	'CLUSTER public.parted_1 USING parted_1_k_idx; CLUSTER public.parted_2 USING parted_2_k_idx',
	"each its partition's statement, with the partition's index");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 AND bool_and(state = 'succeeded') FROM pg_stat_background_ddl WHERE id > $jobs"),
	'both succeeded');
is($node->safe_psql('postgres', $part_descents), '0', "every partition in its index's order");
is($node->safe_psql('postgres', q{
SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY indexrelid::regclass::text) FROM pg_index
 WHERE indrelid IN ('parted_1'::regclass, 'parted_2'::regclass) AND indisclustered}),
	'parted_1_k_idx,parted_2_k_idx', 'each partition clustered on its index, as PostgreSQL leaves it');
is(differences($node, 'parted', 'TABLE parted_mirror'), '0', 'the rows are the same');
my $filenodes = q{SELECT string_agg(pg_relation_filenode(c)::text, ',') FROM unnest('{parted_1,parted_2}'::regclass[]) c};
my $before = $node->safe_psql('postgres', $filenodes);
$jobs = $node->safe_psql('postgres', 'SELECT max(id) FROM background_ddl.job');
$node->safe_psql('postgres', 'SET ROLE alice; SET background_ddl = on; VACUUM FULL parted');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 AND bool_and(state = 'succeeded') FROM pg_stat_background_ddl WHERE id > $jobs"),
	'VACUUM FULL of the partitioned table: a job per partition, both succeeded');
isnt($node->safe_psql('postgres', $filenodes), $before, 'the partitions have new storage');
is(differences($node, 'parted', 'TABLE parted_mirror'), '0', 'the rows are the same');
($rc, $out, $err) = $node->psql('postgres',
	'SET ROLE alice; SET background_ddl = on; BEGIN; CLUSTER parted USING parted_k');
like($err, qr/CLUSTER cannot run inside a transaction block/, "in a transaction block: PostgreSQL's error");
# Who may: bob, who owns the partitions but not the partitioned table, gets
# PostgreSQL's error and WARNING; alice, who owns the partitioned table but
# not bob's partition, has it run as PostgreSQL runs it (which skips bob's
# partition); no job either way
$node->safe_psql('postgres', 'ALTER TABLE parted_1 OWNER TO bob; ALTER TABLE parted_2 OWNER TO bob');
$jobs = $node->safe_psql('postgres', 'SELECT max(id) FROM background_ddl.job');
($rc, $out, $err) = $node->psql('postgres', 'SET ROLE bob; SET background_ddl = on; CLUSTER parted USING parted_k');
like($err, qr/must be owner of table parted/, "CLUSTER by the owner of the partitions only: PostgreSQL's error");
($rc, $out, $err) = $node->psql('postgres', 'SET ROLE bob; SET background_ddl = on; VACUUM FULL parted');
like($err, qr/WARNING:  .*skipping/, "VACUUM FULL by the owner of the partitions only: PostgreSQL's WARNING");
$node->safe_psql('postgres', 'ALTER TABLE parted_1 OWNER TO alice');
($rc, $out, $err) = $node->psql('postgres', 'SET ROLE alice; SET background_ddl = on; CLUSTER parted USING parted_k');
is($rc, 0, "CLUSTER by the partitioned table's owner, one partition bob's: as PostgreSQL runs it");
is($node->safe_psql('postgres', 'SELECT max(id) FROM background_ddl.job'), $jobs, 'no job');
is(differences($node, 'parted', 'TABLE parted_mirror'), '0', 'the rows are the same');

# 7. Two sessions' rewrites of one table at once, CLUSTER and VACUUM FULL:
# each has a hidden heap of its own; the one that swaps second starts its
# build over after the first's swap, and both succeed.
($job, $hold) = submit_held_at($node, 'chunk 2', 'CLUSTER t USING t_k', user => 'alice');
my $second = submit_job($node, 'VACUUM FULL t', user => 'alice');
ok(held_at_hold($node, 2), 'both jobs are held after their second chunk');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the CLUSTER job succeeded');
ok(wait_job_state($node, $second, 'succeeded'), 'the VACUUM FULL job succeeded');
check_rewritten_table($node, $second, 'two rewrites at once');
is(clustered_on(), 't_k', 'the table is clustered on t_k');

# 8. An index of one column that may be null, ascending then descending.
# Rows that come after a row they sort before in the index's order (nulls
# last ascending, first descending), in the table's physical order.
sub descents_of_a
{
	my ($descending) = @_;
	my $before = $descending ? '>' : '<';
	my $late_null = $descending ? 'true' : 'false';    # (what comes too late: a null, or a value)
	return $node->safe_psql('postgres', qq{
SELECT count(*) FROM (SELECT a, lag(a) OVER (ORDER BY ctid) AS before,
                             lag(a IS NULL) OVER (ORDER BY ctid) AS before_null FROM t) s
 WHERE a $before before OR (a IS NULL) <> before_null AND (a IS NULL) = $late_null});
}
$node->safe_psql('postgres', q{
SET ROLE alice;
UPDATE t SET a = NULL WHERE id % 3 = 0;
UPDATE mirror SET a = NULL WHERE id % 3 = 0;
CREATE INDEX t_a_desc ON t (a DESC);
});
my $null_script = <<'EOS';
\set id random(1, 60000)
\set v random(1, 1000000)
BEGIN;
UPDATE t SET a = CASE WHEN :v % 3 = 0 THEN NULL ELSE md5(:v::text) END WHERE id = :id;
UPDATE mirror SET a = CASE WHEN :v % 3 = 0 THEN NULL ELSE md5(:v::text) END WHERE id = :id;
SELECT nextval('ids') AS new_id \gset
INSERT INTO t VALUES (:new_id, :v % 60000, CASE WHEN :v % 2 = 0 THEN md5(:v::text) END, NULL);
INSERT INTO mirror VALUES (:new_id, :v % 60000, CASE WHEN :v % 2 = 0 THEN md5(:v::text) END, NULL);
COMMIT;
EOS
cmp_ok(descents_of_a(0), '>', 5000, 'the table is not in the order of t_a');
start_table_writers($node, $null_script);
$ids_before = last_id();
($job, $hold) = submit_held_at($node, 'copying the rows of a null key', 'CLUSTER t USING t_a',
	user => 'alice');
kill_held_worker($node, $job, $hold);
restart_table_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
$ids_after = last_id();
stop_table_writers('an index on a column that may be null');
check_rewritten_table($node, $job, 'an index on a column that may be null');
is(clustered_on(), 't_a', 'the table is clustered on t_a');
# (each transaction of the writers moves at most one row and adds one)
$bound = 4 * ($ids_after - $ids_before) + 1;
cmp_ok(descents_of_a(0), '<=', $bound,
	"in t_a's order, nulls last, but for the rows written during the job (at most $bound)");
$job = submit_job($node, 'CLUSTER t USING t_a_desc', user => 'alice');
ok(wait_job_state($node, $job, 'succeeded'), 'descending: the job succeeded');
check_rewritten_table($node, $job, 'descending');
is(descents_of_a(1), '0', "with no writer, every row is in t_a_desc's order, nulls first");
is(clustered_on(), 't_a_desc', 'the table is clustered on t_a_desc');

# 9. Few keys, HOT chains, chunks that end inside a key's rows.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE h (id int PRIMARY KEY, k int NOT NULL, v text) WITH (fillfactor = 50);
INSERT INTO h SELECT g, g % 3, md5(g::text) FROM generate_series(1, 1500) g;
CREATE INDEX h_k ON h (k);
CREATE TABLE h_mirror AS TABLE h;
});
my $blocks_of_h = q{SELECT count(DISTINCT (ctid::text::point)[0]) FROM h};
my $blocks = $node->safe_psql('postgres', $blocks_of_h);
$node->safe_psql('postgres', q{
UPDATE h SET v = v || 'x' WHERE id % 4 = 1;
UPDATE h_mirror SET v = v || 'x' WHERE id % 4 = 1;
});
is($node->safe_psql('postgres', $blocks_of_h), $blocks, 'the updates stayed in their blocks (HOT)');
# (400 rows a second: 100 a batch)
$job = submit_paced($node, 'CLUSTER h USING h_k', 400, user => 'alice');
ok(wait_job_state($node, $job, 'succeeded'), 'few keys: the job succeeded');
cmp_ok($node->safe_psql('postgres', "SELECT kind_state->>'order_chunks' FROM background_ddl.job WHERE id = $job"),
	'>=', 10, 'in chunks of some 100 rows');
is(differences($node, 'h', 'TABLE h_mirror'), '0', "few keys: the table holds the mirror's rows");
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM (SELECT k, lag(k) OVER (ORDER BY ctid) AS before FROM h) s WHERE k < before}),
	'0', "few keys: every row in h_k's order");

# 10. Two keys, chunks that end inside a key's rows, under writes.
$node->safe_psql('postgres', q{
SET ROLE alice;
UPDATE t SET k = id % 2;
UPDATE mirror SET k = id % 2;
VACUUM ANALYZE t;
RESET ROLE;
SELECT pg_stat_force_next_flush();
});
# (the statistics of this session's reads are written before it ends)
# (writers at 100 transactions a second: too many changes would leave the
# whole table to the cut-over, whose reads would count too)
my ($writers, $writers_err) = start_pgbench($node, $script, '-U', 'alice', '-R', '100');
($job, $hold) = submit_held_at($node, 'planning', 'CLUSTER t USING t_k', user => 'alice');
# (6,000 rows a second: about 1,500 a chunk)
$node->safe_psql('postgres', qq{
SELECT alter_ddl($job, max_rate => 6000);
SELECT pg_stat_reset_single_table_counters('t'::regclass);
SELECT pg_stat_reset_single_table_counters('t_k'::regclass);
});
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'two keys: the job succeeded');
unlike(stop_pgbench($writers, $writers_err), qr/ERROR|aborted/, 'two keys: no writer failed');
# (a worker's statistics are written at its exit at the latest)
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'background_ddl worker'}),
	'two keys: the workers are gone');
my $chunks = $node->safe_psql('postgres',
	"SELECT kind_state->>'order_chunks' FROM background_ddl.job WHERE id = $job");
cmp_ok($chunks, '>=', 20, "two keys: in $chunks chunks");
my ($read, $copied) = split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT seq_tup_read FROM pg_stat_user_tables WHERE relid = 't'::regclass)
     + (SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = 't_k'::regclass),
       (SELECT count(*) FROM t)});
cmp_ok($read, '<', 4 * $copied, "two keys: $read rows read for $copied copied");
check_rewritten_table($node, $job, 'two keys');

# 11. Two keys, killed inside a key's rows, under writes.
$node->safe_psql('postgres', q{
SET ROLE alice;
UPDATE t SET k = id % 2;
UPDATE mirror SET k = id % 2;
VACUUM ANALYZE t;
});
start_table_writers($node, $script, '-R', '100');
$job = submit_paced($node, 'CLUSTER t USING t_k', 6000, user => 'alice');
ok( $node->poll_query_until('postgres',
		"SELECT (kind_state->>'order_key_rows')::int >= 6000 FROM background_ddl.job WHERE id = $job"),
	'inside a key: a checkpoint after 6,000 rows of the first key');
kill_and_recover($node, job_field($node, $job, 'pid'));
restart_table_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'inside a key: the job resumed and succeeded');
stop_table_writers('killed inside a key');
check_rewritten_table($node, $job, 'killed inside a key');

$node->stop;
done_testing();
