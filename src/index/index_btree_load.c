/*-------------------------------------------------------------------------
 *
 * index_btree_load.c
 *	  A btree written bottom up from entries handed over in its order (its
 *	  keys, then the heap tid), the way PostgreSQL's btree build writes what
 *	  its sort returns (nbtsort.c, whose writer is not callable from
 *	  outside):
 *
 *	  - a leaf page takes entries until the next would leave it fuller than
 *		the index's fillfactor; where the index deduplicates, equal keys are
 *		first gathered into posting lists;
 *	  - a page that is closed gets its last entry copied as its high key,
 *		truncated (on a leaf) to the columns that tell it from the entry
 *		before, and that entry moves to the next page of the level;
 *	  - a closed page's low key (the high key of the page before it, or
 *		minus infinity for the first of a level) goes to the level above as
 *		its downlink, which opens that level when it has none;
 *	  - at the end the rightmost page of every level is closed without a
 *		high key, the topmost is the root, and the metapage is written.
 *
 *	  Pages are written past shared buffers, each WAL-logged as a full page
 *	  image, and the file is synced before the transaction commits, as the
 *	  btree build does.  Nothing checks the order: the caller's merge makes
 *	  it (amcheck's bt_index_check finds an index built out of order).
 *
 *	  It spares the chunked build (index_chunked.c) the btree build's own
 *	  sort of entries that are already in order, which spilled them all to
 *	  temporary files and merged them again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/xloginsert.h"
#include "storage/bufpage.h"
#include "storage/smgr.h"
#include "utils/rel.h"

#include "index/index_btree_load.h"
#include "pg/pg_compat.h"

/* The page being filled on one level of the tree */
typedef struct LevelPage
{
	Page		page;
	BlockNumber blkno;
	IndexTuple	low_key;		/* the page's downlink to be */
	OffsetNumber last;			/* the offset of its last entry */
	Size		last_posting;	/* the posting list's size in that entry */
	uint32		level;			/* 0: leaves */
	Size		keep_free;		/* the space the fillfactor leaves free */
	struct LevelPage *parent;	/* the level above, once there is one */
} LevelPage;

struct BtreeLoad
{
	Relation	heap;
	Relation	index;
	BTScanInsert key;			/* for the high keys' truncation */
	int			nkeys;
	bool		wal;
	BlockNumber allocated;		/* block numbers given to pages */
	BlockNumber written;		/* blocks in the file */
	Page		zero_page;
	LevelPage  *leaf;			/* NULL before the first entry */
	BTDedupState pending;		/* the posting list being gathered, or NULL */
};

static Page
NewPage(uint32 level)
{
	Page		page = palloc(BLCKSZ);
	BTPageOpaque opaque;

	_bt_pageinit(page, BLCKSZ);
	opaque = (BTPageOpaque) PageGetSpecialPointer(page);
	opaque->btpo_prev = P_NONE;
	opaque->btpo_next = P_NONE;
	opaque->btpo_level = level;
	opaque->btpo_flags = level == 0 ? BTP_LEAF : 0;
	opaque->btpo_cycleid = 0;
	/* the high key's line pointer, taken when the page is closed */
	((PageHeader) page)->pd_lower += sizeof(ItemIdData);
	return page;
}

static LevelPage *
OpenLevel(BtreeLoad *load, uint32 level)
{
	LevelPage  *level_page = palloc0(sizeof(LevelPage));

	level_page->page = NewPage(level);
	level_page->blkno = load->allocated++;
	level_page->last = P_HIKEY;
	level_page->level = level;
	level_page->keep_free = level == 0 ? BTGetTargetPageFreeSpace(load->index) :
		BLCKSZ * (100 - BTREE_NONLEAF_FILLFACTOR) / 100;
	return level_page;
}

/*
 * Put an entry at offset of page.  The first entry of a page above the
 * leaves keeps only its downlink: its key is minus infinity.
 */
static void
PutEntry(Page page, IndexTuple entry, Size size, OffsetNumber offset, bool minus_infinity)
{
	IndexTupleData downlink;

	if (minus_infinity)
	{
		downlink = *entry;
		downlink.t_info = sizeof(IndexTupleData);
		BTreeTupleSetNAtts(&downlink, 0, false);
		entry = &downlink;
		size = sizeof(IndexTupleData);
	}
	if (PageAddItem(page, (Item) entry, size, offset, false, false) == InvalidOffsetNumber)
		elog(ERROR, "could not add an entry to a page of a btree");
}

/* Write page as block blkno of the index, and free it */
static void
WritePage(BtreeLoad *load, Page page, BlockNumber blkno)
{
	SMgrRelation smgr = RelationGetSmgr(load->index);

	if (load->wal)
		log_newpage(&PgRelFileLocator(load->index), MAIN_FORKNUM, blkno, page, true);

	/*
	 * A page above the leaves, and the metapage, are written after pages
	 * numbered after them: the blocks before this one are zeroes until then
	 */
	while (load->written < blkno)
	{
		if (load->zero_page == NULL)
			load->zero_page = palloc0(BLCKSZ);
		smgrextend(smgr, MAIN_FORKNUM, load->written++, (char *) load->zero_page, true);
	}
	PageSetChecksumInplace(page, blkno);
	if (blkno == load->written)
	{
		smgrextend(smgr, MAIN_FORKNUM, blkno, (char *) page, true);
		load->written++;
	}
	else
		smgrwrite(smgr, MAIN_FORKNUM, blkno, (char *) page, true);
	pfree(page);
}

/*
 * Add entry to the page of its level, closing that page first if the entry
 * does not fit (on a leaf, with the room that a heap tid appended to its
 * high key may take), or if the page is full to its fillfactor (the last
 * entry's posting list counted as free: the high key made of it drops it)
 * and holds two entries at least.  posting: the size of entry's posting
 * list.
 */
static void
AddEntry(BtreeLoad *load, LevelPage *level_page, IndexTuple entry, Size posting)
{
	bool		leaf = level_page->level == 0;
	Size		size = MAXALIGN(IndexTupleSize(entry));
	Size		free_space = PageGetFreeSpace(level_page->page);
	OffsetNumber last = level_page->last;

	if (unlikely(size > BTMaxItemSize(level_page->page)))
		_bt_check_third_page(load->index, load->heap, leaf, level_page->page, entry);

	if (free_space < size + (leaf ? MAXALIGN(sizeof(ItemPointerData)) : 0) ||
		(free_space + level_page->last_posting < level_page->keep_free && last > P_FIRSTKEY))
	{
		Page		closed = level_page->page;
		BlockNumber closed_blkno = level_page->blkno;
		ItemId		last_slot = PageGetItemId(closed, last);
		IndexTuple	high_key = (IndexTuple) PageGetItem(closed, last_slot);

		/* The last entry moves to a new page of the level... */
		level_page->page = NewPage(level_page->level);
		level_page->blkno = load->allocated++;
		PutEntry(level_page->page, high_key, ItemIdGetLength(last_slot), P_FIRSTKEY, !leaf);

		/* ... and stays on the closed page as its high key */
		*PageGetItemId(closed, P_HIKEY) = *last_slot;
		ItemIdSetUnused(last_slot);
		((PageHeader) closed)->pd_lower -= sizeof(ItemIdData);
		if (leaf)
		{
			IndexTuple	before = (IndexTuple) PageGetItem(closed,
														  PageGetItemId(closed, OffsetNumberPrev(last)));
			IndexTuple	truncated = _bt_truncate(load->index, before, high_key, load->key);

			if (!PageIndexTupleOverwrite(closed, P_HIKEY, (Item) truncated,
										 IndexTupleSize(truncated)))
				elog(ERROR, "could not add a high key to a page of a btree");
			pfree(truncated);
			high_key = (IndexTuple) PageGetItem(closed, PageGetItemId(closed, P_HIKEY));
		}

		/* The closed page's downlink goes up; the high key is the new page's low key */
		if (level_page->parent == NULL)
			level_page->parent = OpenLevel(load, level_page->level + 1);
		BTreeTupleSetDownLink(level_page->low_key, closed_blkno);
		AddEntry(load, level_page->parent, level_page->low_key, 0);
		pfree(level_page->low_key);
		level_page->low_key = CopyIndexTuple(high_key);

		((BTPageOpaque) PageGetSpecialPointer(closed))->btpo_next = level_page->blkno;
		((BTPageOpaque) PageGetSpecialPointer(level_page->page))->btpo_prev = closed_blkno;
		WritePage(load, closed, closed_blkno);
		last = P_FIRSTKEY;
	}

	if (last == P_HIKEY)
	{
		/* The level's first entry: its first page's low key is minus infinity */
		level_page->low_key = palloc0(sizeof(IndexTupleData));
		level_page->low_key->t_info = sizeof(IndexTupleData);
		BTreeTupleSetNAtts(level_page->low_key, 0, false);
	}
	last = OffsetNumberNext(last);
	PutEntry(level_page->page, entry, size, last, !leaf && last == P_FIRSTKEY);
	level_page->last = last;
	level_page->last_posting = posting;
}

/* Add the posting list gathered (or its one entry) to the leaves */
static void
AddPending(BtreeLoad *load)
{
	BTDedupState pending = load->pending;

	if (pending->nitems == 1)
		AddEntry(load, load->leaf, pending->base, 0);
	else
	{
		IndexTuple	posting = _bt_form_posting(pending->base, pending->htids, pending->nhtids);

		AddEntry(load, load->leaf, posting,
				 IndexTupleSize(posting) - BTreeTupleGetPostingOffset(posting));
		pfree(posting);
	}
	pfree(pending->base);
	pending->base = NULL;
	pending->nmaxitems = 0;
	pending->nhtids = 0;
	pending->nitems = 0;
	pending->phystupsize = 0;
}

/*
 * Begin writing index, which must have no blocks, from entries of heap's
 * rows.  Deduplicates where the btree build would.
 */
BtreeLoad *
BtreeLoadBegin(Relation heap, Relation index)
{
	BtreeLoad  *load = palloc0(sizeof(BtreeLoad));

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	load->heap = heap;
	load->index = index;
	load->key = _bt_mkscankey(index, NULL);
	load->key->allequalimage = _bt_allequalimage(index, false);
	load->nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	load->wal = RelationNeedsWAL(index);
	load->allocated = BTREE_METAPAGE + 1;
	if (load->key->allequalimage && !index->rd_index->indisunique && BTGetDeduplicateItems(index))
	{
		load->pending = palloc0(sizeof(BTDedupStateData));
		load->pending->deduplicate = true;
		/* a tenth of a page, as the btree build's posting lists */
		load->pending->maxpostingsize = MAXALIGN_DOWN(BLCKSZ * 10 / 100) - sizeof(ItemIdData);
		load->pending->htids = palloc(load->pending->maxpostingsize);
	}
	return load;
}

/* Add the next entry, in the index's order (entry is copied) */
void
BtreeLoadAdd(BtreeLoad *load, IndexTuple entry)
{
	BTDedupState pending = load->pending;

	if (load->leaf == NULL)
		load->leaf = OpenLevel(load, 0);
	if (pending == NULL)
	{
		AddEntry(load, load->leaf, entry, 0);
		return;
	}
	if (pending->base != NULL)
	{
		if (_bt_keep_natts_fast(load->index, pending->base, entry) > load->nkeys &&
			_bt_dedup_save_htid(pending, entry))
			return;
		AddPending(load);
	}
	_bt_dedup_start_pending(pending, CopyIndexTuple(entry), InvalidOffsetNumber);
}

/*
 * Close every level's last page (the topmost is the root), write the
 * metapage and sync the file.
 */
void
BtreeLoadEnd(BtreeLoad *load)
{
	BlockNumber root = P_NONE;
	uint32		root_level = 0;
	Page		metapage;

	if (load->pending != NULL && load->pending->base != NULL)
		AddPending(load);
	for (LevelPage *level_page = load->leaf; level_page != NULL; level_page = level_page->parent)
	{
		OffsetNumber entries = PageGetMaxOffsetNumber(level_page->page);

		if (level_page->parent == NULL)
		{
			((BTPageOpaque) PageGetSpecialPointer(level_page->page))->btpo_flags |= BTP_ROOT;
			root = level_page->blkno;
			root_level = level_page->level;
		}
		else
		{
			BTreeTupleSetDownLink(level_page->low_key, level_page->blkno);
			AddEntry(load, level_page->parent, level_page->low_key, 0);
		}

		/* The rightmost page has no high key: its entries move up a slot */
		memmove(PageGetItemId(level_page->page, P_HIKEY),
				PageGetItemId(level_page->page, P_FIRSTKEY),
				sizeof(ItemIdData) * (entries - P_HIKEY));
		((PageHeader) level_page->page)->pd_lower -= sizeof(ItemIdData);
		WritePage(load, level_page->page, level_page->blkno);
	}
	metapage = palloc(BLCKSZ);
	_bt_initmetapage(metapage, root, root_level, load->key->allequalimage);
	WritePage(load, metapage, BTREE_METAPAGE);

	/*
	 * The pages bypassed shared buffers: a checkpoint that began during the
	 * write could not flush them, and a crash after it would not replay
	 * their WAL
	 */
	if (load->wal)
		smgrimmedsync(RelationGetSmgr(load->index), MAIN_FORKNUM);
}
