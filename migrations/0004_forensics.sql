-- 0004_forensics: views whose natural predicates use an index, query-friendly
-- columns, and views for the questions operators ask (docs/schema.md,
-- "Forensics"; issue 15).
--
-- Before this, the views defeated the store's own indexes: salt_returns.fun
-- parsed every full_ret, salt_events.tag was a coalesce() over a join, and
-- every time was computed text, so each of these filters read every row.
--
--   * The new columns are VIRTUAL generated columns: SQLite computes them from
--     the row, on ingest for the indexes and on read for the views. So an
--     existing store migrates without rewriting a row (a big store's ret table
--     is gigabytes); only the new indexes are built, and their cost is
--     measured in docs/performance.md.
--   * One time format everywhere: SQLite's own UTC text 'YYYY-MM-DD HH:MM:SS.SSS',
--     which compares as typed with datetime('now', '-1 hour').
--   * salt_returns.fun is the job's fun (job_fun index), not a parse of full_ret.
--   * salt_events is a UNION ALL of the events whose tag is stored (event_tag
--     index, now over every stored tag) and the return events whose tag is
--     rebuilt from the jid and the minion, so a predicate reaches each branch.
--   * Salt's column names stay; the new ones are added after them.

ALTER TABLE job ADD COLUMN start_time TEXT GENERATED ALWAYS AS (
  -- The jid is the UTC start time YYYYMMDDhhmmssffffff (maybe _<pid>); a jid
  -- that is not one starts when brine first heard of it.
  CASE WHEN jid GLOB '[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]*'
    THEN substr(jid, 1, 4) || '-' || substr(jid, 5, 2) || '-' || substr(jid, 7, 2) || ' ' || substr(jid, 9, 2) || ':' ||
         substr(jid, 11, 2) || ':' || substr(jid, 13, 2) || '.' || substr(jid, 15, 3)
    ELSE strftime('%Y-%m-%d %H:%M:%f', seen_us / 1000000.0, 'unixepoch')
  END) VIRTUAL;
-- The publish load's user, tgt (a string, or a JSON list) and tgt_type; NULL
-- when the load has none (a stub built from a return has tgt and tgt_type).
ALTER TABLE job ADD COLUMN user TEXT GENERATED ALWAYS AS (json_extract(load, '$.user')) VIRTUAL;
ALTER TABLE job ADD COLUMN tgt TEXT GENERATED ALWAYS AS (json_extract(load, '$.tgt')) VIRTUAL;
ALTER TABLE job ADD COLUMN tgt_type TEXT GENERATED ALWAYS AS (json_extract(load, '$.tgt_type')) VIRTUAL;
ALTER TABLE ret ADD COLUMN recv_time TEXT GENERATED ALWAYS AS (
  strftime('%Y-%m-%d %H:%M:%f', recv_us / 1000000.0, 'unixepoch')) VIRTUAL;

-- Time windows over jobs (start_time), of one function, and over returns (recv_time).
CREATE INDEX job_start ON job (start_time);
CREATE INDEX job_fun_start ON job (fun, start_time) WHERE fun IS NOT NULL;
CREATE INDEX ret_recv ON ret (recv_time);
-- The jobs a user ran, newest by jid.
CREATE INDEX job_user ON job (user, jid) WHERE user IS NOT NULL;
-- Failed returns only (a few per cent of all): `retcode <> 0`, `success = 0`
-- or `retcode <> 0 OR success = 0` written this way reach it. It covers what
-- a list of failures needs from ret, so even a walk of all of them reads no
-- return payload.
CREATE INDEX ret_failed ON ret (recv_time, job_id, minion_id, retcode, success) WHERE retcode <> 0 OR success = 0;
-- Every stored tag, job events' too ('salt/job/<jid>/new', bare jids), not
-- only non-job events' as before.
DROP INDEX event_tag;
CREATE INDEX event_tag ON event (tag) WHERE tag IS NOT NULL;

DROP VIEW jids;
CREATE VIEW jids AS
SELECT j.jid AS jid,
       j.load AS load,
       j.fun AS fun,
       j.metadata AS metadata,
       j.endtime AS endtime,
       CASE j.load_kind WHEN 1 THEN 'return' ELSE 'publish' END AS load_source,
       strftime('%Y-%m-%d %H:%M:%f', j.seen_us / 1000000.0, 'unixepoch') AS alter_time,
       j.start_time AS start_time,
       j.user AS user,
       j.tgt AS tgt,
       j.tgt_type AS tgt_type
FROM job AS j
WHERE j.load IS NOT NULL;

DROP VIEW salt_returns;
CREATE VIEW salt_returns AS
SELECT j.fun AS fun,
       j.jid AS jid,
       r.full_ret -> '$.return' AS "return",
       m.name AS id,
       r.success AS success,
       r.full_ret AS full_ret,
       r.recv_time AS alter_time,
       r.retcode AS retcode,
       json_extract(r.full_ret, '$.out') AS out,
       r.recv_time AS recv_time,
       j.start_time AS start_time,
       round((julianday(r.recv_time) - julianday(j.start_time)) * 86400.0, 3) AS seconds_after_start
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

DROP VIEW salt_events;
CREATE VIEW salt_events AS
SELECT e.id AS id,
       e.tag AS tag,
       CASE
         WHEN e.ret_id IS NULL THEN e.data
         ELSE (SELECT CASE WHEN e.stamp IS NULL THEN r.full_ret ELSE json_set(r.full_ret, '$._stamp', e.stamp) END
               FROM ret AS r WHERE r.id = e.ret_id)
       END AS data,
       strftime('%Y-%m-%d %H:%M:%f', e.id / 1000000.0, 'unixepoch') AS alter_time,
       ms.name AS master_id
FROM event AS e
JOIN master AS ms ON ms.id = e.master_id
WHERE e.tag IS NOT NULL
UNION ALL
SELECT e.id AS id,
       'salt/job/' || j.jid || '/ret/' || m.name AS tag,
       CASE WHEN e.stamp IS NULL THEN r.full_ret ELSE json_set(r.full_ret, '$._stamp', e.stamp) END AS data,
       strftime('%Y-%m-%d %H:%M:%f', e.id / 1000000.0, 'unixepoch') AS alter_time,
       ms.name AS master_id
FROM event AS e
JOIN master AS ms ON ms.id = e.master_id
JOIN ret AS r ON r.id = e.ret_id
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE e.tag IS NULL;

-- Forensic views ---------------------------------------------------------------

-- Failed returns (retcode <> 0 or success false), through the ret_failed index.
CREATE VIEW failed_returns AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       r.retcode AS retcode,
       r.success AS success,
       r.recv_time AS recv_time,
       j.start_time AS start_time,
       j.user AS user,
       r.full_ret -> '$.return' AS "return"
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE r.retcode <> 0 OR r.success = 0;

-- One row per failed state of a failed state run (state.apply, state.highstate,
-- state.sls, ...): the highstate dict's entries whose result is false. Only
-- failed returns are parsed (Salt sets retcode 2 when a state fails).
CREATE VIEW failed_states AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       json_extract(s.value, '$.__id__') AS state_id,
       s.key AS state,
       json_extract(s.value, '$.name') AS name,
       json_extract(s.value, '$.comment') AS comment,
       r.recv_time AS recv_time,
       j.start_time AS start_time
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
JOIN json_each(r.full_ret, '$.return') AS s
WHERE (r.retcode <> 0 OR r.success = 0)
  AND j.fun GLOB 'state.*'
  AND json_type(r.full_ret, '$.return') = 'object'
  AND json_type(s.value, '$.result') = 'false';

-- One row per expected minion of each job: did it return, did it fail. Group
-- it by minion over a start_time window for each minion's reliability.
CREATE VIEW minion_job_outcome AS
SELECT j.jid AS jid,
       j.fun AS fun,
       j.start_time AS start_time,
       m.name AS minion,
       r.id IS NOT NULL AS returned,
       coalesce(r.retcode <> 0 OR r.success = 0, 0) AS failed
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id
LEFT JOIN ret AS r ON r.job_id = jm.job_id AND r.minion_id = jm.minion_id;

-- Each minion's record over every job kept: targeted, returned, missing, failed.
CREATE VIEW minion_reliability AS
SELECT minion,
       count(*) AS targeted,
       sum(returned) AS returned,
       count(*) - sum(returned) AS missing,
       sum(failed) AS failed
FROM minion_job_outcome
GROUP BY minion;

-- Each return's time after its job's start, for the slowest minions of a job.
CREATE VIEW return_times AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       j.start_time AS start_time,
       r.recv_time AS recv_time,
       round((julianday(r.recv_time) - julianday(j.start_time)) * 86400.0, 3) AS seconds_after_start
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

-- The jobs each user ran, with how many minions were expected, returned and failed.
CREATE VIEW user_jobs AS
SELECT j.user AS user,
       j.jid AS jid,
       j.start_time AS start_time,
       j.fun AS fun,
       j.tgt AS tgt,
       j.tgt_type AS tgt_type,
       (SELECT count(*) FROM job_minion AS jm WHERE jm.job_id = j.id) AS expected,
       (SELECT count(*) FROM ret AS r WHERE r.job_id = j.id) AS returned,
       (SELECT count(*) FROM ret AS r WHERE r.job_id = j.id AND (r.retcode <> 0 OR r.success = 0)) AS failed
FROM job AS j
WHERE j.user IS NOT NULL;
