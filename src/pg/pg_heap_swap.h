/*-------------------------------------------------------------------------
 *
 * pg_heap_swap.h
 *	  A hidden heap for a materialized view's new content, and the swap of
 *	  the view's storage with it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_HEAP_SWAP_H
#define BGDDL_HEAP_SWAP_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

extern Oid	PgHeapCreateLike(Relation matview, Oid namespace_oid, const char *name);
extern void PgHeapBuildIndexCopies(Relation matview, Relation hidden, bool concurrently,
								   List **old_indexes, List **new_indexes);
extern void PgHeapSwap(Oid matview_oid, Oid hidden_oid, List *old_indexes,
						   List *new_indexes);

#endif							/* BGDDL_HEAP_SWAP_H */
