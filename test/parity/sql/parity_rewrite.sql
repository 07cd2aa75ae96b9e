--
-- VACUUM FULL of a table, as a job, ends as the blocking statement does:
-- the same rows, indexes and definition, or the same error or WARNING, at
-- the same statement.
--
\set SHOW_CONTEXT never
CREATE TABLE pr (id int PRIMARY KEY, k int UNIQUE, gone text, a text, c text);
INSERT INTO pr SELECT g, g, 'x', 'a' || g, CASE WHEN g % 7 = 0 THEN repeat('c' || g, 900) END
  FROM generate_series(1, 3000) g;
ALTER TABLE pr DROP COLUMN gone;
CREATE INDEX pr_a ON pr (lower(a)) WHERE id % 2 = 0;
DELETE FROM pr WHERE id % 3 = 0;
VACUUM FULL pr; CALL parity_wait();
\d pr
SELECT count(*), sum(id), sum(length(c)), min(a), max(k) FROM pr;
SELECT pg_relation_size('pr') < 3000 * 40 AS compacted;
SELECT id, a FROM pr WHERE lower(a) = 'a10' AND id % 2 = 0;
-- A new fillfactor, which only a rewrite applies: the job's rewrite applies it
SELECT pg_relation_size('pr') AS packed_size \gset
ALTER TABLE pr SET (fillfactor = 50); VACUUM FULL pr; CALL parity_wait();
SELECT pg_relation_size('pr') BETWEEN 1.6 * :packed_size AND 2.4 * :packed_size AS half_filled;
ALTER TABLE pr RESET (fillfactor); VACUUM FULL pr; CALL parity_wait();
SELECT pg_relation_size('pr') <= 1.1 * :packed_size AS packed_again;
-- The same script's next writes, and a second VACUUM FULL
UPDATE pr SET a = 'b' || id WHERE id % 5 = 0;
VACUUM (FULL) pr; CALL parity_wait();
SELECT count(*) FILTER (WHERE a LIKE 'b%') AS updated, count(*) FROM pr;
-- An ALTER TABLE right after the job waits for it
VACUUM FULL pr; ALTER TABLE pr ADD COLUMN d int DEFAULT 1; CALL parity_wait();
SELECT count(*), sum(d) FROM pr;
-- SET TABLESPACE, and its errors
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE pr_space LOCATION '';
RESET allow_in_place_tablespaces;
ALTER TABLE pr SET TABLESPACE pr_space; CALL parity_wait();
SELECT c.relname, ts.spcname FROM pg_class c LEFT JOIN pg_tablespace ts ON ts.oid = c.reltablespace
 WHERE c.oid IN ('pr'::regclass, 'pr_pkey'::regclass) ORDER BY 1;
SELECT count(*), sum(id), sum(length(c)) FROM pr;
ALTER TABLE pr SET TABLESPACE pr_space; CALL parity_wait();
ALTER TABLE pr SET TABLESPACE pg_default; CALL parity_wait();
SELECT reltablespace FROM pg_class WHERE oid = 'pr'::regclass;
ALTER TABLE pr SET TABLESPACE pg_global; CALL parity_wait();
ALTER TABLE pr SET TABLESPACE nosuch; CALL parity_wait();
ALTER TABLE pr_nosuch SET TABLESPACE pr_space; CALL parity_wait();
ALTER TABLE IF EXISTS pr_nosuch SET TABLESPACE pr_space; CALL parity_wait();
-- Not owned: skipped with VACUUM's WARNING
CREATE ROLE pr_other;
SET ROLE pr_other;
VACUUM FULL pr; CALL parity_wait();
ALTER TABLE pr SET TABLESPACE pr_space; CALL parity_wait();
RESET ROLE;
GRANT ALL ON SCHEMA public TO pr_other;
CREATE TABLE pr_theirs (id int);
ALTER TABLE pr_theirs OWNER TO pr_other;
SET ROLE pr_other;
ALTER TABLE pr_theirs SET TABLESPACE pr_space; CALL parity_wait();
RESET ROLE;
DROP TABLE pr_theirs;
REVOKE ALL ON SCHEMA public FROM pr_other;
-- Errors
BEGIN; VACUUM FULL pr; ROLLBACK;
CREATE FUNCTION pr_in_function() RETURNS void LANGUAGE plpgsql AS
  $$ BEGIN VACUUM FULL pr; END $$;
SELECT pr_in_function(); CALL parity_wait();
VACUUM FULL pr_nosuch; CALL parity_wait();
VACUUM (FULL, nosuch) pr; CALL parity_wait();
-- A materialized view and a partitioned table run as PostgreSQL runs them
CREATE MATERIALIZED VIEW pr_mv AS SELECT * FROM pr;
VACUUM FULL pr_mv; CALL parity_wait();
CREATE TABLE pr_parts (id int) PARTITION BY RANGE (id);
CREATE TABLE pr_parts_1 PARTITION OF pr_parts FOR VALUES FROM (0) TO (100);
INSERT INTO pr_parts SELECT generate_series(0, 99);
VACUUM FULL pr_parts; CALL parity_wait();
VACUUM FULL pr_parts_1; CALL parity_wait();
SELECT count(*) FROM pr_parts;
-- An ALTER TABLE of the partitioned table right after a partition's job waits for it
VACUUM FULL pr_parts_1; ALTER TABLE pr_parts ADD COLUMN d int DEFAULT 1; CALL parity_wait();
SELECT count(*), sum(d) FROM pr_parts;
DROP MATERIALIZED VIEW pr_mv;
DROP TABLE pr, pr_parts;
DROP TABLESPACE pr_space;
DROP FUNCTION pr_in_function();
DROP ROLE pr_other;
