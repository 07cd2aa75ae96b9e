/*-------------------------------------------------------------------------
 *
 * index_estimate.h
 *	  estimate_ddl's measure of a CREATE INDEX job before it runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_INDEX_ESTIMATE_H
#define BGDDL_INDEX_ESTIMATE_H

#include "nodes/parsenodes.h"

#include "engine/job_estimate.h"

extern void IndexJobEstimate(IndexStmt *raw_stmt, const char *query_string,
							 JobEstimate *estimate);

#endif							/* BGDDL_INDEX_ESTIMATE_H */
