-- 0002 (PostgreSQL): what the batched writes need; the forensic columns and
-- views of SQLite's 0004_forensics and 0005; the Salt plug-in's views of
-- SQLite's 0003_salt_api (docs/schema.md).

-- A batch's returns are sent at commit as one multi-row INSERT ... ON
-- CONFLICT DO NOTHING, each with the id the store already handed to the
-- batch's events (drawn from ret's identity sequence). When another master
-- stored one of them first, the batch's view of first-wins was wrong: this
-- fails the statement, so the COMMIT sent behind it in the same pipeline
-- commits nothing, and the master replays the batch, which then sees the
-- other master's return. 40001 is serialization_failure: a BusyError.
CREATE FUNCTION brine_check_stored(stored bigint, expected bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
  IF stored <> expected THEN
    RAISE EXCEPTION 'another master stored % of this batch''s % returns first; the batch must be replayed',
      expected - stored, expected USING ERRCODE = 'serialization_failure';
  END IF;
  RETURN stored;
END
$$;

-- Forensics (SQLite's 0004_forensics and 0005_no_recv_index; docs/schema.md,
-- "Forensics") -----------------------------------------------------------------
--
-- The same columns and views, with PostgreSQL's types: times are timestamptz
-- (compare with now() - interval '1 hour'), success a boolean, the 0/1 flags
-- of minion_job_outcome integers (so sum() counts them as on SQLite).
--
-- The new columns are view columns over IMMUTABLE functions of the row, with
-- expression indexes where SQLite has indexes on its VIRTUAL columns:
-- PostgreSQL 15 has only STORED generated columns, which would rewrite the
-- job and ret tables on migration and add their bytes to every row. A
-- predicate on a view column reaches the index because the view's expression
-- is the index's.

-- A job's start: the jid read as the UTC time YYYYMMDDhhmmssffffff (maybe
-- _<pid>); a jid that is not one (and a date that is not one) starts when
-- brine first heard of it. Immutable: it reads only its arguments, in UTC.
CREATE FUNCTION brine_start_time(jid text, seen timestamptz) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $$
BEGIN
  IF jid !~ '^[0-9]{20}(_|$)' THEN
    RETURN seen;
  END IF;
  RETURN make_timestamp(substr(jid, 1, 4)::int, substr(jid, 5, 2)::int, substr(jid, 7, 2)::int,
                        substr(jid, 9, 2)::int, substr(jid, 11, 2)::int,
                        substr(jid, 13, 2)::int + substr(jid, 15, 6)::int / 1000000.0) AT TIME ZONE 'UTC';
EXCEPTION WHEN others THEN
  RETURN seen;
END
$$;

-- The publish load's user, tgt (a string, or a JSON list as text) and tgt_type.
CREATE FUNCTION brine_load_field(load text, field text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT brine_jsonb(load) ->> field $$;

-- Time windows over jobs, of one function; the jobs a user ran; failed
-- returns only (retcode <> 0 OR NOT success, a few per cent of all). As on
-- SQLite after 0005, the arrival time of every return is not indexed.
CREATE INDEX job_start ON job (brine_start_time(jid, seen));
CREATE INDEX job_fun_start ON job (fun, brine_start_time(jid, seen)) WHERE fun IS NOT NULL;
CREATE INDEX job_user ON job (brine_load_field(load, 'user'), jid) WHERE brine_load_field(load, 'user') IS NOT NULL;
CREATE INDEX ret_failed ON ret (recv, job_id, minion_id, retcode, success) WHERE retcode <> 0 OR NOT success;

-- Salt's views keep their columns; the new ones come after them.
CREATE OR REPLACE VIEW jids AS
SELECT j.jid::varchar(255) AS jid,
       brine_jsonb(j.load) AS load,
       j.fun AS fun,
       brine_jsonb(j.metadata) AS metadata,
       j.endtime AS endtime,
       CASE j.load_kind WHEN 1 THEN 'return' ELSE 'publish' END AS load_source,
       j.seen AS alter_time,
       brine_start_time(j.jid, j.seen) AS start_time,
       brine_load_field(j.load, 'user') AS "user",
       brine_load_field(j.load, 'tgt') AS tgt,
       brine_load_field(j.load, 'tgt_type') AS tgt_type
FROM job AS j
WHERE j.load IS NOT NULL;

CREATE OR REPLACE VIEW salt_returns AS
SELECT (brine_jsonb(r.full_ret) ->> 'fun')::varchar(50) AS fun,
       j.jid::varchar(255) AS jid,
       brine_jsonb(r.full_ret) -> 'return' AS "return",
       m.name::varchar(255) AS id,
       (CASE WHEN r.success THEN 'True' WHEN NOT r.success THEN 'False' ELSE '' END)::varchar(10) AS success,
       brine_jsonb(r.full_ret) AS full_ret,
       r.recv AS alter_time,
       r.retcode AS retcode,
       brine_jsonb(r.full_ret) ->> 'out' AS out,
       r.recv AS recv_time,
       brine_start_time(j.jid, j.seen) AS start_time,
       round(extract(epoch FROM r.recv - brine_start_time(j.jid, j.seen)), 3) AS seconds_after_start
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

-- Forensic views ---------------------------------------------------------------

CREATE VIEW failed_returns AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       r.retcode AS retcode,
       r.success AS success,
       r.recv AS recv_time,
       brine_start_time(j.jid, j.seen) AS start_time,
       brine_load_field(j.load, 'user') AS "user",
       brine_jsonb(r.full_ret) -> 'return' AS "return"
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE r.retcode <> 0 OR NOT r.success;

-- jsonb_each fails on a non-object, and a WHERE does not guard a set
-- function: a return that is no dict expands to nothing.
CREATE VIEW failed_states AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       s.value ->> '__id__' AS state_id,
       s.key AS state,
       s.value ->> 'name' AS name,
       s.value ->> 'comment' AS comment,
       r.recv AS recv_time,
       brine_start_time(j.jid, j.seen) AS start_time
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(brine_jsonb(r.full_ret) -> 'return') = 'object'
                                   THEN brine_jsonb(r.full_ret) -> 'return' ELSE '{}'::jsonb END) AS s
WHERE (r.retcode <> 0 OR NOT r.success)
  AND j.fun LIKE 'state.%'
  AND jsonb_typeof(s.value) = 'object'
  AND jsonb_typeof(s.value -> 'result') = 'boolean'
  AND NOT (s.value -> 'result')::boolean;

CREATE VIEW minion_job_outcome AS
SELECT j.jid AS jid,
       j.fun AS fun,
       brine_start_time(j.jid, j.seen) AS start_time,
       m.name AS minion,
       (r.id IS NOT NULL)::int AS returned,
       coalesce((r.retcode <> 0 OR NOT r.success)::int, 0) AS failed
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id
LEFT JOIN ret AS r ON r.job_id = jm.job_id AND r.minion_id = jm.minion_id;

CREATE VIEW minion_reliability AS
SELECT minion,
       count(*) AS targeted,
       sum(returned) AS returned,
       count(*) - sum(returned) AS missing,
       sum(failed) AS failed
FROM minion_job_outcome
GROUP BY minion;

CREATE VIEW return_times AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       brine_start_time(j.jid, j.seen) AS start_time,
       r.recv AS recv_time,
       round(extract(epoch FROM r.recv - brine_start_time(j.jid, j.seen)), 3) AS seconds_after_start
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

CREATE VIEW user_jobs AS
SELECT brine_load_field(j.load, 'user') AS "user",
       j.jid AS jid,
       brine_start_time(j.jid, j.seen) AS start_time,
       j.fun AS fun,
       brine_load_field(j.load, 'tgt') AS tgt,
       brine_load_field(j.load, 'tgt_type') AS tgt_type,
       (SELECT count(*) FROM job_minion AS jm WHERE jm.job_id = j.id) AS expected,
       (SELECT count(*) FROM ret AS r WHERE r.job_id = j.id) AS returned,
       (SELECT count(*) FROM ret AS r WHERE r.job_id = j.id AND (r.retcode <> 0 OR NOT r.success)) AS failed
FROM job AS j
WHERE brine_load_field(j.load, 'user') IS NOT NULL;

-- The Salt returner plug-in's views (SQLite's 0003_salt_api; contrib/salt/
-- returners/brine.py reads them with psycopg2 when brine.database is a
-- PostgreSQL URI). The same names, columns and JSON shapes, so the plug-in's
-- queries are the same on both: `instance`, `instance_ext` and `result` are
-- JSON text built as `json` (which keeps the stored values' text and the
-- keys in the order given; jsonb would sort them). Salt's defaults apply
-- when a key is absent, not when it is null, as on SQLite.
CREATE VIEW brine_api_v1_job AS
SELECT x.jid AS jid,
       x.fun AS fun,
       x.load AS load,
       x.endtime AS endtime,
       (CASE WHEN x.metadata IS NULL
          THEN json_build_object('Function', x.function, 'Arguments', x.arguments, 'Target', x.target,
                                 'Target-type', x.target_type, 'User', x.usr, 'StartTime', x.start_time)
          ELSE json_build_object('Function', x.function, 'Arguments', x.arguments, 'Target', x.target,
                                 'Target-type', x.target_type, 'User', x.usr, 'Metadata', x.metadata,
                                 'StartTime', x.start_time)
        END)::text AS instance,
       (CASE WHEN x.metadata IS NULL
          THEN json_build_object('Function', x.function, 'Arguments', x.arguments, 'Target', x.target,
                                 'Target-type', x.target_type, 'User', x.usr, 'JID', x.jid,
                                 'StartTime', x.start_time)
          ELSE json_build_object('Function', x.function, 'Arguments', x.arguments, 'Target', x.target,
                                 'Target-type', x.target_type, 'User', x.usr, 'Metadata', x.metadata,
                                 'JID', x.jid, 'StartTime', x.start_time)
        END)::text AS instance_ext
FROM (
  SELECT j.jid AS jid,
         j.fun AS fun,
         j.load AS load,
         j.endtime AS endtime,
         coalesce(j.load::json -> 'fun', '"unknown-function"'::json) AS function,
         coalesce(j.load::json -> 'arg', '[]'::json) AS arguments,
         coalesce(j.load::json -> 'tgt', '"unknown-target"'::json) AS target,
         coalesce(j.load::json -> 'tgt_type', '"list"'::json) AS target_type,
         coalesce(j.load::json -> 'user', '"root"'::json) AS usr,
         coalesce(j.load::json -> 'metadata', j.load::json -> 'kwargs' -> 'metadata') AS metadata,
         -- jid_to_time: "YYYY, Mon DD hh:mm:ss.ffffff" for a 20-digit jid or
         -- <20 digits>_<pid>, else ''; a month outside 01-12 gives an empty name.
         CASE
           WHEN (length(j.jid) = 20 OR (length(j.jid) > 21 AND substr(j.jid, 21, 1) = '_'))
                AND substr(j.jid, 5, 2) ~ '^[0-9]{2}$' THEN
             substr(j.jid, 1, 4) || ', ' ||
             trim(substr('   JanFebMarAprMayJunJulAugSepOctNovDec', substr(j.jid, 5, 2)::int * 3 + 1, 3)) ||
             ' ' || substr(j.jid, 7, 2) || ' ' || substr(j.jid, 9, 2) || ':' || substr(j.jid, 11, 2) || ':' ||
             substr(j.jid, 13, 2) || '.' || substr(j.jid, 15, 6)
           ELSE ''
         END AS start_time
  FROM job AS j
  WHERE j.load IS NOT NULL
) AS x;

CREATE VIEW brine_api_v1_job_minion AS
SELECT j.jid AS jid, m.name AS minion
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id;

-- `result`: return (null when absent), then retcode, success and out where
-- the return load has them, in that order.
CREATE VIEW brine_api_v1_return AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       (SELECT json_object_agg(k.key, r.full_ret::json -> k.key ORDER BY k.ord)
        FROM (VALUES (1, 'return'), (2, 'retcode'), (3, 'success'), (4, 'out')) AS k (ord, key)
        WHERE k.key = 'return' OR r.full_ret::json -> k.key IS NOT NULL)::text AS result,
       r.full_ret AS full_ret
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

-- get_fun: per function and minion, the full return of the newest job.
CREATE VIEW brine_api_v1_fun_latest AS
SELECT DISTINCT ON (j.fun, m.name) j.fun AS fun, m.name AS minion, r.full_ret AS full_ret, j.jid AS jid
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE j.fun IS NOT NULL
ORDER BY j.fun, m.name, j.jid DESC;

CREATE VIEW brine_api_v1_returned_minion AS
SELECT m.name AS minion
FROM minion AS m
WHERE EXISTS (SELECT 1 FROM ret AS r WHERE r.minion_id = m.id);

CREATE VIEW brine_api_v1_endtime AS
SELECT j.jid AS jid, j.endtime AS endtime
FROM job AS j
WHERE j.endtime IS NOT NULL;
