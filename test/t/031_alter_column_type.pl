# ALTER TABLE ... ALTER COLUMN ... TYPE and ADD COLUMN as a job, while pgbench writes to the
# table as its owner (updates of the changed columns, inserts, deletes), each
# write made to a mirror table too, in the same transaction (the values
# written are the USING expression's results: a rewrite converts only the rows
# it finds); the mirror is
# altered by the blocking statement at the end of each case, and the table
# must then hold exactly its rows:
#  1. id and k int -> bigint (the primary key and a unique index), a text
#     column to varchar USING upper(a) (an index on lower(a)): killed after
#     its second chunk, it resumes and succeeds; the table's schema is
#     exactly the blocking statement's (pg_dump of both, the same table made
#     and altered in another database);
#  2. k bigint -> numeric, killed at its cut-over, with an index on k made
#     meanwhile (made again by the ALTER and copied under the lock);
#  3. cancelled at its cut-over: the table as it was, nothing left;
#  4. a USING expression that gives a null to a NOT NULL column for a row
#     written during the job fails the job with PostgreSQL's error, the
#     table as it was;
#  5. at submit, PostgreSQL's errors (no cast, a view on the column, not
#     the owner) and no job; a change that needs no rewrite, and one whose
#     unique keys might not stay distinct, run as PostgreSQL runs them;
#  6. the session's next statement that uses the table sees the new type;
#  7. the USING expression is bound at submit: a function made during the
#     job that its lookup would now find is not called;
#  8. a CHECK constraint on the column made during the job fails the job at
#     its cut-over;
#  9. killed, or the server shut down in immediate mode, at each point of
#     its life, the job resumes and succeeds.
# 10. ADD COLUMN of a stored generated column and of a NOT NULL column with a
#     volatile default, killed after its second chunk: the generated values
#     the blocking statement's, a uuid of its own in each row, the schema
#     the blocking statement's (pg_dump);
# 11. ADD COLUMN at submit: a constant default, a serial column (no job), a
#     role that does not own the table (PostgreSQL's error); a volatile
#     default giving a null to a NOT NULL column fails the job.
# Each time the table's indexes pass amcheck with every row, it keeps its
# OID, and no writer fails.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('alter_column_type', q{
background_ddl.batch_time = '20ms'
restart_after_crash = on
});

# The table, in both databases: postgres (the job's) and blocking (the
# blocking statement's, for its schema)
my $setup = q{
CREATE EXTENSION IF NOT EXISTS amcheck;
SET ROLE alice;
CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, gone text, a text, c text, n int NOT NULL DEFAULT 0);
ALTER TABLE t DROP COLUMN gone;
CREATE UNIQUE INDEX t_k ON t (k);
CREATE INDEX t_lower ON t (lower(a)) WHERE id % 2 = 0;
CREATE INDEX t_n ON t (n);
COMMENT ON COLUMN t.k IS 'made wider in the background';
};
my $alter1 = 'ALTER TABLE t ALTER COLUMN id TYPE bigint, ALTER COLUMN k SET DATA TYPE bigint, '
  . 'ALTER COLUMN a TYPE varchar(40) USING upper(a)';
mirrored_table_setup($node, $setup, $alter1);

my $script = mirrored_writes_script();

sub filenode
{
	return $node->safe_psql('postgres', q{SELECT pg_relation_filenode('t')});
}

# The mirror altered by the blocking statement; then the table holds its
# rows, and the rest of check_rewritten_table
sub check_table
{
	my ($job, $what, $alter) = @_;
	$node->safe_psql('postgres', $alter =~ s/ALTER TABLE t /ALTER TABLE mirror /r) if $alter;
	check_rewritten_table($node, $job, $what);
}

sub column_types
{
	return $node->safe_psql('postgres', q{
SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
  FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0 AND NOT attisdropped});
}

my $table_oid = $node->safe_psql('postgres', q{SELECT 't'::regclass::oid});
start_table_writers($node, $script);

# 1. Killed after its second chunk.
my $filenode = filenode();
my ($job, $hold) = submit_held_at($node, 'chunk 2', $alter1, user => 'alice');
is( $node->safe_psql('postgres', "SET lock_timeout = '1s'; SELECT count(*) > 0 FROM t"),
	't', 'the table is read during the job');
is(column_types(), 'id integer, k integer, a text, c text, n integer', 'with its old types');
kill_held_worker($node, $job, $hold);
restart_table_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
is(column_types(), 'id bigint, k bigint, a character varying(40), c text, n integer',
	'the columns have their new types');
isnt(filenode(), $filenode, 'the table has new storage');
is($node->safe_psql('postgres', q{SELECT 't'::regclass::oid}), $table_oid, 'and its OID');
stop_table_writers('changed to bigint');
check_table($job, 'changed to bigint', $alter1);
is(table_schema($node, 'postgres', 't'), table_schema($node, 'blocking', 't'),
	"the table's schema is the blocking statement's (pg_dump)");

# 2. Killed at its cut-over, an index on the changed column made meanwhile.
my $alter2 = 'ALTER TABLE t ALTER COLUMN k TYPE numeric';
start_table_writers($node, $script);
($job, $hold) = submit_held_at($node, 'cutting over', $alter2, user => 'alice');
my $copies = $node->safe_psql('postgres', q{
SELECT string_agg(pg_relation_filenode(oid)::text, ',') FROM pg_class
 WHERE relnamespace = 'background_ddl'::regnamespace AND relname LIKE 'index\_%'});
is(scalar(split /,/, $copies), 4, 'the copies of the four indexes were built before the cut-over');
$node->safe_psql('postgres', 'CREATE INDEX t_k_a ON t (k, a)');
kill_held_worker($node, $job, $hold);
restart_table_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
like(column_types(), qr/^id bigint, k numeric,/, 'k is numeric');
like( $node->safe_psql('postgres', q{SELECT pg_get_indexdef('t_k_a'::regclass)}),
	qr/\(k, a\)$/, 'the index made meanwhile is there');
is( $node->safe_psql('postgres', qq{
SELECT string_agg(relname, ' ' ORDER BY relname) FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
 WHERE i.indrelid = 't'::regclass AND pg_relation_filenode(c.oid) IN ($copies)}),
	't_k t_lower t_n t_pkey',
	'the four indexes have the storage of their copies, t_k made again for numeric too');
stop_table_writers('killed at the cut-over');
check_table($job, 'killed at the cut-over', $alter2);

# 3. Cancelled at its cut-over.
start_table_writers($node, $script);
$filenode = filenode();
my $types = column_types();
($job, $hold) = submit_held_at($node, 'cutting over', 'ALTER TABLE t ALTER COLUMN c TYPE varchar(100000)',
	user => 'alice');
$node->safe_psql('postgres', "SELECT cancel_ddl($job)", extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'the job is cancelled');
is(filenode(), $filenode, 'the table keeps its storage');
is(column_types(), $types, 'and its types');
stop_table_writers('cancelled');
check_table($job, 'cancelled');

# 4. A null for a NOT NULL column, from a row written during the job.
$filenode = filenode();
($job, $hold) = submit_held_at($node, 'chunk 2',
	'ALTER TABLE t ALTER COLUMN n TYPE bigint USING nullif(n, -1)', user => 'alice');
$node->safe_psql('postgres', 'UPDATE t SET n = -1 WHERE id = 1; UPDATE mirror SET n = -1 WHERE id = 1');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
is(job_field($node, $job, 'error'), 'column "n" of relation "t" contains null values',
	"with the blocking statement's error");
is(filenode(), $filenode, 'the table keeps its storage');
is(column_types(), $types, 'and its types');
check_table($job, 'a null');
$node->safe_psql('postgres', 'UPDATE t SET n = 0 WHERE id = 1; UPDATE mirror SET n = 0 WHERE id = 1');

# 5. At submit.
my $jobs_before = $node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job');
my ($rc, $out, $err) = $node->psql('postgres',
	'SET background_ddl = on; ALTER TABLE t ALTER COLUMN a TYPE int', extra_params => [ '-U', 'alice' ]);
like($err, qr/ERROR:  column "a" cannot be cast automatically to type integer/,
	"no cast: PostgreSQL's error");
$node->safe_psql('postgres', 'CREATE VIEW cs AS SELECT c FROM t', extra_params => [ '-U', 'alice' ]);
($rc, $out, $err) = $node->psql('postgres',
	'SET background_ddl = on; ALTER TABLE t ALTER COLUMN c TYPE varchar(10)',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/ERROR:  cannot alter type of a column used by a view or rule/,
	"a view on the column: PostgreSQL's error");
$node->safe_psql('postgres', q{CREATE ROLE mallory LOGIN; GRANT SELECT, TRIGGER ON t TO mallory});
($rc, $out, $err) = $node->psql('postgres',
	'SET background_ddl = on; ALTER TABLE t ALTER COLUMN id TYPE numeric',
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/ERROR:  must be owner of table t/, "a role with SELECT and TRIGGER: PostgreSQL's error");
$filenode = filenode();
($rc, $out, $err) = $node->psql('postgres',
	'SET background_ddl = on; ALTER TABLE t ALTER COLUMN a TYPE text',
	extra_params => [ '-U', 'alice' ]);
is($rc, 0, 'varchar to text (no rewrite) runs');
is(filenode(), $filenode, 'as PostgreSQL runs it: the storage stays');
($rc, $out, $err) = $node->psql('postgres',
	'SET background_ddl = on; ALTER TABLE t ALTER COLUMN k TYPE bigint',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/NOTICE:  this statement runs in this session, not as a background job\nDETAIL:  Unique index "t_k" has column "k", whose new values might not stay distinct/,
	'numeric to bigint under a unique index runs in the session, saying why');
like(column_types(), qr/^id bigint, k bigint,/, 'and k is bigint');
is($node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job'), $jobs_before,
	'none of these submitted a job');
$node->safe_psql('postgres', q{DROP VIEW cs; ALTER TABLE mirror ALTER COLUMN a TYPE text, ALTER COLUMN k TYPE bigint});

# 6. The session's next statement that uses the table waits for the job.
is( $node->safe_psql('postgres', q{
SET background_ddl = on;
ALTER TABLE t ALTER COLUMN n TYPE bigint;
INSERT INTO t (id, k, n) VALUES (5000000000, 5000000000, 5000000000);
SELECT n FROM t WHERE id = 5000000000;
DELETE FROM t WHERE id = 5000000000;}, extra_params => [ '-U', 'alice' ]),
	'5000000000', 'the next statement sees the new type');
$job = $node->safe_psql('postgres', 'SELECT max(id) FROM background_ddl.job');
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
check_table($job, 'the next statement', 'ALTER TABLE t ALTER COLUMN n TYPE bigint');

# 7. The statement is bound at submit, as the blocking statement is when it
# runs: a function made during the job that would win the USING
# expression's lookup in the submitter's search_path is not called.
$node->safe_psql('postgres', q{
CREATE SCHEMA early AUTHORIZATION alice;
SET ROLE alice;
CREATE FUNCTION public.tag(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT $1 || '+' $$;
});
my $alter7 = 'ALTER TABLE t ALTER COLUMN c TYPE varchar(100000) USING tag(c)';
($job, $hold) = submit_held_at($node, 'chunk 2', $alter7, user => 'alice',
	before => 'SET search_path = early, public;');
$node->safe_psql('postgres', q{
CREATE FUNCTION early.tag(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT 'early' $$;
UPDATE t SET c = 'written during the job' WHERE id = 2;
UPDATE mirror SET c = 'written during the job' WHERE id = 2;
}, extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'the job succeeded');
is($node->safe_psql('postgres', q{SELECT c FROM t WHERE id = 2}), 'written during the job+',
	'a row written during the job got the function bound at submit');
check_table($job, 'bound at submit', $alter7 =~ s/tag/public.tag/r);

# 8. A CHECK constraint on the changed column made during the job (the
# ALTER TABLE at the cut-over would check it on no rows) fails the job.
$filenode = filenode();
$types = column_types();
($job, $hold) = submit_held_at($node, 'chunk 2', 'ALTER TABLE t ALTER COLUMN n TYPE bigint USING n - 1000',
	user => 'alice');
$node->safe_psql('postgres', 'ALTER TABLE t ADD CONSTRAINT t_n_check CHECK (n >= 0)');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'the job failed');
like(job_field($node, $job, 'error'), qr/^table "t" changed while background DDL job \d+ changed its columns$/,
	'saying why');
like(job_field($node, $job, 'error_detail'), qr/now depends on column "n"/, 'and what');
is(filenode(), $filenode, 'the table keeps its storage');
is(column_types(), $types, 'and its types');
check_table($job, 'a constraint made meanwhile');
$node->safe_psql('postgres', 'ALTER TABLE t DROP CONSTRAINT t_n_check');

# 9. A fault at each point of the job's life: its worker killed (-9), or
# the server shut down in immediate mode; the job resumes and succeeds, the
# table exactly the blocking statement's.  (n, bigint since case 6, changes
# between int and bigint each time: both rewrite.)
my $to = 'integer';
for my $point ('planning', 'installing capture', 'chunk 0', 'catching up',
	'building index copies', 'cutting over', 'cleaning up')
{
	for my $fault ('kill', 'immediate')
	{
		my $alter = "ALTER TABLE t ALTER COLUMN n TYPE $to";
		($job, $hold) = submit_held_at($node, $point, $alter, user => 'alice');
		crash_held_worker($node, $job, $hold, $fault);
		ok(wait_job_state($node, $job, 'succeeded'), "$point / $fault: the job succeeded");
		like(column_types(), qr/, n $to$/, "$point / $fault: n is $to");
		check_table($job, "$point / $fault", $alter);
		$to = $to eq 'bigint' ? 'integer' : 'bigint';
	}
}

# 10. ADD COLUMN: a stored generated column and a NOT NULL column whose
# default is volatile, with a column's new default and statistics target
# (subcommands that change only the catalog), one statement, under the
# writers, killed after its
# second chunk.  The generated column's values are exactly the blocking
# statement's (the mirror's); each row has its own uuid, rows written
# during the job too (given theirs when the job copies them); the table's
# schema is the blocking statement's (pg_dump: the table as it was, made in
# the other database and altered there by the blocking statement).
my $before = table_schema($node, 'postgres', 't');
my $alter10 = 'ALTER TABLE t ADD COLUMN g bigint GENERATED ALWAYS AS (k * 2 + n) STORED, '
  . 'ADD COLUMN u uuid NOT NULL DEFAULT gen_random_uuid(), '
  . q{ALTER COLUMN c SET DEFAULT 'none', ALTER COLUMN k SET STATISTICS 300};
start_table_writers($node, $script);
$filenode = filenode();
$types = column_types();
($job, $hold) = submit_held_at($node, 'chunk 2', $alter10, user => 'alice');
is(column_types(), $types, 'the columns are not there during the job');
kill_held_worker($node, $job, $hold);
restart_table_writers();
ok(wait_job_state($node, $job, 'succeeded'), 'the job resumed and succeeded');
is(column_types(), "$types, g bigint, u uuid", 'the columns are added');
isnt(filenode(), $filenode, 'the table has new storage');
stop_table_writers('added columns');
is( $node->safe_psql('postgres', q{SELECT count(*) = count(DISTINCT u) AND count(*) = count(u) FROM t}),
	't', 'each row has a uuid of its own');
$node->safe_psql('postgres', q{
ALTER TABLE mirror ADD COLUMN g bigint GENERATED ALWAYS AS (k * 2 + n) STORED, ADD COLUMN u uuid;
UPDATE mirror SET u = t.u FROM t WHERE t.id = mirror.id;
});
check_table($job, 'added columns');
$node->safe_psql('blocking', 'DROP TABLE t');
$node->safe_psql('blocking', $before);
$node->safe_psql('blocking', $alter10, extra_params => [ '-U', 'alice' ]);
is(table_schema($node, 'postgres', 't'), table_schema($node, 'blocking', 't'),
	"the table's schema is the blocking statement's (pg_dump)");

# 11. ADD COLUMN at submit: a constant default and a serial column run as
# PostgreSQL runs them (no rewrite; a sequence of its own); a role with
# SELECT and TRIGGER gets PostgreSQL's error; a volatile default that gives
# a null to a NOT NULL column fails the job with PostgreSQL's error, the
# table as it was.
$jobs_before = $node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job');
$filenode = filenode();
$node->safe_psql('postgres', q{
SET background_ddl = on;
ALTER TABLE t ADD COLUMN d int NOT NULL DEFAULT 7;
ALTER TABLE t ADD COLUMN s bigserial;
ALTER TABLE t DROP COLUMN d, DROP COLUMN s;
}, extra_params => [ '-U', 'alice' ]);
is($node->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job'), $jobs_before,
	'a constant default and a serial column submit no job');
($rc, $out, $err) = $node->psql('postgres',
	'SET background_ddl = on; ALTER TABLE t ADD COLUMN x float8 DEFAULT random()',
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/ERROR:  must be owner of table t/, "a role with SELECT and TRIGGER: PostgreSQL's error");
$types = column_types();
$job = submit_job($node, 'ALTER TABLE t ADD COLUMN z int NOT NULL DEFAULT nullif((random() * 0)::int, 0)',
	user => 'alice');
ok(wait_job_state($node, $job, 'failed'), 'a null for a NOT NULL column fails the job');
is(job_field($node, $job, 'error'), 'column "z" of relation "t" contains null values',
	"with the blocking statement's error");
is(column_types(), $types, 'the table keeps its columns');
check_table($job, 'a null in an added column');

$node->stop;
done_testing();
