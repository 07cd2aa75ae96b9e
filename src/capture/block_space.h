/*-------------------------------------------------------------------------
 *
 * block_space.h
 *	  A job's block space: one range of block numbers over its driving
 *	  table, partitioned or not, that chunks cover and captured rows are
 *	  placed in.
 *
 * The capture (which places a changed row) and the query layer (which
 * reads and recomputes by range) both use it, and nothing else.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_BLOCK_SPACE_H
#define BGDDL_BLOCK_SPACE_H

#include "storage/block.h"

/*
 * A table whose changed rows are logged one by one, and where its blocks
 * lie in the job's block space: the driving table itself (identity), or one
 * leaf partition of a partitioned driving table.  Block b of the table is
 * job block base + b while b < blocks (its size when the capture began),
 * else beyond + (b - blocks), within an area of beyond_blocks.
 */
typedef struct CaptureSegment
{
	Oid			relid;
	BlockNumber base;
	BlockNumber blocks;
	BlockNumber beyond;
	BlockNumber beyond_blocks;
} CaptureSegment;

/* The job block of block b of a segment's table; false if it has none */
static inline bool
CaptureSegmentJobBlock(const CaptureSegment *segment, BlockNumber b, BlockNumber *job_block)
{
	if (b < segment->blocks)
		*job_block = segment->base + b;
	else if (b - segment->blocks < segment->beyond_blocks)
		*job_block = segment->beyond + (b - segment->blocks);
	else
		return false;
	return true;
}

/* A committed chunk: blocks [start_block, end_block) of the driving table */
typedef struct ChunkRange
{
	int64		start_block;
	int64		end_block;
} ChunkRange;

#endif							/* BGDDL_BLOCK_SPACE_H */
