/*-------------------------------------------------------------------------
 *
 * pg_subxact.h
 *	  Work done in a subtransaction that is always rolled back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_PG_SUBXACT_H
#define BGDDL_PG_SUBXACT_H

extern void PgRunRolledBack(void (*run) (void *arg), void *arg);

#endif							/* BGDDL_PG_SUBXACT_H */
