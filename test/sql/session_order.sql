-- A session sees its own jobs as done: its later statements that would
-- change what a job reads, or that use what it builds, are run after it
-- (in the submitting transaction the job is built there first; in a later
-- one the statement waits for it), so that a script keeps its order.
ALTER TABLE background_ddl.job ALTER COLUMN id RESTART WITH 5000;
CREATE TABLE so (g int);
INSERT INTO so SELECT generate_series(1, 1000);
-- so_gate() holds a job's worker while we hold advisory lock 81.
CREATE FUNCTION so_gate(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN PERFORM pg_advisory_xact_lock_shared(81); RETURN x; END $$;
SET background_ddl = on;

-- Archive, then purge: in one transaction (Django's atomic RunSQL) ...
BEGIN;
SELECT * INTO so_arch FROM so WHERE g <= 100;
DELETE FROM so WHERE g <= 100;
COMMIT;
SELECT count(*) AS archived FROM so_arch;
-- ... and in autocommit: the DELETE waits for the job, then deletes.
CREATE TABLE so_arch2 AS SELECT * FROM so WHERE g <= 200;
DELETE FROM so WHERE g <= 200;
SELECT count(*) AS archived FROM so_arch2;
-- A summary does not count a row inserted after it; one that reads the
-- summary waits for it.
CREATE MATERIALIZED VIEW so_summary AS SELECT count(*) AS n FROM so;
INSERT INTO so VALUES (5000);
SELECT n FROM so_summary;
-- A statement that touches none of the session's jobs does not wait.
CREATE MATERIALIZED VIEW so_quiet AS SELECT g FROM so WHERE g > 900;
SELECT count(*) FROM so;
CREATE TABLE so_other (x int);
INSERT INTO so_other VALUES (1);
SELECT count(*) FROM so_quiet;

-- A report over a partitioned table, then its partition detached and
-- dropped: the report has the partition's rows, as the blocking statement's.
CREATE TABLE so_parted (d int, v int) PARTITION BY RANGE (d);
CREATE TABLE so_p1 PARTITION OF so_parted FOR VALUES FROM (0) TO (10);
CREATE TABLE so_p2 PARTITION OF so_parted FOR VALUES FROM (10) TO (20);
INSERT INTO so_parted SELECT g % 20, g FROM generate_series(1, 2000) g;
CREATE TABLE so_rollup AS SELECT d, count(*) AS n FROM so_parted GROUP BY d;
ALTER TABLE so_parted DETACH PARTITION so_p2;
DROP TABLE so_p2;
SELECT count(*) AS groups, sum(n) AS rows FROM so_rollup;

-- A migration: the table is altered once it exists (a primary key, LOGGED),
-- the index named in a constraint once it is built.
CREATE UNLOGGED TABLE so_t AS SELECT g AS id FROM generate_series(1, 1000) g;
ALTER TABLE so_t ADD PRIMARY KEY (id);
ALTER TABLE so_t SET LOGGED;
SELECT relpersistence, (SELECT count(*) FROM pg_index WHERE indrelid = 'so_t'::regclass AND indisprimary) AS primary_keys
  FROM pg_class WHERE oid = 'so_t'::regclass;
CREATE TABLE so_customers (id int, email text);
INSERT INTO so_customers SELECT g, 'u' || g FROM generate_series(1, 1000) g;
CREATE UNIQUE INDEX CONCURRENTLY so_email ON so_customers (email);
ALTER TABLE so_customers ADD CONSTRAINT so_customers_email_key UNIQUE USING INDEX so_email;
SELECT conname, contype FROM pg_constraint WHERE conrelid = 'so_customers'::regclass;
-- A duplicate into a table whose unique index this session builds fails as
-- it would with the index there; another row goes in.
CREATE UNIQUE INDEX so_customers_id ON so_customers (id);
INSERT INTO so_customers VALUES (1, 'dup');
INSERT INTO so_customers VALUES (1001, 'new');
-- A non-unique index changes with every write: writes do not wait for it.
CREATE INDEX so_customers_email_lower ON so_customers (lower(email));
INSERT INTO so_customers VALUES (1002, 'other');
CALL await_ddl(last_ddl_job(), '60s');

-- PostgreSQL's indexing.sql: an index of a partition built in the
-- transaction, then attached to its parent's index there.
BEGIN;
CREATE TABLE so_idx (id int) PARTITION BY RANGE (id);
CREATE TABLE so_idx1 PARTITION OF so_idx FOR VALUES FROM (1) TO (10);
CREATE INDEX so_idx_id ON ONLY so_idx (id);
CREATE INDEX so_idx1_id ON so_idx1 (id);
ALTER INDEX so_idx_id ATTACH PARTITION so_idx1_id;
COMMIT;
SELECT indexrelid::regclass, indisvalid FROM pg_index
 WHERE indexrelid IN ('so_idx_id'::regclass, 'so_idx1_id'::regclass) ORDER BY 1;

-- A statement that becomes a job starts after the jobs it would change: a
-- REFRESH of a view that a table job reads, a view over a view refreshed.
-- (The view's job is held until the DELETE, its reader's until the REFRESH
-- is submitted: neither has ended before the statement that follows it.)
CREATE FUNCTION so_gate82(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN PERFORM pg_advisory_xact_lock_shared(82); RETURN x; END $$;
SELECT pg_advisory_lock(81), pg_advisory_lock(82);
CREATE MATERIALIZED VIEW so_mv AS SELECT so_gate(g) AS g FROM so WHERE g < 500;
SELECT last_ddl_job() AS mv \gset
CREATE TABLE so_from_mv AS SELECT count(*) AS n FROM so_mv WHERE so_gate82(g) > 0;
SELECT last_ddl_job() AS from_mv \gset
SELECT pg_advisory_unlock(81);
DELETE FROM so WHERE g < 300;
REFRESH MATERIALIZED VIEW so_mv;
SELECT last_ddl_job() AS refresh \gset
SELECT id - :mv AS job, after_jobs = ARRAY[:from_mv]::bigint[] AS after_its_reader
  FROM pg_stat_background_ddl WHERE id = :refresh;
SELECT pg_advisory_unlock(82);
CALL await_ddl(:refresh, '60s');
SELECT (SELECT n FROM so_from_mv) AS before_refresh, (SELECT count(*) FROM so_mv) AS after_refresh;

-- A job that failed gives its error to the first statement of the session
-- that touches it; then it is forgotten.
CREATE MATERIALIZED VIEW so_fails AS SELECT 1 / (g - 600) AS x FROM so;
SELECT last_ddl_job() AS fails \gset
DELETE FROM so WHERE g = 999;
DELETE FROM so WHERE g = 999;
-- wait_ddl (or await_ddl) tells the session it has seen the job end.
CREATE MATERIALIZED VIEW so_fails2 AS SELECT 1 / (g - 600) AS x FROM so;
SELECT wait_ddl(last_ddl_job(), '60s');
DELETE FROM so WHERE g = 998;
-- A job this session cancels is forgotten too.
CREATE MATERIALIZED VIEW so_cancelled AS SELECT g FROM so;
SELECT cancel_ddl(last_ddl_job());
DELETE FROM so WHERE g = 997;

-- In REPEATABLE READ the transaction's snapshot would not see the job's
-- result: the statement is refused, saying how to wait first.
SELECT pg_advisory_lock(81);
CREATE TABLE so_rr AS SELECT so_gate(g) AS g FROM so WHERE g IN (1, 991);
SELECT last_ddl_job() AS rr \gset
BEGIN ISOLATION LEVEL REPEATABLE READ;
DELETE FROM so WHERE g > 990;
ROLLBACK;
SELECT pg_advisory_unlock(81);
CALL await_ddl(:rr, '60s');

-- In a function the statement keeps its snapshot: it waits for a job that
-- does not wait for snapshots ...
CREATE TABLE so_fn_arch AS SELECT g FROM so WHERE g > 980;
DO $$ BEGIN DELETE FROM so WHERE g > 980; END $$;
SELECT count(*) AS archived FROM so_fn_arch;
-- ... and refuses to wait for an index build (which waits for old snapshots).
SELECT pg_advisory_lock(81);
CREATE UNIQUE INDEX so_g ON so (so_gate(g));
DO $$ BEGIN INSERT INTO so VALUES (1000); END $$;
SELECT pg_advisory_unlock(81);
CALL await_ddl(last_ddl_job(), '60s');
DO $$ BEGIN INSERT INTO so VALUES (500); END $$;
-- A cached plan analysed before the job: analysed again, and waits.
PREPARE so_purge AS DELETE FROM so WHERE g > 970;
CREATE TABLE so_arch3 AS SELECT g FROM so WHERE g > 970;
EXECUTE so_purge;
SELECT count(*) AS archived FROM so_arch3;

-- wait_ddl keeps its snapshot: it refuses a job that starts after an index
-- build as it refuses an index build (await_ddl waits for both).
CREATE MATERIALIZED VIEW so_uv AS SELECT g FROM so;
CALL await_ddl(last_ddl_job(), '60s');
SELECT pg_advisory_lock(81);
CREATE UNIQUE INDEX so_uv_g ON so_uv (so_gate(g));
SELECT last_ddl_job() AS uv_index \gset
REFRESH MATERIALIZED VIEW so_uv;
SELECT after_jobs = ARRAY[:uv_index]::bigint[] AS after_the_index
  FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SET statement_timeout = '60s';
SELECT wait_ddl(last_ddl_job());
RESET statement_timeout;
SELECT pg_advisory_unlock(81);
CALL await_ddl(last_ddl_job(), '60s');

-- Another session neither waits for this session's jobs nor builds them:
-- it reads the sources as they are, and is refused the targets.
CREATE EXTENSION dblink;
SELECT dblink_connect('other', 'dbname=' || current_database());
SELECT pg_advisory_lock(81);
CREATE TABLE so_held AS SELECT so_gate(g) AS g FROM so;
SELECT * FROM dblink('other', 'SELECT count(*) FROM so') AS t(n bigint);
SELECT dblink_exec('other', 'DELETE FROM so WHERE g = 960');
SELECT dblink_exec('other', 'SELECT count(*) FROM so_held');
-- This session would wait for a job that waits for it (its advisory lock):
-- it is refused instead.
\set VERBOSITY terse
DELETE FROM so WHERE g = 961;
\set VERBOSITY default
SELECT pg_advisory_unlock(81);
DELETE FROM so WHERE g = 961;
-- (the job's result has the row this session deleted after it, not the
-- row the other session deleted first)
SELECT array_agg(g) AS held_rows FROM so_held WHERE g IN (960, 961);

SELECT dblink_disconnect('other');
DROP EXTENSION dblink;
DEALLOCATE so_purge;
RESET background_ddl;
DROP TABLE so, so_arch, so_arch2, so_other, so_parted, so_rollup, so_t, so_customers, so_idx,
  so_from_mv, so_rr, so_fn_arch, so_arch3, so_held CASCADE;
DROP FUNCTION so_gate(int), so_gate82(int);
