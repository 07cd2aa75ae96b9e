/*-------------------------------------------------------------------------
 *
 * kind_constraint.h
 *	  What the ALTER TABLE kind (kind_constraint.c) shares with its variant
 *	  that builds a key's index (kind_key_constraint.c): the submit, the
 *	  chunks that check a helper, the end and the discard.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_KIND_CONSTRAINT_H
#define BGDDL_KIND_CONSTRAINT_H

#include "nodes/parsenodes.h"

#include "engine/job_run.h"
#include "engine/kind.h"

/*
 * ADD PRIMARY KEY: the index of the key (USING INDEX: the user's; built by
 * the job: its placeholder, then the index)
 */
#define CONSTRAINT_STATE_KEY_INDEX	"primary_key_index"
/* 1: a key whose index the job builds (the variant's key) */
#define CONSTRAINT_STATE_KEY_BUILD	"key_index_build"

#define STRATEGY_KEY_INDEX	"unique index built concurrently, then the key added with it"
#define STRATEGY_KEY_INDEX_NOT_NULL	"unique index built concurrently, the key's columns checked for nulls in chunks, then the key added with it"

/* kind_constraint.c */
extern bool ConstraintColumnNotNull(Oid relid, AttrNumber attnum);
extern void ConstraintLockForSubmit(RangeVar *relation, Oid relid, LOCKMODE mode);
extern void ConstraintCheckNoPrimaryKeyJob(Oid relid);
extern AlterTableCmd *ConstraintJobCommand(const BgddlJob *job);
extern Oid	ConstraintAddNotValid(KindSubmit *submit, AlterTableStmt *stmt, Oid relid,
								  Constraint *constraint);
extern Node *ConstraintKeyIsNotNull(Oid relid, List *columns);
extern void ConstraintRunAlterTable(Oid relid, Oid role, AlterTableCmd *cmd, LOCKMODE mode,
									const char *query_string);
extern void ConstraintRunAlterTableCommands(Oid relid, Oid role, List *cmds, LOCKMODE mode,
											const char *query_string);
extern void ConstraintRunKey(const BgddlJob *job);
extern Oid	ConstraintOfJob(const BgddlJob *job);
extern void ConstraintDropOfJob(const BgddlJob *job);
extern void ConstraintStart(JobRun *run);
extern void ConstraintPlan(JobRun *run);
extern JobStepResult ConstraintBackfillStep(JobRun *run);
extern JobStepResult ConstraintCutOver(JobRun *run);
extern void ConstraintCutOverLock(JobRun *run);
extern JobStepResult ConstraintCutOverPublish(JobRun *run);
extern JobStepResult ConstraintRestartBuild(JobRun *run);
extern int64 ConstraintWritesToTable(const BgddlJob *job);
extern const char *ConstraintGoneReason(const BgddlJob *job);
extern void ConstraintDiscard(const BgddlJob *job, bool keep_target);

/* kind_key_constraint.c */
extern bool KeyConstraintBuildsIndex(AlterTableCmd *cmd);
extern const char *KeyConstraintInSessionReason(Oid relid, AlterTableCmd *cmd);
extern Oid	KeyConstraintSubmit(KindSubmit *submit, AlterTableStmt *stmt, Oid relid);
extern const char *KeyConstraintStrategy(Oid relid, AlterTableCmd *cmd);
extern void KeyConstraintEstimate(AlterTableStmt *stmt, const char *query_string,
								  JobEstimate *estimate);

#endif							/* BGDDL_KIND_CONSTRAINT_H */
