-- REINDEX INDEX | TABLE as a job: the index, or every index of the table
-- and of its TOAST table, rebuilt one at a time as REINDEX ... CONCURRENTLY
-- rebuilds it.  At submit, PostgreSQL's errors; what REINDEX CONCURRENTLY
-- cannot rebuild runs in the session.  (Crashes and cancels in the middle
-- of a rebuild: the TAP test 007_kinds.)
ALTER TABLE background_ddl.job ALTER COLUMN id RESTART WITH 9000;
CREATE TABLE ri (id int PRIMARY KEY, v text, w int);
INSERT INTO ri SELECT g, md5(g::text), g % 10 FROM generate_series(1, 2000) g;
CREATE INDEX ri_v ON ri (v);
CREATE INDEX ri_lw ON ri (lower(v));
CREATE TABLE ri_before AS SELECT relname, oid FROM pg_class WHERE relname IN ('ri_pkey', 'ri_v', 'ri_lw');
SET background_ddl = on;
SELECT explain_ddl('REINDEX TABLE ri');
REINDEX INDEX ri_v;
SELECT kind, target, strategy FROM pg_stat_background_ddl WHERE id = last_ddl_job();
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, chunks_done FROM pg_stat_background_ddl WHERE id = last_ddl_job();
-- A new index under the name, valid; the others untouched.
SELECT c.relname, c.oid <> b.oid AS rebuilt, i.indisvalid
  FROM ri_before b JOIN pg_class c ON c.relname = b.relname JOIN pg_index i ON i.indexrelid = c.oid
 ORDER BY 1;
REINDEX TABLE CONCURRENTLY ri;
CALL await_ddl(last_ddl_job(), '60s');
-- Three indexes and the TOAST table's.
SELECT state, target, chunks_done FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT c.relname, c.oid <> b.oid AS rebuilt, i.indisvalid
  FROM ri_before b JOIN pg_class c ON c.relname = b.relname JOIN pg_index i ON i.indexrelid = c.oid
 ORDER BY 1;
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE '%\_cc%';
-- REINDEX TABLE CONCURRENTLY skips an invalid index (what a failed CREATE
-- UNIQUE INDEX CONCURRENTLY left), with PostgreSQL's WARNING.
SET background_ddl = off;
CREATE UNIQUE INDEX CONCURRENTLY ri_w_unique ON ri (w);
SET background_ddl = on;
REINDEX TABLE CONCURRENTLY ri;
CALL await_ddl(last_ddl_job(), '60s');
SELECT chunks_done FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT indisvalid FROM pg_index WHERE indexrelid = 'ri_w_unique'::regclass;
DROP INDEX ri_w_unique;
-- A partitioned table: its leaves' indexes, each rebuilt and still attached
-- to its parent's index; REINDEX of the parent's index does the same.
CREATE TABLE ri_parted (a int, b text) PARTITION BY RANGE (a);
CREATE TABLE ri_parted_1 PARTITION OF ri_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE ri_parted_2 PARTITION OF ri_parted FOR VALUES FROM (100) TO (200) PARTITION BY LIST (b);
CREATE TABLE ri_parted_2_x PARTITION OF ri_parted_2 FOR VALUES IN ('x');
INSERT INTO ri_parted SELECT g, 'x' FROM generate_series(0, 199) g;
SET background_ddl = off;
CREATE INDEX ri_parted_a ON ri_parted (a);
SET background_ddl = on;
CREATE TEMP TABLE ri_parted_before AS
  SELECT indexrelid::regclass::text AS name, indexrelid AS oid FROM pg_index
   WHERE indrelid IN (SELECT relid FROM pg_partition_tree('ri_parted'));
BEGIN;
REINDEX TABLE ri_parted;
ROLLBACK;
REINDEX TABLE ri_parted;
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, target, chunks_done FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT b.name, i.indexrelid <> b.oid AS rebuilt, i.indisvalid,
       (SELECT inhparent::regclass FROM pg_inherits WHERE inhrelid = i.indexrelid) AS attached_to
  FROM ri_parted_before b JOIN pg_index i ON i.indexrelid = b.name::regclass ORDER BY 1;
REINDEX INDEX ri_parted_a;
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, target, chunks_done FROM pg_stat_background_ddl WHERE id = last_ddl_job();
DROP TABLE ri_parted;
-- The index of a job of this session not built yet (its name a
-- placeholder): REINDEX waits for the job, then is a job of its own.
CREATE INDEX ri_w ON ri (w);
REINDEX INDEX ri_w;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'ri_w'::regclass;
DROP INDEX ri_w;
-- Refused at submit, with the blocking statement's errors.
REINDEX (BOGUS) INDEX ri_v;
REINDEX INDEX ri;
REINDEX TABLE ri_v;
REINDEX INDEX nosuch;
REINDEX (TABLESPACE pg_global) INDEX CONCURRENTLY ri_v;
REINDEX (TABLESPACE pg_global) INDEX ri_v;
BEGIN;
REINDEX INDEX CONCURRENTLY ri_v;
ROLLBACK;
CREATE ROLE ri_reader;
GRANT SELECT ON ri TO ri_reader;
SET ROLE ri_reader;
REINDEX INDEX ri_v;
REINDEX TABLE ri;
RESET ROLE;
REVOKE SELECT ON ri FROM ri_reader;
DROP ROLE ri_reader;
-- As PostgreSQL runs them: a table without indexes (its NOTICE), and, in
-- the session, a temporary table's, a system catalog's, an exclusion
-- constraint's index; SCHEMA, SYSTEM and DATABASE are not jobs.
CREATE TABLE ri_none (a int);
REINDEX TABLE ri_none;
CREATE TEMP TABLE ri_temp (a int PRIMARY KEY);
REINDEX TABLE ri_temp;
REINDEX INDEX pg_class_relname_nsp_index;
CREATE TABLE ri_excl (r int4range, EXCLUDE USING gist (r WITH &&));
REINDEX TABLE ri_excl;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE id >= 9000;
-- In the submitting transaction, a statement that redefines the table has
-- the rebuild done first, there, as the blocking REINDEX would have; one
-- that drops it ends the job, cancelled.
SELECT relfilenode AS ri_v_storage FROM pg_class WHERE relname = 'ri_v' \gset
BEGIN;
REINDEX INDEX ri_v;
ALTER TABLE ri ADD COLUMN x int;
COMMIT;
SELECT state, strategy FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT relfilenode <> :ri_v_storage AS new_storage, indisvalid
  FROM pg_class JOIN pg_index ON indexrelid = oid WHERE relname = 'ri_v';
BEGIN;
REINDEX INDEX ri_v;
DROP TABLE ri;
COMMIT;
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
DROP TABLE ri_before, ri_none, ri_excl;
