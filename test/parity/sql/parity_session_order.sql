--
-- Scripts in the order they were written: the statements after a job
-- change, read or alter what it builds, with no wait between them (no
-- parity_wait): they end as with background_ddl off.
--
\set SHOW_CONTEXT never
CREATE TABLE ps (g int);
INSERT INTO ps SELECT generate_series(1, 1000);

-- Archive, then purge: in a transaction, and in autocommit.
BEGIN;
SELECT * INTO ps_arch FROM ps WHERE g <= 100;
DELETE FROM ps WHERE g <= 100;
COMMIT;
CREATE TABLE ps_arch2 AS SELECT * FROM ps WHERE g <= 200;
DELETE FROM ps WHERE g <= 200;
SELECT (SELECT count(*) FROM ps_arch) AS archived, (SELECT count(*) FROM ps_arch2) AS archived2,
       (SELECT count(*) FROM ps) AS left_rows;

-- A summary, then an order inserted; a report over a partitioned table,
-- then a partition detached and dropped.
CREATE MATERIALIZED VIEW ps_summary AS SELECT count(*) AS n, sum(g) AS s FROM ps;
INSERT INTO ps VALUES (5000);
SELECT * FROM ps_summary;
CREATE TABLE ps_sales (d int, v int) PARTITION BY RANGE (d);
CREATE TABLE ps_sales_1 PARTITION OF ps_sales FOR VALUES FROM (0) TO (10);
CREATE TABLE ps_sales_2 PARTITION OF ps_sales FOR VALUES FROM (10) TO (20);
INSERT INTO ps_sales SELECT g % 20, g FROM generate_series(1, 2000) g;
CREATE TABLE ps_rollup AS SELECT d, count(*) AS n, sum(v) AS v FROM ps_sales GROUP BY d;
ALTER TABLE ps_sales DETACH PARTITION ps_sales_2;
DROP TABLE ps_sales_2;
SELECT count(*) AS groups, sum(n) AS n, sum(v) AS v FROM ps_rollup;

-- A migration: a table made, then keyed and logged; an index made, then
-- the constraint that uses it.
CREATE UNLOGGED TABLE ps_t AS SELECT g AS id FROM generate_series(1, 1000) g;
ALTER TABLE ps_t ADD PRIMARY KEY (id);
ALTER TABLE ps_t SET LOGGED;
\d ps_t
CREATE TABLE ps_customers (id int, email text);
INSERT INTO ps_customers SELECT g, 'u' || g FROM generate_series(1, 1000) g;
CREATE UNIQUE INDEX CONCURRENTLY ps_email ON ps_customers (email);
ALTER TABLE ps_customers ADD CONSTRAINT ps_customers_email_key UNIQUE USING INDEX ps_email;
CREATE UNIQUE INDEX ps_customers_id ON ps_customers (id);
INSERT INTO ps_customers VALUES (1, 'dup');
\d ps_customers

-- PostgreSQL's indexing.sql: a partition's index attached in the
-- transaction that built it; an index on a tree whose sub-partitioned
-- partition has an index ON ONLY it, which is attached as it is (the tree
-- below it is not indexed, and the index stays invalid).
BEGIN;
CREATE TABLE ps_idx (id int) PARTITION BY RANGE (id);
CREATE TABLE ps_idx1 PARTITION OF ps_idx FOR VALUES FROM (1) TO (10);
CREATE INDEX ps_idx_id ON ONLY ps_idx (id);
CREATE INDEX ps_idx1_id ON ps_idx1 (id);
ALTER INDEX ps_idx_id ATTACH PARTITION ps_idx1_id;
COMMIT;
CREATE TABLE ps_tree (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE ps_tree1 PARTITION OF ps_tree FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (a);
CREATE TABLE ps_tree11 PARTITION OF ps_tree1 FOR VALUES FROM (0) TO (50);
CREATE TABLE ps_tree12 PARTITION OF ps_tree1 FOR VALUES FROM (50) TO (100);
CREATE TABLE ps_tree2 PARTITION OF ps_tree FOR VALUES FROM (100) TO (200);
INSERT INTO ps_tree SELECT g % 200, g FROM generate_series(1, 1000) g;
CREATE INDEX ps_tree1_a ON ONLY ps_tree1 (a);
CREATE INDEX ps_tree_a ON ps_tree (a); CALL parity_wait();
SELECT c.relname, i.indisvalid, p.inhparent::regclass AS attached_to
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  LEFT JOIN pg_inherits p ON p.inhrelid = c.oid
 WHERE c.relname LIKE 'ps\_idx%' OR c.relname LIKE 'ps\_tree%' ORDER BY c.relname;

-- A unique index on a view, then the view refreshed: the refresh checks
-- it, and its wait ends.
CREATE MATERIALIZED VIEW ps_mv AS SELECT g FROM ps;
CREATE UNIQUE INDEX ps_mv_g ON ps_mv (g);
INSERT INTO ps VALUES (5000);
REFRESH MATERIALIZED VIEW ps_mv; CALL parity_wait();
SELECT count(*) FROM ps_mv;
