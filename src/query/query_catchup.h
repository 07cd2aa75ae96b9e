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
#include "utils/palloc.h"
#include "utils/relcache.h"

#include "capture/capture_log.h"
#include "query/query_driving.h"

/* The relations the catch-up of one job works on */
typedef struct QueryCatchUpTarget
{
	int64		job_id;
	Relation	content;		/* receives the rows; RowExclusiveLock held */
	Relation	rule_relation;	/* whose view rule is the query */
	List	   *column_changes; /* a table's rewrite's changes (QueryOfTableRows) */
	Oid			query_role;		/* whose privileges it runs with */
	const QueryDriving *driving;	/* its blocks (query_driving.c) */
	bool		partial;		/* content is partial aggregation's staging relation */
	TimestampTz job_start;		/* now() in the job's query */
	int64		chunk_blocks;	/* the backfill's next chunks' size (0: none) */
	int			workers;		/* ... and its workers */
	bool		keeps_order;	/* a rewrite in an index's order (CLUSTER) */
} QueryCatchUpTarget;

/* One catch-up pass: what it read at its start, and how far it got */
typedef struct QueryCatchUpPass
{
	MemoryContext context;		/* everything below; deleted at its end */
	bool		keeps_order;	/* its target's: no chunk is recomputed whole */
	bool		last;			/* the cut-over's: no pass comes after it */
	CapturedMarks marks;		/* its marks; join marks' driving rows among the rows */
	int			next;			/* the first row mark not yet processed */
	ChunkRange *chunks;			/* the job's chunks, ordered */
	bool	   *split;			/* partial aggregation: chunk recomputed as units */
	int			nchunks;
	int			next_chunk;		/* whole_table: the next chunk to recompute */
	ChunkRange *beyond;			/* blocks beyond the chunks at its start */
	int			nbeyond;
	int			next_beyond;	/* whole_table: the next of them to recompute */
	int64		next_block;		/* ... and its next block */
	int64		end_block;		/* how many blocks the driving table had at its start */
	double		rows_per_block; /* the driving table's, as the statistics say */
	int64		sources;		/* changed driving rows at its start */
	int64		sources_done;
	int			map_chunk;		/* whose tid map is loaded (-1: none) */
	TidPair    *map_pairs;
	int			map_npairs;
} QueryCatchUpPass;

extern void QueryCatchUpPassBegin(const QueryCatchUpTarget *target, QueryCatchUpPass *pass,
								  MemoryContext parent);
extern bool QueryCatchUpBatch(const QueryCatchUpTarget *target, QueryCatchUpPass *pass,
							  int64 budget, int64 *rows_gained, int64 *recomputed);
extern int64 QueryCatchUpBacklog(const QueryCatchUpPass *pass);
extern bool QueryCatchUpPassCostsMore(const QueryCatchUpTarget *target,
									  const QueryCatchUpPass *pass);
extern bool QueryCatchUpChangesSpread(const QueryCatchUpTarget *target, bool *too_early);
extern void QueryCatchUpPassEnd(QueryCatchUpPass *pass);

#endif							/* BGDDL_CATCHUP_H */
