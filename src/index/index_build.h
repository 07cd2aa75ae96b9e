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

/* What an index build reports of itself (pg_stat_progress_create_index) */
typedef struct IndexBuildProgress
{
	char	   *phase;			/* as that view names it */
	bool		waiting;		/* the phase waits for other transactions */
	double		percent;		/* of the whole build */
	int64		tuples_done;
	int64		tuples_total;	/* 0: not known yet */
} IndexBuildProgress;

extern Oid	IndexBuildNewOid(Oid table_oid, const char *tablespace);
extern ObjectAddress IndexBuildDefine(const BgddlJob *job, Oid table_oid, IndexStmt *stmt,
									  Oid index_oid, Oid parent_index_oid);
extern void IndexBuildAnalyzeExpressions(const BgddlJob *job, Oid table_oid, Oid index_oid);
extern void IndexBuildReindex(const BgddlJob *job, ReindexStmt *stmt);
extern bool IndexBuildIsIndex(Oid relid, bool *valid);
extern bool IndexBuildAnyExclusion(List *indexes);
extern void IndexBuildDrop(Oid index_oid);
extern void IndexBuildHoldBack(Oid index_oid, Oid table_oid);
extern void IndexBuildSetValid(Oid index_oid, Oid table_oid);
extern bool IndexBuildProgressOf(pid_t pid, IndexBuildProgress *progress);

#endif							/* BGDDL_INDEX_BUILD_H */
