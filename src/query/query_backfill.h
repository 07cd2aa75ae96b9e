/*-------------------------------------------------------------------------
 *
 * query_backfill.h
 *	  Running a job's query, or a part of it, into its content relation.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_BACKFILL_H
#define BGDDL_BACKFILL_H

#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"
#include "utils/relcache.h"

#include "capture/capture_tid_map.h"
#include "query/query_driving.h"

extern Query *QueryOfTableRows(Relation table, List *column_changes);
extern Query *QueryOfRule(Relation rule_relation, List *column_changes, Oid check_as_role,
						  TimestampTz job_start);
extern uint64 QueryBackfillBlocks(Relation content, Query *query, const QueryDriving *driving,
								  Index rtindex, bool partial, bool count_live,
								  int64 start_block, int64 end_block,
								  TidPair **pairs, int *npairs);
extern uint64 QueryBackfillRanges(Relation content, Query *query, const QueryDriving *driving,
								  Index rtindex, const int64 *starts, const int64 *ends,
								  int nranges);
extern bool QueryIndexGivesOrder(Relation table, Relation index);
extern bool QueryIndexKeyNullable(Relation table, Relation index, bool *first);
extern void QuerySortByIndex(Query *query, Relation index);

/*
 * Where a backfill in an index's order stands (QueryBackfillInOrder), from
 * one chunk to the next
 */
typedef struct OrderPosition
{
	List	   *bound;			/* after the last row copied: its keys, and its
								 * tuple id unless the index is unique (NIL:
								 * none yet) */
	int64		key_rows;		/* rows of the bound's key copied, as far as
								 * known */
	bool		done;			/* no row is left after the bound */
} OrderPosition;

extern uint64 QueryBackfillInOrder(Relation content, Query *query, const QueryDriving *driving,
								   Index rtindex, Relation table, Relation index,
								   OrderPosition *position, int64 limit, double rows_per_block,
								   TidPair **pairs, int *npairs);
extern uint64 QueryBackfillNullKeys(Relation content, Query *query, const QueryDriving *driving,
									Index rtindex, Relation index, int64 start_block,
									int64 end_block, TidPair **pairs, int *npairs);
extern uint64 QueryBackfillAll(Relation content, Query *query);
extern ItemPointer QueryTids(Query *query, const QueryDriving *driving, Index rtindex,
							 int *ntids);
extern TidPair *QueryRecompute(Relation content, Query *query, const QueryDriving *driving,
							   Index rtindex, ItemPointer sources, int nsources, int *npairs);
extern int64 QueryEstimateRows(Query *query);

#endif							/* BGDDL_BACKFILL_H */
