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

#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

extern Oid	PgHeapCreateLike(Relation matview, TupleDesc desc, Oid namespace_oid,
							 const char *name, Oid tablespace_oid, Oid access_method_oid);
extern bool PgHeapSameRowShape(TupleDesc desc1, TupleDesc desc2);
extern void PgHeapRecordSize(Relation heap, double tuples);
extern bool PgIndexSameDefinition(Oid index1_oid, Oid index2_oid);
extern void PgHeapBuildIndexCopies(Relation matview, Relation hidden, List *copied,
								   List *redefined,
								   bool concurrently, bool plain,
								   List **old_indexes, List **new_indexes);
extern void PgHeapSwap(Oid matview_oid, Oid hidden_oid, List *old_indexes,
					   List *new_indexes, const char *statement, bool new_placement);

#endif							/* BGDDL_HEAP_SWAP_H */
