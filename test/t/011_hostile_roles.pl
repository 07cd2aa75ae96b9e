# Roles trying to get more than they have through the extension, and roles
# that would starve the others:
#  1. a role with CREATE on one schema does not become superuser through a
#     job's staging relation (a range type whose subtype_diff is its own),
#     by a DBA's ANALYZE or by autovacuum: the relation is the role's own;
#  2. the staging relation lands in the result's tablespace, not in the
#     session's default_tablespace, which the role may not use;
#  3. the bootstrap superuser's role settings (custom ones too) do not leak
#     into a job;
#  4. one role's jobs, throttled or just busy, do not keep another role's
#     job from a worker: a throttled job gives its worker back, and a role
#     running more than its share gives one back;
#  5. the owner of a table another role captures (with SELECT and TRIGGER)
#     may cancel that job; revoking TRIGGER ends the capture with the
#     privilege error; the owner's writes do not grow the dirty log without
#     bound (one big transaction, or many);
#  8. the stored session settings are gone once the job has ended.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use BackgroundDdlTest;

my $node = bgddl_node('hostile', q{
background_ddl.batch_time = '20ms'
autovacuum_naptime = '1s'
});
my $tablespace_dir = $node->basedir . '/ts';
mkdir $tablespace_dir or die "mkdir $tablespace_dir: $!";

$node->safe_psql('postgres', qq{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA m;
GRANT USAGE, CREATE ON SCHEMA m TO mallory;
GRANT CREATE ON SCHEMA public TO alice, bob;
CREATE TABLESPACE forbidden LOCATION '$tablespace_dir';
});

sub is_superuser
{
	my ($role) = @_;
	return $node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = '$role'");
}

sub staging_of
{
	my ($job) = @_;
	return "background_ddl.partial_$job";
}

# 1. A range type whose subtype_diff tries to make mallory superuser.
$node->safe_psql('postgres', q{
SET ROLE mallory;
CREATE FUNCTION m.escalate() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  ALTER ROLE mallory SUPERUSER;
EXCEPTION WHEN insufficient_privilege THEN NULL;
END $$;
CREATE FUNCTION m.evil_diff(a int4, b int4) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  PERFORM m.escalate();
  RETURN a - b;
END $$;
CREATE TYPE m.evil_range AS RANGE (subtype = int4, subtype_diff = m.evil_diff);
CREATE TABLE m.src AS SELECT g AS id FROM generate_series(1, 50000) g;
});
my $hold = hold_at($node, 'chunk 1');
my $job = submit_job($node,
	'CREATE MATERIALIZED VIEW m.ranges AS SELECT m.evil_range(id % 500, id % 500 + 10) AS r, count(*) AS n FROM m.src GROUP BY 1',
	user => 'mallory');
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted"),
	'range type: the job is held after its first chunk');
is($node->safe_psql('postgres', "SELECT strategy FROM pg_stat_background_ddl WHERE id = $job"),
	'partial aggregation', 'range type: partial aggregation, with a staging relation');
is($node->safe_psql('postgres',
		"SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = '" . staging_of($job) . "'::regclass"),
	'mallory', 'range type: the staging relation belongs to the role whose query fills it');
is($node->safe_psql('postgres', "SELECT pause_ddl($job)", extra_params => [ '-U', 'mallory' ]),
	't', 'range type: paused, the staging relation stays');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'paused'), 'range type: paused');
ok($node->poll_query_until('postgres',
		"SELECT last_autoanalyze IS NOT NULL FROM pg_stat_all_tables WHERE relid = '" . staging_of($job) . "'::regclass"),
	'range type: autovacuum analyzed the staging relation');
is(is_superuser('mallory'), 'f', 'range type: autovacuum did not make mallory superuser');
$node->safe_psql('postgres', 'ANALYZE ' . staging_of($job));
is(is_superuser('mallory'), 'f', "range type: a superuser's ANALYZE did not make mallory superuser");
$node->safe_psql('postgres', "SELECT resume_ddl($job)");
ok(wait_job_state($node, $job, 'succeeded'), 'range type: the job succeeds after all');
is(differences($node, 'm.ranges',
		'SELECT m.evil_range(id % 500, id % 500 + 10) AS r, count(*) AS n FROM m.src GROUP BY 1'),
	'0', 'range type: exact');
check_no_leftovers($node, $job);

# 2. default_tablespace names a tablespace mallory may not use; the view
#    goes to pg_default.  The staging relation goes with the view.
$hold = hold_at($node, 'chunk 1');
$job = submit_job($node,
	'CREATE MATERIALIZED VIEW m.in_default TABLESPACE pg_default AS SELECT id % 10 AS k, count(*) AS n FROM m.src GROUP BY 1',
	user => 'mallory', before => 'SET default_tablespace = forbidden;');
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted"),
	'tablespace: the job is held');
is($node->safe_psql('postgres',
		"SELECT reltablespace FROM pg_class WHERE oid = '" . staging_of($job) . "'::regclass"),
	'0', "tablespace: the staging relation is in the view's tablespace, not the session's default");
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'succeeded'), 'tablespace: succeeded');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE reltablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'forbidden')"),
	'0', 'tablespace: nothing ever landed in the forbidden tablespace');

# 3. The bootstrap superuser's own role settings stay its own.
$node->safe_psql('postgres', q{
ALTER ROLE postgres SET app.token = 'secret-token';
ALTER ROLE postgres IN DATABASE postgres SET app.other_token = 'secret-other';
ALTER ROLE postgres SET work_mem = '77MB';
});
$job = submit_job($node,
	"CREATE MATERIALIZED VIEW public.settings_seen AS SELECT coalesce(current_setting('app.token', true), '') AS token, coalesce(current_setting('app.other_token', true), '') AS other, current_setting('work_mem') AS work_mem",
	user => 'bob');
ok(wait_job_state($node, $job, 'succeeded'), 'settings: the job succeeded');
is($node->safe_psql('postgres', 'SELECT token, other, work_mem FROM public.settings_seen'),
	'||4MB', "settings: none of the bootstrap superuser's role settings reached bob's job");
$node->safe_psql('postgres', q{
ALTER ROLE postgres RESET ALL;
ALTER ROLE postgres IN DATABASE postgres RESET ALL;
});

# 8. The stored settings are gone once a job has ended.
$job = submit_job($node, 'CREATE MATERIALIZED VIEW public.after_end AS SELECT 1 AS x',
	user => 'bob', before => "SET app.api_key = 'k3y'; SET extra_float_digits = 2;");
ok(wait_job_state($node, $job, 'succeeded'), 'settings at the end: succeeded');
is($node->safe_psql('postgres', "SELECT settings FROM background_ddl.job WHERE id = $job"),
	'{}', 'settings at the end: none kept in the history');

# 4. Starvation.  max_workers is 2: alice's two jobs, throttled, give their
#    workers back; bob's job starts at once.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE public.big (id int, v int);
INSERT INTO public.big SELECT g, g FROM generate_series(1, 200000) g;
CREATE FUNCTION public.slow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN PERFORM pg_sleep(0.0001); RETURN x; END $$;
});
my @throttled = split /\n/, $node->safe_psql('postgres', q{
SET background_ddl = on;
SET client_min_messages = warning;
BEGIN;
CREATE MATERIALIZED VIEW public.a1 AS SELECT id FROM public.big;
SELECT alter_ddl(last_ddl_job(), max_rate => 1) AND last_ddl_job() > 0;
SELECT last_ddl_job();
CREATE MATERIALIZED VIEW public.a2 AS SELECT id FROM public.big;
SELECT alter_ddl(last_ddl_job(), max_rate => 1) AND last_ddl_job() > 0;
SELECT last_ddl_job();
COMMIT;
}, extra_params => [ '-U', 'alice' ]);
@throttled = grep { /^\d+$/ } @throttled;
is(scalar(@throttled), 2, 'starvation: alice submitted two throttled jobs');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_background_ddl WHERE id IN ($throttled[0], $throttled[1])
		   AND waiting_on LIKE 'the rate limit%given back%'"),
	'starvation: both throttled jobs gave their workers back, and say why');
$node->safe_psql('postgres', 'GRANT SELECT ON public.big TO bob');
my $started = time();
$job = submit_job($node, 'CREATE MATERIALIZED VIEW public.b1 AS SELECT count(*) FROM public.big',
	user => 'bob');
ok(wait_job_state($node, $job, 'succeeded'), "starvation: bob's job ran");
cmp_ok(time() - $started, '<', 30, "starvation: bob's job did not wait for alice's");
#    Cancelled, the throttled jobs end and clean up now, not when their rate
#    limit would have let them make their next batch (an hour away).
$started = time();
$node->safe_psql('postgres', "SELECT cancel_ddl($_)") for @throttled;
ok(wait_job_state($node, $_, 'cancelled'), "throttled: job $_ cancelled") for @throttled;
cmp_ok(time() - $started, '<', 30, 'throttled: cancelled at once, not at their next batch');
check_no_leftovers($node, $_) for @throttled;

#    Fairness: alice's two busy jobs hold both workers; bob's job waits
#    until one of alice's gives its worker back, at its next step.
my @busy = map {
	submit_job($node, "CREATE MATERIALIZED VIEW public.busy$_ AS SELECT public.slow(id) AS id FROM public.big",
		user => 'alice')
} (1, 2);
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_background_ddl WHERE id IN ($busy[0], $busy[1]) AND state = 'running'"),
	"fairness: alice's two jobs run");
$started = time();
$job = submit_job($node, 'CREATE MATERIALIZED VIEW public.b2 AS SELECT id FROM public.big WHERE id < 100',
	user => 'bob');
ok(wait_job_state($node, $job, 'succeeded'), "fairness: bob's job ran");
cmp_ok(time() - $started, '<', 30, "fairness: bob's job did not wait for alice's to end");
like(slurp_file($node->logfile), qr/asks the worker of job $busy[1] to give its slot back, for job $job/,
	"fairness: alice's newest job was asked to give its worker back");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_background_ddl WHERE id IN ($busy[0], $busy[1]) AND state = 'running' AND pid IS NOT NULL"),
	"fairness: alice's job has a worker again once bob's is done");
$node->safe_psql('postgres', "SELECT cancel_ddl($_)") for @busy;

#    Also with jobs that have no step to give a worker back at: alice's two
#    one-batch jobs (a slow function over generate_series) hold both
#    workers; the one asked to give its worker back is interrupted after
#    JOB_GIVE_BACK_FORCE_SECONDS (10 s), queued again, and started over
#    once bob's job is done.  Nobody cancelled: the log does not say so.
my $log_offset = -s $node->logfile;
my @one_batch = map {
	submit_job($node,
		"CREATE MATERIALIZED VIEW public.one_batch$_ AS SELECT public.slow(g) AS x FROM generate_series(1, 5000000) g",
		user => 'alice')
} (1, 2);
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_background_ddl
		  WHERE id IN ($one_batch[0], $one_batch[1]) AND state = 'running' AND pid IS NOT NULL
		    AND strategy LIKE 'one batch%'"),
	"one batch: alice's two one-batch jobs hold both workers");
$started = time();
$job = submit_job($node, 'CREATE MATERIALIZED VIEW public.b3 AS SELECT id FROM public.big WHERE id < 100',
	user => 'bob');
ok(wait_job_state($node, $job, 'succeeded'), "one batch: bob's job ran");
cmp_ok(time() - $started, '<', 40, "one batch: bob's job did not wait for alice's to end");
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/interrupts the worker of job $one_batch[1], which has not given its slot back for job $job/,
	"one batch: alice's newest job was interrupted, in the scheduler's words");
like($log, qr/job $one_batch[1] gives its worker back until .*: a fair share of the workers for other roles/,
	'one batch: the job says why it stopped');
unlike($log, qr/canceling statement due to user request/, 'one batch: no cancel in the log');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_background_ddl
		  WHERE id IN ($one_batch[0], $one_batch[1]) AND state = 'running' AND pid IS NOT NULL"),
	"one batch: the interrupted job has a worker again once bob's is done");
$node->safe_psql('postgres', "SELECT cancel_ddl($_)") for @one_batch;
ok(wait_job_state($node, $_, 'cancelled'), "one batch: job $_ cancelled") for @one_batch;

# 5. mallory captures alice's table with SELECT and TRIGGER only.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE public.owned (id int PRIMARY KEY, v int);
INSERT INTO public.owned SELECT g, g FROM generate_series(1, 20000) g;
GRANT SELECT, TRIGGER ON public.owned TO mallory;
});
sub mallory_job
{
	my ($name) = @_;
	return submit_job($node, "CREATE MATERIALIZED VIEW m.$name AS SELECT id, v FROM public.owned",
		user => 'mallory');
}
sub captured
{
	my ($job) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_trigger WHERE tgname LIKE 'background\\_ddl\\_capture\\_${job}\\_%'");
}

# A job of mallory's over alice's table, throttled to 1 row/s from its submit
sub throttled_mallory_job
{
	my ($name) = @_;
	my ($id) = grep { /^\d+$/ } split /\n/, $node->safe_psql('postgres', qq{
SET background_ddl = on;
SET client_min_messages = warning;
BEGIN;
CREATE MATERIALIZED VIEW m.$name AS SELECT id, v FROM public.owned;
SELECT alter_ddl(last_ddl_job(), max_rate => 1) IS NULL;
SELECT last_ddl_job();
COMMIT;
}, extra_params => [ '-U', 'mallory' ]);
	return $id;
}

#    The owner cancels the job that captures her table.
$hold = hold_at($node, 'chunk 1');
$job = mallory_job('captures');
ok(captured($job), 'capture: the triggers are on alice\'s table');
is($node->safe_psql('postgres', "SELECT cancel_ddl($job)", extra_params => [ '-U', 'alice' ]),
	't', 'capture: the table owner may cancel the job that captures it');
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'cancelled'), 'capture: cancelled');
check_no_leftovers($node, $job);

#    A revoked TRIGGER ends the capture with the privilege error.
$hold = hold_at($node, 'chunk 1');
$job = mallory_job('revoked');
ok(captured($job), 'revoke: captured');
$node->safe_psql('postgres', 'REVOKE TRIGGER ON public.owned FROM mallory',
	extra_params => [ '-U', 'alice' ]);
release_hold($node, $hold);
ok(wait_job_state($node, $job, 'failed'), 'revoke: the job failed');
is($node->safe_psql('postgres',
		"SELECT error_sqlstate || ' ' || error FROM pg_stat_background_ddl WHERE id = $job"),
	'42501 permission denied for table owned', 'revoke: with the privilege error');
check_no_leftovers($node, $job);
$node->safe_psql('postgres', 'GRANT TRIGGER ON public.owned TO mallory',
	extra_params => [ '-U', 'alice' ]);

#    Also while the job is throttled: its worker comes back every
#    JOB_RECHECK_SECONDS (10 s) to check, and the job fails within seconds,
#    not at its next batch.
$job = throttled_mallory_job('revoked_throttled');
ok($node->poll_query_until('postgres',
		"SELECT waiting_on LIKE 'the rate limit%given back%' FROM pg_stat_background_ddl WHERE id = $job"),
	'revoke while throttled: the job is throttled, without a worker');
$started = time();
$node->safe_psql('postgres', 'REVOKE TRIGGER ON public.owned FROM mallory',
	extra_params => [ '-U', 'alice' ]);
ok(wait_job_state($node, $job, 'failed'), 'revoke while throttled: the job failed');
cmp_ok(time() - $started, '<', 40, 'revoke while throttled: within seconds');
check_no_leftovers($node, $job);
$node->safe_psql('postgres', 'GRANT TRIGGER ON public.owned TO mallory',
	extra_params => [ '-U', 'alice' ]);

#    The owner writes while mallory's job is throttled (no worker): the log
#    stays bounded, in one transaction and over many.
$job = throttled_mallory_job('bounded');
ok(captured($job), 'bounded: captured');
ok($node->poll_query_until('postgres',
		"SELECT waiting_on LIKE 'the rate limit%given back%' FROM pg_stat_background_ddl WHERE id = $job"),
	'bounded: the job is throttled, without a worker');
sub row_marks
{
	my ($job) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE NOT whole_table) || ' ' || count(*) FILTER (WHERE whole_table)
		   FROM background_ddl.dirty WHERE job_id = $job");
}
$node->safe_psql('postgres',
	'INSERT INTO public.owned SELECT g, g FROM generate_series(20001, 130000) g',
	extra_params => [ '-U', 'alice' ]);
my ($rows, $whole) = split / /, row_marks($job);
ok($rows <= 100000 && $whole == 1,
	"bounded: one transaction of 110000 rows logged $rows row marks and a whole_table mark");
$node->safe_psql('postgres', 'UPDATE public.owned SET v = v + 1 WHERE id <= 20000',
	extra_params => [ '-U', 'alice' ])
  for 1 .. 8;
ok($node->poll_query_until('postgres',
		"SELECT stopped FROM background_ddl.capture WHERE job_id = $job"),
	'bounded: past its bound, the job stopped capturing');
# The row marks went (the writes logged 420000); the UPDATEs that were
# running when the capture stopped (their snapshots said that the job
# captures) may have logged theirs since: a few of them at most.
($rows, $whole) = split / /, row_marks($job);
ok($rows <= 4 * 40000 && $whole == 1,
	"bounded: one whole_table mark stands for every change ($rows row marks left)");
$node->safe_psql('postgres', 'UPDATE public.owned SET v = v + 1 WHERE id <= 20000',
	extra_params => [ '-U', 'alice' ]);
is(row_marks($job), "$rows 1", 'bounded: further writes log nothing');
$node->safe_psql('postgres', "SELECT alter_ddl($job, max_rate => 'infinity')");
ok(wait_job_state($node, $job, 'succeeded'), 'bounded: the job succeeds');
is(differences($node, 'm.bounded', 'SELECT id, v FROM public.owned'), '0', 'bounded: exact');
check_no_leftovers($node, $job);

is(is_superuser('mallory'), 'f', 'mallory is still not superuser');
$node->stop;
done_testing();
