/*-------------------------------------------------------------------------
 *
 * foreign_key_check.h
 *	  Checking rows of a table against one of its foreign keys, a range of
 *	  blocks or a list of tuple ids at a time, as ALTER TABLE checks them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_FOREIGN_KEY_CHECK_H
#define BGDDL_FOREIGN_KEY_CHECK_H

#include "access/htup.h"
#include "storage/block.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

extern uint64 ForeignKeyCheckBlocks(Relation rel, HeapTuple constraint, BlockNumber start,
									BlockNumber end);
extern bool ForeignKeyParallelSafe(Relation rel, HeapTuple constraint);

/* The rows of ranges of a table's blocks without a referenced row, found with one snapshot */
typedef struct ForeignKeyScan ForeignKeyScan;

extern ForeignKeyScan *ForeignKeyScanBegin(Relation rel, HeapTuple constraint, Snapshot snapshot,
										   BlockNumber blocks);
extern uint64 ForeignKeyScanBlocks(ForeignKeyScan *scan, BlockNumber start, BlockNumber end,
								   ItemPointerData **found, int *nfound);
extern void ForeignKeyScanEnd(ForeignKeyScan *scan);
extern void ForeignKeyCheckRows(Relation rel, HeapTuple constraint, const ItemPointerData *tids,
								int ntids);

#endif							/* BGDDL_FOREIGN_KEY_CHECK_H */
