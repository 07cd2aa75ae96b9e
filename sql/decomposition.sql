-- Which queries are computed in chunks of a driving table and which in one
-- batch, and that either way the content equals the query's result.
CREATE TABLE small AS SELECT g AS account, 'n' || g AS name FROM generate_series(0, 49) g;
SET background_ddl = on;
CREATE TABLE parent (id int, v int);
CREATE TABLE child () INHERITS (parent);
INSERT INTO child SELECT g, g FROM generate_series(1, 100) g;
CREATE VIEW plain_view AS SELECT id, account FROM events;

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
  ('d_limit', 'SELECT id FROM events ORDER BY id LIMIT 10'),
  ('d_order_by', 'SELECT id FROM events ORDER BY id'),
  ('d_window', 'SELECT id, row_number() OVER (ORDER BY id) AS r FROM events'),
  ('d_target_srf', 'SELECT id, generate_series(1, 2) AS k FROM events WHERE id <= 10'),
  ('d_time', 'SELECT id FROM events WHERE now() > ''2000-01-01'''),
  ('d_volatile', 'SELECT id FROM events WHERE random() < 2'),
  ('d_stable', 'SELECT id, to_char(id, ''99999'') AS t FROM events'),
  ('d_sublink', 'SELECT id FROM events WHERE account IN (SELECT account FROM small)'),
  ('d_union', 'SELECT id FROM events UNION ALL SELECT account FROM small'),
  ('d_cte', 'WITH w AS (SELECT id FROM events) SELECT id FROM w'),
  ('d_inheritance', 'SELECT id FROM parent'),
  ('d_view', 'SELECT id FROM plain_view'),
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

SELECT c.name, coalesce(j.driving_oid::regclass::text, '(one batch)') AS split,
       differences(c.name::regclass, c.query) AS differences
  FROM cases c JOIN background_ddl.job j ON j.target_name = 'public.' || c.name
 ORDER BY j.id;
