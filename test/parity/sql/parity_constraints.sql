--
-- Statements PostgreSQL runs on its own while running the user's: the index
-- of a constraint, LIKE ... INCLUDING INDEXES, a partition's copy of its
-- parent's indexes, CREATE SCHEMA's elements, an event trigger's
-- statements.  None of them is a job: each runs as PostgreSQL runs it, and
-- every constraint holds.
--
\set SHOW_CONTEXT never
CREATE TABLE pc_parent (id int PRIMARY KEY, code text UNIQUE); CALL parity_wait();
CREATE TABLE pc (
  id int PRIMARY KEY,
  code text UNIQUE NOT NULL,
  span int4range,
  parent int REFERENCES pc_parent,
  qty int CHECK (qty > 0) DEFAULT 1,
  doubled int GENERATED ALWAYS AS (qty * 2) STORED,
  EXCLUDE USING gist (span WITH &&)
); CALL parity_wait();
\d pc
INSERT INTO pc_parent VALUES (1, 'a');
INSERT INTO pc (id, code, span, parent) VALUES (1, 'x', '[1,5)', 1);
INSERT INTO pc (id, code, span, parent) VALUES (1, 'y', '[6,9)', 1);
INSERT INTO pc (id, code, span, parent) VALUES (2, 'x', '[6,9)', 1);
INSERT INTO pc (id, code, span, parent) VALUES (3, 'z', '[2,3)', 1);
INSERT INTO pc (id, code, span, parent) VALUES (4, 'w', '[20,30)', 9);
INSERT INTO pc (id, code, span, parent, qty) VALUES (5, 'v', '[40,50)', 1, 0);
SELECT id, code, qty, doubled FROM pc;
SELECT count(*) AS jobs FROM pg_stat_background_ddl;

-- LIKE ... INCLUDING INDEXES copies the indexes, as PostgreSQL does.
CREATE TABLE pc_like (LIKE pc INCLUDING ALL); CALL parity_wait();
\d pc_like
INSERT INTO pc_like (id, code, span) VALUES (1, 'x', '[1,5)'), (1, 'y', '[7,8)');

-- A partition gets its parent's indexes; an attached table too.
CREATE TABLE pc_parted (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at); CALL parity_wait();
CREATE INDEX pc_parted_at ON pc_parted (at); CALL parity_wait();
CREATE TABLE pc_parted_2024 PARTITION OF pc_parted
  FOR VALUES FROM ('2024-01-01') TO ('2025-01-01'); CALL parity_wait();
\d pc_parted_2024
CREATE TABLE pc_parted_2025 (id int NOT NULL, at date NOT NULL); CALL parity_wait();
ALTER TABLE pc_parted ATTACH PARTITION pc_parted_2025
  FOR VALUES FROM ('2025-01-01') TO ('2026-01-01'); CALL parity_wait();
\d pc_parted_2025
INSERT INTO pc_parted VALUES (1, '2025-03-01'), (1, '2025-03-01');

-- ALTER TABLE ... ADD a constraint with an index, or USING INDEX.
CREATE TABLE pc_alter (id int, code text, span int4range); CALL parity_wait();
ALTER TABLE pc_alter ADD PRIMARY KEY (id), ADD UNIQUE (code),
  ADD EXCLUDE USING gist (span WITH &&); CALL parity_wait();
CREATE UNIQUE INDEX pc_alter_code2 ON pc_alter (code); CALL parity_wait();
ALTER TABLE pc_alter DROP CONSTRAINT pc_alter_code_key,
  ADD CONSTRAINT pc_alter_code_key UNIQUE USING INDEX pc_alter_code2; CALL parity_wait();
\d pc_alter
INSERT INTO pc_alter VALUES (1, 'a', NULL), (2, 'a', NULL);

-- CREATE SCHEMA with elements.
CREATE SCHEMA pc_schema
  CREATE TABLE t (id int PRIMARY KEY, v int)
  CREATE INDEX t_v ON t (v)
  CREATE VIEW v AS SELECT * FROM t; CALL parity_wait();
\d pc_schema.t

-- What an event trigger runs while another statement executes.
CREATE FUNCTION pc_index_new_tables() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE'
  LOOP
    EXECUTE format('CREATE INDEX ON %s (id)', r.objid::regclass);
  END LOOP;
END $$;
CREATE EVENT TRIGGER pc_index_new_tables ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION pc_index_new_tables();
CREATE TABLE pc_evt (id int, v int); CALL parity_wait();
\d pc_evt
DROP EVENT TRIGGER pc_index_new_tables;
DROP FUNCTION pc_index_new_tables();
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE kind <> 'CREATE INDEX';
