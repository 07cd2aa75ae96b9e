-- A job from submit to success: what the view shows, and that the result is
-- an ordinary materialized view, identical to one built by the blocking
-- statement.
CREATE TABLE accounts AS SELECT g AS account, 'acct ' || g AS name FROM generate_series(0, 99) g;
ALTER TABLE accounts ADD PRIMARY KEY (account);
SET background_ddl = on;

-- Blocking and background builds of the same query.
SET background_ddl = off;
CREATE MATERIALIZED VIEW mv_join_blocking AS
  SELECT e.id, a.name, length(e.payload) AS len
  FROM events e JOIN accounts a USING (account) WHERE e.id % 3 = 0;
SET background_ddl = on;
CREATE MATERIALIZED VIEW mv_join AS
  SELECT e.id, a.name, length(e.payload) AS len
  FROM events e JOIN accounts a USING (account) WHERE e.id % 3 = 0;
SELECT last_ddl_job() AS job \gset

-- Unusable until done: queries fail, the placeholder is unpopulated.
SELECT relispopulated FROM pg_class WHERE oid = 'mv_join'::regclass;

SELECT wait_ddl(:job, '60s');

-- The view row of a finished job (not its pid: its worker may still be leaving).
SELECT datname = current_database() AS right_db, usename = current_user AS right_user,
       kind, target, state, phase, progress, rows_done, rows_total > 0 AS estimated,
       chunks_done >= 1 AS chunked, chunks_done = chunks_total AS all_chunks,
       rate > 0 AS has_rate, eta, submitted_at <= started_at AS started_after_submit,
       started_at <= finished_at AS finished_after_start, attempts, error,
       cutover_at = finished_at AS cutover_at_end, dirty_rows
  FROM pg_stat_background_ddl WHERE id = :job;

-- Exactly the query's content, both ways.
SELECT count(*) FROM mv_join;
SELECT count(*) AS missing FROM (TABLE mv_join_blocking EXCEPT ALL TABLE mv_join) x;
SELECT count(*) AS extra FROM (TABLE mv_join EXCEPT ALL TABLE mv_join_blocking) x;

-- An ordinary materialized view: same definition, owner, flags.
SELECT pg_get_viewdef('mv_join'::regclass) = pg_get_viewdef('mv_join_blocking'::regclass) AS same_definition;
SELECT c.relispopulated, c.relkind, pg_get_userbyid(c.relowner) = current_user AS owned_by_submitter
  FROM pg_class c WHERE c.oid = 'mv_join'::regclass;
-- Dependencies were recorded at submit: the base table cannot be dropped alone.
DROP TABLE accounts;
-- The blocking REFRESH works on it as on any materialized view, and
-- changes nothing.
SET background_ddl = off;
REFRESH MATERIALIZED VIEW mv_join;
SELECT count(*) AS extra FROM (TABLE mv_join EXCEPT ALL TABLE mv_join_blocking) x;
CREATE UNIQUE INDEX ON mv_join (id);
REFRESH MATERIALIZED VIEW CONCURRENTLY mv_join;
SET background_ddl = on;

-- Every chunk is checkpointed once, and the chunks tile the driving table
-- up to its size when the capture began (rows added after that are
-- captured changes).
SELECT count(*) = (SELECT chunks_done FROM pg_stat_background_ddl WHERE id = :job) AS one_row_per_chunk,
       sum(rows_done) = (SELECT count(*) FROM mv_join) AS rows_add_up,
       bool_and(start_block = coalesce(prev_end, 0)) AS contiguous,
       max(end_block) = (SELECT work_total FROM background_ddl.job WHERE id = :job) AS whole_table
  FROM (SELECT *, lag(end_block) OVER (ORDER BY start_block) AS prev_end
          FROM background_ddl.chunk WHERE job_id = :job) c;

-- An index created on the placeholder before the job runs is kept up to
-- date by the job (checked with amcheck: every heap tuple is indexed).
BEGIN;
CREATE MATERIALIZED VIEW mv_indexed AS SELECT id, account FROM events WHERE account < 50;
CREATE UNIQUE INDEX mv_indexed_id ON mv_indexed (id);
COMMIT;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT bt_index_parent_check('mv_indexed_id', true);
SELECT count(*) FROM mv_indexed;

-- A query that cannot be split runs in one batch, in the cut-over
-- transaction, and records the snapshot its result equals.
CREATE MATERIALIZED VIEW mv_agg AS SELECT account, count(DISTINCT id % 7) AS n FROM events GROUP BY account;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT chunks_done, chunks_total, cutover_snapshot IS NOT NULL AS has_snapshot,
       rows_done, progress
  FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT sum(n), count(*) FROM mv_agg;

-- An empty base table.
CREATE TABLE empty_base (x int);
CREATE MATERIALIZED VIEW mv_empty AS SELECT x FROM empty_base;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM mv_empty;
SELECT relispopulated FROM pg_class WHERE oid = 'mv_empty'::regclass;

-- The settings of the submitting session apply in the job.
SET TimeZone = 'Asia/Tokyo';
SET DateStyle = 'SQL, DMY';
SET background_ddl = off;
CREATE MATERIALIZED VIEW mv_settings_blocking AS
  SELECT id, (timestamptz '2020-01-01 00:00:00+00' + id * interval '1 hour')::text AS t
  FROM events WHERE id <= 100;
SET background_ddl = on;
CREATE MATERIALIZED VIEW mv_settings AS
  SELECT id, (timestamptz '2020-01-01 00:00:00+00' + id * interval '1 hour')::text AS t
  FROM events WHERE id <= 100;
RESET TimeZone;
RESET DateStyle;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) AS differences FROM
  (SELECT * FROM mv_settings EXCEPT ALL SELECT * FROM mv_settings_blocking) x;
SELECT t FROM mv_settings WHERE id = 1;

-- What the job's own statements say (INFO, NOTICE, WARNING) is kept with the
-- job: all of it counted, the first 100 kept, readable by its role.
CREATE FUNCTION noisy(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF x <= 3 THEN
    RAISE WARNING 'row % is early', x USING HINT = 'Just saying.';
  ELSIF x <= 150 THEN
    RAISE NOTICE 'row %', x;
  END IF;
  RETURN x;
END $$;
CREATE MATERIALIZED VIEW mv_noisy AS SELECT noisy(id) AS id FROM events WHERE id <= 1000;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT messages FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS kept, count(DISTINCT seq) AS distinct_seq, min(seq), max(seq)
  FROM ddl_messages(last_ddl_job());
SELECT severity, message, hint, context FROM ddl_messages(last_ddl_job())
 WHERE severity = 'WARNING' ORDER BY message;
SELECT * FROM ddl_messages(NULL);
SELECT * FROM ddl_messages(-1);

-- The restart backoff after a crash, as the scheduler and the view compute it
-- (one function): a second after the first attempt, doubling, at most a minute
SELECT a AS attempts,
       background_ddl.restart_not_before('2026-01-01 00:00:00+00', a) -
         '2026-01-01 00:00:00+00'::timestamptz AS backoff
  FROM unnest(ARRAY[0, 1, 2, 3, 6, 7, 40]) a;
