-- 0004 (PostgreSQL): a job's start time and user as columns of its row
-- (issue 16; docs/performance.md, "Ingest, round 7").
--
-- 0002 indexed them as expressions: brine_start_time(jid, seen) twice
-- (job_start, job_fun_start) and brine_load_field(load, 'user') twice (the
-- partial index's key and its predicate). Each is a PL/pgSQL call in a
-- subtransaction (its EXCEPTION block), the user one a parse of the whole
-- load as jsonb; and a job's row is written twice (its jid first, its load
-- later), so every job paid for six such calls. They were half of the
-- server's time for the load's UPDATE. Now the writer fills the columns:
-- start_time with one brine_start_time call when the row is created (same
-- rule, so old and new rows agree), load_user from the load brine-master has
-- parsed already (brine_load_field on the server only for a user that is not
-- a plain string). The views read the columns under their old names, so a
-- query on start_time or "user" meets the new indexes.
--
-- The existing rows are filled in one pass (a rewrite of the job table,
-- with the three expression indexes dropped first so they are not
-- maintained during it).
DO $$
DECLARE
  views text[];
  stmt text;
BEGIN
  -- The views' texts with the expressions replaced by the columns; their
  -- columns keep their names and types, so CREATE OR REPLACE keeps them.
  SELECT coalesce(array_agg(format('CREATE OR REPLACE VIEW %s AS %s', c.oid::regclass,
                                   replace(replace(pg_get_viewdef(c.oid), 'brine_start_time(j.jid, j.seen)', 'j.start_time'),
                                           'brine_load_field(j.load, ''user''::text)', 'j.load_user'))
                            ORDER BY c.oid), '{}')
    INTO views
    FROM pg_class AS c
   WHERE c.relkind = 'v' AND c.relnamespace = current_schema()::regnamespace;

  DROP INDEX job_start;
  DROP INDEX job_fun_start;
  DROP INDEX job_user;
  ALTER TABLE job ADD COLUMN start_time timestamptz,  -- brine_start_time(jid, seen)
                  ADD COLUMN load_user text;          -- brine_load_field(load, 'user')
  UPDATE job SET start_time = brine_start_time(jid, seen), load_user = brine_load_field(load, 'user');
  ALTER TABLE job ALTER COLUMN start_time SET NOT NULL;
  CREATE INDEX job_start ON job (start_time);
  CREATE INDEX job_fun_start ON job (fun, start_time) WHERE fun IS NOT NULL;
  CREATE INDEX job_user ON job (load_user, jid) WHERE load_user IS NOT NULL;

  FOREACH stmt IN ARRAY views LOOP
    EXECUTE stmt;
  END LOOP;
  -- Every view that named the expressions now reads the columns.
  IF EXISTS (SELECT 1 FROM pg_class AS c
              WHERE c.relkind = 'v' AND c.relnamespace = current_schema()::regnamespace
                AND (pg_get_viewdef(c.oid) LIKE '%brine_start_time%'
                     OR pg_get_viewdef(c.oid) LIKE '%brine_load_field(j.load, ''user''%')) THEN
    RAISE EXCEPTION '0004: a view still computes start_time or user';
  END IF;
END
$$;
