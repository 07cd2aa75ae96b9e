--
-- Last: with background_ddl on, the scripts above made jobs of every kind
-- they use, and with it off, none.  Without this, a run whose statements
-- all ran blocking with the setting on would pass the suite.
--
SELECT k.kind,
       (count(j.id) FILTER (WHERE j.state = 'succeeded') > 0)
         = (current_setting('background_ddl') = 'on') AS jobs_as_the_setting_says
  FROM (VALUES ('ALTER TABLE'), ('CLUSTER'), ('CREATE INDEX'), ('CREATE MATERIALIZED VIEW'),
               ('CREATE TABLE AS'), ('REFRESH MATERIALIZED VIEW'), ('REINDEX'),
               ('VACUUM FULL')) AS k(kind)
  LEFT JOIN background_ddl.job AS j USING (kind)
 GROUP BY k.kind
 ORDER BY k.kind;
