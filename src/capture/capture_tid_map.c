/*-------------------------------------------------------------------------
 *
 * capture_tid_map.c
 *	  The compact stored form of a chunk's (source, output) tuple id pairs,
 *	  and their sort.
 *
 * Every chunk records, in the transaction that writes its rows, which
 * source row produced each output row: 12 bytes a row as raw tuple ids,
 * which made storing the map cost a fifth of the backfill (and twice that
 * with TOAST compression).  The
 * pairs are sorted by source, and both sides mostly advance by small steps
 * (the driving table is scanned in physical order, the output is appended),
 * so we store each pair as four variable-length integers: the source block
 * as a delta from the previous one, its offset, the output block as a
 * (zigzag-signed) delta, its offset.  A typical pair takes 4 bytes.
 *
 * Sorting a chunk's pairs took a third of a CLUSTER chunk's time through
 * qsort's comparison function (the rows come in an index's order, their
 * sources scattered); TidPairsSort inlines it (sort_template.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "capture/capture_tid_map.h"

/* A tuple id as one integer, in ItemPointerCompare's order */
static inline uint64
TidKey(const ItemPointerData *tid)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

static inline int
TidPairOrder(const TidPair *a, const TidPair *b)
{
	uint64		a_key = TidKey(&a->source);
	uint64		b_key = TidKey(&b->source);

	if (a_key == b_key)
	{
		a_key = TidKey(&a->output);
		b_key = TidKey(&b->output);
	}
	return a_key < b_key ? -1 : a_key > b_key ? 1 : 0;
}

#define ST_SORT TidPairsSortInline
#define ST_ELEMENT_TYPE TidPair
#define ST_COMPARE(a, b) TidPairOrder(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Sort pairs by source, then output */
void
TidPairsSort(TidPair *pairs, size_t npairs)
{
	TidPairsSortInline(pairs, npairs);
}

static char *
PutVarint(char *out, uint64 value)
{
	while (value >= 0x80)
	{
		*out++ = (char) ((value & 0x7F) | 0x80);
		value >>= 7;
	}
	*out++ = (char) value;
	return out;
}

static const char *
GetVarint(const char *in, const char *end, uint64 *value)
{
	uint64		result = 0;
	int			shift = 0;

	while (in < end)
	{
		uint8		byte = (uint8) *in++;

		result |= (uint64) (byte & 0x7F) << shift;
		if ((byte & 0x80) == 0)
		{
			*value = result;
			return in;
		}
		shift += 7;
	}
	elog(ERROR, "background_ddl tid map is truncated");
	return NULL;				/* keep compiler quiet */
}

static uint64
ZigZag(int64 value)
{
	return ((uint64) value << 1) ^ (uint64) (value >> 63);
}

static int64
UnZigZag(uint64 value)
{
	return (int64) (value >> 1) ^ -(int64) (value & 1);
}

/* Encode pairs sorted by source tuple id */
bytea *
CaptureTidMapEncode(const TidPair *pairs, int npairs)
{
	/* At most 10 bytes a varint, 4 varints a pair, plus the count */
	bytea	   *map = palloc(VARHDRSZ + 10 + (Size) npairs * 40);
	char	   *out = VARDATA(map);
	BlockNumber source_block = 0;
	BlockNumber output_block = 0;

	out = PutVarint(out, (uint64) npairs);
	for (int i = 0; i < npairs; i++)
	{
		BlockNumber block = ItemPointerGetBlockNumber(&pairs[i].source);

		Assert(block >= source_block);
		out = PutVarint(out, block - source_block);
		out = PutVarint(out, ItemPointerGetOffsetNumber(&pairs[i].source));
		source_block = block;
		block = ItemPointerGetBlockNumber(&pairs[i].output);
		out = PutVarint(out, ZigZag((int64) block - (int64) output_block));
		out = PutVarint(out, ItemPointerGetOffsetNumber(&pairs[i].output));
		output_block = block;
	}
	SET_VARSIZE(map, out - (char *) map);
	return map;
}

TidPair *
CaptureTidMapDecode(const bytea *map, int *npairs)
{
	const char *in = VARDATA_ANY(map);
	const char *end = in + VARSIZE_ANY_EXHDR(map);
	uint64		count;
	uint64		value;
	TidPair    *pairs;
	BlockNumber source_block = 0;
	BlockNumber output_block = 0;

	in = GetVarint(in, end, &count);
	pairs = palloc(sizeof(TidPair) * Max(count, 1));
	for (uint64 i = 0; i < count; i++)
	{
		in = GetVarint(in, end, &value);
		source_block += (BlockNumber) value;
		in = GetVarint(in, end, &value);
		ItemPointerSet(&pairs[i].source, source_block, (OffsetNumber) value);
		in = GetVarint(in, end, &value);
		output_block = (BlockNumber) ((int64) output_block + UnZigZag(value));
		in = GetVarint(in, end, &value);
		ItemPointerSet(&pairs[i].output, output_block, (OffsetNumber) value);
	}
	*npairs = (int) count;
	return pairs;
}
