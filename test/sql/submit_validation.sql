-- Submitting: what becomes a job, what runs normally, and that every
-- invalid statement fails at submit with PostgreSQL's usual error and
-- leaves nothing behind.
CREATE EXTENSION background_ddl;
CREATE EXTENSION amcheck;

SHOW background_ddl;
CREATE TABLE events AS
  SELECT g AS id, g % 100 AS account, md5(g::text) AS payload
  FROM generate_series(1, 20000) g;

-- Off (the default): a normal, blocking statement.
CREATE MATERIALIZED VIEW mv_blocking AS SELECT id FROM events WHERE account = 1;
SELECT count(*) FROM mv_blocking;
SELECT count(*) AS jobs FROM pg_stat_background_ddl;

SET background_ddl = on;

-- Errors of parse analysis, name conflicts and options: nothing persisted.
CREATE MATERIALIZED VIEW mv_bad AS SELEC 1;
CREATE MATERIALIZED VIEW mv_bad AS SELECT * FROM no_such_table;
CREATE MATERIALIZED VIEW mv_bad AS SELECT no_such_column FROM events;
CREATE MATERIALIZED VIEW mv_bad AS SELECT 1/0 AS x;  -- constant-folded at submit
-- An error only the data reveals fails the job, which drops its placeholder.
CREATE MATERIALIZED VIEW mv_bad AS SELECT id / (id - 10) AS x FROM events;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT state, error FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS leftovers FROM pg_class WHERE relname = 'mv_bad';
CREATE MATERIALIZED VIEW mv_blocking AS SELECT 1 AS x;
CREATE MATERIALIZED VIEW events AS SELECT 1 AS x;
CREATE MATERIALIZED VIEW no_such_schema.mv AS SELECT 1 AS x;
CREATE MATERIALIZED VIEW mv_bad (a, b, c) AS SELECT 1 AS x;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE state <> 'failed';

-- Statements that run normally even while on.
CREATE MATERIALIZED VIEW IF NOT EXISTS mv_blocking AS SELECT 1 AS x;
CREATE MATERIALIZED VIEW mv_nodata AS SELECT id FROM events WITH NO DATA;
SELECT relispopulated FROM pg_class WHERE relname = 'mv_nodata';
CREATE TABLE t_ctas AS SELECT 1 AS x WITH NO DATA;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE state <> 'failed';

-- A valid statement: NOTICE, normal command tag, returns at once (the job
-- is still unfinished: sv_gate() holds its worker while we hold advisory
-- lock 81).
CREATE FUNCTION sv_gate(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 1 THEN PERFORM pg_advisory_xact_lock_shared(81); END IF; RETURN x; END $$;
SELECT pg_advisory_lock(81);
CREATE MATERIALIZED VIEW mv_a AS SELECT sv_gate(id) AS id, upper(payload) AS p FROM events WHERE account < 10;
SELECT last_ddl_job() = max(id) AS last_is_newest FROM pg_stat_background_ddl;
SELECT kind, target, command, state IN ('queued', 'running') AS unfinished
  FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT pg_advisory_unlock(81);

-- The name is reserved at once.
CREATE MATERIALIZED VIEW mv_a AS SELECT 1 AS x;
CREATE TABLE mv_a (x int);
-- REFRESH in the transaction that submits it: a job after the view's job;
-- reading the view there builds it there, as the blocking statement would
-- have built it.
BEGIN;
CREATE MATERIALIZED VIEW mv_a2 AS SELECT id FROM events WHERE account < 10;
REFRESH MATERIALIZED VIEW mv_a2;
SELECT count(*) FROM mv_a2;
ROLLBACK;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM mv_a;

-- IF NOT EXISTS for a new name is a job like any other.
CREATE MATERIALIZED VIEW IF NOT EXISTS mv_b AS SELECT id FROM events WHERE account = 2;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM mv_b;

-- Transactional: a rolled-back submit leaves no job and no object, and
-- last_ddl_job() forgets it.
SELECT last_ddl_job() AS before_rollback \gset
BEGIN;
CREATE MATERIALIZED VIEW mv_rolled_back AS SELECT id FROM events;
ROLLBACK;
SELECT last_ddl_job() = :before_rollback AS last_job_unchanged;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE target = 'public.mv_rolled_back';
SELECT count(*) AS leftovers FROM pg_class WHERE relname = 'mv_rolled_back';

-- Also to a savepoint.
BEGIN;
SAVEPOINT s;
CREATE MATERIALIZED VIEW mv_rolled_back AS SELECT id FROM events;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE target = 'public.mv_rolled_back';

-- Inside an explicit transaction: the job starts once it commits.
BEGIN;
CREATE MATERIALIZED VIEW mv_in_xact AS SELECT id FROM events WHERE account = 3;
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT wait_ddl(last_ddl_job(), '1s');  -- could never finish: an error at once
ROLLBACK;
-- Read in the transaction that submits it, it is built there and then (as
-- the blocking statement would have built it); the job succeeds at COMMIT,
-- and a ROLLBACK leaves nothing.
BEGIN;
CREATE MATERIALIZED VIEW mv_unusable AS SELECT id FROM events;
SELECT count(*) FROM mv_unusable;
SELECT state, strategy FROM pg_stat_background_ddl WHERE id = last_ddl_job();
ROLLBACK;
SELECT count(*) AS left_over FROM pg_class WHERE relname = 'mv_unusable';
BEGIN;
CREATE MATERIALIZED VIEW mv_in_xact AS SELECT id FROM events WHERE account = 3;
COMMIT;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM mv_in_xact;

-- From a function and a DO block, as the blocking statement could.
CREATE FUNCTION make_mv(name text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE MATERIALIZED VIEW %I AS SELECT id FROM events WHERE account = 4', name);
  RETURN last_ddl_job();
END $$;
SELECT make_mv('mv_from_function') = last_ddl_job() AS returned_its_id;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM mv_from_function;
DO $$ BEGIN CREATE MATERIALIZED VIEW mv_from_do AS SELECT id FROM events WHERE account = 5; END $$;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM mv_from_do;

-- Schema-qualified targets and quoting.
CREATE SCHEMA "Other Schema";
CREATE MATERIALIZED VIEW "Other Schema"."Mixed Case" AS SELECT id FROM events WHERE account = 6;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT target FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) FROM "Other Schema"."Mixed Case";

-- The job resolves names as they were at submit: a table of the same name
-- that appears later, earlier in the submitter's search_path, is ignored.
CREATE SCHEMA shadow;
SET search_path = shadow, public;
BEGIN;
CREATE MATERIALIZED VIEW public.mv_bound AS SELECT id FROM events WHERE account = 7;
CREATE TABLE shadow.events (id int, account int, payload text);
COMMIT;
RESET search_path;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM mv_bound;
