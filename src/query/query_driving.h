/*-------------------------------------------------------------------------
 *
 * query_driving.h
 *	  The driving table's rows in one block space, partitioned or not.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_QUERY_DRIVING_H
#define BGDDL_QUERY_DRIVING_H

#include "nodes/parsenodes.h"

#include "capture/block_space.h"

/* The driving table of a chunked job, as its capture began */
typedef struct QueryDriving
{
	Oid			relid;
	bool		partitioned;
	int			nsegments;
	CaptureSegment *segments;	/* by base; one (the identity) for a plain table */
	int64		blocks;			/* [0, blocks): the segments' blocks, what chunks cover */
	List	   *leaves;			/* partitioned: the tree's leaves, sorted */
} QueryDriving;

/* The part of a range of job blocks in one segment: its blocks [start, end) */
typedef struct DrivingPiece
{
	int			segment;
	BlockNumber start;
	BlockNumber end;
} DrivingPiece;

extern List *QueryDrivingTreeLeaves(Oid relid, LOCKMODE lockmode);
extern List *QueryDrivingReadLeaves(Query *query, Oid relid);
extern QueryDriving *QueryDrivingMeasure(Oid relid, List *read_leaves, List *leaves);
extern char *QueryDrivingFormat(const QueryDriving *driving);
extern QueryDriving *QueryDrivingParse(Oid relid, const char *text, int64 blocks);
extern bool QueryDrivingTreeChanged(const QueryDriving *driving);
extern bool QueryDrivingHasSegment(const QueryDriving *driving, Oid relid);
extern DrivingPiece *QueryDrivingPieces(const QueryDriving *driving, int64 start, int64 end,
										int *npieces);
extern int	QueryDrivingSegmentOf(const QueryDriving *driving, BlockNumber job_block,
								  BlockNumber *block);
extern bool QueryDrivingJobTid(const QueryDriving *driving, int segment, ItemPointer tid);
extern ChunkRange *QueryDrivingBeyond(const QueryDriving *driving, int *nranges);
extern double QueryDrivingRowsPerBlock(const QueryDriving *driving, double fallback);
extern Query *QueryDrivingLeafQuery(Query *query, Index rtindex, Oid leaf);
extern bool QueryDrivingWholeRowUsed(Query *query, Index rtindex);

#endif							/* BGDDL_QUERY_DRIVING_H */
