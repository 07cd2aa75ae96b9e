--
-- ALTER TABLE ... ADD CHECK and VALIDATE CONSTRAINT (PostgreSQL's own cases
-- of constraints.sql and alter_table.sql, on a table of some rows): the same
-- errors, the same constraints with the names PostgreSQL chooses, valid or
-- not, and the same rows.  With background_ddl on, those on a plain table,
-- a partitioned table or a table with inheritance children are jobs (but a
-- foreign key of a partitioned table, and ONLY on a table with children).
--
\set SHOW_CONTEXT never
CREATE TABLE pat (a int, b text, c numeric);
INSERT INTO pat SELECT g, 'r' || g, g / 7.0 FROM generate_series(1, 3000) g;
-- Added and valid; a name chosen by PostgreSQL, twice.
ALTER TABLE pat ADD CHECK (a > 0); CALL parity_wait();
ALTER TABLE pat ADD CHECK (a > 0); CALL parity_wait();
ALTER TABLE pat ADD CONSTRAINT pat_b CHECK (b LIKE 'r%'); CALL parity_wait();
ALTER TABLE ONLY pat ADD CONSTRAINT pat_only CHECK (c >= 0); CALL parity_wait();
ALTER TABLE pat ADD CONSTRAINT pat_noinherit CHECK (a > -1) NO INHERIT; CALL parity_wait();
-- Violated by some row.
ALTER TABLE pat ADD CONSTRAINT pat_c CHECK (c < 100); CALL parity_wait();
ALTER TABLE pat ADD CONSTRAINT pat_last CHECK (a < 3000); CALL parity_wait();
ALTER TABLE pat ADD CONSTRAINT pat_first CHECK (a <> 1); CALL parity_wait();
-- NULL passes a check.
INSERT INTO pat VALUES (NULL, NULL, NULL);
ALTER TABLE pat ADD CONSTRAINT pat_nulls CHECK (a < 10000 AND b <> 'x'); CALL parity_wait();
ALTER TABLE pat ADD CONSTRAINT pat_not_null CHECK (a IS NOT NULL); CALL parity_wait();
-- Errors PostgreSQL raises before it reads a row.
ALTER TABLE pat ADD CONSTRAINT pat_b CHECK (b <> ''); CALL parity_wait();
ALTER TABLE pat ADD CHECK (nosuch > 0); CALL parity_wait();
ALTER TABLE pat ADD CHECK (ctid IS NOT NULL); CALL parity_wait();
ALTER TABLE pat ADD CHECK (a > (SELECT 1)); CALL parity_wait();
ALTER TABLE pat ADD CHECK (sum(a) > 0); CALL parity_wait();
ALTER TABLE pat ADD CHECK (a); CALL parity_wait();
ALTER TABLE pat ADD CHECK (b > 1); CALL parity_wait();
ALTER TABLE pat_nosuch ADD CHECK (a > 0); CALL parity_wait();
ALTER TABLE pat VALIDATE CONSTRAINT pat_nosuch; CALL parity_wait();
-- NOT VALID, then VALIDATE CONSTRAINT: it fails, the rows are fixed, it succeeds.
ALTER TABLE pat ADD CONSTRAINT pat_small CHECK (a < 2000) NOT VALID; CALL parity_wait();
INSERT INTO pat VALUES (2500, 'r', 0);
ALTER TABLE pat VALIDATE CONSTRAINT pat_small; CALL parity_wait();
DELETE FROM pat WHERE a >= 2000;
ALTER TABLE pat VALIDATE CONSTRAINT pat_small; CALL parity_wait();
ALTER TABLE pat VALIDATE CONSTRAINT pat_small; CALL parity_wait();
-- VALIDATE of a constraint that is not a check or a foreign key.
ALTER TABLE pat ADD CONSTRAINT pat_u UNIQUE (a); CALL parity_wait();
ALTER TABLE pat VALIDATE CONSTRAINT pat_u; CALL parity_wait();
-- A volatile expression, evaluated once per row.
ALTER TABLE pat ADD CONSTRAINT pat_volatile CHECK (random() >= 0); CALL parity_wait();
-- In a transaction: a later write of the table sees the constraint valid
-- (with the setting on, the rows are checked there and then).
BEGIN;
ALTER TABLE pat ADD CONSTRAINT pat_tx CHECK (b <> 'rzz'); CALL parity_wait();
INSERT INTO pat VALUES (5, 'rzz', 0);
ROLLBACK;
BEGIN;
ALTER TABLE pat ADD CONSTRAINT pat_tx CHECK (b <> 'rzz'); CALL parity_wait();
UPDATE pat SET b = 'rzz' WHERE a = 1;
ROLLBACK;
BEGIN;
ALTER TABLE pat ADD CONSTRAINT pat_tx CHECK (a < 2000); CALL parity_wait();
COMMIT;
CALL parity_wait();
-- SET NOT NULL: valid, violated, already NOT NULL, PostgreSQL's errors.
ALTER TABLE pat ALTER COLUMN b SET NOT NULL; CALL parity_wait();
DELETE FROM pat WHERE a IS NULL;
ALTER TABLE pat ALTER COLUMN b SET NOT NULL; CALL parity_wait();
ALTER TABLE pat ALTER COLUMN b SET NOT NULL; CALL parity_wait();
INSERT INTO pat VALUES (1, NULL, 0);
ALTER TABLE pat ALTER COLUMN nosuch SET NOT NULL; CALL parity_wait();
ALTER TABLE pat ALTER COLUMN xmin SET NOT NULL; CALL parity_wait();
BEGIN;
ALTER TABLE pat ALTER COLUMN c SET NOT NULL; CALL parity_wait();
INSERT INTO pat VALUES (1, 'r', NULL);
ROLLBACK;
ALTER TABLE pat ALTER COLUMN c SET NOT NULL; CALL parity_wait();
-- Foreign keys: valid (also across types), violated by one row, VALIDATE,
-- self-referencing, MATCH FULL, and PostgreSQL's errors at the statement.
CREATE TABLE paf_p (id int PRIMARY KEY, k text UNIQUE, n numeric UNIQUE);
INSERT INTO paf_p SELECT g, 'k' || g, g FROM generate_series(1, 200) g;
CREATE TABLE paf_c (id int, p int, k text, n int, kv varchar);
INSERT INTO paf_c SELECT g, g % 200 + 1, 'k' || (g % 200 + 1), g % 200 + 1, 'k1' FROM generate_series(1, 2000) g;
ALTER TABLE paf_c ADD FOREIGN KEY (p) REFERENCES paf_p; CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (k) REFERENCES paf_p (k) ON DELETE CASCADE; CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (n) REFERENCES paf_p (n); CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (kv) REFERENCES paf_p (k); CALL parity_wait();
UPDATE paf_c SET p = 1000 WHERE id = 7;
SET session_replication_role = replica;
UPDATE paf_c SET p = 5000, k = NULL WHERE id = 7;
SET session_replication_role = DEFAULT;
ALTER TABLE paf_c ADD CONSTRAINT paf_c_p2 FOREIGN KEY (p) REFERENCES paf_p; CALL parity_wait();
ALTER TABLE paf_p ADD UNIQUE (n, k);
ALTER TABLE paf_c ADD CONSTRAINT paf_c_full FOREIGN KEY (n, k) REFERENCES paf_p (n, k) MATCH FULL; CALL parity_wait();
ALTER TABLE paf_c ADD CONSTRAINT paf_c_p3 FOREIGN KEY (p) REFERENCES paf_p NOT VALID; CALL parity_wait();
ALTER TABLE paf_c VALIDATE CONSTRAINT paf_c_p3; CALL parity_wait();
UPDATE paf_c SET p = 7 WHERE id = 7;
ALTER TABLE paf_c VALIDATE CONSTRAINT paf_c_p3; CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (p) REFERENCES paf_p (k); CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (p, k) REFERENCES paf_p (id); CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (p, k) REFERENCES paf_p (id, k); CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (p) REFERENCES paf_nosuch; CALL parity_wait();
ALTER TABLE paf_c ADD FOREIGN KEY (nosuch) REFERENCES paf_p; CALL parity_wait();
CREATE TABLE paf_tree (id int PRIMARY KEY, parent int);
INSERT INTO paf_tree SELECT g, NULLIF(g / 2, 0) FROM generate_series(1, 1000) g;
ALTER TABLE paf_tree ADD FOREIGN KEY (parent) REFERENCES paf_tree; CALL parity_wait();
DELETE FROM paf_p WHERE id = 3;
DELETE FROM paf_p WHERE id = 200;
SELECT conrelid::regclass AS table, conname, convalidated, pg_get_constraintdef(oid) AS definition
  FROM pg_constraint WHERE contype = 'f' AND conrelid IN ('paf_c'::regclass, 'paf_tree'::regclass)
 ORDER BY 1, 2;
SELECT count(*) FROM paf_c;
DROP TABLE paf_c, paf_tree, paf_p;
-- Partitioned (one partition's columns in another order), and with
-- inheritance children.
CREATE TABLE pat_parted (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE pat_parted_1 PARTITION OF pat_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE pat_parted_2 (b int, a int);
ALTER TABLE pat_parted ATTACH PARTITION pat_parted_2 FOR VALUES FROM (100) TO (200);
INSERT INTO pat_parted SELECT g, g FROM generate_series(0, 199) g;
ALTER TABLE pat_parted ADD CONSTRAINT pat_parted_b CHECK (b >= 0); CALL parity_wait();
ALTER TABLE pat_parted ADD CONSTRAINT pat_parted_bad CHECK (b > 0); CALL parity_wait();
ALTER TABLE pat_parted ADD CONSTRAINT pat_parted_bad2 CHECK (b < 150); CALL parity_wait();
ALTER TABLE ONLY pat_parted ADD CONSTRAINT pat_parted_only CHECK (b >= 0); CALL parity_wait();
ALTER TABLE pat_parted_2 ADD CONSTRAINT pat_parted_2_b CHECK (b >= 100); CALL parity_wait();
ALTER TABLE pat_parted ADD CONSTRAINT pat_parted_nv CHECK (b < 190) NOT VALID; CALL parity_wait();
ALTER TABLE pat_parted VALIDATE CONSTRAINT pat_parted_nv; CALL parity_wait();
DELETE FROM pat_parted WHERE b >= 190;
ALTER TABLE pat_parted VALIDATE CONSTRAINT pat_parted_nv; CALL parity_wait();
UPDATE pat_parted SET b = NULL WHERE a = 150;
ALTER TABLE pat_parted ALTER COLUMN b SET NOT NULL; CALL parity_wait();
UPDATE pat_parted SET b = 150 WHERE a = 150;
ALTER TABLE pat_parted ALTER COLUMN b SET NOT NULL; CALL parity_wait();
ALTER TABLE pat_parted ALTER COLUMN a SET NOT NULL; CALL parity_wait();
CREATE TABLE pat_parent (a int);
CREATE TABLE pat_child (b int) INHERITS (pat_parent);
INSERT INTO pat_child VALUES (-1, 1);
ALTER TABLE pat_parent ADD CONSTRAINT pat_parent_a CHECK (a > 0); CALL parity_wait();
ALTER TABLE ONLY pat_parent ADD CONSTRAINT pat_parent_a CHECK (a > 0); CALL parity_wait();
ALTER TABLE ONLY pat_parent ADD CONSTRAINT pat_parent_ni CHECK (a > 0) NO INHERIT; CALL parity_wait();
ALTER TABLE pat_parent ADD CONSTRAINT pat_parent_ni2 CHECK (a > 0) NO INHERIT; CALL parity_wait();
ALTER TABLE pat_child ADD CONSTRAINT pat_child_b CHECK (b > 0); CALL parity_wait();
ALTER TABLE pat_parent ALTER COLUMN a SET NOT NULL; CALL parity_wait();
UPDATE pat_child SET a = 1;
ALTER TABLE pat_parent ADD CONSTRAINT pat_parent_a CHECK (a > 0); CALL parity_wait();
ALTER TABLE pat_parent ALTER COLUMN a SET NOT NULL; CALL parity_wait();
-- What is left: every constraint, valid or not, and the rows.
SELECT conrelid::regclass AS table, conname, convalidated, connoinherit,
       pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE conrelid IN ('pat'::regclass, 'pat_parted'::regclass, 'pat_parted_1'::regclass,
                    'pat_parted_2'::regclass, 'pat_parent'::regclass, 'pat_child'::regclass)
 ORDER BY 1, 2;
SELECT attrelid::regclass, attname, attnotnull FROM pg_attribute
 WHERE attrelid IN ('pat'::regclass, 'pat_parted'::regclass, 'pat_parted_1'::regclass,
                    'pat_parted_2'::regclass, 'pat_parent'::regclass, 'pat_child'::regclass)
   AND attnum > 0 ORDER BY 1, 2;
SELECT count(*), count(a), sum(a) FROM pat;
DROP TABLE pat, pat_parted, pat_parent, pat_child;
-- ATTACH PARTITION (PostgreSQL's cases of alter_table.sql, with rows): the
-- table attached and the default partition are checked by a job; the
-- same errors before a row is read, the same errors for a row out of
-- bounds, the same partitions and constraints after.
CREATE TABLE paa (a int, b text) PARTITION BY RANGE (a);
CREATE TABLE paa_1 PARTITION OF paa FOR VALUES FROM (0) TO (100);
INSERT INTO paa SELECT g, 'r' || g FROM generate_series(0, 99) g;
CREATE TABLE paa_2 (a int, b text);
INSERT INTO paa_2 SELECT g, 'r' || g FROM generate_series(100, 1999) g;
-- Errors PostgreSQL raises before it reads a row.
ALTER TABLE paa ATTACH PARTITION paa_2 FOR VALUES FROM (50) TO (2000); CALL parity_wait();
ALTER TABLE paa ATTACH PARTITION paa_2 FOR VALUES IN (1); CALL parity_wait();
ALTER TABLE paa ATTACH PARTITION paa_2 FOR VALUES FROM ('x') TO (2000); CALL parity_wait();
ALTER TABLE paa ATTACH PARTITION paa_nosuch FOR VALUES FROM (100) TO (2000); CALL parity_wait();
ALTER TABLE paa ATTACH PARTITION paa_1 FOR VALUES FROM (100) TO (2000); CALL parity_wait();
ALTER TABLE paa_2 ATTACH PARTITION paa_1 FOR VALUES FROM (100) TO (2000); CALL parity_wait();
CREATE TABLE paa_extra (a int, b text, c int);
ALTER TABLE paa ATTACH PARTITION paa_extra FOR VALUES FROM (3000) TO (4000); CALL parity_wait();
CREATE TABLE paa_missing (a int);
ALTER TABLE paa ATTACH PARTITION paa_missing FOR VALUES FROM (3000) TO (4000); CALL parity_wait();
CREATE TABLE paa_type (a bigint, b text);
ALTER TABLE paa ATTACH PARTITION paa_type FOR VALUES FROM (3000) TO (4000); CALL parity_wait();
DROP TABLE paa_extra, paa_missing, paa_type;
-- A row out of the bound.
ALTER TABLE paa ATTACH PARTITION paa_2 FOR VALUES FROM (100) TO (1999); CALL parity_wait();
ALTER TABLE paa ATTACH PARTITION paa_2 FOR VALUES FROM (101) TO (2000); CALL parity_wait();
-- Attached; its columns in another order; NULL is in no range.
ALTER TABLE paa ATTACH PARTITION paa_2 FOR VALUES FROM (100) TO (2000); CALL parity_wait();
CREATE TABLE paa_3 (b text, a int);
INSERT INTO paa_3 VALUES ('r', 2000), ('r', NULL);
ALTER TABLE paa ATTACH PARTITION paa_3 FOR VALUES FROM (2000) TO (3000); CALL parity_wait();
DELETE FROM paa_3 WHERE a IS NULL;
ALTER TABLE paa ATTACH PARTITION paa_3 FOR VALUES FROM (2000) TO (3000); CALL parity_wait();
-- A default partition: its rows in the new bound fail the ATTACH.
CREATE TABLE paa_def PARTITION OF paa DEFAULT;
INSERT INTO paa VALUES (3500, 'd'), (NULL, 'n'), (9000, 'd');
CREATE TABLE paa_4 (a int, b text);
INSERT INTO paa_4 SELECT g, 'r' FROM generate_series(3000, 3499) g;
ALTER TABLE paa ATTACH PARTITION paa_4 FOR VALUES FROM (3000) TO (4000); CALL parity_wait();
DELETE FROM paa WHERE a = 3500;
ALTER TABLE paa ATTACH PARTITION paa_4 FOR VALUES FROM (3000) TO (4000); CALL parity_wait();
-- A valid CHECK that implies the bound spares ATTACH its read (the job has none).
CREATE TABLE paa_5 (a int CHECK (a >= 4000 AND a < 5000), b text);
ALTER TABLE paa_5 ALTER COLUMN a SET NOT NULL;
INSERT INTO paa_5 VALUES (4000, 'r');
ALTER TABLE paa ATTACH PARTITION paa_5 FOR VALUES FROM (4000) TO (5000); CALL parity_wait();
-- A second default partition; a default partition attached.
CREATE TABLE paa_def2 (a int, b text);
ALTER TABLE paa ATTACH PARTITION paa_def2 DEFAULT; CALL parity_wait();
ALTER TABLE paa DETACH PARTITION paa_def;
INSERT INTO paa_def2 VALUES (4500, 'x');
ALTER TABLE paa ATTACH PARTITION paa_def2 DEFAULT; CALL parity_wait();
DELETE FROM paa_def2;
INSERT INTO paa_def2 VALUES (7000, 'x');
ALTER TABLE paa ATTACH PARTITION paa_def2 DEFAULT; CALL parity_wait();
-- List partitions, NULL in a list; a sub-partitioned parent (its own
-- bound is checked too).
CREATE TABLE pal (a int, b text) PARTITION BY LIST (b);
CREATE TABLE pal_sub PARTITION OF pal FOR VALUES IN ('x', 'y', NULL) PARTITION BY RANGE (a);
CREATE TABLE pal_sub_1 (a int, b text);
INSERT INTO pal_sub_1 VALUES (1, 'x'), (2, NULL), (3, 'z');
ALTER TABLE pal_sub ATTACH PARTITION pal_sub_1 FOR VALUES FROM (0) TO (10); CALL parity_wait();
UPDATE pal_sub_1 SET b = 'y' WHERE b = 'z';
ALTER TABLE pal_sub ATTACH PARTITION pal_sub_1 FOR VALUES FROM (0) TO (10); CALL parity_wait();
CREATE TABLE pal_z (a int, b text);
INSERT INTO pal_z VALUES (1, 'z'), (2, NULL);
ALTER TABLE pal ATTACH PARTITION pal_z FOR VALUES IN ('z'); CALL parity_wait();
DELETE FROM pal_z WHERE b IS NULL;
ALTER TABLE pal ATTACH PARTITION pal_z FOR VALUES IN ('z'); CALL parity_wait();
-- Hash partitions.
CREATE TABLE pah (a int) PARTITION BY HASH (a);
CREATE TABLE pah_0 PARTITION OF pah FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pah_1 (a int);
INSERT INTO pah_1 SELECT g FROM generate_series(1, 50) g;
ALTER TABLE pah ATTACH PARTITION pah_1 FOR VALUES WITH (MODULUS 2, REMAINDER 1); CALL parity_wait();
DELETE FROM pah_1 WHERE satisfies_hash_partition('pah'::regclass, 2, 0, a);
ALTER TABLE pah ATTACH PARTITION pah_1 FOR VALUES WITH (MODULUS 2, REMAINDER 1); CALL parity_wait();
-- What is left: the partitions, their bounds, the constraints, the rows.
SELECT c.oid::regclass AS partition, i.inhparent::regclass AS parent,
       pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
 WHERE i.inhparent IN ('paa'::regclass, 'pal'::regclass, 'pal_sub'::regclass, 'pah'::regclass)
 ORDER BY 1;
SELECT conrelid::regclass AS table, conname, convalidated, pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE conrelid IN (SELECT oid FROM pg_class WHERE relname LIKE 'pa_\_%' OR relname LIKE 'paa%')
 ORDER BY 1, 2;
SELECT tableoid::regclass, count(*), count(a) FROM paa GROUP BY 1 ORDER BY 1;
SELECT tableoid::regclass, count(*) FROM pal GROUP BY 1 ORDER BY 1;
SELECT tableoid::regclass, count(*) FROM pah GROUP BY 1 ORDER BY 1;
DROP TABLE paa, paa_def, pal, pah;
-- ADD PRIMARY KEY USING INDEX of an index whose columns allow nulls: the
-- columns are checked by a job; the same errors, the same key after.
CREATE TABLE pak (a int, b int, c text);
INSERT INTO pak SELECT g, g % 5, 'r' FROM generate_series(1, 3000) g;
CREATE UNIQUE INDEX pak_ab ON pak (a, b);
CREATE INDEX pak_a ON pak (a);
CREATE UNIQUE INDEX pak_expr ON pak ((a + 1));
CREATE UNIQUE INDEX pak_desc ON pak (a DESC); CALL parity_wait();
ALTER TABLE pak ADD PRIMARY KEY USING INDEX pak_a; CALL parity_wait();
ALTER TABLE pak ADD PRIMARY KEY USING INDEX pak_expr; CALL parity_wait();
ALTER TABLE pak ADD PRIMARY KEY USING INDEX pak_desc; CALL parity_wait();
ALTER TABLE pak ADD UNIQUE USING INDEX pak_a; CALL parity_wait();
INSERT INTO pak VALUES (NULL, 1, 'a null'), (3001, NULL, 'b null');
ALTER TABLE pak ADD PRIMARY KEY USING INDEX pak_ab; CALL parity_wait();
DELETE FROM pak WHERE a IS NULL;
ALTER TABLE pak ADD CONSTRAINT pak_key PRIMARY KEY USING INDEX pak_ab; CALL parity_wait();
DELETE FROM pak WHERE b IS NULL;
ALTER TABLE pak ADD CONSTRAINT pak_key PRIMARY KEY USING INDEX pak_ab DEFERRABLE; CALL parity_wait();
CREATE UNIQUE INDEX pak_c ON pak (c, a); CALL parity_wait();
ALTER TABLE pak ADD PRIMARY KEY USING INDEX pak_c; CALL parity_wait();
SELECT conname, contype, condeferrable, conindid::regclass, pg_get_constraintdef(oid) AS definition
  FROM pg_constraint WHERE conrelid = 'pak'::regclass ORDER BY 1;
SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'pak'::regclass AND attnum > 0 ORDER BY attnum;
DROP TABLE pak;
-- ADD PRIMARY KEY (columns) and ADD UNIQUE (columns): the key's index is
-- built by a job (a null in a primary key's column checked in chunks),
-- the same errors, the same names, the same catalog after; a foreign key
-- to the new key, and a second primary key, see it.
CREATE TABLE pkc (a int, b int, c text, d int NOT NULL);
INSERT INTO pkc SELECT g, g % 5, 'r' || g, g FROM generate_series(1, 3000) g;
CREATE TABLE pkc_pkey1 ();
ALTER TABLE pkc ADD PRIMARY KEY (nosuch); CALL parity_wait();
ALTER TABLE pkc ADD PRIMARY KEY (a) INCLUDE (nosuch); CALL parity_wait();
ALTER TABLE pkc ADD PRIMARY KEY (a) WITH (nosuch = 1); CALL parity_wait();
ALTER TABLE pkc ADD PRIMARY KEY (a) USING INDEX TABLESPACE nosuch; CALL parity_wait();
ALTER TABLE pkc ADD CONSTRAINT pkc_pkey1 PRIMARY KEY (a); CALL parity_wait();
INSERT INTO pkc VALUES (1, 1, 'duplicate', 0);
ALTER TABLE pkc ADD PRIMARY KEY (a, b); CALL parity_wait();
ALTER TABLE pkc ADD UNIQUE (a); CALL parity_wait();
DELETE FROM pkc WHERE c = 'duplicate';
INSERT INTO pkc VALUES (3001, NULL, 'b null', 3001);
ALTER TABLE pkc ADD PRIMARY KEY (a, b); CALL parity_wait();
ALTER TABLE pkc ADD UNIQUE (a, b); CALL parity_wait();
DELETE FROM pkc WHERE b IS NULL;
INSERT INTO pkc VALUES (NULL, 1, 'a null', 3002);
ALTER TABLE pkc ADD PRIMARY KEY (a); CALL parity_wait();
DELETE FROM pkc WHERE a IS NULL;
CREATE TABLE pkc_pkey ();
ALTER TABLE pkc ADD PRIMARY KEY (b, a) INCLUDE (c) WITH (fillfactor = 70); CALL parity_wait();
ALTER TABLE pkc ADD PRIMARY KEY (d); CALL parity_wait();
ALTER TABLE pkc ADD CONSTRAINT pkc_d UNIQUE NULLS NOT DISTINCT (d) DEFERRABLE INITIALLY DEFERRED; CALL parity_wait();
ALTER TABLE pkc ADD UNIQUE (c); CALL parity_wait();
CREATE TABLE pkc_ref (c text REFERENCES pkc (c), a int, b int);
ALTER TABLE pkc_ref ADD FOREIGN KEY (b, a) REFERENCES pkc; CALL parity_wait();
SELECT conname, contype, condeferrable, condeferred, conindid::regclass, pg_get_constraintdef(oid) AS definition
  FROM pg_constraint WHERE conrelid = 'pkc'::regclass ORDER BY 1;
SELECT indexrelid::regclass, indisprimary, indisunique, indimmediate, indisvalid, pg_get_indexdef(indexrelid)
  FROM pg_index WHERE indrelid = 'pkc'::regclass ORDER BY 1;
SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'pkc'::regclass AND attnum > 0 ORDER BY attnum;
SELECT relname FROM pg_class WHERE relname LIKE 'pkc%' ORDER BY 1;
DROP TABLE pkc_ref, pkc, pkc_pkey, pkc_pkey1;
