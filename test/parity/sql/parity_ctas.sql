--
-- CREATE TABLE ... AS and SELECT ... INTO, as jobs, end as the blocking
-- statements do.
--
\set SHOW_CONTEXT never
CREATE TABLE pt (id int, grp int, payload text);
INSERT INTO pt SELECT g, g % 10, 'p' || g FROM generate_series(1, 2000) g;
CREATE TABLE pt_ctas AS SELECT id, grp FROM pt WHERE id <= 100; CALL parity_wait();
SELECT count(*), sum(id) FROM pt_ctas;
SELECT id, grp INTO pt_into FROM pt WHERE grp = 3; CALL parity_wait();
SELECT count(*), sum(id) FROM pt_into;
CREATE TABLE pt_cols (a, b) AS SELECT id, payload FROM pt WHERE id < 5; CALL parity_wait();
\d pt_cols
CREATE UNLOGGED TABLE pt_unlogged WITH (fillfactor = 70) AS SELECT id FROM pt; CALL parity_wait();
SELECT relpersistence, reloptions, (SELECT count(*) FROM pt_unlogged) AS n
  FROM pg_class WHERE relname = 'pt_unlogged';

-- CREATE TABLE ... AS EXECUTE, and a PL/pgSQL variable: bound once.
PREPARE pt_p(int) AS SELECT id, payload FROM pt WHERE grp = $1;
CREATE TABLE pt_exec AS EXECUTE pt_p(4); CALL parity_wait();
SELECT count(*), min(id) FROM pt_exec;
CREATE TABLE pt_exec_bad AS EXECUTE pt_p('x'); CALL parity_wait();
CREATE TABLE pt_exec_bad AS EXECUTE pt_nosuch(1); CALL parity_wait();
CREATE FUNCTION pt_make(n int) RETURNS void LANGUAGE plpgsql AS
  $$ BEGIN CREATE TABLE pt_fn AS SELECT id FROM pt WHERE id <= n; END $$;
SELECT pt_make(7); CALL parity_wait();
SELECT count(*) FROM pt_fn;

-- In transactions: committed, rolled back, used before COMMIT.
BEGIN; CREATE TABLE pt_tx AS SELECT id FROM pt WHERE id < 10; COMMIT; CALL parity_wait();
SELECT count(*) FROM pt_tx;
BEGIN; CREATE TABLE pt_rb AS SELECT id FROM pt; ROLLBACK; CALL parity_wait();
SELECT count(*) FROM pg_class WHERE relname = 'pt_rb';
BEGIN;
CREATE TABLE pt_read AS SELECT id, grp FROM pt WHERE grp = 1;
SELECT count(*) FROM pt_read;
INSERT INTO pt_read VALUES (-1, -1);
ALTER TABLE pt_read ADD PRIMARY KEY (id);
COMMIT; CALL parity_wait();
\d pt_read
SELECT count(*) FROM pt_read;

-- Over system catalogs, and what only this session sees.
CREATE TABLE pt_cat AS SELECT relname FROM pg_class
  WHERE relname IN ('pt', 'pt_ctas', 'pt_into'); CALL parity_wait();
SELECT * FROM pt_cat ORDER BY relname;
CREATE TEMP TABLE pt_temp AS SELECT 1 AS x; CALL parity_wait();
CREATE TABLE pt_from_temp AS SELECT x FROM pt_temp; CALL parity_wait();
SELECT * FROM pt_from_temp;

-- Errors: in the data, the name, and IF NOT EXISTS / WITH NO DATA.
CREATE TABLE pt_div AS SELECT id / (id - id) AS x FROM pt; CALL parity_wait();
SELECT count(*) FROM pg_class WHERE relname = 'pt_div';
CREATE TABLE pt_ctas AS SELECT 1 AS x; CALL parity_wait();
CREATE TABLE IF NOT EXISTS pt_ctas AS SELECT 1 AS x; CALL parity_wait();
CREATE TABLE pt_nodata AS SELECT * FROM pt WITH NO DATA; CALL parity_wait();
SELECT count(*) FROM pt_nodata;
CREATE TABLE pt_nosuch AS SELECT nosuch FROM pt; CALL parity_wait();
