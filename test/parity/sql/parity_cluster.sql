--
-- CLUSTER of a table, as a job, ends as the blocking statement does: the
-- same rows, in the same physical order where nobody writes meanwhile, the
-- same clustered index and definition, or the same error, at the same
-- statement (the cases of PostgreSQL's own cluster.sql, on tables of ours).
--
\set SHOW_CONTEXT never
CREATE TABLE clu_s (rf_a serial PRIMARY KEY, b int);
CREATE TABLE clu (a serial PRIMARY KEY, b int NOT NULL, c text NOT NULL, d text,
  CONSTRAINT clu_fk FOREIGN KEY (b) REFERENCES clu_s);
CREATE INDEX clu_b ON clu (b);
CREATE INDEX clu_c ON clu (c);
CREATE INDEX clu_c_b ON clu (c, b);
CREATE INDEX clu_b_c ON clu (b, c);
CREATE INDEX clu_d ON clu (left(d, 20));
INSERT INTO clu_s (b) SELECT 0 FROM generate_series(1, 32);
CREATE TABLE clu_inh () INHERITS (clu);
INSERT INTO clu (b, c) SELECT (g * 7) % 31 + 1, 'word ' || (g * 7) % 31 + 1 FROM generate_series(1, 31) g;
-- A TOASTed value, copied whole
INSERT INTO clu (b, c, d) VALUES (6, 'six', repeat('xyzzy', 100000));
-- The old spelling, index ON table
CLUSTER clu_c ON clu; CALL parity_wait();
-- In the index's order, physically
SELECT a, b, c, substring(d for 30), length(d) FROM clu;
SELECT a, b, c FROM clu ORDER BY b, a;
-- The inheritance and the foreign key still work
INSERT INTO clu_inh VALUES (0, 100, 'in child table');
SELECT a, b, c FROM clu;
INSERT INTO clu (b, c) VALUES (1111, 'this should fail');
SELECT conname FROM pg_constraint WHERE conrelid = 'clu'::regclass ORDER BY 1;
SELECT relname, relkind, EXISTS (SELECT FROM pg_class WHERE oid = c.reltoastrelid) AS has_toast
  FROM pg_class c WHERE relname LIKE 'clu%' ORDER BY relname;
-- The clustered index, changed and turned off
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'clu'::regclass AND indisclustered;
ALTER TABLE clu CLUSTER ON clu_b_c;
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'clu'::regclass AND indisclustered;
ALTER TABLE clu SET WITHOUT CLUSTER;
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'clu'::regclass AND indisclustered;
-- Two columns, in their order; then the clustered one again
CLUSTER clu USING clu_b_c; CALL parity_wait();
SELECT a, b, c FROM clu;
UPDATE clu SET b = 33 - b WHERE a % 3 = 0;
CLUSTER clu; CALL parity_wait();
SELECT a, b, c FROM clu;
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'clu'::regclass AND indisclustered;
-- Two in a row: the second waits for the first
CLUSTER clu USING clu_c; CLUSTER clu USING clu_b_c; CALL parity_wait();
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'clu'::regclass AND indisclustered;
-- The index dropped right after: the DROP waits for the job
CREATE INDEX clu_a_b ON clu (a, b);
CLUSTER clu USING clu_a_b; DROP INDEX clu_a_b; CALL parity_wait();
SELECT a, b, c FROM clu;
-- An index on an expression (in the session)
CLUSTER clu USING clu_d; CALL parity_wait();
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'clu'::regclass AND indisclustered;
-- Errors (the indexes built first)
CREATE INDEX clu_part ON clu (b) WHERE a > 10;
CREATE INDEX clu_hash ON clu USING hash (b); CALL parity_wait();
CLUSTER clu USING clu_part; CALL parity_wait();
CLUSTER clu USING clu_hash; CALL parity_wait();
CLUSTER clu USING clu_s_pkey; CALL parity_wait();
CLUSTER clu USING nosuch; CALL parity_wait();
CLUSTER clu_s; CALL parity_wait();
CLUSTER nosuch; CALL parity_wait();
-- Whose tables: every table the role owns (as PostgreSQL runs it), and one
CREATE ROLE clu_user;
CREATE TABLE clu_1 (a int PRIMARY KEY);
CREATE TABLE clu_2 (a int PRIMARY KEY);
CREATE TABLE clu_3 (a int PRIMARY KEY);
ALTER TABLE clu_1 OWNER TO clu_user;
ALTER TABLE clu_3 OWNER TO clu_user;
GRANT SELECT ON clu_2 TO clu_user;
INSERT INTO clu_1 VALUES (2), (1);
INSERT INTO clu_2 VALUES (2), (1);
INSERT INTO clu_3 VALUES (2), (1);
CLUSTER clu_2; CALL parity_wait();
CLUSTER clu_1_pkey ON clu_1; CALL parity_wait();
CLUSTER clu_2 USING clu_2_pkey; CALL parity_wait();
SELECT * FROM clu_1 UNION ALL SELECT * FROM clu_2 UNION ALL SELECT * FROM clu_3;
DELETE FROM clu_1;
DELETE FROM clu_2;
DELETE FROM clu_3;
INSERT INTO clu_1 VALUES (2), (1);
INSERT INTO clu_2 VALUES (2), (1);
INSERT INTO clu_3 VALUES (2), (1);
SET SESSION AUTHORIZATION clu_user;
CLUSTER; CALL parity_wait();
SELECT * FROM clu_1 UNION ALL SELECT * FROM clu_2 UNION ALL SELECT * FROM clu_3;
CLUSTER clu_2 USING clu_2_pkey; CALL parity_wait();
DELETE FROM clu_1;
INSERT INTO clu_1 VALUES (2), (1);
CLUSTER clu_1; CALL parity_wait();
SELECT * FROM clu_1;
-- A temporary table (in the session)
CREATE TEMP TABLE clu_temp (col1 int PRIMARY KEY, col2 text);
INSERT INTO clu_temp VALUES (2, 'two'), (1, 'one');
CLUSTER clu_temp USING clu_temp_pkey; CALL parity_wait();
SELECT * FROM clu_temp;
DROP TABLE clu_temp;
RESET SESSION AUTHORIZATION;
-- In a transaction block, after its own updates
CREATE TABLE clu_mvcc (key int PRIMARY KEY);
INSERT INTO clu_mvcc VALUES (10), (20), (30), (40), (50);
BEGIN;
UPDATE clu_mvcc SET key = 100 WHERE key = 10;
UPDATE clu_mvcc SET key = 35 WHERE key = 40;
UPDATE clu_mvcc SET key = 60 WHERE key = 50;
UPDATE clu_mvcc SET key = 70 WHERE key = 60;
SELECT * FROM clu_mvcc;
CLUSTER clu_mvcc_pkey ON clu_mvcc;
-- (the job's order is the table's once it ends: the README says so)
SELECT count(*), sum(key) FROM clu_mvcc;
COMMIT; CALL parity_wait();
SELECT * FROM clu_mvcc;
BEGIN;
UPDATE clu_mvcc SET key = 5 WHERE key = 100;
CLUSTER clu_mvcc;
COMMIT; CALL parity_wait();
SELECT * FROM clu_mvcc;
-- A partitioned table cannot be marked clustered; it is clustered a
-- partition at a time (a job each), each on the partition of the index
CREATE TABLE clu_parts (a int NOT NULL, b text) PARTITION BY RANGE (a);
CREATE INDEX clu_parts_idx ON clu_parts (a); CALL parity_wait();
ALTER TABLE clu_parts CLUSTER ON clu_parts_idx;
CLUSTER clu_parts USING clu_parts_idx; CALL parity_wait();
CREATE TABLE clu_parts_1 PARTITION OF clu_parts FOR VALUES FROM (0) TO (50);
CREATE TABLE clu_parts_2 PARTITION OF clu_parts FOR VALUES FROM (50) TO (100);
INSERT INTO clu_parts SELECT (g * 37) % 100, 'row ' || g FROM generate_series(1, 100) g;
CLUSTER clu_parts USING clu_parts_idx; CALL parity_wait();
SELECT tableoid::regclass, a, b FROM clu_parts;
SELECT indexrelid::regclass, indisclustered FROM pg_index
 WHERE indrelid IN ('clu_parts_1'::regclass, 'clu_parts_2'::regclass) ORDER BY 1;
CLUSTER clu_parts; CALL parity_wait();
BEGIN;
CLUSTER clu_parts USING clu_parts_idx;
ROLLBACK;
VACUUM FULL clu_parts; CALL parity_wait();
SELECT count(*), sum(a) FROM clu_parts;
DROP TABLE clu_parts;
-- Many rows, three columns, the order checked row by row
CREATE TABLE clu_4 AS SELECT g % 100 AS hundred, (g * 37) % 1000 AS thousand, (g * 7919) % 10000 AS tenthous
  FROM generate_series(1, 10000) g;
ALTER TABLE clu_4 ALTER hundred SET NOT NULL, ALTER thousand SET NOT NULL, ALTER tenthous SET NOT NULL;
CREATE INDEX clu_4_sort ON clu_4 (hundred, thousand, tenthous);
CLUSTER clu_4 USING clu_4_sort; CALL parity_wait();
SELECT count(*) FROM
  (SELECT hundred, lag(hundred) OVER () AS lhundred, thousand, lag(thousand) OVER () AS lthousand,
          tenthous, lag(tenthous) OVER () AS ltenthous FROM clu_4) ss
 WHERE row(hundred, thousand, tenthous) <= row(lhundred, lthousand, ltenthous);
SELECT count(*), sum(tenthous) FROM clu_4;
DROP TABLE clu_mvcc, clu_1, clu_2, clu_3, clu_4, clu_inh, clu, clu_s;
DROP ROLE clu_user;
