/*-------------------------------------------------------------------------
 *
 * capture_tid_map.h
 *	  The compact stored form of a chunk's (source, output) tuple id pairs,
 *	  and their sort.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_TID_MAP_H
#define BGDDL_TID_MAP_H

#include "storage/itemptr.h"

/* A source tuple id and the output tuple id it produced */
typedef struct TidPair
{
	ItemPointerData source;
	ItemPointerData output;
} TidPair;

extern void TidPairsSort(TidPair *pairs, size_t npairs);
extern bytea *CaptureTidMapEncode(const TidPair *pairs, int npairs);
extern TidPair *CaptureTidMapDecode(const bytea *map, int *npairs);

#endif							/* BGDDL_TID_MAP_H */
