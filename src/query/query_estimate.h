/*-------------------------------------------------------------------------
 *
 * query_estimate.h
 *	  estimate_ddl's measure of a query job before it runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_QUERY_ESTIMATE_H
#define BGDDL_QUERY_ESTIMATE_H

#include "nodes/parsenodes.h"

#include "engine/job_estimate.h"


extern void QueryJobEstimate(Query *query, Oid target_oid, bool copies_rows,
							 JobEstimate *estimate);
extern void QueryJobEstimateSelect(Node *raw_select, const char *query_string,
								   JobEstimate *estimate);

#endif							/* BGDDL_QUERY_ESTIMATE_H */
