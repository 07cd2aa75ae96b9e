/*-------------------------------------------------------------------------
 *
 * pg_subxact.c
 *	  Work done in a subtransaction that is always rolled back: measured,
 *	  then undone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "pg/pg_subxact.h"

/*
 * Run run(arg) in a subtransaction, then roll it back, whether it returned
 * or failed (its error is raised again after).  What run allocates in the
 * caller's memory context stays; everything it did in the database is
 * undone.
 */
void
PgRunRolledBack(void (*run) (void *arg), void *arg)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		run(arg);
	}
	PG_CATCH();
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
}
