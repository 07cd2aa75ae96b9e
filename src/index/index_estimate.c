/*-------------------------------------------------------------------------
 *
 * index_estimate.c
 *	  estimate_ddl's measure of a CREATE INDEX job before it runs: the rows
 *	  it indexes, the index's size, its WAL and time, from a build of the
 *	  same index on a sample of the table.
 *
 * The sample is a hundredth of the table's blocks (at least 640, or all of
 * them), in up to SAMPLE_RANGES block ranges spread over the table, or over
 * each partition in proportion to its size for a partitioned table: read by
 * TID range into a temporary table, and the index built on that, in a
 * subtransaction rolled back (nothing stays).  The job builds as CREATE
 * INDEX CONCURRENTLY does: a scan of the table and the build, then a second
 * scan that validates the index; so its time is two reads of the sample's
 * blocks and one build, scaled to the table's blocks; rows and bytes scale
 * with the blocks too, and the WAL is the index's size (an index build on a
 * logged table writes its pages to the WAL).  Our own chunked build
 * (index_chunked.c) reads the table once, and its entries go through the
 * chunk table's WAL before the index's: one read and one build, and twice
 * the index's size of WAL (the entries uncompressed; lz4 makes it less).  A
 * build on the sample runs in one process, where the job's may use parallel
 * workers, or helpers.
 *
 * Nothing runs with more rights than CREATE INDEX would run it with: the
 * caller must own the table, as for CREATE INDEX; the sample is read as the
 * caller (with the caller's privileges and row security, as a query of its
 * own); the copy is made the table owner's before the index is built on
 * it, so that the build runs the index's expressions, predicate and
 * operator classes' support functions (a range type's subtype_diff) as the
 * table's owner under SECURITY_RESTRICTED_OPERATION, as CREATE INDEX and the
 * job run them, and never as the caller (a superuser calling it would hand
 * them its rights).  Of a partitioned table, only the partitions of the
 * table's owner are sampled (CREATE INDEX builds each partition's index as
 * its own owner).  A unique index is measured as a plain one (its
 * uniqueness is the job's to check).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_utilcmd.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "index/index_chunked.h"
#include "index/index_estimate.h"
#include "pg/pg_relation.h"
#include "pg/pg_subxact.h"

#define SAMPLE_RANGES		8		/* per table or partition */

/* The owner of a relation */
static Oid
RelationOwner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * The tables an index on relid is built on and that are sampled: itself, or
 * its partitions of its owner (see above)
 */
static List *
IndexedTables(Oid relid)
{
	List	   *tables = NIL;
	ListCell   *lc;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return list_make1_oid(relid);
	foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
		if ((get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION ||
			 get_rel_relkind(lfirst_oid(lc)) == RELKIND_MATVIEW) &&
			RelationOwner(lfirst_oid(lc)) == RelationOwner(relid))
			tables = lappend_oid(tables, lfirst_oid(lc));
	return tables;
}

/* The table's columns, by name, for a select list */
static char *
ColumnList(Relation table)
{
	TupleDesc	desc = RelationGetDescr(table);
	StringInfoData columns;

	initStringInfo(&columns);
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			appendStringInfo(&columns, "%s%s", columns.len > 0 ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(desc, i)->attname)));
	return columns.data;
}

/*
 * The query of the sample: ranges of each table in proportion to its
 * blocks, their rows (columns), or with counting, the sum of their counts
 * (each range read by a TID range scan alone); with empty, the same ranges
 * of no block; *sampled says how many blocks
 */
static char *
SampleQuery(const char *columns, bool counting, bool empty, List *tables,
			const int64 *table_blocks, int64 total, int64 *sampled)
{
	int64		target = Max(ESTIMATE_SAMPLE_MIN_BLOCKS, total / ESTIMATE_SAMPLE_SHARE);
	const char *between = counting ? " + " : " UNION ALL ";
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	/* no range at all: no row (then the build on the sample is on no row) */
	appendStringInfo(&sql, counting ? "SELECT 0" : "SELECT %s FROM ONLY %s WHERE false",
					 columns, quote_qualified_identifier(get_namespace_name(get_rel_namespace(linitial_oid(tables))),
														 get_rel_name(linitial_oid(tables))));
	*sampled = 0;
	foreach(lc, tables)
	{
		Oid			relid = lfirst_oid(lc);
		int64		blocks = table_blocks[foreach_current_index(lc)];
		int64		share = target >= total ? blocks : Max(1, blocks * target / total);
		int			nranges = (int) Min(SAMPLE_RANGES, share);
		int64		range_blocks;

		if (blocks == 0)
			continue;
		range_blocks = share / nranges;
		for (int i = 0; i < nranges; i++)
		{
			int64		first = (blocks - range_blocks) * i / Max(nranges - 1, 1);

			appendStringInfo(&sql, "%s%sSELECT %s FROM ONLY %s WHERE ctid >= '(%lld,0)' AND ctid < '(%lld,0)'%s",
							 between, counting ? "(" : "", counting ? "count(*)" : columns,
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
														get_rel_name(relid)),
							 (long long) first, (long long) (empty ? first : first + range_blocks),
							 counting ? ")" : "");
			*sampled += range_blocks;
		}
	}
	return sql.data;
}

/* What the build on the sample measured */
typedef struct IndexSample
{
	double		read_seconds;
	double		build_seconds;
	double		rows;			/* in the sample's index */
	double		bytes;			/* of the sample's index */
} IndexSample;

/* A build on a sample (BuildOnSample) */
typedef struct SampleBuild
{
	IndexStmt  *raw_stmt;
	const char *query_string;
	const char *sample_query;	/* the sample's rows */
	const char *read_query;		/* the same blocks, read only */
	const char *read_nothing_query; /* the same ranges, of no block */
	const char *sample_name;
	Oid			owner;			/* the indexed table's owner, whose the copy is made */
	IndexSample *sample;
} SampleBuild;

/* Run a statement with SPI */
static void
RunStatement(const char *sql, int expected)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, false, 0) != expected)
		elog(ERROR, "could not sample the table: %s", sql);
	SPI_finish();
}

/*
 * Copy the sample's query into a temporary table (with no data: empty),
 * read as the caller, then made the indexed table owner's; returns the
 * table
 */
static Oid
CopySample(const SampleBuild *build, const char *name, bool with_data)
{
	Oid			relid;

	RunStatement(psprintf("CREATE TEMPORARY TABLE %s AS %s%s", quote_identifier(name),
						  build->sample_query, with_data ? "" : " WITH NO DATA"),
				 SPI_OK_UTILITY);
	CommandCounterIncrement();
	relid = RelnameGetRelid(name);
	PgRelationSetOwnerTransient(relid, build->owner);
	return relid;
}

/* Build the statement's index (as a plain one) on a temporary table, timed */
static ObjectAddress
BuildTimed(const SampleBuild *build, Oid relid, const char *name, double *seconds)
{
	IndexStmt  *stmt = copyObject(build->raw_stmt);
	instr_time	start;
	instr_time	duration;
	ObjectAddress index;

	stmt->relation = makeRangeVar(NULL, pstrdup(name), -1);
	stmt->idxname = NULL;
	stmt->concurrent = false;
	stmt->unique = false;
	stmt->primary = false;
	stmt->isconstraint = false;
	stmt->if_not_exists = false;
	stmt->tableSpace = NULL;
	stmt = transformIndexStmt(relid, stmt, build->query_string);
	INSTR_TIME_SET_CURRENT(start);
	index = DefineIndex(relid, stmt, InvalidOid, InvalidOid, InvalidOid,
						false, true, false, false, true);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	*seconds = INSTR_TIME_GET_DOUBLE(duration);
	CommandCounterIncrement();
	return index;
}

/* Run a query, timed */
static double
ReadTimed(const char *query)
{
	instr_time	start;
	instr_time	duration;

	INSTR_TIME_SET_CURRENT(start);
	RunStatement(query, SPI_OK_SELECT);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	return INSTR_TIME_GET_DOUBLE(duration);
}

/*
 * Time reading the sample's blocks alone (not the copy: the job makes
 * none), copy it, and time the index's build on it.  What does not grow
 * with the table is left out of both, as the job pays it once: the read
 * less a read of the same ranges of no block (planning, starting the
 * scans), the build less a build on an empty copy (the catalog entries).
 */
static void
CopyAndBuild(void *arg)
{
	SampleBuild *build = arg;
	IndexSample *sample = build->sample;
	char	   *empty_name = psprintf("%s_empty", build->sample_name);
	ObjectAddress index;
	double		empty_seconds;
	HeapTuple	tuple;
	Relation	index_rel;

	/* The copy is ours, not a job: plain SQL (rolled back with the subtransaction) */
	(void) set_config_option("background_ddl", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	RunStatement(build->read_nothing_query, SPI_OK_SELECT);
	sample->read_seconds = Max(0, ReadTimed(build->read_query) - ReadTimed(build->read_nothing_query));

	(void) BuildTimed(build, CopySample(build, empty_name, false), empty_name, &empty_seconds);
	index = BuildTimed(build, CopySample(build, build->sample_name, true), build->sample_name,
					   &sample->build_seconds);
	sample->build_seconds = Max(0, sample->build_seconds - empty_seconds);

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(index.objectId));
	if (HeapTupleIsValid(tuple))
	{
		sample->rows = Max(0, ((Form_pg_class) GETSTRUCT(tuple))->reltuples);
		ReleaseSysCache(tuple);
	}
	index_rel = relation_open(index.objectId, AccessShareLock);
	sample->bytes = (double) RelationGetNumberOfBlocks(index_rel) * BLCKSZ;
	relation_close(index_rel, AccessShareLock);
}

/*
 * Copy the sample and build the index on it, in a subtransaction rolled
 * back, timing both
 */
static void
BuildOnSample(IndexStmt *raw_stmt, const char *query_string, const char *sample_query,
			  const char *read_query, const char *read_nothing_query, const char *sample_name,
			  Oid owner, IndexSample *sample)
{
	SampleBuild build = {raw_stmt, query_string, sample_query, read_query, read_nothing_query,
	sample_name, owner, sample};

	memset(sample, 0, sizeof(IndexSample));
	PgRunRolledBack(CopyAndBuild, &build);
}

/*
 * Estimate the job of a CREATE INDEX statement (raw), for the calling role,
 * who must own the table, as CREATE INDEX checks.  Caller is in a
 * transaction with an active snapshot; sets all but the strategy.
 */
void
IndexJobEstimate(IndexStmt *raw_stmt, const char *query_string, JobEstimate *estimate)
{
	Oid			relid = RangeVarGetRelidExtended(raw_stmt->relation, AccessShareLock, 0,
												 RangeVarCallbackOwnsRelation, NULL);
	char		relkind = get_rel_relkind(relid);
	Relation	table;
	List	   *tables;
	int64	   *table_blocks;
	char	   *columns;
	char	   *sample_name = psprintf("background_ddl_estimate_%d", MyProcPid);
	char	   *sample_query;
	char	   *read_query;
	char	   *read_nothing_query;
	IndexSample sample;
	double		scale;
	ListCell   *lc;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot estimate an index on \"%s\"", get_rel_name(relid)),
				 errdetail("Only tables, partitioned tables and materialized views have indexes that background DDL builds.")));
	memset(estimate, 0, sizeof(JobEstimate));
	tables = IndexedTables(relid);
	table_blocks = palloc0(sizeof(int64) * Max(1, list_length(tables)));
	foreach(lc, tables)
	{
		Relation	rel = relation_open(lfirst_oid(lc), AccessShareLock);

		table_blocks[foreach_current_index(lc)] = RelationGetNumberOfBlocks(rel);
		estimate->total_blocks += table_blocks[foreach_current_index(lc)];
		relation_close(rel, NoLock);
	}
	estimate->locks = psprintf("SHARE UPDATE EXCLUSIVE on \"%s\"%s for the whole build, as CREATE INDEX "
							   "CONCURRENTLY takes it (writers go on; schema changes wait); it waits for "
							   "the transactions older than each of its phases",
							   get_rel_name(relid),
							   relkind == RELKIND_PARTITIONED_TABLE ?
							   " and on each partition while its index is built" : "");
	if (tables == NIL || estimate->total_blocks == 0)
		return;

	table = table_open(relid, NoLock);
	columns = ColumnList(table);
	table_close(table, NoLock);
	sample_query = SampleQuery(columns, false, false, tables, table_blocks,
							   estimate->total_blocks, &estimate->sampled_blocks);
	read_query = SampleQuery(NULL, true, false, tables, table_blocks, estimate->total_blocks,
							 &estimate->sampled_blocks);
	read_nothing_query = SampleQuery(NULL, true, true, tables, table_blocks,
									 estimate->total_blocks, &estimate->sampled_blocks);
	BuildOnSample(raw_stmt, query_string, sample_query, read_query, read_nothing_query,
				  sample_name, RelationOwner(relid), &sample);
	scale = estimate->sampled_blocks > 0 ?
		(double) estimate->total_blocks / estimate->sampled_blocks : 0;
	estimate->rows = (int64) (sample.rows * scale);
	estimate->bytes = (int64) (sample.bytes * scale);
	if (IndexChunkedBuilds(relid, raw_stmt))
	{
		estimate->wal_bytes = 2 * estimate->bytes;
		estimate->seconds = (sample.read_seconds + sample.build_seconds) * scale;
	}
	else
	{
		estimate->wal_bytes = estimate->bytes;
		estimate->seconds = (2 * sample.read_seconds + sample.build_seconds) * scale;
	}
	elog(DEBUG1, "estimate_ddl: %lld of %lld blocks read in %.3f s, the index built on them in %.3f s",
		 (long long) estimate->sampled_blocks, (long long) estimate->total_blocks,
		 sample.read_seconds, sample.build_seconds);
}
