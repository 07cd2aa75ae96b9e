/*-------------------------------------------------------------------------
 *
 * query_partial_agg.c
 *	  An aggregating or DISTINCT query as per-chunk partial rows and a
 *	  combine.
 *
 * SELECT account, count(*), sum(amount), max(ts) FROM events GROUP BY account
 * is computed in chunks of its driving table like a plain query
 * (query_decompose.c), except that a chunk's rows are partial: the chunk query
 * groups the chunk's rows by the same keys and keeps, per group, values
 * from which the aggregate over all chunks follows exactly:
 *
 *	aggregate				partial (per chunk)		combine (over all chunks)
 *	count(x), count(*)		count					coalesce(sum(p)::bigint, 0)
 *	sum(x)					sum(x)					sum(p), cast back to sum's type
 *	min, max, bool_and, bool_or, every, bit_and, bit_or, bit_xor
 *							the aggregate			the same aggregate of p
 *	avg(integer or numeric)	sum(x), count(x)		sum(p1)::numeric / sum(p2)::numeric
 *
 * Integer and numeric sums are exact in any order, and avg is what
 * PostgreSQL's own avg computes: the exact sum divided by the count, with
 * numeric division.  A sum or average of floating-point values depends on
 * the order of the additions, which a plan (parallel or not) does not fix;
 * such queries run in one batch, as do aggregates with DISTINCT, ORDER BY or
 * ordered sets, and aggregates other than the built-in ones above.
 *
 * A DISTINCT query is the same with no aggregate: a chunk keeps its
 * distinct rows, the combine the distinct rows of all chunks.  DISTINCT ON
 * (with its ORDER BY) too: a chunk keeps its first row of each key, the
 * combine the first of those, which is the first of all.
 *
 * The partial rows go to the job's staging relation (one per job, in the
 * extension's schema, created and dropped by the worker, owned by the role
 * whose query fills it), each with its source in a last column: the first
 * tuple id of the block range it was computed from (a chunk, or a unit of
 * the catch-up, query_catchup.c), indexed, so that a range's rows can be
 * replaced.  The cut-over
 * computes the result with the combine query: the job's query with its
 * relations replaced by the staging relation, each group key by its
 * staging column and each aggregate by its combine expression; HAVING and
 * the output expressions stay as they are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "catalog/toasting.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "executor/tuptable.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "pg/pg_relation.h"
#include "query/query_partial_agg.h"

/* How the partials of one aggregate combine */
typedef enum CombineRule
{
	COMBINE_SAME,				/* the aggregate of its own partials */
	COMBINE_SUM,				/* sum of the partials, cast to the result type */
	COMBINE_COUNT,				/* COMBINE_SUM, and 0 for no rows */
	COMBINE_AVG					/* sum of sums / sum of counts */
} CombineRule;

/* State of the split of one query */
typedef struct SplitContext
{
	List	   *keys;			/* group key expressions: staging columns 1..n */
	List	   *partials;		/* partial aggregates: the staging columns after them */
	char	   *refusal;		/* why the query cannot be split, or NULL */
} SplitContext;

#define STAGING_RTINDEX 1

/* A built-in aggregate (or other function) of pg_catalog by name and argument type */
static Oid
CatalogFunction(const char *name, Oid argtype)
{
	return LookupFuncName(list_make2(makeString("pg_catalog"), makeString(pstrdup(name))),
						  1, &argtype, false);
}

/* How an aggregate's partials combine, or false (with *refusal) if they cannot */
static bool
AggregateCombineRule(Aggref *aggref, CombineRule *rule, char **refusal)
{
	char	   *name = get_func_name(aggref->aggfnoid);
	Oid			argtype = aggref->aggargtypes != NIL ? linitial_oid(aggref->aggargtypes) : InvalidOid;
	bool		floating = argtype == FLOAT4OID || argtype == FLOAT8OID;

	if (aggref->aggkind != AGGKIND_NORMAL)
		*refusal = psprintf("%s() is an ordered-set aggregate", name);
	else if (aggref->aggdistinct != NIL)
		*refusal = psprintf("%s(DISTINCT ...) needs every value at once", name);
	else if (aggref->aggorder != NIL)
		*refusal = psprintf("%s(... ORDER BY ...) depends on the order of all values", name);
	else if (get_func_namespace(aggref->aggfnoid) != PG_CATALOG_NAMESPACE)
		*refusal = psprintf("aggregate %s() is not built in", name);
	else if (strcmp(name, "count") == 0)
		*rule = COMBINE_COUNT;
	else if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0 ||
			 strcmp(name, "bool_and") == 0 || strcmp(name, "bool_or") == 0 ||
			 strcmp(name, "every") == 0 || strcmp(name, "bit_and") == 0 ||
			 strcmp(name, "bit_or") == 0 || strcmp(name, "bit_xor") == 0)
		*rule = COMBINE_SAME;
	else if ((strcmp(name, "sum") == 0 || strcmp(name, "avg") == 0) && floating)
		*refusal = psprintf("%s() of floating-point values depends on the order of the additions",
							name);
	else if (strcmp(name, "sum") == 0)
		*rule = COMBINE_SUM;
	else if (strcmp(name, "avg") == 0 &&
			 (argtype == INT2OID || argtype == INT4OID || argtype == INT8OID ||
			  argtype == NUMERICOID))
		*rule = COMBINE_AVG;
	else
		*refusal = psprintf("aggregate %s(%s) cannot be computed in parts", name,
							format_type_be(argtype));
	return *refusal == NULL;
}

/* An aggregate call of one plain argument (no DISTINCT, ORDER BY or FILTER) */
static Aggref *
MakeAggregate(Oid aggfnoid, Expr *arg, Oid collation)
{
	Aggref	   *aggref = makeNode(Aggref);

	aggref->aggfnoid = aggfnoid;
	aggref->aggtype = get_func_rettype(aggfnoid);
	aggref->aggcollid = type_is_collatable(aggref->aggtype) ? collation : InvalidOid;
	aggref->inputcollid = collation;
	aggref->aggargtypes = list_make1_oid(exprType((Node *) arg));
	aggref->args = list_make1(makeTargetEntry(arg, 1, NULL, false));
	aggref->aggkind = AGGKIND_NORMAL;
	aggref->aggsplit = AGGSPLIT_SIMPLE;
	aggref->aggno = -1;
	aggref->aggtransno = -1;
	aggref->location = -1;
	return aggref;
}

/* The same aggregate call with another argument (and no FILTER, no star) */
static Aggref *
ReapplyAggregate(Aggref *aggref, Expr *arg)
{
	Aggref	   *copy = copyObject(aggref);

	copy->args = list_make1(makeTargetEntry(arg, 1, NULL, false));
	copy->aggargtypes = list_make1_oid(exprType((Node *) arg));
	copy->aggfilter = NULL;
	copy->aggstar = false;
	return copy;
}

/* Append a partial aggregate; returns the staging column that will hold it */
static Var *
AddPartial(SplitContext *context, Aggref *partial)
{
	context->partials = lappend(context->partials, partial);
	return makeVar(STAGING_RTINDEX,
				   list_length(context->keys) + list_length(context->partials),
				   partial->aggtype, -1, partial->aggcollid, 0);
}

/* sum() of a staging column */
static Expr *
SumOf(Var *partial)
{
	return (Expr *) MakeAggregate(CatalogFunction("sum", partial->vartype), (Expr *) partial,
								  InvalidOid);
}

static Expr *
CastTo(Expr *expr, Oid type)
{
	Node	   *cast = coerce_to_target_type(NULL, (Node *) expr, exprType((Node *) expr),
											 type, -1, COERCION_EXPLICIT,
											 COERCE_EXPLICIT_CAST, -1);

	if (cast == NULL)
		elog(ERROR, "no cast from %s to %s", format_type_be(exprType((Node *) expr)),
			 format_type_be(type));
	return (Expr *) cast;
}

/*
 * Split one aggregate call: add its partial aggregates to the context and
 * return the expression that combines them over the staging relation.
 */
static Node *
SplitAggregate(Aggref *aggref, SplitContext *context)
{
	CombineRule rule = COMBINE_SAME;
	char	   *refusal = NULL;

	if (!AggregateCombineRule(aggref, &rule, &refusal))
	{
		if (context->refusal == NULL)
			context->refusal = refusal;
		return (Node *) aggref;
	}
	if (rule == COMBINE_SAME)
		return (Node *) ReapplyAggregate(aggref, (Expr *) AddPartial(context, aggref));
	if (rule == COMBINE_SUM || rule == COMBINE_COUNT)
	{
		Expr	   *sum = SumOf(AddPartial(context, aggref));

		if (exprType((Node *) sum) != aggref->aggtype)
			sum = CastTo(sum, aggref->aggtype);
		if (rule == COMBINE_COUNT)
		{
			CoalesceExpr *coalesce = makeNode(CoalesceExpr);

			coalesce->coalescetype = INT8OID;
			coalesce->args = list_make2(sum, makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
													   Int64GetDatum(0), false, FLOAT8PASSBYVAL));
			coalesce->location = -1;
			return (Node *) coalesce;
		}
		return (Node *) sum;
	}
	else
	{
		Expr	   *arg = linitial_node(TargetEntry, aggref->args)->expr;
		Oid			argtype = exprType((Node *) arg);
		Aggref	   *sum = MakeAggregate(CatalogFunction("sum", argtype), arg, InvalidOid);
		Aggref	   *count = MakeAggregate(CatalogFunction("count", ANYOID), arg, InvalidOid);
		Expr	   *sums;
		Expr	   *counts;
		Oid			divide;

		sum->aggfilter = copyObject(aggref->aggfilter);
		count->aggfilter = copyObject(aggref->aggfilter);
		count->aggargtypes = list_make1_oid(argtype);
		sums = CastTo(SumOf(AddPartial(context, sum)), NUMERICOID);
		counts = CastTo(SumOf(AddPartial(context, count)), NUMERICOID);
		divide = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString("/")),
								  NUMERICOID, NUMERICOID);
		return (Node *) make_opclause(divide, NUMERICOID, false, sums, counts,
									  InvalidOid, InvalidOid);
	}
}

/*
 * The combine form of an expression of the query's output or HAVING: group
 * keys become staging columns, aggregates their combine expressions.
 */
static Node *
SplitMutator(Node *node, SplitContext *context)
{
	ListCell   *lc;
	int			column = 0;

	if (node == NULL)
		return NULL;
	foreach(lc, context->keys)
	{
		Expr	   *key = lfirst(lc);

		column++;
		if (equal(node, key))
			return (Node *) makeVar(STAGING_RTINDEX, column, exprType((Node *) key),
									exprTypmod((Node *) key), exprCollation((Node *) key), 0);
	}
	if (IsA(node, Aggref))
		return SplitAggregate((Aggref *) node, context);
	if (IsA(node, Var) && context->refusal == NULL)
		context->refusal = "the query outputs a column that is not grouped";
	if (IsA(node, GroupingFunc) && context->refusal == NULL)
		context->refusal = "the query uses GROUPING()";
	return expression_tree_mutator(node, SplitMutator, context);
}

/*
 * Split a query into the context's keys and partials; returns the combine
 * form of its target list (and of HAVING, in *having).  context->refusal
 * says why it cannot be split.
 */
static List *
SplitQuery(Query *query, SplitContext *context, Node **having)
{
	List	   *key_clauses = query->groupClause != NIL ? query->groupClause : query->distinctClause;
	List	   *combine_tlist = NIL;
	ListCell   *lc;

	memset(context, 0, sizeof(SplitContext));
	if (query->groupingSets != NIL)
		context->refusal = "the query uses grouping sets";
	else if (query->distinctClause != NIL && (query->hasAggs || query->groupClause != NIL))
		context->refusal = "the query uses DISTINCT on aggregated rows";
	if (context->refusal != NULL)
		return NIL;
	if (query->hasDistinctOn)
	{
		/*
		 * Every output column (the ORDER BY ones too) is a staging column:
		 * each chunk keeps its first row of each DISTINCT ON key in the
		 * query's order, and the combine the first of those
		 */
		foreach(lc, query->targetList)
			context->keys = lappend(context->keys, ((TargetEntry *) lfirst(lc))->expr);
	}
	else
	{
		foreach(lc, key_clauses)
			context->keys = lappend(context->keys,
									get_sortgroupclause_expr(lfirst(lc), query->targetList));
	}
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = flatCopyTargetEntry(lfirst(lc));

		tle->expr = (Expr *) SplitMutator((Node *) tle->expr, context);
		combine_tlist = lappend(combine_tlist, tle);
	}
	*having = SplitMutator(query->havingQual, context);
	return combine_tlist;
}

/* Is the query one that partial aggregation computes (it aggregates or is DISTINCT)? */
bool
QueryPartialAggApplies(Query *query)
{
	return query->hasAggs || query->groupClause != NIL || query->groupingSets != NIL ||
		query->havingQual != NULL || query->distinctClause != NIL;
}

/* Why an aggregating or DISTINCT query cannot be computed in parts, or NULL */
char *
QueryPartialAggRefusal(Query *query)
{
	SplitContext context;
	Node	   *having;

	(void) SplitQuery(query, &context, &having);
	return context.refusal;
}

/*
 * The query a chunk runs: the same FROM and WHERE, grouped the same way,
 * returning the group keys and then the partial aggregates (the staging
 * relation's columns).  Caller checked QueryPartialAggRefusal.
 */
Query *
QueryPartialAggChunk(Query *query)
{
	Query	   *chunk_query = copyObject(query);
	SplitContext context;
	Node	   *having;
	ListCell   *lc;
	AttrNumber	resno = 0;

	(void) SplitQuery(query, &context, &having);
	Assert(context.refusal == NULL);
	/*
	 * The keys first (for DISTINCT ON, every column), keeping their
	 * sort-group references: the clauses point to them
	 */
	chunk_query->targetList = NIL;
	foreach(lc, query->hasDistinctOn ? query->targetList :
			query->groupClause != NIL ? query->groupClause : query->distinctClause)
	{
		TargetEntry *key = flatCopyTargetEntry(query->hasDistinctOn ? lfirst(lc) :
											   get_sortgroupclause_tle(lfirst(lc),
																	   query->targetList));

		key->resno = ++resno;
		key->resname = psprintf("key%d", resno);
		key->resjunk = false;
		chunk_query->targetList = lappend(chunk_query->targetList, key);
	}
	foreach(lc, context.partials)
	{
		resno++;
		chunk_query->targetList =
			lappend(chunk_query->targetList,
					makeTargetEntry(lfirst(lc), resno, psprintf("partial%d", resno), false));
	}
	chunk_query->havingQual = NULL;
	chunk_query->hasAggs = context.partials != NIL;
	return chunk_query;
}

/*
 * The query that combines the staging relation's rows into the result.
 * Takes ACCESS SHARE on the staging relation.  Caller checked
 * QueryPartialAggRefusal.
 */
Query *
QueryPartialAggCombine(Query *query, Oid staging_oid)
{
	Query	   *combine = copyObject(query);
	SplitContext context;
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	RangeTblRef *rtr = makeNode(RangeTblRef);
	Relation	staging;
	List	   *colnames = NIL;

	staging = table_open(staging_oid, AccessShareLock);
	for (int i = 0; i < RelationGetDescr(staging)->natts; i++)
		colnames = lappend(colnames,
						   makeString(pstrdup(NameStr(TupleDescAttr(RelationGetDescr(staging), i)->attname))));
	rte->rtekind = RTE_RELATION;
	rte->relid = staging_oid;
	rte->relkind = RELKIND_RELATION;
	rte->rellockmode = AccessShareLock;
	rte->eref = makeAlias(RelationGetRelationName(staging), colnames);
	rte->inFromCl = true;
	/* Ours, hidden: read without a privilege check, like the job's catalog */
	rte->requiredPerms = 0;
	table_close(staging, NoLock);

	combine->targetList = SplitQuery(query, &context, &combine->havingQual);
	Assert(context.refusal == NULL);
	rtr->rtindex = STAGING_RTINDEX;
	combine->rtable = list_make1(rte);
	combine->jointree = makeFromExpr(list_make1(rtr), NULL);
	combine->rowMarks = NIL;
	return combine;
}

/*
 * Create the staging relation of a job, for the rows of its chunk query:
 * background_ddl.partial_<job id>.  It holds the user's data, of the user's
 * types: it belongs to owner, the role whose query produces the rows (ANALYZE
 * and autovacuum run a type's code, a range's subtype_diff for one, as the
 * relation's owner), and lives in tablespace (the result's), which owner
 * must be allowed to create in, as for any relation it would create.  It is
 * created as the catalog role, in our schema, where nobody else can reach
 * it.  Without with_source it has only the query's columns, and no index,
 * as a job's content relation (estimate_ddl's sample of a job that is not
 * partial aggregation).  Caller is in a transaction.  Returns its OID.
 */
Oid
QueryPartialAggCreateStaging(int64 job_id, Query *chunk_query, Oid owner, Oid tablespace,
							 bool with_source)
{
	CatalogAccess access;
	CreateStmt *create = makeNode(CreateStmt);
	IndexStmt  *index = makeNode(IndexStmt);
	IndexElem  *source = makeNode(IndexElem);
	ListCell   *lc;
	ObjectAddress address;

	if (OidIsValid(tablespace) && tablespace != MyDatabaseTableSpace)
	{
		AclResult	aclresult = pg_tablespace_aclcheck(tablespace, owner, ACL_CREATE);

		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_TABLESPACE, get_tablespace_name(tablespace));
		create->tablespacename = get_tablespace_name(tablespace);
	}

	foreach(lc, chunk_query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		ColumnDef  *column = makeColumnDef(tle->resname, exprType((Node *) tle->expr),
										   exprTypmod((Node *) tle->expr),
										   exprCollation((Node *) tle->expr));

		create->tableElts = lappend(create->tableElts, column);
	}
	if (with_source)
		create->tableElts = lappend(create->tableElts,
									makeColumnDef(STAGING_SOURCE_COLUMN, TIDOID, -1, InvalidOid));
	create->relation = makeRangeVar(get_namespace_name(CatalogRequire()->schema_oid),
									psprintf("partial_%lld", (long long) job_id), -1);
	create->oncommit = ONCOMMIT_NOOP;
	create->if_not_exists = false;

	CatalogAccessBegin(&access);
	address = DefineRelation(create, RELKIND_RELATION, owner, NULL, NULL);
	CommandCounterIncrement();
	NewRelationCreateToastTable(address.objectId, (Datum) 0);
	CommandCounterIncrement();
	if (with_source)
	{
		index->idxname = psprintf("partial_%lld_source", (long long) job_id);
		index->relation = create->relation;
		index->accessMethod = "btree";
		index->tableSpace = create->tablespacename;
		source->name = STAGING_SOURCE_COLUMN;
		source->ordering = SORTBY_DEFAULT;
		source->nulls_ordering = SORTBY_NULLS_DEFAULT;
		index->indexParams = list_make1(source);
		(void) DefineIndex(address.objectId, index, InvalidOid, InvalidOid, InvalidOid, false,
						   false, false, false, true);
		CommandCounterIncrement();
	}
	PgRelationSetDecoded(address.objectId, false);
	PgRelationSetExtensionMember(address.objectId, CatalogRequire()->extension_oid, true);
	CatalogAccessEnd(&access);
	return address.objectId;
}

/*
 * Delete the staging rows computed from the block ranges that start at the
 * given tuple ids (see QueryBackfillRanges), found through the index on
 * their source column; returns how many.  Caller is in a transaction, with
 * an active snapshot, and holds RowExclusiveLock on the staging relation.
 */
int64
QueryPartialAggDeleteSources(Relation staging, ItemPointer sources, int nsources)
{
	Relation	index = index_open(linitial_oid(RelationGetIndexList(staging)), AccessShareLock);
	TupleTableSlot *slot = table_slot_create(staging, NULL);
	Snapshot	snapshot = GetActiveSnapshot();
	int64		deleted = 0;

	for (int i = 0; i < nsources; i++)
	{
		ScanKeyData key;
		IndexScanDesc scan;

		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TIDEQ, PointerGetDatum(&sources[i]));
		scan = index_beginscan(staging, index, snapshot, 1, 0);
		index_rescan(scan, &key, 1, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			simple_table_tuple_delete(staging, &slot->tts_tid, snapshot);
			deleted++;
		}
		index_endscan(scan);
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	return deleted;
}

/* Drop a job's staging relation, if it still exists.  Caller is in a transaction. */
void
QueryPartialAggDropStaging(Oid staging_oid)
{
	ObjectAddress address = {RelationRelationId, staging_oid, 0};
	CatalogAccess access;

	if (!OidIsValid(staging_oid))
		return;
	LockRelationOid(staging_oid, AccessExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(staging_oid)))
		return;
	CatalogAccessBegin(&access);
	performDeletion(&address, DROP_RESTRICT, PERFORM_DELETION_INTERNAL | PERFORM_DELETION_SKIP_EXTENSIONS);
	CatalogAccessEnd(&access);
}
