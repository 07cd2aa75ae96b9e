/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  Running a job's query, or a part of it, into its content relation.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_BACKFILL_H
#define BGDDL_BACKFILL_H

#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"
#include "utils/relcache.h"

#include "tid_map.h"

extern Query *BackfillRuleQuery(Relation rule_relation, Oid check_as_role,
								TimestampTz job_start);
extern uint64 BackfillBlocks(Relation content, Query *query, Index driving_rtindex, bool partial,
							 bool count_live, int64 start_block, int64 end_block,
							 TidPair **pairs, int *npairs);
extern uint64 BackfillAll(Relation content, Query *query);
extern TidPair *BackfillRecompute(Relation content, Query *query, Index driving_rtindex,
								  ItemPointer sources, int nsources, int *npairs);
extern int64 BackfillEstimateRows(Query *query);

#endif							/* BGDDL_BACKFILL_H */
