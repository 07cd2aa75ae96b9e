/*-------------------------------------------------------------------------
 *
 * foreign_key_check.c
 *	  Checking rows of a table against one of its foreign keys, a range of
 *	  blocks or a list of tuple ids at a time, as ALTER TABLE checks them.
 *
 * A range of blocks is checked as RI_Initial_Check checks a whole table: a
 * query that joins the referencing rows (those of the range) to the
 * referenced table with the constraint's own equality operators, and
 * returns those without a match whose key, by the constraint's MATCH rule,
 * must have one.  It runs as the caller (the job's role) when that role may
 * read the key columns of both tables and no row security applies, as
 * PostgreSQL's does; otherwise, as PostgreSQL falls back to, each row of
 * the range is checked by the foreign key's own check function.  Every row
 * the query returns is checked by that function too: it raises
 * PostgreSQL's error (the key, the referenced table), or finds that the
 * referenced row appeared meanwhile.
 *
 * When the referenced table is small (against the blocks to check, and
 * maintenance_work_mem), its keys are read into memory instead, with the
 * same snapshot, and a scan of the blocks looks up each row's key there,
 * with the constraint's equality operators and their hash functions
 * (ForeignKeyScan): the same rows as the query finds, the same check of
 * them after, in about half the query's time (no join, no projection, a
 * sequential scan of the blocks rather than a TID range scan: a job of one
 * process on 10M rows referencing 1,000 keys took 1.3 s, 2.4 s by the
 * query).  Only for a key whose columns have the types of the referenced
 * ones and whose operators can hash (the planner's conditions for a hash
 * join of the two), with hash functions safe in a parallel worker.
 *
 * The rows of a tuple id list (rows changed while a job checked) are
 * checked the same way, by the same query restricted to those tuple ids.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "kinds/foreign_key_check.h"
#include "pg/pg_parallel.h"

/* A foreign key, as its pg_constraint row says */
typedef struct ForeignKey
{
	Oid			oid;
	const char *name;
	Oid			referenced;		/* the referenced table */
	char		match;			/* FKCONSTR_MATCH_* */
	int			nkeys;
	AttrNumber	keys[INDEX_MAX_KEYS];	/* of the referencing table */
	AttrNumber	referenced_keys[INDEX_MAX_KEYS];
	Oid			equality[INDEX_MAX_KEYS];	/* referenced = referencing */
} ForeignKey;

/*
 * The referenced table's keys are read into memory when it has at most
 * 1/KEYS_BLOCKS_RATIO of the blocks to check, and needs less memory than
 * maintenance_work_mem at KEYS_MEMORY_PER_BYTE bytes per byte of its blocks
 */
#define KEYS_BLOCKS_RATIO		16
#define KEYS_MEMORY_PER_BYTE	3

/* The unmatched rows of ranges of a table's blocks, found with one snapshot */
struct ForeignKeyScan
{
	Relation	rel;
	ForeignKey	key;
	Snapshot	snapshot;
	MemoryContext context;		/* holds what follows */
	TupleHashTable keys;		/* the referenced keys, or NULL: by the query */
	TupleTableSlot *key_slot;	/* a key, its columns in the key's order */
	MemoryContext lookup_context;	/* the hash functions' memory, per row */
};

static void
ReadForeignKey(HeapTuple constraint, ForeignKey *key)
{
	Form_pg_constraint form = (Form_pg_constraint) GETSTRUCT(constraint);

	key->oid = form->oid;
	key->name = NameStr(form->conname);
	key->referenced = form->confrelid;
	key->match = form->confmatchtype;
	DeconstructFkConstraintRow(constraint, &key->nkeys, key->keys, key->referenced_keys,
							   key->equality, NULL, NULL, NULL, NULL);
}

/*
 * The row in slot checked by the foreign key's check function, as ALTER
 * TABLE's own fallback calls it (an INSERT's check): it raises PostgreSQL's
 * error if the row has no referenced row
 */
static void
CheckRow(Relation rel, const ForeignKey *key, TupleTableSlot *slot)
{
	LOCAL_FCINFO(fcinfo, 0);
	TriggerData trigger_data = {0};
	Trigger		trigger = {0};

	trigger.tgoid = InvalidOid;
	trigger.tgname = unconstify(char *, key->name);
	trigger.tgenabled = TRIGGER_FIRES_ON_ORIGIN;
	trigger.tgisinternal = true;
	trigger.tgconstrrelid = key->referenced;
	trigger.tgconstraint = key->oid;
	trigger.tgdeferrable = false;
	trigger.tginitdeferred = false;
	trigger_data.type = T_TriggerData;
	trigger_data.tg_event = TRIGGER_EVENT_INSERT | TRIGGER_EVENT_ROW;
	trigger_data.tg_relation = rel;
	trigger_data.tg_trigtuple = ExecFetchSlotHeapTuple(slot, false, NULL);
	trigger_data.tg_trigslot = slot;
	trigger_data.tg_trigger = &trigger;
	InitFunctionCallInfoData(*fcinfo, NULL, 0, InvalidOid, (Node *) &trigger_data, NULL);
	(void) RI_FKey_check_ins(fcinfo);
}

/* Check the rows at these tuple ids that the latest snapshot sees, one by one */
static void
CheckRowsOneByOne(Relation rel, const ForeignKey *key, const ItemPointerData *tids, int ntids)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());

	for (int i = 0; i < ntids; i++)
	{
		ItemPointerData tid = tids[i];

		CHECK_FOR_INTERRUPTS();
		if (table_tuple_fetch_row_version(rel, &tid, snapshot, slot))
			CheckRow(rel, key, slot);
	}
	UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * May the current role read the key columns of both tables, without row
 * security?  (RI_Initial_Check's conditions for its query.)
 */
static bool
MayQuery(Relation rel, Relation referenced, const ForeignKey *key)
{
	Oid			role = GetUserId();

	for (int i = 0; i < key->nkeys; i++)
	{
		if (pg_attribute_aclcheck(RelationGetRelid(rel), key->keys[i], role, ACL_SELECT) != ACLCHECK_OK &&
			pg_class_aclcheck(RelationGetRelid(rel), role, ACL_SELECT) != ACLCHECK_OK)
			return false;
		if (pg_attribute_aclcheck(key->referenced, key->referenced_keys[i], role, ACL_SELECT) != ACLCHECK_OK &&
			pg_class_aclcheck(key->referenced, role, ACL_SELECT) != ACLCHECK_OK)
			return false;
	}
	return has_bypassrls_privilege(role) ||
		((!rel->rd_rel->relrowsecurity || pg_class_ownercheck(RelationGetRelid(rel), role)) &&
		 (!referenced->rd_rel->relrowsecurity || pg_class_ownercheck(key->referenced, role)));
}

/* " COLLATE schema.name" of a collation, as the RI queries write it */
static void
AppendCollation(StringInfo query, Oid collation)
{
	HeapTuple	tuple;
	Form_pg_collation form;

	if (!OidIsValid(collation))
		return;
	tuple = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for collation %u", collation);
	form = (Form_pg_collation) GETSTRUCT(tuple);
	appendStringInfo(query, " COLLATE %s",
					 quote_qualified_identifier(get_namespace_name(form->collnamespace),
												NameStr(form->collname)));
	ReleaseSysCache(tuple);
}

/*
 * The query that finds the rows of rel that the condition rows (on fk)
 * picks and that have no referenced row: RI_Initial_Check's join and
 * conditions, for those rows (an anti-join; counting the rows too made a
 * chunk's query 3.3 times slower).  Every name in it is qualified: the
 * role's search_path cannot make it call another role's function or
 * operator.
 */
static char *
UnmatchedRowsQuery(Relation rel, Relation referenced, const ForeignKey *key, const char *rows)
{
	StringInfoData query;
	TupleDesc	desc = RelationGetDescr(rel);
	TupleDesc	referenced_desc = RelationGetDescr(referenced);

	initStringInfo(&query);
	appendStringInfo(&query, "SELECT fk.ctid FROM ONLY %s fk LEFT OUTER JOIN ONLY %s pk ON (",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)),
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(referenced)),
												RelationGetRelationName(referenced)));
	for (int i = 0; i < key->nkeys; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(desc, key->keys[i] - 1);
		Form_pg_attribute referenced_attribute = TupleDescAttr(referenced_desc,
															   key->referenced_keys[i] - 1);

		if (i > 0)
			appendStringInfoString(&query, " AND ");
		generate_operator_clause(&query,
								 psprintf("pk.%s", quote_identifier(NameStr(referenced_attribute->attname))),
								 referenced_attribute->atttypid, key->equality[i],
								 psprintf("fk.%s", quote_identifier(NameStr(attribute->attname))),
								 attribute->atttypid);
		if (referenced_attribute->attcollation != attribute->attcollation)
			AppendCollation(&query, referenced_attribute->attcollation);
	}
	appendStringInfo(&query, ") WHERE %s AND pk.%s IS NULL AND (", rows,
					 quote_identifier(NameStr(TupleDescAttr(referenced_desc, key->referenced_keys[0] - 1)->attname)));
	for (int i = 0; i < key->nkeys; i++)
		appendStringInfo(&query, "%sfk.%s IS NOT NULL",
						 i == 0 ? "" : key->match == FKCONSTR_MATCH_FULL ? " OR " : " AND ",
						 quote_identifier(NameStr(TupleDescAttr(desc, key->keys[i] - 1)->attname)));
	appendStringInfoChar(&query, ')');
	return query.data;
}

/*
 * The rows of rel that the condition rows picks (with a tid[] parameter,
 * tids) and that the query finds without a referenced row, with snapshot,
 * as the current role (UnmatchedRowsQuery), in *found; false if the role
 * may not run the query (the caller checks the rows one by one instead).
 * Read-only: it may run in a parallel worker.
 */
static bool
UnmatchedRows(Relation rel, const ForeignKey *key, const char *rows, Datum tids,
			  Snapshot snapshot, ItemPointerData **found, int *nfound)
{
	Relation	referenced = table_open(key->referenced, AccessShareLock);
	int			nest_level;
	Oid			argtypes[1] = {TIDARRAYOID};
	Datum		args[1] = {tids};
	MemoryContext caller_context = CurrentMemoryContext;

	if (!MayQuery(rel, referenced, key))
	{
		table_close(referenced, NoLock);
		return false;
	}
	/* maintenance_work_mem, as RI_Initial_Check runs its query */
	nest_level = NewGUCNestLevel();
	(void) set_config_option("work_mem", psprintf("%d", maintenance_work_mem),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	PushActiveSnapshot(snapshot);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(UnmatchedRowsQuery(rel, referenced, key, rows),
							  tids != (Datum) 0 ? 1 : 0, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check foreign key \"%s\"", key->name);
	*nfound = (int) SPI_processed;
	*found = MemoryContextAlloc(caller_context, sizeof(ItemPointerData) * Max(*nfound, 1));
	for (int i = 0; i < *nfound; i++)
	{
		bool		isnull;

		ItemPointerCopy((ItemPointer) DatumGetPointer(SPI_getbinval(SPI_tuptable->vals[i],
																	SPI_tuptable->tupdesc, 1,
																	&isnull)),
						&(*found)[i]);
	}
	SPI_finish();
	PopActiveSnapshot();
	AtEOXact_GUC(true, nest_level);
	table_close(referenced, NoLock);
	return true;
}

/*
 * Check the rows of rel that the condition rows picks, with the latest
 * snapshot: those UnmatchedRows finds, by the foreign key's check function;
 * false if the role may not run the query
 */
static bool
CheckByQuery(Relation rel, const ForeignKey *key, const char *rows, Datum tids)
{
	ItemPointerData *found;
	int			nfound;

	if (!UnmatchedRows(rel, key, rows, tids, GetLatestSnapshot(), &found, &nfound))
		return false;
	CheckRowsOneByOne(rel, key, found, nfound);
	return true;
}

/* The query's condition for the rows of blocks [start, end) */
static char *
BlockRange(BlockNumber start, BlockNumber end)
{
	return psprintf("fk.ctid OPERATOR(pg_catalog.>=) '(%u,0)'::pg_catalog.tid"
					" AND fk.ctid OPERATOR(pg_catalog.<) '(%u,0)'::pg_catalog.tid",
					start, end);
}

/*
 * May the rows of rel be checked against its foreign key by the query in
 * parallel workers?  Only if the current role may run it, and nothing in
 * it (the key's equality operators, the casts of its columns) is unsafe or
 * restricted in a parallel worker.
 */
bool
ForeignKeyParallelSafe(Relation rel, HeapTuple constraint)
{
	ForeignKey	key;
	Relation	referenced;
	bool		safe;

	ReadForeignKey(constraint, &key);
	referenced = table_open(key.referenced, AccessShareLock);
	safe = MayQuery(rel, referenced, &key) &&
		PgQueryParallelSafe(UnmatchedRowsQuery(rel, referenced, &key, BlockRange(0, 1)));
	table_close(referenced, NoLock);
	return safe;
}

/* The rows of blocks [start, end) of rel, as the planner's statistics count them */
static uint64
BlockRows(Relation rel, BlockNumber start, BlockNumber end)
{
	return rel->rd_rel->relpages > 0 && rel->rd_rel->reltuples > 0 ?
		(uint64) (rel->rd_rel->reltuples / rel->rd_rel->relpages * (end - start)) : 0;
}

/*
 * Set up scan->keys for the referenced table's keys, if it is small
 * enough against blocks (the blocks to check) and the key can be looked up
 * by hash; false if not
 */
static bool
SetUpKeys(ForeignKeyScan *scan, Relation referenced, BlockNumber blocks)
{
	const ForeignKey *key = &scan->key;
	TupleDesc	desc = RelationGetDescr(scan->rel);
	TupleDesc	referenced_desc = RelationGetDescr(referenced);
	BlockNumber referenced_blocks = RelationGetNumberOfBlocks(referenced);
	TupleDesc	key_desc;
	AttrNumber *columns;
	Oid			equality_functions[INDEX_MAX_KEYS];
	Oid		   *collations;
	FmgrInfo   *hash_functions;

	if (referenced_blocks > blocks / KEYS_BLOCKS_RATIO ||
		(double) referenced_blocks * BLCKSZ * KEYS_MEMORY_PER_BYTE >
		(double) maintenance_work_mem * 1024)
		return false;
	key_desc = CreateTemplateTupleDesc(key->nkeys);
	/* (the hash table keeps these three) */
	columns = palloc(sizeof(AttrNumber) * key->nkeys);
	collations = palloc(sizeof(Oid) * key->nkeys);
	hash_functions = palloc(sizeof(FmgrInfo) * key->nkeys);
	for (int i = 0; i < key->nkeys; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(desc, key->keys[i] - 1);
		Form_pg_attribute referenced_attribute = TupleDescAttr(referenced_desc,
															   key->referenced_keys[i] - 1);
		Oid			hash_left;
		Oid			hash_right;

		if (attribute->atttypid != referenced_attribute->atttypid ||
			!get_op_hash_functions(key->equality[i], &hash_left, &hash_right) ||
			hash_left != hash_right || func_parallel(hash_left) != PROPARALLEL_SAFE)
			return false;
		TupleDescInitEntry(key_desc, i + 1, NULL, attribute->atttypid, attribute->atttypmod, 0);
		columns[i] = i + 1;
		equality_functions[i] = get_opcode(key->equality[i]);
		/* the referenced column's, as the query's COLLATE says */
		collations[i] = referenced_attribute->attcollation;
		fmgr_info(hash_left, &hash_functions[i]);
	}
	scan->key_slot = MakeSingleTupleTableSlot(key_desc, &TTSOpsVirtual);
	scan->lookup_context = AllocSetContextCreate(scan->context, "foreign key lookups",
												 ALLOCSET_SMALL_SIZES);
	scan->keys = BuildTupleHashTableExt(NULL, key_desc, key->nkeys, columns, equality_functions,
										hash_functions, collations,
										Max(1024, (long) referenced->rd_rel->reltuples), 0,
										scan->context, scan->context, scan->lookup_context,
										false);
	return true;
}

/* How a row's key is looked up (KeyOfRow) */
typedef enum RowKey
{
	ROW_KEY_NEEDS_NONE,			/* nulls that need no referenced row */
	ROW_KEY_NEEDS_ONE,			/* nulls that MATCH FULL refuses: unmatched */
	ROW_KEY_COMPLETE			/* in scan->key_slot */
} RowKey;

/* The key at columns of the row in slot, in scan->key_slot, as the query's conditions take it */
static RowKey
KeyOfRow(ForeignKeyScan *scan, TupleTableSlot *slot, const AttrNumber *columns)
{
	TupleTableSlot *key_slot = scan->key_slot;
	int			nulls = 0;

	ExecClearTuple(key_slot);
	for (int i = 0; i < scan->key.nkeys; i++)
	{
		key_slot->tts_values[i] = slot_getattr(slot, columns[i], &key_slot->tts_isnull[i]);
		nulls += key_slot->tts_isnull[i];
	}
	if (nulls == scan->key.nkeys || (nulls > 0 && scan->key.match != FKCONSTR_MATCH_FULL))
		return ROW_KEY_NEEDS_NONE;
	if (nulls > 0)
		return ROW_KEY_NEEDS_ONE;
	ExecStoreVirtualTuple(key_slot);
	return ROW_KEY_COMPLETE;
}

/* Read the referenced table's keys that the scan's snapshot sees into scan->keys */
static void
LoadKeys(ForeignKeyScan *scan, Relation referenced)
{
	TupleTableSlot *slot = table_slot_create(referenced, NULL);
	TableScanDesc heap_scan = table_beginscan(referenced, scan->snapshot, 0, NULL);
	bool		isnew;

	while (table_scan_getnextslot(heap_scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		if (KeyOfRow(scan, slot, scan->key.referenced_keys) == ROW_KEY_COMPLETE)
			(void) LookupTupleHashEntry(scan->keys, scan->key_slot, &isnew, NULL);
		MemoryContextReset(scan->lookup_context);
	}
	table_endscan(heap_scan);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * Begin finding the rows of rel that have no referenced row by its
 * foreign key constraint, with snapshot, as the current role, in ranges of
 * its blocks, blocks of them in all (see SetUpKeys); NULL if the role may
 * not run the query (nor read the referenced keys: the caller checks the
 * rows one by one instead).  Read-only: parallel workers run it
 * (ForeignKeyParallelSafe said they may).
 */
ForeignKeyScan *
ForeignKeyScanBegin(Relation rel, HeapTuple constraint, Snapshot snapshot, BlockNumber blocks)
{
	ForeignKeyScan *scan = palloc0(sizeof(ForeignKeyScan));
	Relation	referenced;
	MemoryContext caller_context;

	ReadForeignKey(constraint, &scan->key);
	referenced = table_open(scan->key.referenced, AccessShareLock);
	if (!MayQuery(rel, referenced, &scan->key))
	{
		table_close(referenced, NoLock);
		pfree(scan);
		return NULL;
	}
	scan->rel = rel;
	scan->snapshot = snapshot;
	scan->context = AllocSetContextCreate(CurrentMemoryContext, "foreign key scan",
										  ALLOCSET_DEFAULT_SIZES);
	caller_context = MemoryContextSwitchTo(scan->context);
	if (SetUpKeys(scan, referenced, blocks))
	{
		LoadKeys(scan, referenced);
		ereport(DEBUG1,
				(errmsg_internal("foreign key \"%s\": %u keys of \"%s\" read into memory",
								 scan->key.name, scan->keys->hashtab->members,
								 RelationGetRelationName(referenced))));
	}
	MemoryContextSwitchTo(caller_context);
	table_close(referenced, NoLock);
	return scan;
}

/*
 * The rows of blocks [start, end) that have no referenced row, in *found
 * (in the caller's memory, their number in *nfound); returns the rows
 * looked at (by the query: as the planner's statistics count them)
 */
uint64
ForeignKeyScanBlocks(ForeignKeyScan *scan, BlockNumber start, BlockNumber end,
					 ItemPointerData **found, int *nfound)
{
	TupleTableSlot *slot;
	TableScanDesc heap_scan;
	uint64		rows = 0;
	int			capacity = 64;
	MemoryContext caller_context;

	if (scan->keys == NULL)
	{
		if (!UnmatchedRows(scan->rel, &scan->key, BlockRange(start, end), (Datum) 0,
						   scan->snapshot, found, nfound))
			elog(ERROR, "foreign key \"%s\" cannot be checked by its query", scan->key.name);
		return BlockRows(scan->rel, start, end);
	}
	*nfound = 0;
	*found = palloc(sizeof(ItemPointerData) * capacity);
	caller_context = MemoryContextSwitchTo(scan->context);
	slot = table_slot_create(scan->rel, NULL);
	/* A sequential scan of the blocks, with a bulk-read ring, as ALTER TABLE's */
	heap_scan = table_beginscan_strat(scan->rel, scan->snapshot, 0, NULL, true, false);
	heap_setscanlimits(heap_scan, start, end - start);
	while (table_scan_getnextslot(heap_scan, ForwardScanDirection, slot))
	{
		RowKey		row_key = KeyOfRow(scan, slot, scan->key.keys);

		CHECK_FOR_INTERRUPTS();
		if (row_key == ROW_KEY_NEEDS_ONE ||
			(row_key == ROW_KEY_COMPLETE &&
			 LookupTupleHashEntry(scan->keys, scan->key_slot, NULL, NULL) == NULL))
		{
			/* (repalloc keeps it in the caller's memory) */
			if (*nfound == capacity)
				*found = repalloc(*found, sizeof(ItemPointerData) * (capacity *= 2));
			(*found)[(*nfound)++] = slot->tts_tid;
		}
		MemoryContextReset(scan->lookup_context);
		rows++;
	}
	table_endscan(heap_scan);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextSwitchTo(caller_context);
	return rows;
}

void
ForeignKeyScanEnd(ForeignKeyScan *scan)
{
	if (scan->key_slot != NULL)
		ExecDropSingleTupleTableSlot(scan->key_slot);
	MemoryContextDelete(scan->context);
	pfree(scan);
}

/*
 * Check the rows at these tuple ids that the latest snapshot sees (rows
 * changed while a job checked): by the query when the role may run it, else
 * one by one
 */
void
ForeignKeyCheckRows(Relation rel, HeapTuple constraint, const ItemPointerData *tids, int ntids)
{
	ForeignKey	key;

	if (ntids == 0)
		return;
	ReadForeignKey(constraint, &key);
	if (!CheckByQuery(rel, &key, "fk.ctid OPERATOR(pg_catalog.=) ANY ($1)",
					  CatalogTidArray(unconstify(ItemPointerData *, tids), ntids)))
		CheckRowsOneByOne(rel, &key, tids, ntids);
}

/*
 * Check the rows of blocks [start, end) of rel against its foreign key
 * constraint, with the latest snapshot, as the current role: those that a
 * ForeignKeyScan finds without a referenced row, by the foreign key's check
 * function, or, if the role may not run its query, every row by it.
 * Returns the rows checked (by the query: as the planner's statistics
 * count them).
 */
uint64
ForeignKeyCheckBlocks(Relation rel, HeapTuple constraint, BlockNumber start, BlockNumber end)
{
	ForeignKey	key;
	uint64		rows = 0;
	TupleTableSlot *slot;
	Snapshot	snapshot;
	TableScanDesc scan;
	ForeignKeyScan *unmatched;

	if (end <= start)
		return 0;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	unmatched = ForeignKeyScanBegin(rel, constraint, snapshot, end - start);
	if (unmatched != NULL)
	{
		ItemPointerData *found;
		int			nfound;

		rows = ForeignKeyScanBlocks(unmatched, start, end, &found, &nfound);
		ForeignKeyScanEnd(unmatched);
		UnregisterSnapshot(snapshot);
		ReadForeignKey(constraint, &key);
		CheckRowsOneByOne(rel, &key, found, nfound);
		return rows;
	}
	ReadForeignKey(constraint, &key);
	slot = table_slot_create(rel, NULL);
	scan = table_beginscan_strat(rel, snapshot, 0, NULL, true, false);
	heap_setscanlimits(scan, start, end - start);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CheckRow(rel, &key, slot);
		rows++;
		CHECK_FOR_INTERRUPTS();
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	return rows;
}
