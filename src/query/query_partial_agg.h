/*-------------------------------------------------------------------------
 *
 * query_partial_agg.h
 *	  An aggregating or DISTINCT query as per-chunk partial rows and a
 *	  combine.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PARTIAL_AGG_H
#define BGDDL_PARTIAL_AGG_H

#include "nodes/parsenodes.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

/* The staging relation's last column: the first tuple id of a row's block range */
#define STAGING_SOURCE_COLUMN	"background_ddl_source"

extern bool QueryPartialAggApplies(Query *query);
extern char *QueryPartialAggRefusal(Query *query);
extern Query *QueryPartialAggChunk(Query *query);
extern Query *QueryPartialAggCombine(Query *query, Oid staging_oid);
extern Oid	QueryPartialAggCreateStaging(int64 job_id, Query *chunk_query, Oid owner,
										 Oid tablespace, bool with_source);
extern int64 QueryPartialAggDeleteSources(Relation staging, ItemPointer sources, int nsources);
extern void QueryPartialAggDropStaging(Oid staging_oid);

#endif							/* BGDDL_PARTIAL_AGG_H */
