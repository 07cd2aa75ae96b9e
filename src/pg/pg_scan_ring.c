/*-------------------------------------------------------------------------
 *
 * pg_scan_ring.c
 *	  The ring buffer of a sequential scan, for the TID range scans of a
 *	  plan.
 *
 * A sequential scan of a table larger than a quarter of shared_buffers
 * reads it through a small ring of buffers (BAS_BULKREAD), so that it
 * neither evicts the rest of the cache nor touches more of shared memory
 * than the ring.  A TID range scan never does: PostgreSQL begins it without
 * SO_ALLOW_STRAT, so a job that reads a big table chunk by chunk would, over
 * the chunks, read all of it through the whole buffer pool.  Each new
 * buffer it fills costs a buffer replacement (above shared_buffers: a
 * dirty write back too), and each page of shared memory it touches for the
 * first time costs its process a page fault.
 *
 * ExecTidRangeScan begins its scan at its first tuple, or, when the node
 * already has one, rescans it with the new range: heap_rescan then sets
 * the ring up as heap_beginscan does for a sequential scan, if the flag
 * asks for it and the table is that large.  So the scan is begun here,
 * after ExecutorStart and before ExecutorRun, with the flag set.  Only heap
 * scans have the ring; other table access methods are left as they are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"

#include "pg/pg_scan_ring.h"

static bool
BeginTidRangeScanWithRing(PlanState *planstate, void *context)
{
	if (IsA(planstate, TidRangeScanState))
	{
		ScanState  *node = &((TidRangeScanState *) planstate)->ss;
		Relation	rel = node->ss_currentRelation;
		ItemPointerData none;

		if (node->ss_currentScanDesc == NULL &&
			rel->rd_tableam == GetHeapamTableAmRoutine())
		{
			ItemPointerSet(&none, 0, 0);
			node->ss_currentScanDesc =
				table_beginscan_tidrange(rel, planstate->state->es_snapshot, &none, &none);
			node->ss_currentScanDesc->rs_flags |= SO_ALLOW_STRAT;
		}
	}
	return planstate_tree_walker(planstate, BeginTidRangeScanWithRing, context);
}

/*
 * Begin every TID range scan of the started plan (not yet run) so that it
 * reads a large heap through a ring of buffers, as a sequential scan would.
 */
void
PgTidRangeScansUseRing(PlanState *planstate)
{
	(void) BeginTidRangeScanWithRing(planstate, NULL);
}
