/*-------------------------------------------------------------------------
 *
 * index_partitions.h
 *	  CREATE INDEX on a partitioned table, as one job of per-partition steps.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_INDEX_PARTITIONS_H
#define BGDDL_INDEX_PARTITIONS_H

#include "nodes/parsenodes.h"

#include "engine/job_run.h"
#include "engine/kind.h"
#include "index/index_build.h"

/* The job's kind_state says it indexes a partitioned table */
#define INDEX_STATE_PARTITIONED		"partitioned"
/* ... and the invalid index it rebuilds (CREATE INDEX IF NOT EXISTS found it) */
#define INDEX_STATE_REBUILDS		"rebuilds"

extern void IndexPartitionsCheckSubmit(Oid table_oid, IndexStmt *stmt);
extern void IndexPartitionsPlan(JobRun *run, Oid table_oid);
extern JobStepResult IndexPartitionsStep(JobRun *run, Oid table_oid);
extern bool IndexPartitionsDone(const BgddlJob *job, bool valid);
extern bool IndexPartitionsHeld(const BgddlJob *job);
extern void IndexPartitionsCutOverLock(JobRun *run);
extern JobStepResult IndexPartitionsPublish(JobRun *run);
extern void IndexPartitionsRestart(JobRun *run);
extern void IndexPartitionsDiscard(const BgddlJob *job, bool keep_target);
extern void IndexPartitionsProgress(const BgddlJob *job, const IndexBuildProgress *build,
									KindProgress *progress);

#endif							/* BGDDL_INDEX_PARTITIONS_H */
