/*-------------------------------------------------------------------------
 *
 * kind.c
 *	  The table of job kinds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kind.h"

static const KindRoutine *const job_kinds[] = {
	&kind_matview_routine,
	&kind_ctas_routine,
	&kind_refresh_routine,
	&kind_index_routine,
};

/* Let each kind set up what it needs at library load */
void
KindsLoad(void)
{
	for (int i = 0; i < lengthof(job_kinds); i++)
	{
		if (job_kinds[i]->load != NULL)
			job_kinds[i]->load();
	}
}

const KindRoutine *
KindRoutineFor(JobKind kind)
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
const KindRoutine *
KindForStatement(Node *parsetree, const char **in_session_reason)
{
	*in_session_reason = NULL;
	for (int i = 0; i < lengthof(job_kinds); i++)
	{
		switch (job_kinds[i]->accepts(parsetree, in_session_reason))
		{
			case KIND_ACCEPTED:
				return job_kinds[i];
			case KIND_IN_SESSION:
				return NULL;
			case KIND_NOT_ACCEPTED:
				break;
		}
	}
	return NULL;
}
