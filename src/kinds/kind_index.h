/*-------------------------------------------------------------------------
 *
 * kind_index.h
 *	  What the index kind (kind_index.c) shares with its variant for a
 *	  partitioned table (kind_partitioned_index.c), and with the ALTER TABLE
 *	  kind's key (kind_key_constraint.c): the submit, its dry run and the
 *	  name's placeholder, the statement the worker runs, the checks of its
 *	  steps and the end.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_KIND_INDEX_H
#define BGDDL_KIND_INDEX_H

#include "nodes/parsenodes.h"

#include "engine/job_run.h"
#include "engine/kind.h"
#include "index/index_chunked.h"

/* The strategy of an index job on a partitioned table */
#define STRATEGY_PARTITIONS		"concurrent index build, partition by partition"
/* ... of an invalid index that CREATE INDEX IF NOT EXISTS found under its name */
#define STRATEGY_REBUILD_INVALID_INDEX	"concurrent rebuild of an invalid index"
#define STRATEGY_REBUILD_PARTITIONS	"concurrent rebuild of an invalid index, partition by partition"
/* ... built by our own build (kind_chunked_index.c), and its job's kind_state key */
#define STRATEGY_CHUNKED_INDEX	"index built chunk by chunk"
#define STRATEGY_CHUNKED_REBUILD	"rebuild of an invalid index, chunk by chunk"
#define INDEX_STATE_CHUNKED		"chunked"

extern Oid	IndexedTable(const BgddlJob *job);
extern IndexStmt *IndexStatementToRun(const BgddlJob *job, const char *name);
extern const char *IndexGoneReason(const BgddlJob *job);
extern bool IndexTableExists(JobRun *run);
extern bool IndexCheck(JobRun *run, bool *is_index, bool *valid);
extern JobStepResult IndexPublish(JobRun *run, bool may_stay_invalid);
extern void IndexPlan(JobRun *run);
extern JobStepResult IndexCutOver(JobRun *run);
extern int64 IndexWritesToTable(const BgddlJob *job);
extern void IndexCutOverLock(JobRun *run);
extern JobStepResult IndexPublishHeld(JobRun *run, bool built, bool *marked);
extern void IndexHoldBack(JobRun *run, Oid index_oid, Oid table_oid);
extern bool IndexHeld(const BgddlJob *job);
extern bool IndexMarkValid(const BgddlJob *job, Oid index_oid, Oid table_oid, bool built);
extern void IndexRestartBuildStep(JobRun *run, void *arg);
extern Oid	IndexBuildHere(const BgddlJob *job);
extern bool IndexDiscardsInAnyTransaction(const BgddlJob *job);
extern void IndexProgress(const BgddlJob *job, pid_t pid, KindProgress *progress);
extern char *IndexDryRun(void (*define) (void *arg), void *arg, ErrorData **error);
extern Oid	IndexReserveName(KindSubmit *submit, Oid table_oid, Oid namespace_oid,
							 const char *name);
extern Oid	IndexRestartBuild(const BgddlJob *job, Oid index, Oid table_oid);
extern IndexDefinition *IndexDryRunDefinition(Oid relid, IndexStmt *stmt);

#endif							/* BGDDL_KIND_INDEX_H */
