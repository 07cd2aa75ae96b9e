/*-------------------------------------------------------------------------
 *
 * query_estimate.h
 *	  estimate_ddl's measure of a query job before it runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_QUERY_ESTIMATE_H
#define BGDDL_QUERY_ESTIMATE_H

#include "nodes/parsenodes.h"

typedef struct QueryEstimate
{
	char	   *strategy;
	int64		rows;
	int64		bytes;			/* of the result */
	int64		wal_bytes;
	double		seconds;		/* -1: unknown (one batch) */
	char	   *locks;
	int64		sampled_blocks; /* of the driving table's, measured */
	int64		total_blocks;
} QueryEstimate;

extern void QueryJobEstimate(Query *query, QueryEstimate *estimate);

#endif							/* BGDDL_QUERY_ESTIMATE_H */
