/*-------------------------------------------------------------------------
 *
 * pg_heap_swap.h
 *	  A hidden heap for a materialized view's (or a table's) new content,
 *	  and the swap of the view's storage with it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_HEAP_SWAP_H
#define BGDDL_HEAP_SWAP_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

extern Oid	PgHeapCreateLike(Relation matview, Oid namespace_oid, const char *name,
							 Oid tablespace_oid);
extern bool PgHeapSameRowShape(Relation rel1, Relation rel2);
extern void PgHeapRecordSize(Relation heap, double tuples);
extern void PgHeapBuildIndexCopies(Relation matview, Relation hidden, List *copied,
								   bool concurrently, bool plain,
								   List **old_indexes, List **new_indexes);
extern void PgHeapSwap(Oid matview_oid, Oid hidden_oid, List *old_indexes,
					   List *new_indexes, const char *statement, bool new_tablespace);

#endif							/* BGDDL_HEAP_SWAP_H */
