/*-------------------------------------------------------------------------
 *
 * catchup.h
 *	  Reprocessing the rows that changed while a job ran.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CATCHUP_H
#define BGDDL_CATCHUP_H

#include "utils/relcache.h"

#include "job_catalog.h"

/* What happened to a job's base relations since the capture started */
typedef enum BaseRelationChange
{
	BASE_UNCHANGED,
	BASE_DRIVING_REWRITTEN,		/* every tuple id changed: start over */
	BASE_OTHER_REWRITTEN,		/* recorded as a whole_table mark */
	BASE_DROPPED
} BaseRelationChange;

extern BaseRelationChange CatchupCheckBaseRelations(BgddlJob *job);
extern void CatchupForgetMaps(void);
extern int	CatchupPass(BgddlJob *job, MemoryContext job_context, bool *whole_table,
						BaseRelationChange *stopped_by);
extern int64 CatchupFinal(BgddlJob *job, Relation target, bool *whole_table);

#endif							/* BGDDL_CATCHUP_H */
