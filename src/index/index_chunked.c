/*-------------------------------------------------------------------------
 *
 * index_chunked.c
 *	  An index build of our own, for a btree on a heap table, in the steps
 *	  of CREATE INDEX CONCURRENTLY but with its first scan in chunks:
 *
 *	  1. The index is created as CREATE INDEX CONCURRENTLY's first phase
 *		 creates it (not ready for inserts, not valid), from the definition
 *		 PostgreSQL's own DefineIndex wrote in a dry run
 *		 (IndexDefinitionCopy, IndexDefinitionCreate).
 *	  2. Once every transaction that could write the table without knowing
 *		 the index has ended (so no new HOT chain breaks its key), the
 *		 table is scanned a chunk of blocks at a time, each chunk in a
 *		 transaction of its own under a snapshot of its own: the entries of
 *		 the rows that snapshot sees, with their HOT chains' root tids, are
 *		 formed as the index will hold them, sorted as the btree build
 *		 sorts them, and persisted with the chunk's checkpoint in
 *		 compressed segments (IndexChunkedScan).  Nothing is written to the
 *		 index: a crash loses the chunk in flight, never the chunks before
 *		 it.
 *	  3. One transaction merges the chunks' sorted entries, each chunk
 *		 read a segment at a time, and writes the btree from the merge
 *		 bottom up (index_btree_load.c, in the access method's build's
 *		 place), then marks the index ready for inserts
 *		 (IndexChunkedWrite).
 *	  4. Once every writer inserts into it, PostgreSQL's validate_index
 *		 adds what no chunk's snapshot saw, as CREATE INDEX CONCURRENTLY's
 *		 second phase adds it, under a reference snapshot
 *		 (IndexChunkedValidate); the index is valid once the transactions
 *		 older than that snapshot have ended.
 *
 *	  Why it is exact: every entry is a root tid with the key of the chain
 *	  member a snapshot saw, taken after the wait of step 2, as CREATE INDEX
 *	  CONCURRENTLY's build takes its one snapshot; each root is in one
 *	  chunk and so entered once; validate_index adds the rows it sees
 *	  whose root is not in the index, whichever snapshot missed them.  The
 *	  chunks' tids stay those of the same rows only while VACUUM cannot
 *	  reclaim them: the job holds the table's SHARE UPDATE EXCLUSIVE lock
 *	  across its steps, and its caller starts the chunks over after a time
 *	  without it in which VACUUM may have run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/detoast.h"
#include "access/heapam.h"
#include "access/itup.h"
#include "access/tableam.h"
#include "access/toast_compression.h"
#include "access/toast_internals.h"
#include "access/nbtree.h"
#include "access/visibilitymap.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/sortsupport.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplesort.h"

#include "capture/block_space.h"
#include "catalog/settings.h"
#include "index/index_btree_load.h"
#include "index/index_chunked.h"

/*
 * A chunk's entries are persisted in segments of at most this size, each
 * compressed on its own, so that the write's merge reads a chunk a segment
 * at a time
 */
#define ENTRY_SEGMENT_SIZE	(32 * 1024)

#ifdef USE_LZ4
#define ENTRY_SEGMENT_COMPRESSION TOAST_LZ4_COMPRESSION
#else
#define ENTRY_SEGMENT_COMPRESSION TOAST_PGLZ_COMPRESSION
#endif

/* What the merge of the chunks' entries needs per chunk: a segment as read and decompressed */
#define MERGE_RUN_SPACE		(2 * ENTRY_SEGMENT_SIZE + BLCKSZ)

/*
 * Is the index built this way?  With background_ddl.chunked_index_build on,
 * a btree (the access method whose build sorts what it is given), not
 * unique (the chunks' snapshots differ: two rows with one key, each seen by
 * another chunk's snapshot, are no violation if one was deleted in between;
 * CREATE INDEX CONCURRENTLY checks that), on a permanent heap table.
 */
bool
IndexChunkedBuilds(Oid table_oid, IndexStmt *stmt)
{
	HeapTuple	tuple;
	Form_pg_class table;
	bool		heap;

	if (!background_ddl_chunked_index_build ||
		stmt->unique || stmt->primary || stmt->isconstraint || stmt->excludeOpNames != NIL ||
		get_index_am_oid(stmt->accessMethod, true) != BTREE_AM_OID)
		return false;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(table_oid));
	if (!HeapTupleIsValid(tuple))
		return false;
	table = (Form_pg_class) GETSTRUCT(tuple);
	heap = table->relkind == RELKIND_RELATION && table->relam == HEAP_TABLE_AM_OID &&
		table->relpersistence == RELPERSISTENCE_PERMANENT;
	ReleaseSysCache(tuple);
	return heap;
}

/*
 * The definition of an index whose catalog rows the current command has
 * just written (and made visible), copied into context: what index_create
 * needs to create it again, as it was, under another transaction.
 */
IndexDefinition *
IndexDefinitionCopy(Oid index_oid, MemoryContext context)
{
	MemoryContext old_context = MemoryContextSwitchTo(context);
	IndexDefinition *definition = palloc0(sizeof(IndexDefinition));
	Relation	index = RelationIdGetRelation(index_oid);
	TupleDesc	desc = RelationGetDescr(index);

	definition->index_tuple = SearchSysCacheCopy1(INDEXRELID, ObjectIdGetDatum(index_oid));
	definition->class_tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(index_oid));
	if (!HeapTupleIsValid(definition->index_tuple) || !HeapTupleIsValid(definition->class_tuple))
		elog(ERROR, "cache lookup failed for index %u", index_oid);
	for (int i = 0; i < desc->natts; i++)
		definition->column_names = lappend(definition->column_names,
										   pstrdup(NameStr(TupleDescAttr(desc, i)->attname)));
	RelationClose(index);
	MemoryContextSwitchTo(old_context);
	return definition;
}

/* A node tree of an index's pg_index row, as index_create wrote it, or NULL */
static Node *
IndexColumnNode(HeapTuple index_tuple, AttrNumber attnum)
{
	bool		isnull;
	Datum		value = SysCacheGetAttr(INDEXRELID, index_tuple, attnum, &isnull);

	return isnull ? NULL : stringToNode(TextDatumGetCString(value));
}

/*
 * Create the index of the definition on heap (locked SHARE UPDATE
 * EXCLUSIVE), with that name and OID, as CREATE INDEX CONCURRENTLY's first
 * phase creates it: not ready for inserts, not valid, empty.
 */
void
IndexDefinitionCreate(Relation heap, const IndexDefinition *definition, const char *name,
					  Oid index_oid)
{
	Form_pg_index form = (Form_pg_index) GETSTRUCT(definition->index_tuple);
	Form_pg_class class_form = (Form_pg_class) GETSTRUCT(definition->class_tuple);
	Node	   *predicate = IndexColumnNode(definition->index_tuple, Anum_pg_index_indpred);
	IndexInfo  *info;
	bool		isnull;
	oidvector  *collations;
	oidvector  *classes;
	int2vector *options;
	Datum		reloptions;

	info = makeIndexInfo(form->indnatts, form->indnkeyatts, class_form->relam,
						 (List *) IndexColumnNode(definition->index_tuple, Anum_pg_index_indexprs),
						 predicate ? make_ands_implicit((Expr *) predicate) : NIL,
						 form->indisunique, form->indnullsnotdistinct, false, true);
	for (int i = 0; i < form->indnatts; i++)
		info->ii_IndexAttrNumbers[i] = form->indkey.values[i];
	collations = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, definition->index_tuple,
															   Anum_pg_index_indcollation, &isnull));
	classes = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, definition->index_tuple,
															Anum_pg_index_indclass, &isnull));
	options = (int2vector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, definition->index_tuple,
															 Anum_pg_index_indoption, &isnull));
	reloptions = SysCacheGetAttr(RELOID, definition->class_tuple, Anum_pg_class_reloptions,
								 &isnull);
	if (isnull)
		reloptions = (Datum) 0;
	(void) index_create(heap, name, index_oid, InvalidOid, InvalidOid, InvalidOid, info,
						definition->column_names, class_form->relam, class_form->reltablespace,
						collations->values, classes->values, options->values, reloptions,
						INDEX_CREATE_SKIP_BUILD | INDEX_CREATE_CONCURRENT, 0, false, false, NULL);
}

/*
 * What the table's owner runs the index's expressions and predicate as,
 * as index_build does: the owner, in a restricted security context, with
 * the settings it changes undone after.
 */
typedef struct OwnerContext
{
	Oid			saved_userid;
	int			saved_sec_context;
	int			nest_level;
} OwnerContext;

static void
OwnerContextBegin(Relation heap, OwnerContext *context)
{
	GetUserIdAndSecContext(&context->saved_userid, &context->saved_sec_context);
	SetUserIdAndSecContext(heap->rd_rel->relowner,
						   context->saved_sec_context | SECURITY_RESTRICTED_OPERATION);
	context->nest_level = NewGUCNestLevel();
}

static void
OwnerContextEnd(OwnerContext *context)
{
	AtEOXact_GUC(false, context->nest_level);
	SetUserIdAndSecContext(context->saved_userid, context->saved_sec_context);
}

/* The entries of a chunk, as the scan forms them: sorted as the index holds them */
typedef struct ChunkEntries
{
	Tuplesortstate *sort;
	int64		rows;
} ChunkEntries;

static void
KeepEntry(Relation index, ItemPointer tid, Datum *values, bool *isnull, bool alive, void *state)
{
	ChunkEntries *entries = state;

	tuplesort_putindextuplevalues(entries->sort, index, tid, values, isnull);
	entries->rows++;
}

/*
 * Close the segment of entries being gathered: appended to stored,
 * compressed if that makes it smaller, and padded to an int's alignment
 * (each segment is a varlena)
 */
static void
AppendSegment(StringInfo stored, StringInfo segment)
{
	Datum		compressed;

	SET_VARSIZE(segment->data, segment->len);
	compressed = toast_compress_datum(PointerGetDatum(segment->data), ENTRY_SEGMENT_COMPRESSION);
	if (DatumGetPointer(compressed) != NULL)
	{
		appendBinaryStringInfo(stored, DatumGetPointer(compressed),
							   VARSIZE(DatumGetPointer(compressed)));
		pfree(DatumGetPointer(compressed));
	}
	else
		appendBinaryStringInfo(stored, segment->data, segment->len);
	appendStringInfoSpaces(stored, INTALIGN(stored->len) - stored->len);
	resetStringInfo(segment);
	appendStringInfoSpaces(segment, VARHDRSZ);
}

/*
 * The entries of the rows in blocks [start, end) of heap that the
 * transaction's snapshot sees (one per HOT chain, with its root's tid), as
 * index tuples one after the other, in the index's order (its keys, then
 * the heap tid: the btree build's sort, so that the write only merges the
 * chunks), in segments of at most ENTRY_SEGMENT_SIZE, each a varlena,
 * compressed or not, one after the other in the bytea returned; *rows, how
 * many.  The expressions and predicate are evaluated as the table's owner.
 */
bytea *
IndexChunkedScan(Relation heap, Relation index, BlockNumber start, BlockNumber end, int64 *rows)
{
	IndexInfo  *info = BuildIndexInfo(index);
	ChunkEntries entries = {0};
	OwnerContext owner;
	StringInfoData stored;
	StringInfoData segment;
	IndexTuple	tuple;
	bytea	   *result;

	/* A concurrent build scans under the transaction's snapshot */
	info->ii_Concurrent = true;
	entries.sort = tuplesort_begin_index_btree(heap, index, false, false, maintenance_work_mem,
											   NULL, TUPLESORT_NONE);
	OwnerContextBegin(heap, &owner);
	PushActiveSnapshot(GetTransactionSnapshot());
	(void) table_index_build_range_scan(heap, index, info, false, false, false, start,
										end - start, KeepEntry, &entries, NULL);
	PopActiveSnapshot();
	OwnerContextEnd(&owner);
	tuplesort_performsort(entries.sort);
	initStringInfo(&stored);
	appendStringInfoSpaces(&stored, VARHDRSZ);
	initStringInfo(&segment);
	appendStringInfoSpaces(&segment, VARHDRSZ);
	while ((tuple = tuplesort_getindextuple(entries.sort, true)) != NULL)
	{
		if (segment.len > VARHDRSZ &&
			segment.len + IndexTupleSize(tuple) > ENTRY_SEGMENT_SIZE)
			AppendSegment(&stored, &segment);
		appendBinaryStringInfo(&segment, (char *) tuple, IndexTupleSize(tuple));
	}
	if (segment.len > VARHDRSZ)
		AppendSegment(&stored, &segment);
	pfree(segment.data);
	tuplesort_end(entries.sort);
	result = (bytea *) stored.data;
	SET_VARSIZE(result, stored.len);
	*rows = entries.rows;
	return result;
}

/* The persisted entries that the index build reads instead of the table */
static struct
{
	List	   *chunks;
	int64		job_id;
	IndexEntriesReader read;
	IndexWritePace pace;
	void	   *pace_arg;
	double		tuples;			/* read so far */
}			entries_source;

/* A chunk's entries, in the index's order, as the merge reads them */
typedef struct EntryRun
{
	struct varlena *stored;		/* the chunk's entries as stored (not fetched) */
	int32		stored_size;
	int32		offset;			/* where its next segment begins */
	int32		next_size;		/* that segment's size, or 0 if none */
	struct varlena *fetched;	/* the segment read last (and the next one's header) */
	struct varlena *segment;	/* that segment, decompressed */
	char	   *next;			/* the next entry in it */
	IndexTuple	tuple;			/* the next one (in buffer), or NULL after the last */
	char	   *buffer;
	Size		space;			/* allocated at buffer */
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
} EntryRun;

typedef struct EntryMerge
{
	TupleDesc	desc;
	int			nkeys;
	SortSupport keys;			/* the btree build's comparisons */
	EntryRun   *runs;
} EntryMerge;

/*
 * Read length bytes at offset of a chunk's entries as stored, fetching
 * only the part of the TOAST value they are in, under a snapshot of the
 * read's own
 */
static struct varlena *
ReadStoredSlice(struct varlena *stored, int32 offset, int32 length)
{
	struct varlena *slice;

	PushActiveSnapshot(GetTransactionSnapshot());
	slice = detoast_attr_slice(stored, offset, length);
	PopActiveSnapshot();
	if (VARSIZE(slice) - VARHDRSZ != length)
		elog(ERROR, "could not read the persisted index entries at offset %d", offset);
	return slice;
}

/* The size of the segment whose header is at header */
static int32
SegmentSize(const char *header)
{
	union
	{
		uint32		word;
		char		bytes[VARHDRSZ];
	}			aligned;

	memcpy(aligned.bytes, header, VARHDRSZ);
	return VARSIZE_ANY(aligned.bytes);
}

/* Read the run's next segment, with the header of the one after it; false if none */
static bool
EntryRunNextSegment(EntryRun *run)
{
	int32		padded = INTALIGN(run->next_size);
	int32		length;

	if (run->segment != NULL && run->segment != (struct varlena *) VARDATA(run->fetched))
		pfree(run->segment);
	if (run->fetched != NULL)
		pfree(run->fetched);
	run->segment = NULL;
	run->fetched = NULL;
	if (run->next_size == 0)
		return false;
	length = Min(padded + VARHDRSZ, run->stored_size - run->offset);
	run->fetched = ReadStoredSlice(run->stored, run->offset, length);
	run->segment = detoast_attr((struct varlena *) VARDATA(run->fetched));
	run->next = VARDATA(run->segment);
	run->offset += padded;
	run->next_size = length > padded ? SegmentSize(VARDATA(run->fetched) + padded) : 0;
	return true;
}

/* The run's next entry, deformed; its tuple NULL after the last */
static void
EntryRunAdvance(EntryMerge *merge, EntryRun *run)
{
	Size		size;

	if (run->segment == NULL || run->next >= (char *) run->segment + VARSIZE(run->segment))
	{
		if (!EntryRunNextSegment(run))
		{
			run->tuple = NULL;
			return;
		}
	}
	/* Copied where it is MAXALIGNed */
	size = IndexTupleSize((IndexTuple) run->next);
	if (size > run->space)
	{
		run->space = Max(size, 2 * run->space);
		run->buffer = repalloc(run->buffer, run->space);
	}
	run->tuple = (IndexTuple) run->buffer;
	memcpy(run->tuple, run->next, size);
	run->next += size;
	index_deform_tuple(run->tuple, merge->desc, run->values, run->isnull);
}

/* Begin reading a chunk's entries, as stored */
static void
EntryRunBegin(EntryMerge *merge, EntryRun *run, struct varlena *stored)
{
	run->stored = stored;
	run->stored_size = toast_raw_datum_size(PointerGetDatum(stored)) - VARHDRSZ;
	run->offset = 0;
	run->next_size = 0;
	if (run->stored_size > 0)
	{
		struct varlena *header = ReadStoredSlice(stored, 0, VARHDRSZ);

		run->next_size = SegmentSize(VARDATA(header));
		pfree(header);
	}
	run->space = 1024;
	run->buffer = palloc(run->space);
	EntryRunAdvance(merge, run);
}

/* Does run a's next entry come before run b's?  (A run at its end comes last.) */
static bool
EntryRunFirst(EntryMerge *merge, int a, int b)
{
	EntryRun   *run_a = &merge->runs[a];
	EntryRun   *run_b = &merge->runs[b];

	if (run_a->tuple == NULL || run_b->tuple == NULL)
		return run_b->tuple == NULL && run_a->tuple != NULL;
	for (int i = 0; i < merge->nkeys; i++)
	{
		int			order = ApplySortComparator(run_a->values[i], run_a->isnull[i],
												run_b->values[i], run_b->isnull[i],
												&merge->keys[i]);

		if (order != 0)
			return order < 0;
	}
	return ItemPointerCompare(&run_a->tuple->t_tid, &run_b->tuple->t_tid) < 0;
}

/*
 * The tournament of the runs' next entries (a tree of losers): the leaves,
 * at [nruns, 2 * nruns), are the runs; each match of the nodes above keeps
 * its loser, and tree[0] is the winner, the run whose entry comes first.
 * Once it is taken, only the matches on the winner's path are replayed: a
 * comparison a level, where a heap makes two.
 */
static int
TournamentPlay(EntryMerge *merge, int *tree, int node, int nruns)
{
	int			left;
	int			right;

	if (node >= nruns)
		return node - nruns;
	left = TournamentPlay(merge, tree, 2 * node, nruns);
	right = TournamentPlay(merge, tree, 2 * node + 1, nruns);
	if (EntryRunFirst(merge, left, right))
	{
		tree[node] = right;
		return left;
	}
	tree[node] = left;
	return right;
}

static void
TournamentReplay(EntryMerge *merge, int *tree, int nruns)
{
	int			winner = tree[0];

	for (int node = (winner + nruns) / 2; node >= 1; node /= 2)
	{
		if (EntryRunFirst(merge, tree[node], winner))
		{
			int			loser = winner;

			winner = tree[node];
			tree[node] = loser;
		}
	}
	tree[0] = winner;
}

/* The sort support of the index's key columns, as the btree build sorts them */
static SortSupport
IndexSortKeys(Relation index)
{
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	SortSupport keys = palloc0(sizeof(SortSupportData) * nkeys);

	for (int i = 0; i < nkeys; i++)
	{
		int16		option = index->rd_indoption[i];

		keys[i].ssup_cxt = CurrentMemoryContext;
		keys[i].ssup_collation = index->rd_indcollation[i];
		keys[i].ssup_nulls_first = (option & INDOPTION_NULLS_FIRST) != 0;
		keys[i].ssup_attno = i + 1;
		PrepareSortSupportFromIndexRel(index, (option & INDOPTION_DESC) != 0 ?
									   BTGreaterStrategyNumber : BTLessStrategyNumber,
									   &keys[i]);
	}
	return keys;
}

/* A chunk's persisted entries as stored (a TOAST pointer if they were moved out of line) */
static struct varlena *
StoredChunk(ChunkRange *chunk)
{
	struct varlena *stored;

	/* A snapshot for the read alone: the write holds back no VACUUM */
	PushActiveSnapshot(GetTransactionSnapshot());
	stored = entries_source.read(entries_source.job_id, chunk->start_block);
	PopActiveSnapshot();
	InvalidateCatalogSnapshot();
	return stored;
}

/* Entries written between two calls of the write's pace */
#define WRITE_PACE_ENTRIES	16384

/*
 * Write the btree from every entry of the chunks, in the index's order:
 * the chunks' entries (each chunk's sorted by its scan) merged, each read
 * a segment at a time; paced every WRITE_PACE_ENTRIES entries.
 */
static void
MergeEntries(Relation index, BtreeLoad *load)
{
	int			nruns = list_length(entries_source.chunks);
	EntryMerge	merge;
	int		   *tree;
	TimestampTz paced_at;
	uint64		unpaced = 0;

	if (nruns == 0)
		return;
	merge.desc = RelationGetDescr(index);
	merge.nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	merge.keys = IndexSortKeys(index);
	merge.runs = palloc0(sizeof(EntryRun) * nruns);
	for (int i = 0; i < nruns; i++)
		EntryRunBegin(&merge, &merge.runs[i], StoredChunk(list_nth(entries_source.chunks, i)));
	tree = palloc(sizeof(int) * nruns);
	tree[0] = TournamentPlay(&merge, tree, 1, nruns);
	paced_at = GetCurrentTimestamp();
	while (merge.runs[tree[0]].tuple != NULL)
	{
		EntryRun   *run = &merge.runs[tree[0]];

		CHECK_FOR_INTERRUPTS();
		BtreeLoadAdd(load, run->tuple);
		entries_source.tuples++;
		if (++unpaced == WRITE_PACE_ENTRIES)
		{
			TimestampTz now = GetCurrentTimestamp();

			entries_source.pace(entries_source.pace_arg, unpaced, (now - paced_at) / 1000000.0);
			paced_at = GetCurrentTimestamp();
			unpaced = 0;
		}
		EntryRunAdvance(&merge, run);
		TournamentReplay(&merge, tree, nruns);
	}
}

/*
 * The access method's build, for IndexChunkedWrite when the chunks are
 * merged: the btree written from the merge, with no sort of its own
 */
static IndexBuildResult *
WriteMergedEntries(Relation heap, Relation index, IndexInfo *info)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	BtreeLoad  *load = BtreeLoadBegin(heap, index);

	MergeEntries(index, load);
	BtreeLoadEnd(load);
	result->heap_tuples = entries_source.tuples;
	result->index_tuples = entries_source.tuples;
	return result;
}

/* Hand callback every entry of the chunks, chunk after chunk */
static void
ConcatenateEntries(Relation index, IndexBuildCallback callback, void *state)
{
	TupleDesc	desc = RelationGetDescr(index);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	ListCell   *lc;

	foreach(lc, entries_source.chunks)
	{
		struct varlena *stored = StoredChunk(lfirst(lc));
		struct varlena *chunk;
		char	   *next_segment;

		PushActiveSnapshot(GetTransactionSnapshot());
		chunk = detoast_attr(stored);
		PopActiveSnapshot();
		next_segment = VARDATA(chunk);
		while (next_segment < (char *) chunk + VARSIZE(chunk))
		{
			struct varlena *stored_segment = (struct varlena *) next_segment;
			struct varlena *segment = detoast_attr(stored_segment);
			char	   *next = VARDATA(segment);

			while (next < (char *) segment + VARSIZE(segment))
			{
				/* index tuples are read where they are MAXALIGNed */
				IndexTuple	tuple = CopyIndexTuple((IndexTuple) next);

				CHECK_FOR_INTERRUPTS();
				index_deform_tuple(tuple, desc, values, isnull);
				callback(index, &tuple->t_tid, values, isnull, true, state);
				entries_source.tuples++;
				next += IndexTupleSize(tuple);
				pfree(tuple);
			}
			if (segment != stored_segment)
				pfree(segment);
			next_segment += INTALIGN(VARSIZE(stored_segment));
		}
		pfree(chunk);
	}
}

/*
 * The table access method's index build scan, for the index build of
 * IndexChunkedWrite when the chunks are not merged: hands the access
 * method's callback every persisted entry, as live rows, for its sort
 */
static double
ReadEntries(Relation heap, Relation index, IndexInfo *info, bool allow_sync, bool anyvisible,
			bool progress, BlockNumber start, BlockNumber numblocks,
			IndexBuildCallback callback, void *state, TableScanDesc scan)
{
	ConcatenateEntries(index, callback, state);
	return entries_source.tuples;
}

/*
 * Write the index from the persisted entries of the chunks (ChunkRange),
 * read by read(job_id, start_block), into new storage if an interrupted
 * attempt left some; then mark it ready for inserts.  If
 * maintenance_work_mem has room for a segment of each chunk, the chunks
 * are merged (each is in the index's order), and the btree written from
 * the merge (index_btree_load.c) in place of the access method's build;
 * otherwise the access method's build sorts them (and is not paced).
 * Either way in index_build, which keeps the statistics and the rest as
 * for any build.  Caller holds SHARE UPDATE EXCLUSIVE on heap, and has no
 * snapshot: each chunk's read takes one of its own.  The number of
 * entries.
 */
double
IndexChunkedWrite(Relation heap, Relation index, List *chunks, int64 job_id,
				  IndexEntriesReader read, IndexWritePace pace, void *pace_arg)
{
	static TableAmRoutine entries_am;
	static IndexAmRoutine merged_am;
	const TableAmRoutine *heap_am = heap->rd_tableam;
	struct IndexAmRoutine *index_am = index->rd_indam;
	IndexInfo  *info = BuildIndexInfo(index);

	if (RelationGetNumberOfBlocks(index) != 0)
	{
		RelationSetNewRelfilenode(index, index->rd_rel->relpersistence);
		CommandCounterIncrement();
	}
	info->ii_Concurrent = true;
	entries_source.chunks = chunks;
	entries_source.job_id = job_id;
	entries_source.read = read;
	entries_source.pace = pace;
	entries_source.pace_arg = pace_arg;
	entries_source.tuples = 0;
	if (list_length(chunks) <= (double) maintenance_work_mem * 1024L / MERGE_RUN_SPACE)
	{
		merged_am = *index_am;
		merged_am.ambuild = WriteMergedEntries;
		index->rd_indam = &merged_am;
	}
	else
	{
		entries_am = *heap_am;
		entries_am.index_build_range_scan = ReadEntries;
		heap->rd_tableam = &entries_am;
	}
	PG_TRY();
	{
		index_build(heap, index, info, false, false);
	}
	PG_FINALLY();
	{
		if (heap->rd_tableam == &entries_am)
			heap->rd_tableam = heap_am;
		if (index->rd_indam == &merged_am)
			index->rd_indam = index_am;
		entries_source.chunks = NIL;
	}
	PG_END_TRY();
	index_set_state_flags(RelationGetRelid(index), INDEX_CREATE_SET_READY);
	CacheInvalidateRelcacheByRelid(RelationGetRelid(heap));
	return entries_source.tuples;
}

/* The roots of the rows to validate, in tid order, and which are indexed */
typedef struct Candidates
{
	ItemPointerData *tids;
	bool	   *indexed;
	int			count;
	int			max;
} Candidates;

static int
CompareTids(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/* The index's bulk-delete callback: note which candidates it holds, delete none */
static bool
NoteIndexed(ItemPointer tid, void *state)
{
	Candidates *candidates = state;
	ItemPointer found = bsearch(tid, candidates->tids, candidates->count,
								sizeof(ItemPointerData), CompareTids);

	if (found != NULL)
		candidates->indexed[found - candidates->tids] = true;
	return false;
}

/*
 * The roots of the HOT chains that snapshot sees in the blocks of heap that
 * are not all-visible, of the rows written by transactions not older than
 * scan_xmin, sorted; false (and none) if there are more than
 * maintenance_work_mem holds.  A block all-visible now was so before the
 * chunks' scan began (only VACUUM sets the bit, and it did not run since:
 * see above), and has not changed since (any change clears it): every row
 * in it is one a chunk's snapshot saw.  So is a row that snapshot sees
 * whose inserting transaction is older than scan_xmin, the xmin of a
 * snapshot taken before the scan's blocks were counted: it committed before
 * every chunk's snapshot was taken, in a block the scan covers, and no
 * deletion of it had committed then either (snapshot sees it): the chunk of
 * its block saw it, or another member of its HOT chain, and entered its
 * root.  (Invalid scan_xmin: every row is a candidate.)
 */
static bool
CollectCandidates(Relation heap, Snapshot snapshot, TransactionId scan_xmin,
				  Candidates *candidates)
{
	BlockNumber blocks = RelationGetNumberOfBlocks(heap);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	Buffer		vm_buffer = InvalidBuffer;
	OffsetNumber roots[MaxHeapTuplesPerPage];
	int			capacity;

	candidates->max = (int) Min((double) maintenance_work_mem * 1024L /
								(sizeof(ItemPointerData) + sizeof(bool)),
								MaxAllocSize / sizeof(ItemPointerData));
	candidates->count = 0;
	capacity = Min(candidates->max, 1024);
	candidates->tids = palloc(sizeof(ItemPointerData) * capacity);
	for (BlockNumber block = 0; block < blocks; block++)
	{
		Buffer		buffer;
		Page		page;
		OffsetNumber max_offset;
		bool		roots_known;

		CHECK_FOR_INTERRUPTS();
		if (VM_ALL_VISIBLE(heap, block, &vm_buffer))
			continue;
		buffer = ReadBufferExtended(heap, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buffer);
		roots_known = false;
		max_offset = PageGetMaxOffsetNumber(page);
		for (OffsetNumber offset = FirstOffsetNumber; offset <= max_offset; offset++)
		{
			ItemId		item = PageGetItemId(page, offset);
			HeapTupleData tuple;

			if (!ItemIdIsNormal(item))
				continue;
			tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
			tuple.t_len = ItemIdGetLength(item);
			tuple.t_tableOid = RelationGetRelid(heap);
			ItemPointerSet(&tuple.t_self, block, offset);
			if ((TransactionIdIsValid(scan_xmin) &&
				 TransactionIdPrecedes(HeapTupleHeaderGetXmin(tuple.t_data), scan_xmin)) ||
				!HeapTupleSatisfiesVisibility(&tuple, snapshot, buffer))
				continue;
			if (!roots_known)
			{
				heap_get_root_tuples(page, roots);
				roots_known = true;
			}
			if (!OffsetNumberIsValid(roots[offset - 1]))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg_internal("failed to find parent tuple for heap-only tuple at (%u,%u) in table \"%s\"",
										 block, offset, RelationGetRelationName(heap))));
			if (candidates->count == candidates->max)
			{
				UnlockReleaseBuffer(buffer);
				if (vm_buffer != InvalidBuffer)
					ReleaseBuffer(vm_buffer);
				pfree(candidates->tids);
				candidates->count = 0;
				return false;
			}
			if (candidates->count == capacity)
			{
				capacity = Min(candidates->max, 2 * capacity);
				candidates->tids = repalloc(candidates->tids, sizeof(ItemPointerData) * capacity);
			}
			ItemPointerSet(&candidates->tids[candidates->count], block, roots[offset - 1]);
			candidates->count++;
		}
		UnlockReleaseBuffer(buffer);
	}
	if (vm_buffer != InvalidBuffer)
		ReleaseBuffer(vm_buffer);
	qsort(candidates->tids, candidates->count, sizeof(ItemPointerData), CompareTids);
	return true;
}

/*
 * Insert the candidates the index does not hold: the member of each chain
 * that snapshot sees, under its root's tid, if the predicate admits it;
 * expressions evaluated as the table's owner.  How many.
 */
static int64
InsertMissing(Relation heap, Relation index, Snapshot snapshot, Candidates *candidates)
{
	IndexInfo  *info = BuildIndexInfo(index);
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	ExprState  *predicate = ExecPrepareQual(info->ii_Predicate, estate);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	OwnerContext owner;
	int64		inserted = 0;

	econtext->ecxt_scantuple = slot;
	OwnerContextBegin(heap, &owner);
	for (int i = 0; i < candidates->count; i++)
	{
		ItemPointerData tid = candidates->tids[i];
		HeapTupleData tuple;
		Buffer		buffer;
		bool		found;

		if (candidates->indexed[i])
			continue;
		CHECK_FOR_INTERRUPTS();
		buffer = ReadBuffer(heap, ItemPointerGetBlockNumber(&tid));
		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		found = heap_hot_search_buffer(&tid, heap, buffer, snapshot, &tuple, NULL, true);
		LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
		if (found)
		{
			ResetPerTupleExprContext(estate);
			ExecStoreBufferHeapTuple(&tuple, slot, buffer);
			if (predicate == NULL || ExecQual(predicate, econtext))
			{
				FormIndexDatum(info, slot, estate, values, isnull);
				index_insert(index, values, isnull, &candidates->tids[i], heap,
							 UNIQUE_CHECK_NO, false, info);
				inserted++;
			}
			ExecClearTuple(slot);
		}
		ReleaseBuffer(buffer);
	}
	OwnerContextEnd(&owner);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	return inserted;
}

/*
 * Add to the index (ready for inserts, and every writer of the table
 * knowing it) the rows that a new reference snapshot sees and it lacks:
 * what CREATE INDEX CONCURRENTLY's validate_index adds, read only from the
 * blocks that are not all-visible, of the rows written since the
 * transactions before scan_xmin (CollectCandidates).  The index is read
 * whole only if there are any.  With more than maintenance_work_mem of
 * them, or whole_table (VACUUM may have set blocks all-visible since the
 * chunks' scan), validate_index itself does it.  Returns the snapshot's xmin: the
 * transactions older than that must end before the index is valid.
 * Caller is in a transaction that has no snapshot of its own, and holds
 * SHARE UPDATE EXCLUSIVE on the table.
 */
TransactionId
IndexChunkedValidate(Oid table_oid, Oid index_oid, bool whole_table, TransactionId scan_xmin,
					 int64 *inserted)
{
	Snapshot	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	TransactionId limit_xmin = snapshot->xmin;
	Relation	heap = table_open(table_oid, ShareUpdateExclusiveLock);
	Relation	index = index_open(index_oid, RowExclusiveLock);
	Candidates	candidates = {0};

	PushActiveSnapshot(snapshot);
	*inserted = 0;
	if (whole_table || !CollectCandidates(heap, snapshot, scan_xmin, &candidates))
	{
		index_close(index, NoLock);
		table_close(heap, NoLock);
		validate_index(table_oid, index_oid, snapshot);
		*inserted = -1;
	}
	else
	{
		if (candidates.count > 0)
		{
			IndexVacuumInfo vacuum = {
				.index = index,
				.estimated_count = true,
				.message_level = DEBUG2,
				.num_heap_tuples = heap->rd_rel->reltuples,
				.strategy = GetAccessStrategy(BAS_VACUUM),
			};

			candidates.indexed = palloc0(sizeof(bool) * candidates.count);
			(void) index_bulk_delete(&vacuum, NULL, NoteIndexed, &candidates);
			*inserted = InsertMissing(heap, index, snapshot, &candidates);
		}
		index_close(index, NoLock);
		table_close(heap, NoLock);
	}
	PopActiveSnapshot();
	UnregisterSnapshot(snapshot);
	return limit_xmin;
}
