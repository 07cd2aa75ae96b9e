# A FOR ALL TABLES publication, with the extension on the publisher and on
# the subscriber: jobs of every kind run on both while the user's tables
# replicate; the jobs succeed exact, the user's tables stay in sync, and
# nothing of ours is sent, applied or stored on the other side.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $conf = q{
wal_level = logical
background_ddl.batch_time = '20ms'
background_ddl.max_workers = 6
background_ddl.max_workers_per_job = 1
max_worker_processes = 16
};
my $pub = bgddl_node('publisher', $conf, allows_streaming => 'logical');
my $sub = bgddl_node('subscriber', $conf);

my $schema = q{
CREATE TABLE events (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL);
};
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres', q{
INSERT INTO events SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 100000) g;
CREATE MATERIALIZED VIEW pub_refreshed AS SELECT account, max(id) AS top FROM events GROUP BY account;
CREATE PUBLICATION everything FOR ALL TABLES;
});

# A job that ended before the subscription: its rows are in the catalog
# tables that the subscription's initial copy reads
my $before = submit_job($pub, 'CREATE MATERIALIZED VIEW pub_before AS SELECT id FROM events');
ok(wait_job_state($pub, $before, 'succeeded'), 'a job ended on the publisher before the subscription');

my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION everything CONNECTION '$connstr' PUBLICATION everything");
$sub->wait_for_subscription_sync($pub, 'everything');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM background_ddl.job'), '0',
	'the initial copy brought none of the publisher\'s jobs');
my $sub_log_start = -s $sub->logfile;
my $pub_log_start = -s $pub->logfile;

# Jobs of each kind on the publisher, one on the subscriber (whose capture
# fires on the apply of the publisher's writes), held before their cut-over
# while the publisher writes
my %pub_jobs = (
	pub_agg => [ 'CREATE MATERIALIZED VIEW pub_agg AS ',
		'SELECT account, count(*) AS n, sum(id) AS s FROM events GROUP BY account' ],
	pub_ctas => [ 'CREATE TABLE pub_ctas AS ', 'SELECT id, upper(payload) AS p FROM events' ],
	pub_refreshed => [ 'REFRESH MATERIALIZED VIEW pub_refreshed', '' ],
	pub_idx => [ 'CREATE INDEX pub_idx ON events (account)', '' ],
);
my $pub_hold = hold_at($pub, 'cutting over');
my $sub_hold = hold_at($sub, 'cutting over');
my %job;
$job{$_} = submit_job($pub, join('', @{ $pub_jobs{$_} })) for sort keys %pub_jobs;
my $sub_query = 'SELECT id, account, length(payload) AS l FROM events';
my $sub_job = submit_job($sub, "CREATE MATERIALIZED VIEW sub_mv AS $sub_query");
ok(held_at_hold($pub, 4), 'publisher: the four jobs are held before their cut-over');
ok(held_at_hold($sub, 1), 'subscriber: its job is held before its cut-over');

write_some($pub, $_, 100000) for 1 .. 5;
$pub->wait_for_catchup('everything');    # applied (and captured) before any cut-over
release_hold($pub, $pub_hold);
release_hold($sub, $sub_hold);

for my $name (sort keys %pub_jobs)
{
	ok(wait_job_state($pub, $job{$name}, 'succeeded'), "publisher: $name succeeded");
}
ok(wait_job_state($sub, $sub_job, 'succeeded'), 'subscriber: its own job succeeded');
for my $name ('pub_agg', 'pub_ctas')
{
	is(differences($pub, $name, $pub_jobs{$name}[1]), '0', "publisher: $name is exact")
	  or diag($pub->safe_psql('postgres', "SELECT * FROM pg_stat_background_ddl WHERE id = $job{$name}"),
		$pub->safe_psql('postgres', "TABLE $name EXCEPT ALL $pub_jobs{$name}[1] LIMIT 5"),
		$pub->safe_psql('postgres', "$pub_jobs{$name}[1] EXCEPT ALL TABLE $name LIMIT 5"));
}
is(differences($pub, 'pub_refreshed',
		'SELECT account, max(id) AS top FROM events GROUP BY account'), '0',
	'publisher: the refresh is exact');
is($pub->safe_psql('postgres', "SELECT indisvalid FROM pg_index WHERE indexrelid = 'pub_idx'::regclass"),
	't', 'publisher: the index is valid');
is(differences($sub, 'sub_mv', $sub_query), '0', 'subscriber: its view is exact under the apply');

# The user's tables replicate on; the subscriber's job is exact under the apply
write_some($pub, 6, 100000);
$pub->wait_for_catchup('everything');
my $digest = 'SELECT md5(string_agg(format(\'%s %s %s\', id, account, payload), \',\' ORDER BY id)) FROM events';
is($sub->safe_psql('postgres', $digest), $pub->safe_psql('postgres', $digest),
	'the user\'s table is the same on both sides');
ok($sub->poll_query_until('postgres', 'SELECT pid IS NOT NULL FROM pg_stat_subscription'),
	'the subscription is running');

# Nothing of ours crossed over
is($sub->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM background_ddl.job'),
	$sub_job, 'subscriber: only its own job in its catalog');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM background_ddl.chunk WHERE job_id <> $sub_job"), '0',
	'subscriber: no chunk of the publisher\'s jobs');
my $sub_log = slurp_file($sub->logfile, $sub_log_start);
unlike($sub_log, qr/logical replication target relation|duplicate key value|ERROR/,
	'subscriber: no error in its log');
my $pub_log = slurp_file($pub->logfile, $pub_log_start);
unlike($pub_log, qr/replica identity|could not be ended/, 'publisher: no replica identity error');
is($sub->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname IN ('pub_agg', 'pub_ctas')"),
	'0', 'subscriber: none of the publisher\'s results arrived');

done_testing();
