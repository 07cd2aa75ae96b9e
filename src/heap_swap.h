/*-------------------------------------------------------------------------
 *
 * heap_swap.h
 *	  A hidden heap for a materialized view's new content, and the swap of
 *	  the view's storage with it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_HEAP_SWAP_H
#define BGDDL_HEAP_SWAP_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

extern Oid	HiddenHeapCreate(Relation matview, Oid namespace_oid, const char *name);
extern void HiddenHeapBuildIndexes(Relation matview, Relation hidden, bool concurrently,
								   List **old_indexes, List **new_indexes);
extern void HiddenHeapSwap(Oid matview_oid, Oid hidden_oid, List *old_indexes,
						   List *new_indexes);

#endif							/* BGDDL_HEAP_SWAP_H */
