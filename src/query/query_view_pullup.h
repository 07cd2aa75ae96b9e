/*-------------------------------------------------------------------------
 *
 * query_view_pullup.h
 *	  Ordinary views that a job's query reads, pulled up into it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_VIEW_PULLUP_H
#define BGDDL_VIEW_PULLUP_H

#include "nodes/parsenodes.h"

extern void QueryPullUpViews(Query *query);

#endif							/* BGDDL_VIEW_PULLUP_H */
