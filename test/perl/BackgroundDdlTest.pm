# Checks shared by the TAP tests of background_ddl.
package BackgroundDdlTest;

use strict;
use warnings;
use Exporter 'import';
use Test::More;

our @EXPORT = qw(check_no_leftovers);

# After a job has ended: its clean-up finishes (polled, with a bound), and
# it leaves no capture trigger, dirty mark, recomputed row or tid map.
sub check_no_leftovers
{
	my ($node, $job) = @_;
	ok( $node->poll_query_until('postgres',
			"SELECT NOT cleanup_pending FROM background_ddl.job WHERE id = $job"),
		"job $job: clean-up done");
	is( $node->safe_psql('postgres',
			"SELECT (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'background_ddl_capture_${job}%')
			      + (SELECT count(*) FROM background_ddl.dirty WHERE job_id = $job)
			      + (SELECT count(*) FROM background_ddl.recomputed WHERE job_id = $job)
			      + (SELECT count(*) FROM background_ddl.chunk WHERE job_id = $job AND tid_map IS NOT NULL)"),
		'0', "job $job: no triggers, marks, recomputed rows or tid maps left");
	return;
}

1;
