/*-------------------------------------------------------------------------
 *
 * pg_scan_ring.h
 *	  The ring buffer of a sequential scan, for the TID range scans of a
 *	  plan.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_SCAN_RING_H
#define BGDDL_PG_SCAN_RING_H

#include "nodes/execnodes.h"

extern void PgTidRangeScansUseRing(PlanState *planstate);

#endif							/* BGDDL_PG_SCAN_RING_H */
