-- A submit inside transactions: savepoints, exception blocks, PREPARE
-- TRANSACTION; the order of the errors at submit; reading a placeholder.
ALTER TABLE background_ddl.job ALTER COLUMN id RESTART WITH 1000;
CREATE TABLE edges AS SELECT g AS id FROM generate_series(1, 5000) g;
SET background_ddl = on;

-- The name is checked before the query, as the blocking statement does:
-- "already exists", not "division by zero".
CREATE MATERIALIZED VIEW edges_taken AS SELECT 1 AS x WITH NO DATA;
CREATE MATERIALIZED VIEW edges_taken AS SELECT 1/0 AS x;
SET background_ddl = off;
CREATE MATERIALIZED VIEW edges_taken AS SELECT 1/0 AS x;
SET background_ddl = on;
-- Then the query (planning evaluates 1/0), then privileges.
CREATE MATERIALIZED VIEW edges_new AS SELECT 1/0 AS x;

-- A rollback to a savepoint forgets the jobs submitted since.
BEGIN;
CREATE MATERIALIZED VIEW edges_a AS SELECT id FROM edges;
SAVEPOINT s;
CREATE MATERIALIZED VIEW edges_b AS SELECT id FROM edges;
SELECT last_ddl_job();
ROLLBACK TO SAVEPOINT s;
SELECT last_ddl_job();
COMMIT;
SELECT last_ddl_job(), wait_ddl(last_ddl_job(), '60s');
SELECT count(*) AS jobs_for_b FROM pg_stat_background_ddl WHERE target = 'public.edges_b';

-- So does an exception block that undid the submit.
DO $$
BEGIN
  BEGIN
    CREATE MATERIALIZED VIEW edges_c AS SELECT id FROM edges;
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
END $$;
SELECT last_ddl_job();
SELECT count(*) AS jobs_for_c FROM pg_stat_background_ddl WHERE target = 'public.edges_c';

-- A prepared transaction: its job is no longer "of the current
-- transaction"; it exists once COMMIT PREPARED runs, which wakes the
-- scheduler at once (wait_ddl's bound is far below the scheduler's 1 s
-- poll, which the missing wake-up would cost).
BEGIN;
CREATE MATERIALIZED VIEW edges_d AS SELECT id FROM edges;
PREPARE TRANSACTION 'edges_p';
SELECT last_ddl_job();
SELECT wait_ddl(last_ddl_job(), '10ms');
COMMIT PREPARED 'edges_p';
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM edges_d;

-- Used in the submitting transaction, a job's target is built there, as
-- the blocking statement would have built it: read, or read by another
-- job's query (which is then a job over an ordinary view).
BEGIN;
CREATE MATERIALIZED VIEW edges_e AS SELECT id FROM edges;
SELECT count(*) FROM edges_e;
ROLLBACK;
BEGIN;
CREATE MATERIALIZED VIEW edges_f AS SELECT id FROM edges;
CREATE MATERIALIZED VIEW edges_g AS SELECT id FROM edges_f;
SELECT kind, target, state FROM pg_stat_background_ddl WHERE target LIKE '%edges_f' OR target LIKE '%edges_g' ORDER BY id;
ROLLBACK;
-- Another session reading the placeholder of a committed job fails at
-- once, saying which job builds it.  This session waits for its own job,
-- but not for one that waits for it: here for its advisory lock.
CREATE FUNCTION edges_slow(x int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_advisory_xact_lock_shared(77); RETURN x; END $$;
SELECT pg_advisory_lock(77);
CREATE MATERIALIZED VIEW edges_held AS SELECT edges_slow(id) AS id FROM edges;
SELECT last_ddl_job() AS held_job \gset
CREATE EXTENSION dblink;
SELECT dblink_exec('dbname=' || current_database(), 'SELECT count(*) FROM edges_held');
DROP EXTENSION dblink;
\set VERBOSITY terse
SELECT count(*) FROM edges_held;
\set VERBOSITY default
SELECT cancel_ddl(:held_job);
SELECT pg_advisory_unlock(77);
DROP FUNCTION edges_slow(int);
SELECT count(*) AS leftovers FROM pg_class WHERE relname IN ('edges_e', 'edges_f', 'edges_g');

-- Waiting: the id must not be NULL; a job of the current transaction is an
-- error at once.
SELECT wait_ddl(NULL);
BEGIN;
CREATE MATERIALIZED VIEW edges_h AS SELECT id FROM edges;
SELECT wait_ddl(last_ddl_job());
ROLLBACK;

DROP MATERIALIZED VIEW edges_taken, edges_a, edges_d;
DROP TABLE edges;
