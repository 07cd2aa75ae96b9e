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
