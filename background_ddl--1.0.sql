/* background_ddl--1.0.sql: install script of the background_ddl extension */

\echo Use "CREATE EXTENSION background_ddl" to load this file. \quit

/*
 * The job catalog lives in its own schema, which PUBLIC cannot even look
 * into.  Only the extension's C code writes it (as the bootstrap superuser,
 * under SECURITY_RESTRICTED_OPERATION and a fixed search_path, and only
 * after finding these relations as members of this extension); ordinary
 * roles read jobs through pg_stat_background_ddl, which filters what they
 * may see.
 */
CREATE SCHEMA background_ddl;
REVOKE ALL ON SCHEMA background_ddl FROM PUBLIC;

CREATE TABLE background_ddl.job (
	id				bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	database_oid	oid NOT NULL,
	session_user_oid oid NOT NULL,	/* session_user at submit: the job's session */
	owner_oid		oid NOT NULL,	/* current_user at submit: runs the query, owns the result */
	kind			text NOT NULL,	/* a name from the kind table (kind.c) */
	target_oid		oid NOT NULL,	/* the object being built, or its placeholder */
	target_name		text NOT NULL,
	command			text NOT NULL,	/* the submitted statement alone */
	settings		text[] NOT NULL,	/* name, value pairs of the submitter's settings */
	state			text NOT NULL DEFAULT 'queued'
		CHECK (state IN ('queued', 'running', 'paused', 'cancelling',
						 'succeeded', 'failed', 'cancelled')),
	phase			text,
	strategy		text,		/* how the content is computed, and why */
	planned			boolean NOT NULL DEFAULT false, /* the worker has decided the strategy */
	kind_state		jsonb NOT NULL DEFAULT '{}',	/* the kind's own, which only it reads */
	work_total		bigint,		/* units of work of the backfill (the kind's: blocks, say) */
	work_done		bigint NOT NULL DEFAULT 0,	/* ... in committed chunks */
	rows_done		bigint NOT NULL DEFAULT 0,
	rows_total		bigint,
	chunks_done		bigint NOT NULL DEFAULT 0,
	chunks_total	bigint,
	progress		float8 NOT NULL DEFAULT 0,
	progress_base	float8 NOT NULL DEFAULT 0,	/* progress when the build last restarted */
	rate			float8,
	eta				interval,
	submitted_at	timestamptz NOT NULL DEFAULT now(),
	started_at		timestamptz,
	attempt_started_at timestamptz,
	finished_at		timestamptz,
	attempts		integer NOT NULL DEFAULT 0,
	in_flight		boolean NOT NULL DEFAULT false,	/* a worker took it and has not let go cleanly */
	error			text,
	error_sqlstate	text,
	error_detail	text,
	error_hint		text,
	cutover_snapshot text,
	cutover_at		timestamptz,
	dirty_rows		bigint NOT NULL DEFAULT 0,	/* changed rows waiting to be caught up */
	cleanup_pending boolean NOT NULL DEFAULT false,	/* its kind has something to clean up */
	not_before		timestamptz,	/* its worker gave it back, to be started again then */
	given_back_for	text,		/* ... and why (waiting_on) */
	/* the job's own limits (alter_ddl); NULL: none, or the server's setting */
	max_rate		float8 CHECK (max_rate > 0),	/* rows per second */
	batch_time		interval CHECK (batch_time > '0'),
	max_workers		integer CHECK (max_workers > 0),
	max_replica_lag	interval CHECK (max_replica_lag >= '0'),	/* '0': none */
	messages		bigint NOT NULL DEFAULT 0,	/* INFO, NOTICE, WARNING its statements raised */
	/* the jobs it starts after, once they have all succeeded (earlier jobs: no cycle) */
	after			bigint[],
	idempotency_key	text,		/* submit_ddl's: a second submit of its role returns this job */
	/* its rate limit holds its next batch until then (a worker comes back before, to look) */
	rate_not_before	timestamptz,
	/*
	 * manual: built and kept caught up, it is published by complete_ddl
	 * (background_ddl.cutover), which makes it completed
	 */
	cutover			text NOT NULL DEFAULT 'auto' CHECK (cutover IN ('auto', 'manual', 'completed')),
	/* 'HH:MM-HH:MM': its cut-over waits until the time of day is in it (its worker's TimeZone) */
	cutover_window	text CHECK (cutover_window ~ '^[0-2][0-9]:[0-5][0-9]-[0-2][0-9]:[0-5][0-9]$'),
	/* ... and until fewer rows a second are written to the tables it captures */
	cutover_max_writes integer CHECK (cutover_max_writes > 0),
	/* what its workers wrote: WAL, and temporary files (sorts, hashes that spilled) */
	wal_bytes		bigint NOT NULL DEFAULT 0,
	temp_bytes		bigint NOT NULL DEFAULT 0,
	/*
	 * microseconds its first worker waited, by reason (pg_stat_background_ddl.waited
	 * names them), and how often its work was tried again, by reason (retries)
	 */
	waited_us		bigint[] NOT NULL DEFAULT '{}',
	retries			bigint[] NOT NULL DEFAULT '{}',
	/* the pages its workers dirtied: its new heap and indexes, catalogs, the capture log */
	dirtied_bytes	bigint NOT NULL DEFAULT 0,
	/* the writers' changes its catch-up applied (the capture's marks) */
	changes_caught_up bigint NOT NULL DEFAULT 0,
	/* calls of its capture trigger that writers' sessions measured (1 in 16), and their time */
	capture_samples	bigint NOT NULL DEFAULT 0,
	capture_ns		bigint NOT NULL DEFAULT 0,
	/* since when it waits for a worker (NULL: it has one, is paused, or ended) */
	queued_at		timestamptz DEFAULT now(),
	/*
	 * background_ddl.cutover_group: the jobs that one transaction submitted
	 * under that name are published together, in one transaction
	 */
	cutover_group	text,
	group_id		bigint,		/* the group's first job */
	group_ready		boolean NOT NULL DEFAULT false,	/* built and caught up: its group may publish it */
	published_by	bigint,		/* the job whose worker publishes the group */
	/* background_ddl.estimate: what estimate_ddl said of it at its submit */
	estimate		jsonb
);
CREATE INDEX ON background_ddl.job (group_id) WHERE group_id IS NOT NULL;
CREATE INDEX ON background_ddl.job (target_oid);
/* Each role has keys of its own: no role learns, takes or blocks another's */
CREATE UNIQUE INDEX ON background_ddl.job (owner_oid, idempotency_key);

/*
 * One row per committed chunk: the checkpoint of the backfill.  A chunk of
 * rows in an index's order (CLUSTER) has a negative start_block, its
 * number, until its pairs are regrouped by block (capture_log.c).
 */
CREATE TABLE background_ddl.chunk (
	job_id			bigint NOT NULL REFERENCES background_ddl.job ON DELETE CASCADE,
	start_block		bigint NOT NULL,
	end_block		bigint NOT NULL,
	rows_done		bigint NOT NULL,
	attempt			integer NOT NULL,
	duration		interval NOT NULL,
	done_at			timestamptz NOT NULL DEFAULT clock_timestamp(),
	/* (source tid, output tid) pairs of the chunk, sorted by source (tid_map.c) */
	tid_map			bytea,
	/* the index entries of the chunk, of an index build of our own (index_chunked.c) */
	index_entries	bytea,
	PRIMARY KEY (job_id, start_block)
);
/* Already compact; compressing it again would cost more than it saves */
ALTER TABLE background_ddl.chunk ALTER COLUMN tid_map SET STORAGE EXTERNAL;
/*
 * Index tuples in segments that index_chunked.c compresses each on its own
 * (with lz4 where the server has it), so that a chunk can be read a segment
 * at a time: stored as they are, out of line
 */
ALTER TABLE background_ddl.chunk ALTER COLUMN index_entries SET STORAGE EXTERNAL;

/*
 * The capture of a job (capture_trigger.c): its triggers on the base tables,
 * their row versions, and the base tables' relfilenodes when it began.
 * stopped: its backlog outgrew its bound, one whole_table mark stands for
 * every change since.
 */
CREATE TABLE background_ddl.capture (
	job_id			bigint PRIMARY KEY REFERENCES background_ddl.job ON DELETE CASCADE,
	driving_oid		oid NOT NULL,	/* whose changed rows are logged one by one */
	relids			oid[] NOT NULL,
	filenodes		oid[] NOT NULL,
	triggers		oid[] NOT NULL,
	trigger_xmins	bigint[] NOT NULL,
	stopped			boolean NOT NULL DEFAULT false
);

/*
 * The dirty log, appended by the capture trigger in the writer's transaction
 * since the job started capturing: source_tid, a changed row of the driving
 * table (its OLD and NEW versions); join_relid and join_key, a changed row of
 * a joined table, by the text of its join key (OLD and NEW), which stands
 * for the driving rows that join to it; whole_table, a change the log cannot
 * pin to rows (TRUNCATE, a rewrite, a transaction that changed too many
 * rows), after which every row is recomputed in batches.  uncaptured: from
 * then on changes may go unlogged (a pause, a stopped capture, a changed
 * capture trigger), and only the cut-over's whole recomputation covers them.
 * WAL-logged on purpose: a crash must not lose marks.  No index: the worker
 * reads it with one scan per catch-up pass and deletes what it processed by
 * ctid.
 */
CREATE TABLE background_ddl.dirty (
	job_id			bigint NOT NULL,
	source_tid		tid,
	whole_table		boolean NOT NULL DEFAULT false,
	join_relid		oid,
	join_key		text,
	uncaptured		boolean NOT NULL DEFAULT false
);

/*
 * Output rows of source rows recomputed after the backfill: they supersede
 * the chunk's tid_map for those source tids.  A row with a NULL output_tid
 * records a source row that now produces nothing.  Without a foreign key
 * (its check, a query per row, cost a third of a catch-up): a job's rows
 * go when its capture is forgotten, and with it when it is purged.
 */
CREATE TABLE background_ddl.recomputed (
	job_id			bigint NOT NULL,
	source_tid		tid NOT NULL,
	output_tid		tid
);
CREATE INDEX ON background_ddl.recomputed (job_id, source_tid);

/*
 * The first messages (INFO, NOTICE, WARNING) a job's own statements raised,
 * as its client would have seen them (job_messages.c); job.messages counts
 * all of them.  Read through ddl_messages(id).
 */
CREATE TABLE background_ddl.message (
	job_id			bigint NOT NULL REFERENCES background_ddl.job ON DELETE CASCADE,
	seq				bigint NOT NULL,
	raised_at		timestamptz NOT NULL,
	severity		text NOT NULL,
	message			text NOT NULL,
	detail			text,
	hint			text,
	context			text,
	PRIMARY KEY (job_id, seq)
);

REVOKE ALL ON ALL TABLES IN SCHEMA background_ddl FROM PUBLIC;

/*
 * Nothing of ours is sent or applied by logical replication
 * (catalog_replication.c): the tables' changes are not decoded, the tables
 * without a key can be deleted from under a publication, and on a
 * subscriber the rows that a replication worker copies into them are
 * dropped.
 */
ALTER TABLE background_ddl.dirty REPLICA IDENTITY FULL;
ALTER TABLE background_ddl.recomputed REPLICA IDENTITY FULL;
CREATE FUNCTION background_ddl.skip_replicated_row()
RETURNS trigger
AS 'MODULE_PATHNAME', 'skip_replicated_row'
LANGUAGE C;
REVOKE ALL ON FUNCTION background_ddl.skip_replicated_row() FROM PUBLIC;
CREATE FUNCTION background_ddl.hide_from_decoding(regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'hide_from_decoding'
LANGUAGE C STRICT;
DO $$
DECLARE
	catalog_table regclass;
BEGIN
	FOR catalog_table IN SELECT c.oid FROM pg_catalog.pg_class c
						  WHERE c.relnamespace = 'background_ddl'::regnamespace AND c.relkind = 'r'
	LOOP
		EXECUTE pg_catalog.format('CREATE TRIGGER skip_replicated_rows BEFORE INSERT OR UPDATE OR DELETE '
								  'ON %s FOR EACH ROW EXECUTE FUNCTION background_ddl.skip_replicated_row()',
								  catalog_table);
		EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE REPLICA TRIGGER skip_replicated_rows',
								  catalog_table);
		PERFORM background_ddl.hide_from_decoding(catalog_table);
	END LOOP;
END
$$;
DROP FUNCTION background_ddl.hide_from_decoding(regclass);

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

/* What the job workers hold in shared memory right now (for the view) */
CREATE FUNCTION background_ddl.live_jobs(
	OUT job_id bigint, OUT pid integer, OUT workers integer,
	OUT rows_done bigint, OUT chunks_done bigint, OUT phase text,
	OUT lock_relid oid, OUT lock_mode text, OUT lock_holders text, OUT waiting_for text,
	OUT wait_event text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'live_jobs'
LANGUAGE C STRICT VOLATILE;

/*
 * What a job's kind adds to the view's progress of it, from its kind_state
 * (which only the kind reads) and its worker's own progress report (for the
 * view)
 */
CREATE FUNCTION background_ddl.kind_progress(
	kind text, kind_state jsonb, job_rows_done bigint, job_rows_total bigint, pid integer,
	OUT phase text, OUT progress float8, OUT rows_done bigint, OUT rows_total bigint,
	OUT chunks_total bigint, OUT waiting_for text, OUT catchup_passes integer,
	OUT rows_recomputed bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'kind_progress'
LANGUAGE C STABLE;

/* When the scheduler starts a job again whose worker died (for the view) */
CREATE FUNCTION background_ddl.restart_not_before(attempt_started_at timestamptz, attempts integer)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'restart_not_before'
LANGUAGE C STRICT STABLE;

CREATE FUNCTION cancel_ddl(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'cancel_ddl'
LANGUAGE C VOLATILE;

CREATE FUNCTION pause_ddl(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pause_ddl'
LANGUAGE C VOLATILE;

CREATE FUNCTION resume_ddl(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'resume_ddl'
LANGUAGE C VOLATILE;

/*
 * wait_ddl keeps its statement's snapshot while it waits, as any function
 * does; await_ddl, a procedure, commits between its looks at the job and
 * holds none (sql_control.c).
 */
CREATE FUNCTION wait_ddl(job_id bigint, timeout interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'wait_ddl'
LANGUAGE C VOLATILE;

CREATE PROCEDURE await_ddl(job_id bigint, timeout interval DEFAULT NULL)
AS 'MODULE_PATHNAME', 'await_ddl'
LANGUAGE C;

/*
 * Publish a job whose cut-over is manual (background_ddl.cutover) and wait,
 * as await_ddl, until it has ended: quietly once it is published, with its
 * error if it could not be.
 */
CREATE PROCEDURE complete_ddl(job_id bigint, timeout interval DEFAULT NULL)
AS 'MODULE_PATHNAME', 'complete_ddl'
LANGUAGE C;

/* How a statement would run in the background (the strategy column), without submitting it */
CREATE FUNCTION explain_ddl(statement text)
RETURNS text
AS 'MODULE_PATHNAME', 'explain_ddl'
LANGUAGE C STRICT VOLATILE;

/*
 * What the job of a statement would produce and cost, measured on a
 * rolled-back sample of its chunks (seconds NULL: one batch, not sampled)
 */
CREATE FUNCTION estimate_ddl(statement text,
							 OUT strategy text, OUT rows bigint, OUT bytes bigint,
							 OUT wal_bytes bigint, OUT seconds float8, OUT locks text,
							 OUT sampled_blocks bigint, OUT total_blocks bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'estimate_ddl'
LANGUAGE C STRICT VOLATILE;

/*
 * Change the limits of a queued, running or paused job: NULL leaves a limit as
 * it is; max_rate => 'infinity' lifts the rate limit; cutover => 'manual'
 * keeps it from publishing its result until complete_ddl, 'auto' lets it;
 * cutover_window => '01:00-05:00' lets it cut over only then ('' any time),
 * cutover_max_writes => n only under n rows written a second (0: any).
 */
CREATE FUNCTION alter_ddl(job_id bigint, max_rate float8 DEFAULT NULL,
						  batch_time interval DEFAULT NULL, workers integer DEFAULT NULL,
						  max_replica_lag interval DEFAULT NULL, cutover text DEFAULT NULL,
						  cutover_window text DEFAULT NULL, cutover_max_writes integer DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'alter_ddl'
LANGUAGE C VOLATILE;

/*
 * Submit one statement as a background job (as with background_ddl on) and
 * return its id, or NULL if it ran in the foreground.  With an idempotency
 * key, a second call with the same key returns the job of the first (the
 * same statement), as long as that job is in the catalog.  after: the jobs
 * it starts after (as background_ddl.after).
 */
CREATE FUNCTION submit_ddl(statement text, idempotency_key text DEFAULT NULL,
						   after bigint[] DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'submit_ddl'
LANGUAGE C VOLATILE;

/*
 * The messages a job's statements raised, for whoever may read its command
 * (pg_stat_background_ddl): its first 100, in order.
 */
CREATE FUNCTION ddl_messages(job_id bigint,
							 OUT seq bigint, OUT raised_at timestamptz, OUT severity text,
							 OUT message text, OUT detail text, OUT hint text, OUT context text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ddl_messages'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION last_ddl_job()
RETURNS bigint
AS 'MODULE_PATHNAME', 'last_ddl_job'
LANGUAGE C STABLE;

/*
 * Like pg_stat_activity, every role sees every job, but the command and the
 * error text only of jobs submitted by a role it has the privileges of (or
 * with pg_read_all_stats).  A job whose worker is gone (a crash, waiting for
 * its restart) shows as queued; target follows a rename of an unfinished
 * job's object.  The phase of a running job is its worker's (live_jobs), not
 * the catalog's, which a long step commits only at its end.  The job's kind
 * adds what it knows (kind_progress): a worker that builds an index (CREATE
 * INDEX CONCURRENTLY) shows the phase and tuples of its
 * pg_stat_progress_create_index row; for the index of a partitioned table,
 * built partition by partition, that row's partition is named, and the
 * job's progress counts the partitions done.  The progress is the job row's:
 * the workers record theirs at least every quarter of a second, and the
 * scheduler what it sees live (an index build's percentage) every second,
 * so that a crash never takes back what the view showed.
 */
CREATE VIEW pg_stat_background_ddl AS
	SELECT j.id,
		   d.datname,
		   r.rolname AS usename,
		   j.kind,
		   coalesce(t.name, j.target_name) AS target,
		   CASE WHEN v.visible THEN j.command ELSE '<insufficient privilege>' END AS command,
		   CASE WHEN j.state = 'running' AND l.pid IS NULL AND NOT pg_catalog.pg_is_in_recovery()
				THEN 'queued' ELSE j.state END AS state,
		   /* a job ready for its cut-over is ready, whatever its kind's step was */
		   coalesce(CASE WHEN j.state = 'running' AND l.phase = 'ready' THEN l.phase END,
					kp.phase,
					CASE WHEN j.state IN ('running', 'cancelling') THEN l.phase END,
					/* an ended job's clean-up waits for its locks: cleanup_pending says so */
					CASE WHEN j.state IN ('succeeded', 'failed', 'cancelled') AND
							  j.phase = 'waiting for lock' THEN 'cleaning up' END,
					j.phase) AS phase,
		   /* (as recorded: what the workers and the scheduler saw live, KindsRecordLiveProgress) */
		   j.progress AS progress,
		   coalesce(kp.rows_done, greatest(j.rows_done, l.rows_done)) AS rows_done,
		   coalesce(kp.rows_total, j.rows_total) AS rows_total,
		   greatest(j.chunks_done, l.chunks_done) AS chunks_done,
		   coalesce(j.chunks_total, kp.chunks_total) AS chunks_total,
		   CASE WHEN kp.rows_done IS NOT NULL
				THEN kp.rows_done / greatest(extract(epoch FROM now() - j.attempt_started_at), 0.001)
				ELSE j.rate END AS rate,
		   CASE WHEN kp.progress > 0 AND j.state = 'running'
				THEN (now() - j.attempt_started_at) * ((100 - kp.progress) / kp.progress)
				ELSE j.eta END AS eta,
		   j.submitted_at,
		   j.started_at,
		   j.finished_at,
		   j.attempts,
		   l.pid,
		   CASE WHEN v.visible THEN j.error END AS error,
		   CASE WHEN v.visible THEN j.error_sqlstate END AS error_sqlstate,
		   CASE WHEN v.visible THEN j.error_detail END AS error_detail,
		   CASE WHEN v.visible THEN j.error_hint END AS error_hint,
		   j.cutover_snapshot,
		   j.cutover_at,
		   j.dirty_rows,
		   kp.catchup_passes,
		   kp.rows_recomputed,
		   j.strategy,
		   coalesce(l.workers, 0) AS workers,
		   j.messages,
		   j.max_rate,
		   coalesce(j.max_replica_lag,
					pg_catalog.current_setting('background_ddl.max_replica_lag')::interval)
			 AS max_replica_lag,
		   coalesce(j.batch_time, pg_catalog.current_setting('background_ddl.batch_time')::interval)
			 AS batch_time,
		   coalesce(j.max_workers,
					pg_catalog.current_setting('background_ddl.max_workers_per_job')::integer)
			 AS max_workers,
		   CASE
			 WHEN j.state = 'paused' THEN 'paused (resume_ddl resumes it)'
			 WHEN pg_catalog.pg_is_in_recovery() THEN
			   CASE WHEN j.state IN ('queued', 'running', 'cancelling') THEN 'runs on the primary' END
			 WHEN j.state NOT IN ('queued', 'running') OR l.pid IS NOT NULL THEN
			   CASE
				 WHEN l.wait_event = 'SyncRep'
				   THEN 'the synchronous standby (its commit waits for synchronous_standby_names)'
				 WHEN w.locktype = 'virtualxid'
				   THEN 'old snapshots' || coalesce(': transactions of pid ' || w.blockers, '')
				 WHEN w.locktype IS NOT NULL
				   THEN 'a lock: ' || w.mode || ' on ' || w.what ||
						coalesce(' held by pid ' || w.blockers || coalesce(hq.sessions, ''), '') || lt.tries
				 WHEN l.lock_relid IS NOT NULL
				   THEN 'a lock: ' || l.lock_mode || ' on ' || l.lock_relid::pg_catalog.regclass::text ||
						coalesce(' held by pid ' || l.lock_holders || coalesce(hq.sessions, ''), '') ||
						lt.tries
				 WHEN l.phase = 'waiting for lock'
				   THEN 'a lock (asked for without queueing, then for a short lock_timeout, and asked again)' ||
						lt.tries
				 WHEN l.waiting_for IS NOT NULL THEN l.waiting_for
				 WHEN kp.waiting_for IS NOT NULL THEN kp.waiting_for
			   END
			 WHEN dep.id IS NOT NULL THEN 'job ' || dep.id
			 WHEN j.published_by <> j.id
			   THEN 'the publication of its group ' || pg_catalog.quote_literal(j.cutover_group) ||
					' by job ' || j.published_by
			 WHEN j.not_before > now()
			   THEN j.given_back_for || ' (its worker was given back until ' ||
					greatest(j.not_before, j.rate_not_before)::text || ')' ||
					CASE WHEN j.given_back_for LIKE 'a lock%' THEN lt.tries ELSE '' END
			 WHEN j.in_flight AND
				  background_ddl.restart_not_before(j.attempt_started_at, j.attempts) > now()
			   THEN coalesce(j.given_back_for, 'a restart after a crash') || ', not before ' ||
					background_ddl.restart_not_before(j.attempt_started_at, j.attempts)::text
			 ELSE 'a free worker (' || q.position || ' in the queue of background_ddl.max_workers)'
		   END AS waiting_on,
		   j.after AS after_jobs,
		   ch.chain,
		   ch.position AS chain_position,
		   j.cleanup_pending,
		   j.cutover,
		   j.cutover_window,
		   j.cutover_max_writes,
		   j.cutover_group,
		   j.wal_bytes,
		   j.temp_bytes,
		   j.dirtied_bytes,
		   j.changes_caught_up,
		   CASE WHEN j.capture_samples > 0
			 THEN pg_catalog.round(j.capture_ns / j.capture_samples / 1000.0, 1)
		   END AS capture_overhead_us,
		   /* the names of the job's waited_us and retries (JobWaitReason, JobRetryReason) */
		   (SELECT pg_catalog.jsonb_object_agg(reason, pg_catalog.round(j.waited_us[i] / 1e6, 1))
			  FROM pg_catalog.unnest(ARRAY['lock', 'rate', 'replica lag', 'cutover', 'transactions',
										   'nodes', 'queued']) WITH ORDINALITY AS r(reason, i)
			 WHERE j.waited_us[i] >= 50000) AS waited,
		   (SELECT pg_catalog.jsonb_object_agg(reason, j.retries[i])
			  FROM pg_catalog.unnest(ARRAY['lock', 'deadlock', 'fair share', 'cancelled worker',
										   'error', 'crash']) WITH ORDINALITY AS r(reason, i)
			 WHERE j.retries[i] > 0) AS retries,
		   j.estimate
	  FROM background_ddl.job j
	  LEFT JOIN pg_catalog.pg_database d ON d.oid = j.database_oid
	  LEFT JOIN pg_catalog.pg_roles r ON r.oid = j.owner_oid
	  LEFT JOIN background_ddl.live_jobs() l ON l.job_id = j.id
	  LEFT JOIN LATERAL (SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) AS name
						   FROM pg_catalog.pg_class c
						   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
						  WHERE c.oid = j.target_oid
							AND j.state IN ('queued', 'running', 'paused', 'cancelling')) t ON true
	  CROSS JOIN LATERAL background_ddl.kind_progress(j.kind, j.kind_state, j.rows_done,
													  j.rows_total, l.pid) kp
	  /* the function behind pg_locks: the view is read often */
	  LEFT JOIN LATERAL (SELECT lk.locktype, lk.mode,
								coalesce(lk.relation::pg_catalog.regclass::text, lk.locktype) AS what,
								nullif(pg_catalog.array_to_string(pg_catalog.pg_blocking_pids(l.pid), ', '), '')
								  AS blockers
						   FROM pg_catalog.pg_lock_status() lk
						  WHERE lk.pid = l.pid AND NOT lk.granted LIMIT 1) w ON true
	  /*
	   * The sessions that hold the lock it waits for: their state and query,
	   * as pg_stat_activity shows them to the reader (another role's query
	   * only to pg_read_all_stats)
	   */
	  LEFT JOIN LATERAL (SELECT ' (' || pg_catalog.string_agg(a.pid || ': ' || coalesce(a.state, '?') || ', ' ||
															  pg_catalog.left(pg_catalog.regexp_replace(a.query, '\s+', ' ', 'g'), 80),
															  '; ' ORDER BY a.pid) || ')' AS sessions
						   FROM pg_catalog.pg_stat_activity a
						  WHERE coalesce(w.blockers, l.lock_holders) IS NOT NULL
							AND a.pid = ANY (pg_catalog.string_to_array(coalesce(w.blockers, l.lock_holders), ', ')::integer[])) hq ON true
	  /* how often its tries for a lock failed (retries) */
	  CROSS JOIN LATERAL (SELECT coalesce('; ' || nullif(j.retries[1], 0) || ' tries failed so far', '')
								 AS tries) lt
	  LEFT JOIN LATERAL (SELECT count(*) AS position
						   FROM background_ddl.job q
						   LEFT JOIN background_ddl.live_jobs() ql ON ql.job_id = q.id
						  WHERE q.state IN ('queued', 'running') AND ql.pid IS NULL AND q.id <= j.id
							AND j.state IN ('queued', 'running') AND l.pid IS NULL) q ON true
	  /*
	   * Its chain: the jobs each after the one before (pg_bgddl submit -f),
	   * named by the first; a job after none, or after several, starts one
	   */
	  CROSS JOIN LATERAL (WITH RECURSIVE up(id, after, depth) AS (
							SELECT j.id, j.after, 1
							UNION ALL
							SELECT p.id, p.after, up.depth + 1
							  FROM up JOIN background_ddl.job p ON p.id = up.after[1]
							 WHERE pg_catalog.cardinality(up.after) = 1)
						  SELECT pg_catalog.min(up.id) AS chain, pg_catalog.max(up.depth) AS position
							FROM up) ch
	  /* the first job it starts after that has not ended yet */
	  LEFT JOIN LATERAL (SELECT pg_catalog.min(dj.id) AS id FROM background_ddl.job dj
						  WHERE dj.id = ANY (j.after) AND j.state = 'queued'
							AND dj.state IN ('queued', 'running', 'paused', 'cancelling')) dep ON true
	 CROSS JOIN LATERAL (SELECT CASE WHEN r.oid IS NULL THEN false
									 ELSE pg_catalog.pg_has_role(j.owner_oid, 'USAGE') END
							 OR pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
							 AS visible) v;

GRANT SELECT ON pg_stat_background_ddl TO PUBLIC;
