/*-------------------------------------------------------------------------
 *
 * job_chunks.c
 *	  A backfill's chunks of blocks over several workers.  The job's first
 *	  worker opens the chunk claims (job_shmem.c); it and the helpers the
 *	  scheduler starts while blocks are left take the next blocks in turn,
 *	  each chunk committed with its checkpoint in a step of its own, so
 *	  chunks commit out of order.  A worker that fails gives its chunk up:
 *	  once no block is left to claim, the first worker waits for the chunks
 *	  in flight, then takes what no committed chunk covers (the holes), as
 *	  it does first after a crash.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"

#include "engine/job_chunks.h"
#include "engine/job_shmem.h"
#include "engine/job_step.h"

/*
 * The parts of [0, end_block) that no chunk covers, given the committed
 * chunks (ChunkRange) ordered by start_block
 */
List *
JobChunkHoles(List *chunks, int64 end_block)
{
	List	   *holes = NIL;
	int64		covered = 0;
	ListCell   *lc;

	foreach(lc, chunks)
	{
		ChunkRange *chunk = lfirst(lc);

		if (chunk->start_block > covered)
		{
			ChunkRange *hole = palloc(sizeof(ChunkRange));

			hole->start_block = covered;
			hole->end_block = Min(chunk->start_block, end_block);
			holes = lappend(holes, hole);
		}
		covered = Max(covered, chunk->end_block);
	}
	if (covered < end_block)
	{
		ChunkRange *hole = palloc(sizeof(ChunkRange));

		hole->start_block = covered;
		hole->end_block = end_block;
		holes = lappend(holes, hole);
	}
	return holes;
}

/*
 * A resumed build, given its committed chunks (ordered by start_block):
 * the claims go on after the last one, the gaps below it are the first
 * worker's (kept in JobContext()).  Caller has closed the claims of the
 * workers before it (JobChunksClose).
 */
void
JobChunksResume(JobChunks *chunks, List *committed)
{
	MemoryContext old_context = MemoryContextSwitchTo(JobContext());
	ListCell   *lc;

	chunks->next_block = 0;
	foreach(lc, committed)
		chunks->next_block = Max(chunks->next_block, ((ChunkRange *) lfirst(lc))->end_block);
	chunks->holes = JobChunkHoles(committed, chunks->next_block);
	MemoryContextSwitchTo(old_context);
}

/* The build starts over, at block 0 (caller has closed the claims) */
void
JobChunksRestart(JobChunks *chunks)
{
	chunks->next_block = 0;
	chunks->holes = NIL;
}

/* The first worker opens the claims of blocks [next_block, end_block), if not open */
void
JobChunksOpen(JobChunks *chunks, int64 end_block)
{
	if (chunks->generation != 0)
		return;
	chunks->generation = JobClaimsOpen(chunks->next_block, end_block);
	JobWakeScheduler(MyDatabaseId);
}

/* A helper takes from the claims open now; false if none are */
bool
JobChunksJoin(JobChunks *chunks)
{
	if (chunks->generation == 0)
		chunks->generation = JobBuildGeneration();
	return chunks->generation != 0;
}

/*
 * The worker's next chunk of at most blocks blocks: a hole first, then the
 * next blocks claimed.  False if none is left to take.
 */
bool
JobChunksTake(JobChunks *chunks, int32 blocks, ChunkRange *range)
{
	if (chunks->holes != NIL)
	{
		ChunkRange *hole = linitial(chunks->holes);

		range->start_block = hole->start_block;
		range->end_block = Min(hole->end_block, hole->start_block + blocks);
		hole->start_block = range->end_block;
		if (hole->start_block >= hole->end_block)
			chunks->holes = list_delete_first(chunks->holes);
		return true;
	}
	return JobClaimChunk(chunks->generation, blocks, &range->start_block, &range->end_block);
}

/*
 * No more claims; wait until every claimed chunk's step has ended (the
 * other workers' chunks commit, or are given up; the last to end wakes us,
 * JobClaimSettled).  With discard, the chunks that helpers compute now are
 * not wanted: they stop at once.
 */
void
JobChunksClose(JobChunks *chunks, bool discard)
{
	JobClaimsClose();
	if (discard)
		JobInterruptHelpers();
	chunks->generation = 0;
	pgstat_report_activity(STATE_RUNNING, "background_ddl: waiting for the job's other workers");
	while (JobChunksInFlight() > 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Once no block is left to claim and the claims are closed: is every block
 * of [0, end_block) covered by a committed chunk (ordered by start_block)?
 * If not, the blocks left are the first worker's holes (kept in
 * JobContext()).  Either way no claim is opened below end_block again: a
 * backfill step after the backfill's end (its cut-over asked for one more
 * round) finds nothing left, rather than take the first chunk again.
 */
bool
JobChunksSettle(JobChunks *chunks, List *committed, int64 end_block)
{
	MemoryContext old_context = MemoryContextSwitchTo(JobContext());

	chunks->holes = JobChunkHoles(committed, end_block);
	MemoryContextSwitchTo(old_context);
	chunks->next_block = end_block;
	return chunks->holes == NIL;
}
