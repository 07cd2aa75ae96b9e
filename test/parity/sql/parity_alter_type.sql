--
-- ALTER TABLE ... ALTER COLUMN ... TYPE, as a job, ends as the blocking
-- statement does: the same rows, columns, defaults, indexes and
-- constraints, or the same error, at the same statement.
--
\set SHOW_CONTEXT never
CREATE TABLE pty (id int PRIMARY KEY, k int UNIQUE, gone text, a text NOT NULL, c text,
                 d int DEFAULT 42, e varchar(20));
INSERT INTO pty SELECT g, g, 'x', 'a' || g, CASE WHEN g % 7 = 0 THEN repeat('c' || g, 900) END, g % 5,
                      'e' || g
  FROM generate_series(1, 3000) g;
ALTER TABLE pty DROP COLUMN gone;
CREATE INDEX pty_a ON pty (lower(a)) WHERE id % 2 = 0;
CREATE INDEX pty_d ON pty (d) INCLUDE (c);
CREATE STATISTICS pty_stats ON k, d FROM pty;
COMMENT ON COLUMN pty.k IS 'a key';
DELETE FROM pty WHERE id % 3 = 0;
-- int to bigint (the primary key and a unique key), text USING an expression
ALTER TABLE pty ALTER COLUMN id TYPE bigint, ALTER COLUMN k TYPE bigint,
  ALTER COLUMN a TYPE varchar(30) USING upper(a); CALL parity_wait();
\d pty
SELECT count(*), sum(id), sum(k), sum(length(c)), min(a), max(a), sum(d) FROM pty;
SELECT id, a FROM pty WHERE lower(a) = 'a10' AND id % 2 = 0;
SELECT id FROM pty WHERE k = 2999;
-- The same script's next statements see the new types
INSERT INTO pty (id, k, a) VALUES (5000000000, 5000000000, 'big');
SELECT id, k, a, d FROM pty WHERE id > 4000000000;
UPDATE pty SET d = d + 1 WHERE id % 5 = 0;
-- A default changed with its column, a collation
ALTER TABLE pty ALTER COLUMN d TYPE numeric(10,2); CALL parity_wait();
SELECT d FROM pty WHERE id = 5000000000;
ALTER TABLE pty ALTER COLUMN e TYPE text COLLATE "C" USING e || '!'; CALL parity_wait();
SELECT e, count(*) OVER () FROM pty ORDER BY e LIMIT 3;
\d pty
-- Statements right after, in the same session, that check the new columns:
-- a second type change, one that rewrites nothing, a CHECK constraint, an index
ALTER TABLE pty ALTER COLUMN d TYPE bigint USING (d * 100)::bigint;
ALTER TABLE pty ALTER COLUMN d TYPE numeric(12,2) USING d / 100.0;
ALTER TABLE pty ALTER COLUMN d TYPE numeric(14,2);
ALTER TABLE pty ADD CONSTRAINT pty_d_positive CHECK (d >= 0);
CREATE INDEX pty_d_scaled ON pty ((d * 2));
CALL parity_wait();
SELECT d, count(*) FROM pty GROUP BY d ORDER BY d;
ALTER TABLE pty DROP CONSTRAINT pty_d_positive;
DROP INDEX pty_d_scaled;
-- No rewrite: as PostgreSQL runs it
ALTER TABLE pty ALTER COLUMN a TYPE text; CALL parity_wait();
SELECT pg_typeof(a) FROM pty LIMIT 1;
-- Errors: at the statement, and from the rows
ALTER TABLE pty ALTER COLUMN a TYPE int; CALL parity_wait();
ALTER TABLE pty ALTER COLUMN a TYPE int USING length(a); CALL parity_wait();
ALTER TABLE pty ALTER COLUMN c TYPE int USING length(c) / 0; CALL parity_wait();
ALTER TABLE pty ALTER COLUMN a TYPE text USING nullif(a, 'A10'); CALL parity_wait();
ALTER TABLE pty ALTER COLUMN k TYPE smallint; CALL parity_wait();
ALTER TABLE pty ALTER COLUMN nosuch TYPE int; CALL parity_wait();
ALTER TABLE pty ALTER COLUMN c TYPE nosuch; CALL parity_wait();
ALTER TABLE pty_nosuch ALTER COLUMN c TYPE int; CALL parity_wait();
ALTER TABLE IF EXISTS pty_nosuch ALTER COLUMN c TYPE int; CALL parity_wait();
CREATE VIEW pty_v AS SELECT c FROM pty;
ALTER TABLE pty ALTER COLUMN c TYPE varchar(10000); CALL parity_wait();
DROP VIEW pty_v;
-- A CHECK constraint and a foreign key on the column: as PostgreSQL runs them
ALTER TABLE pty ADD CONSTRAINT pty_d_check CHECK (d < 100);
ALTER TABLE pty ALTER COLUMN d TYPE int; CALL parity_wait();
ALTER TABLE pty ALTER COLUMN d TYPE bigint USING d * 1000; CALL parity_wait();
CREATE TABLE pty_ref (id bigint REFERENCES pty);
INSERT INTO pty_ref VALUES (1), (2);
ALTER TABLE pty ALTER COLUMN id TYPE numeric; CALL parity_wait();
\d pty
SELECT count(*), sum(id), sum(k), sum(d), min(e) FROM pty;
-- Not the owner
CREATE ROLE pty_other;
GRANT SELECT ON pty TO pty_other;
SET ROLE pty_other;
ALTER TABLE pty ALTER COLUMN c TYPE varchar(10000); CALL parity_wait();
RESET ROLE;
-- In a transaction block, and used in it after
BEGIN;
ALTER TABLE pty ALTER COLUMN c TYPE varchar(10000);
SELECT pg_typeof(c) FROM pty LIMIT 1;
COMMIT;
CALL parity_wait();
-- Rolled back to a savepoint; prepared, then committed
CREATE TABLE pty_tx (id int PRIMARY KEY, v int);
INSERT INTO pty_tx SELECT g, g FROM generate_series(1, 1000) g;
BEGIN;
SAVEPOINT s;
ALTER TABLE pty_tx ALTER COLUMN v TYPE bigint;
ROLLBACK TO s;
COMMIT;
CALL parity_wait();
SELECT pg_typeof(v), sum(v) FROM pty_tx GROUP BY 1;
BEGIN;
ALTER TABLE pty_tx ALTER COLUMN v TYPE bigint;
PREPARE TRANSACTION 'pty_prepared';
COMMIT PREPARED 'pty_prepared';
CALL parity_wait();
SELECT pg_typeof(v), sum(v) FROM pty_tx GROUP BY 1;
DROP TABLE pty_tx;
DROP TABLE pty_ref, pty;
DROP ROLE pty_other;
-- ADD COLUMN: a stored generated column and a volatile default (the values
-- checked, not shown), NOT NULL, with a type change, a domain with checks;
-- errors from the rows and at the statement; what rewrites nothing
CREATE TABLE pac (id int PRIMARY KEY, v int, gone text);
INSERT INTO pac SELECT g, g % 100, 'x' FROM generate_series(1, 3000) g;
ALTER TABLE pac DROP COLUMN gone;
ALTER TABLE pac ADD COLUMN twice bigint GENERATED ALWAYS AS (v * 2) STORED,
  ADD COLUMN token uuid NOT NULL DEFAULT gen_random_uuid(); CALL parity_wait();
\d pac
SELECT count(*), sum(twice), count(DISTINCT token) FROM pac;
INSERT INTO pac (id, v) VALUES (5000, 7) RETURNING twice, token IS NOT NULL;
ALTER TABLE pac ADD COLUMN r float8 DEFAULT random(), ALTER COLUMN id TYPE bigint; CALL parity_wait();
SELECT count(r), bool_and(r >= 0 AND r < 1), pg_typeof(id) FROM pac GROUP BY 3;
CREATE DOMAIN pac_positive AS int CHECK (VALUE > 0);
CREATE DOMAIN pac_given AS int NOT NULL;
ALTER TABLE pac ADD COLUMN p pac_positive DEFAULT 1; CALL parity_wait();
ALTER TABLE pac ADD COLUMN q pac_positive; CALL parity_wait();
ALTER TABLE pac ADD COLUMN nn pac_given; CALL parity_wait();
ALTER TABLE pac ADD COLUMN neg pac_positive DEFAULT -1; CALL parity_wait();
ALTER TABLE pac ADD COLUMN z int NOT NULL DEFAULT nullif((random() * 0)::int, 0); CALL parity_wait();
ALTER TABLE pac ADD COLUMN n int NOT NULL; CALL parity_wait();
ALTER TABLE pac ADD COLUMN twice int; CALL parity_wait();
ALTER TABLE pac ADD COLUMN g2 float8 GENERATED ALWAYS AS (random()) STORED; CALL parity_wait();
ALTER TABLE pac ADD COLUMN g3 int GENERATED ALWAYS AS (v + 1) STORED, ALTER COLUMN v TYPE bigint; CALL parity_wait();
ALTER TABLE pac ADD COLUMN c int DEFAULT 5, ADD COLUMN s bigserial; CALL parity_wait();
ALTER TABLE pac ADD COLUMN IF NOT EXISTS twice int; CALL parity_wait();
\d pac
SELECT count(*), sum(twice), sum(p), count(q), sum(c), count(DISTINCT s) FROM pac;
-- With subcommands that change only the catalog; with one that does more
-- (runs as PostgreSQL runs it)
ALTER TABLE pac ALTER COLUMN c TYPE bigint USING c + 1, ALTER COLUMN c SET DEFAULT 3,
  ALTER COLUMN c SET STATISTICS 500, ALTER COLUMN token DROP NOT NULL,
  ADD COLUMN w float8 DEFAULT random(), ALTER COLUMN r SET (n_distinct = 10),
  REPLICA IDENTITY FULL, CLUSTER ON pac_pkey; CALL parity_wait();
\d+ pac
SELECT attname, attstattarget,
       (SELECT option_value FROM pg_options_to_table(attoptions) WHERE option_name = 'n_distinct')
  FROM pg_attribute WHERE attrelid = 'pac'::regclass AND attname IN ('c', 'r') ORDER BY 1;
SELECT count(w), sum(c), count(token) FROM pac;
ALTER TABLE pac ADD COLUMN w2 float8 DEFAULT random(), ALTER COLUMN w2 SET DEFAULT 1; CALL parity_wait();
ALTER TABLE pac ALTER COLUMN c TYPE int, ADD CONSTRAINT pac_c CHECK (c > 0); CALL parity_wait();
ALTER TABLE pac ALTER COLUMN c TYPE bigint, DROP COLUMN w2; CALL parity_wait();
\d pac
SELECT count(w), sum(c) FROM pac;
-- An event trigger on table_rewrite fires, as for PostgreSQL's own rewrite
CREATE FUNCTION pac_rewrite() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE WARNING 'rewriting table % for reason %', pg_event_trigger_table_rewrite_oid()::regclass,
    pg_event_trigger_table_rewrite_reason();
END $$;
CREATE EVENT TRIGGER pac_rewrite ON table_rewrite EXECUTE FUNCTION pac_rewrite();
ALTER TABLE pac ADD COLUMN t timestamptz DEFAULT clock_timestamp(); CALL parity_wait();
ALTER TABLE pac ALTER COLUMN v TYPE numeric; CALL parity_wait();
DROP EVENT TRIGGER pac_rewrite;
DROP FUNCTION pac_rewrite();
SELECT count(t), pg_typeof(v) FROM pac GROUP BY 2;
DROP TABLE pac;
DROP DOMAIN pac_positive, pac_given;
-- A partitioned table: a job for each leaf partition, published together
-- (a partition with its own column order and a dropped column, and one
-- partitioned again)
CREATE TABLE ptree (id int NOT NULL, k int NOT NULL, a text, c int, PRIMARY KEY (id, k))
  PARTITION BY RANGE (id);
CREATE TABLE ptree_1 PARTITION OF ptree FOR VALUES FROM (MINVALUE) TO (1001);
CREATE TABLE ptree_2 (c int, gone int, a text, k int NOT NULL, id int NOT NULL);
ALTER TABLE ptree_2 DROP COLUMN gone;
ALTER TABLE ptree ATTACH PARTITION ptree_2 FOR VALUES FROM (1001) TO (2001);
CREATE TABLE ptree_3 PARTITION OF ptree FOR VALUES FROM (2001) TO (MAXVALUE) PARTITION BY LIST (k);
CREATE TABLE ptree_3a PARTITION OF ptree_3 FOR VALUES IN (0, 1, 2);
CREATE TABLE ptree_3d PARTITION OF ptree_3 DEFAULT;
CREATE INDEX ptree_lower ON ptree (lower(a));
CREATE INDEX ptree_c ON ptree (c) WHERE c % 2 = 0;
INSERT INTO ptree SELECT g, g % 7, 'a' || g, g FROM generate_series(1, 3000) g;
-- PostgreSQL's errors: a partition key, no cast, ONLY
ALTER TABLE ptree ALTER COLUMN id TYPE bigint; CALL parity_wait();
ALTER TABLE ptree ALTER COLUMN k TYPE bigint; CALL parity_wait();
ALTER TABLE ptree ALTER COLUMN a TYPE int; CALL parity_wait();
ALTER TABLE ONLY ptree ALTER COLUMN c TYPE bigint; CALL parity_wait();
ALTER TABLE ptree ALTER COLUMN a TYPE varchar(40) USING upper(a), ALTER COLUMN c TYPE bigint USING c * 3,
  ADD COLUMN w float8 DEFAULT random(); CALL parity_wait();
\d ptree
\d ptree_2
\d ptree_3d
SELECT count(*), sum(c), min(a), max(a), count(w), count(DISTINCT w) > 2900 FROM ptree;
SELECT tableoid::regclass, count(*), sum(c) FROM ptree GROUP BY 1 ORDER BY 1;
SELECT id, a FROM ptree WHERE lower(a) = 'a2500';
-- The next statements see the new types
INSERT INTO ptree (id, k, a, c) VALUES (5000, 1, 'big', 5000000000);
SELECT id, k, a, c FROM ptree WHERE c > 4000000000;
-- In a transaction block: as PostgreSQL runs it
BEGIN;
ALTER TABLE ptree ALTER COLUMN c TYPE numeric;
SELECT sum(c) FROM ptree;
COMMIT;
\d ptree_1
DROP TABLE ptree;
