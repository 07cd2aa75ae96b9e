/* background_ddl--1.0.sql: install script of the background_ddl extension */

\echo Use "CREATE EXTENSION background_ddl" to load this file. \quit

/*
 * The job catalog lives in its own schema.  Only the extension's C code
 * writes it (switching to the catalog owner for that); ordinary roles read
 * jobs through pg_stat_background_ddl, which filters what they may see.
 */
CREATE SCHEMA background_ddl;
REVOKE ALL ON SCHEMA background_ddl FROM PUBLIC;

CREATE TABLE background_ddl.job (
	id				bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	database_oid	oid NOT NULL,
	owner_oid		oid NOT NULL,
	kind			text NOT NULL,
	target_oid		oid NOT NULL,
	target_name		text NOT NULL,
	command			text NOT NULL,
	settings		text[] NOT NULL,	/* name, value pairs of the submitter's GUCs */
	state			text NOT NULL DEFAULT 'queued'
		CHECK (state IN ('queued', 'running', 'paused', 'cancelling',
						 'succeeded', 'failed', 'cancelled')),
	phase			text,
	driving_oid		oid,		/* table whose block ranges are the chunks */
	blocks_total	bigint,		/* driving table size when the backfill began */
	next_block		bigint NOT NULL DEFAULT 0,	/* first block not yet done */
	chunk_blocks	integer,	/* current adaptive chunk size */
	rows_done		bigint NOT NULL DEFAULT 0,
	rows_total		bigint,
	chunks_done		bigint NOT NULL DEFAULT 0,
	chunks_total	bigint,
	progress		float8 NOT NULL DEFAULT 0,
	rate			float8,
	eta				interval,
	submitted_at	timestamptz NOT NULL DEFAULT now(),
	started_at		timestamptz,
	finished_at		timestamptz,
	attempts		integer NOT NULL DEFAULT 0,
	pid				integer,
	error			text,
	cutover_snapshot text,
	cutover_at		timestamptz,
	dirty_rows		bigint NOT NULL DEFAULT 0,
	/* change capture: base relations with capture triggers, and their relfilenodes */
	capture_relids	oid[],
	capture_filenodes oid[],
	catchup_passes	integer NOT NULL DEFAULT 0,
	cleanup_pending boolean NOT NULL DEFAULT false	/* triggers left to drop */
);
CREATE INDEX ON background_ddl.job (target_oid);

/* One row per committed chunk: the checkpoint of the backfill. */
CREATE TABLE background_ddl.chunk (
	job_id			bigint NOT NULL REFERENCES background_ddl.job ON DELETE CASCADE,
	chunk_no		bigint NOT NULL,
	start_block		bigint NOT NULL,
	end_block		bigint,		/* NULL: to the end of the table */
	rows_done		bigint NOT NULL,
	attempt			integer NOT NULL,
	duration		interval NOT NULL,
	done_at			timestamptz NOT NULL DEFAULT clock_timestamp(),
	/* (source tid, output tid) pairs of the chunk, sorted by source (tid_map.c) */
	tid_map			bytea,
	PRIMARY KEY (job_id, chunk_no)
);
/* Already compact; compressing it again would cost more than it saves */
ALTER TABLE background_ddl.chunk ALTER COLUMN tid_map SET STORAGE EXTERNAL;

/*
 * The dirty log: tuple ids of driving-table rows changed since the job
 * started capturing (the OLD and NEW versions), appended by the capture
 * trigger in the writer's transaction.  whole_table marks a change the log
 * cannot pin to rows (a non-driving table, TRUNCATE, a rewrite).  WAL-logged
 * on purpose: a crash must not lose marks.  No index: the worker reads it
 * with one scan per pass and deletes what it processed by ctid.
 */
CREATE TABLE background_ddl.dirty (
	job_id			bigint NOT NULL,
	source_tid		tid,
	whole_table		boolean NOT NULL DEFAULT false
);

/*
 * Output rows of source rows recomputed after the backfill: they supersede
 * the chunk's tid_map for those source tids.  A row with a NULL output_tid
 * records a source row that now produces nothing.
 */
CREATE TABLE background_ddl.recomputed (
	job_id			bigint NOT NULL REFERENCES background_ddl.job ON DELETE CASCADE,
	source_tid		tid NOT NULL,
	output_tid		tid
);
CREATE INDEX ON background_ddl.recomputed (job_id, source_tid);

REVOKE ALL ON ALL TABLES IN SCHEMA background_ddl FROM PUBLIC;

/*
 * Jobs are deliberately not dumped (no pg_extension_config_dump): a job row
 * names objects by OID, which a restore does not preserve.
 */

/* The capture trigger; installed by the job worker, never by hand. */
CREATE FUNCTION background_ddl.capture_changes()
RETURNS trigger
AS 'MODULE_PATHNAME', 'capture_changes'
LANGUAGE C;
REVOKE ALL ON FUNCTION background_ddl.capture_changes() FROM PUBLIC;

CREATE FUNCTION cancel_ddl(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'cancel_ddl'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION wait_ddl(job_id bigint, timeout interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'wait_ddl'
LANGUAGE C VOLATILE;

CREATE FUNCTION last_ddl_job()
RETURNS bigint
AS 'MODULE_PATHNAME', 'last_ddl_job'
LANGUAGE C STABLE;

/*
 * Like pg_stat_activity, every role sees every job, but the command and the
 * error text only of jobs submitted by a role it is a member of (or with
 * pg_read_all_stats).
 */
CREATE VIEW pg_stat_background_ddl AS
	SELECT j.id,
		   d.datname,
		   r.rolname AS usename,
		   j.kind,
		   j.target_name AS target,
		   CASE WHEN v.visible THEN j.command ELSE '<insufficient privilege>' END AS command,
		   j.state,
		   j.phase,
		   j.progress,
		   j.rows_done,
		   j.rows_total,
		   j.chunks_done,
		   j.chunks_total,
		   j.rate,
		   j.eta,
		   j.submitted_at,
		   j.started_at,
		   j.finished_at,
		   j.attempts,
		   CASE WHEN j.state IN ('running', 'cancelling') THEN j.pid END AS pid,
		   CASE WHEN v.visible THEN j.error END AS error,
		   j.cutover_snapshot,
		   j.cutover_at,
		   j.dirty_rows
	  FROM background_ddl.job j
	  LEFT JOIN pg_catalog.pg_database d ON d.oid = j.database_oid
	  LEFT JOIN pg_catalog.pg_roles r ON r.oid = j.owner_oid
	 CROSS JOIN LATERAL (SELECT CASE WHEN r.oid IS NULL THEN false
									 ELSE pg_catalog.pg_has_role(j.owner_oid, 'USAGE') END
							 OR pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
							 AS visible) v;

GRANT SELECT ON pg_stat_background_ddl TO PUBLIC;
