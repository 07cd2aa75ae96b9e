/*-------------------------------------------------------------------------
 *
 * kinds.h
 *	  The kinds of job, one file each in this folder, for _PG_init to
 *	  register (KindRegister).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_KINDS_H
#define BGDDL_KINDS_H

#include "engine/kind.h"

extern const KindRoutine kind_matview_routine;
extern const KindRoutine kind_ctas_routine;
extern const KindRoutine kind_refresh_routine;
extern const KindRoutine kind_index_routine;
extern const KindRoutine kind_citus_index_routine;
extern const KindRoutine kind_partitioned_index_routine;
extern const KindRoutine kind_chunked_index_routine;
extern const KindRoutine kind_key_constraint_routine;
extern const KindRoutine kind_constraint_routine;
extern const KindRoutine kind_reindex_routine;
extern const KindRoutine kind_rewrite_routine;
extern const KindRoutine kind_cluster_routine;
extern const KindRoutine kind_set_tablespace_routine;
extern const KindRoutine kind_alter_type_routine;

#endif							/* BGDDL_KINDS_H */
