/*-------------------------------------------------------------------------
 *
 * index_btree_load.h
 *	  A btree written bottom up from entries handed over in its order
 *	  (index_btree_load.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_INDEX_BTREE_LOAD_H
#define BGDDL_INDEX_BTREE_LOAD_H

#include "access/itup.h"
#include "utils/relcache.h"

typedef struct BtreeLoad BtreeLoad;

extern BtreeLoad *BtreeLoadBegin(Relation heap, Relation index);
extern void BtreeLoadAdd(BtreeLoad *load, IndexTuple entry);
extern void BtreeLoadEnd(BtreeLoad *load);

#endif							/* BGDDL_INDEX_BTREE_LOAD_H */
