-- Which queries are computed in chunks of a driving table and which in one
-- batch, and that either way the content equals the query's result.
CREATE TABLE small AS SELECT g AS account, 'n' || g AS name FROM generate_series(0, 49) g;
-- A partitioned table: two ranges, one sub-partitioned by list, a default,
-- one partition whose columns are in another order
CREATE TABLE pt (id int, v int, note text) PARTITION BY RANGE (id);
CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (300);
CREATE TABLE pt_2 PARTITION OF pt FOR VALUES FROM (300) TO (600) PARTITION BY LIST ((v % 2));
CREATE TABLE pt_2_even PARTITION OF pt_2 FOR VALUES IN (0);
CREATE TABLE pt_2_odd (note text, v int, id int);
ALTER TABLE pt_2 ATTACH PARTITION pt_2_odd FOR VALUES IN (1);
CREATE TABLE pt_default PARTITION OF pt DEFAULT;
INSERT INTO pt SELECT g, g * 7 % 100, 'p' || g FROM generate_series(1, 1000) g;
SET background_ddl = on;
CREATE TABLE parent (id int, v int);
CREATE TABLE child () INHERITS (parent);
INSERT INTO child SELECT g, g FROM generate_series(1, 100) g;
CREATE VIEW plain_view AS SELECT id, account FROM events;
CREATE VIEW view_expr AS SELECT id, upper(payload) AS up, account * 2 AS a2 FROM events WHERE account < 20;
CREATE VIEW view_join AS SELECT e.id, s.name FROM events e JOIN small s USING (account);
CREATE VIEW view_nested AS SELECT id, up FROM view_expr WHERE id % 2 = 0;
CREATE VIEW view_barrier WITH (security_barrier) AS SELECT id FROM events WHERE account < 5;
CREATE VIEW view_grouped AS SELECT account, count(*) AS n FROM events GROUP BY account;

-- Rows in the materialized view but not in the query, plus the reverse.
CREATE FUNCTION differences(mv regclass, query text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT (SELECT count(*) FROM (TABLE %s EXCEPT ALL (%s)) a)
                       + (SELECT count(*) FROM ((%s) EXCEPT ALL TABLE %s) b)', mv, query, query, mv)
    INTO n;
  RETURN n;
END $$;

CREATE TABLE cases (name text, query text);
INSERT INTO cases VALUES
  ('d_filter', 'SELECT id, upper(payload) AS p FROM events WHERE account < 10'),
  ('d_inner_join', 'SELECT e.id, s.name FROM events e JOIN small s USING (account)'),
  ('d_inner_join_small_first', 'SELECT e.id, s.name FROM small s JOIN events e USING (account)'),
  ('d_comma_join', 'SELECT e.id, s.name FROM small s, events e WHERE s.account = e.account'),
  ('d_left_join', 'SELECT e.id, s.name FROM events e LEFT JOIN small s USING (account)'),
  ('d_left_join_small_left', 'SELECT s.name, e.id FROM small s LEFT JOIN events e ON e.id = s.account'),
  ('d_right_join', 'SELECT e.id, s.name FROM small s RIGHT JOIN events e USING (account)'),
  ('d_self_join', 'SELECT a.id, b.payload FROM events a JOIN events b ON b.id = a.id + 1'),
  ('d_only_parent', 'SELECT id FROM ONLY parent'),
  ('d_matview_source', 'SELECT id FROM mv_a'),
  ('d_full_join', 'SELECT e.id, s.name FROM events e FULL JOIN small s USING (account)'),
  ('d_aggregate', 'SELECT account, count(*) AS n FROM events GROUP BY account'),
  ('d_distinct', 'SELECT DISTINCT account FROM events'),
  -- partial aggregation: NULL keys and values, empty groups, HAVING,
  -- expressions in GROUP BY and around aggregates, joins, no GROUP BY
  ('a_many', 'SELECT account, count(*) AS n, count(nullif(id % 3, 0)) AS c, sum(id) AS s, sum(id::int2 % 7) AS s2,
              sum(id::numeric / 7) AS sn, avg(id) AS a, avg(id::numeric / 3) AS an, min(payload) AS lo,
              max(payload) AS hi, bool_and(id % 2 = 0) AS b, bit_or(id::int) AS bo, bit_xor(id::int) AS bx
              FROM events GROUP BY account'),
  ('a_null_key', 'SELECT nullif(account, 3) AS k, count(*) AS n, max(nullif(payload, payload)) AS m FROM events GROUP BY 1'),
  ('a_having', 'SELECT account % 7 AS k, sum(id) AS s FROM events GROUP BY account % 7 HAVING count(*) > 80 AND max(id) > 10'),
  ('a_expressions', 'SELECT account * 2 + 1 AS k, (count(*) * 10 + sum(id)) / 3 AS x FROM events GROUP BY account * 2'),
  ('a_filter', 'SELECT account, count(*) FILTER (WHERE id > 500) AS n, avg(id) FILTER (WHERE id < 0) AS none FROM events GROUP BY account'),
  ('a_join', 'SELECT s.name, count(*) AS n, sum(e.id) AS s FROM events e JOIN small s USING (account) GROUP BY s.name'),
  ('a_left_join', 'SELECT s.name, count(e.id) AS n FROM events e LEFT JOIN small s ON s.account = e.account + 40 GROUP BY s.name'),
  ('a_no_group', 'SELECT count(*) AS n, sum(id) AS s, avg(id) AS a, min(payload) AS m FROM events'),
  ('a_no_rows', 'SELECT account, count(*) AS n FROM events WHERE id < 0 GROUP BY account'),
  ('a_no_rows_no_group', 'SELECT count(*) AS n, sum(id) AS s, max(id) AS m FROM events WHERE id < 0'),
  ('a_group_only', 'SELECT account FROM events GROUP BY account'),
  ('a_distinct_exprs', 'SELECT DISTINCT account % 5 AS a, length(payload) AS l FROM events'),
  ('a_distinct_on', 'SELECT DISTINCT ON (account) account FROM events'),
  ('a_distinct_on_order', 'SELECT DISTINCT ON (account) account, id, payload FROM events ORDER BY account, id DESC'),
  ('a_distinct_on_expr', 'SELECT DISTINCT ON (account % 7) account % 7 AS k, id FROM events ORDER BY account % 7, id'),
  -- one batch, each for its reason
  ('a_count_distinct', 'SELECT account, count(DISTINCT id % 3) AS n FROM events GROUP BY account'),
  ('a_float', 'SELECT account, sum(id::float8) AS s FROM events GROUP BY account'),
  ('a_string_agg', 'SELECT account, string_agg(payload, '','' ORDER BY id) AS s FROM events GROUP BY account'),
  ('a_ordered_set', 'SELECT account, percentile_disc(0.5) WITHIN GROUP (ORDER BY id) AS p FROM events GROUP BY account'),
  ('a_grouping_sets', 'SELECT account, count(*) AS n FROM events GROUP BY ROLLUP (account)'),
  ('a_distinct_aggregate', 'SELECT DISTINCT count(*) AS n FROM events GROUP BY account'),
  ('d_limit', 'SELECT id FROM events ORDER BY id LIMIT 10'),
  ('d_order_by', 'SELECT id FROM events ORDER BY id'),
  ('d_window', 'SELECT id, row_number() OVER (ORDER BY id) AS r FROM events'),
  ('d_target_srf', 'SELECT id, generate_series(1, 2) AS k FROM events WHERE id <= 10'),
  ('d_time', 'SELECT id FROM events WHERE now() > ''2000-01-01'''),
  ('d_volatile', 'SELECT id FROM events WHERE random() < 2'),
  ('d_stable', 'SELECT id, to_char(id, ''99999'') AS t FROM events'),
  -- functions whose result cannot change between batches, and some that can
  ('f_to_char', 'SELECT id, to_char(''2024-01-01''::timestamptz + id * interval ''1 hour'', ''YYYY-MM-DD HH24'') AS h FROM events'),
  ('f_setting', 'SELECT id, current_setting(''DateStyle'') AS d, current_user AS u FROM events WHERE account < 3'),
  ('f_date_group', 'SELECT date_trunc(''day'', ''2024-01-01''::timestamptz + id * interval ''1 hour'') AS d, count(*) AS n FROM events GROUP BY 1'),
  ('f_backend_pid', 'SELECT id FROM events WHERE pg_backend_pid() > 0'),
  ('f_age', 'SELECT id FROM events WHERE age(''2000-01-01''::timestamp) > interval ''1 day'''),
  ('f_current_time', 'SELECT id FROM events WHERE current_time IS NOT NULL'),
  ('d_sublink', 'SELECT id FROM events WHERE account IN (SELECT account FROM small)'),
  ('d_union', 'SELECT id FROM events UNION ALL SELECT account FROM small'),
  ('d_cte', 'WITH w AS (SELECT id FROM events) SELECT id FROM w'),
  ('d_inheritance', 'SELECT id FROM parent'),
  ('d_view', 'SELECT id FROM plain_view'),
  -- views: pulled up into the query when simple and not nullable by an outer join
  ('v_expr', 'SELECT id, up FROM view_expr WHERE a2 > 4'),
  ('v_join', 'SELECT * FROM view_join'),
  ('v_nested', 'SELECT * FROM view_nested'),
  ('v_whole_row', 'SELECT v AS r FROM plain_view v WHERE account = 3'),
  ('v_aggregate', 'SELECT account, count(*) AS n, max(id) AS m FROM plain_view GROUP BY account'),
  ('v_view_and_table', 'SELECT v.id, s.name FROM view_expr v JOIN small s ON s.account = v.a2'),
  ('v_nullable', 'SELECT s.name, v.id FROM small s LEFT JOIN view_expr v ON v.id = s.account'),
  ('v_barrier', 'SELECT id FROM view_barrier'),
  ('v_grouped', 'SELECT * FROM view_grouped'),
  -- partitioned: chunks of the partitions read (after pruning), one batch
  -- for a whole-row reference or a partition also read on its own
  ('p_filter', 'SELECT id, v, upper(note) AS n FROM pt WHERE v % 3 = 0'),
  ('p_pruned', 'SELECT id, note FROM pt WHERE id >= 300 AND id < 600'),
  ('p_join', 'SELECT p.id, s.name FROM pt p JOIN small s ON s.account = p.v'),
  ('p_aggregate', 'SELECT v % 5 AS k, count(*) AS n, sum(id) AS s, max(note) AS m FROM pt GROUP BY 1'),
  ('p_whole_row', 'SELECT p AS r FROM pt p WHERE v = 3'),
  ('p_partition_too', 'SELECT a.id FROM pt a JOIN pt_1 b USING (id)'),
  ('d_no_table', 'SELECT x FROM (VALUES (1), (2)) v(x)'),
  ('d_tablesample', 'SELECT id FROM events TABLESAMPLE SYSTEM (100)');

-- Submit them all (several jobs queue up behind background_ddl.max_workers).
DO $$
DECLARE c record;
BEGIN
  FOR c IN SELECT * FROM cases LOOP
    EXECUTE format('CREATE MATERIALIZED VIEW %I AS %s', c.name, c.query);
  END LOOP;
END $$;
SELECT count(*) FILTER (WHERE wait_ddl(j.id, '120s') = 'succeeded') AS succeeded
  FROM background_ddl.job j JOIN cases c ON j.target_name = 'public.' || c.name;

SELECT c.name, coalesce(nullif((j.kind_state->>'driving_oid')::oid, 0)::regclass::text, '(one batch)') AS split,
       differences(c.name::regclass, c.query) AS differences, j.strategy
  FROM cases c JOIN background_ddl.job j ON j.target_name = 'public.' || c.name
 ORDER BY j.id;

-- now(), CURRENT_TIMESTAMP and CURRENT_DATE are the job's start, the same in every batch.
CREATE MATERIALIZED VIEW f_now AS
  SELECT id, now() AS n, current_timestamp AS c, current_date AS d FROM events;
SELECT wait_ddl(last_ddl_job(), '60s');
SELECT j.strategy, count(DISTINCT (v.n, v.c, v.d)) AS distinct_times,
       min(v.n) = j.started_at AS is_start, min(v.d) = j.started_at::date AS is_start_date
  FROM f_now v, pg_stat_background_ddl j WHERE j.id = last_ddl_job() GROUP BY j.strategy, j.started_at;

-- The staging relations of partial aggregation are gone.
SELECT count(*) FROM pg_class WHERE relnamespace = 'background_ddl'::regnamespace
   AND relname LIKE 'partial%';

-- explain_ddl: the strategy of a statement, without submitting it.
SELECT explain_ddl('CREATE MATERIALIZED VIEW x AS SELECT account, sum(id) FROM events GROUP BY account');
SELECT explain_ddl('CREATE TABLE x AS SELECT id FROM events WHERE account = 1');
SELECT explain_ddl('SELECT id INTO x FROM events');
SELECT explain_ddl('SELECT account, count(DISTINCT id) FROM events GROUP BY account');
SELECT explain_ddl('REFRESH MATERIALIZED VIEW a_join');
SELECT explain_ddl('CREATE INDEX ON events (account)');
SELECT explain_ddl('CREATE MATERIALIZED VIEW x AS SELECT id FROM pt WHERE id < 300');
SELECT count(*) FROM background_ddl.job WHERE target_name = 'public.x';
-- errors: the normal ones of parse analysis, and statements it does not explain
SELECT explain_ddl('SELECT nothing FROM events');
SELECT explain_ddl('SELECT 1; SELECT 2');
SELECT explain_ddl('DROP TABLE events');
SELECT explain_ddl('REFRESH MATERIALIZED VIEW small');
SELECT explain_ddl('VACUUM FULL events');
SELECT explain_ddl('VACUUM FULL VERBOSE events');
SELECT explain_ddl('ALTER TABLE events SET TABLESPACE pg_default');
BEGIN;
SET LOCAL background_ddl = off;
CREATE TABLE retyped AS SELECT id, account, payload FROM events;
ALTER TABLE retyped ADD PRIMARY KEY (id);
CREATE INDEX retyped_account ON retyped (account);
CREATE INDEX retyped_account_id ON retyped (account, id);
CREATE INDEX retyped_id_desc ON retyped (id DESC);
COMMIT;
SELECT explain_ddl('ALTER TABLE retyped ALTER COLUMN id TYPE bigint, ALTER COLUMN payload TYPE varchar(50)');
SELECT explain_ddl('ALTER TABLE retyped ALTER COLUMN payload TYPE varchar');
SELECT explain_ddl('ALTER TABLE retyped ALTER COLUMN payload TYPE int');
SELECT explain_ddl('ALTER TABLE events ALTER COLUMN payload TYPE varchar(50)');
-- ADD COLUMN: a job for a volatile default or a stored generated column
SELECT explain_ddl('ALTER TABLE retyped ADD COLUMN token uuid NOT NULL DEFAULT gen_random_uuid(), ADD COLUMN twice bigint GENERATED ALWAYS AS (id * 2) STORED');
SELECT explain_ddl('ALTER TABLE retyped ADD COLUMN flag int DEFAULT 1');
SELECT explain_ddl('ALTER TABLE retyped ADD COLUMN serial_id bigserial');
-- CLUSTER: a job in the order of an index on NOT NULL columns, or on one
-- column, ascending or descending; blocking otherwise (a null in a key of two)
SELECT explain_ddl('CLUSTER retyped USING retyped_pkey');
SELECT explain_ddl('CLUSTER retyped USING retyped_account');
SELECT explain_ddl('CLUSTER retyped USING retyped_id_desc');
SELECT explain_ddl('CLUSTER retyped USING retyped_account_id');
SELECT explain_ddl('CLUSTER (VERBOSE) retyped USING retyped_pkey');
SELECT strategy, rows > 0 AS has_rows FROM estimate_ddl('CLUSTER retyped USING retyped_pkey');
SELECT strategy FROM estimate_ddl('CLUSTER retyped USING nosuch');

-- estimate_ddl: the job measured on a rolled-back sample of its chunks
SELECT strategy, rows BETWEEN n / 2 AND n * 2 AS rows_within_2x, bytes > 0 AS has_bytes,
       wal_bytes > 0 AS writes_wal, seconds > 0 AS timed,
       sampled_blocks BETWEEN 1 AND total_blocks AS sampled,
       locks LIKE 'SHARE ROW EXCLUSIVE on "events" to install%' AS says_its_locks
  FROM estimate_ddl('CREATE MATERIALIZED VIEW x AS SELECT id, upper(payload) AS p FROM events WHERE account < 10'),
       (SELECT count(*) AS n FROM events WHERE account < 10) c;
SELECT strategy, seconds > 0 AS timed, locks LIKE '%each of the 4 partitions read%' AS partitions
  FROM estimate_ddl('SELECT v % 5 AS k, count(*) AS n FROM pt GROUP BY 1');
SELECT strategy, seconds IS NULL AS not_timed, rows > 0 AS planner_rows
  FROM estimate_ddl('SELECT id INTO x FROM events ORDER BY id');
-- a REFRESH, as the view's owner runs it
BEGIN;
SET LOCAL background_ddl = off;
CREATE MATERIALIZED VIEW est_mv AS SELECT id, account FROM events WHERE account < 20;
COMMIT;
SELECT strategy, rows BETWEEN n / 2 AND n * 2 AS rows_within_2x, seconds > 0 AS timed
  FROM estimate_ddl('REFRESH MATERIALIZED VIEW est_mv'), (SELECT count(*) AS n FROM est_mv) c;
DROP MATERIALIZED VIEW est_mv;
-- a table's rewrite: its copy sampled as its owner runs it, its indexes' size added
SELECT strategy, rows BETWEEN n / 2 AND n * 2 AS rows_within_2x, seconds > 0 AS timed,
       bytes > pg_table_size('events') / 2 + pg_indexes_size('events') AS has_bytes,
       locks LIKE '%ACCESS EXCLUSIVE on it at the cut-over%' AS says_its_locks
  FROM estimate_ddl('VACUUM FULL events'), (SELECT count(*) AS n FROM events) c;
SELECT strategy, rows BETWEEN n / 2 AND n * 2 AS rows_within_2x, seconds > 0 AS timed,
       bytes > pg_table_size('retyped') AS wider_rows
  FROM estimate_ddl('ALTER TABLE retyped ALTER COLUMN account TYPE bigint,
                     ALTER COLUMN payload TYPE text USING repeat(payload, 2)'),
       (SELECT count(*) AS n FROM retyped) c;
-- a volatile default is not evaluated (a sequence would advance for good),
-- its column counted by its type's width
CREATE SEQUENCE retyped_tokens;
SELECT strategy, rows BETWEEN n / 2 AND n * 2 AS rows_within_2x,
       bytes > (SELECT bytes FROM estimate_ddl('VACUUM FULL retyped')) + n * 8 * 0.9 AS counts_the_column
  FROM estimate_ddl('ALTER TABLE retyped ADD COLUMN token bigint NOT NULL DEFAULT nextval(''retyped_tokens'')'),
       (SELECT count(*) AS n FROM retyped) c;
SELECT last_value, is_called FROM retyped_tokens;
DROP SEQUENCE retyped_tokens;
DROP TABLE retyped;
-- an index: built on a sample of the table
SELECT strategy, rows BETWEEN n / 2 AND n * 2 AS rows_within_2x, bytes > 0 AS has_bytes,
       wal_bytes = bytes AS wal_is_the_index, seconds > 0 AS timed,
       sampled_blocks BETWEEN 1 AND total_blocks AS sampled,
       locks LIKE 'SHARE UPDATE EXCLUSIVE on "events" for the whole build%' AS says_its_locks
  FROM estimate_ddl('CREATE UNIQUE INDEX ON events (id, account)'), (SELECT count(*) AS n FROM events) c;
-- our own chunked build: one read of the table, the entries' WAL too
SELECT strategy, wal_bytes = 2 * bytes AS wal_twice_the_index
  FROM estimate_ddl('CREATE INDEX ON events (account)');
SELECT rows BETWEEN n / 2 AND n * 2 AS partial_rows_within_2x
  FROM estimate_ddl('CREATE INDEX ON events (id) WHERE account < 10'),
       (SELECT count(*) AS n FROM events WHERE account < 10) c;
-- a partitioned table: each partition sampled (here all of it: it is small),
-- columns by name (pt_2_odd has its own order)
SELECT strategy, rows = n AS rows_exact, sampled_blocks = total_blocks AS sampled_all,
       locks LIKE '%and on each partition%' AS partitions
  FROM estimate_ddl('CREATE INDEX ON pt (v, note)'), (SELECT count(*) AS n FROM pt) c;
-- nothing of the sample stays, no job was submitted
SELECT count(*) AS left_behind FROM pg_class
 WHERE relname LIKE 'partial\_-%' OR relname LIKE 'background\_ddl\_estimate%';
SELECT count(*) AS jobs FROM background_ddl.job WHERE target_name = 'public.x';
SELECT * FROM estimate_ddl('DROP TABLE events');
SELECT * FROM estimate_ddl('CREATE INDEX ON small_nothing (id)');
SELECT * FROM estimate_ddl('SELECT nothing FROM events');
