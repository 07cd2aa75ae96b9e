/*-------------------------------------------------------------------------
 *
 * capture_log.h
 *	  What a job records about its content and the changes to its sources:
 *	  its capture, chunks and their tid maps, dirty marks, recomputed rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CHANGE_LOG_H
#define BGDDL_CHANGE_LOG_H

#include "nodes/pg_list.h"
#include "storage/block.h"
#include "storage/itemptr.h"

#include "capture/block_space.h"
#include "capture/capture_tid_map.h"
#include "catalog/catalog_job.h"

/* The capture of one job (background_ddl.capture) */
typedef struct Capture
{
	int64		job_id;
	Oid			driving_oid;	/* whose changed rows are logged one by one */
	List	   *relids;			/* base relations with capture triggers */
	List	   *filenodes;		/* their relfilenodes, as last checked */
	List	   *triggers;		/* our triggers' oids */
	List	   *trigger_xmins;	/* raw xmin of each pg_trigger row at install */
	bool		stopped;		/* its backlog outgrew its bound */
} Capture;

extern void CaptureRowInsert(const Capture *capture);
extern bool CaptureRowLoad(int64 job_id, Capture *capture);
extern void CaptureRowSetFilenodes(int64 job_id, List *filenodes);
extern bool CaptureRowCapturing(int64 job_id);
extern bool CaptureRowStopped(int64 job_id);
extern void CaptureRowDelete(int64 job_id);
extern void CaptureStop(int64 job_id);

/* A dirty mark: the changed source tuple id, and where the mark itself is */
/*
 * A mark of the dirty log as a pass read it: its tuple id, and the
 * transaction that wrote it (so that a later mark in the same place is not
 * taken for it)
 */
typedef struct MarkId
{
	ItemPointerData tid;
	TransactionId xmin;
} MarkId;

typedef struct DirtyMark
{
	ItemPointerData source;
	MarkId		mark;
} DirtyMark;

extern void CaptureChunkRecord(int64 job_id, const ChunkRange *range, int64 rows, int32 attempt,
						double seconds, bytea *tid_map);
extern void CaptureChunkRecordEntries(int64 job_id, const ChunkRange *range, int64 rows,
									  double seconds, bytea *index_entries);
extern List *CaptureChunkRanges(int64 job_id);
extern void CaptureChunkTotals(int64 job_id, int64 *chunks, int64 *rows, int64 *blocks);
extern void CaptureRecordBackfillTotals(BgddlJob *job, bool raise_only);
extern bytea *CaptureChunkTidMap(int64 job_id, int64 start_block);
extern struct varlena *CaptureChunkEntries(int64 job_id, int64 start_block);
extern void CaptureChunkReplaceTidMap(int64 job_id, int64 start_block, bytea *tid_map);
extern bool CaptureChunksRegroup(int64 job_id, int64 group_blocks, int64 chunk_blocks,
								 int64 end_block);
extern void CaptureForget(int64 job_id, bool chunks_too);
extern void CaptureRestart(int64 job_id);
extern void CaptureCoverAll(int64 job_id);
extern int	CaptureBoundBacklogs(void);

/* A job's backlog of changed rows is bounded by at least this (CaptureBoundBacklogs) */
#define BACKLOG_MIN_BOUND		100000

/* A changed row of a joined table: the text of its join key */
typedef struct JoinKeyMark
{
	Oid			relid;
	char	   *key;
} JoinKeyMark;

/* The marks of a job one catch-up pass reads (CaptureMarksScan) */
typedef struct CapturedMarks
{
	DirtyMark  *rows;			/* row marks, sorted by source */
	int			nrows;
	List	   *join_keys;		/* JoinKeyMarks, not deduplicated */
	MarkId	   *others;			/* its join and whole_table marks */
	int			nothers;
	bool		whole_table;	/* every row is to be recomputed */
	bool		uncaptured;		/* the cut-over recomputes everything */
	bool		more;			/* more marks than it may read at once */
} CapturedMarks;

extern int64 CaptureMarksLogged(void);
extern int64 CaptureTablesWrites(int64 job_id);
extern void CaptureMarksScan(int64 job_id, int max_marks, CapturedMarks *marks);
extern void CaptureMarksSort(DirtyMark *marks, int nmarks);
extern int64 CaptureBacklog(int64 job_id);
extern void CaptureMarksDelete(int64 job_id, const MarkId *marks, int nmarks);
extern void CaptureMarkWholeTable(int64 job_id, bool uncaptured);

extern TidPair *CaptureRecomputedRead(int64 job_id, ItemPointer sources, int nsources,
							   int *npairs);
extern TidPair *CaptureRecomputedTakeRange(int64 job_id, int64 start_block, int64 end_block,
										   int *npairs);
extern TidPair *CaptureRecomputedTake(int64 job_id, ItemPointer sources, int nsources,
									  int *npairs);
extern void CaptureRecomputedReplace(int64 job_id, ItemPointer sources, int nsources,
							  TidPair *pairs, int npairs);
extern void CaptureRecomputedRecord(int64 job_id, ItemPointer sources, int nsources,
									TidPair *pairs, int npairs);

#endif							/* BGDDL_CHANGE_LOG_H */
