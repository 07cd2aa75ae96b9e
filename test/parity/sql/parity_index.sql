--
-- CREATE INDEX, as a job, ends as the blocking statement does: the same
-- index, or the same error, at the same statement.
--
\set SHOW_CONTEXT never
CREATE TABLE pi (id int, a int, b text, c int4range, pay jsonb);
INSERT INTO pi SELECT g, g % 100, 'b' || g, int4range(g, g + 1), jsonb_build_object('k', g)
  FROM generate_series(1, 3000) g;
CREATE INDEX pi_a ON pi (a); CALL parity_wait();
CREATE UNIQUE INDEX pi_id ON pi (id); CALL parity_wait();
CREATE INDEX CONCURRENTLY pi_b ON pi (b); CALL parity_wait();
CREATE INDEX pi_expr ON pi (lower(b)) WHERE a > 10; CALL parity_wait();
CREATE INDEX pi_gin ON pi USING gin (pay); CALL parity_wait();
CREATE INDEX pi_gist ON pi USING gist (c); CALL parity_wait();
CREATE INDEX pi_incl ON pi (a) INCLUDE (b) WITH (fillfactor = 80); CALL parity_wait();
CREATE INDEX ON pi (a, id DESC NULLS LAST); CALL parity_wait();
CREATE INDEX ON pi (a, id DESC NULLS LAST); CALL parity_wait();
CREATE INDEX pi_ops ON pi (b text_pattern_ops, a int4_ops); CALL parity_wait();
CREATE INDEX IF NOT EXISTS pi_a ON pi (b); CALL parity_wait();
\d pi

-- Definition errors, at submit.
CREATE INDEX pi_bad ON pi ((row(a, b))); CALL parity_wait();
CREATE INDEX pi_bad ON pi (ctid); CALL parity_wait();
CREATE INDEX pi_bad ON pi (a) WHERE xmin::text <> ''; CALL parity_wait();
CREATE INDEX pi_bad ON pi ((a + xmax::text::int)); CALL parity_wait();
CREATE INDEX pi_bad ON pi (nosuch); CALL parity_wait();
CREATE INDEX pi_bad ON pi USING hash (a DESC); CALL parity_wait();
CREATE INDEX pi_bad ON pi USING nosuch (a); CALL parity_wait();
CREATE UNIQUE INDEX pi_bad ON pi USING gin (pay); CALL parity_wait();
CREATE INDEX pi_bad ON pi USING hash (a, id); CALL parity_wait();
CREATE INDEX pi_bad ON pi USING hash (a) INCLUDE (b); CALL parity_wait();
CREATE INDEX pi_bad ON pi (a) WITH (fillfactor = 5); CALL parity_wait();
CREATE INDEX pi_bad ON pi (a) WITH (nosuch = 1); CALL parity_wait();
CREATE INDEX pi_bad ON pi ((random())); CALL parity_wait();
CREATE INDEX pi_bad ON pi (a) WHERE random() > 0.5; CALL parity_wait();
CREATE INDEX pi_bad ON pi (a jsonb_ops); CALL parity_wait();
CREATE INDEX pi_bad ON pi (b COLLATE "nosuch"); CALL parity_wait();
CREATE INDEX pi_bad ON pi (a) TABLESPACE nosuch; CALL parity_wait();
CREATE INDEX pi_a ON pi (b); CALL parity_wait();
CREATE INDEX pi_bad ON nosuch (a); CALL parity_wait();
CREATE INDEX pi_bad ON pi_view (a); CALL parity_wait();
CREATE VIEW pi_view AS SELECT * FROM pi;
CREATE INDEX pi_bad ON pi_view (a); CALL parity_wait();
BEGIN; CREATE INDEX CONCURRENTLY pi_tx ON pi (a); ROLLBACK;
CREATE FUNCTION pi_in_function() RETURNS void LANGUAGE plpgsql AS
  $$ BEGIN CREATE INDEX CONCURRENTLY pi_fn ON pi (a); END $$;
SELECT pi_in_function(); CALL parity_wait();
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 'pi\_bad%' OR relname IN ('pi_tx', 'pi_fn');

-- In a transaction; a unique violation in the data.
BEGIN; CREATE INDEX pi_tx ON pi (b); COMMIT; CALL parity_wait();
BEGIN; CREATE INDEX pi_tx_read ON pi (b, a); ALTER INDEX pi_tx_read RENAME TO pi_tx_renamed; COMMIT; CALL parity_wait();
CREATE TABLE pi_u (k int, v text);
INSERT INTO pi_u SELECT g, 'v' || g FROM generate_series(1, 1000) g;
INSERT INTO pi_u VALUES (500, 'again');
CREATE UNIQUE INDEX pi_u_k ON pi_u (k); CALL parity_wait();
SELECT count(*) AS indexes_left FROM pg_index WHERE indrelid = 'pi_u'::regclass;
-- A key too large for a btree page, found as the index is written
CREATE TABLE pi_wide (t text);
INSERT INTO pi_wide SELECT string_agg(md5(g::text), '') FROM generate_series(1, 100) g;
CREATE INDEX pi_wide_t ON pi_wide (t); CALL parity_wait();
SELECT count(*) AS indexes_left FROM pg_index WHERE indrelid = 'pi_wide'::regclass;

-- Temporary tables, ON ONLY, partitioned tables, materialized views.
CREATE TEMP TABLE pi_temp (a int);
CREATE INDEX pi_temp_a ON pi_temp (a); CALL parity_wait();
CREATE TABLE pi_parted (a int) PARTITION BY RANGE (a);
CREATE TABLE pi_parted_1 PARTITION OF pi_parted FOR VALUES FROM (0) TO (10);
CREATE INDEX pi_parted_only ON ONLY pi_parted (a); CALL parity_wait();
CREATE INDEX pi_parted_a ON pi_parted (a); CALL parity_wait();
\d pi_parted
-- A partitioned table's index (a job builds it partition by partition): a
-- sub-partitioned partition and the default included, partitions' matching
-- indexes attached (a leaf's, a sub-partitioned table's); a unique index
-- without the partition key, CONCURRENTLY, and a duplicate in one partition
-- fail.
CREATE TABLE pi_tree (id int NOT NULL, at date NOT NULL, k int) PARTITION BY RANGE (at);
CREATE TABLE pi_tree_1 PARTITION OF pi_tree FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE pi_tree_2 PARTITION OF pi_tree FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')
  PARTITION BY HASH (k);
CREATE TABLE pi_tree_2a PARTITION OF pi_tree_2 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pi_tree_2b PARTITION OF pi_tree_2 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE pi_tree_def PARTITION OF pi_tree DEFAULT;
INSERT INTO pi_tree SELECT g, date '2026-01-01' + g % 90, g % 7 FROM generate_series(1, 2000) g;
CREATE INDEX pi_tree_1_k_id ON pi_tree_1 (k, id); CALL parity_wait();
CREATE INDEX pi_tree_2_k_id ON pi_tree_2 (k, id); CALL parity_wait();
CREATE INDEX pi_tree_k ON pi_tree (k, id); CALL parity_wait();
CREATE UNIQUE INDEX pi_tree_id ON pi_tree (id); CALL parity_wait();
CREATE UNIQUE INDEX pi_tree_id_at ON pi_tree (id, at); CALL parity_wait();
CREATE INDEX CONCURRENTLY pi_tree_c ON pi_tree (k); CALL parity_wait();
INSERT INTO pi_tree VALUES (5, date '2026-01-06', 5);
CREATE UNIQUE INDEX pi_tree_dup ON pi_tree (at, id, k); CALL parity_wait();
SELECT c.relname, i.indisvalid, p.inhparent::regclass AS attached_to
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  LEFT JOIN pg_inherits p ON p.inhrelid = c.oid
 WHERE c.relname LIKE 'pi\_tree%' ORDER BY c.relname;
-- With a foreign table among the partitions: a unique index is refused;
-- another skips it.
CREATE EXTENSION file_fdw;
CREATE SERVER pi_files FOREIGN DATA WRAPPER file_fdw;
CREATE TABLE pi_ft (id int NOT NULL, at date NOT NULL, k int) PARTITION BY RANGE (at);
CREATE TABLE pi_ft_1 PARTITION OF pi_ft FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE FOREIGN TABLE pi_ft_2 PARTITION OF pi_ft FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')
  SERVER pi_files OPTIONS (filename '/dev/null');
INSERT INTO pi_ft_1 SELECT g, date '2026-01-01' + g % 28, g % 7 FROM generate_series(1, 500) g;
CREATE UNIQUE INDEX pi_ft_id ON pi_ft (id, at); CALL parity_wait();
CREATE INDEX pi_ft_k ON pi_ft (k); CALL parity_wait();
SELECT c.relname, i.indisvalid, p.inhparent::regclass AS attached_to
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  LEFT JOIN pg_inherits p ON p.inhrelid = c.oid
 WHERE c.relname LIKE 'pi\_ft%' ORDER BY c.relname;
CREATE MATERIALIZED VIEW pi_mv AS SELECT id, a FROM pi WHERE id <= 100; CALL parity_wait();
CREATE UNIQUE INDEX pi_mv_id ON pi_mv (id); CALL parity_wait();
\d pi_mv
SELECT indexrelid::regclass, indisvalid, indisready FROM pg_index
 WHERE indrelid IN ('pi'::regclass, 'pi_mv'::regclass) ORDER BY indexrelid::regclass::text;

-- REINDEX of an index and of a table: rebuilt (a job rebuilds each index
-- as REINDEX CONCURRENTLY does), valid, with the same names
REINDEX INDEX pi_mv_id; CALL parity_wait();
REINDEX TABLE pi_mv; CALL parity_wait();
SELECT indexrelid::regclass, indisvalid, indisready FROM pg_index
 WHERE indrelid = 'pi_mv'::regclass ORDER BY indexrelid::regclass::text;
