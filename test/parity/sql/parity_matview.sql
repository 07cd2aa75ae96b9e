--
-- CREATE MATERIALIZED VIEW and REFRESH [CONCURRENTLY], as jobs, end as the
-- blocking statements do: content, indexes, and errors.
--
\set SHOW_CONTEXT never
CREATE TABLE pm (id int, grp int, v int);
INSERT INTO pm SELECT g, g % 10, g FROM generate_series(1, 2000) g;
CREATE MATERIALIZED VIEW pm_mv AS
  SELECT grp, count(*) AS n, sum(v) AS s FROM pm GROUP BY grp; CALL parity_wait();
SELECT * FROM pm_mv ORDER BY grp;
CREATE UNIQUE INDEX pm_mv_grp ON pm_mv (grp); CALL parity_wait();
\d pm_mv
INSERT INTO pm VALUES (5000, 3, 1);
REFRESH MATERIALIZED VIEW pm_mv; CALL parity_wait();
SELECT * FROM pm_mv WHERE grp = 3;
UPDATE pm SET v = v + 1 WHERE grp = 4;
REFRESH MATERIALIZED VIEW CONCURRENTLY pm_mv; CALL parity_wait();
SELECT * FROM pm_mv WHERE grp = 4;
CREATE MATERIALIZED VIEW pm_empty AS SELECT * FROM pm WITH NO DATA; CALL parity_wait();
SELECT count(*) FROM pm_empty;
REFRESH MATERIALIZED VIEW CONCURRENTLY pm_empty; CALL parity_wait();
REFRESH MATERIALIZED VIEW pm_empty; CALL parity_wait();
SELECT count(*) FROM pm_empty;

-- Duplicates, for a unique index: REFRESH cannot build it; CONCURRENTLY
-- finds duplicate rows, or inserts a duplicate key.
CREATE TABLE pd (k int, extra int);
INSERT INTO pd VALUES (1, 1), (1, 2), (2, 1);
CREATE MATERIALIZED VIEW pd_mv AS SELECT k FROM pd WHERE extra = 1; CALL parity_wait();
CREATE UNIQUE INDEX pd_mv_k ON pd_mv (k); CALL parity_wait();
UPDATE pd SET extra = 1;
REFRESH MATERIALIZED VIEW pd_mv; CALL parity_wait();
REFRESH MATERIALIZED VIEW CONCURRENTLY pd_mv; CALL parity_wait();
SELECT * FROM pd_mv ORDER BY k;
CREATE TABLE pd2 (k int, extra int);
INSERT INTO pd2 VALUES (1, 1), (2, 1);
CREATE MATERIALIZED VIEW pd2_mv AS SELECT k, extra FROM pd2; CALL parity_wait();
CREATE UNIQUE INDEX pd2_mv_k ON pd2_mv (k); CALL parity_wait();
INSERT INTO pd2 VALUES (1, 2);
REFRESH MATERIALIZED VIEW CONCURRENTLY pd2_mv; CALL parity_wait();
SELECT * FROM pd2_mv ORDER BY k;
DROP INDEX pd_mv_k;
REFRESH MATERIALIZED VIEW CONCURRENTLY pd_mv; CALL parity_wait();

-- In transactions: committed, rolled back, used before COMMIT.
BEGIN;
CREATE MATERIALIZED VIEW pm_tx AS SELECT id FROM pm WHERE grp = 2; CALL parity_wait();
COMMIT; CALL parity_wait();
SELECT count(*) FROM pm_tx;
BEGIN;
CREATE MATERIALIZED VIEW pm_rb AS SELECT id FROM pm;
ROLLBACK; CALL parity_wait();
SELECT count(*) FROM pg_class WHERE relname = 'pm_rb';
BEGIN;
CREATE MATERIALIZED VIEW pm_read AS SELECT id, grp FROM pm WHERE grp = 5;
SELECT count(*) FROM pm_read;
REFRESH MATERIALIZED VIEW pm_read;
CREATE MATERIALIZED VIEW pm_over AS SELECT count(*) AS n FROM pm_read;
SELECT * FROM pm_over;
COMMIT; CALL parity_wait();
SELECT (SELECT count(*) FROM pm_read) AS read, (SELECT n FROM pm_over) AS over;

-- Over system catalogs; errors in the data and at submit.
CREATE MATERIALIZED VIEW pm_cat AS SELECT relname, relkind FROM pg_class
  WHERE relname IN ('pm', 'pd'); CALL parity_wait();
SELECT * FROM pm_cat ORDER BY relname;
CREATE MATERIALIZED VIEW pm_div AS SELECT v / (v - v) AS x FROM pm; CALL parity_wait();
SELECT count(*) FROM pg_class WHERE relname = 'pm_div';
CREATE MATERIALIZED VIEW pm_mv AS SELECT 1 AS x; CALL parity_wait();
CREATE MATERIALIZED VIEW IF NOT EXISTS pm_mv AS SELECT 1 AS x; CALL parity_wait();
CREATE MATERIALIZED VIEW pm_bad AS SELECT nosuch FROM pm; CALL parity_wait();
CREATE TEMP TABLE pm_temp (x int);
CREATE MATERIALIZED VIEW pm_bad AS SELECT x FROM pm_temp; CALL parity_wait();
REFRESH MATERIALIZED VIEW pm; CALL parity_wait();

-- Over a partitioned table (built in chunks of its partitions): partitions
-- can be dropped and detached while the view is built, as after it.
CREATE TABLE ppt (id int, k int) PARTITION BY RANGE (id);
CREATE TABLE ppt_1 PARTITION OF ppt FOR VALUES FROM (0) TO (1000);
CREATE TABLE ppt_2 PARTITION OF ppt FOR VALUES FROM (1000) TO (2000);
CREATE TABLE ppt_3 PARTITION OF ppt FOR VALUES FROM (2000) TO (3000);
CREATE TABLE ppt_4 PARTITION OF ppt FOR VALUES FROM (3000) TO (4000);
INSERT INTO ppt SELECT g, g % 7 FROM generate_series(0, 1999) g;
CREATE MATERIALIZED VIEW ppt_mv AS SELECT k, count(*) AS n, sum(id) AS s FROM ppt GROUP BY k;
DROP TABLE ppt_3;
ALTER TABLE ppt DETACH PARTITION ppt_4;
CALL parity_wait();
SELECT * FROM ppt_mv ORDER BY k;
DROP TABLE ppt_4;
