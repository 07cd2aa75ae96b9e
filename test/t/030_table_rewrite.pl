# VACUUM FULL as a job, while pgbench writes to the table as its owner
# (updates of every column, the unique key among them, inserts, deletes, a
# rolled-back savepoint), each write made to a mirror table too, in the same
# transaction:
#  1. a job killed (kill -9 of its worker) after its second chunk resumes
#     from its checkpoint and succeeds;
#  2. a job killed at its cut-over resumes and succeeds, with an index
#     created on the table meanwhile;
#  3. a job cancelled at its cut-over leaves the table as it was, nothing left;
#  4. an ALTER TABLE that adds a column during a job fails the job, the table
#     as it was;
#  5. ALTER TABLE ... SET TABLESPACE, paused and resumed, moves the table
#     and its TOAST table;
#  6. an ALTER TABLE ... OWNER TO during a job: the new TOAST table is the
#     new owner's; a fillfactor set before the job applies to the new storage;
#  7. a role with SELECT and TRIGGER cannot (VACUUM's WARNING, no job); the
#     database owner can, and the job reads the table as its owner;
#  8. ALTER TABLE ... SET ACCESS METHOD to an access method that stores rows
#     as heap does, killed after its second chunk, resumes and succeeds: the
#     table has the new access method, and depends on it; and back to heap;
#     to columnar (Citus's, where installed), which does not, it runs as
#     PostgreSQL runs it;
# each time the table holds exactly the mirror's rows, its indexes pass
# amcheck with every row, it keeps its OID, its schema (pg_dump) and its
# readers, and no writer fails.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

# (one worker per job: a hold at "chunk 2" comes before the worker's third
# chunk, which a helper's chunks alongside its first two can make needless,
# the hold then never coming)
my $node = bgddl_node('table_rewrite', q{
background_ddl.batch_time = '20ms'
background_ddl.max_workers_per_job = 1
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION amcheck;
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, gone text, a text, c text);
INSERT INTO t SELECT g, g, 'x', md5(g::text), CASE WHEN g % 10 = 0 THEN repeat(md5(g::text), 200) END
  FROM generate_series(1, 60000) g;
ALTER TABLE t DROP COLUMN gone;
CREATE UNIQUE INDEX t_k ON t (k);
CREATE INDEX t_a ON t (a) WHERE id % 2 = 0;
CREATE INDEX t_lower ON t (lower(a));
COMMENT ON TABLE t IS 'rewritten in the background';
CREATE TABLE mirror AS TABLE t;
ALTER TABLE mirror ADD PRIMARY KEY (id);
CREATE SEQUENCE ids START 100001;
DELETE FROM t WHERE id % 3 = 0;
DELETE FROM mirror WHERE id % 3 = 0;
});

my $script = <<'EOS';
\set id random(1, 60000)
\set v random(1, 1000000)
BEGIN;
UPDATE t SET a = md5(:v::text), k = -k WHERE id = :id;
UPDATE mirror SET a = md5(:v::text), k = -k WHERE id = :id;
UPDATE t SET c = repeat(md5(:v::text), 100) WHERE id = :id + 1;
UPDATE mirror SET c = repeat(md5(:v::text), 100) WHERE id = :id + 1;
DELETE FROM t WHERE id = :id + 2 AND :v % 4 = 0;
DELETE FROM mirror WHERE id = :id + 2 AND :v % 4 = 0;
SELECT nextval('ids') AS new_id \gset
INSERT INTO t VALUES (:new_id, :new_id, md5(:v::text), NULL);
INSERT INTO mirror VALUES (:new_id, :new_id, md5(:v::text), NULL);
SAVEPOINT s;
UPDATE t SET a = 'rolled back' WHERE id = :id;
ROLLBACK TO s;
COMMIT;
EOS
sub filenode
{
	return $node->safe_psql('postgres', q{SELECT pg_relation_filenode('t')});
}

my $table_oid = $node->safe_psql('postgres', q{SELECT 't'::regclass::oid});
my $dump_before = table_schema($node, 'postgres', 't');
start_table_writers($node, $script);

# 1. Killed after its second chunk.
my $filenode = filenode();
my ($job, $hold) = submit_held_at($node, 'chunk 2', 'VACUUM FULL t', user => 'alice');
is( $node->safe_psql('postgres', "SET lock_timeout = '1s'; SELECT count(*) > 0 FROM t"),
	't', 'the table is read during the job');
my $done_before = $node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job");
cmp_ok($done_before, '>', 0, "held after $done_before blocks copied");
kill_held_worker($node, $job, $hold);
restart_table_writers();
cmp_ok($node->safe_psql('postgres', "SELECT work_done FROM background_ddl.job WHERE id = $job"),
	'>=', $done_before, 'the checkpoint survived the crash');
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
isnt(filenode(), $filenode, 'the table has new storage');
is($node->safe_psql('postgres', q{SELECT 't'::regclass::oid}), $table_oid, 'and its OID');
stop_table_writers('killed after a chunk');
check_rewritten_table($node, $job, 'killed after a chunk');
is(table_schema($node, 'postgres', 't'), $dump_before, "the table's schema is the same (pg_dump)");

# 2. Killed at its cut-over, an index made meanwhile.
start_table_writers($node, $script);
$filenode = filenode();
($job, $hold) = submit_held_at($node, 'cutting over', 'VACUUM FULL t', user => 'alice');
is( $node->safe_psql('postgres', qq{SELECT value FROM background_ddl.job, jsonb_each_text(kind_state)
                                     WHERE id = $job AND key = 'index_copies'}) =~ tr/ //,
	7, 'the copies of the four indexes were built before the cut-over');
$node->safe_psql('postgres', 'CREATE INDEX t_k_a ON t (k, a)');
kill_held_worker($node, $job, $hold);
restart_table_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
isnt(filenode(), $filenode, 'the table has new storage');
stop_table_writers('killed at the cut-over');
check_rewritten_table($node, $job, 'killed at the cut-over');
$node->safe_psql('postgres', 'DROP INDEX t_k_a');

# 3. Cancelled at its cut-over.
start_table_writers($node, $script);
$filenode = filenode();
($job, $hold) = submit_held_at($node, 'cutting over', 'VACUUM FULL t', user => 'alice');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)", extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'the job is cancelled');
is(filenode(), $filenode, 'the table keeps its storage');
stop_table_writers('cancelled');
check_rewritten_table($node, $job, 'cancelled');

# 4. A column added during the job (held at its catch-up, which every
#    rewrite reaches).
$filenode = filenode();
($job, $hold) = submit_held_at($node, 'catching up', 'VACUUM FULL t', user => 'alice');
$node->safe_psql('postgres', 'ALTER TABLE t ADD COLUMN added int');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
like(job_field($node, $job, 'error'), qr/table "t" was altered while background DDL job \d+ rewrote it/,
	'saying why');
is(filenode(), $filenode, 'the table keeps its storage');
$node->safe_psql('postgres', 'ALTER TABLE mirror ADD COLUMN added int');
check_rewritten_table($node, $job, 'altered');
is(table_schema($node, 'postgres', 't') =~ s/,\n\s+added integer//r, $dump_before, "the table's schema is the same but the column");

# 5. SET TABLESPACE, as alice (who may create in the tablespace), paused and resumed.
my $location = PostgreSQL::Test::Utils::tempdir;
$node->safe_psql('postgres', qq{
CREATE TABLESPACE rewrite_space LOCATION '$location';
GRANT CREATE ON TABLESPACE rewrite_space TO alice;
ALTER TABLE t DROP COLUMN added;
ALTER TABLE mirror DROP COLUMN added;
});
start_table_writers($node, $script);
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE t SET TABLESPACE rewrite_space',
	user => 'alice');
$node->safe_psql('postgres', "SELECT pause_ddl($job)");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'paused'), 'the SET TABLESPACE job paused');
$node->safe_psql('postgres', "SELECT resume_ddl($job)");
ok(wait_job_state($node, $job, 'succeeded'), 'resumed, it succeeded');
is( $node->safe_psql('postgres', q{
SELECT c.relname, coalesce(ts.spcname, 'default')
  FROM pg_class c LEFT JOIN pg_tablespace ts ON ts.oid = c.reltablespace
 WHERE c.oid IN ('t'::regclass, (SELECT reltoastrelid FROM pg_class WHERE oid = 't'::regclass), 't_k'::regclass)
 ORDER BY c.relname}),
	"pg_toast_$table_oid|rewrite_space\nt|rewrite_space\nt_k|default",
	'the table and its TOAST table moved, its indexes stayed');
like($node->safe_psql('postgres', q{SELECT pg_relation_filepath('t')}), qr/^pg_tblspc\//,
	'its files are in the tablespace');
stop_table_writers('moved');
check_rewritten_table($node, $job, 'moved');
# (where pg_dump says the tablespaces: their lines left out of both)
my $without_tablespaces = sub {
	$_[0] =~ s/^SET default_tablespace = .*\n//mgr =~ s/; Tablespace: \S+$//mgr =~ s/\n{3,}/\n\n/gr;
};
is($without_tablespaces->(table_schema($node, 'postgres', 't')), $without_tablespaces->($dump_before),
	"the table's schema is the same but its tablespace");

# 6. The table's owner changes during the job: its new TOAST table is the
# new owner's too.  With a lower fillfactor set before (on a table
# compacted by a blocking VACUUM FULL), the new storage has room left on
# each page.
$node->safe_psql('postgres', 'CREATE ROLE bob; VACUUM FULL t; ALTER TABLE t SET (fillfactor = 50)');
my $pages_before = $node->safe_psql('postgres', q{SELECT pg_relation_size('t') / 8192});
($job, $hold) = submit_held_at($node, 'chunk 2', 'VACUUM FULL t', user => 'alice');
$node->safe_psql('postgres', 'ALTER TABLE t OWNER TO bob');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
is( $node->safe_psql('postgres', q{
SELECT t.relowner::regrole || ' ' || toast.relowner::regrole
  FROM pg_class t JOIN pg_class toast ON toast.oid = t.reltoastrelid WHERE t.oid = 't'::regclass}),
	'bob bob', "the table's TOAST table belongs to its new owner");
cmp_ok($node->safe_psql('postgres', q{SELECT pg_relation_size('t') / 8192}), '>', 1.5 * $pages_before,
	'the new storage has the fillfactor set before the job');
check_rewritten_table($node, $job, 'owner changed');

# 7. Who may: a role with SELECT and TRIGGER on the table is skipped with
# VACUUM's WARNING, and no job; the database's owner may, as with VACUUM
# FULL, and the job reads the table as its owner (the hidden heap is
# theirs, never the database owner's).
$node->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
GRANT SELECT, TRIGGER ON t TO mallory;
CREATE ROLE dbowner LOGIN;
ALTER DATABASE postgres OWNER TO dbowner;
});
my $jobs_before = $node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job');
my ($rc, $out, $err) = $node->psql('postgres', 'SET background_ddl = on; VACUUM FULL t;',
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/WARNING:  skipping "t" --- only table or database owner can vacuum it/,
	"a role with SELECT and TRIGGER gets VACUUM's WARNING");
is($node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job'), $jobs_before,
	'and submits no job');
$filenode = filenode();
($job, $hold) = submit_held_at($node, 'chunk 2', 'VACUUM FULL t', user => 'dbowner');
is( $node->safe_psql('postgres', q{
SELECT relowner::regrole FROM pg_class
 WHERE relnamespace = 'background_ddl'::regnamespace AND relname LIKE 'rewrite\_%'}),
	'bob', "the database owner's job: the hidden heap is the table owner's");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), "the database owner's job succeeded");
isnt(filenode(), $filenode, 'the table has new storage');
check_rewritten_table($node, $job, "the database owner's");

# 8. SET ACCESS METHOD, as the table's owner, under writes
$node->safe_psql('postgres', q{
CREATE ACCESS METHOD heap2 TYPE TABLE HANDLER heap_tableam_handler;
ALTER ROLE bob LOGIN;
GRANT ALL ON t TO alice;
});
my $access_method = q{
SELECT a.amname || ' ' || (SELECT count(*) FROM pg_depend d
                            WHERE d.classid = 'pg_class'::regclass AND d.objid = 't'::regclass
                              AND d.refclassid = 'pg_am'::regclass)
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 't'::regclass};
start_table_writers($node, $script);
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE t SET ACCESS METHOD heap2', user => 'bob');
is($node->safe_psql('postgres', $access_method), 'heap 0', 'during the job the table is still heap');
kill_held_worker($node, $job, $hold);
restart_table_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'the SET ACCESS METHOD job resumed and succeeded');
is($node->safe_psql('postgres', $access_method), 'heap2 1',
	'the table has the new access method, and depends on it (heap, pinned, had no entry)');
is($node->safe_psql('postgres', q{SELECT 't'::regclass::oid}), $table_oid, 'the table keeps its OID');
$job = submit_job($node, 'ALTER TABLE t SET ACCESS METHOD heap', before => 'SET ROLE bob;');
ok(wait_job_state($node, $job, 'succeeded'), 'and back to heap');
is($node->safe_psql('postgres', $access_method), 'heap 0', 'heap again, with no dependency entry');
stop_table_writers('access method changed');
check_rewritten_table($node, $job, 'access method changed');
is($node->safe_psql('postgres', 'DROP ACCESS METHOD heap2'), '', 'nothing depends on heap2 any more');
SKIP:
{
	skip 'citus_columnar is not installed', 2
	  unless $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_available_extensions WHERE name = 'citus_columnar'});
	$node->safe_psql('postgres', 'CREATE EXTENSION citus_columnar');
	my $jobs = $node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job');
	($rc, $out, $err) = $node->psql('postgres', 'SET background_ddl = on; ALTER TABLE t SET ACCESS METHOD columnar');
	like($err, qr/access method does not store rows as heap does/,
		'to columnar, it runs as PostgreSQL runs it, saying why');
	is( $node->safe_psql('postgres', q{SELECT (SELECT count(*) FROM background_ddl.job) || ' ' || a.amname
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 't'::regclass}),
		($jobs) . ' columnar', 'no job, and the table is columnar');
}

$node->stop;
done_testing();
