/*-------------------------------------------------------------------------
 *
 * index_build.h
 *	  PostgreSQL's index definition code, run for a job.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_INDEX_BUILD_H
#define BGDDL_INDEX_BUILD_H

#include "catalog/objectaddress.h"
#include "nodes/parsenodes.h"

#include "catalog/catalog_job.h"

extern Oid	IndexBuildNewOid(Oid table_oid, const char *tablespace);
extern ObjectAddress IndexBuildDefine(const BgddlJob *job, Oid table_oid, IndexStmt *stmt,
									  Oid index_oid, Oid parent_index_oid);
extern bool IndexBuildIsIndex(Oid relid, bool *valid);
extern void IndexBuildDrop(Oid index_oid);

#endif							/* BGDDL_INDEX_BUILD_H */
