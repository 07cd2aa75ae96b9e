--
-- The parity suite runs every script twice against one expected output:
-- with background_ddl off, and with background_ddl = on (PGOPTIONS), where
-- each statement that becomes a job is followed, on the same line, by
-- CALL parity_wait(): it waits for the jobs submitted since its last call
-- without holding a snapshot (an index build waits for old snapshots), and
-- raises the first failed job's error as the blocking statement would have
-- raised it (once: wait_ddl tells the session it has seen the jobs end).  With background_ddl off there is no job and it does nothing.
-- Messages below WARNING are not shown (client_min_messages, in PGOPTIONS):
-- a submit's NOTICE is, with the command tag, a difference the README
-- allows.
--
CREATE EXTENSION background_ddl;
-- The jobs this session submitted after job "after", up to job "last" (as
-- its superuser, who sees when the session began, whichever role it acts as)
CREATE FUNCTION parity_jobs(after bigint, last bigint) RETURNS SETOF pg_stat_background_ddl
LANGUAGE sql SECURITY DEFINER AS $$
  SELECT * FROM pg_stat_background_ddl
   WHERE id > after AND id <= last
     AND submitted_at >= (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())
$$;
CREATE PROCEDURE parity_wait() LANGUAGE plpgsql AS $$
DECLARE
  last_job bigint := last_ddl_job();
  waited bigint := coalesce(current_setting('parity.waited', true), '0')::bigint;
  failed record;
BEGIN
  -- Nothing new to wait for; or in a transaction block, where the jobs
  -- start at COMMIT (call it again after)
  IF last_job IS NULL OR last_job <= waited
     OR transaction_timestamp() <> statement_timestamp() THEN
    RETURN;
  END IF;
  PERFORM set_config('parity.waited', last_job::text, false);
  LOOP
    COMMIT;
    EXIT WHEN NOT EXISTS (SELECT FROM parity_jobs(waited, last_job)
                           WHERE state NOT IN ('succeeded', 'failed', 'cancelled'));
    PERFORM pg_sleep(0.01);
  END LOOP;
  -- Seen ended: the session's later statements need not wait for them
  PERFORM wait_ddl(id) FROM parity_jobs(waited, last_job);
  SELECT id, state, error, error_sqlstate, error_detail, error_hint INTO failed
    FROM parity_jobs(waited, last_job) WHERE state IN ('failed', 'cancelled')
   ORDER BY state = 'cancelled', id LIMIT 1;
  IF failed.state = 'cancelled' THEN
    RAISE EXCEPTION 'background DDL job % was cancelled: %', failed.id, failed.error;
  ELSIF failed.error_detail IS NOT NULL AND failed.error_hint IS NOT NULL THEN
    RAISE EXCEPTION USING MESSAGE = failed.error, ERRCODE = failed.error_sqlstate,
      DETAIL = failed.error_detail, HINT = failed.error_hint;
  ELSIF failed.error_detail IS NOT NULL THEN
    RAISE EXCEPTION USING MESSAGE = failed.error, ERRCODE = failed.error_sqlstate,
      DETAIL = failed.error_detail;
  ELSIF failed.error_hint IS NOT NULL THEN
    RAISE EXCEPTION USING MESSAGE = failed.error, ERRCODE = failed.error_sqlstate,
      HINT = failed.error_hint;
  ELSIF failed.error IS NOT NULL THEN
    RAISE EXCEPTION USING MESSAGE = failed.error, ERRCODE = failed.error_sqlstate;
  END IF;
END $$;
