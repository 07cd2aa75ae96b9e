-- pause_ddl and resume_ddl, and control functions that roll back: a paused
-- job holds no worker and does not move; it resumes from its checkpoint;
-- a cancel or pause that rolls back costs the job no attempt.
ALTER TABLE background_ddl.job ALTER COLUMN id RESTART WITH 2000;
CREATE TABLE pr AS SELECT g AS id, md5(g::text) AS payload FROM generate_series(1, 100000) g;
SET background_ddl = on;

-- gate() holds the worker inside a chunk while we hold advisory lock 78.
CREATE FUNCTION pr_gate(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 50000 THEN PERFORM pg_advisory_xact_lock_shared(78); END IF; RETURN x; END $$;
CREATE FUNCTION pr_wait_for_gate() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..3000 LOOP
    IF EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 78 AND NOT granted) THEN
      RETURN 'held';
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
  RETURN 'never held';
END $$;
-- (no worker for 20 polls in a row: a scheduler pass that read the job
-- running before the pause may start one, which finds it paused and exits)
CREATE FUNCTION pr_wait_for_no_worker(job bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  quiet int := 0;
BEGIN
  FOR i IN 1..3000 LOOP
    IF (SELECT workers = 0 AND pid IS NULL FROM pg_stat_background_ddl WHERE id = job) THEN
      quiet := quiet + 1;
      IF quiet = 20 THEN
        RETURN 'no worker';
      END IF;
    ELSE
      quiet := 0;
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
  RETURN 'a worker is still there';
END $$;

SELECT pg_advisory_lock(78);
CREATE MATERIALIZED VIEW pr_mv AS SELECT pr_gate(id) AS id, payload FROM pr;
SELECT last_ddl_job() AS job \gset
SELECT pr_wait_for_gate();

-- Rolled-back control functions: the worker lets go, then goes on.
BEGIN;
SELECT cancel_ddl(:job);
SELECT state FROM pg_stat_background_ddl WHERE id = :job;
ROLLBACK;
BEGIN;
SELECT pause_ddl(:job);
ROLLBACK;
-- A failed DROP of the target cancels nothing either.
BEGIN;
CREATE VIEW pr_depends AS SELECT id FROM pr_mv;
SAVEPOINT s;
DROP MATERIALIZED VIEW pr_mv;
ROLLBACK TO SAVEPOINT s;
ROLLBACK;
SELECT pr_wait_for_gate();
SELECT state, attempts FROM pg_stat_background_ddl WHERE id = :job;

-- Pause: committed, the job holds no worker, and stays where it was.
SELECT pause_ddl(:job);
SELECT pg_advisory_unlock(78);
SELECT pr_wait_for_no_worker(:job);
SELECT state, phase, pid FROM pg_stat_background_ddl WHERE id = :job;
SELECT chunks_done AS paused_chunks, progress AS paused_progress
  FROM pg_stat_background_ddl WHERE id = :job \gset
SELECT pg_sleep(0.5);
SELECT chunks_done = :paused_chunks AS chunks_still, progress = :paused_progress AS progress_still
  FROM pg_stat_background_ddl WHERE id = :job;
SELECT count(*) AS processes_of_the_job FROM pg_stat_activity
 WHERE application_name = 'background_ddl job ' || :job;
SELECT pause_ddl(:job) AS pause_again;
SELECT resume_ddl(:job + 1000000);

-- Resume: it goes on from its last checkpoint (no chunk computed twice),
-- without a new attempt, and the result is complete.
SELECT min(done_at) AS first_chunk_at FROM background_ddl.chunk WHERE job_id = :job \gset
SELECT resume_ddl(:job), resume_ddl(:job) AS resume_again;
SELECT wait_ddl(:job, '60s');
SELECT attempts, chunks_done = (SELECT count(*) FROM background_ddl.chunk WHERE job_id = :job) AS one_row_per_chunk
  FROM pg_stat_background_ddl WHERE id = :job;
SELECT min(done_at) = :'first_chunk_at' AS first_chunk_kept,
       bool_and(start_block = coalesce(prev_end, 0)) AS no_chunk_twice
  FROM (SELECT *, lag(end_block) OVER (ORDER BY start_block) AS prev_end
          FROM background_ddl.chunk WHERE job_id = :job) c;
SELECT (SELECT count(*) FROM (TABLE pr_mv EXCEPT ALL SELECT id, payload FROM pr) a)
     + (SELECT count(*) FROM (SELECT id, payload FROM pr EXCEPT ALL TABLE pr_mv) b) AS differences;

-- A paused job survives until resumed; a cancel of it removes everything.
CREATE MATERIALIZED VIEW pr_mv2 AS SELECT id FROM pr;
SELECT pause_ddl(last_ddl_job());
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT cancel_ddl(last_ddl_job());
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS leftovers FROM pg_class WHERE relname = 'pr_mv2';
SELECT resume_ddl(last_ddl_job()) AS resume_cancelled;

-- Only those who may cancel a job may pause or resume it.
CREATE ROLE pr_other;
SET ROLE pr_other;
SELECT pause_ddl(:job);
SELECT resume_ddl(:job);
RESET ROLE;
DROP ROLE pr_other;

-- A job's limits (alter_ddl) have the ranges of the settings: batch_time
-- from 10 ms to 1 hour, as background_ddl.batch_time; max_rate at least
-- 1 row per second.
SELECT min_val, max_val, unit FROM pg_settings WHERE name = 'background_ddl.batch_time';
SELECT alter_ddl(:job, batch_time => '9 ms');
SELECT alter_ddl(:job, batch_time => '61 min');
SELECT alter_ddl(:job, max_rate => 0.5);
SELECT alter_ddl(:job, batch_time => '10 ms', max_rate => 1) AS ended_job_unchanged;

DROP MATERIALIZED VIEW pr_mv;
DROP TABLE pr;
DROP FUNCTION pr_gate(int), pr_wait_for_gate(), pr_wait_for_no_worker(bigint);
