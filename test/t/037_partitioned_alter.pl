# ALTER TABLE ... ALTER COLUMN ... TYPE and ADD COLUMN of a partitioned table:
# a job for each leaf partition, published together (one transaction runs
# the statement on the partitioned table, its leaves emptied, and swaps
# every leaf's storage).  The tree: a partition made by PARTITION OF, one
# attached with its own column order and a dropped column, one partitioned
# again by hash.  pgbench writes to it as its owner (updates of the changed
# columns, inserts, deletes), each write made to a plain mirror table too,
# in the same transaction; the mirror is altered by the blocking statement
# at the end of each case, and the tree must then hold exactly its rows.
#  1. a type change and a USING expression, one leaf's worker killed after
#     its second chunk: every job succeeds, the schema of every table of the
#     tree is exactly the blocking statement's (pg_dump of both: the same
#     tree made and altered in another database), each leaf keeps its OID;
#  2. killed in the group's publication, before its commit: nothing is
#     published, then all is;
#  3. one leaf's job cancelled: every job of the statement is cancelled, the
#     tree as it was, nothing left;
#  4. a partition made during the jobs (by another session, with rows): the
#     statement at the end rewrites it with the others' publication (the
#     USING expressions keep the values the writers write: rows written after
#     the publication are as the blocking statement run at the end leaves
#     them);
#  5. a partition detached during the jobs: the statement fails, saying
#     which, the tree as it was; one dropped: every job is cancelled;
#  6. the session's next statements wait for the jobs: an index on the
#     changed column is built for its new type;
#  7. at submit: in a transaction block, as PostgreSQL runs it (saying
#     why); a role that owns the partitioned table but not a partition:
#     PostgreSQL's error, no job.
# Each time the leaves' indexes pass amcheck with every row, and no writer
# fails.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('partitioned_alter', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});

my $setup = q{
CREATE EXTENSION IF NOT EXISTS amcheck;
SET ROLE alice;
CREATE TABLE t (id int NOT NULL, k int NOT NULL, a text, c text, n int NOT NULL DEFAULT 0,
  PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE t_1 PARTITION OF t FOR VALUES FROM (MINVALUE) TO (20001);
CREATE TABLE t_2 (c text, gone int, n int NOT NULL DEFAULT 0, a text, k int NOT NULL, id int NOT NULL);
ALTER TABLE t_2 DROP COLUMN gone;
ALTER TABLE t ATTACH PARTITION t_2 FOR VALUES FROM (20001) TO (40001);
CREATE TABLE t_3 PARTITION OF t FOR VALUES FROM (40001) TO (100000000) PARTITION BY HASH (id);
CREATE TABLE t_3a PARTITION OF t_3 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE t_3b PARTITION OF t_3 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE INDEX t_k ON t (k);
CREATE INDEX t_lower ON t (lower(a)) WHERE id % 2 = 0;
COMMENT ON COLUMN t.k IS 'made wider in the background';
};
my $alter1 = 'ALTER TABLE t ALTER COLUMN k TYPE bigint, ALTER COLUMN a TYPE varchar(40) USING upper(a)';
mirrored_table_setup($node, $setup, $alter1);
my @leaves = qw(t_1 t_2 t_3a t_3b);

my $script = mirrored_writes_script();

# The jobs of the statement that submitted job $last (its group's), as "id id ..."
sub group_jobs
{
	my ($last) = @_;
	return $node->safe_psql('postgres', qq{
SELECT string_agg(id::text, ' ' ORDER BY id) FROM background_ddl.job
 WHERE group_id = (SELECT group_id FROM background_ddl.job WHERE id = $last)});
}

sub wait_jobs_state
{
	my ($jobs, $state) = @_;
	my $list = join(',', split(' ', $jobs));
	return $node->poll_query_until('postgres',
		"SELECT bool_and(state = '$state') FROM pg_stat_background_ddl WHERE id IN ($list)");
}

# Every column of every table of the tree, with its type (read from the
# catalog without locking the tables: while the group's publication holds
# them)
sub column_types
{
	return $node->safe_psql('postgres', q{
WITH RECURSIVE tree(relid) AS (
  SELECT 't'::regclass::oid UNION ALL SELECT inhrelid FROM pg_inherits JOIN tree ON inhparent = relid)
SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod), ', '
                  ORDER BY attrelid::regclass::text, attname)
  FROM pg_attribute WHERE attrelid IN (SELECT relid FROM tree) AND attnum > 0 AND NOT attisdropped});
}

sub leaf_oids
{
	return $node->safe_psql('postgres', q{
SELECT string_agg(relid::oid::text, ' ' ORDER BY relid::text) FROM pg_partition_tree('t') WHERE isleaf});
}

# The mirror altered by the blocking statement; then the tree holds its rows,
# every index of every leaf passes amcheck, and nothing of the jobs is left
sub check_tree
{
	my ($jobs, $what, $alter) = @_;
	$node->safe_psql('postgres', $alter =~ s/ALTER TABLE t /ALTER TABLE mirror /r) if $alter;
	is(differences($node, 't', 'TABLE mirror'), '0', "$what: the tree holds the mirror's rows")
	  or diag($node->safe_psql('postgres', q{
(SELECT 'tree', id, k, a, length(c), right(c, 3), n FROM (TABLE t EXCEPT ALL TABLE mirror) d LIMIT 5)
UNION ALL
(SELECT 'mirror', id, k, a, length(c), right(c, 3), n FROM (TABLE mirror EXCEPT ALL TABLE t) d LIMIT 5)}));
	is( $node->safe_psql('postgres', q{
SELECT count(*) FROM pg_index i, LATERAL bt_index_parent_check(i.indexrelid, true)
 WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('t') WHERE isleaf)}),
		$node->safe_psql('postgres', q{
SELECT count(*) FROM pg_index WHERE indrelid IN (SELECT relid FROM pg_partition_tree('t') WHERE isleaf)}),
		"$what: every index of every leaf passes amcheck with every row");
	check_no_leftovers($node, $_) for split(' ', $jobs);
	is( $node->safe_psql('postgres', q{
SELECT count(*) FROM pg_class WHERE relnamespace = 'background_ddl'::regnamespace
   AND (relname LIKE 'rewrite\_%' OR relname LIKE 'index\_%')}),
		'0', "$what: no hidden heap or index copy left");
	return;
}

# Submit the statement as alice, its jobs' workers held at a hold point
# (the leaves' jobs run side by side: one or more wait there); returns the
# last job and the session that holds them
sub submit_group_held_at
{
	my ($point, $statement) = @_;
	my $hold = hold_at($node, $point);
	my $last = submit_job($node, $statement, user => 'alice');
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted"),
		"held at '$point': $statement");
	return ($last, $hold);
}

my $oids = leaf_oids();
start_table_writers($node, $script);

# 1. One leaf's worker killed after its second chunk.
my ($last, $hold) = submit_group_held_at('chunk 2', $alter1);
my $jobs = group_jobs($last);
is(scalar(split ' ', $jobs), 4, 'a job for each of the four leaf partitions');
is( $node->safe_psql('postgres', qq{
SELECT string_agg(target || ' ' || cutover_group, ', ' ORDER BY id) FROM pg_stat_background_ddl
 WHERE id IN (@{[ join(',', split(' ', $jobs)) ]})}),
	join(', ', map { "public.$_ ALTER TABLE public.t" } @leaves),
	'each for its leaf, in a group of their own');
is( $node->safe_psql('postgres', "SET lock_timeout = '1s'; SELECT count(*) > 0 FROM t"),
	't', 'the tree is read during the jobs');
like(column_types(), qr/t_2\.k integer/, 'with its old types');
my $held = $node->safe_psql('postgres',
	"SELECT id FROM pg_stat_background_ddl WHERE id IN (@{[ join(',', split(' ', $jobs)) ]}) AND pid IS NOT NULL
	   AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted)
	 LIMIT 1");
kill_held_worker($node, $held, $hold);
restart_table_writers();
ok(wait_jobs_state($jobs, 'succeeded'), 'every job resumed and succeeded');
is(leaf_oids(), $oids, 'each leaf keeps its OID');
unlike(column_types(), qr/\.k integer|\.a text/, 'every table of the tree has the new types');
stop_table_writers('changed types');
check_tree($jobs, 'changed types', $alter1);
is(table_schema($node, 'postgres', 't*'), table_schema($node, 'blocking', 't*'),
	"the tree's schema is the blocking statement's (pg_dump)");

# 2. Killed in the group's publication, before its commit.
my $alter2 = 'ALTER TABLE t ALTER COLUMN k TYPE numeric';
start_table_writers($node, $script);
($last, $hold) = submit_group_held_at('publishing its group: before its commit', $alter2);
$jobs = group_jobs($last);
$held = $node->safe_psql('postgres',
	"SELECT id FROM pg_stat_background_ddl WHERE id IN (@{[ join(',', split(' ', $jobs)) ]})
	   AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted)
	 LIMIT 1");
like(column_types(), qr/t_2\.k bigint/, 'held before its commit: nothing is published yet');
kill_held_worker($node, $held, $hold);
restart_table_writers();
ok(wait_jobs_state($jobs, 'succeeded'), 'every job resumed and succeeded');
unlike(column_types(), qr/\.k bigint/, 'k is numeric in every table');
stop_table_writers('killed in the publication');
check_tree($jobs, 'killed in the publication', $alter2);

# 3. One leaf's job cancelled.
start_table_writers($node, $script);
my $types = column_types();
($last, $hold) = submit_group_held_at('chunk 2', 'ALTER TABLE t ALTER COLUMN c TYPE varchar(100000)');
$jobs = group_jobs($last);
$node->safe_psql('postgres', "SELECT cancel_ddl((string_to_array('$jobs', ' '))[2]::bigint)",
	extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_jobs_state($jobs, 'cancelled'), 'every job of the statement is cancelled');
is(column_types(), $types, 'the tree keeps its types');
is(leaf_oids(), $oids, 'and its leaves');
stop_table_writers('cancelled');
check_tree($jobs, 'cancelled');

# 4. A partition made during the jobs, with rows.
start_table_writers($node, $script);
# (the writers write lower-case values of c, which lower() keeps: rows written
# after the publication are as the blocking statement at the end leaves them)
my $alter4 = 'ALTER TABLE t ALTER COLUMN c TYPE varchar(100000) USING lower(c)';
($last, $hold) = submit_group_held_at('chunk 2', $alter4);
$jobs = group_jobs($last);
$node->safe_psql('postgres', q{
CREATE TABLE t_4 PARTITION OF t FOR VALUES FROM (100000000) TO (200000000);
INSERT INTO t (id, k, a, c, n) SELECT g, g, 'new', 'MADE DURING THE JOBS', 0 FROM generate_series(100000000, 100000099) g;
INSERT INTO mirror (id, k, a, c, n) SELECT g, g, 'new', 'MADE DURING THE JOBS', 0 FROM generate_series(100000000, 100000099) g;
}, extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_jobs_state($jobs, 'succeeded'), 'every job succeeded');
like(column_types(), qr/t_4\.c character varying\(100000\)/, 'the new partition has the new type');
is($node->safe_psql('postgres', q{SELECT count(*) FROM t_4 WHERE c = 'made during the jobs'}), '100',
	"its rows were rewritten with the others' publication");
stop_table_writers('a partition made meanwhile');
check_tree($jobs, 'a partition made meanwhile', $alter4);
$node->safe_psql('postgres', q{DROP TABLE t_4; DELETE FROM mirror WHERE id >= 100000000});

# 5. A partition detached during the jobs.
$types = column_types();
($last, $hold) = submit_group_held_at('chunk 2', 'ALTER TABLE t ALTER COLUMN k TYPE bigint');
$jobs = group_jobs($last);
$node->safe_psql('postgres', 'ALTER TABLE t DETACH PARTITION t_2', extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
my $list = join(',', split(' ', $jobs));
ok( $node->poll_query_until('postgres',
		"SELECT bool_and(state IN ('failed', 'cancelled')) AND bool_or(state = 'failed')
		   FROM pg_stat_background_ddl WHERE id IN ($list)"),
	'the statement failed');
like( $node->safe_psql('postgres',
		"SELECT error_detail FROM pg_stat_background_ddl WHERE id IN ($list) AND state = 'failed'"),
	qr/It is no longer a partition of "t"/, 'saying which partition');
is(column_types(), join(', ', grep { !/^t_2\./ } split(/, /, $types)), 'the tree keeps its types');
$node->safe_psql('postgres', q{ALTER TABLE t ATTACH PARTITION t_2 FOR VALUES FROM (20001) TO (40001)},
	extra_params => [ '-U', 'alice' ]);
check_tree($jobs, 'a partition detached');

# A partition dropped during the jobs (its rows out of the mirror too): every
# job of the statement is cancelled, saying why, the other partitions as they
# were; then made again, empty.
$types = column_types();
($last, $hold) = submit_group_held_at('chunk 2', 'ALTER TABLE t ALTER COLUMN k TYPE bigint');
$jobs = group_jobs($last);
$list = join(',', split(' ', $jobs));
$node->safe_psql('postgres', q{
DELETE FROM mirror WHERE id IN (SELECT id FROM t_3b);
DROP TABLE t_3b;}, extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_jobs_state($jobs, 'cancelled'), 'a partition dropped: every job of the statement is cancelled');
like( $node->safe_psql('postgres', "SELECT string_agg(error, '; ') FROM pg_stat_background_ddl WHERE id IN ($list)"),
	qr/the target was dropped/, 'saying why');
is(column_types(), join(', ', grep { !/^t_3b\./ } split(/, /, $types)), 'the other tables keep their types');
check_tree($jobs, 'a partition dropped');
$node->safe_psql('postgres', 'CREATE TABLE t_3b PARTITION OF t_3 FOR VALUES WITH (MODULUS 2, REMAINDER 1)',
	extra_params => [ '-U', 'alice' ]);

# 6. The session's next statements: one that becomes a job (an index on a
# changed column) waits for the statement's jobs before its checks, and is
# built for the new type; a query sees the new type.
my ($rc, $out, $err) = $node->psql('postgres', q{
SET background_ddl = on;
ALTER TABLE t ALTER COLUMN n TYPE bigint;
CREATE INDEX t_n ON t (n int8_ops);
SELECT pg_typeof(n) FROM t LIMIT 1;}, extra_params => [ '-U', 'alice' ]);
is($out, 'bigint', 'the next query sees the new type');
like($err, qr/NOTICE:  waiting for background DDL job \d+/, 'the index waited for the jobs');
$last = $node->safe_psql('postgres', 'SELECT max(id) FROM background_ddl.job');
ok(wait_job_state($node, $last, 'succeeded'), 'the index job succeeded');
is( $node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT opcname, ' ') FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0]
 WHERE indexrelid IN (SELECT relid FROM pg_partition_tree('t_n'))}),
	'int8_ops', 'built for the new type');
$jobs = group_jobs($last - 1);
is(scalar(split ' ', $jobs), 4, 'after the four jobs of the statement');
check_tree($jobs, 'the next statements', 'ALTER TABLE t ALTER COLUMN n TYPE bigint');

# 7. At submit.
my $jobs_before = $node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job');
($rc, $out, $err) = $node->psql('postgres', q{
SET background_ddl = on;
BEGIN;
ALTER TABLE t ALTER COLUMN k TYPE bigint;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 't_3a'::regclass AND attname = 'k';
COMMIT;}, extra_params => [ '-U', 'alice' ]);
is($out, 'bigint', 'in a transaction block: the statement ran');
like($err, qr/NOTICE:  this statement runs in this session, not as a background job\nDETAIL:  The table is partitioned and the statement is in a transaction block/,
	'in the session, saying why');
$node->safe_psql('postgres', q{
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO bob;
ALTER TABLE t_3b OWNER TO bob;
});
($rc, $out, $err) = $node->psql('postgres', 'SET background_ddl = on; ALTER TABLE t ALTER COLUMN c TYPE varchar(100000)',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/ERROR:  must be owner of table t_3b/, "a partition of another role: PostgreSQL's error");
is($node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job'), $jobs_before,
	'neither submitted a job');

done_testing();
