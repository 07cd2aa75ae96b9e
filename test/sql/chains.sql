-- Jobs that start after others (background_ddl.after, and a view over a view
-- still being built), submit_ddl with an idempotency key, and the surface of
-- the replica-lag limit.
CREATE TABLE ch (id int, k int);
INSERT INTO ch SELECT g, g % 5 FROM generate_series(1, 1000) g;
CREATE FUNCTION ch_slow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN PERFORM pg_sleep(0.01); RETURN x; END $$;

-- submit_ddl: one statement as a job; with the same key again, the same job
SELECT submit_ddl('CREATE MATERIALIZED VIEW ch_a AS SELECT k, count(*) AS n FROM ch GROUP BY k',
                  'ch-1') AS a \gset
SELECT submit_ddl('  CREATE MATERIALIZED VIEW ch_a AS SELECT k, count(*) AS n FROM ch GROUP BY k ;',
                  'ch-1') = :a AS same_job;
SELECT submit_ddl('CREATE MATERIALIZED VIEW ch_other AS SELECT 1', 'ch-1');
SELECT submit_ddl('SELECT 1; SELECT 2');
SELECT submit_ddl(NULL);
-- what cannot run inside the caller's transaction is refused before it runs
\set VERBOSITY sqlstate
SELECT submit_ddl('COMMIT');
SELECT submit_ddl('COPY ch FROM STDIN');
\set VERBOSITY default
SELECT submit_ddl('COPY ch TO STDOUT');
SELECT submit_ddl('CREATE MATERIALIZED VIEW ch_a AS SELECT 1');
-- a statement that is not a job runs as PostgreSQL runs it
SELECT submit_ddl('CREATE TABLE ch_plain (x int)') IS NULL AS ran_in_the_foreground;
SELECT to_regclass('ch_plain') IS NOT NULL AS created;
-- rolled back: no job, and its key is free again
BEGIN;
SELECT submit_ddl('CREATE MATERIALIZED VIEW ch_rb AS SELECT 1 AS x', 'ch-rb') IS NOT NULL AS submitted;
ROLLBACK;
SELECT count(*) AS jobs_with_the_key FROM background_ddl.job WHERE idempotency_key = 'ch-rb';
-- (the first job ends first: its capture triggers set pg_class.relhastriggers,
-- and a GRANT on the table at that moment fails, tuple concurrently updated)
SELECT wait_ddl(:a, '60s');
-- Each role has keys of its own: another role's 'ch-1' is a job of its
-- own, neither the first job nor a conflict with it
CREATE ROLE ch_role;
GRANT CREATE ON SCHEMA public TO ch_role;
GRANT SELECT ON ch TO ch_role;
SET ROLE ch_role;
SELECT submit_ddl('CREATE MATERIALIZED VIEW ch_role_a AS SELECT k FROM ch', 'ch-1') AS role_a \gset
SELECT :role_a <> :a AS own_job,
       submit_ddl('CREATE MATERIALIZED VIEW ch_role_a AS SELECT k FROM ch', 'ch-1') = :role_a AS same_job;
RESET ROLE;
SELECT wait_ddl(:role_a, '60s');

-- A view over a view still being built is queued after its job; so is what
-- background_ddl.after names.  Cancelled, the first job ends those after it,
-- which never start, and leave nothing.
SET background_ddl = on;
CREATE MATERIALIZED VIEW ch_s1 AS SELECT ch_slow(id) AS id, k FROM ch;
SELECT last_ddl_job() AS s1 \gset
CREATE MATERIALIZED VIEW ch_s2 AS SELECT id FROM ch_s1 WHERE k = 1;
SELECT last_ddl_job() AS s2 \gset
SET background_ddl.after = :'s1';
CREATE INDEX ch_k ON ch (k);
SELECT last_ddl_job() AS ix \gset
RESET background_ddl.after;
SELECT id = :s2 AS view_over_view, after_jobs = ARRAY[:s1]::bigint[] AS after_first,
       waiting_on = 'job ' || :s1 AS waits_for_first
  FROM pg_stat_background_ddl WHERE id IN (:s2, :ix) ORDER BY id;
SELECT cancel_ddl(:s1);
SELECT wait_ddl(:s2, '60s') AS second;
CALL await_ddl(:ix, '60s');
SELECT id = :s1 AS first, state, error = 'job ' || :s1 || ' was cancelled' AS why
  FROM pg_stat_background_ddl WHERE id IN (:s1, :s2, :ix) ORDER BY id;
SELECT count(*) AS leftovers FROM pg_class WHERE relname IN ('ch_s1', 'ch_s2', 'ch_k');

-- An index on the table of a CREATE TABLE AS job still running: built on
-- the job's table once it has taken the placeholder's place
CREATE TABLE ch_t AS SELECT id, k FROM ch WHERE ch_slow(id) % 2 = 0;
SELECT last_ddl_job() AS t \gset
CREATE INDEX ch_t_k ON ch_t (k);
SELECT last_ddl_job() AS ti \gset
SELECT after_jobs = ARRAY[:t]::bigint[] AS after_the_table FROM pg_stat_background_ddl WHERE id = :ti;
CALL await_ddl(:ti, '60s');
SELECT indisvalid, indrelid = 'ch_t'::regclass AS on_the_table FROM pg_index WHERE indexrelid = 'ch_t_k'::regclass;
SELECT count(*) FROM ch_t;

-- A view and a table over the table of a CREATE TABLE AS job still running:
-- checked against its placeholder, queued after it, reading the job's table;
-- a REFRESH of a view still being built is queued after its job (a second
-- one is refused).  All exact once they ran.
CREATE TABLE ch_u AS SELECT id, k FROM ch WHERE id % 3 = 0 AND ch_slow(id) > 0;
SELECT last_ddl_job() AS u \gset
CREATE MATERIALIZED VIEW ch_uv AS SELECT k, count(*) AS n FROM ch_u GROUP BY k;
SELECT last_ddl_job() AS uv \gset
CREATE TABLE ch_uc AS SELECT u.id FROM ch_u u JOIN ch_uv v USING (k) WHERE u.id < 30;
SELECT last_ddl_job() AS uc \gset
REFRESH MATERIALIZED VIEW ch_uv;
SELECT last_ddl_job() AS ur \gset
-- (a second one of this session starts after the first; another session's
-- is refused, kinds.sql)
REFRESH MATERIALIZED VIEW ch_uv;
SELECT last_ddl_job() AS ur2 \gset
\set VERBOSITY terse
CREATE MATERIALIZED VIEW ch_not_yet AS SELECT ch_nope FROM ch_u;
\set VERBOSITY default
-- (the table reads both: it starts after the view, which starts after the
-- table; the refresh of the view starts after the table that reads it, as
-- the statements ran in that order)
SELECT id, kind, after_jobs = ARRAY[:u]::bigint[] AS after_the_table,
       after_jobs = ARRAY[:uv]::bigint[] AS after_the_view,
       after_jobs = ARRAY[:uc]::bigint[] AS after_its_reader,
       after_jobs = ARRAY[:ur]::bigint[] AS after_the_refresh
  FROM pg_stat_background_ddl WHERE id IN (:uv, :uc, :ur, :ur2) ORDER BY id;
CALL await_ddl(:uc, '60s');
CALL await_ddl(:ur2, '60s');
SELECT state, count(*) FROM pg_stat_background_ddl WHERE id IN (:u, :uv, :uc, :ur, :ur2) GROUP BY state;
SELECT (SELECT array_agg(n ORDER BY k) FROM ch_uv) =
       (SELECT array_agg(n ORDER BY k) FROM (SELECT k, count(*) AS n FROM ch_u GROUP BY k) q) AS view_exact,
       (SELECT array_agg(id ORDER BY id) FROM ch_uc) AS table_rows,
       pg_get_viewdef('ch_uv') LIKE '%FROM ch_u%' AS reads_the_table;
-- Cancelled, the table's job ends the view and the refresh after it: nothing left
CREATE TABLE ch_w AS SELECT id, k FROM ch WHERE ch_slow(id) > 0;
SELECT last_ddl_job() AS w \gset
CREATE MATERIALIZED VIEW ch_wv AS SELECT k FROM ch_w;
SELECT last_ddl_job() AS wv \gset
REFRESH MATERIALIZED VIEW ch_wv;
SELECT last_ddl_job() AS wr \gset
SELECT cancel_ddl(:w);
CALL await_ddl(:wr, '60s');
SELECT state, error FROM pg_stat_background_ddl WHERE id IN (:w, :wv, :wr) ORDER BY id;
SELECT count(*) AS leftovers FROM pg_class WHERE relname IN ('ch_w', 'ch_wv')
   OR relnamespace = 'background_ddl'::regnamespace AND relname ~ '^(ctas|refresh)_';

-- A failed job: those after it are cancelled, and none can be submitted after it
CREATE MATERIALIZED VIEW ch_fail AS SELECT 1 / (id - 500) AS x FROM ch;
SELECT last_ddl_job() AS f \gset
SET background_ddl.after = :'f';
CREATE TABLE ch_after_fail AS SELECT 1 AS x;
SELECT last_ddl_job() AS af \gset
RESET background_ddl.after;
SELECT wait_ddl(:af, '60s');
SELECT id = :f AS failed_one, state, error = 'job ' || :f || ' failed' AS why_cancelled
  FROM pg_stat_background_ddl WHERE id IN (:f, :af) ORDER BY id;
SET background_ddl.after = :'f';
\set VERBOSITY terse
CREATE TABLE ch_never AS SELECT 1 AS x;
\set VERBOSITY default
RESET background_ddl.after;
SET background_ddl.after = '1, x';
SET background_ddl.after = '0';
SET background_ddl.after = '999999';
CREATE TABLE ch_never AS SELECT 1 AS x;
RESET background_ddl.after;
SET background_ddl = off;

-- The replica-lag limit: the server's setting, or a job's own
SHOW background_ddl.max_replica_lag;
SELECT alter_ddl(:a, max_replica_lag => '-1 s');
SELECT alter_ddl(:a, max_replica_lag => '500ms') AS altered_an_ended_job;
SELECT max_replica_lag = '0' AS off FROM pg_stat_background_ddl WHERE id = :a;
