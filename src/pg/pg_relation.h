/*-------------------------------------------------------------------------
 *
 * pg_relation.h
 *	  Emptying, dropping, and hiding a relation from logical decoding and
 *	  from pg_dump, transactionally.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_RELATION_H
#define BGDDL_PG_RELATION_H

#include "utils/relcache.h"

extern void PgRelationTruncate(Relation rel);
extern int64 PgTableTreeWrites(Oid relid);
extern void PgRelationDrop(Oid relid);
extern void PgRelationSetDecoded(Oid relid, bool decoded);
extern void PgRelationSetOwnerTransient(Oid relid, Oid owner);
extern void PgRelationSetExtensionMember(Oid relid, Oid extension_oid, bool member);

#endif							/* BGDDL_PG_RELATION_H */
