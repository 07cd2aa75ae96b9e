# pg_dump while jobs run: the dump holds the committed user-visible state,
# none of the jobs' placeholders, hidden or staging relations; restored into
# a fresh cluster, the jobs' statements run again.  And a DROP that reaches
# a job's objects through a dependency drops them as before (the job is
# cancelled), never the extension.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $conf = q{
background_ddl.batch_time = '20ms'
background_ddl.max_workers = 8
background_ddl.max_workers_per_job = 1
max_worker_processes = 16
};
my $node = bgddl_node('dumped', $conf);
$node->safe_psql('postgres', q{
CREATE TABLE events (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL);
INSERT INTO events SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 100000) g;
CREATE MATERIALIZED VIEW d_refreshed AS SELECT account, max(id) AS top FROM events GROUP BY account;
});

my %statements = (
	d_mv => 'CREATE MATERIALIZED VIEW d_mv AS SELECT id, upper(payload) AS p FROM events',
	d_agg => 'CREATE MATERIALIZED VIEW d_agg AS SELECT account, count(*) AS n FROM events GROUP BY account',
	d_ctas => 'CREATE TABLE d_ctas AS SELECT id, account FROM events',
	d_idx => 'CREATE INDEX d_idx ON events (account)',
	d_refreshed => 'REFRESH MATERIALIZED VIEW d_refreshed',
);

# A paused job and a failed one, then one job of each kind held mid-job
# (paused while held before its first chunk: it would otherwise be done first)
my ($paused, $paused_hold) = submit_held_at($node, 'chunk 0',
	'CREATE MATERIALIZED VIEW d_paused AS SELECT id FROM events');
$node->safe_psql('postgres', "SELECT pause_ddl($paused)");
release_hold($node, $paused_hold);
ok(wait_job_state($node, $paused, 'paused'), 'a job is paused');
my $failed = submit_job($node, 'CREATE MATERIALIZED VIEW d_failed AS SELECT 1 / (id - 50000) AS x FROM events');
ok(wait_job_state($node, $failed, 'failed'), 'a job failed');
my $hold = hold_at($node, 'chunk 0');
my %job;
$job{$_} = submit_job($node, $statements{$_}) for sort keys %statements;
ok(held_at_hold($node, 5), 'five jobs are held before their first chunk (the index before its build)');
cmp_ok( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE relnamespace = 'background_ddl'::regnamespace
		    AND relname ~ '^(ctas|partial)_'"),
	'>=', 3, 'their hidden and staging relations exist');

# A view's placeholder becomes the view: a GRANT on it is kept, but not dumped yet
$node->safe_psql('postgres', 'GRANT SELECT ON d_mv TO PUBLIC');

my $dump = $node->basedir . '/mid_job.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump while the jobs run');
my $listing = `pg_restore -l $dump`;
unlike($listing, qr/\b(d_mv|d_agg|d_ctas|d_idx|d_paused|d_failed|ctas_\d+|partial_\d+|refresh_[\d_]+|rewrite_[\d_]+)\b/,
	'the dump has no placeholder, hidden or staging relation');
like($listing, qr/MATERIALIZED VIEW public d_refreshed/, 'the dump has the refreshed view (its old content)');
like($listing, qr/TABLE DATA public events/, 'the dump has the user\'s table');

# Restored into a fresh cluster: nothing of the jobs; their statements run again
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init;
$restored->append_conf('postgresql.conf', "shared_preload_libraries = 'background_ddl'\n$conf");
$restored->start;
$restored->command_ok([ 'pg_restore', '--exit-on-error', '-d', $restored->connstr('postgres'), $dump ],
	'the dump restores without an error');
is( $restored->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE relname ~ '^(d_mv|d_agg|d_ctas|d_idx|d_paused|d_failed)\$'
		    OR (relnamespace = 'background_ddl'::regnamespace AND relname ~ '^(ctas|partial|refresh)_')"),
	'0', 'restored: none of the unfinished jobs\' objects');
is($restored->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job'), '0', 'restored: no job');
for my $name (sort keys %statements)
{
	my $again = submit_job($restored, $statements{$name});
	ok(wait_job_state($restored, $again, 'succeeded'), "restored: $name runs again");
}

# On the original, the jobs finish; their results are the user's, and dumped
release_hold($node, $hold);
ok(wait_job_state($node, $job{$_}, 'succeeded'), "original: $_ succeeded") for sort keys %statements;
$node->safe_psql('postgres', "SELECT cancel_ddl($paused)");
my $after = $node->basedir . '/after.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $after, '-d', $node->connstr('postgres') ],
	'pg_dump after the jobs');
$listing = `pg_restore -l $after`;
like($listing, qr/MATERIALIZED VIEW public d_mv /, 'after: the view is dumped');
like($listing, qr/ACL public TABLE d_mv /, 'after: with the GRANT made while it was built');
like($listing, qr/MATERIALIZED VIEW public d_agg /, 'after: the aggregating view is dumped');
like($listing, qr/TABLE public d_ctas /, 'after: the table is dumped, as a table');
like($listing, qr/INDEX public d_idx /, 'after: the index is dumped');
unlike($listing, qr/\b(ctas|partial|refresh)_\d+\b/, 'after: nothing hidden is left');

# A DROP that reaches a job's objects through a dependency drops them and
# cancels the job, as before; the extension stays
$node->safe_psql('postgres', q{
CREATE SCHEMA s;
CREATE TABLE s.base AS SELECT g AS id FROM generate_series(1, 100000) g;
});
$hold = hold_at($node, 'cutting over');
my $in_schema = submit_job($node, 'CREATE MATERIALIZED VIEW s.s_mv AS SELECT id FROM s.base');
my $on_base = submit_job($node, 'CREATE TABLE s_ctas AS SELECT id FROM s.base');
ok(held_at_hold($node, 2), 'two jobs on s.base are held');
$node->safe_psql('postgres', 'DROP SCHEMA s CASCADE');
release_hold($node, $hold);
ok(wait_job_state($node, $in_schema, 'cancelled'), 'DROP SCHEMA CASCADE: the job in it is cancelled');
ok(wait_job_state($node, $on_base, 'cancelled'), 'DROP SCHEMA CASCADE: the job over its table is cancelled');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'background_ddl'"),
	'1', 'DROP SCHEMA CASCADE: the extension stays');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname IN ('s_mv', 's_ctas')"),
	'0', 'DROP SCHEMA CASCADE: nothing of the jobs is left');

# DROP OWNED BY a role whose job runs drops the job's objects, not the extension
$node->safe_psql('postgres', q{
CREATE ROLE carol;
GRANT CREATE ON SCHEMA public TO carol;
GRANT SELECT ON events TO carol;
});
$hold = hold_at($node, 'cutting over');    # one batch: carol may not capture events
my $owned = submit_job($node, 'CREATE TABLE carol_ctas AS SELECT id FROM events',
	before => 'SET ROLE carol;');
ok(held_at_hold($node, 1), 'DROP OWNED: the role\'s job is held');
$node->safe_psql('postgres', 'DROP OWNED BY carol');
release_hold($node, $hold);
ok(wait_job_state($node, $owned, 'cancelled'), 'DROP OWNED: the role\'s job is cancelled');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE relname = 'carol_ctas'
		    OR (relnamespace = 'background_ddl'::regnamespace AND relname ~ '^ctas_')"),
	'0', 'DROP OWNED: its placeholder and hidden table are gone');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'background_ddl'"),
	'1', 'DROP OWNED: the extension stays');

# With event triggers (objects created during the DROP would become the
# extension's), such a DROP is refused instead of dropping the extension
$node->safe_psql('postgres', q{
CREATE SCHEMA s2;
CREATE TABLE s2.base AS SELECT g AS id FROM generate_series(1, 1000) g;
CREATE FUNCTION noop_trigger() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN END $$;
CREATE EVENT TRIGGER noop ON sql_drop EXECUTE FUNCTION noop_trigger();
});
$hold = hold_at($node, 'cutting over');
my $guarded = submit_job($node, 'CREATE MATERIALIZED VIEW s2.s2_mv AS SELECT id FROM s2.base');
ok(held_at_hold($node, 1), 'event triggers: the job is held');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP SCHEMA s2 CASCADE');
like($err, qr/cannot drop extension background_ddl or its catalog as a side effect of this statement/,
	'event triggers: the DROP is refused');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'background_ddl'"),
	'1', 'event triggers: the extension stays');
release_hold($node, $hold);
ok(wait_job_state($node, $guarded, 'succeeded'), 'event triggers: the job goes on');
$node->safe_psql('postgres', 'DROP EVENT TRIGGER noop; DROP SCHEMA s2 CASCADE');

done_testing();
