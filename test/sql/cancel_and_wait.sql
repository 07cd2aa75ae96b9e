-- cancel_ddl and wait_ddl: cancelling in every state leaves nothing behind;
-- waiting is bounded; a dropped placeholder cancels its job.
SET background_ddl = on;

-- A job that takes a while in one batch (a volatile function: no chunks).
CREATE FUNCTION slow_identity(x int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.1); RETURN x; END $$;

-- Wait until a job is running, polling with a bound.
CREATE FUNCTION wait_until_running(job bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOR i IN 1..600 LOOP
    SELECT state INTO s FROM pg_stat_background_ddl WHERE id = job;
    EXIT WHEN s <> 'queued';
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN s;
END $$;

-- Wait until no worker holds a job (a cancelled job's worker may still be
-- leaving it when cancel_ddl returns), polling with a bound.
CREATE FUNCTION wait_until_left(job bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..600 LOOP
    IF (SELECT pid IS NULL FROM pg_stat_background_ddl WHERE id = job) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN false;
END $$;

-- Cancel a running job: it stops mid-batch and leaves nothing.
CREATE MATERIALIZED VIEW mv_slow AS SELECT slow_identity(g) AS x FROM generate_series(1, 600) g;
SELECT last_ddl_job() AS job \gset
SELECT wait_until_running(:job);
SELECT wait_ddl(:job, '200ms');
SELECT cancel_ddl(:job);
SELECT state, phase, error, finished_at IS NOT NULL AS finished
  FROM pg_stat_background_ddl WHERE id = :job;
SELECT wait_until_left(:job) AS worker_left;
SELECT count(*) AS leftover_relations FROM pg_class WHERE relname = 'mv_slow';
SELECT count(*) AS leftover_chunks FROM background_ddl.chunk WHERE job_id = :job;
SELECT wait_ddl(:job);
-- Cancelling again: already finished.
SELECT cancel_ddl(:job);

-- Cancel a job that has not started (same transaction as the submit).
BEGIN;
CREATE MATERIALIZED VIEW mv_never AS SELECT id FROM events;
SELECT cancel_ddl(last_ddl_job());
COMMIT;
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS leftover_relations FROM pg_class WHERE relname = 'mv_never';

-- Cancel is transactional: rolled back, the job goes on and succeeds.
CREATE MATERIALIZED VIEW mv_kept AS SELECT slow_identity(g) AS x FROM generate_series(1, 5) g;
SELECT last_ddl_job() AS job \gset
BEGIN;
SELECT cancel_ddl(:job);
ROLLBACK;
SELECT wait_ddl(:job, '60s');
SELECT count(*) FROM mv_kept;

-- Cancel a chunked job (whatever phase it is in by now): nothing left.  Its
-- capture triggers need a strong lock to drop: the scheduler drops them
-- right after, with short lock timeouts.
CREATE FUNCTION wait_until_clean(cancelled_job bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN NOT (SELECT cleanup_pending FROM background_ddl.job WHERE id = cancelled_job);
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'background_ddl_capture_' || cancelled_job || '%')
       + (SELECT count(*) FROM background_ddl.dirty WHERE job_id = cancelled_job)
       + (SELECT count(*) FROM background_ddl.recomputed WHERE job_id = cancelled_job);
END $$;
-- gate() holds the worker inside its first chunk while we hold advisory lock
-- 77, so the job cannot finish before the cancel.
CREATE FUNCTION gate(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF x = 1 THEN PERFORM pg_advisory_xact_lock_shared(77); END IF; RETURN x; END $$;
SELECT pg_advisory_lock(77);
CREATE MATERIALIZED VIEW mv_chunked AS SELECT gate(id) AS id, md5(payload) FROM events;
SELECT cancel_ddl(last_ddl_job());
SELECT pg_advisory_unlock(77);
SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job();
SELECT count(*) AS leftover_relations FROM pg_class WHERE relname = 'mv_chunked';
SELECT count(*) AS leftover_chunks FROM background_ddl.chunk WHERE job_id = last_ddl_job();
SELECT wait_until_clean(last_ddl_job()) AS leftover_triggers_and_marks;

-- DROP of the placeholder cancels the job, even mid-batch.
CREATE MATERIALIZED VIEW mv_dropped AS SELECT slow_identity(g) AS x FROM generate_series(1, 600) g;
SELECT last_ddl_job() AS job \gset
SELECT wait_until_running(:job);
DROP MATERIALIZED VIEW mv_dropped;
SELECT state, error FROM pg_stat_background_ddl WHERE id = :job;

-- Errors.
SELECT cancel_ddl(999999);
SELECT wait_ddl(999999);
SELECT cancel_ddl(NULL);
SELECT wait_ddl(NULL);
