-- Privileges: a job runs as the role that submitted it, never more; the
-- catalog is not writable by ordinary roles; the view hides other roles'
-- commands; only the owner, pg_signal_backend members and superusers cancel.
CREATE ROLE bgddl_alice;
CREATE ROLE bgddl_bob;
CREATE ROLE bgddl_operator IN ROLE pg_signal_backend;
GRANT CREATE ON SCHEMA public TO bgddl_alice, bgddl_bob;

SET ROLE bgddl_alice;
CREATE TABLE alice_data AS SELECT g AS id, g % 10 AS grp FROM generate_series(1, 1000) g;
SET background_ddl = on;
CREATE FUNCTION alice_secret(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
REVOKE EXECUTE ON FUNCTION alice_secret(int) FROM PUBLIC;

-- Bob may not read alice's table or call her function: refused at submit.
SET ROLE bgddl_bob;
CREATE MATERIALIZED VIEW bob_mv AS SELECT * FROM alice_data;
CREATE MATERIALIZED VIEW bob_mv AS SELECT alice_secret(1) AS x;
SELECT count(*) AS jobs FROM pg_stat_background_ddl WHERE target = 'public.bob_mv';

-- Bob may not touch the catalog directly.
SELECT count(*) FROM background_ddl.job;
INSERT INTO background_ddl.job (database_oid, owner_oid, kind, target_oid, target_name, command, settings)
  VALUES (0, 0, '', 0, '', '', '{}');
UPDATE background_ddl.job SET state = 'succeeded';
DELETE FROM background_ddl.chunk;
-- Nor with USAGE on its schema, granted by mistake: the tables refuse him.
RESET ROLE;
GRANT USAGE ON SCHEMA background_ddl TO bgddl_bob;
SET ROLE bgddl_bob;
SELECT count(*) FROM background_ddl.job;
INSERT INTO background_ddl.job (database_oid, owner_oid, kind, target_oid, target_name, command, settings)
  VALUES (0, 0, '', 0, '', '', '{}');
UPDATE background_ddl.job SET state = 'succeeded';
DELETE FROM background_ddl.chunk;
INSERT INTO background_ddl.dirty SELECT * FROM background_ddl.dirty;
RESET ROLE;
REVOKE USAGE ON SCHEMA background_ddl FROM bgddl_bob;

-- Granted, bob's job runs and the result belongs to bob.
SET ROLE bgddl_alice;
GRANT SELECT ON alice_data TO bgddl_bob;
SET ROLE bgddl_bob;
CREATE MATERIALIZED VIEW bob_mv AS SELECT id FROM alice_data WHERE grp = 1;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT count(*) FROM bob_mv;
SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'bob_mv';

-- The job re-checks privileges when it runs: revoked by another session
-- before it starts, the job fails with the permission error, as bob, and
-- leaves nothing.  (Revoked by this session, the job would be built first:
-- the session's later statements see its jobs done.)
BEGIN;
CREATE MATERIALIZED VIEW bob_mv2 AS SELECT id FROM alice_data WHERE grp = 2;
RESET ROLE;
CREATE EXTENSION dblink;
SELECT dblink_exec('dbname=' || current_database(),
                   'SET ROLE bgddl_alice; REVOKE SELECT ON alice_data FROM bgddl_bob');
DROP EXTENSION dblink;
COMMIT;
SET ROLE bgddl_bob;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT usename, state, error FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS leftovers FROM pg_class WHERE relname = 'bob_mv2';

-- Row security applies to the job as to the submitting role.
SET ROLE bgddl_alice;
GRANT SELECT ON alice_data TO bgddl_bob;
ALTER TABLE alice_data ENABLE ROW LEVEL SECURITY;
CREATE POLICY bob_sees_grp3 ON alice_data FOR SELECT TO bgddl_bob USING (grp = 3);
SET ROLE bgddl_bob;
CREATE MATERIALIZED VIEW bob_rls AS SELECT id, grp FROM alice_data;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT grp, count(*) FROM bob_rls GROUP BY grp;

-- A job of alice's, slow enough (10 ms a row, in one batch) to be cancelled
-- before it finishes.
SET ROLE bgddl_alice;
CREATE FUNCTION alice_slow(x int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.01); RETURN x; END $$;
CREATE MATERIALIZED VIEW alice_mv AS SELECT alice_slow(id) FROM alice_data WHERE alice_secret(id) > 0;
SELECT last_ddl_job() AS alice_job \gset

-- Bob sees alice's job, but not its command, nor its messages; he may not
-- cancel it.
SET ROLE bgddl_bob;
SELECT usename, target, command FROM pg_stat_background_ddl WHERE id = :alice_job;
SELECT * FROM ddl_messages(:alice_job);
SELECT cancel_ddl(:alice_job);
-- ... nor slow it down, or take its workers.
SELECT alter_ddl(:alice_job, max_rate => 1);
SELECT alter_ddl(:alice_job, workers => 1);

-- A pg_signal_backend member may.
SET ROLE bgddl_operator;
SELECT cancel_ddl(:alice_job);
SELECT state FROM pg_stat_background_ddl WHERE id = :alice_job;

-- A superuser's job: only a superuser may cancel it.
RESET ROLE;
CREATE MATERIALIZED VIEW su_mv AS SELECT id FROM alice_data;
SELECT last_ddl_job() AS su_job \gset
SET ROLE bgddl_operator;
SELECT cancel_ddl(:su_job);
SELECT alter_ddl(:su_job, max_rate => 1);
RESET ROLE;
SELECT wait_ddl(:su_job, '60s');

-- A job runs inside a security-restricted operation, as REFRESH does: code
-- it calls cannot leave state behind (here: a temporary table).
CREATE FUNCTION make_temp_table(int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN EXECUTE 'CREATE TEMP TABLE sneaky (a int)'; RETURN $1; END $$;
SET ROLE bgddl_bob;
CREATE MATERIALIZED VIEW bob_escalate AS SELECT make_temp_table(id) FROM alice_data;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT state, error FROM pg_stat_background_ddl WHERE id = last_ddl_job();
RESET ROLE;

DROP MATERIALIZED VIEW bob_mv, bob_rls, su_mv;
DROP TABLE alice_data;
DROP FUNCTION alice_secret(int), alice_slow(int), make_temp_table(int);
REVOKE CREATE ON SCHEMA public FROM bgddl_alice, bgddl_bob;
DROP ROLE bgddl_alice, bgddl_bob, bgddl_operator;

-- estimate_ddl of an index runs the table owner's code as the table's
-- owner, as CREATE INDEX runs it (an index expression, a range type's
-- subtype_diff called by GiST), never as the caller: a superuser calling it
-- would lend the owner its rights.  Each function records in a sequence
-- (setval is not rolled back) as whom it ran: 1 the owner, 2 a superuser,
-- 3 another role.  Only the table's owner (or a superuser) may estimate it.
SET background_ddl = off;
CREATE ROLE est_owner;
CREATE ROLE est_other;
GRANT CREATE ON SCHEMA public TO est_owner;
CREATE SEQUENCE est_who_expr;
CREATE SEQUENCE est_who_diff;
GRANT ALL ON est_who_expr, est_who_diff TO PUBLIC;
SET ROLE est_owner;
CREATE FUNCTION est_as_whom() RETURNS int LANGUAGE sql STABLE AS
  $$ SELECT CASE WHEN current_user = 'est_owner' THEN 1
                 WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN 2 ELSE 3 END $$;
CREATE FUNCTION est_record(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN PERFORM setval('est_who_expr', est_as_whom()); RETURN x; END $$;
CREATE FUNCTION est_diff(a int4, b int4) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN PERFORM setval('est_who_diff', est_as_whom()); RETURN a - b; END $$;
CREATE TYPE est_range AS RANGE (subtype = int4, subtype_diff = est_diff);
CREATE TABLE est_t (id int, during est_range);
INSERT INTO est_t SELECT g, est_range(g, g + g % 100) FROM generate_series(1, 3000) g;
GRANT SELECT ON est_t TO est_other;
RESET ROLE;
SELECT setval('est_who_expr', 100), setval('est_who_diff', 100);
SELECT rows > 0 AS estimated FROM estimate_ddl('CREATE INDEX ON est_t (est_record(id))');
SELECT rows > 0 AS estimated FROM estimate_ddl('CREATE INDEX ON est_t USING gist (during)');
SELECT (SELECT last_value FROM est_who_expr) AS expression_ran_as,
       (SELECT last_value FROM est_who_diff) AS subtype_diff_ran_as;
SET ROLE est_other;
SELECT rows FROM estimate_ddl('CREATE INDEX ON est_t (est_record(id))');
RESET ROLE;
SELECT count(*) AS left_behind FROM pg_class WHERE relname LIKE 'background_ddl_estimate%';
-- So does estimate_ddl of a table's rewrite (a column's new type), its
-- USING expression: as the owner for a superuser, refused for another role.
SELECT setval('est_who_expr', 100);
SELECT rows > 0 AS estimated
  FROM estimate_ddl('ALTER TABLE est_t ALTER COLUMN id TYPE bigint USING est_record(id)');
SELECT last_value AS using_ran_as FROM est_who_expr;
SET ROLE est_other;
SELECT rows FROM estimate_ddl('ALTER TABLE est_t ALTER COLUMN id TYPE bigint USING est_record(id)');
RESET ROLE;
SELECT format_type(atttypid, atttypmod) AS id_type FROM pg_attribute
 WHERE attrelid = 'est_t'::regclass AND attname = 'id';
DROP TABLE est_t;
DROP TYPE est_range;
DROP FUNCTION est_record(int), est_diff(int4, int4), est_as_whom();
DROP SEQUENCE est_who_expr, est_who_diff;
REVOKE CREATE ON SCHEMA public FROM est_owner;
DROP ROLE est_owner, est_other;
-- The extension's view and catalog are its script's, not a job's objects,
-- which a DROP removes regardless of their membership: refused, even to a
-- superuser
DROP VIEW pg_stat_background_ddl;
DROP TABLE background_ddl.message;
SELECT count(*) FROM pg_stat_background_ddl WHERE false;
