-- ALTER TABLE ... ADD CHECK and VALIDATE CONSTRAINT of a check: what becomes
-- a job and what runs in the session, the blocking statement's errors at
-- submit, the constraint NOT VALID (and enforced) while the job checks the
-- rows, then valid; a violation, a cancel or a rolled-back submit leave the
-- table as it was.
ALTER TABLE background_ddl.job ALTER COLUMN id RESTART WITH 6000;
CREATE TABLE at AS SELECT g AS a, g % 10 AS b FROM generate_series(1, 50000) g;
-- at_gate() holds a job's worker in its first chunk while we hold advisory lock 81.
CREATE FUNCTION at_gate(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 1 THEN PERFORM pg_advisory_xact_lock_shared(81); END IF; RETURN x; END $$;
CREATE ROLE at_stranger;
GRANT ALL ON at TO at_stranger;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('at_other', 'dbname=' || current_database());
SET background_ddl = on;

-- The blocking statement's errors, at submit; no job.
ALTER TABLE at ADD CONSTRAINT at_bad CHECK (nosuch > 0);
ALTER TABLE at ADD CONSTRAINT at_bad CHECK (a > 'x');
ALTER TABLE at ADD CONSTRAINT at_bad CHECK (a > (SELECT 1));
ALTER TABLE at_nosuch ADD CHECK (a > 0);
ALTER TABLE IF EXISTS at_nosuch ADD CHECK (a > 0);
ALTER TABLE at VALIDATE CONSTRAINT at_nosuch;
SET ROLE at_stranger;
ALTER TABLE at ADD CONSTRAINT at_bad CHECK (a > 0);
RESET ROLE;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE id >= 6000;

-- A job.  Until it has checked every row the constraint is NOT VALID, and
-- PostgreSQL checks every row written, in any session.
SELECT pg_advisory_lock(81);
ALTER TABLE at ADD CONSTRAINT at_pos CHECK (at_gate(a) > 0);
SELECT last_ddl_job() AS pos_job \gset
SELECT kind, target, strategy, command FROM pg_stat_background_ddl WHERE id = :pos_job;
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at'::regclass ORDER BY conname;
SELECT dblink_exec('at_other', 'INSERT INTO at VALUES (-1, 0)');
SELECT dblink_exec('at_other', 'INSERT INTO at VALUES (50001, 1)');
SELECT pg_advisory_unlock(81);
SELECT wait_ddl(:pos_job, '60s');
SELECT state, rows_done, progress FROM pg_stat_background_ddl WHERE id = :pos_job;
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at'::regclass ORDER BY conname;

-- A row that violates it: the job fails with PostgreSQL's error, and the
-- constraint is dropped, as the failed statement would have left none.
-- (b < 9, with every worker of the job held before its first row until
-- after the INSERT: at_gate(1) waits for lock 81, but in this session.)
SELECT pg_advisory_lock(81);
ALTER TABLE at ADD CONSTRAINT at_b CHECK (at_gate(1) + b < 10);
SELECT last_ddl_job() AS b_job \gset
-- The session's INSERT is checked by the NOT VALID constraint at once, as
-- it would be by the valid one; an UPDATE, which could fix a violating row,
-- comes after the check: it waits for the job, and fails as the statement.
SET client_min_messages = notice;
INSERT INTO at VALUES (50002, 9);
SELECT pg_advisory_unlock(81);
UPDATE at SET b = 0 WHERE a = -100;
RESET client_min_messages;
SELECT wait_ddl(:b_job, '60s');
SELECT state, error, error_sqlstate FROM pg_stat_background_ddl WHERE id = :b_job;
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at'::regclass ORDER BY conname;

-- VALIDATE CONSTRAINT: a failed job leaves the constraint NOT VALID, as
-- the failed statement would; once the rows are fixed it validates.
SET background_ddl = off;
ALTER TABLE at ADD CONSTRAINT at_b CHECK (b < 9) NOT VALID;
SET background_ddl = on;
ALTER TABLE at VALIDATE CONSTRAINT at_b;
SELECT last_ddl_job() AS validate_job \gset
SELECT wait_ddl(:validate_job, '60s');
SELECT state, error FROM pg_stat_background_ddl WHERE id = :validate_job;
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at'::regclass ORDER BY conname;
UPDATE at SET b = 8 WHERE b = 9;
ALTER TABLE at VALIDATE CONSTRAINT at_b;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at'::regclass ORDER BY conname;
-- A valid constraint: nothing to do, and no job.
ALTER TABLE at VALIDATE CONSTRAINT at_b;
SELECT last_ddl_job() = :validate_job + 1 AS no_new_job;

-- ALTER COLUMN ... SET NOT NULL: while the job checks the rows, a helper
-- CHECK (n IS NOT NULL) NOT VALID, named as PostgreSQL names a column's
-- constraint, which PostgreSQL checks for every row written; at the end the
-- column is NOT NULL (PostgreSQL's SET NOT NULL, which the valid helper
-- spares its scan) and the helper is gone.
SET background_ddl = off;
ALTER TABLE at ADD COLUMN n int;
UPDATE at SET n = a;
SET background_ddl = on;
BEGIN;
ALTER TABLE at ALTER COLUMN n SET NOT NULL;
SELECT last_ddl_job() AS not_null_job \gset
SELECT conname, convalidated, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'at'::regclass AND conname LIKE 'at_n%';
COMMIT;
SELECT wait_ddl(:not_null_job, '60s');
SELECT attnotnull FROM pg_attribute WHERE attrelid = 'at'::regclass AND attname = 'n';
SELECT count(*) AS helpers_left FROM pg_constraint WHERE conrelid = 'at'::regclass AND conname LIKE 'at_n%';
-- Already NOT NULL: nothing to do, and no job.
ALTER TABLE at ALTER COLUMN n SET NOT NULL;
SELECT last_ddl_job() = :not_null_job AS no_new_job;
-- A null: the job fails with SET NOT NULL's error, and the helper is dropped.
SET background_ddl = off;
ALTER TABLE at ADD COLUMN m int;
SET background_ddl = on;
ALTER TABLE at ALTER COLUMN m SET NOT NULL;
SELECT last_ddl_job() AS null_job \gset
SELECT wait_ddl(:null_job, '60s');
SELECT state, error, error_sqlstate FROM pg_stat_background_ddl WHERE id = :null_job;
SELECT attnotnull FROM pg_attribute WHERE attrelid = 'at'::regclass AND attname = 'm';
SELECT count(*) AS helpers_left FROM pg_constraint WHERE conrelid = 'at'::regclass AND conname LIKE 'at_m%';
-- Errors at submit, as SET NOT NULL raises them.
ALTER TABLE at ALTER COLUMN nosuch SET NOT NULL;
ALTER TABLE at ALTER COLUMN ctid SET NOT NULL;
SET background_ddl = off;
ALTER TABLE at DROP COLUMN m, DROP COLUMN n;
SET background_ddl = on;

-- ADD FOREIGN KEY: the constraint NOT VALID at submit (every write checked
-- from then on), the rows checked in chunks, the rows changed meanwhile
-- captured and checked again; PostgreSQL's errors at submit and for a row
-- without its referenced row.
CREATE TABLE at_parent (id int PRIMARY KEY, code text UNIQUE);
INSERT INTO at_parent SELECT g, 'c' || g FROM generate_series(1, 100) g;
CREATE TABLE at_child (id int, parent int, code text);
INSERT INTO at_child SELECT g, g % 100 + 1, 'c' || (g % 100 + 1) FROM generate_series(1, 5000) g;
ALTER TABLE at_child ADD FOREIGN KEY (nosuch) REFERENCES at_parent;
ALTER TABLE at_child ADD FOREIGN KEY (parent) REFERENCES at_nosuch;
ALTER TABLE at_child ADD FOREIGN KEY (parent) REFERENCES at_parent (nosuch);
ALTER TABLE at_child ADD FOREIGN KEY (id) REFERENCES at_child (parent);
ALTER TABLE at_child ADD FOREIGN KEY (code) REFERENCES at_parent (id);
SET ROLE at_stranger;
ALTER TABLE at_child ADD FOREIGN KEY (parent) REFERENCES at_parent;
RESET ROLE;
ALTER TABLE at_child ADD CONSTRAINT at_child_parent FOREIGN KEY (parent) REFERENCES at_parent;
SELECT last_ddl_job() AS fk_job \gset
SELECT kind, strategy FROM pg_stat_background_ddl WHERE id = :fk_job;
SELECT wait_ddl(:fk_job, '60s');
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at_child'::regclass;
SELECT count(*) AS capture_triggers_left FROM pg_trigger
 WHERE tgrelid = 'at_child'::regclass AND tgname LIKE 'background_ddl%';
-- A row without its referenced row: PostgreSQL's error, with the key.
INSERT INTO at_child VALUES (5001, NULL, 'c1');
SET session_replication_role = replica;
INSERT INTO at_child VALUES (5002, 1, 'c999');
SET session_replication_role = DEFAULT;
ALTER TABLE at_child ADD CONSTRAINT at_child_code FOREIGN KEY (code) REFERENCES at_parent (code);
SELECT last_ddl_job() AS fk_bad_job \gset
SELECT wait_ddl(:fk_bad_job, '60s');
SELECT state, error, error_detail, error_sqlstate FROM pg_stat_background_ddl WHERE id = :fk_bad_job;
SELECT count(*) AS left_over FROM pg_constraint WHERE conname = 'at_child_code';
-- VALIDATE CONSTRAINT of a foreign key, once the row has its referenced row.
SET background_ddl = off;
ALTER TABLE at_child ADD CONSTRAINT at_child_code FOREIGN KEY (code) REFERENCES at_parent (code) NOT VALID;
SET background_ddl = on;
INSERT INTO at_parent VALUES (999, 'c999');
ALTER TABLE at_child VALIDATE CONSTRAINT at_child_code;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at_child'::regclass ORDER BY conname;
-- MATCH FULL refuses a key half null.
ALTER TABLE at_parent ADD UNIQUE (id, code);
ALTER TABLE at_child ADD CONSTRAINT at_child_full FOREIGN KEY (parent, code)
  REFERENCES at_parent (id, code) MATCH FULL;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT state, error, error_detail FROM pg_stat_background_ddl WHERE id = last_ddl_job();
-- The session's later writes of the referenced table come after the check.
ALTER TABLE at_child DROP CONSTRAINT at_child_code;
ALTER TABLE at_child ADD CONSTRAINT at_child_code FOREIGN KEY (code) REFERENCES at_parent (code);
DELETE FROM at_parent WHERE id = 999;
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
-- The job's queries name everything with its schema: a search_path that
-- puts a schema with look-alike functions and operators first changes
-- nothing (each of these raises when called).
CREATE SCHEMA at_trap;
CREATE FUNCTION at_trap.trap(tid, tid) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'trapped'; END $$;
CREATE FUNCTION at_trap.trap(int, int) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'trapped'; END $$;
CREATE FUNCTION at_trap.trap_count(bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'trapped'; END $$;
CREATE AGGREGATE at_trap.count(*) (sfunc = at_trap.trap_count, stype = bigint);
CREATE OPERATOR at_trap.>= (leftarg = tid, rightarg = tid, function = at_trap.trap);
CREATE OPERATOR at_trap.< (leftarg = tid, rightarg = tid, function = at_trap.trap);
CREATE OPERATOR at_trap.= (leftarg = int, rightarg = int, function = at_trap.trap);
SET search_path = at_trap, public, pg_catalog;
ALTER TABLE at_child ADD CONSTRAINT at_child_trapped FOREIGN KEY (parent) REFERENCES at_parent;
SELECT wait_ddl(last_ddl_job(), '60s');
RESET search_path;
DROP SCHEMA at_trap CASCADE;
SELECT explain_ddl('ALTER TABLE at_child ADD FOREIGN KEY (parent) REFERENCES at_parent');
SELECT strategy, seconds FROM estimate_ddl('ALTER TABLE at_child ADD FOREIGN KEY (parent) REFERENCES at_parent');
DROP TABLE at_child, at_parent;

-- Cancelled: the constraint the job added is dropped.
SELECT pg_advisory_lock(81);
ALTER TABLE at ADD CONSTRAINT at_cancelled CHECK (at_gate(a) < 1000000);
SELECT last_ddl_job() AS cancel_job \gset
SELECT cancel_ddl(:cancel_job);
SELECT pg_advisory_unlock(81);
SELECT wait_ddl(:cancel_job, '60s');
SELECT count(*) AS left_over FROM pg_constraint WHERE conname = 'at_cancelled';

-- A rolled-back submit leaves no job and no constraint.
BEGIN;
ALTER TABLE at ADD CONSTRAINT at_rolled_back CHECK (a > 0);
ROLLBACK;
SELECT count(*) AS left_over FROM pg_constraint WHERE conname = 'at_rolled_back';
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE command LIKE '%at_rolled_back%';

-- In the submitting transaction, a later statement that writes the table
-- has the rows checked there and then, as the blocking statement did.
BEGIN;
ALTER TABLE at ADD CONSTRAINT at_here CHECK (b < 100);
SELECT last_ddl_job() AS here_job \gset
DELETE FROM at WHERE a = 50001;
SELECT convalidated FROM pg_constraint WHERE conname = 'at_here';
COMMIT;
SELECT state, strategy FROM pg_stat_background_ddl WHERE id = :here_job;

-- DROP TABLE cancels the job, and drops the table.
SET background_ddl = off;
CREATE TABLE at_dropped AS SELECT g AS a FROM generate_series(1, 1000) g;
SET background_ddl = on;
SELECT pg_advisory_lock(81);
ALTER TABLE at_dropped ADD CONSTRAINT at_dropped_pos CHECK (at_gate(a) > 0);
SELECT last_ddl_job() AS drop_job \gset
DROP TABLE at_dropped;
SELECT pg_advisory_unlock(81);
SELECT wait_ddl(:drop_job, '60s');
SELECT state, error FROM pg_stat_background_ddl WHERE id = :drop_job;

-- Run in the session, with a NOTICE that says why (client_min_messages
-- shows it here): several subcommands, a temporary table, a table with a
-- temporary inheritance child (a table of this session).  NOT VALID, or
-- ALTER TABLE that checks no rows, is not a job and says nothing.
SET client_min_messages = notice;
ALTER TABLE at ADD CONSTRAINT at_two CHECK (a > -5), ALTER COLUMN b SET NOT NULL;
CREATE TABLE at_ref (a int PRIMARY KEY);
INSERT INTO at_ref SELECT a FROM at;
ALTER TABLE at ADD CONSTRAINT at_fk FOREIGN KEY (a) REFERENCES at_ref;
CREATE TEMP TABLE at_temp (a int);
ALTER TABLE at_temp ADD CHECK (a > 0);
CREATE TEMP TABLE at_child () INHERITS (at_ref);
ALTER TABLE at_ref ADD CHECK (a > 0);
ALTER TABLE at ADD CONSTRAINT at_not_valid CHECK (a > -5) NOT VALID;
ALTER TABLE at ADD COLUMN c int;
RESET client_min_messages;
SELECT count(*) AS jobs_since FROM pg_stat_background_ddl WHERE id > :drop_job;
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'at'::regclass ORDER BY conname;

-- Roles.  A role that owns the referencing table and has only REFERENCES on
-- the referenced one (no SELECT; its owner hides every row from itself with
-- FORCE ROW LEVEL SECURITY) adds a foreign key as PostgreSQL lets it: its
-- rows are checked as PostgreSQL's foreign key checks them (as the
-- referenced table's owner, its row security not applied), and an orphan
-- fails the job with PostgreSQL's error.  Without REFERENCES the submit
-- fails; a role with SELECT and TRIGGER on a table adds no constraint to it
-- and estimates none.
CREATE ROLE at_refs;
CREATE ROLE at_pk_owner;
CREATE TABLE at_rp (id int PRIMARY KEY);
INSERT INTO at_rp SELECT generate_series(1, 50);
ALTER TABLE at_rp OWNER TO at_pk_owner;
ALTER TABLE at_rp ENABLE ROW LEVEL SECURITY;
ALTER TABLE at_rp FORCE ROW LEVEL SECURITY;
CREATE POLICY at_rp_none ON at_rp USING (false);
CREATE TABLE at_rc (id int, rp int);
INSERT INTO at_rc SELECT g, g % 50 + 1 FROM generate_series(1, 500) g;
ALTER TABLE at_rc OWNER TO at_refs;
SET ROLE at_refs;
ALTER TABLE at_rc ADD CONSTRAINT at_rc_rp FOREIGN KEY (rp) REFERENCES at_rp;
RESET ROLE;
GRANT REFERENCES ON at_rp TO at_refs;
SET ROLE at_refs;
ALTER TABLE at_rc ADD CONSTRAINT at_rc_rp FOREIGN KEY (rp) REFERENCES at_rp;
SELECT wait_ddl(last_ddl_job(), '60s');
RESET ROLE;
SELECT convalidated FROM pg_constraint WHERE conname = 'at_rc_rp';
ALTER TABLE at_rc DROP CONSTRAINT at_rc_rp;
INSERT INTO at_rc VALUES (501, 51);
SET ROLE at_refs;
ALTER TABLE at_rc ADD CONSTRAINT at_rc_rp FOREIGN KEY (rp) REFERENCES at_rp;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT state, error, error_detail FROM pg_stat_background_ddl WHERE id = last_ddl_job();
RESET ROLE;
GRANT SELECT, TRIGGER ON at_rc TO at_stranger;
SET ROLE at_stranger;
ALTER TABLE at_rc ADD CHECK (id > 0);
ALTER TABLE at_rc ALTER COLUMN id SET NOT NULL;
SELECT strategy FROM estimate_ddl('ALTER TABLE at_rc ADD CHECK (id > 0)');
RESET ROLE;
SELECT count(*) AS constraints FROM pg_constraint WHERE conrelid = 'at_rc'::regclass;
DROP TABLE at_rc, at_rp;
DROP ROLE at_refs, at_pk_owner;

-- explain_ddl says what it would do.
SELECT explain_ddl('ALTER TABLE at ADD CHECK (a > 0)');
SELECT explain_ddl('ALTER TABLE at ADD CHECK (a > 0), ADD COLUMN d int');
-- estimate_ddl measures the check on a sample (here the whole small table),
-- as the caller, who must own the table; what the expression does is rolled back.
SELECT strategy, rows, bytes, seconds >= 0 AS timed, sampled_blocks = total_blocks AS whole_table
  FROM estimate_ddl('ALTER TABLE at ADD CHECK (a > 0)');
SELECT strategy FROM estimate_ddl('ALTER TABLE at ADD CHECK (a > 10)');
CREATE TABLE at_log (n int);
CREATE FUNCTION at_logged(x int) RETURNS bool LANGUAGE sql AS
  $$ INSERT INTO at_log VALUES (x) RETURNING true $$;
SELECT strategy FROM estimate_ddl('ALTER TABLE at ADD CHECK (at_logged(a))');
SELECT count(*) AS logged FROM at_log;
SET ROLE at_stranger;
SELECT strategy FROM estimate_ddl('ALTER TABLE at ADD CHECK (a > 0)');
RESET ROLE;
SELECT strategy, seconds FROM estimate_ddl('ALTER TABLE at ADD CHECK (a > 0), ADD COLUMN d int');

-- A partitioned table: its partitions' rows are checked (and sampled), each
-- against its own copy of the constraint; a foreign key of a partitioned
-- table runs in the session (PostgreSQL 15 cannot add it NOT VALID).
CREATE TABLE at_parted (a int, b int) PARTITION BY LIST (b);
CREATE TABLE at_parted_1 PARTITION OF at_parted FOR VALUES IN (1);
CREATE TABLE at_parted_2 (b int, a int);
ALTER TABLE at_parted ATTACH PARTITION at_parted_2 FOR VALUES IN (2);
INSERT INTO at_parted SELECT g, g % 2 + 1 FROM generate_series(1, 1000) g;
SELECT explain_ddl('ALTER TABLE at_parted ADD CHECK (a > 0)');
SELECT explain_ddl('ALTER TABLE at_parted ADD FOREIGN KEY (a) REFERENCES at_ref');
SELECT explain_ddl('ALTER TABLE ONLY at_parted ADD CHECK (a > 0)');
SELECT strategy, sampled_blocks = total_blocks AS whole_table, total_blocks
  FROM estimate_ddl('ALTER TABLE at_parted ADD CHECK (a > 1)');
ALTER TABLE at_parted ADD CONSTRAINT at_parted_pos CHECK (a > 0);
SELECT last_ddl_job() AS parted_job \gset
SELECT wait_ddl(:parted_job, '60s');
SELECT state, rows_done FROM pg_stat_background_ddl WHERE id = :parted_job;
SELECT conrelid::regclass, convalidated FROM pg_constraint WHERE conname = 'at_parted_pos' ORDER BY 1;

-- ATTACH PARTITION: the rows of the table attached and of the default
-- partition are checked by a job, against helper checks NOT VALID (the
-- partition constraint ATTACH would check, and the negation of the new
-- bound), which PostgreSQL enforces on every write meanwhile; at the end
-- ATTACH reads no row, and the helpers are dropped.  (The partition key
-- at_gate(a) holds the job's first chunk.)
CREATE TABLE at_range (a int, b int) PARTITION BY RANGE (at_gate(a));
CREATE TABLE at_range_def PARTITION OF at_range DEFAULT;
INSERT INTO at_range SELECT g, 0 FROM generate_series(5000, 5999) g;
CREATE TABLE at_range_1 (a int, b int);
INSERT INTO at_range_1 SELECT g, 0 FROM generate_series(1, 1000) g;
SELECT explain_ddl('ALTER TABLE at_range ATTACH PARTITION at_range_1 FOR VALUES FROM (1) TO (1001)');
SELECT strategy, sampled_blocks = total_blocks AS whole_tables
  FROM estimate_ddl('ALTER TABLE at_range ATTACH PARTITION at_range_1 FOR VALUES FROM (1) TO (1001)');
SELECT strategy FROM estimate_ddl('ALTER TABLE at_range ATTACH PARTITION at_range_1 FOR VALUES FROM (2) TO (1001)');
SET ROLE at_stranger;
ALTER TABLE at_range ATTACH PARTITION at_range_1 FOR VALUES FROM (1) TO (1001);
RESET ROLE;
SELECT pg_advisory_lock(81);
ALTER TABLE at_range ATTACH PARTITION at_range_1 FOR VALUES FROM (1) TO (1001);
SELECT last_ddl_job() AS attach_job \gset
SELECT kind, target, strategy FROM pg_stat_background_ddl WHERE id = :attach_job;
SELECT conrelid::regclass, conname, convalidated, pg_get_constraintdef(oid)
  FROM pg_constraint WHERE conrelid IN ('at_range_1'::regclass, 'at_range_def'::regclass) ORDER BY 1;
SELECT dblink_exec('at_other', 'INSERT INTO at_range VALUES (500, 0)');
SELECT dblink_exec('at_other', 'INSERT INTO at_range_1 VALUES (2000, 0)');
SELECT dblink_exec('at_other', 'INSERT INTO at_range VALUES (2000, 0)');
SELECT pg_advisory_unlock(81);
SELECT wait_ddl(:attach_job, '60s');
SELECT state, rows_done FROM pg_stat_background_ddl WHERE id = :attach_job;
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_class c
  JOIN pg_inherits i ON i.inhrelid = c.oid WHERE i.inhparent = 'at_range'::regclass ORDER BY 1;
SELECT count(*) AS helpers FROM pg_constraint
 WHERE conrelid IN ('at_range_1'::regclass, 'at_range_def'::regclass);
SELECT tableoid::regclass, count(*) FROM at_range GROUP BY 1 ORDER BY 1;
-- Run in the session, saying why: a partitioned table attached, an index
-- ATTACH would build, a parent with a foreign key (ATTACH checks the rows
-- against it in its own scan).
SET client_min_messages = notice;
CREATE TABLE at_range_2 (a int, b int) PARTITION BY RANGE (b);
ALTER TABLE at_range ATTACH PARTITION at_range_2 FOR VALUES FROM (10000) TO (11000);
SET background_ddl = off;
CREATE INDEX at_range_b ON at_range (b);
SET background_ddl = on;
CREATE TABLE at_range_3 (a int, b int);
ALTER TABLE at_range ATTACH PARTITION at_range_3 FOR VALUES FROM (11000) TO (12000);
-- (an invalid index is no match: ATTACH would build one)
CREATE TABLE at_range_5 (a int, b int);
SET background_ddl = off;
CREATE INDEX at_range_5_b ON at_range_5 (b);
SET background_ddl = on;
UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'at_range_5_b'::regclass;
ALTER TABLE at_range ATTACH PARTITION at_range_5 FOR VALUES FROM (14000) TO (15000);
DROP INDEX at_range_b;
ALTER TABLE at_range ADD FOREIGN KEY (a) REFERENCES at_ref;
CREATE TABLE at_range_4 (a int, b int);
ALTER TABLE at_range ATTACH PARTITION at_range_4 FOR VALUES FROM (12000) TO (13000);
RESET client_min_messages;
SELECT count(*) AS jobs_since FROM pg_stat_background_ddl WHERE id > :attach_job;
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_class c
  JOIN pg_inherits i ON i.inhrelid = c.oid WHERE i.inhparent = 'at_range'::regclass ORDER BY 1;

-- ADD PRIMARY KEY USING INDEX of a unique index whose columns allow nulls:
-- PostgreSQL sets them NOT NULL, reading every row under ACCESS EXCLUSIVE.
-- As a job, a helper CHECK (a IS NOT NULL AND b IS NOT NULL) NOT VALID is
-- checked in chunks; the cut-over adds the key (its SET NOT NULL reads no
-- row) and drops the helper.  PostgreSQL's errors at submit; a null fails
-- the job with PostgreSQL's error, for the first column that is null.
SET background_ddl = off;
CREATE TABLE at_pk (a int, b int, c int NOT NULL);
INSERT INTO at_pk SELECT g, g % 7, g FROM generate_series(1, 5000) g;
CREATE UNIQUE INDEX at_pk_ab ON at_pk (a, b);
CREATE INDEX at_pk_a ON at_pk (a);
CREATE UNIQUE INDEX at_pk_part ON at_pk (b) WHERE b > 100;
CREATE UNIQUE INDEX at_pk_c ON at_pk (c);
SET background_ddl = on;
SELECT explain_ddl('ALTER TABLE at_pk ADD PRIMARY KEY USING INDEX at_pk_ab');
SELECT last_ddl_job() AS before_pk \gset
ALTER TABLE at_pk ADD PRIMARY KEY USING INDEX at_pk_a;
ALTER TABLE at_pk ADD PRIMARY KEY USING INDEX at_pk_part;
ALTER TABLE at_pk ADD PRIMARY KEY USING INDEX at_pk_nosuch;
SET ROLE at_stranger;
ALTER TABLE at_pk ADD PRIMARY KEY USING INDEX at_pk_ab;
RESET ROLE;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE id > :before_pk;
UPDATE at_pk SET b = NULL WHERE a = 4000;
ALTER TABLE at_pk ADD CONSTRAINT at_pk_key PRIMARY KEY USING INDEX at_pk_ab;
SELECT last_ddl_job() AS pk_job \gset
SELECT wait_ddl(:pk_job, '60s');
SELECT state, strategy, error, error_sqlstate FROM pg_stat_background_ddl WHERE id = :pk_job;
SELECT count(*) AS constraints FROM pg_constraint WHERE conrelid = 'at_pk'::regclass;
UPDATE at_pk SET b = 0 WHERE a = 4000;
ALTER TABLE at_pk ADD CONSTRAINT at_pk_key PRIMARY KEY USING INDEX at_pk_ab;
SELECT last_ddl_job() AS pk_job \gset
SELECT wait_ddl(:pk_job, '60s');
SELECT state, rows_done FROM pg_stat_background_ddl WHERE id = :pk_job;
SELECT conname, contype, conindid::regclass FROM pg_constraint WHERE conrelid = 'at_pk'::regclass;
SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'at_pk'::regclass AND attnum > 0 ORDER BY attnum;
-- A second primary key: PostgreSQL's error at submit; an index whose
-- columns are NOT NULL already: PostgreSQL's ADD PRIMARY KEY reads no row,
-- and runs as it runs it.
ALTER TABLE at_pk ALTER COLUMN c DROP NOT NULL;
ALTER TABLE at_pk ADD PRIMARY KEY USING INDEX at_pk_c;
ALTER TABLE at_pk DROP CONSTRAINT at_pk_key;
ALTER TABLE at_pk ALTER COLUMN c SET NOT NULL;
SELECT wait_ddl(last_ddl_job(), '60s');
ALTER TABLE at_pk ADD PRIMARY KEY USING INDEX at_pk_c;
SELECT count(*) AS jobs_since FROM pg_stat_background_ddl WHERE id > :pk_job + 1;
SELECT conname, contype FROM pg_constraint WHERE conrelid = 'at_pk'::regclass;

-- ADD PRIMARY KEY (columns) and ADD UNIQUE (columns): PostgreSQL builds the
-- key's index inside the statement, under ACCESS EXCLUSIVE.  As a job: the
-- statement run at submit up to the index's catalog entries and rolled
-- back (its errors), the index's name reserved by a placeholder, a helper
-- CHECK NOT VALID for a primary key's columns that allow nulls; the worker
-- builds the index as CREATE UNIQUE INDEX CONCURRENTLY, checks the helper
-- in chunks, and adds the key with the index.  A duplicate or a null
-- fails the job with the statement's error and leaves nothing.
SET background_ddl = off;
CREATE TABLE at_key (a int, b int, c int NOT NULL, d text);
INSERT INTO at_key SELECT g, g % 7, g, 'd' || g FROM generate_series(1, 5000) g;
SET background_ddl = on;
SELECT explain_ddl('ALTER TABLE at_key ADD PRIMARY KEY (a, b)');
SELECT explain_ddl('ALTER TABLE at_key ADD PRIMARY KEY (c)');
SELECT strategy, locks FROM estimate_ddl('ALTER TABLE at_key ADD UNIQUE (c)');
SELECT last_ddl_job() AS before_key \gset
ALTER TABLE at_key ADD PRIMARY KEY (nosuch);
ALTER TABLE at_key ADD UNIQUE (a) INCLUDE (nosuch);
ALTER TABLE at_key ADD UNIQUE (a) WITH (nosuch = 1);
SET ROLE at_stranger;
ALTER TABLE at_key ADD PRIMARY KEY (a);
RESET ROLE;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE id > :before_key;
-- While it waits for the job before it: the name reserved, the helper
-- NOT VALID.  Then its build waits for a writer's transaction (as CREATE
-- INDEX CONCURRENTLY waits) with the index invalid, which the planner
-- does not use.
SELECT pg_advisory_lock(81);
ALTER TABLE at ADD CONSTRAINT at_key_gate CHECK (at_gate(a) > 0);
SELECT last_ddl_job() AS gate_job \gset
SET background_ddl.after = :gate_job;
ALTER TABLE at_key ADD PRIMARY KEY (a, b);
SELECT last_ddl_job() AS key_job \gset
RESET background_ddl.after;
SELECT kind, target, strategy FROM pg_stat_background_ddl WHERE id = :key_job;
SELECT relname, relkind FROM pg_class WHERE relname LIKE 'at\_key\_%' ORDER BY 1;
SELECT conname, convalidated, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'at_key'::regclass;
CREATE TABLE at_key_pkey ();
SELECT dblink_exec('at_other', 'BEGIN');
SELECT dblink_exec('at_other', 'INSERT INTO at_key VALUES (5001, 0, 5001)');
SELECT pg_advisory_unlock(81);
DO $$ BEGIN
  FOR i IN 1 .. 6000 LOOP
    EXIT WHEN EXISTS (SELECT FROM pg_index WHERE indexrelid::regclass::text = 'at_key_pkey');
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SELECT indisvalid, indisprimary FROM pg_index WHERE indexrelid::regclass::text = 'at_key_pkey';
EXPLAIN (COSTS OFF) SELECT * FROM at_key WHERE a = 5 AND b = 5;
SELECT dblink_exec('at_other', 'COMMIT');
CALL await_ddl(:key_job, '60s');
SELECT state, rows_done > 0 AS rows_counted FROM pg_stat_background_ddl WHERE id = :key_job;
SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'at_key'::regclass;
SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'at_key'::regclass AND attnum > 0 ORDER BY attnum;
-- The session's later writes of the table come after the job: a duplicate
-- fails as it would have
ALTER TABLE at_key ADD CONSTRAINT at_key_u UNIQUE (c) INCLUDE (d) WITH (fillfactor = 70);
SELECT last_ddl_job() AS key_job \gset
INSERT INTO at_key VALUES (0, 0, 1);
SELECT state FROM pg_stat_background_ddl WHERE id = :key_job;
SELECT conname, contype, condeferrable, pg_get_indexdef(conindid) FROM pg_constraint
 WHERE conrelid = 'at_key'::regclass ORDER BY 1;
-- A duplicate, a null: the statement's errors; nothing left
ALTER TABLE at_key DROP CONSTRAINT at_key_pkey, DROP CONSTRAINT at_key_u,
  ALTER COLUMN a DROP NOT NULL, ALTER COLUMN b DROP NOT NULL;
UPDATE at_key SET c = 1 WHERE a = 4000;
ALTER TABLE at_key ADD UNIQUE (c);
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, error, error_sqlstate FROM pg_stat_background_ddl WHERE id = last_ddl_job();
UPDATE at_key SET c = a, b = NULL WHERE a = 4000;
ALTER TABLE at_key ADD PRIMARY KEY (a, b);
CALL await_ddl(last_ddl_job(), '60s');
SELECT state, error, error_sqlstate FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 'at\_key\_%' AND relname <> 'at_key_pkey';
SELECT count(*) AS left_over FROM pg_constraint WHERE conrelid = 'at_key'::regclass;
-- Cancelled while it waits: the placeholder and the helper dropped
SELECT pg_advisory_lock(81);
ALTER TABLE at ADD CONSTRAINT at_key_gate2 CHECK (at_gate(a) > 0);
SELECT last_ddl_job() AS gate_job \gset
SET background_ddl.after = :gate_job;
ALTER TABLE at_key ADD PRIMARY KEY (c);
SELECT last_ddl_job() AS key_job \gset
RESET background_ddl.after;
SELECT cancel_ddl(:key_job);
SELECT pg_advisory_unlock(81);
CALL await_ddl(:key_job, '60s');
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 'at\_key\_%' AND relname <> 'at_key_pkey';
SELECT count(*) AS left_over FROM pg_constraint WHERE conrelid = 'at_key'::regclass;
-- In the submitting transaction, a later write builds it there and then
UPDATE at_key SET b = 0 WHERE a = 4000;
BEGIN;
ALTER TABLE at_key ADD PRIMARY KEY (a, b);
SELECT last_ddl_job() AS key_job \gset
INSERT INTO at_key VALUES (0, 0, 0);
SELECT conname, contype, convalidated FROM pg_constraint WHERE conrelid = 'at_key'::regclass;
COMMIT;
SELECT state, strategy FROM pg_stat_background_ddl WHERE id = :key_job;
-- The session's later statements that reference the new key, or name its
-- index, wait for the job: a table created with a foreign key to it, a
-- comment on the index
ALTER TABLE at_key ADD UNIQUE (d);
COMMENT ON INDEX at_key_d_key IS 'the key of d';
SELECT obj_description('at_key_d_key'::regclass, 'pg_class');
ALTER TABLE at_key ADD UNIQUE (d, c);
CREATE TABLE at_key_ref (d text, c int, FOREIGN KEY (d, c) REFERENCES at_key (d, c));
DROP TABLE at_key_ref;
-- So does a table created with a foreign key to a unique index that an
-- index job builds
CREATE UNIQUE INDEX at_key_b_c ON at_key (b, c);
CREATE TABLE at_key_ref (b int, c int, FOREIGN KEY (b, c) REFERENCES at_key (b, c));
DROP TABLE at_key_ref;
-- and a comment on the key, or its rename
ALTER TABLE at_key ADD UNIQUE (d, b);
COMMENT ON CONSTRAINT at_key_d_b_key ON at_key IS 'the key of d and b';
ALTER TABLE at_key ADD UNIQUE (d, a);
ALTER TABLE at_key RENAME CONSTRAINT at_key_d_a_key TO at_key_da;
SELECT conname, obj_description(oid, 'pg_constraint') FROM pg_constraint
 WHERE conname IN ('at_key_d_b_key', 'at_key_da') ORDER BY 1;
-- A read, or a statement that names the table only, does not wait (the
-- job waits behind another one)
SELECT pg_advisory_lock(81);
ALTER TABLE at ADD CONSTRAINT at_key_gate3 CHECK (at_gate(a) > 0);
SELECT last_ddl_job() AS gate_job \gset
SET background_ddl.after = :gate_job;
ALTER TABLE at_key ADD UNIQUE (c, d);
SELECT last_ddl_job() AS key_job \gset
RESET background_ddl.after;
SELECT count(*) FROM at_key;
COMMENT ON TABLE at_key IS 'named only';
SELECT state FROM pg_stat_background_ddl WHERE id = :key_job;
SELECT cancel_ddl(:key_job);
SELECT pg_advisory_unlock(81);
CALL await_ddl(:key_job, '60s');
-- A partitioned table, or a primary key of one with children: in the
-- session, saying why (a unique constraint is the parent's alone: a job)
SET client_min_messages = notice;
CREATE TABLE at_key_parted (a int) PARTITION BY RANGE (a);
ALTER TABLE at_key_parted ADD PRIMARY KEY (a);
CREATE TABLE at_key_child () INHERITS (at_key);
ALTER TABLE at_key DROP CONSTRAINT at_key_pkey;
ALTER TABLE at_key ADD PRIMARY KEY (c);
-- (a DEFERRABLE key: its index built concurrently would check writes at once)
ALTER TABLE at_key ADD UNIQUE (a) DEFERRABLE;
ALTER TABLE at_key ADD UNIQUE (c);
RESET client_min_messages;
CALL await_ddl(last_ddl_job(), '60s');
SELECT conname, contype FROM pg_constraint WHERE conrelid IN ('at_key'::regclass, 'at_key_child'::regclass) ORDER BY 1;
DROP TABLE at_key_parted, at_key_child;
ALTER TABLE at DROP CONSTRAINT at_key_gate, DROP CONSTRAINT at_key_gate2,
  DROP CONSTRAINT at_key_gate3;

SELECT dblink_disconnect('at_other');
DROP TABLE at, at_ref, at_child, at_log, at_parted, at_range, at_pk, at_key;
DROP FUNCTION at_gate(int), at_logged(int);
DROP ROLE at_stranger;
RESET background_ddl;
