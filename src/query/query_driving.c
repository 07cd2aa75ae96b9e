/*-------------------------------------------------------------------------
 *
 * query_driving.c
 *	  The driving table's rows in one block space, partitioned or not.
 *
 * A chunked job names the driving table's rows by tuple id everywhere: its
 * chunks are block ranges, its tid maps pair source and output tuple ids,
 * its dirty marks and partial aggregation's units are tuple ids and block
 * ranges.  For a plain table the tuple id is the row's ctid.
 *
 * A partitioned table has no blocks of its own.  Its leaf partitions that
 * the query reads (those the planner keeps after partition pruning, at the
 * start of the capture) are laid end to end in one block space of the job,
 * each a segment (CaptureSegment): block b of segment i is job block
 * base_i + b, base_i being the sizes of the segments before it when the
 * capture began, so the chunks cover [0, sum of the sizes) as they cover a
 * plain table.  Blocks that a partition gains later go to an area of its
 * own beyond all of those (beyond_i), so no job block ever names two rows;
 * a partition that outgrows its area makes the job recompute everything at
 * the cut-over (capture_trigger.c logs an uncaptured mark).  A plain table
 * is the one segment whose job blocks are its own blocks.
 *
 * Every query of a job on a range of job blocks or on a set of job tuple
 * ids runs once per segment that it touches, on that partition alone
 * (QueryDrivingLeafQuery): the partitioned table's columns mapped to the
 * partition's by name, its privileges checked and its row security applied
 * as they are for the query on the partitioned table.  The capture trigger
 * of each partition maps the tuple ids it logs the same way.
 *
 * The tree is fixed for a job: a partition attached, detached, created or
 * dropped restarts its build with a new capture (query_job.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "tcop/tcopprot.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "query/query_driving.h"

/* Beyond areas start on, and have sizes that are, multiples of this */
#define BEYOND_ALIGN	64

/*
 * The leaves of a partition tree (partitions that are not partitioned
 * themselves), sorted, each locked in lockmode
 */
List *
QueryDrivingTreeLeaves(Oid relid, LOCKMODE lockmode)
{
	List	   *leaves = NIL;
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, lockmode, NULL))
	{
		char		relkind = get_rel_relkind(lfirst_oid(lc));

		if (relkind != RELKIND_PARTITIONED_TABLE && relkind != '\0')
			leaves = lappend_oid(leaves, lfirst_oid(lc));
	}
	list_sort(leaves, list_oid_cmp);
	return leaves;
}

/*
 * The leaves of the partitioned table relid that the query reads: those the
 * planner keeps after pruning them at plan time, in the plan's order (the
 * partition bounds').  Caller is in a transaction, as the job's role; the
 * query reads relid once.
 */
List *
QueryDrivingReadLeaves(Query *query, Oid relid)
{
	PlannedStmt *plan = pg_plan_query(copyObject(query), "background_ddl partitions", 0, NULL);
	List	   *tree = find_all_inheritors(relid, NoLock, NULL);
	List	   *read = NIL;
	ListCell   *lc;

	foreach(lc, plan->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE &&
			list_member_oid(tree, rte->relid))
			read = list_append_unique_oid(read, rte->relid);
	}
	return read;
}

/*
 * Lay the segments out: bases from their sizes, and the beyond areas, of
 * equal room, past all of them
 */
static void
LayOut(QueryDriving *driving)
{
	uint64		blocks = 0;
	uint64		beyond_start;
	uint64		room;

	for (int i = 0; i < driving->nsegments; i++)
	{
		driving->segments[i].base = (BlockNumber) blocks;
		blocks += driving->segments[i].blocks;
	}
	driving->blocks = (int64) blocks;
	if (!driving->partitioned)
	{
		/* The identity: blocks beyond follow on */
		driving->segments[0].beyond = driving->segments[0].blocks;
		driving->segments[0].beyond_blocks = InvalidBlockNumber - driving->segments[0].blocks;
		return;
	}
	beyond_start = TYPEALIGN(BEYOND_ALIGN, blocks);
	room = beyond_start >= (uint64) InvalidBlockNumber ? 0 :
		((uint64) InvalidBlockNumber - beyond_start) / Max(driving->nsegments, 1);
	room -= room % BEYOND_ALIGN;
	for (int i = 0; i < driving->nsegments; i++)
	{
		driving->segments[i].beyond = (BlockNumber) Min(beyond_start + i * room,
														(uint64) InvalidBlockNumber - 1);
		driving->segments[i].beyond_blocks = (BlockNumber) room;
	}
}

/*
 * The driving table relid as the capture begins: a plain table (read_leaves
 * NIL), or a partitioned one whose partitions read_leaves the query reads,
 * of the tree whose leaves are leaves.  Caller holds locks on them that keep
 * writers out.
 */
QueryDriving *
QueryDrivingMeasure(Oid relid, List *read_leaves, List *leaves)
{
	QueryDriving *driving = palloc0(sizeof(QueryDriving));
	List	   *relids = read_leaves != NIL ? read_leaves : list_make1_oid(relid);
	ListCell   *lc;

	driving->relid = relid;
	driving->partitioned = read_leaves != NIL;
	driving->leaves = list_copy(leaves);
	driving->segments = palloc0(sizeof(CaptureSegment) * list_length(relids));
	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);
		CaptureSegment *segment = &driving->segments[driving->nsegments++];

		segment->relid = RelationGetRelid(rel);
		segment->blocks = RelationGetNumberOfBlocks(rel);
		relation_close(rel, NoLock);
	}
	LayOut(driving);
	return driving;
}

/*
 * The driving table as the job keeps it (kind_state): "relid:blocks ..." for
 * the segments, then "/" and the tree's leaves
 */
char *
QueryDrivingFormat(const QueryDriving *driving)
{
	StringInfoData text;
	ListCell   *lc;

	initStringInfo(&text);
	for (int i = 0; i < driving->nsegments; i++)
		appendStringInfo(&text, "%s%u:%u", i > 0 ? " " : "", driving->segments[i].relid,
						 driving->segments[i].blocks);
	appendStringInfoString(&text, " /");
	foreach(lc, driving->leaves)
		appendStringInfo(&text, " %u", lfirst_oid(lc));
	return text.data;
}

/*
 * The driving table relid from QueryDrivingFormat's text; without one (a job
 * of an earlier version), the plain table of the given size
 */
QueryDriving *
QueryDrivingParse(Oid relid, const char *text, int64 blocks)
{
	QueryDriving *driving = palloc0(sizeof(QueryDriving));
	int			capacity = 8;
	const char *p = text;
	bool		in_leaves = false;

	driving->relid = relid;
	driving->segments = palloc0(sizeof(CaptureSegment) * capacity);
	while (p != NULL && *p != '\0')
	{
		unsigned int oid;
		unsigned int size;
		int			length;

		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		if (*p == '/')
		{
			in_leaves = true;
			p++;
			continue;
		}
		if (in_leaves && sscanf(p, "%u%n", &oid, &length) == 1)
			driving->leaves = lappend_oid(driving->leaves, oid);
		else if (!in_leaves && sscanf(p, "%u:%u%n", &oid, &size, &length) == 2)
		{
			if (driving->nsegments == capacity)
				driving->segments = repalloc(driving->segments,
											 sizeof(CaptureSegment) * (capacity *= 2));
			driving->segments[driving->nsegments].relid = oid;
			driving->segments[driving->nsegments].blocks = size;
			driving->nsegments++;
		}
		else
			elog(ERROR, "invalid driving table state \"%s\"", text);
		p += length;
	}
	if (driving->nsegments == 0)
	{
		driving->segments[0].relid = relid;
		driving->segments[0].blocks = (BlockNumber) Max(blocks, 0);
		driving->nsegments = 1;
	}
	driving->partitioned = driving->segments[0].relid != relid;
	LayOut(driving);
	return driving;
}

/* Has a partition been attached, detached, created or dropped since? */
bool
QueryDrivingTreeChanged(const QueryDriving *driving)
{
	return driving->partitioned &&
		!equal(QueryDrivingTreeLeaves(driving->relid, AccessShareLock), driving->leaves);
}

/* Is relid a segment of the driving table? */
bool
QueryDrivingHasSegment(const QueryDriving *driving, Oid relid)
{
	for (int i = 0; i < driving->nsegments; i++)
	{
		if (driving->segments[i].relid == relid)
			return true;
	}
	return false;
}

/* Add the part of job blocks [start, end) in [area_start, area_start + area_blocks) */
static void
AddPiece(DrivingPiece *pieces, int *npieces, int segment, int64 start, int64 end,
		 int64 area_start, int64 area_blocks, BlockNumber first_block)
{
	int64		from = Max(start, area_start);
	int64		to = Min(end, area_start + area_blocks);
	DrivingPiece *last = *npieces > 0 ? &pieces[*npieces - 1] : NULL;

	if (from >= to)
		return;
	from = first_block + (from - area_start);
	to = first_block + (to - area_start);
	if (last != NULL && last->segment == segment && last->end == from)
	{
		last->end = (BlockNumber) to;
		return;
	}
	pieces[*npieces].segment = segment;
	pieces[*npieces].start = (BlockNumber) from;
	pieces[*npieces].end = (BlockNumber) to;
	(*npieces)++;
}

/*
 * The parts of job blocks [start, end) in each segment, in job block order
 * (a segment's own blocks, then its blocks beyond)
 */
DrivingPiece *
QueryDrivingPieces(const QueryDriving *driving, int64 start, int64 end, int *npieces)
{
	DrivingPiece *pieces = palloc(sizeof(DrivingPiece) * 2 * driving->nsegments);

	*npieces = 0;
	for (int i = 0; i < driving->nsegments; i++)
	{
		const CaptureSegment *segment = &driving->segments[i];

		AddPiece(pieces, npieces, i, start, end, segment->base, segment->blocks, 0);
	}
	for (int i = 0; i < driving->nsegments; i++)
	{
		const CaptureSegment *segment = &driving->segments[i];

		AddPiece(pieces, npieces, i, start, end, segment->beyond, segment->beyond_blocks,
				 segment->blocks);
	}
	return pieces;
}

/*
 * The segment that holds a job block, and in *block that block in its table;
 * -1 if none does
 */
int
QueryDrivingSegmentOf(const QueryDriving *driving, BlockNumber job_block, BlockNumber *block)
{
	const CaptureSegment *first = &driving->segments[0];
	int			low = 0;
	int			high = driving->nsegments;

	if (job_block >= first->beyond && first->beyond_blocks > 0)
	{
		int			i = (int) ((job_block - first->beyond) / first->beyond_blocks);

		if (i >= driving->nsegments)
			return -1;
		*block = driving->segments[i].blocks + (job_block - driving->segments[i].beyond);
		return i;
	}
	/* The last segment that starts at or before the block */
	while (low < high)
	{
		int			middle = low + (high - low) / 2;

		if (driving->segments[middle].base <= job_block)
			low = middle + 1;
		else
			high = middle;
	}
	for (int i = low - 1; i >= 0 && driving->segments[i].base <= job_block; i--)
	{
		if (job_block < driving->segments[i].base + driving->segments[i].blocks)
		{
			*block = job_block - driving->segments[i].base;
			return i;
		}
		if (driving->segments[i].blocks > 0)
			break;
	}
	return -1;
}

/* Turn a tuple id of a segment's table into the job's; false if it has none */
bool
QueryDrivingJobTid(const QueryDriving *driving, int segment, ItemPointer tid)
{
	BlockNumber job_block;

	if (!CaptureSegmentJobBlock(&driving->segments[segment], ItemPointerGetBlockNumber(tid),
								&job_block))
		return false;
	ItemPointerSetBlockNumber(tid, job_block);
	return true;
}

/*
 * The job blocks that hold rows beyond the segments' sizes at the capture,
 * now: one range per segment that grew.  Caller holds a lock on each.
 */
ChunkRange *
QueryDrivingBeyond(const QueryDriving *driving, int *nranges)
{
	ChunkRange *ranges = palloc(sizeof(ChunkRange) * driving->nsegments);

	*nranges = 0;
	for (int i = 0; i < driving->nsegments; i++)
	{
		const CaptureSegment *segment = &driving->segments[i];
		Relation	rel = try_relation_open(segment->relid, AccessShareLock);
		BlockNumber size;

		if (rel == NULL)
			continue;
		size = RelationGetNumberOfBlocks(rel);
		relation_close(rel, NoLock);
		if (size <= segment->blocks)
			continue;
		ranges[*nranges].start_block = segment->beyond;
		ranges[*nranges].end_block = (int64) segment->beyond +
			Min(size - segment->blocks, segment->beyond_blocks);
		(*nranges)++;
	}
	return ranges;
}

/* Rows per block of the segments, as their statistics say, or fallback */
double
QueryDrivingRowsPerBlock(const QueryDriving *driving, double fallback)
{
	double		tuples = 0;
	double		pages = 0;

	for (int i = 0; i < driving->nsegments; i++)
	{
		Relation	rel = try_relation_open(driving->segments[i].relid, AccessShareLock);

		if (rel == NULL)
			continue;
		if (rel->rd_rel->relpages > 0 && rel->rd_rel->reltuples > 0)
		{
			tuples += rel->rd_rel->reltuples;
			pages += rel->rd_rel->relpages;
		}
		relation_close(rel, NoLock);
	}
	return pages > 0 ? tuples / pages : fallback;
}

/*
 * The query with the driving table's entry (rtindex) reading the partition
 * leaf alone: its columns mapped by name, and the partitioned table's entry
 * kept, unreferenced, for the executor to check its privileges, as it does
 * for a query on the partitioned table (which checks none on the
 * partitions).  Its row security quals, which the rewriter added for the
 * partitioned table, stay on the entry.  The query is the caller's to give.
 */
Query *
QueryDrivingLeafQuery(Query *query, Index rtindex, Oid leaf)
{
	RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
	RangeTblEntry *privileges;
	Relation	parent;
	Relation	partition;
	AttrMap    *map;
	bool		whole_row;

	if (rte->relid == leaf)
		return query;
	parent = relation_open(rte->relid, NoLock);
	partition = relation_open(leaf, AccessShareLock);
	map = build_attrmap_by_name(RelationGetDescr(partition), RelationGetDescr(parent));
	privileges = copyObject(rte);
	query = (Query *) map_variable_attnos((Node *) query, rtindex, 0, map, InvalidOid, &whole_row);
	if (whole_row)
		elog(ERROR, "a whole-row reference to \"%s\" cannot be read partition by partition",
			 RelationGetRelationName(parent));
	rte = rt_fetch(rtindex, query->rtable);
	rte->relid = leaf;
	rte->relkind = RELKIND_RELATION;
	rte->inh = false;
	rte->requiredPerms = 0;
	rte->checkAsUser = InvalidOid;
	rte->selectedCols = NULL;
	rte->insertedCols = NULL;
	rte->updatedCols = NULL;
	rte->extraUpdatedCols = NULL;
	privileges->inh = false;
	privileges->securityQuals = NIL;
	query->rtable = lappend(query->rtable, privileges);
	relation_close(partition, NoLock);
	relation_close(parent, NoLock);
	return query;
}

typedef struct WholeRowContext
{
	Index		rtindex;
	int			sublevels_up;
	bool		found;
} WholeRowContext;

static bool
WholeRowWalker(Node *node, WholeRowContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varno == context->rtindex && var->varlevelsup == context->sublevels_up &&
			var->varattno == InvalidAttrNumber)
			context->found = true;
		return false;
	}
	if (IsA(node, Query))
	{
		bool		result;

		context->sublevels_up++;
		result = query_tree_walker((Query *) node, WholeRowWalker, context, 0);
		context->sublevels_up--;
		return result;
	}
	return expression_tree_walker(node, WholeRowWalker, context);
}

/* Does the query read the row of rtindex as a whole (which a partition's differs from)? */
bool
QueryDrivingWholeRowUsed(Query *query, Index rtindex)
{
	WholeRowContext context = {rtindex, 0, false};

	(void) query_tree_walker(query, WholeRowWalker, &context, 0);
	return context.found;
}
