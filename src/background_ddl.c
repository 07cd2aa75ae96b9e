/*-------------------------------------------------------------------------
 *
 * background_ddl.c
 *	  Module entry point: settings, shared memory, hooks and the launcher.
 *
 * The library must be loaded through shared_preload_libraries: its launcher
 * is a static background worker and it needs shared memory, both of which
 * can only be set up at postmaster start.  Loading it any other way (which
 * CREATE EXTENSION would do, to check its C functions) is an error that says
 * how to fix it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "capture/capture_trigger.h"
#include "catalog/catalog_access.h"
#include "catalog/settings.h"
#include "engine/job_launcher.h"
#include "engine/job_shmem.h"
#include "engine/job_xact.h"
#include "kinds/kinds.h"
#include "pg/pg_compat.h"
#include "session/session_guards.h"
#include "session/session_order.h"
#include "session/session_submit.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;

static void
BgddlShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	JobShmemRequest();
}
#endif

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("background_ddl must be loaded via shared_preload_libraries"),
				 errhint("Add background_ddl to shared_preload_libraries in postgresql.conf and restart the server.")));

	SettingsDefine();

#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = BgddlShmemRequest;
#else
	JobShmemRequest();
#endif
	JobShmemInit();
	CatalogCacheInstall();
	JobXactInstall();
	SessionSubmitInstall();
	CaptureCallbacksInstall();
	capture_cost_report = JobCaptureCostReport;
	SessionGuardsInstall();
	SessionOrderInstall();

	/* The kinds of job (a variant before its kind) */
	KindRegister(&kind_matview_routine);
	KindRegister(&kind_ctas_routine);
	KindRegister(&kind_refresh_routine);
	KindRegister(&kind_citus_index_routine);
	KindRegister(&kind_partitioned_index_routine);
	KindRegister(&kind_chunked_index_routine);
	KindRegister(&kind_index_routine);
	KindRegister(&kind_rewrite_routine);
	KindRegister(&kind_cluster_routine);
	KindRegister(&kind_set_tablespace_routine);
	KindRegister(&kind_alter_type_routine);
	KindRegister(&kind_key_constraint_routine);
	KindRegister(&kind_constraint_routine);
	KindRegister(&kind_reindex_routine);

	JobLauncherRegister();
}
