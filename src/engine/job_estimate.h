/*-------------------------------------------------------------------------
 *
 * job_estimate.h
 *	  What estimate_ddl says of a job before it runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_ESTIMATE_H
#define BGDDL_JOB_ESTIMATE_H

/* A sample of a table: a hundredth of its blocks, at least 640 */
#define ESTIMATE_SAMPLE_MIN_BLOCKS	640
#define ESTIMATE_SAMPLE_SHARE		100

typedef struct JobEstimate
{
	char	   *strategy;
	int64		rows;
	int64		bytes;			/* of the result */
	int64		wal_bytes;
	double		seconds;		/* -1: unknown (one batch) */
	char	   *locks;
	int64		sampled_blocks; /* of the table read, measured */
	int64		total_blocks;
} JobEstimate;

#endif							/* BGDDL_JOB_ESTIMATE_H */
