/*-------------------------------------------------------------------------
 *
 * query_catchup.h
 *	  Recomputing the output rows of source rows that changed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CATCHUP_H
#define BGDDL_CATCHUP_H

#include "datatype/timestamp.h"
#include "storage/block.h"
#include "utils/relcache.h"

/* The relations the catch-up of one job works on */
typedef struct QueryCatchUpTarget
{
	int64		job_id;
	Relation	content;		/* receives the rows; RowExclusiveLock held */
	Relation	rule_relation;	/* whose view rule is the query */
	Oid			query_role;		/* whose privileges it runs with */
	Oid			driving_oid;
	bool		partial;		/* content is partial aggregation's staging relation */
	int64		blocks_total;	/* the driving table's size when the capture began */
	TimestampTz job_start;		/* now() in the job's query */
} QueryCatchUpTarget;

extern int	QueryCatchUpBlocks(const QueryCatchUpTarget *target, BlockNumber from_block,
								 BlockNumber to_block, int64 *rows_gained);

#endif							/* BGDDL_CATCHUP_H */
