/*-------------------------------------------------------------------------
 *
 * constraint_rows.h
 *	  Checking the rows of a range of a table's blocks against a constraint,
 *	  in one process or in several (parallel workers).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CONSTRAINT_ROWS_H
#define BGDDL_CONSTRAINT_ROWS_H

#include "access/htup.h"
#include "nodes/pg_list.h"
#include "storage/block.h"
#include "storage/dsm.h"
#include "storage/shm_toc.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/* The error a row that violates a check gets: the statement's */
typedef enum CheckViolation
{
	VIOLATES_CHECK,				/* ADD CHECK, VALIDATE CONSTRAINT */
	VIOLATES_NOT_NULL,			/* SET NOT NULL */
	VIOLATES_PARTITION,			/* ATTACH PARTITION: the table attached */
	VIOLATES_DEFAULT_PARTITION	/* ATTACH PARTITION: the default partition */
} CheckViolation;

/*
 * A check of rows: a foreign key, or a check constraint's expression, its
 * name and its error
 */
typedef struct RowCheck
{
	HeapTuple	constraint;		/* its pg_constraint row (the table's copy) */
	bool		foreign_key;
	Node	   *expr;			/* a check: its expression */
	const char *name;
	CheckViolation violation;
	List	   *not_null_columns;	/* VIOLATES_NOT_NULL: the columns, in order */
} RowCheck;

extern Node *CheckExpression(HeapTuple constraint);
extern void RowCheckOfConstraint(RowCheck *check, HeapTuple constraint, bool foreign_key,
								 CheckViolation violation, List *not_null_columns);
extern uint64 CheckBlocks(Relation rel, const RowCheck *check, Snapshot snapshot,
						  BlockNumber start, BlockNumber end, uint64 *violations);
extern uint64 CheckChunk(Relation rel, const RowCheck *check, BlockNumber start,
						 BlockNumber end, int processes, int *processes_used);

/* The parallel workers' entry point (CreateParallelContext) */
extern PGDLLEXPORT void CheckChunkWorkerMain(dsm_segment *seg, shm_toc *toc);

#endif							/* BGDDL_CONSTRAINT_ROWS_H */
