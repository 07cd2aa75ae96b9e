/*-------------------------------------------------------------------------
 *
 * job_replica_lag.c
 *	  A job waits between its batches while a standby replays too far behind.
 *
 * A build writes WAL much faster than one writer does, and a standby that
 * replays it late serves stale reads, or holds up a synchronous commit.
 * With background_ddl.max_replica_lag (or the job's own, alter_ddl), a job
 * waits before each batch of its backfill, catch-up and cut-over while any
 * walsender's peer (pg_stat_replication) is further behind than that.
 *
 * How far behind, in time: PostgreSQL's replay_lag says it only for WAL the
 * standby has replayed, so it stays put while replay is stuck (paused, or a
 * standby that cannot keep up).  The workers therefore keep samples of the
 * WAL insert position and when it was there, in shared memory (one at each
 * look of any worker, if the WAL moved): WAL past a standby's replay
 * position was written no later than the first sample beyond it, so the
 * standby is at least that long behind.  The larger of that and replay_lag
 * counts.  The samples are shared so that a job's helper, which starts
 * late, sees the lag as the worker that has waited for the standby does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_replica_lag.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"

/*
 * The sample to drop from a full ring: the one whose removal loses least
 * relative to its age (the gap it leaves, over the age of the sample after
 * it).  Old samples thin out and recent ones stay dense, so that a lag
 * measured from them is understated by at most a small share of itself,
 * however long the ring spans.  (Dropping the oldest, the samples of a few
 * workers under writers spanned seconds, and a standby stuck for longer
 * was seen no further behind than that.)  The newest is kept.
 */
static int
SampleToDrop(const JobWalSample *samples, int count, TimestampTz now)
{
	int			drop = 1;
	double		least = 0;

	for (int i = 1; i < count - 1; i++)
	{
		double		loss = (double) (samples[i + 1].at - samples[i - 1].at) /
			Max(now - samples[i + 1].at, 1000);

		if (i == 1 || loss < least)
		{
			drop = i;
			least = loss;
		}
	}
	return drop;
}

/*
 * Add a sample of the WAL insert position (if the WAL moved since the last
 * one) to the workers' shared samples, and copy them all into samples;
 * returns how many there are
 */
static int
TakeWalSamples(TimestampTz now, XLogRecPtr lsn, JobWalSample *samples)
{
	int			count;

	LWLockAcquire(JobShared->lock, LW_EXCLUSIVE);
	count = JobShared->wal_sample_count;
	if (count == 0 || JobShared->wal_samples[count - 1].lsn < lsn)
	{
		if (count == JOB_WAL_SAMPLES)
		{
			int			drop = SampleToDrop(JobShared->wal_samples, count, now);

			memmove(&JobShared->wal_samples[drop], &JobShared->wal_samples[drop + 1],
					sizeof(JobWalSample) * (count - drop - 1));
			count--;
		}
		JobShared->wal_samples[count].at = now;
		JobShared->wal_samples[count].lsn = lsn;
		JobShared->wal_sample_count = ++count;
	}
	memcpy(samples, JobShared->wal_samples, sizeof(JobWalSample) * count);
	LWLockRelease(JobShared->lock);
	return count;
}

/* How long WAL past replay_lsn has been waiting to be replayed, at least */
static double
SecondsBehind(const JobWalSample *samples, int count, TimestampTz now, XLogRecPtr replay_lsn)
{
	for (int i = 0; i < count; i++)
	{
		if (samples[i].lsn > replay_lsn)
			return (now - samples[i].at) / 1000000.0;
	}
	return 0;
}

/* The standby that is furthest behind */
typedef struct StandbyLag
{
	char		name[NAMEDATALEN];
	double		seconds;
	uint64		bytes;
} StandbyLag;

/*
 * Look at the walsenders' peers; false if none is behind.  Caller is in a
 * step.
 */
static bool
FurthestBehind(StandbyLag *worst)
{
	TimestampTz now = GetCurrentTimestamp();
	XLogRecPtr	insert_lsn = GetXLogInsertRecPtr();
	bool		behind = false;
	CatalogAccess access;
	JobWalSample samples[JOB_WAL_SAMPLES];
	int			count = TakeWalSamples(now, insert_lsn, samples);

	/*
	 * As the catalog's role: pg_stat_replication shows the replay positions
	 * only to pg_read_all_stats, and the limit holds for every job
	 */
	CatalogAccessBegin(&access);
	(void) CatalogExecute("SELECT application_name, replay_lsn, "
						  "       coalesce(extract(epoch FROM replay_lag), 0)::float8 "
						  "  FROM pg_catalog.pg_stat_replication WHERE replay_lsn IS NOT NULL",
						  0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		XLogRecPtr	replay_lsn = DatumGetLSN(SPI_getbinval(tuple, desc, 2, &isnull));
		double		replay_lag = DatumGetFloat8(SPI_getbinval(tuple, desc, 3, &isnull));
		double		seconds;

		if (replay_lsn >= insert_lsn)
			continue;
		seconds = Max(SecondsBehind(samples, count, now, replay_lsn), replay_lag);
		if (!behind || seconds > worst->seconds)
		{
			char	   *name = SPI_getvalue(tuple, desc, 1);

			strlcpy(worst->name, name != NULL ? name : "", NAMEDATALEN);
			worst->seconds = seconds;
			worst->bytes = insert_lsn - replay_lsn;
			behind = true;
		}
	}
	CatalogAccessEnd(&access);
	return behind;
}

/*
 * Before a batch: wait while a standby replays further behind than the
 * job's max_replica_lag (or the server's), saying which and how far in
 * pg_stat_background_ddl.waiting_on.  The limit is read
 * again at every look (alter_ddl takes effect at once), and a control
 * request (pause, cancel) ends the wait.  Between steps, it looks in steps
 * of its own; in the middle of a step (one that cannot be cut in batches),
 * in the caller's (JobStepLookBegin).
 */
void
JobRunWaitForStandbys(JobRun *run)
{
	bool		waited = false;

	for (;;)
	{
		int			limit_ms = run->job.max_replica_lag_ms >= 0 ?
			run->job.max_replica_lag_ms : background_ddl_max_replica_lag_ms;
		StandbyLag	worst;
		bool		behind = false;
		char		reason[256];

		if (limit_ms > 0 && !JobControlPending() && !RecoveryInProgress())
		{
			JobStepLookBegin("background_ddl: looking at the standbys");
			behind = FurthestBehind(&worst) && worst.seconds * 1000 > limit_ms;
			JobStepLookEnd();
		}
		if (!behind)
		{
			if (waited)
				JobStepWaitingFor(JOB_WAIT_REPLICA_LAG, NULL);
			return;
		}
		snprintf(reason, sizeof(reason),
				 "%.1f s behind (%.1f MB of WAL), more than max_replica_lag %d ms",
				 worst.seconds, worst.bytes / 1048576.0, limit_ms);
		JobStepWaitingForStandby(reason, worst.name);
		waited = true;
		JobStepSleep(Min(limit_ms / 2, 1000) + 1);
		JobRunReadLimits(run, "background_ddl: waiting for standbys (reading the limits)");
	}
}
