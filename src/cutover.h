/*-------------------------------------------------------------------------
 *
 * cutover.h
 *	  Making a job's result visible, or removing what a job created.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CUTOVER_H
#define BGDDL_CUTOVER_H

#include "job_catalog.h"

#include "utils/relcache.h"

extern void CutoverMatView(BgddlJob *job);
extern void TruncatePlaceholder(Relation target);
extern void DropPlaceholder(Oid target_oid);

#endif							/* BGDDL_CUTOVER_H */
