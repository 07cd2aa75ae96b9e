/*-------------------------------------------------------------------------
 *
 * change_log.h
 *	  What a job records about its content and the changes to its sources:
 *	  chunks and their tid maps, dirty marks, recomputed rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CHANGE_LOG_H
#define BGDDL_CHANGE_LOG_H

#include "nodes/pg_list.h"
#include "storage/block.h"
#include "storage/itemptr.h"

#include "tid_map.h"

/* A dirty mark: the changed source tuple id, and where the mark itself is */
typedef struct DirtyMark
{
	ItemPointerData source;
	ItemPointerData mark;
} DirtyMark;

/* A committed chunk: blocks [start_block, end_block) of the driving table */
typedef struct ChunkRange
{
	int64		start_block;
	int64		end_block;
} ChunkRange;

extern void ChunkRecord(int64 job_id, const ChunkRange *range, int64 rows, int32 attempt,
						double seconds, bytea *tid_map);
extern List *ChunkRangesRead(int64 job_id);
extern bytea *ChunkTidMapRead(int64 job_id, int64 start_block);
extern void ChangeLogForget(int64 job_id, bool chunks_too);
extern void ChangeLogRestart(int64 job_id);
extern void ChangeLogCoverAll(int64 job_id);
extern int	ChangeLogBoundBacklogs(void);

/* A job's backlog of changed rows is bounded by at least this (ChangeLogBoundBacklogs) */
#define BACKLOG_MIN_BOUND		100000

extern BlockNumber DirtyLogBlocks(void);
extern int64 DirtyMarksLogged(void);
extern DirtyMark *DirtyMarksRead(int64 job_id, BlockNumber from_block, BlockNumber to_block,
								 int *nmarks);
extern bool DirtyHasWholeTable(int64 job_id);
extern int64 DirtyCount(int64 job_id);
extern void DirtyMarksDelete(ItemPointer marks, int nmarks);
extern void DirtyMarkWholeTable(int64 job_id);

extern TidPair *RecomputedRead(int64 job_id, ItemPointer sources, int nsources,
							   int *npairs);
extern void RecomputedReplace(int64 job_id, ItemPointer sources, int nsources,
							  TidPair *pairs, int npairs);

#endif							/* BGDDL_CHANGE_LOG_H */
