/*-------------------------------------------------------------------------
 *
 * capture_trigger.h
 *	  Change capture: the trigger that logs changed rows of a job's base
 *	  tables, and installing, checking and removing it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CAPTURE_H
#define BGDDL_CAPTURE_H

#include "nodes/parsenodes.h"
#include "storage/block.h"

#include "capture/capture_log.h"

extern void CaptureCallbacksInstall(void);
extern void CaptureCheckRename(RenameStmt *stmt);
extern char *CaptureRefusal(Oid relid, Oid roleid);
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

extern void CaptureInstall(int64 job_id, Oid target_oid, List *relids, List *join_attnums,
						   Oid driving_oid, const CaptureSegment *segments, int nsegments,
						   Capture *capture);
extern bool CaptureIntact(const Capture *capture);
extern void CaptureDetach(int64 job_id, Oid target_oid);
extern void CaptureRemove(int64 job_id, Oid target_oid);

#endif							/* BGDDL_CAPTURE_H */
