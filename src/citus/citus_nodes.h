/*-------------------------------------------------------------------------
 *
 * citus_nodes.h
 *	  The nodes of a Citus cluster as a job's worker talks to them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_CITUS_NODES_H
#define BGDDL_CITUS_NODES_H

#include "libpq-fe.h"
#include "nodes/pg_list.h"

/* A node of the cluster, and the job's connection to it */
typedef struct CitusNode
{
	char	   *name;			/* pg_dist_node.nodename */
	int			port;
	int			group_id;		/* 0: the coordinator */
	PGconn	   *conn;			/* NULL: not connected */
} CitusNode;

/* A shard's copy on a node */
typedef struct CitusPlacement
{
	int64		shard_id;
	CitusNode	node;			/* its name, port and group; conn unused */
} CitusPlacement;

extern List *CitusNodesPlacements(Oid relid);
extern List *CitusNodesWithMetadata(void);
extern PGconn *CitusNodeConnect(CitusNode *node, const char *database, const char *role,
								const char *application_name, char **error);
extern void CitusNodeDisconnect(CitusNode *node);
extern char *CitusNodeName(const CitusNode *node);
extern PGresult *CitusNodeExec(CitusNode *node, const char *sql, int nparams,
							   const char *const *params, bool *lost);
extern PGresult *CitusNodeTryExec(CitusNode *node, const char *sql, int nparams,
								  const char *const *params, char **error);

#endif							/* BGDDL_CITUS_NODES_H */
