/*-------------------------------------------------------------------------
 *
 * partial_agg.h
 *	  An aggregating or DISTINCT query as per-chunk partial rows and a
 *	  combine.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PARTIAL_AGG_H
#define BGDDL_PARTIAL_AGG_H

#include "nodes/parsenodes.h"

extern bool PartialAggApplies(Query *query);
extern char *PartialAggRefusal(Query *query);
extern Query *PartialAggChunkQuery(Query *query);
extern Query *PartialAggCombineQuery(Query *query, Oid staging_oid);
extern Oid	PartialAggCreateStaging(int64 job_id, Query *chunk_query, Oid owner,
									Oid tablespace);
extern void PartialAggDropStaging(Oid staging_oid);

#endif							/* BGDDL_PARTIAL_AGG_H */
