/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  Computing a job's content in batches.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_BACKFILL_H
#define BGDDL_BACKFILL_H

#include "nodes/parsenodes.h"
#include "utils/relcache.h"

#include "job_catalog.h"

extern Query *BackfillJobQuery(Relation target);
extern void BackfillPlan(BgddlJob *job);
extern bool BackfillNextChunk(BgddlJob *job);
extern int64 BackfillAll(Relation target, Query *query);
extern List *BackfillBaseRelations(Query *query, Oid driving_oid, Oid target_oid);
extern TidPair *BackfillRecompute(BgddlJob *job, Relation target, ItemPointer sources,
								  int nsources, int *npairs);

#endif							/* BGDDL_BACKFILL_H */
