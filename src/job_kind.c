/*-------------------------------------------------------------------------
 *
 * job_kind.c
 *	  The table of job kinds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "job_kind.h"

static const JobKindRoutine *const job_kinds[] = {
	&matview_kind_routine,
	&ctas_kind_routine,
	&refresh_kind_routine,
	&index_kind_routine,
};

const JobKindRoutine *
JobKindRoutineFor(JobKind kind)
{
	for (int i = 0; i < lengthof(job_kinds); i++)
	{
		if (job_kinds[i]->kind == kind)
			return job_kinds[i];
	}
	elog(ERROR, "background DDL job kind \"%s\" is not supported", JobKindName(kind));
	return NULL;				/* keep compiler quiet */
}

/* The kind that takes this statement in background mode, or NULL */
const JobKindRoutine *
JobKindForStatement(Node *parsetree)
{
	for (int i = 0; i < lengthof(job_kinds); i++)
	{
		if (job_kinds[i]->accepts(parsetree))
			return job_kinds[i];
	}
	return NULL;
}
