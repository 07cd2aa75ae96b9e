/*-------------------------------------------------------------------------
 *
 * pg_heap_swap.c
 *	  A hidden heap for a materialized view's (or a table's) new content,
 *	  and the swap of the view's storage (heap, TOAST table and indexes)
 *	  with it.
 *
 * A background REFRESH builds the new content into a hidden heap while the
 * old content stays readable.  The hidden heap has the view's tuple
 * descriptor, owner, tablespace, access method and options; it lives in the
 * extension's schema, where nobody else can reach it.
 *
 * At the cut-over, copies of the view's indexes are built on the hidden
 * heap (the view stays readable meanwhile), and only then, under ACCESS
 * EXCLUSIVE on the view, the two relations swap their storage: heap files,
 * TOAST tables (by their links, as CLUSTER does when a TOAST table may
 * come or go), and each index's files with its copy's.  That takes the
 * same short time whatever the view's size: CLUSTER's finish_heap_swap
 * would rebuild the view's indexes under the lock instead.  The hidden heap
 * then holds the old storage and is dropped with it.
 *
 * A table's rewrite (kind_rewrite.c) uses the same pieces: the hidden heap
 * made like the table (its dropped attributes too), in the table's
 * tablespace or a new one (which the swap then gives the table), and plain
 * index copies (no uniqueness checked while the hidden heap holds rows of
 * several snapshots), built before the cut-over and kept up to date.
 *
 * relfrozenxid and relminmxid come with the heap: the view gets the hidden
 * heap's own, which are right for rows inserted by ordinary, earlier
 * transactions (never the cut-over's RecentXmin: that would be a lie about
 * rows written before it, and VACUUM and CLOG truncation would later
 * corrupt the view).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/multixact.h"
#include "access/relation.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/toast_internals.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/heap.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/toasting.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "common/string.h"
#include "nodes/makefuncs.h"
#include "parser/parse_utilcmd.h"
#include "parser/parser.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "pg/pg_heap_swap.h"

/*
 * Create the hidden heap for a materialized view's (or a table's) new
 * content, with the rows of descriptor desc (the view's, or a table's with
 * changed columns), in the given namespace and tablespace
 * (pg_class.reltablespace's value: 0 for the database's default), with the
 * given table access method (InvalidOid: the view's), with its TOAST
 * table.  Caller holds a lock on the view.
 */
Oid
PgHeapCreateLike(Relation matview, TupleDesc desc, Oid namespace_oid, const char *name,
				 Oid tablespace_oid, Oid access_method_oid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(RelationGetRelid(matview)));
	bool		isnull;
	Datum		reloptions;
	Oid			hidden_oid;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", RelationGetRelid(matview));
	reloptions = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
	if (isnull)
		reloptions = (Datum) 0;

	hidden_oid = heap_create_with_catalog(name, namespace_oid, tablespace_oid,
										  InvalidOid, InvalidOid, InvalidOid,
										  matview->rd_rel->relowner,
										  OidIsValid(access_method_oid) ? access_method_oid :
										  matview->rd_rel->relam,
										  desc,
										  NIL, RELKIND_RELATION,
										  matview->rd_rel->relpersistence,
										  false, false, ONCOMMIT_NOOP, reloptions,
										  false, true, true, RelationGetRelid(matview), NULL);
	ReleaseSysCache(tuple);
	CommandCounterIncrement();

	/* TOAST options are those of the view's TOAST table, if any */
	reloptions = (Datum) 0;
	if (OidIsValid(matview->rd_rel->reltoastrelid))
	{
		tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(matview->rd_rel->reltoastrelid));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for relation %u", matview->rd_rel->reltoastrelid);
		reloptions = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
		if (isnull)
			reloptions = (Datum) 0;
		ReleaseSysCache(tuple);
	}
	NewHeapCreateToastTable(hidden_oid, reloptions, AccessExclusiveLock, InvalidOid);
	CommandCounterIncrement();
	return hidden_oid;
}

/*
 * Can rows stored with one descriptor be read with the other: the same
 * attributes, each dropped in both or of the same type, typmod and storage
 * layout in both?  (A table rewritten into a hidden heap made like it: an
 * ALTER TABLE of the table since changes its shape.)
 */
bool
PgHeapSameRowShape(TupleDesc desc1, TupleDesc desc2)
{
	if (desc1->natts != desc2->natts)
		return false;
	for (int i = 0; i < desc1->natts; i++)
	{
		Form_pg_attribute a1 = TupleDescAttr(desc1, i);
		Form_pg_attribute a2 = TupleDescAttr(desc2, i);

		if (a1->attisdropped != a2->attisdropped)
			return false;
		if (!a1->attisdropped &&
			(a1->atttypid != a2->atttypid || a1->atttypmod != a2->atttypmod ||
			 a1->attlen != a2->attlen || a1->attalign != a2->attalign ||
			 a1->attbyval != a2->attbyval))
			return false;
	}
	return true;
}

/*
 * Build an index copy (a REINDEX builds it, and marks it ready and valid).
 * A unique violation is reported as the blocking REFRESH reports it: for
 * the view's own index, on the view; with as_merge, as REFRESH ...
 * CONCURRENTLY does, whose merge inserts the duplicate key.
 */
static void
BuildIndexCopy(Relation matview, Oid old_index, Relation hidden, Oid new_index, bool as_merge)
{
	MemoryContext context = CurrentMemoryContext;
	ReindexParams params = {0};

	PG_TRY();
	{
		reindex_index(new_index, false, hidden->rd_rel->relpersistence, &params);
	}
	PG_CATCH();
	{
		ErrorData  *error;
		char	   *index_name = get_rel_name(old_index);

		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		if (error->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			PG_RE_THROW();
		FlushErrorState();
		if (as_merge && error->detail != NULL &&
			pg_str_endswith(error->detail, " is duplicated."))
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("duplicate key value violates unique constraint \"%s\"", index_name),
					 errdetail_internal("%.*s already exists.",
										(int) strlen(error->detail) - (int) strlen(" is duplicated."),
										error->detail),
					 errtableconstraint(matview, index_name)));
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("could not create unique index \"%s\"", index_name),
				 error->detail ? errdetail_internal("%s", error->detail) : 0,
				 errtableconstraint(matview, index_name)));
	}
	PG_END_TRY();
	CommandCounterIncrement();
}

/*
 * The hidden heap (its TOAST table and index copies) belongs to the view's
 * owner, who may have changed since it was made: as ALTER ... OWNER changes
 * a relation's TOAST table and indexes with it.  Its index copies are built
 * as its owner, and its TOAST table comes to the view by its link.
 */
static void
FollowOwner(Relation matview, Oid hidden_oid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(hidden_oid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", hidden_oid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	if (owner == matview->rd_rel->relowner)
		return;
	ATExecChangeOwner(hidden_oid, matview->rd_rel->relowner, true, AccessExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Make an index copy a plain index: it checks no uniqueness.  Its storage is
 * what a unique index's would be; only its definition says otherwise.
 */
static void
MakeIndexPlain(Oid index_oid)
{
	Relation	pg_index = table_open(IndexRelationId, RowExclusiveLock);
	HeapTuple	tuple = SearchSysCacheCopy1(INDEXRELID, ObjectIdGetDatum(index_oid));

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for index %u", index_oid);
	((Form_pg_index) GETSTRUCT(tuple))->indisunique = false;
	CatalogTupleUpdate(pg_index, &tuple->t_self, tuple);
	heap_freetuple(tuple);
	table_close(pg_index, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Create (not build) a plain index on the hidden heap from an index's
 * definition, analysed again on the hidden heap, as ALTER COLUMN ... TYPE
 * makes again the indexes of the columns it changes (from the same text,
 * pg_get_indexdef_string: an operator class that is the default for the
 * column's old type is the default for its new one there too).  The
 * hidden heap's owner is checked as DefineIndex checks the table's.
 */
static Oid
CreateRedefinedCopy(Relation hidden, Oid old_index, const char *name)
{
	char	   *definition = pg_get_indexdef_string(old_index);
	RawStmt    *raw = linitial_node(RawStmt, raw_parser(definition, RAW_PARSE_DEFAULT));
	IndexStmt  *stmt = castNode(IndexStmt, raw->stmt);

	stmt->relation = makeRangeVar(get_namespace_name(RelationGetNamespace(hidden)),
								  pstrdup(RelationGetRelationName(hidden)), -1);
	stmt->idxname = pstrdup(name);
	stmt->unique = false;
	stmt->primary = false;
	stmt->isconstraint = false;
	stmt = transformIndexStmt(RelationGetRelid(hidden), stmt, definition);
	return DefineIndex(RelationGetRelid(hidden), stmt, InvalidOid, InvalidOid, InvalidOid,
					   false, false, false, true, true).objectId;
}

/*
 * Build, on the hidden heap, a copy of each index of the view but those in
 * copied, from the hidden heap's content (for REFRESH ... CONCURRENTLY if
 * concurrently); those in redefined from their definition analysed again
 * on the hidden heap, whose columns they use have new types
 * (CreateRedefinedCopy).  Returns the pairs (view's index, copy) as two
 * parallel lists.  With plain, the copies check no uniqueness
 * (MakeIndexPlain): a rewrite keeps them up to date with rows of several
 * snapshots until its cut-over, where they are the table's rows again,
 * which its own indexes kept unique.  Caller holds ShareUpdateExclusive on
 * the view (no index comes or goes) and ACCESS EXCLUSIVE on the hidden
 * heap.
 */
void
PgHeapBuildIndexCopies(Relation matview, Relation hidden, List *copied, List *redefined,
					   bool concurrently, bool plain, List **old_indexes, List **new_indexes)
{
	ListCell   *lc;

	*old_indexes = NIL;
	*new_indexes = NIL;
	FollowOwner(matview, RelationGetRelid(hidden));
	foreach(lc, RelationGetIndexList(matview))
	{
		Oid			old_index = lfirst_oid(lc);
		Oid			new_index;
		/* (named for the hidden heap too: two jobs may copy one index) */
		char	   *name = psprintf("index_%u_%u", old_index, RelationGetRelid(hidden));

		if (list_member_oid(copied, old_index))
			continue;
		if (list_member_oid(redefined, old_index))
			new_index = CreateRedefinedCopy(hidden, old_index, name);
		else
			new_index = index_concurrently_create_copy(hidden, old_index,
													   get_rel_tablespace(old_index), name);
		CommandCounterIncrement();
		if (plain)
			MakeIndexPlain(new_index);
		BuildIndexCopy(matview, old_index, hidden, new_index, concurrently);
		*old_indexes = lappend_oid(*old_indexes, old_index);
		*new_indexes = lappend_oid(*new_indexes, new_index);
	}
}

/*
 * Are two indexes defined alike, so that one's storage can be the other's:
 * the same access method, tablespace, options, columns, operator families
 * and input types, collations, options per column, expressions and
 * predicate?  Uniqueness aside (a copy is plain; its storage is the same).
 */
bool
PgIndexSameDefinition(Oid index1_oid, Oid index2_oid)
{
	Relation	index1 = index_open(index1_oid, AccessShareLock);
	Relation	index2 = index_open(index2_oid, AccessShareLock);
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index1);
	bytea	   *options1 = index1->rd_options;
	bytea	   *options2 = index2->rd_options;
	bool		same;

	same = index1->rd_rel->relam == index2->rd_rel->relam &&
		index1->rd_rel->reltablespace == index2->rd_rel->reltablespace &&
		IndexRelationGetNumberOfAttributes(index1) == IndexRelationGetNumberOfAttributes(index2) &&
		nkeys == IndexRelationGetNumberOfKeyAttributes(index2) &&
		index1->rd_index->indnullsnotdistinct == index2->rd_index->indnullsnotdistinct &&
		memcmp(index1->rd_index->indkey.values, index2->rd_index->indkey.values,
			   sizeof(int16) * IndexRelationGetNumberOfAttributes(index1)) == 0 &&
		memcmp(index1->rd_opfamily, index2->rd_opfamily, sizeof(Oid) * nkeys) == 0 &&
		memcmp(index1->rd_opcintype, index2->rd_opcintype, sizeof(Oid) * nkeys) == 0 &&
		memcmp(index1->rd_indcollation, index2->rd_indcollation, sizeof(Oid) * nkeys) == 0 &&
		memcmp(index1->rd_indoption, index2->rd_indoption, sizeof(int16) * nkeys) == 0 &&
		equal(RelationGetIndexExpressions(index1), RelationGetIndexExpressions(index2)) &&
		equal(RelationGetIndexPredicate(index1), RelationGetIndexPredicate(index2)) &&
		(options1 == NULL) == (options2 == NULL) &&
		(options1 == NULL ||
		 (VARSIZE(options1) == VARSIZE(options2) &&
		  memcmp(options1, options2, VARSIZE(options1)) == 0));
	index_close(index1, AccessShareLock);
	index_close(index2, AccessShareLock);
	return same;
}

/*
 * Record a heap's size in its pg_class row, as VACUUM FULL records its new
 * heap's before the swap (the statistics go with the storage): its pages
 * now, tuples as counted by the caller, none all-visible.
 */
void
PgHeapRecordSize(Relation heap, double tuples)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(RelationGetRelid(heap)));
	Form_pg_class form;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", RelationGetRelid(heap));
	form = (Form_pg_class) GETSTRUCT(tuple);
	form->relpages = (int32) RelationGetNumberOfBlocks(heap);
	form->reltuples = (float4) tuples;
	form->relallvisible = 0;
	CatalogTupleUpdate(pg_class, &tuple->t_self, tuple);
	heap_freetuple(tuple);
	table_close(pg_class, RowExclusiveLock);
	CommandCounterIncrement();
}

/* Exchange a field of form1 and form2 */
#define SWAP_FIELD(type, field) \
	do { \
		type		swapped_ = form1->field; \
		form1->field = form2->field; \
		form2->field = swapped_; \
	} while (0)

/* A relation's TOAST table, or InvalidOid */
static Oid
ToastOf(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			toast_oid;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	toast_oid = ((Form_pg_class) GETSTRUCT(tuple))->reltoastrelid;
	ReleaseSysCache(tuple);
	return toast_oid;
}

/*
 * Make a TOAST table depend (internally) on the relation it now belongs to,
 * as swap_relation_files does when it swaps TOAST tables by their links
 */
static void
RelinkToast(Oid toast_oid, Oid owner_oid)
{
	ObjectAddress toast;
	ObjectAddress owner;

	if (!OidIsValid(toast_oid))
		return;
	if (deleteDependencyRecordsFor(RelationRelationId, toast_oid, false) != 1)
		elog(ERROR, "expected one dependency record for TOAST table %u", toast_oid);
	ObjectAddressSet(toast, RelationRelationId, toast_oid);
	ObjectAddressSet(owner, RelationRelationId, owner_oid);
	recordDependencyOn(&toast, &owner, DEPENDENCY_INTERNAL);
}

/*
 * Swap the storage of two relations: the counterpart of PostgreSQL 15's
 * swap_relation_files() (commands/cluster.c, static there), which CLUSTER,
 * VACUUM FULL and REFRESH use, step by step, for what we swap: two heaps
 * (with their TOAST tables, by their links), or two indexes.  r1 is the
 * relation that lives on with r2's storage; r2 is dropped after.  The
 * differences from swap_relation_files are marked "Unlike".  Caller holds
 * ACCESS EXCLUSIVE on both.
 */
static void
SwapRelationStorage(Oid r1, Oid r2, bool swap_toast_links, bool swap_placement,
					TransactionId frozen_xid, MultiXactId cutoff_multi)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tuple1 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(r1));
	HeapTuple	tuple2 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(r2));
	Form_pg_class form1;
	Form_pg_class form2;
	Relation	rel1;
	Relation	rel2;
	bool		storage2_new;
	CatalogIndexState indstate;

	if (!HeapTupleIsValid(tuple1) || !HeapTupleIsValid(tuple2))
		elog(ERROR, "cache lookup failed for relation %u or %u", r1, r2);
	form1 = (Form_pg_class) GETSTRUCT(tuple1);
	form2 = (Form_pg_class) GETSTRUCT(tuple2);

	/* A mapped relation (a catalog) is swapped in the relation mapper: never ours */
	if (!OidIsValid(form1->relfilenode) || !OidIsValid(form2->relfilenode))
		elog(ERROR, "cannot swap the storage of mapped relation %u or %u", r1, r2);

	/*
	 * Unlike swap_relation_files, which swaps the tablespace, access method
	 * and persistence too: ours are the same by construction (the hidden heap
	 * is made like the view), and an ALTER of the view meanwhile fails the
	 * cut-over here rather than being undone.  A new tablespace and access
	 * method are swapped when asked for (a table's SET TABLESPACE or SET
	 * ACCESS METHOD), with the dependency on the access method, as
	 * swap_relation_files changes it.
	 */
	if ((!swap_placement &&
		 (form1->reltablespace != form2->reltablespace || form1->relam != form2->relam)) ||
		form1->relpersistence != form2->relpersistence)
		elog(ERROR, "relations %u and %u differ in tablespace, persistence or access method",
			 r1, r2);

	SWAP_FIELD(Oid, relfilenode);
	if (swap_placement)
	{
		SWAP_FIELD(Oid, reltablespace);
		if (form1->relam != form2->relam)
		{
			if (changeDependencyFor(RelationRelationId, r1, AccessMethodRelationId,
									form1->relam, form2->relam) != 1 ||
				changeDependencyFor(RelationRelationId, r2, AccessMethodRelationId,
									form2->relam, form1->relam) != 1)
				elog(ERROR, "could not change the access method dependency of relation %u or %u",
					 r1, r2);
			SWAP_FIELD(Oid, relam);
		}
	}
	if (swap_toast_links)
		SWAP_FIELD(Oid, reltoastrelid);

	/*
	 * The relcache's subtransaction bookkeeping follows the storage, so that
	 * RelationNeedsWAL() stays right under wal_level = minimal.  Unlike
	 * swap_relation_files, whose new heap is always created in the current
	 * transaction, the hidden heap may be older than this transaction (a
	 * worker made it at the job's start): r1 is told that its storage is new
	 * only if r2's was, and that it is not if r2's was not (a table that an
	 * ALTER TABLE gave new, empty storage before the swap: kind_rewrite.c).
	 */
	rel1 = relation_open(r1, NoLock);
	rel2 = relation_open(r2, NoLock);
	storage2_new = rel2->rd_createSubid != InvalidSubTransactionId ||
		rel2->rd_firstRelfilenodeSubid != InvalidSubTransactionId;
	rel2->rd_createSubid = rel1->rd_createSubid;
	rel2->rd_newRelfilenodeSubid = rel1->rd_newRelfilenodeSubid;
	rel2->rd_firstRelfilenodeSubid = rel1->rd_firstRelfilenodeSubid;
	if (storage2_new)
		RelationAssumeNewRelfilenode(rel1);
	else
	{
		rel1->rd_newRelfilenodeSubid = InvalidSubTransactionId;
		rel1->rd_firstRelfilenodeSubid = InvalidSubTransactionId;
	}
	relation_close(rel1, NoLock);
	relation_close(rel2, NoLock);

	/* r1 takes frozen_xid and cutoff_multi (an index has none) */
	if (form1->relkind != RELKIND_INDEX)
	{
		form1->relfrozenxid = frozen_xid;
		form1->relminmxid = cutoff_multi;
	}

	/* The statistics go with the storage */
	SWAP_FIELD(int32, relpages);
	SWAP_FIELD(float4, reltuples);
	SWAP_FIELD(int32, relallvisible);

	indstate = CatalogOpenIndexes(pg_class);
	CatalogTupleUpdateWithInfo(pg_class, &tuple1->t_self, tuple1, indstate);
	CatalogTupleUpdateWithInfo(pg_class, &tuple2->t_self, tuple2, indstate);
	CatalogCloseIndexes(indstate);

	/* TOAST tables swapped by their links: their dependencies follow */
	if (swap_toast_links)
	{
		RelinkToast(form1->reltoastrelid, r1);
		RelinkToast(form2->reltoastrelid, r2);
	}

	InvokeObjectPostAlterHookArg(RelationRelationId, r1, 0, InvalidOid, true);
	InvokeObjectPostAlterHookArg(RelationRelationId, r2, 0, InvalidOid, true);

	heap_freetuple(tuple1);
	heap_freetuple(tuple2);
	table_close(pg_class, RowExclusiveLock);

	/* No smgr reference to the swapped files may outlive the swap */
	RelationCloseSmgrByOid(r1);
	RelationCloseSmgrByOid(r2);
}

/*
 * Swap the storage of a materialized view and its indexes with the hidden
 * heap's and its index copies (from PgHeapBuildIndexCopies), then drop the
 * hidden heap, which now holds the old storage: the counterpart of
 * PostgreSQL 15's finish_heap_swap() as REFRESH calls it, but for the
 * indexes, which it rebuilds under the lock (reindex_relation) and we swap
 * with copies built before.  As reindex_index does for each index, nothing
 * may be using one, and its predicate locks move to the view.  With
 * new_placement, the heap's tablespace and access method go with its
 * storage (a table's SET TABLESPACE, SET ACCESS METHOD).  Caller holds
 * ACCESS EXCLUSIVE on both relations.
 */
void
PgHeapSwap(Oid matview_oid, Oid hidden_oid, List *old_indexes, List *new_indexes,
		   const char *statement, bool new_placement)
{
	Relation	matview = table_open(matview_oid, NoLock);
	HeapTuple	hidden_tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(hidden_oid));
	TransactionId frozen_xid;
	MultiXactId cutoff_multi;
	Oid			toast_oid;
	ListCell   *old_cell;
	ListCell   *new_cell;
	ObjectAddress hidden;

	CheckTableNotInUse(matview, statement);
	/* The hidden heap's TOAST table comes to the view by its link */
	FollowOwner(matview, hidden_oid);
	table_close(matview, NoLock);
	foreach(old_cell, old_indexes)
	{
		Relation	index = index_open(lfirst_oid(old_cell), AccessExclusiveLock);

		CheckTableNotInUse(index, statement);
		TransferPredicateLocksToHeapRelation(index);
		index_close(index, NoLock);
	}

	/*
	 * The view gets the hidden heap's own relfrozenxid and relminmxid: its
	 * rows were inserted by ordinary, earlier transactions.  (REFRESH passes
	 * RecentXmin, which is right for its heap, written frozen; for ours it
	 * would be a lie, and VACUUM and CLOG truncation would later corrupt the
	 * view.)
	 */
	if (!HeapTupleIsValid(hidden_tuple))
		elog(ERROR, "cache lookup failed for relation %u", hidden_oid);
	frozen_xid = ((Form_pg_class) GETSTRUCT(hidden_tuple))->relfrozenxid;
	cutoff_multi = ((Form_pg_class) GETSTRUCT(hidden_tuple))->relminmxid;
	ReleaseSysCache(hidden_tuple);

	SwapRelationStorage(matview_oid, hidden_oid, true, new_placement, frozen_xid, cutoff_multi);
	forboth(old_cell, old_indexes, new_cell, new_indexes)
		SwapRelationStorage(lfirst_oid(old_cell), lfirst_oid(new_cell), false, false,
							InvalidTransactionId, InvalidMultiXactId);
	CommandCounterIncrement();

	/* The hidden heap now holds the old storage, TOAST table and indexes */
	ObjectAddressSet(hidden, RelationRelationId, hidden_oid);
	performDeletion(&hidden, DROP_RESTRICT, PERFORM_DELETION_INTERNAL | PERFORM_DELETION_SKIP_EXTENSIONS);
	CommandCounterIncrement();

	/* As finish_heap_swap: the view's TOAST table is named after the view */
	toast_oid = ToastOf(matview_oid);
	if (OidIsValid(toast_oid))
	{
		Oid			toast_index = toast_get_valid_index(toast_oid, NoLock);

		RenameRelationInternal(toast_oid, psprintf("pg_toast_%u", matview_oid), true, false);
		RenameRelationInternal(toast_index, psprintf("pg_toast_%u_index", matview_oid),
							   true, true);
		CommandCounterIncrement();
	}
}
