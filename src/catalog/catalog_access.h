/*-------------------------------------------------------------------------
 *
 * catalog_access.h
 *	  Finding the extension's catalog, and running statements on it safely.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CATALOG_ACCESS_H
#define BGDDL_CATALOG_ACCESS_H

#include "executor/tuptable.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

/* The installed extension and the members of it that our code uses */
typedef struct BgddlCatalog
{
	Oid			extension_oid;
	Oid			schema_oid;
	Oid			job_relid;
	Oid			capture_relid;
	Oid			chunk_relid;
	Oid			dirty_relid;
	Oid			recomputed_relid;
	Oid			capture_function_oid;
} BgddlCatalog;

extern void CatalogCacheInstall(void);
extern const BgddlCatalog *CatalogLookup(void);
extern const BgddlCatalog *CatalogRequire(void);
extern bool CatalogIsScriptRelation(Oid relnamespace, const char *relname, char relkind);

/* Saved state of the session around one catalog access */
typedef struct CatalogAccess
{
	Oid			saved_userid;
	int			saved_sec_context;
	int			guc_nest_level;
	MemoryContext caller_context;
} CatalogAccess;

extern void CatalogAccessBegin(CatalogAccess *access);
extern void CatalogAccessEnd(CatalogAccess *access);
extern uint64 CatalogExecute(const char *sql, int nargs, Oid *argtypes, Datum *values,
							 const char *nulls, int expected_result);
extern uint64 CatalogExecuteLatest(const char *sql, int nargs, Oid *argtypes,
								   Datum *values, int expected_result);
extern Datum CatalogValueForJob(const char *sql, int64 job_id, Datum null_value);
extern void CatalogExecuteForJob(int64 job_id, int nstatements,
								 const char *const *statements, const int *expected_results);

extern void CatalogRun(const char *sql, int nargs, Oid *argtypes, Datum *values,
					   const char *nulls, int expected_result);

/*
 * One row of a table of ours, found by its bigint primary key (the first
 * column), with its columns by attribute number: values[attno - 1].
 */
typedef struct CatalogRow
{
	Relation	rel;
	TupleTableSlot *slot;		/* the version found; locked by CatalogRowLock */
	Datum	   *values;
	bool	   *nulls;
} CatalogRow;

extern bool CatalogRowRead(CatalogRow *row, Oid relid, const char *const *columns,
						   int ncolumns, int64 key, bool latest);
extern bool CatalogRowLock(CatalogRow *row, Oid relid, const char *const *columns,
						   int ncolumns, int64 key);
extern void CatalogRowSet(CatalogRow *row, AttrNumber attno, Datum value, bool isnull);
extern void CatalogRowWrite(CatalogRow *row);
extern void CatalogRowClose(CatalogRow *row);
extern char *CatalogRowText(const CatalogRow *row, AttrNumber attno);
extern List *CatalogRowOids(const CatalogRow *row, AttrNumber attno);

/* Reading the current SPI result */
extern Datum CatalogColumn(uint64 row, int attno, Datum null_value);
extern bool CatalogColumnIsNull(uint64 row, int attno);
extern List *CatalogOidList(Datum array);
extern List *CatalogTextList(Datum array);

/* Building parameters */
extern Datum CatalogOidArray(List *oids);
extern Datum CatalogTextArray(List *strings);
extern Datum CatalogTidArray(ItemPointer tids, int ntids);
extern Datum CatalogXidArray(List *xids);

#ifndef DatumGetItemPointer
#define DatumGetItemPointer(X)	((ItemPointer) DatumGetPointer(X))
#define ItemPointerGetDatum(X)	PointerGetDatum(X)
#endif

#endif							/* BGDDL_CATALOG_ACCESS_H */
