/*-------------------------------------------------------------------------
 *
 * pg_citus.c
 *	  Tables of the Citus distributed engine, recognised at run time.
 *
 * On a Citus coordinator (or a worker node with synced metadata) a
 * distributed or reference table is an empty shell: its rows live in shards
 * on the worker nodes, and Citus's own planner and utility hook turn a
 * statement on it into statements on the shards.  A job that read the shell
 * or built an index on it would succeed with an empty result or an index on
 * no shard.  So a statement of a job kind that touches a Citus table runs
 * in the session, exactly as Citus runs it.
 *
 * Citus is found by name, never linked: the extension "citus" installed in
 * this database, and its metadata table pg_catalog.pg_dist_partition, which
 * lists every Citus table (distributed, reference, or Citus local) by OID.
 * Without Citus every function here answers no at the cost of one syscache
 * lookup.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteHandler.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "citus/pg_citus.h"

#define CITUS_EXTENSION_NAME		"citus"
#define CITUS_PARTITION_TABLE		"pg_dist_partition"
#define CITUS_PARTITION_RELID_INDEX	"pg_dist_partition_logical_relid_index"

/*
 * Citus's table of distributed tables, if Citus is installed here (and the
 * table is the extension's own), else InvalidOid.
 */
static Oid
CitusPartitionTable(void)
{
	Oid			extension_oid = get_extension_oid(CITUS_EXTENSION_NAME, true);
	Oid			relid;

	if (!OidIsValid(extension_oid))
		return InvalidOid;
	relid = get_relname_relid(CITUS_PARTITION_TABLE, PG_CATALOG_NAMESPACE);
	if (!OidIsValid(relid) ||
		getExtensionOfObject(RelationRelationId, relid) != extension_oid)
		return InvalidOid;
	return relid;
}

/* Is Citus installed in this database? */
bool
PgCitusInstalled(void)
{
	return OidIsValid(CitusPartitionTable());
}

/* Is relid listed in Citus's table of distributed tables (partition_relid)? */
static bool
ListedByCitus(Oid partition_relid, Oid relid)
{
	Relation	partition = table_open(partition_relid, AccessShareLock);
	Oid			index_oid = get_relname_relid(CITUS_PARTITION_RELID_INDEX,
											  PG_CATALOG_NAMESPACE);
	ScanKeyData key;
	SysScanDesc scan;
	bool		listed;

	/* logicalrelid, a regclass, is the first column */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(partition, index_oid, OidIsValid(index_oid), NULL, 1, &key);
	listed = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(partition, AccessShareLock);
	return listed;
}

/* Is this relation a Citus table (distributed, reference or Citus local)? */
bool
PgCitusTable(Oid relid)
{
	Oid			partition_relid;

	if (!OidIsValid(relid))
		return false;
	partition_relid = CitusPartitionTable();
	return OidIsValid(partition_relid) && ListedByCitus(partition_relid, relid);
}

typedef struct CitusTableSearch
{
	Oid			partition_relid;
	Oid			found;
} CitusTableSearch;

static bool
CitusTableWalker(Node *node, CitusTableSearch *search)
{
	if (node == NULL || OidIsValid(search->found))
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION && ListedByCitus(search->partition_relid, rte->relid))
			search->found = rte->relid;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, CitusTableWalker, search,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, CitusTableWalker, search);
}

/*
 * The first Citus table an analysed query reads, views expanded, or
 * InvalidOid.  Caller holds the locks the query's analysis took.
 */
Oid
PgCitusTableInQuery(Query *query)
{
	CitusTableSearch search = {CitusPartitionTable(), InvalidOid};
	ListCell   *lc;

	if (!OidIsValid(search.partition_relid))
		return InvalidOid;
	foreach(lc, QueryRewrite(copyObject(query)))
		(void) CitusTableWalker(lfirst(lc), &search);
	return search.found;
}

/* The reason a statement on a Citus table runs in the session, for a NOTICE */
const char *
PgCitusInSessionReason(Oid relid)
{
	return psprintf("\"%s\" is a Citus table: Citus runs the statement on its shards.",
					get_rel_name(relid));
}

/*
 * How Citus distributes a table: CITUS_HASH_DISTRIBUTED (with in
 * *column_name its distribution column), CITUS_REFERENCE, or 0 (not a Citus
 * table, or another kind: Citus local, append or range distributed)
 */
char
PgCitusDistribution(Oid relid, char **column_name)
{
	Oid			argtypes[] = {OIDOID};
	Datum		values[] = {ObjectIdGetDatum(relid)};
	MemoryContext caller = CurrentMemoryContext;
	char		distribution = 0;

	*column_name = NULL;
	if (!PgCitusTable(relid))
		return 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT partmethod, repmodel, "
							  "CASE WHEN partmethod = 'h' "
							  "THEN pg_catalog.column_to_column_name(logicalrelid, partkey) END "
							  "FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1",
							  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read how Citus distributes \"%s\"", get_rel_name(relid));
	if (SPI_processed == 1)
	{
		char	   *method = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *model = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		char	   *column = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);

		if (method[0] == 'h' && column != NULL)
		{
			distribution = CITUS_HASH_DISTRIBUTED;
			*column_name = MemoryContextStrdup(caller, column);
		}
		else if (method[0] == 'n' && model[0] == 't')
			distribution = CITUS_REFERENCE;
	}
	SPI_finish();
	return distribution;
}
