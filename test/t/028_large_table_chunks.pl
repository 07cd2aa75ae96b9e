# A job's chunks over a table larger than a quarter of shared_buffers read
# it through a ring of buffers, as PostgreSQL's sequential scan of such a
# table does: the build does not fill the buffer cache with the table (the
# blocking statement does not either), and its views are exact, a plain one
# and one of partial aggregation, with writes between their chunks.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

# 2048 buffers: a table of more than 512 blocks is read through a ring (of
# 32 buffers)
my $node = bgddl_node('large_table_chunks', q{
shared_buffers = 16MB
autovacuum = off
background_ddl.max_workers_per_job = 2
});
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_buffercache;
-- about 107 rows a block: 1500 blocks
CREATE TABLE events AS SELECT g AS id, g % 100 AS account, md5(g::text) AS payload
  FROM generate_series(1, 160000) g;
VACUUM ANALYZE events;
});
my $blocks = $node->safe_psql('postgres', "SELECT pg_relation_size('events') / 8192");
cmp_ok($blocks, '>', 1400, "the table has $blocks blocks, more than a quarter of shared_buffers");

# How many of the table's blocks are in shared_buffers.  After a restart
# (none), a job whose chunks each read through a ring (32 buffers) and the
# writes between two of them (each statement's scan through a ring too)
# leave a few hundred; reading the table through all of shared_buffers
# would leave all of it.
sub cached_blocks
{
	return $node->safe_psql('postgres', q{
SELECT count(*) FROM pg_buffercache
 WHERE relfilenode = pg_relation_filenode('events') AND reldatabase =
       (SELECT oid FROM pg_database WHERE datname = current_database())});
}

my %queries = (
	mv_plain => 'SELECT id, account, upper(payload) AS p FROM events WHERE account < 50',
	mv_agg => 'SELECT account, count(*) AS n, sum(id) AS total, min(payload) AS first
	             FROM events GROUP BY account');
my $round = 0;
for my $name (sort keys %queries)
{
	$round++;
	$node->restart;
	my ($job, $hold) = submit_held_at($node, 'chunk 2',
		"CREATE MATERIALIZED VIEW $name AS $queries{$name}");
	# (writes in a few blocks: writes all over the table would leave the
	# rest of an aggregate to its cut-over, and its chunks are what this
	# checks)
	$node->safe_psql('postgres', qq{
UPDATE events SET payload = 'changed $round' WHERE id BETWEEN 80000 AND 80300;
DELETE FROM events WHERE id BETWEEN 80301 AND 80320 + $round;
INSERT INTO events SELECT 200000 + 100 * $round + g, g, 'new' FROM generate_series(1, 20) g;
});
	release_hold($node, $hold);
	ok(wait_job_state($node, $job, 'succeeded'), "$name: job $job succeeded");
	cmp_ok(job_field($node, $job, 'chunks_done'), '>', 2, "$name: in more than two chunks");
	my $cached = cached_blocks();
	cmp_ok($cached, '<', 0.6 * $blocks,
		"$name: the build left $cached of the table's $blocks blocks in shared_buffers");
	is(differences($node, $name, $queries{$name}), '0', "$name: equal to its query");
}

done_testing();
