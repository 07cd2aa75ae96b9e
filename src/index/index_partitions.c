/*-------------------------------------------------------------------------
 *
 * index_partitions.c
 *	  CREATE INDEX on a partitioned table as one job, partition by partition.
 *
 * PostgreSQL builds the index of a partitioned table in one transaction
 * that blocks the table's writers, and cannot build it concurrently.  Its
 * documentation gives the recipe by hand: CREATE INDEX ... ON ONLY the
 * table (invalid), CREATE INDEX CONCURRENTLY on each partition, ALTER
 * INDEX ... ATTACH PARTITION each; the parent index becomes valid when the
 * last is attached.  A job follows it, one step at a time, each step a
 * checkpoint:
 *
 *	1. (kind_index.c) the placeholder dropped and the index created ON ONLY
 *	   the partitioned table, in one transaction, under the SHARE lock that
 *	   takes (asked for as a job asks for locks, within lock_timeout);
 *	2. per partition, parents before children: a partition that has an
 *	   index matching the definition (and attached to no other; for a leaf,
 *	   a valid one) gets it attached, as CREATE INDEX attaches it, and, as
 *	   CREATE INDEX does, the job does not go below a sub-partitioned table
 *	   whose index it adopted so; else a sub-partitioned table gets its own
 *	   ON ONLY index, attached to its parent's, and a leaf one built as
 *	   CREATE INDEX CONCURRENTLY builds it (writers never wait), its OID
 *	   recorded with the job in the build's first transaction, then
 *	   attached; a foreign table is skipped, as CREATE INDEX skips it;
 *	3. once every partition has a valid index attached, the indexes of the
 *	   partitioned tables are marked valid, bottom up, as ATTACH PARTITION
 *	   would mark them.  An adopted index that is invalid (ON ONLY its
 *	   table, short of some of its partitions' indexes) keeps those above it
 *	   invalid, as it does after CREATE INDEX: the job succeeds with them so
 *	   (STATE_LEFT_INVALID).
 *
 * A job that rebuilds an invalid partitioned index (that CREATE INDEX IF
 * NOT EXISTS found under its name) starts at step 2 with that index, and
 * drops (detached first) each invalid leaf index attached in its tree, to
 * build it again under its name.
 *
 * What is done is read from the catalogs (which partition has an index
 * attached to the job's), never kept in memory: after a crash, a restart
 * or a pause only the partition that was being built starts over (its
 * invalid index is dropped).  A partition created or attached meanwhile
 * comes with its index (PostgreSQL clones the parent's indexes onto it, the
 * job's invalid one too); one detached or dropped is no longer in the tree.
 * Cancel detaches every index in the tree that the job did not create
 * (that it adopted, or that PostgreSQL attached: a partition attached with
 * its own index), then drops the parent's index, and with it every index
 * the job created.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "nodes/makefuncs.h"
#include "parser/parse_utilcmd.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog/catalog_job.h"
#include "catalog/settings.h"
#include "engine/job_step.h"
#include "index/index_build.h"
#include "index/index_partitions.h"

/* The job's kind_state, besides INDEX_STATE_PARTITIONED */
#define STATE_BUILDING_INDEX	"building_index"	/* a leaf's index being built */
#define STATE_BUILDING_TABLE	"building_table"	/* ... and its leaf */
#define STATE_CREATED			"created"	/* partitions whose index it created */
#define STATE_PARTITION			"partition" /* the partition being worked on */
#define STATE_DONE				"partitions_done"	/* leaves with a valid index */
#define STATE_TOTAL				"partitions_total"	/* leaves */
#define STATE_LEFT_INVALID		"left_invalid"	/* done; an adopted index keeps it invalid */
#define STATE_REBUILT_TABLE		"rebuilt_table" /* a leaf whose invalid index was dropped */
#define STATE_REBUILT_NAME		"rebuilt_name"	/* ... and that index's name, for its rebuild */
/* In a group: the leaf's index just built, held back invalid (IndexBuildHoldBack) */
#define STATE_BUILT_HELD		"built_held"
/* In a group: every partition has its index (the job's held back): the job is built */
#define STATE_TREE_DONE			"tree_done"
/* The leaves' indexes that the job builds are held back (JobRunPublishesLater at the first) */
#define STATE_HOLDS				"holds"

/* A partition (at any level) of the indexed table, and the job's indexes */
typedef struct TreePartition
{
	Oid			table;
	Oid			parent_table;
	char		relkind;
	double		tuples;
	Oid			parent_index;	/* the job's index on the parent table */
	Oid			index;			/* the job's index on it: attached to that */
	bool		valid;
} TreePartition;

/* What the next step of the job does */
typedef enum PartitionStepKind
{
	PARTITION_STEP_NONE,		/* every partition has its index */
	PARTITION_STEP_DROP,		/* drop the index of an interrupted build */
	PARTITION_STEP_ATTACH,		/* attach a leaf's valid index */
	PARTITION_STEP_PREPARE,		/* an ON ONLY index for a sub-partitioned table */
	PARTITION_STEP_BUILD		/* build a leaf's index concurrently */
} PartitionStepKind;

typedef struct PartitionStep
{
	PartitionStepKind kind;
	Oid			table;
	Oid			parent_index;
	Oid			index;
	bool		built;			/* the index is the one the job built */
	bool		attached;		/* to drop: an invalid leaf index attached in the tree */
} PartitionStep;

static Oid
StateOid(const BgddlJob *job, const char *key)
{
	return (Oid) CatalogKindStateInt(job->kind_state, key);
}

/*
 * Is the index attached under the job's on this partition one the job
 * created?  Recorded by partition, not by index: REINDEX CONCURRENTLY gives
 * an index a new OID.
 */
static bool
Created(const BgddlJob *job, Oid table_oid)
{
	char	   *created = CatalogKindStateText(job->kind_state, STATE_CREATED);

	for (char *next = created; next != NULL && *next != '\0';)
	{
		if ((Oid) strtoul(next, &next, 10) == table_oid)
			return true;
		while (*next == ' ')
			next++;
	}
	return false;
}

static void
AddCreated(JobRun *run, Oid table_oid)
{
	char	   *created = CatalogKindStateText(run->job.kind_state, STATE_CREATED);

	if (!Created(&run->job, table_oid))
		JobRunSetStateText(run, STATE_CREATED, created && created[0] ?
					 psprintf("%s %u", created, table_oid) : psprintf("%u", table_oid));
}

/* A partition (at any level) of the tree, or NULL */
static TreePartition *
FindPartition(List *partitions, Oid table)
{
	ListCell   *lc;

	foreach(lc, partitions)
	{
		TreePartition *partition = lfirst(lc);

		if (partition->table == table)
			return partition;
	}
	return NULL;
}

/* The job's index on a partitioned table of the tree, if it has one yet */
static Oid
IndexOfTable(List *partitions, Oid table)
{
	TreePartition *partition = FindPartition(partitions, table);

	return partition != NULL ? partition->index : InvalidOid;
}

/*
 * The partitions of the indexed table, parents before children, each with
 * the job's index on it (the one attached to the job's index on its
 * parent), valid or not (a leaf's that the job created, in a group, held
 * back invalid, counts as valid).  Each is locked ACCESS SHARE (no writer
 * waits for that); one dropped or detached meanwhile is not in the list.
 */
static List *
JobTree(const BgddlJob *job, Oid table_oid, Oid root_index)
{
	List	   *partitions = NIL;
	ListCell   *lc;

	foreach(lc, find_all_inheritors(table_oid, NoLock, NULL))
	{
		Relation	rel;
		TreePartition *partition;

		if (lfirst_oid(lc) == table_oid)
			continue;
		rel = try_relation_open(lfirst_oid(lc), AccessShareLock);
		if (rel == NULL)
			continue;
		if (!rel->rd_rel->relispartition)
		{
			relation_close(rel, AccessShareLock);
			continue;
		}
		partition = palloc0(sizeof(TreePartition));
		partition->table = RelationGetRelid(rel);
		partition->relkind = rel->rd_rel->relkind;
		partition->tuples = Max(rel->rd_rel->reltuples, 0);
		partition->parent_table = get_partition_parent(partition->table, true);
		partition->parent_index = partition->parent_table == table_oid ? root_index :
			IndexOfTable(partitions, partition->parent_table);
		if (OidIsValid(partition->parent_index))
			partition->index = index_get_partition(rel, partition->parent_index);
		if (OidIsValid(partition->index))
			(void) IndexBuildIsIndex(partition->index, &partition->valid);
		partition->valid |= OidIsValid(partition->index) &&
			CatalogKindStateInt(job->kind_state, STATE_HOLDS) != 0 &&
			partition->relkind == RELKIND_RELATION && Created(job, partition->table);
		relation_close(rel, NoLock);
		partitions = lappend(partitions, partition);
	}
	return partitions;
}

/*
 * Is the partition below a sub-partitioned table whose index the job
 * adopted (attached, not created)?  CREATE INDEX does not go below such a
 * table: nor does the job.  (Parents come before children in partitions.)
 */
static bool
BelowAdoptedIndex(const BgddlJob *job, List *partitions, const TreePartition *partition)
{
	TreePartition *parent = FindPartition(partitions, partition->parent_table);

	if (parent == NULL)
		return false;
	if (parent->relkind == RELKIND_PARTITIONED_TABLE && OidIsValid(parent->index) &&
		!Created(job, parent->table))
		return true;
	return BelowAdoptedIndex(job, partitions, parent);
}

/*
 * At submit, what the dry run of CREATE INDEX (which stops at the parent's
 * index) does not reach, with PostgreSQL's errors: a unique index cannot be
 * built on a tree with foreign tables in it, and must hold the partition
 * key of every sub-partitioned table too (by column name; that the index's
 * equality is the partitioning's, the worker's step for that table checks).
 */
void
IndexPartitionsCheckSubmit(Oid table_oid, IndexStmt *stmt)
{
	ListCell   *lc;

	if (!stmt->unique)
		return;
	foreach(lc, find_all_inheritors(table_oid, AccessShareLock, NULL))
	{
		Relation	rel;
		PartitionKey key;

		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("cannot create unique index on partitioned table \"%s\"",
							get_rel_name(table_oid)),
					 errdetail("Table \"%s\" contains partitions that are foreign tables.",
							   get_rel_name(table_oid))));
		if (lfirst_oid(lc) == table_oid ||
			get_rel_relkind(lfirst_oid(lc)) != RELKIND_PARTITIONED_TABLE)
			continue;
		rel = table_open(lfirst_oid(lc), NoLock);
		key = RelationGetPartitionKey(rel);
		for (int i = 0; i < key->partnatts; i++)
		{
			const char *column;
			bool		found = false;
			ListCell   *elem_cell;

			if (key->partattrs[i] == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("unsupported UNIQUE constraint with partition key definition"),
						 errdetail("UNIQUE constraints cannot be used when partition keys include expressions.")));
			column = get_attname(RelationGetRelid(rel), key->partattrs[i], false);
			foreach(elem_cell, stmt->indexParams)
			{
				IndexElem  *elem = lfirst(elem_cell);
				const char *name = elem->name;

				/* (column) is the column, as DefineIndex counts it */
				if (elem->expr != NULL && IsA(elem->expr, Var))
					name = get_attname(table_oid, ((Var *) elem->expr)->varattno, true);
				found |= name != NULL && strcmp(name, column) == 0;
			}
			if (!found)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("unique constraint on partitioned table must include all partitioning columns"),
						 errdetail("UNIQUE constraint on table \"%s\" lacks column \"%s\" which is part of the partition key.",
								   RelationGetRelationName(rel), column)));
		}
		table_close(rel, NoLock);
	}
}

/* The leaves (the partitions that hold rows and need an index) of the tree */
static void
CountLeaves(List *partitions, int64 *done, int64 *total, double *rows_done, double *rows_total)
{
	ListCell   *lc;

	*done = *total = 0;
	*rows_done = *rows_total = 0;
	foreach(lc, partitions)
	{
		TreePartition *partition = lfirst(lc);

		if (partition->relkind != RELKIND_RELATION)
			continue;
		(*total)++;
		*rows_total += partition->tuples;
		if (OidIsValid(partition->index) && partition->valid)
		{
			(*done)++;
			*rows_done += partition->tuples;
		}
	}
}

/*
 * The job's progress: the leaves done and in all, the one being built (by
 * the build whose progress is given, or none), and the rows of the leaves
 * done with the tuples of that build
 */
void
IndexPartitionsProgress(const BgddlJob *job, const IndexBuildProgress *build,
						KindProgress *progress)
{
	int64		done = CatalogKindStateInt(job->kind_state, STATE_DONE);
	int64		total = CatalogKindStateInt(job->kind_state, STATE_TOTAL);
	char	   *partition = CatalogKindStateText(job->kind_state, STATE_PARTITION);

	if (total <= 0)
		return;					/* not planned yet */
	progress->chunks_total = total;
	progress->percent = 100.0 * (done + (build != NULL ? build->percent / 100 : 0)) / total;
	progress->rows_done = job->rows_done + (build != NULL ? build->tuples_done : 0);
	if (build == NULL)
		return;
	progress->phase = partition == NULL ? build->phase :
		psprintf("%s (partition %s, %lld of %lld)", build->phase, partition,
				 (long long) done + 1, (long long) total);
	if (build->waiting)
		progress->waiting_for = partition == NULL ? build->phase :
			psprintf("%s (building the index of partition %s)", build->phase, partition);
}

/* The size of the job: its leaves, and their rows as the statistics count them */
void
IndexPartitionsPlan(JobRun *run, Oid table_oid)
{
	int64		done;
	int64		total;
	double		rows_done;
	double		rows_total;

	CountLeaves(JobTree(&run->job, table_oid, InvalidOid), &done, &total, &rows_done, &rows_total);
	run->job.work_total = total;
	run->job.rows_total = (int64) rows_total;
	JobRunSetStateInt(run, STATE_TOTAL, total);
	JobRunSetStateInt(run, STATE_DONE, 0);
}

/*
 * An index of a partition that matches the job's index on its parent and is
 * attached to no other: CREATE INDEX attaches it instead of building one (a
 * sub-partitioned table's partitioned index whatever its state, as CREATE
 * INDEX does; a leaf's only if valid: an invalid one would keep the parent
 * invalid).  Compared as ALTER INDEX ... ATTACH PARTITION compares them.
 */
static Oid
MatchingIndex(const TreePartition *partition)
{
	Relation	rel = table_open(partition->table, NoLock);
	Relation	parent_table = table_open(partition->parent_table, AccessShareLock);
	Relation	parent_index = index_open(partition->parent_index, AccessShareLock);
	IndexInfo  *parent_info = BuildIndexInfo(parent_index);
	AttrMap    *attmap = build_attrmap_by_name(RelationGetDescr(rel),
											   RelationGetDescr(parent_table));
	Oid			found = InvalidOid;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Relation	index;
		bool		valid;

		if (get_rel_relispartition(lfirst_oid(lc)) ||
			!IndexBuildIsIndex(lfirst_oid(lc), &valid) ||
			(!valid && partition->relkind == RELKIND_RELATION))
			continue;
		index = index_open(lfirst_oid(lc), AccessShareLock);
		if (CompareIndexInfo(BuildIndexInfo(index), parent_info,
							 index->rd_indcollation, parent_index->rd_indcollation,
							 index->rd_opfamily, parent_index->rd_opfamily, attmap))
			found = RelationGetRelid(index);
		index_close(index, AccessShareLock);
		if (OidIsValid(found))
			break;
	}
	index_close(parent_index, AccessShareLock);
	table_close(parent_table, AccessShareLock);
	table_close(rel, NoLock);
	return found;
}

/*
 * What the next step is, from the catalogs: the index an interrupted build
 * left (attach it if it is valid, else drop it), else the first partition
 * without the job's index.  Records the progress: leaves done, their rows.
 */
static PartitionStep
DecideStep(JobRun *run, Oid table_oid)
{
	List	   *partitions = JobTree(&run->job, table_oid, run->job.target_oid);
	PartitionStep step = {PARTITION_STEP_NONE};
	Oid			building = StateOid(&run->job, STATE_BUILDING_INDEX);
	int64		done;
	int64		total;
	double		rows_done;
	double		rows_total;
	ListCell   *lc;

	CountLeaves(partitions, &done, &total, &rows_done, &rows_total);
	CatalogJobSetBackfillTotals(&run->job, done, (int64) rows_done, done);
	run->job.rows_total = (int64) rows_total;
	JobRunSetStateInt(run, STATE_DONE, done);
	JobRunSetStateInt(run, STATE_TOTAL, total);

	if (OidIsValid(building))
	{
		TreePartition *partition = FindPartition(partitions, StateOid(&run->job, STATE_BUILDING_TABLE));
		bool		valid;

		if (IndexBuildIsIndex(building, &valid) &&
			(partition == NULL || partition->index != building))
		{
			step.index = building;
			if (partition != NULL && !OidIsValid(partition->index) &&
				(valid || StateOid(&run->job, STATE_BUILT_HELD) == building))
			{
				step.kind = PARTITION_STEP_ATTACH;
				step.table = partition->table;
				step.parent_index = partition->parent_index;
				step.built = true;
			}
			else
				step.kind = PARTITION_STEP_DROP;
			return step;
		}
		/* attached meanwhile (its partition detached and attached again), or gone */
		if (partition != NULL && partition->index == building)
			AddCreated(run, partition->table);
		JobRunSetStateInt(run, STATE_BUILDING_INDEX, 0);
	}
	foreach(lc, partitions)
	{
		TreePartition *partition = lfirst(lc);

		if (BelowAdoptedIndex(&run->job, partitions, partition))
			continue;
		/*
		 * An invalid leaf index attached in the tree: the job rebuilds it if
		 * it rebuilds the invalid index above it; otherwise it came with a
		 * partition attached meanwhile, and would keep the index invalid.
		 */
		if (OidIsValid(partition->index) && !partition->valid &&
			partition->relkind == RELKIND_RELATION &&
			CatalogKindStateInt(run->job.kind_state, INDEX_STATE_REBUILDS) != 0)
		{
			step.kind = PARTITION_STEP_DROP;
			step.table = partition->table;
			step.index = partition->index;
			step.attached = true;
			JobRunSetStateText(run, STATE_PARTITION, get_rel_name(partition->table));
			return step;
		}
		if (OidIsValid(partition->index) && !partition->valid &&
			partition->relkind == RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("index \"%s\" of partition \"%s\" is invalid",
							get_rel_name(partition->index), get_rel_name(partition->table)),
					 errdetail("It was attached to index \"%s\" with its partition while the job ran.",
							   get_rel_name(partition->parent_index)),
					 errhint("REINDEX it, or drop it, and submit the statement again.")));
		if (OidIsValid(partition->index) || !OidIsValid(partition->parent_index) ||
			partition->relkind == RELKIND_FOREIGN_TABLE)
			continue;
		step.table = partition->table;
		step.parent_index = partition->parent_index;
		JobRunSetStateText(run, STATE_PARTITION, get_rel_name(partition->table));
		step.index = MatchingIndex(partition);
		if (OidIsValid(step.index))
			step.kind = PARTITION_STEP_ATTACH;
		else
			step.kind = partition->relkind == RELKIND_PARTITIONED_TABLE ?
				PARTITION_STEP_PREPARE : PARTITION_STEP_BUILD;
		return step;
	}
	return step;
}

/*
 * The statement that makes a partition's index like the job's index on its
 * parent, as CREATE INDEX makes it when it recurses (the name chosen by
 * DefineIndex, from the partition's).
 */
static IndexStmt *
ClonedStatement(Oid table, Oid parent_index)
{
	Relation	rel = table_open(table, NoLock);
	Relation	parent_table = table_open(IndexGetRelation(parent_index, false), AccessShareLock);
	Relation	index = index_open(parent_index, AccessShareLock);
	AttrMap    *attmap = build_attrmap_by_name(RelationGetDescr(rel),
											   RelationGetDescr(parent_table));
	IndexStmt  *stmt = generateClonedIndexStmt(NULL, index, attmap, NULL);

	stmt->relation = makeRangeVar(get_namespace_name(RelationGetNamespace(rel)),
								  pstrdup(RelationGetRelationName(rel)), -1);
	stmt->idxname = NULL;
	stmt->if_not_exists = false;
	index_close(index, AccessShareLock);
	table_close(parent_table, AccessShareLock);
	table_close(rel, NoLock);
	return stmt;
}

/* Is the partition still in the tree, without the job's index? */
static bool
StillWithoutIndex(Oid table, Oid parent_index)
{
	Relation	rel = try_relation_open(table, AccessShareLock);
	bool		without;

	if (rel == NULL)
		return false;
	without = rel->rd_rel->relispartition &&
		SearchSysCacheExists1(RELOID, ObjectIdGetDatum(parent_index)) &&
		get_partition_parent(table, true) == IndexGetRelation(parent_index, false) &&
		!OidIsValid(index_get_partition(rel, parent_index));
	relation_close(rel, NoLock);
	return without;
}

/*
 * A sub-partitioned table's index: ON ONLY the table (invalid while it has
 * partitions), attached to the job's index on its parent; its SHARE lock is
 * taken within lock_timeout (a locking step).
 */
static void
PrepareStep(JobRun *run, void *arg)
{
	const PartitionStep *step = arg;
	IndexStmt  *stmt;

	JobStepLockRelation(step->table, ShareLock, background_ddl_lock_timeout_ms);
	LockRelationOid(step->parent_index, ShareUpdateExclusiveLock);
	if (!StillWithoutIndex(step->table, step->parent_index))
		return;
	stmt = ClonedStatement(step->table, step->parent_index);
	stmt->relation->inh = false;
	stmt->concurrent = false;
	(void) IndexBuildDefine(&run->job, step->table, stmt, InvalidOid, step->parent_index);
	AddCreated(run, step->table);
	CatalogJobRecordKindState(&run->job);
}

/*
 * Attach a partition's index to the job's index on its parent, as ALTER
 * INDEX ... ATTACH PARTITION does, in its lock order: the partition (ACCESS
 * SHARE), its index (ACCESS EXCLUSIVE, taken within lock_timeout), the
 * parent's index (SHARE UPDATE EXCLUSIVE).  The index the job built is
 * recorded as created (cancel drops it; it detaches the others).
 */
static void
AttachStep(JobRun *run, void *arg)
{
	const PartitionStep *step = arg;
	Relation	index;
	bool		valid;

	LockRelationOid(step->table, AccessShareLock);
	JobStepLockRelation(step->index, AccessExclusiveLock, background_ddl_lock_timeout_ms);
	LockRelationOid(step->parent_index, ShareUpdateExclusiveLock);
	if (StillWithoutIndex(step->table, step->parent_index) &&
		IndexBuildIsIndex(step->index, &valid) &&
		(valid || get_rel_relkind(step->index) == RELKIND_PARTITIONED_INDEX ||
		 (step->built && StateOid(&run->job, STATE_BUILT_HELD) == step->index)) &&
		!get_rel_relispartition(step->index) &&
		IndexGetRelation(step->index, false) == step->table)
	{
		index = index_open(step->index, NoLock);
		IndexSetParentIndex(index, step->parent_index);
		index_close(index, NoLock);
		/* (idempotent: a retried step sees the state it changed) */
		if (step->built)
		{
			AddCreated(run, step->table);
			JobRunSetStateInt(run, STATE_BUILDING_INDEX, 0);
		}
		CatalogJobRecordKindState(&run->job);
	}
}

/* Detach a partition's index from its parent index (the inverse of AttachStep) */
static void
Detach(Oid index_oid)
{
	Relation	index = index_open(index_oid, AccessExclusiveLock);

	IndexSetParentIndex(index, InvalidOid);
	index_close(index, NoLock);
	CommandCounterIncrement();
}

/*
 * Drop the index an interrupted build left (invalid, or its leaf gone), or
 * an invalid leaf index attached in the tree of an index the job rebuilds:
 * detached first (its table locked before it, as DROP INDEX locks them),
 * if it is still invalid and attached.
 */
static void
DropStep(JobRun *run, void *arg)
{
	const PartitionStep *step = arg;
	char	   *name = get_rel_name(step->index);
	bool		valid;

	if (step->attached)
	{
		JobStepLockRelation(step->table, AccessExclusiveLock, background_ddl_lock_timeout_ms);
		if (!IndexBuildIsIndex(step->index, &valid) || valid ||
			!get_rel_relispartition(step->index))
			return;
		Detach(step->index);
		IndexBuildDrop(step->index);
		JobRunSetStateInt(run, STATE_REBUILT_TABLE, step->table);
		JobRunSetStateText(run, STATE_REBUILT_NAME, name);
		CatalogJobRecordKindState(&run->job);
		ereport(LOG,
				(errmsg("background DDL job %lld: dropped the invalid index \"%s\" of partition \"%s\"; it is built again",
						(long long) run->job.id, name, get_rel_name(step->table))));
		return;
	}
	IndexBuildDrop(step->index);
	JobRunSetStateInt(run, STATE_BUILDING_INDEX, 0);
	CatalogJobRecordKindState(&run->job);
	ereport(LOG,
			(errmsg("background DDL job %lld: dropped the index \"%s\" left by an interrupted build of a partition's index",
					(long long) run->job.id, name ? name : "?")));
}

/*
 * Build a leaf's index as CREATE INDEX CONCURRENTLY builds it; its OID is
 * recorded with the job in the build's first transaction.
 */
static JobStepResult
BuildStep(JobRun *run, const PartitionStep *step)
{
	IndexStmt  *stmt;
	Oid			index_oid;
	TreePartition leaf = {0};

	JobStepHoldAtChunk(run->job.chunks_done);
	JobStepBegin("background_ddl: building the index of a partition", STEP_NO_SNAPSHOT);
	/* As BuildIndex: wait for other builds on the leaf before taking a snapshot */
	LockRelationOid(step->table, ShareUpdateExclusiveLock);
	LockRelationOid(step->parent_index, AccessShareLock);
	if (StillWithoutIndex(step->table, step->parent_index))
	{
		leaf.table = step->table;
		leaf.parent_table = IndexGetRelation(step->parent_index, false);
		leaf.relkind = RELKIND_RELATION;
		leaf.parent_index = step->parent_index;
	}
	if (!OidIsValid(leaf.table) || OidIsValid(MatchingIndex(&leaf)))
	{
		/* gone, indexed, or a matching index was built meanwhile: look again */
		JobStepEnd();
		return JOB_STEP_MORE;
	}
	PushActiveSnapshot(GetTransactionSnapshot());
	stmt = ClonedStatement(step->table, step->parent_index);
	stmt->concurrent = true;
	/* The index of a leaf whose invalid index the job dropped keeps its name, if still free */
	if (StateOid(&run->job, STATE_REBUILT_TABLE) == step->table)
	{
		char	   *name = CatalogKindStateText(run->job.kind_state, STATE_REBUILT_NAME);

		if (name != NULL &&
			!OidIsValid(get_relname_relid(name, get_rel_namespace(step->table))))
			stmt->idxname = name;
	}
	index_oid = IndexBuildNewOid(step->table, stmt->tableSpace);
	JobRunSetStateInt(run, STATE_BUILDING_INDEX, index_oid);
	JobRunSetStateInt(run, STATE_BUILDING_TABLE, step->table);
	CatalogJobRecordKindState(&run->job);
	(void) IndexBuildDefine(&run->job, step->table, stmt, index_oid, InvalidOid);
	if (JobRunPublishesLater(&run->job) || CatalogKindStateInt(run->job.kind_state, STATE_HOLDS) != 0)
	{
		IndexBuildHoldBack(index_oid, step->table);
		JobRunSetStateInt(run, STATE_HOLDS, 1);
		JobRunSetStateInt(run, STATE_BUILT_HELD, index_oid);
		CatalogJobRecordKindState(&run->job);
	}
	JobStepEnd();
	return JOB_STEP_MORE;
}

/* Mark a partitioned index valid, as ALTER INDEX ... ATTACH PARTITION does */
static void
MarkValid(Oid index_oid)
{
	Relation	pg_index;
	HeapTuple	tuple;

	LockRelationOid(index_oid, ShareUpdateExclusiveLock);
	pg_index = table_open(IndexRelationId, RowExclusiveLock);
	tuple = SearchSysCacheCopy1(INDEXRELID, ObjectIdGetDatum(index_oid));

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for index %u", index_oid);
	((Form_pg_index) GETSTRUCT(tuple))->indisvalid = true;
	CatalogTupleUpdate(pg_index, &tuple->t_self, tuple);
	heap_freetuple(tuple);
	table_close(pg_index, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Is every partition of the table (but foreign tables, which CREATE INDEX
 * skips) indexed by a valid index attached to index_oid?
 */
static bool
Complete(List *partitions, Oid table, Oid index_oid)
{
	ListCell   *lc;

	foreach(lc, partitions)
	{
		TreePartition *partition = lfirst(lc);

		if (partition->parent_table == table && partition->relkind != RELKIND_FOREIGN_TABLE &&
			(partition->parent_index != index_oid || !OidIsValid(partition->index) ||
			 !partition->valid))
			return false;
	}
	return true;
}

/*
 * The tree is complete (mark false, in a group, until its transaction):
 * recorded, nothing marked
 */
static void
RecordTreeDone(JobRun *run)
{
	JobRunSetStateInt(run, STATE_TREE_DONE, 1);
	CatalogJobRecordKindState(&run->job);
}

/*
 * Every partition has its index: mark the indexes of the partitioned
 * tables valid, bottom up (children come after parents in the tree), and
 * the job's index last; nothing unless the whole tree is complete (an index
 * marked valid short of that, a cancel could leave valid over partitions it
 * does not cover).  Unless mark: only record that it is complete
 * (RecordTreeDone).  The partitioned tables and the indexes marked are
 * locked SHARE UPDATE EXCLUSIVE (within lock_timeout): no partition is
 * attached or detached meanwhile.  If one came (the tree is not complete),
 * the next step does its index.
 */
static void
FinishTree(JobRun *run, bool mark)
{
	Oid			table_oid;
	List	   *partitions;
	List	   *to_mark = NIL;
	ListCell   *lc;

	LockRelationOid(run->job.target_oid, ShareUpdateExclusiveLock);
	table_oid = IndexGetRelation(run->job.target_oid, true);
	if (!OidIsValid(table_oid))
		return;
	JobStepLockTree(table_oid, ShareUpdateExclusiveLock, background_ddl_lock_timeout_ms);
	partitions = JobTree(&run->job, table_oid, run->job.target_oid);
	for (int i = list_length(partitions) - 1; i >= 0; i--)
	{
		TreePartition *partition = list_nth(partitions, i);

		if (partition->relkind != RELKIND_PARTITIONED_TABLE || !OidIsValid(partition->index))
			continue;
		if (!partition->valid && Complete(partitions, partition->table, partition->index))
		{
			to_mark = lappend_oid(to_mark, partition->index);
			partition->valid = true;
		}
	}
	if (!Complete(partitions, table_oid, run->job.target_oid))
	{
		/*
		 * Short of an adopted invalid index only (nothing left to do): mark
		 * what is complete below it, and the job is done, as CREATE INDEX
		 */
		foreach(lc, partitions)
		{
			TreePartition *partition = lfirst(lc);

			if (!OidIsValid(partition->index) && OidIsValid(partition->parent_index) &&
				partition->relkind != RELKIND_FOREIGN_TABLE &&
				!BelowAdoptedIndex(&run->job, partitions, partition))
				return;
		}
		if (!mark)
		{
			RecordTreeDone(run);
			return;
		}
		foreach(lc, to_mark)
			MarkValid(lfirst_oid(lc));
		JobRunSetStateInt(run, STATE_LEFT_INVALID, 1);
		CatalogJobRecordKindState(&run->job);
		return;
	}
	if (!mark)
	{
		RecordTreeDone(run);
		return;
	}
	foreach(lc, to_mark)
		MarkValid(lfirst_oid(lc));
	{
		bool		valid;

		if (IndexBuildIsIndex(run->job.target_oid, &valid) && !valid)
			MarkValid(run->job.target_oid);
	}
}

/*
 * FinishTree, in a locking step: marking, unless the job's cut-over
 * publishes later, or its leaves' indexes are held back for it
 */
static void
FinishStep(JobRun *run, void *arg)
{
	FinishTree(run, !JobRunPublishesLater(&run->job) &&
			   CatalogKindStateInt(run->job.kind_state, STATE_HOLDS) == 0);
}

/* Is the job's tree complete, its indexes held back for its cut-over (RecordTreeDone)? */
bool
IndexPartitionsHeld(const BgddlJob *job)
{
	return CatalogKindStateInt(job->kind_state, STATE_TREE_DONE) != 0;
}

/*
 * Is the job's index done: valid, or left invalid by an index it adopted,
 * as CREATE INDEX leaves it?  In a group: every partition has its index
 * (RecordTreeDone).
 */
bool
IndexPartitionsDone(const BgddlJob *job, bool valid)
{
	return valid || CatalogKindStateInt(job->kind_state, STATE_LEFT_INVALID) != 0 ||
		CatalogKindStateInt(job->kind_state, STATE_TREE_DONE) != 0;
}

/*
 * A group's publication: the locks FinishTree takes, the job's index and
 * the tree SHARE UPDATE EXCLUSIVE
 */
void
IndexPartitionsCutOverLock(JobRun *run)
{
	Oid			table_oid;

	JobStepLockRelation(run->job.target_oid, ShareUpdateExclusiveLock,
						background_ddl_lock_timeout_ms);
	table_oid = IndexGetRelation(run->job.target_oid, true);
	if (OidIsValid(table_oid))
		JobStepLockTree(table_oid, ShareUpdateExclusiveLock, background_ddl_lock_timeout_ms);
}

/*
 * ... and in the group's transaction: the leaves' indexes that the job
 * built and held back marked valid, then the tree's, as FinishTree marks
 * them.  JOB_STEP_RESTART if the tree is not complete any more
 * (IndexPartitionsRestart records it).
 */
JobStepResult
IndexPartitionsPublish(JobRun *run)
{
	Oid			table_oid = InvalidOid;
	bool		valid;
	ListCell   *lc;

	if (get_rel_relkind(run->job.target_oid) == RELKIND_PARTITIONED_INDEX)
		table_oid = IndexGetRelation(run->job.target_oid, true);
	if (!OidIsValid(table_oid))
		return JOB_STEP_TARGET_GONE;
	foreach(lc, JobTree(&run->job, table_oid, run->job.target_oid))
	{
		TreePartition *partition = lfirst(lc);
		bool		leaf_valid;

		if (partition->relkind == RELKIND_RELATION && OidIsValid(partition->index) &&
			Created(&run->job, partition->table) &&
			IndexBuildIsIndex(partition->index, &leaf_valid) && !leaf_valid)
			IndexBuildSetValid(partition->index, partition->table);
	}
	FinishTree(run, true);
	(void) IndexBuildIsIndex(run->job.target_oid, &valid);
	if (!valid && CatalogKindStateInt(run->job.kind_state, STATE_LEFT_INVALID) == 0)
		return JOB_STEP_RESTART;
	JobRunSucceeded(run, run->job.target_oid, false, -1);
	return JOB_STEP_DONE;
}

/* The tree was not complete at the group's publication: its steps go on, in a step */
void
IndexPartitionsRestart(JobRun *run)
{
	JobRunSetStateInt(run, STATE_TREE_DONE, 0);
	CatalogJobRecordKindState(&run->job);
}

/* What the check of the partitions (CheckStep) is given, and finds */
typedef struct PartitionsCheck
{
	Oid			table;			/* the table whose partitions are checked */
	bool		target_gone;	/* the job's index was dropped */
	PartitionStep next;			/* else: the step to take next */
} PartitionsCheck;

/*
 * Decide the next step (a locking step: every partition is locked ACCESS
 * SHARE, within lock_timeout, so that a TRUNCATE left open on one cannot
 * make other sessions' locks queue behind ours).  The table is locked
 * before its index and its partitions, in PostgreSQL's order (DETACH
 * PARTITION and DROP INDEX lock it first); then the job's index: a DROP
 * INDEX of it waits, or has happened and ends the job.
 */
static void
CheckStep(JobRun *run, void *arg)
{
	PartitionsCheck *check = arg;

	LockRelationOid(check->table, AccessShareLock);
	LockRelationOid(run->job.target_oid, AccessShareLock);
	check->target_gone = get_rel_relkind(run->job.target_oid) != RELKIND_PARTITIONED_INDEX;
	if (check->target_gone)
		return;
	check->next = DecideStep(run, check->table);
	CatalogJobRecordKindState(&run->job);
}

/*
 * One step of the job after its index was created ON ONLY the table.
 * Returns JOB_STEP_DONE once the index is valid.
 */
JobStepResult
IndexPartitionsStep(JobRun *run, Oid table_oid)
{
	PartitionsCheck check = {.table = table_oid};
	bool		valid;

	JobRunLockingStep(run, CheckStep, &check, JOB_PHASE_BACKFILLING,
					  "background_ddl: checking the partitions");
	if (check.target_gone)
		return JOB_STEP_TARGET_GONE;
	switch (check.next.kind)
	{
		case PARTITION_STEP_DROP:
			JobRunLockingStep(run, DropStep, &check.next, JOB_PHASE_BACKFILLING,
							  "background_ddl: dropping an invalid index");
			return JOB_STEP_MORE;
		case PARTITION_STEP_ATTACH:
			JobRunLockingStep(run, AttachStep, &check.next, JOB_PHASE_BACKFILLING,
							  "background_ddl: attaching the index of a partition");
			return JOB_STEP_MORE;
		case PARTITION_STEP_PREPARE:
			JobRunLockingStep(run, PrepareStep, &check.next, JOB_PHASE_BACKFILLING,
							  "background_ddl: indexing a sub-partitioned table");
			return JOB_STEP_MORE;
		case PARTITION_STEP_BUILD:
			return BuildStep(run, &check.next);
		case PARTITION_STEP_NONE:
			break;
	}
	JobRunLockingStep(run, FinishStep, NULL, JOB_PHASE_BACKFILLING,
					  "background_ddl: validating the index");
	JobStepBegin("background_ddl: checking the index", STEP_READ_COMMITTED);
	(void) IndexBuildIsIndex(run->job.target_oid, &valid);
	JobStepEnd();
	return IndexPartitionsDone(&run->job, valid) ? JOB_STEP_DONE : JOB_STEP_MORE;
}

/*
 * The job failed or is cancelled.  Every index attached in the job's tree
 * that the job did not create (adopted, or attached by PostgreSQL with a
 * partition attached meanwhile) is detached, and stays as it was; one the
 * job created under such an index is detached and dropped; children before
 * parents, so that no drop takes an index to keep with it.  Then the index
 * an unfinished build left, and (unless keep_target) the job's index, with
 * every index still attached to it.  The tables are locked ACCESS EXCLUSIVE
 * within lock_timeout first (dropping an index locks its table).
 */
void
IndexPartitionsDiscard(const BgddlJob *job, bool keep_target)
{
	Oid			building = StateOid(job, STATE_BUILDING_INDEX);
	Oid			table_oid = InvalidOid;

	if (get_rel_relkind(job->target_oid) == RELKIND_PARTITIONED_INDEX)
		table_oid = IndexGetRelation(job->target_oid, true);
	if (OidIsValid(table_oid) && !keep_target)
	{
		List	   *partitions;
		ListCell   *lc;

		JobStepLockRelation(table_oid, AccessExclusiveLock, background_ddl_lock_timeout_ms);
		foreach(lc, find_all_inheritors(table_oid, NoLock, NULL))
			JobStepLockRelation(lfirst_oid(lc), AccessExclusiveLock,
								background_ddl_lock_timeout_ms);
		partitions = JobTree(job, table_oid, job->target_oid);
		for (int i = list_length(partitions) - 1; i >= 0; i--)
		{
			TreePartition *partition = list_nth(partitions, i);
			bool		created = Created(job, partition->table);

			if (!OidIsValid(partition->index))
				continue;
			if (partition->parent_table == table_oid || Created(job, partition->parent_table))
			{
				if (!created)
					Detach(partition->index);
			}
			else if (created)
			{
				Detach(partition->index);
				IndexBuildDrop(partition->index);
			}
		}
	}
	if (OidIsValid(building) && SearchSysCacheExists1(RELOID, ObjectIdGetDatum(building)) &&
		!get_rel_relispartition(building))
		IndexBuildDrop(building);
	if (!keep_target)
		IndexBuildDrop(job->target_oid);
}
