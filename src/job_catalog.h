/*-------------------------------------------------------------------------
 *
 * job_catalog.h
 *	  Reading and writing the job catalog (background_ddl.job, .chunk).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_CATALOG_H
#define BGDDL_JOB_CATALOG_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"

#define JOB_KIND_CREATE_MATVIEW "CREATE MATERIALIZED VIEW"

/* A job row, as the worker and the control functions see it */
typedef struct BgddlJob
{
	int64		id;
	Oid			database_oid;
	Oid			owner_oid;
	char	   *kind;
	Oid			target_oid;
	char	   *target_name;
	char	   *state;
	List	   *settings;		/* alternating GUC names and values */
	Oid			driving_oid;	/* InvalidOid: not planned yet, or one batch */
	bool		planned;		/* the backfill plan has been recorded */
	int64		blocks_total;
	int64		next_block;
	int32		chunk_blocks;
	int64		rows_done;
	int64		rows_total;		/* -1: unknown */
	int64		chunks_done;
	int32		attempts;
	double		progress;
	TimestampTz started_at;
	List	   *capture_relids;	/* base relations with capture triggers */
	List	   *capture_filenodes;	/* their relfilenodes when captured */
	int32		catchup_passes;
	bool		cleanup_pending;
} BgddlJob;

/* What the submit hook knows about a new job */
typedef struct BgddlJobSubmission
{
	Oid			owner_oid;
	const char *kind;
	Oid			target_oid;
	const char *target_name;
	const char *command;
	List	   *settings;
} BgddlJobSubmission;

/* A source tuple id and the output tuple id it produced */
typedef struct TidPair
{
	ItemPointerData source;
	ItemPointerData output;
} TidPair;

/* A dirty mark: the changed source tuple id, and where the mark itself is */
typedef struct DirtyMark
{
	ItemPointerData source;
	ItemPointerData mark;
} DirtyMark;

/* The progress a committed chunk adds */
typedef struct BgddlChunkResult
{
	int64		start_block;
	int64		end_block;		/* -1: to the end of the table */
	int64		rows;
	double		seconds;
	int32		next_chunk_blocks;
	int64		chunks_total;
	double		progress;
	double		rate;			/* rows per second */
	double		eta_seconds;	/* < 0: unknown */
	bytea	   *tid_map;		/* sorted TidPairs, or NULL */
} BgddlChunkResult;

extern bool JobCatalogExists(void);
extern int64 JobInsert(const BgddlJobSubmission *submission);
extern bool JobLoad(int64 job_id, BgddlJob *job, bool latest);
extern List *JobListUnfinished(void);
extern int64 JobFindUnfinishedByTarget(Oid target_oid);
extern bool JobClaim(int64 job_id, BgddlJob *job);
extern void JobSetPhase(int64 job_id, const char *phase);
extern void JobRecordPlan(int64 job_id, Oid driving_oid, int64 blocks_total,
						  int64 rows_total, int32 chunk_blocks);
extern void JobRecordChunk(const BgddlJob *job, const BgddlChunkResult *chunk);
extern void JobFinish(int64 job_id, const char *state, const char *error,
					  bool record_cutover_snapshot, int64 rows_done);
extern void JobDeleteChunks(int64 job_id);
extern void JobPurgeHistory(int retention_seconds);
extern void JobRecordCapture(int64 job_id, List *relids, List *filenodes);
extern void JobSetCounters(int64 job_id, int64 rows_done, int64 dirty_rows, int32 catchup_passes);
extern void JobSetCleanupPending(int64 job_id, bool pending);
extern void JobResetBackfill(int64 job_id, int64 blocks_total, List *filenodes);
extern void JobForgetCapturedChanges(int64 job_id);

extern DirtyMark *DirtyMarksRead(int64 job_id, int *nmarks, bool *whole_table);
extern void DirtyMarksDelete(ItemPointer marks, int nmarks);
extern void DirtyMarkWholeTable(int64 job_id);
extern List *ChunkRangesRead(int64 job_id);
extern bytea *ChunkTidMapRead(int64 job_id, int64 chunk_no);
extern TidPair *RecomputedRead(int64 job_id, ItemPointer sources, int nsources,
							   int *npairs);
extern void RecomputedReplace(int64 job_id, ItemPointer sources, int nsources,
							  TidPair *pairs, int npairs);

/* A chunk's block range, as ChunkRangesRead returns them */
typedef struct ChunkRange
{
	int64		chunk_no;
	int64		start_block;
	int64		end_block;		/* -1: to the end */
} ChunkRange;

#endif							/* BGDDL_JOB_CATALOG_H */
