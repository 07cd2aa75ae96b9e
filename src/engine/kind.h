/*-------------------------------------------------------------------------
 *
 * kind.h
 *	  A kind of job (a statement that runs in the background) as a table of
 *	  routines that the submit hook, the worker and the control functions
 *	  drive, the way an index access method is an IndexAmRoutine.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_KIND_H
#define BGDDL_KIND_H

#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "tcop/cmdtag.h"
#include "tcop/utility.h"
#include "utils/jsonb.h"

#include "catalog/catalog_job.h"
#include "engine/job_estimate.h"
#include "engine/job_step.h"
#include "engine/job_xact.h"

/* A job as its worker runs it (job_run.h), which the worker routines take */
struct JobRun;

/*
 * What a kind makes of a statement in background mode: not its kind at all,
 * a job, or its kind but run in this session as if background_ddl were off
 * (with the reason, for a NOTICE: it is session-bound, or a table it reads
 * belongs to an engine whose statements we must leave alone).
 */
typedef enum KindAcceptance
{
	KIND_NOT_ACCEPTED,			/* not this kind's, or nothing to build */
	KIND_ACCEPTED,				/* becomes a job */
	KIND_IN_SESSION				/* this kind's, but runs here: see reason */
} KindAcceptance;

/* A statement being submitted, and what the kind reserves for it */
typedef struct KindSubmit
{
	PlannedStmt *pstmt;
	const char *query_string;
	ProcessUtilityContext context;
	ParamListInfo params;
	QueryEnvironment *query_env;
	QueryCompletion *qc;
	/* run a (derived) statement through the rest of the ProcessUtility chain */
	void		(*run_utility) (struct KindSubmit *submit, PlannedStmt *pstmt);
	/* filled in by reserve */
	Oid			target_oid;
	char	   *target_name;	/* schema-qualified */
	Jsonb	   *kind_state;		/* the kind's own state of the job (NULL: empty) */
	char	   *strategy;		/* NULL: the worker decides */
	char	   *one_batch_reason;	/* for the NOTICE; NULL if batched */
	List	   *after;			/* filled in by validate: jobs whose placeholders it reads */
	/*
	 * filled in by validate, for the order of the session's later statements
	 * (session_order.c): the relations the result is made from (Oid), and
	 * what done to them changes the result (REL_* of job_xact.h)
	 */
	List	   *sources;
	int			source_effects;
	/*
	 * filled in by validate, if not the default: what done to the target by
	 * the session's later statements must wait for the job (REL_*)
	 */
	int			target_effects;
	/*
	 * filled in by validate, for a job that defines keys (a unique index, a
	 * primary key): their table, and the relation that holds the index's
	 * name until it is built (or InvalidOid)
	 */
	Oid			key_table;
	Oid			key_placeholder;
	/*
	 * filled in by validate, for a job that builds an index: its table,
	 * which the build holds locked (SHARE UPDATE EXCLUSIVE, as CREATE INDEX
	 * CONCURRENTLY holds it) while it runs
	 */
	Oid			held_table;
	/*
	 * set by validate, for a job that changes its target's columns (ALTER
	 * COLUMN ... TYPE): the session's later statements that become jobs and
	 * name the target wait for it before their checks
	 * (SessionOrderAwaitChecks)
	 */
	bool		changes_columns;
	/*
	 * filled in by validate, for a statement on a partitioned table that
	 * becomes a job for each of its leaf partitions, published together (a
	 * group of their own, named group_name): the leaves (Oid), and each
	 * one's kind state (Jsonb *); reserve is not called
	 */
	List	   *leaves;
	List	   *leaf_states;
	char	   *group_name;
	/*
	 * set by validate: the statement is not a job after all, and runs as
	 * PostgreSQL runs it (what accepts could not tell without its checks)
	 */
	bool		declined;
} KindSubmit;

/*
 * What a job's kind adds to what pg_stat_background_ddl shows of it (the
 * progress routine), from its kind state and its worker's own progress
 * report; a NULL or negative field adds nothing.
 */
typedef struct KindProgress
{
	char	   *phase;			/* the worker's step, in the kind's words */
	char	   *waiting_for;	/* what that step waits for */
	double		percent;
	int64		rows_done;		/* replaces the job row's */
	int64		rows_total;		/* replaces the job row's */
	int64		chunks_total;	/* when the job row has none */
	int64		catchup_passes;
	int64		rows_recomputed;
} KindProgress;

/*
 * The routines of a kind.  One life cycle drives every kind:
 *
 *	submit:  accepts? -> validate -> reserve -> (job row, NOTICE)
 *	worker:  start -> plan -> backfill_step* -> catch_up* -> cut_over
 *			 -> cleanup (if the job row says cleanup_pending)
 *	helper:  start -> help_step* (while the backfill has chunks to take)
 *	and, when the job fails or is cancelled, cleanup and discard (in the
 *	worker), or discard alone (in cancel_ddl's transaction, where the kind
 *	allows it; the worker cleans up after).
 *
 * Each worker routine runs its own steps (job_step.h); a phase routine
 * returns JOB_STEP_MORE until its phase is over.  What the kind keeps of a
 * job is its own: in the job row's kind_state (CatalogKindState*), and, for
 * one worker's run, in JobRun.kind_run.
 */
typedef struct KindRoutine
{
	const char *name;			/* the statement, as the job row names it */
	/*
	 * a variant of the kind of that name (another way to build the same
	 * statement): its jobs have this key in their kind_state; NULL for the
	 * kind itself
	 */
	const char *variant_key;
	ObjectType	stands_for;		/* what DROP of the target names */
	bool		replaces_placeholder;	/* the target is a placeholder for
										 * another object */
	bool		populates_target;	/* the target is the object itself, empty
									 * until the job fills it */
	bool		waits_for_older_snapshots;	/* its worker waits for the
											 * transactions whose snapshots
											 * are older than its own */
	bool		cut_over_publishes; /* nothing of its result is in use before
									 * its cut-over, which may wait for
									 * complete_ddl (a manual cut-over) */
	bool		checks_lock_tables; /* validate locks the tables the statement
									 * names in a mode an index build's lock
									 * conflicts with (SessionOrderAwaitChecks) */

	/* optional: at library load, in the postmaster (hooks it needs) */
	void		(*load) (void);

	/*
	 * optional: in the scheduler, between its passes, in a transaction:
	 * keep what the kind's jobs accumulate bounded (called once per pass
	 * however many kinds share the routine)
	 */
	void		(*housekeeping) (void);

	/*
	 * In the submitting backend (a variant that leaves accepts NULL is
	 * chosen by its kind's validate, which sets its key)
	 */
	/* does this statement become a job?  (*reason: why it runs here) */
	KindAcceptance (*accepts) (Node *parsetree, const char **reason);
	/*
	 * optional: a statement on a partitioned table that PostgreSQL runs on
	 * each partition in a transaction of its own (VACUUM FULL, CLUSTER): the
	 * statements of its partitions, as text, each a job of its own (if every
	 * one is accepted); NIL if not one
	 */
	List	   *(*partition_statements) (Node *parsetree, bool top_level);
	/*
	 * optional: do the statement's checks at submit read the keys of the
	 * tables it names (a foreign key, those of the table it references; a
	 * key, its table's)?  Then it waits for the session's unfinished jobs
	 * that define keys on those tables (or has them built here, in their
	 * transaction) before it is validated, rather than start after them.
	 */
	bool		(*validates_against_keys) (Node *parsetree);
	void		(*validate) (KindSubmit *submit);	/* the blocking statement's errors */
	void		(*reserve) (KindSubmit *submit);	/* create the placeholder */
	/*
	 * optional: once the job row is inserted, in the submitting transaction,
	 * what needs the job's id (a foreign key's capture triggers, under the
	 * statement's own lock)
	 */
	void		(*submitted) (KindSubmit *submit, int64 job_id);
	/* optional: explain_ddl's strategy for a raw statement, or NULL if not ours */
	const char *(*explain) (Node *raw_statement, const char *query_string);
	/*
	 * optional: estimate_ddl of a raw statement, measured on a rolled-back
	 * sample as the caller; false if the statement is not this kind's
	 */
	bool		(*estimate) (Node *raw_statement, const char *query_string,
							 JobEstimate *estimate);

	/* In the job's worker */
	void		(*start) (struct JobRun *run); /* optional: set up the run from the job row */
	void		(*plan) (struct JobRun *run);	/* decide and record the strategy */
	JobStepResult (*backfill_step) (struct JobRun *run);
	/* optional: a chunk of the backfill, in a helper (another worker) */
	JobStepResult (*help_step) (struct JobRun *run);
	/* optional: bring the content up to date with the writes since */
	JobStepResult (*catch_up) (struct JobRun *run);
	JobStepResult (*cut_over) (struct JobRun *run);	/* success when it commits */
	/*
	 * optional: the cut-over in parts, so that one worker can publish the
	 * jobs of a group in one transaction (job_group.c); a kind that has
	 * them may be in a group, and leaves what it makes unused until then
	 * (job.group_id).  Take its locks, in a step whose snapshot comes after
	 * them; then, under that snapshot, finish and publish, leaving the step
	 * to the caller.  JOB_STEP_RESTART from publish restarted nothing:
	 * restart_build (optional) restarts the build, in steps of its own,
	 * once the step is undone.
	 */
	void		(*cut_over_lock) (struct JobRun *run);
	JobStepResult (*cut_over_publish) (struct JobRun *run);
	JobStepResult (*restart_build) (struct JobRun *run);
	/*
	 * optional: in the same transaction, once every job of the group has
	 * published (cut_over_publish), what the kind does after all of them
	 * (a partitioned table's ALTER, once its partitions' rows are all
	 * caught up: kind_rewrite.c)
	 */
	void		(*cut_over_finish) (struct JobRun *run);
	/*
	 * optional (with cut_over_publishes): the rows written so far to the
	 * tables the job reads, as the cumulative statistics count them
	 * (background_ddl.cutover_max_writes), in a step
	 */
	int64		(*writes_to_sources) (const BgddlJob *job);

	/*
	 * optional: in any session, for pg_stat_background_ddl: what the job's
	 * kind state (and rows_done, rows_total), and the progress report of its
	 * worker pid (0: it has none now) add to what the view shows
	 */
	void		(*progress) (const BgddlJob *job, pid_t pid, KindProgress *progress);

	/*
	 * optional: why the target is gone, when it is (a static string, or NULL
	 * for "the target was dropped"), in a step
	 */
	const char *(*gone_reason) (const BgddlJob *job);

	/*
	 * optional: the job was paused, in the pausing transaction (what it
	 * keeps track of meanwhile can stop)
	 */
	void		(*paused) (const BgddlJob *job);

	/*
	 * optional: does the job keep something on a table that role owns (a
	 * capture trigger), which that owner cannot drop?  That owner may
	 * cancel the job.
	 */
	bool		(*keeps_on_table_of) (const BgddlJob *job, Oid role);

	/*
	 * optional: after the job's end, remove what needs strong locks on
	 * other roles' tables (capture triggers), in the current transaction,
	 * taking its locks with JobStepLockRelation.  The job row's
	 * cleanup_pending says whether there is anything.
	 */
	void		(*cleanup) (const BgddlJob *job);

	/*
	 * Remove what the job created (it failed, or is cancelled), in the
	 * current transaction; with keep_target, not the target itself (the
	 * caller is dropping it, or could not).  If discards_in_any_transaction
	 * says so (NULL: always), cancel_ddl does it in the caller's
	 * transaction; otherwise (it needs strong locks) the job is cancelling
	 * until its worker has done it.
	 */
	void		(*discard) (const BgddlJob *job, bool keep_target);
	bool		(*discards_in_any_transaction) (const BgddlJob *job);

	/*
	 * In the submitting transaction, which uses the target before it has
	 * committed: build the object here, now, as the blocking statement would
	 * have, and end the job as succeeded (when that transaction commits).
	 * Returns the relation that now stands for the target.
	 */
	Oid			(*build_here) (const BgddlJob *job);

	/*
	 * optional: the relation that stands for the target once the job has
	 * succeeded, if not the target itself (CREATE TABLE AS: its table)
	 */
	Oid			(*result) (const BgddlJob *job);
} KindRoutine;

extern void KindRegister(const KindRoutine *routine);
extern void KindsHousekeeping(void);
extern void KindsRecordLiveProgress(void);
extern const KindRoutine *KindRoutineForJob(const BgddlJob *job);
extern const KindRoutine *KindForStatement(Node *parsetree, const char **in_session_reason);
extern List *KindPartitionStatements(Node *parsetree, bool top_level);
extern const char *KindExplain(Node *raw_statement, const char *query_string);
extern bool KindEstimate(Node *raw_statement, const char *query_string, JobEstimate *estimate);
extern char *KindNames(bool estimated);
extern void KindNoticeInSession(const char *reason);
extern bool KindStandsFor(ObjectType type);
extern void KindJobProgress(const BgddlJob *job, pid_t pid, KindProgress *progress);
extern Oid	KindBuildHere(int64 job_id, const char *why);
extern Oid	KindResult(const BgddlJob *job);
extern Oid	KindFutureRelation(const BgddlJob *job);
extern List *KindQuerySources(PlannedStmt *plan, Query *query);
extern void KindIndexSources(KindSubmit *submit, Oid table_oid, bool unique);

/* What done to the sources of a query's result changes it */
#define KIND_QUERY_SOURCE_EFFECTS	(REL_ADDS_ROWS | REL_REMOVES_ROWS | REL_REDEFINES)

#endif							/* BGDDL_KIND_H */
