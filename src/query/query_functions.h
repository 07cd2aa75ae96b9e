/*-------------------------------------------------------------------------
 *
 * query_functions.h
 *	  The functions a query may call and still be computed in batches, and
 *	  now() taken once per job.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_QUERY_FUNCTIONS_H
#define BGDDL_QUERY_FUNCTIONS_H

#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"

extern char *QueryFunctionRefusal(Query *query);
extern Query *QueryPinJobStart(Query *query, TimestampTz job_start);

#endif							/* BGDDL_QUERY_FUNCTIONS_H */
