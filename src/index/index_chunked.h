/*-------------------------------------------------------------------------
 *
 * index_chunked.h
 *	  An index build of our own (index_chunked.c): a btree made from the
 *	  entries of a table's chunks, each scanned under its own snapshot and
 *	  persisted with its checkpoint.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_INDEX_CHUNKED_H
#define BGDDL_INDEX_CHUNKED_H

#include "access/htup.h"
#include "nodes/parsenodes.h"
#include "storage/block.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/* An index's definition, as PostgreSQL's own code wrote it in the catalog */
typedef struct IndexDefinition
{
	HeapTuple	index_tuple;	/* its pg_index row */
	HeapTuple	class_tuple;	/* its pg_class row */
	List	   *column_names;
} IndexDefinition;

/*
 * Where the entries of the chunks come from, when the index is written: a
 * chunk's, as stored (not detoasted)
 */
typedef struct varlena *(*IndexEntriesReader) (int64 job_id, int64 start_block);

/*
 * Called as the index is written, after every few thousand entries, in its
 * transaction: entries, how many since the last call, in seconds; may wait
 * (the job's limits)
 */
typedef void (*IndexWritePace) (void *arg, uint64 entries, double seconds);

extern bool IndexChunkedBuilds(Oid table_oid, IndexStmt *stmt);
extern IndexDefinition *IndexDefinitionCopy(Oid index_oid, MemoryContext context);
extern void IndexDefinitionCreate(Relation heap, const IndexDefinition *definition,
								  const char *name, Oid index_oid);
extern bytea *IndexChunkedScan(Relation heap, Relation index, BlockNumber start,
							   BlockNumber end, int64 *rows);
extern double IndexChunkedWrite(Relation heap, Relation index, List *chunks,
								int64 job_id, IndexEntriesReader read,
								IndexWritePace pace, void *pace_arg);
extern TransactionId IndexChunkedValidate(Oid table_oid, Oid index_oid, bool whole_table,
										  TransactionId scan_xmin, int64 *inserted);

#endif							/* BGDDL_INDEX_CHUNKED_H */
