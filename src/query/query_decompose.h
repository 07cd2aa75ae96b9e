/*-------------------------------------------------------------------------
 *
 * query_decompose.h
 *	  Whether a job's query can be computed in batches, and how.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_DECOMPOSE_H
#define BGDDL_DECOMPOSE_H

#include "nodes/parsenodes.h"

/* A table joined to the driving table on "driving.driving_attnum opno joined.attnum" */
typedef struct QueryJoinKey
{
	Oid			relid;
	AttrNumber	attnum;
	AttrNumber	driving_attnum;
	Oid			opno;			/* driving column's type on the left */
	Oid			collation;
} QueryJoinKey;

/* How a query's result is computed */
typedef struct QueryDecomposition
{
	Index		driving_rtindex;	/* 0: in one batch */
	Oid			driving_oid;
	List	   *relids;			/* relations to capture, driving first */
	List	   *leaves;			/* a partitioned driving table's partitions read */
	bool		partial;		/* chunks of partial aggregation (query_partial_agg.c) */
	List	   *join_keys;		/* QueryJoinKeys: tables whose changes are pinned to rows */
	char	   *reason;			/* why one batch; NULL if chunked */
} QueryDecomposition;

#define STRATEGY_CTID_CHUNKS	"ctid chunks"
#define STRATEGY_PARTIAL_AGGREGATION	"partial aggregation"

extern void QueryDecompose(Query *query, Oid target_oid, Oid roleid, Oid required_driving,
						   bool copies_rows, QueryDecomposition *result);
extern char *QueryStrategy(const QueryDecomposition *decomposition);
extern Index QueryDrivingRtindex(Query *query, Oid driving_oid);
extern List *QueryJoinKeys(Query *query, Index driving_rtindex);
extern QueryJoinKey *QueryJoinKeyOf(List *join_keys, Oid relid);

#endif							/* BGDDL_DECOMPOSE_H */
