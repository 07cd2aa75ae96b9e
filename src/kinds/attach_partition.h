/*-------------------------------------------------------------------------
 *
 * attach_partition.h
 *	  What ALTER TABLE ... ATTACH PARTITION checks the rows of the table
 *	  attached and of the default partition against, worked out as
 *	  PostgreSQL works it out, so that a job can check them first.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_ATTACH_PARTITION_H
#define BGDDL_ATTACH_PARTITION_H

#include "nodes/parsenodes.h"
#include "utils/relcache.h"

/* The checks of an ATTACH PARTITION, each in its own table's columns */
typedef struct AttachChecks
{
	PartitionBoundSpec *bound;	/* the bound, transformed */
	Node	   *partition_check;	/* the partition constraint of the table
									 * attached */
	Oid			default_partition;	/* the parent's default partition, or
									 * InvalidOid */
	Node	   *default_check;	/* its rows' check: not in the new bound */
} AttachChecks;

extern const char *AttachInSessionReason(Oid parent, PartitionCmd *cmd, bool *accepted);
extern PartitionBoundSpec *AttachTransformBound(Relation parent, PartitionBoundSpec *raw_bound,
												const char *query_string);
extern bool AttachComputeChecks(Relation parent, Relation attached, PartitionBoundSpec *raw_bound,
								const char *query_string, AttachChecks *checks);
extern const char *AttachBuildsIndex(Relation parent, Relation attached);
extern PartitionCmd *AttachCommandOf(const char *command, Oid attached);

#endif							/* BGDDL_ATTACH_PARTITION_H */
