/*-------------------------------------------------------------------------
 *
 * catalog_access.h
 *	  Finding the extension's catalog, and running statements on it safely.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CATALOG_ACCESS_H
#define BGDDL_CATALOG_ACCESS_H

#include "nodes/pg_list.h"
#include "storage/itemptr.h"

/* The installed extension and the members of it that our code uses */
typedef struct BgddlCatalog
{
	Oid			extension_oid;
	Oid			schema_oid;
	Oid			job_relid;
	Oid			chunk_relid;
	Oid			dirty_relid;
	Oid			recomputed_relid;
	Oid			capture_function_oid;
} BgddlCatalog;

extern void CatalogCacheInstall(void);
extern const BgddlCatalog *CatalogLookup(void);
extern const BgddlCatalog *CatalogRequire(void);

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

/* Reading the current SPI result */
extern Datum CatalogColumn(uint64 row, int attno, Datum null_value);
extern bool CatalogColumnIsNull(uint64 row, int attno);
extern char *CatalogTextColumn(uint64 row, int attno);
extern List *CatalogOidListColumn(uint64 row, int attno);
extern List *CatalogTextListColumn(uint64 row, int attno);

/* Building parameters */
extern Datum CatalogOidArray(List *oids);
extern Datum CatalogTextArray(List *strings);
extern Datum CatalogTidArray(ItemPointer tids, int ntids);

#ifndef DatumGetItemPointer
#define DatumGetItemPointer(X)	((ItemPointer) DatumGetPointer(X))
#define ItemPointerGetDatum(X)	PointerGetDatum(X)
#endif

#endif							/* BGDDL_CATALOG_ACCESS_H */
