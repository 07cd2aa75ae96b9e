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

/* Let each kind set up what it needs at library load */
void
JobKindsLoad(void)
{
	for (int i = 0; i < lengthof(job_kinds); i++)
	{
		if (job_kinds[i]->load != NULL)
			job_kinds[i]->load();
	}
}

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

/*
 * The kind that takes this statement as a job in background mode, or NULL;
 * *in_session_reason is set when the statement is of a kind but must run in
 * this session, and says why.
 */
const JobKindRoutine *
JobKindForStatement(Node *parsetree, const char **in_session_reason)
{
	*in_session_reason = NULL;
	for (int i = 0; i < lengthof(job_kinds); i++)
	{
		switch (job_kinds[i]->accepts(parsetree, in_session_reason))
		{
			case JOB_ACCEPTED:
				return job_kinds[i];
			case JOB_IN_SESSION:
				return NULL;
			case JOB_NOT_ACCEPTED:
				break;
		}
	}
	return NULL;
}
