-- 0011_minion_records (issue 28): each minion's record per hour, kept by the
-- store itself, and its salt/auth events by minion; the SQLite migration
-- 0016_minion_records says why and what the sums count. Two differences:
--
-- * Several brine-masters write one PostgreSQL store, and a row that two of
--   them added to in their open transactions would make one wait for the
--   other's commit (or deadlock, and replay). So each writer adds to its own
--   row, keyed by `writer`: the session setting brine.writer, which a
--   brine-master sets to its master row's id (0 for any other session).
--   Readers sum the writers' rows; one writer's row may go negative when it
--   deletes what another added, and only the sum means anything.
-- * brine's own inserts count themselves: the batch's multi-row INSERTs of
--   returns and of expected minions add to each (minion, hour) in the same
--   statement, once, in key order (store/src/postgres_pipeline.cpp; triggers
--   on those inserts halved pg_bench's ingest). Triggers count the rest:
--   deletes (a stub's minions, retention's jobs) and a return replaced. A
--   day's partitions that retention drops fire no trigger: retention deletes
--   those hours' rows itself (postgres_retention.cpp).
CREATE TABLE minion_hour (
  minion_id bigint NOT NULL,
  hour      text NOT NULL,                     -- substr(job.jid, 1, 10)
  writer    bigint NOT NULL,
  targeted  bigint NOT NULL DEFAULT 0,
  returned  bigint NOT NULL DEFAULT 0,
  failed    bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (minion_id, hour, writer)
);

INSERT INTO minion_hour (minion_id, hour, writer, targeted, returned, failed)
SELECT jm.minion_id, substr(j.jid, 1, 10), 0, count(*), count(r.id),
       count(*) FILTER (WHERE r.retcode <> 0 OR NOT r.success)
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
LEFT JOIN ret AS r ON r.job_id = jm.job_id AND r.minion_id = jm.minion_id
GROUP BY jm.minion_id, substr(j.jid, 1, 10);

CREATE FUNCTION brine_ret_failed(retcode bigint, success boolean) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(retcode <> 0 OR NOT success, false)::int::bigint $$;

-- The triggers read each row's job, pair or return by key, with the row's
-- job_day, so that each search reaches one partition of ret or job_minion
-- (their unique keys are per partition: without the day a search visits
-- every day's): a correlated search per row, never a join the planner could
-- turn into a scan of job or of every partition, written in the query (a SQL
-- function holding a sub-select is not inlined, and ran per row as a query
-- of its own). A job_day that is NULL (a
-- job first seen before 0003) lives in the default partitions.

-- Expected minions removed (TG_ARGV[0] = -1): the statement's rows in
-- brine_rows. The pairs brine inserts are counted by the statement that
-- inserts them (store/src/postgres_pipeline.cpp says why); a pair another
-- tool inserts is not counted.
CREATE FUNCTION brine_minion_hour_pairs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  sign bigint := TG_ARGV[0]::bigint;
BEGIN
  INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)
  SELECT p.minion_id, p.hour, coalesce(nullif(current_setting('brine.writer', true), '')::bigint, 0),
         sign * count(*), sign * count(p.failed), sign * coalesce(sum(p.failed), 0)
  FROM (SELECT b.minion_id, (SELECT substr(j.jid, 1, 10) FROM job AS j WHERE j.id = b.job_id) AS hour,
               CASE WHEN b.job_day IS NULL
                 THEN (SELECT brine_ret_failed(r.retcode, r.success) FROM ret AS r
                       WHERE r.job_id = b.job_id AND r.minion_id = b.minion_id AND r.job_day IS NULL)
                 ELSE (SELECT brine_ret_failed(r.retcode, r.success) FROM ret AS r
                       WHERE r.job_id = b.job_id AND r.minion_id = b.minion_id AND r.job_day = b.job_day)
               END AS failed
        FROM brine_rows AS b) AS p
  WHERE p.hour IS NOT NULL
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (minion_id, hour, writer) DO UPDATE SET targeted = h.targeted + excluded.targeted,
    returned = h.returned + excluded.returned, failed = h.failed + excluded.failed;
  RETURN NULL;
END $$;

-- A return removed (retention deletes a job's), of an expected pair only:
-- per row, as a statement trigger's transition table would copy every
-- return's full_ret. The returns brine inserts are counted by the statement
-- that inserts them (store/src/postgres_pipeline.cpp); one another tool
-- inserts is not counted.
CREATE FUNCTION brine_minion_hour_return() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  expected boolean;
BEGIN
  IF OLD.job_day IS NULL THEN
    expected := EXISTS (SELECT 1 FROM job_minion AS jm
                        WHERE jm.job_id = OLD.job_id AND jm.minion_id = OLD.minion_id AND jm.job_day IS NULL);
  ELSE
    expected := EXISTS (SELECT 1 FROM job_minion AS jm
                        WHERE jm.job_id = OLD.job_id AND jm.minion_id = OLD.minion_id AND jm.job_day = OLD.job_day);
  END IF;
  IF expected THEN
    INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)
    SELECT OLD.minion_id, substr(j.jid, 1, 10), coalesce(nullif(current_setting('brine.writer', true), '')::bigint, 0),
           0, -1, -brine_ret_failed(OLD.retcode, OLD.success)
    FROM job AS j WHERE j.id = OLD.job_id
    ON CONFLICT (minion_id, hour, writer) DO UPDATE SET
      returned = h.returned + excluded.returned, failed = h.failed + excluded.failed;
  END IF;
  RETURN NULL;
END $$;

-- A trimmed return replaced by the whole one may change whether it failed.
CREATE FUNCTION brine_minion_hour_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)
  SELECT c.minion_id, c.hour, coalesce(nullif(current_setting('brine.writer', true), '')::bigint, 0),
         0, 0, sum(c.delta)
  FROM (SELECT n.minion_id, (SELECT substr(j.jid, 1, 10) FROM job AS j WHERE j.id = n.job_id) AS hour,
               brine_ret_failed(n.retcode, n.success) - brine_ret_failed(o.retcode, o.success) AS delta
        FROM brine_new AS n JOIN brine_old AS o ON o.id = n.id
        WHERE brine_ret_failed(n.retcode, n.success) <> brine_ret_failed(o.retcode, o.success)
          AND CASE WHEN n.job_day IS NULL
               THEN EXISTS (SELECT 1 FROM job_minion AS jm
                            WHERE jm.job_id = n.job_id AND jm.minion_id = n.minion_id AND jm.job_day IS NULL)
               ELSE EXISTS (SELECT 1 FROM job_minion AS jm
                            WHERE jm.job_id = n.job_id AND jm.minion_id = n.minion_id AND jm.job_day = n.job_day) END) AS c
  WHERE c.hour IS NOT NULL
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (minion_id, hour, writer) DO UPDATE SET failed = h.failed + excluded.failed;
  RETURN NULL;
END $$;

CREATE TRIGGER minion_hour_pairs_out AFTER DELETE ON job_minion REFERENCING OLD TABLE AS brine_rows
FOR EACH STATEMENT EXECUTE FUNCTION brine_minion_hour_pairs('-1');
CREATE TRIGGER minion_hour_return AFTER DELETE ON ret
FOR EACH ROW EXECUTE FUNCTION brine_minion_hour_return();
CREATE TRIGGER minion_hour_returns_changed AFTER UPDATE ON ret REFERENCING OLD TABLE AS brine_old NEW TABLE AS brine_new
FOR EACH STATEMENT EXECUTE FUNCTION brine_minion_hour_changed();

-- A minion's newest accepted salt/auth event (0016_minion_records says why).
CREATE INDEX event_auth_minion ON event ((brine_jsonb(data) ->> 'id'), received)
WHERE tag = 'salt/auth' AND job_id IS NULL;
