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
-- * The triggers are per statement, over the statement's rows (transition
--   tables): a batch's multi-row INSERT of returns adds to each (minion,
--   hour) once, in key order, instead of once per row. A day's partitions
--   that retention drops fire no trigger: retention deletes those hours'
--   rows itself (postgres_retention.cpp).
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

-- Expected minions added (TG_ARGV[0] = 1) or removed (-1): the statement's
-- rows in brine_rows.
CREATE FUNCTION brine_minion_hour_pairs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  sign bigint := TG_ARGV[0]::bigint;
BEGIN
  INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)
  SELECT p.minion_id, substr(j.jid, 1, 10),
         coalesce(nullif(current_setting('brine.writer', true), '')::bigint, 0),
         sign * count(*), sign * count(r.id), sign * coalesce(sum(brine_ret_failed(r.retcode, r.success)), 0)
  FROM brine_rows AS p
  JOIN job AS j ON j.id = p.job_id
  LEFT JOIN ret AS r ON r.job_id = p.job_id AND r.minion_id = p.minion_id
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (minion_id, hour, writer) DO UPDATE SET targeted = h.targeted + excluded.targeted,
    returned = h.returned + excluded.returned, failed = h.failed + excluded.failed;
  RETURN NULL;
END $$;

-- Returns added (1) or removed (-1), of expected pairs only.
CREATE FUNCTION brine_minion_hour_returns() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  sign bigint := TG_ARGV[0]::bigint;
BEGIN
  INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)
  SELECT r.minion_id, substr(j.jid, 1, 10),
         coalesce(nullif(current_setting('brine.writer', true), '')::bigint, 0),
         0, sign * count(*), sign * sum(brine_ret_failed(r.retcode, r.success))
  FROM brine_rows AS r
  JOIN job AS j ON j.id = r.job_id
  WHERE EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = r.job_id AND jm.minion_id = r.minion_id)
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (minion_id, hour, writer) DO UPDATE SET
    returned = h.returned + excluded.returned, failed = h.failed + excluded.failed;
  RETURN NULL;
END $$;

-- A trimmed return replaced by the whole one may change whether it failed.
CREATE FUNCTION brine_minion_hour_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)
  SELECT n.minion_id, substr(j.jid, 1, 10),
         coalesce(nullif(current_setting('brine.writer', true), '')::bigint, 0),
         0, 0, sum(brine_ret_failed(n.retcode, n.success) - brine_ret_failed(o.retcode, o.success))
  FROM brine_new AS n
  JOIN brine_old AS o ON o.id = n.id
  JOIN job AS j ON j.id = n.job_id
  WHERE brine_ret_failed(n.retcode, n.success) <> brine_ret_failed(o.retcode, o.success)
    AND EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = n.job_id AND jm.minion_id = n.minion_id)
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (minion_id, hour, writer) DO UPDATE SET failed = h.failed + excluded.failed;
  RETURN NULL;
END $$;

CREATE TRIGGER minion_hour_pairs_in AFTER INSERT ON job_minion REFERENCING NEW TABLE AS brine_rows
FOR EACH STATEMENT EXECUTE FUNCTION brine_minion_hour_pairs('1');
CREATE TRIGGER minion_hour_pairs_out AFTER DELETE ON job_minion REFERENCING OLD TABLE AS brine_rows
FOR EACH STATEMENT EXECUTE FUNCTION brine_minion_hour_pairs('-1');
CREATE TRIGGER minion_hour_returns_in AFTER INSERT ON ret REFERENCING NEW TABLE AS brine_rows
FOR EACH STATEMENT EXECUTE FUNCTION brine_minion_hour_returns('1');
CREATE TRIGGER minion_hour_returns_out AFTER DELETE ON ret REFERENCING OLD TABLE AS brine_rows
FOR EACH STATEMENT EXECUTE FUNCTION brine_minion_hour_returns('-1');
CREATE TRIGGER minion_hour_returns_changed AFTER UPDATE ON ret REFERENCING OLD TABLE AS brine_old NEW TABLE AS brine_new
FOR EACH STATEMENT EXECUTE FUNCTION brine_minion_hour_changed();

-- A minion's newest accepted salt/auth event (0016_minion_records says why).
CREATE INDEX event_auth_minion ON event ((brine_jsonb(data) ->> 'id'), received)
WHERE tag = 'salt/auth' AND job_id IS NULL;
