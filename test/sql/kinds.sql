-- The other kinds of job: CREATE TABLE AS / SELECT INTO, REFRESH
-- MATERIALIZED VIEW, CREATE INDEX.  What they accept and refuse at submit,
-- and that each result is what the blocking statement makes.
ALTER TABLE background_ddl.job ALTER COLUMN id RESTART WITH 3000;
CREATE TABLE k AS SELECT g AS id, g % 7 AS grp, md5(g::text) AS payload FROM generate_series(1, 20000) g;
SET background_ddl = on;
-- k_gate() holds a job's worker while we hold advisory lock 79.
CREATE FUNCTION k_gate(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 1 THEN PERFORM pg_advisory_xact_lock_shared(79); END IF; RETURN x; END $$;
-- Another session, which sees the jobs of this one as every other session does.
CREATE EXTENSION dblink;
SELECT dblink_connect('other', 'dbname=' || current_database());

-- CREATE TABLE AS: column names, UNLOGGED, WITH, the name reserved.
SELECT pg_advisory_lock(79);
CREATE UNLOGGED TABLE k_ctas (a, b) WITH (fillfactor = 70) AS SELECT k_gate(id), payload FROM k WHERE grp = 1;
SELECT last_ddl_job() AS ctas_job \gset
SELECT kind, target, strategy FROM pg_stat_background_ddl WHERE id = :ctas_job;
CREATE TABLE k_ctas (x int);
-- Until the job succeeds the name is held by a placeholder, which the
-- table replaces: another session may not read it, and what would be lost
-- with it is refused there, background or not.
SELECT dblink_exec('other', 'SELECT count(*) FROM k_ctas');
SELECT dblink_exec('other', 'GRANT SELECT ON k_ctas TO PUBLIC');
SELECT dblink_exec('other', 'ALTER TABLE k_ctas ALTER COLUMN a SET STATISTICS 10');
SELECT dblink_exec('other', 'COMMENT ON COLUMN k_ctas.a IS ''lost''');
SELECT dblink_exec('other', 'ALTER TABLE k_ctas RENAME COLUMN a TO c');
SELECT dblink_exec('other', 'CREATE INDEX ON k_ctas (a)');
-- In this session, CREATE INDEX in the background is a job after it, on
-- that table; the statements that are not jobs see the job done: each
-- waits for it (here once the gate is open), then runs on the table.
CREATE INDEX ON k_ctas (a);
SELECT last_ddl_job() AS ctas_index_job \gset
SELECT pg_advisory_unlock(79);
GRANT SELECT ON k_ctas TO PUBLIC;
ALTER TABLE k_ctas ALTER COLUMN a SET STATISTICS 10;
COMMENT ON COLUMN k_ctas.a IS 'kept';
SELECT wait_ddl(:ctas_job, '60s');
CALL await_ddl(:ctas_index_job, '60s');
SELECT has_table_privilege('public', 'k_ctas', 'SELECT') AS grant_kept,
       col_description('k_ctas'::regclass, 1) AS comment_kept,
       (SELECT attstattarget FROM pg_attribute WHERE attrelid = 'k_ctas'::regclass AND attname = 'a') AS statistics;
SELECT indexrelid::regclass AS index, indisvalid FROM pg_index WHERE indrelid = 'k_ctas'::regclass;
SELECT c.relkind, c.relpersistence, c.reloptions, pg_get_userbyid(c.relowner) = current_user AS owned,
       (SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
         WHERE attrelid = c.oid AND attnum > 0) AS columns
  FROM pg_class c WHERE c.oid = 'k_ctas'::regclass;
SELECT (SELECT count(*) FROM (TABLE k_ctas EXCEPT ALL SELECT id, payload FROM k WHERE grp = 1) a)
     + (SELECT count(*) FROM (SELECT id, payload FROM k WHERE grp = 1 EXCEPT ALL TABLE k_ctas) b) AS differences;
-- No dependency on the base table is left, as with the blocking statement.
SELECT count(*) AS dependencies FROM pg_depend
 WHERE objid = 'k_ctas'::regclass AND refobjid = 'k'::regclass;
-- Nothing of the job is left in the extension's schema.
SELECT count(*) AS hidden_left FROM pg_class WHERE relnamespace = 'background_ddl'::regnamespace
   AND relname LIKE 'ctas%';

-- TABLESPACE, as the blocking statement places it.
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE k_space LOCATION '';
RESET allow_in_place_tablespaces;
CREATE TABLE k_spaced TABLESPACE k_space AS SELECT id FROM k WHERE id <= 1000;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT t.spcname, (SELECT count(*) FROM k_spaced) AS rows
  FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.relname = 'k_spaced';
DROP TABLE k_spaced;
DROP TABLESPACE k_space;

-- Rows go in several at a time, as COPY inserts them: more rows than one
-- insert takes (1,000), and some wider than the bytes it takes (64 kB),
-- which TOAST stores; each row exactly once.
CREATE TABLE k_wide AS
  SELECT id, CASE WHEN id % 500 = 0 THEN repeat(payload, 3000) ELSE payload END AS body FROM k;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) AS rows, count(*) FILTER (WHERE length(body) > 65535) AS wide,
       (SELECT count(*) FROM (TABLE k_wide EXCEPT ALL
          SELECT id, CASE WHEN id % 500 = 0 THEN repeat(payload, 3000) ELSE payload END FROM k) a) AS differences
  FROM k_wide;
DROP TABLE k_wide;

-- SELECT ... INTO is a CREATE TABLE AS too.
SELECT id, grp INTO k_into FROM k WHERE id <= 100;
SELECT kind, wait_ddl(id, '60s') FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) FROM k_into;

-- IF NOT EXISTS that finds the name runs as usual (skips).
CREATE TABLE IF NOT EXISTS k_into AS SELECT 1 AS x;
-- What only this session has or sees runs in this session, as if
-- background_ddl were off.
CREATE TEMP TABLE k_temp AS SELECT 1 AS x;
CREATE TEMP TABLE k_tmp_source (x int);
INSERT INTO k_tmp_source VALUES (7);
CREATE TABLE k_from_temp AS SELECT x FROM k_tmp_source;
SELECT k_temp.x, k_from_temp.x AS x_from_temp FROM k_temp, k_from_temp;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE target LIKE '%k_temp' OR target LIKE '%k_from_temp';
-- Parameters are bound at submit, as the blocking statement binds them:
-- EXECUTE ... USING, a PL/pgSQL variable, CREATE TABLE ... AS EXECUTE.
DO $$ DECLARE v int := 3; BEGIN EXECUTE 'CREATE TABLE k_param AS SELECT $1 AS v' USING v; END $$;
SELECT wait_ddl(last_ddl_job(), '60s');
CREATE FUNCTION k_ctas_with_variable(v int) RETURNS void LANGUAGE plpgsql AS
  $$ BEGIN CREATE TABLE k_param_var AS SELECT v AS x, id FROM k WHERE id <= v; END $$;
SELECT k_ctas_with_variable(3);
SELECT wait_ddl(last_ddl_job(), '60s');
PREPARE k_prepared(int) AS SELECT id, grp FROM k WHERE id <= $1;
CREATE TABLE k_executed AS EXECUTE k_prepared(2 + 2);
SELECT wait_ddl(last_ddl_job(), '60s');
CREATE TABLE k_executed_bad AS EXECUTE k_prepared('four');
CREATE TABLE k_executed_bad AS EXECUTE k_prepared(1, 2);
SELECT (SELECT v FROM k_param) AS param, (SELECT count(*) FROM k_param_var) AS variable,
       (SELECT count(*) FROM k_executed) AS executed;
DEALLOCATE k_prepared;
DROP TABLE k_from_temp, k_param, k_param_var, k_executed;

-- DROP TABLE of the name while the job runs cancels it, and drops both
-- the placeholder and the hidden table.
CREATE FUNCTION k_slow(x int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.01); RETURN x; END $$;
CREATE TABLE k_dropped AS SELECT k_slow(id) AS id FROM k;
SELECT last_ddl_job() AS dropped_job \gset
DROP TABLE k_dropped;
SELECT state, error FROM pg_stat_background_ddl WHERE id = :dropped_job;
SELECT count(*) AS left_over FROM pg_class WHERE relname IN ('k_dropped', 'ctas_' || :dropped_job);

-- REFRESH: the old content stays readable; the new one replaces it at once.
SET background_ddl = off;
CREATE MATERIALIZED VIEW k_mv AS SELECT k_gate(id) AS id, grp, payload FROM k WHERE grp < 3;
CREATE UNIQUE INDEX k_mv_id ON k_mv (id);
CREATE INDEX k_mv_grp ON k_mv (grp) WHERE grp > 0;
SET background_ddl = on;
DELETE FROM k WHERE id % 2 = 0;
SELECT oid AS mv_oid, relfilenode AS mv_filenode FROM pg_class WHERE relname = 'k_mv' \gset
SELECT pg_advisory_lock(79);
REFRESH MATERIALIZED VIEW CONCURRENTLY k_mv;
SELECT last_ddl_job() AS refresh_job \gset
SELECT kind, target FROM pg_stat_background_ddl WHERE id = :refresh_job;
-- While it runs other sessions read the old content, and the view is the
-- view: a grant on it stays.
SELECT * FROM dblink('other', 'SELECT count(*) FROM k_mv') AS t(old_rows bigint);
GRANT SELECT ON k_mv TO PUBLIC;
-- A second refresh of another session while it runs, blocking or not, names the job.
SELECT dblink_exec('other', 'REFRESH MATERIALIZED VIEW k_mv');
SELECT dblink_exec('other', 'SET background_ddl = on');
SELECT dblink_exec('other', 'REFRESH MATERIALIZED VIEW k_mv');
SELECT dblink_exec('other', 'RESET background_ddl');
SELECT pg_advisory_unlock(79);
SELECT wait_ddl(:refresh_job, '60s');
SELECT has_table_privilege('public', 'k_mv', 'SELECT') AS grant_kept;
SELECT (SELECT count(*) FROM (TABLE k_mv EXCEPT ALL SELECT id, grp, payload FROM k WHERE grp < 3) a)
     + (SELECT count(*) FROM (SELECT id, grp, payload FROM k WHERE grp < 3 EXCEPT ALL TABLE k_mv) b) AS differences;
-- The same view (OID), new storage; its indexes are complete and valid.
SELECT oid = :mv_oid AS same_view, relfilenode <> :mv_filenode AS new_storage
  FROM pg_class WHERE relname = 'k_mv';
SELECT count(*) AS indexes_checked
  FROM (SELECT bt_index_parent_check(indexrelid, true) FROM pg_index
         WHERE indrelid = 'k_mv'::regclass) c;
SELECT count(*) AS hidden_left FROM pg_class WHERE relnamespace = 'background_ddl'::regnamespace
   AND relname LIKE 'refresh%';
SET enable_seqscan = off;
SELECT count(*) FROM k_mv WHERE grp = 1;
RESET enable_seqscan;
-- REFRESH's own errors, as the blocking statement gives them.
REFRESH MATERIALIZED VIEW k;
CREATE MATERIALIZED VIEW k_mv_nodata AS SELECT id FROM k WITH NO DATA;
REFRESH MATERIALIZED VIEW CONCURRENTLY k_mv_nodata;
REFRESH MATERIALIZED VIEW k_mv_nodata;
SELECT wait_ddl(last_ddl_job(), '60s');
REFRESH MATERIALIZED VIEW CONCURRENTLY k_mv_nodata;
SELECT relispopulated, (SELECT count(*) FROM k_mv_nodata) FROM pg_class WHERE relname = 'k_mv_nodata';
CREATE ROLE k_stranger;
SET ROLE k_stranger;
REFRESH MATERIALIZED VIEW k_mv;
RESET ROLE;
DROP ROLE k_stranger;

-- CREATE INDEX: built concurrently, unused until valid; the name is taken.
CREATE INDEX ON k (payload);
SELECT last_ddl_job() AS index_job \gset
SELECT kind, target, strategy FROM pg_stat_background_ddl WHERE id = :index_job;
CREATE INDEX k_payload_idx ON k (grp);
CALL await_ddl(:index_job, '60s');
SELECT indisvalid, indisready, pg_get_indexdef(indexrelid) FROM pg_index WHERE indexrelid = 'k_payload_idx'::regclass;
-- Unique, partial, INCLUDE, expression, other access methods.
CREATE UNIQUE INDEX k_id ON k (id) INCLUDE (grp) WHERE id > 0;
CALL await_ddl(last_ddl_job(), '60s');
CREATE INDEX k_lower ON k (lower(payload) COLLATE "C" text_pattern_ops);
CALL await_ddl(last_ddl_job(), '60s');
-- An expression index has the statistics of its expressions from the moment
-- it is valid: ANALYZE ran in the transaction that marked it valid.
SELECT (SELECT xmin FROM pg_index WHERE indexrelid = 'k_lower'::regclass) =
       (SELECT DISTINCT xmin FROM pg_statistic WHERE starelid = 'k_lower'::regclass)
       AS analyzed_as_it_became_valid;
CREATE INDEX CONCURRENTLY k_hash ON k USING hash (payload);
CALL await_ddl(last_ddl_job(), '60s');
CREATE INDEX k_brin ON k USING brin (id);
CALL await_ddl(last_ddl_job(), '60s');
CREATE INDEX k_gin ON k USING gin (to_tsvector('simple', payload));
CALL await_ddl(last_ddl_job(), '60s');
CREATE INDEX k_gist ON k USING gist (int4range(id, id + grp, '[]'));
CALL await_ddl(last_ddl_job(), '60s');
SELECT indexrelid::regclass, indisvalid, pg_get_indexdef(indexrelid) FROM pg_index
 WHERE indrelid = 'k'::regclass ORDER BY indexrelid::regclass::text;
-- How each was built: a btree that is not unique by our own build, chunk by
-- chunk; any other by CREATE INDEX CONCURRENTLY, as every index is with
-- background_ddl.chunked_index_build off.
SELECT target, strategy FROM pg_stat_background_ddl
 WHERE kind = 'CREATE INDEX' AND target LIKE 'public.k\_%' ORDER BY id;
SET background_ddl.chunked_index_build = off;
SELECT explain_ddl('CREATE INDEX ON k (grp)');
CREATE INDEX k_grp_cic ON k (grp);
SELECT strategy FROM pg_stat_background_ddl WHERE id = last_ddl_job();
CALL await_ddl(last_ddl_job(), '60s');
RESET background_ddl.chunked_index_build;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'k_grp_cic'::regclass;
DROP INDEX k_grp_cic;
-- A unique violation fails the job with PostgreSQL's error, and leaves no index.
CREATE UNIQUE INDEX k_grp ON k (grp);
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, error, error_sqlstate, error_detail FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS invalid_left FROM pg_class WHERE relname = 'k_grp';
-- CREATE INDEX IF NOT EXISTS that finds under its name an invalid index of
-- the same definition (what an interrupted CREATE INDEX CONCURRENTLY leaves:
-- here one that failed on duplicates) is a job that rebuilds it; another
-- definition, or a valid index, is skipped as PostgreSQL skips it; errors
-- are PostgreSQL's.  A failed rebuild, as any failed job, leaves no index.
CREATE TABLE k_left (id int, v int);
INSERT INTO k_left SELECT g, g % 10 FROM generate_series(1, 100) g;
SET background_ddl = off;
CREATE UNIQUE INDEX CONCURRENTLY k_left_v ON k_left (v);
SET background_ddl = on;
CREATE UNIQUE INDEX IF NOT EXISTS k_left_v ON k_left (id);
CREATE INDEX IF NOT EXISTS k_left_v ON k_left (v);
CREATE UNIQUE INDEX IF NOT EXISTS k_left_v ON k_left (v) WHERE v > 0;
CREATE UNIQUE INDEX IF NOT EXISTS k_left_v ON k_left (v DESC);
CREATE UNIQUE INDEX IF NOT EXISTS k_left_v ON k_left (nosuchcolumn);
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE target = 'public.k_left_v';
BEGIN;
CREATE UNIQUE INDEX IF NOT EXISTS k_left_v ON k_left (v);
SELECT kind, target, strategy FROM pg_stat_background_ddl WHERE id = last_ddl_job();
ROLLBACK;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'k_left_v'::regclass;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS k_left_v ON k_left (v);
CALL await_ddl(last_ddl_job(), '60s');
SELECT count(*) AS left_over FROM pg_class WHERE relname = 'k_left_v';
SET background_ddl = off;
CREATE UNIQUE INDEX CONCURRENTLY k_left_v ON k_left (v);
SET background_ddl = on;
UPDATE k_left SET v = id;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS k_left_v ON k_left (v);
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, strategy FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT indisvalid, pg_get_indexdef(indexrelid) FROM pg_index WHERE indexrelid = 'k_left_v'::regclass;
CREATE UNIQUE INDEX IF NOT EXISTS k_left_v ON k_left (v);
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE target = 'public.k_left_v';
DROP TABLE k_left;
-- On a partitioned table, the recipe done by hand and left unfinished: the
-- index ON ONLY the table, one partition's index attached, another's
-- attached invalid (its build failed on duplicates, removed since).  The
-- job rebuilds the invalid one, indexes the partitions without one, and the
-- index is valid.
CREATE TABLE k_left_parted (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE k_left_parted_1 PARTITION OF k_left_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE k_left_parted_2 PARTITION OF k_left_parted FOR VALUES FROM (100) TO (200);
CREATE TABLE k_left_parted_3 PARTITION OF k_left_parted FOR VALUES FROM (200) TO (300);
INSERT INTO k_left_parted SELECT g, g FROM generate_series(0, 299) g;
INSERT INTO k_left_parted VALUES (150, 0);
SET background_ddl = off;
CREATE UNIQUE INDEX k_left_parted_a ON ONLY k_left_parted (a);
CREATE UNIQUE INDEX CONCURRENTLY k_left_parted_1_a ON k_left_parted_1 (a);
ALTER INDEX k_left_parted_a ATTACH PARTITION k_left_parted_1_a;
CREATE UNIQUE INDEX CONCURRENTLY k_left_parted_2_a ON k_left_parted_2 (a);
ALTER INDEX k_left_parted_a ATTACH PARTITION k_left_parted_2_a;
SET background_ddl = on;
DELETE FROM k_left_parted WHERE a = 150 AND b = 0;
CREATE UNIQUE INDEX IF NOT EXISTS k_left_parted_a ON k_left_parted (a, b);
CREATE UNIQUE INDEX IF NOT EXISTS k_left_parted_a ON k_left_parted (a);
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, strategy FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT c.relname, i.indisvalid, h.inhparent::regclass AS attached_to, pg_get_indexdef(i.indexrelid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid LEFT JOIN pg_inherits h ON h.inhrelid = c.oid
 WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('k_left_parted')) ORDER BY 1;
DROP TABLE k_left_parted;
-- Refused at submit, with the blocking statement's errors.
CREATE INDEX k_bad ON k (random());
CREATE INDEX k_bad ON k (nosuchcolumn);
CREATE INDEX k_bad ON k USING gin (payload);
CREATE INDEX k_bad ON k USING nosuchmethod (payload);
CREATE INDEX k_id ON k (grp);
-- A partitioned table's index is a job, partition by partition; at submit,
-- PostgreSQL's errors: a unique index without the partition key (also a
-- sub-partition's), CONCURRENTLY.  Its index ON ONLY the table, and a
-- temporary table's, are built in this session.
CREATE TABLE k_parted (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE k_parted_1 PARTITION OF k_parted FOR VALUES FROM (0) TO (10);
CREATE TABLE k_parted_2 PARTITION OF k_parted FOR VALUES FROM (10) TO (20) PARTITION BY LIST (b);
CREATE TABLE k_parted_2_1 PARTITION OF k_parted_2 FOR VALUES IN (1);
INSERT INTO k_parted VALUES (1, 1), (11, 1);
SELECT explain_ddl('CREATE INDEX ON k_parted (a)');
CREATE INDEX ON k_parted (a);
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, strategy, chunks_done, chunks_total, progress FROM pg_stat_background_ddl
 WHERE id = last_ddl_job();
CREATE UNIQUE INDEX k_parted_bad ON k_parted (b);
CREATE UNIQUE INDEX k_parted_bad ON k_parted (a);
CREATE INDEX CONCURRENTLY k_parted_bad ON k_parted (a);
CREATE INDEX k_parted_only ON ONLY k_parted (a);
SELECT relname, indisvalid, inhparent::regclass AS attached_to
  FROM pg_index JOIN pg_class ON oid = indexrelid LEFT JOIN pg_inherits ON inhrelid = oid
 WHERE indrelid IN (SELECT relid FROM pg_partition_tree('k_parted')) ORDER BY relname;
CREATE TEMP TABLE k_temp_for_index (a int);
CREATE INDEX ON k_temp_for_index (a);
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'k_temp_for_index'::regclass;
CREATE ROLE k_reader;
GRANT SELECT ON k TO k_reader;
SET ROLE k_reader;
CREATE INDEX ON k (grp);
RESET ROLE;
REVOKE SELECT ON k FROM k_reader;
DROP ROLE k_reader;
SELECT count(*) AS jobs_for_refused FROM pg_stat_background_ddl WHERE id > :index_job AND target LIKE '%bad%';
-- DROP INDEX of the name while it is a placeholder cancels the job, at once.
-- (A statement on the index in the submitting transaction builds it there,
-- as the blocking statement would have: here PostgreSQL's own error, rolled
-- back to the savepoint, and the job with it.)
BEGIN;
CREATE INDEX k_dropped_idx ON k (grp);
SAVEPOINT s;
CREATE INDEX ON k_dropped_idx ((1));
ROLLBACK TO s;
DROP INDEX k_dropped_idx;
COMMIT;
SELECT state, error FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS left_over FROM pg_class WHERE relname = 'k_dropped_idx';
-- Cancelled before its worker has built anything, an index job holds only
-- the placeholder of its name: cancel_ddl drops it in the caller's
-- transaction.  (Once the index exists the job is 'cancelling' until its
-- worker has dropped it; the TAP test 007_kinds covers that.)
BEGIN;
CREATE INDEX k_cancelled_idx ON k (grp);
SELECT cancel_ddl(last_ddl_job());
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
COMMIT;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) AS left_over FROM pg_class WHERE relname = 'k_cancelled_idx';

-- await_ddl: a procedure that commits between its looks at the job, so it
-- holds no snapshot while it waits (an index build waits for older
-- snapshots: wait_ddl, a function that keeps its statement's, refuses to
-- wait for one).  It ends as the blocking statement would have: quietly,
-- or with the job's error.
CREATE TABLE await_t AS SELECT g AS id, g % 3 AS k FROM generate_series(1, 300) g;
CALL await_ddl(last_ddl_job());
CREATE INDEX await_k ON await_t (k);
SELECT wait_ddl(last_ddl_job());
CALL await_ddl(last_ddl_job());
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
CREATE UNIQUE INDEX await_unique_k ON await_t (k);
CALL await_ddl(last_ddl_job());
CREATE MATERIALIZED VIEW await_mv AS SELECT id / (id - 150) AS x FROM await_t;
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, error_sqlstate FROM pg_stat_background_ddl WHERE id = last_ddl_job();
BEGIN;
CALL await_ddl(last_ddl_job());
ROLLBACK;
CALL await_ddl(999999);
CALL await_ddl(NULL);
DROP TABLE await_t;

DROP TABLE k CASCADE;
DROP TABLE k_ctas, k_into, k_parted;
DROP FUNCTION k_slow(int), k_ctas_with_variable(int), k_gate(int);
SELECT dblink_disconnect('other');
DROP EXTENSION dblink;
