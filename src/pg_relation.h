/*-------------------------------------------------------------------------
 *
 * pg_relation.h
 *	  Emptying and dropping a relation, transactionally.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_RELATION_H
#define BGDDL_PG_RELATION_H

#include "utils/relcache.h"

extern void PgRelationTruncate(Relation rel);
extern void PgRelationDrop(Oid relid);

#endif							/* BGDDL_PG_RELATION_H */
