/*-------------------------------------------------------------------------
 *
 * job_chunks.h
 *	  A backfill's chunks of blocks, taken by the job's first worker and its
 *	  helpers in turn (job_chunks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_JOB_CHUNKS_H
#define BGDDL_JOB_CHUNKS_H

#include "nodes/pg_list.h"

#include "capture/block_space.h"

/* What one worker knows of the chunks of the build */
typedef struct JobChunks
{
	uint32		generation;		/* of the claims it opened or takes from; 0: none */
	int64		next_block;		/* where the first worker's claims begin */
	List	   *holes;			/* ChunkRange: blocks below it that no chunk
								 * covers, the first worker's to take first */
} JobChunks;

extern List *JobChunkHoles(List *chunks, int64 end_block);
extern void JobChunksResume(JobChunks *chunks, List *committed);
extern void JobChunksRestart(JobChunks *chunks);
extern void JobChunksOpen(JobChunks *chunks, int64 end_block);
extern bool JobChunksJoin(JobChunks *chunks);
extern bool JobChunksTake(JobChunks *chunks, int32 blocks, ChunkRange *range);
extern void JobChunksClose(JobChunks *chunks, bool discard);
extern bool JobChunksSettle(JobChunks *chunks, List *committed, int64 end_block);

#endif							/* BGDDL_JOB_CHUNKS_H */
