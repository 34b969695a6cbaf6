-- 0001_initial: the job cache, the event archive and the quarantine.
--
-- Layout rules (docs/schema.md explains each table, view and column):
--   * Every payload is stored once. A minion return's JSON lives only in
--     ret.full_ret; salt_returns.return/full_ret and the archived event's
--     salt_events.data are expressions over it.
--   * Minions, masters and jobs are referred to by small integers, so the
--     per-minion index stays small and cheap to keep up at ingest.
--   * Salt's SQL-returner names (jids, salt_returns, salt_events) are views
--     with Salt's columns, so operators' SQL works unchanged.
--   * Instants are integer microseconds since the Unix epoch (UTC); the views
--     show them as SQLite's own 'YYYY-MM-DD HH:MM:SS.SSS'.

-- Retention gives pages back with incremental_vacuum. This can only be set
-- on an empty file, outside a transaction and before WAL mode, so it stands
-- above the marker below, which the store runs before BEGIN IMMEDIATE.
PRAGMA auto_vacuum = INCREMENTAL;
-- @transaction

CREATE TABLE master (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE            -- Salt's opts["id"] of the archiving master
);

CREATE TABLE minion (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE            -- minion id as Salt sends it
);

CREATE TABLE job (
  id           INTEGER PRIMARY KEY,
  jid          TEXT NOT NULL UNIQUE,   -- the jid is the UTC start time: this index serves time windows
  fun          TEXT,                   -- load.fun, for the by-function index
  load         TEXT,                   -- JSON of the publish load; NULL: jid seen, no load yet
  load_kind    INTEGER NOT NULL DEFAULT 0,  -- 0 none, 1 stub built from a return, 2 publish
  stub_minions INTEGER NOT NULL DEFAULT 0,  -- 1 while the expected minions come from the stub
  metadata     TEXT,                   -- JSON of the job's metadata map
  nocache      INTEGER NOT NULL DEFAULT 0,  -- prep_jid(nocache=True): returns are not kept
  endtime      TEXT,                   -- job_cache_store_endtime text
  seen_us      INTEGER NOT NULL        -- when brine first heard of the jid
);
CREATE INDEX job_fun ON job (fun, jid) WHERE fun IS NOT NULL;

-- Expected minions of each job: the union of every minions list seen.
CREATE TABLE job_minion (
  job_id    INTEGER NOT NULL,
  minion_id INTEGER NOT NULL,
  PRIMARY KEY (job_id, minion_id)
) WITHOUT ROWID;

CREATE TABLE ret (
  id        INTEGER PRIMARY KEY,
  job_id    INTEGER NOT NULL,
  minion_id INTEGER NOT NULL,
  recv_us   INTEGER NOT NULL,          -- arrival time
  success   INTEGER,                   -- load.success as 0/1, NULL when absent
  retcode   INTEGER,                   -- load.retcode when an integer
  full_ret  TEXT NOT NULL              -- JSON of the whole return load, as received
);
-- One return per minion and job: also enforces first-return-wins.
CREATE UNIQUE INDEX ret_job_minion ON ret (job_id, minion_id);
-- Returns by minion.
CREATE INDEX ret_minion ON ret (minion_id, job_id);

CREATE TABLE event (
  id        INTEGER PRIMARY KEY,       -- arrival time, UTC microseconds, strictly increasing
  master_id INTEGER NOT NULL,
  job_id    INTEGER,                   -- set for job events (salt/job/<jid>/..., bare jid, new_job)
  tag       TEXT,                      -- NULL: 'salt/job/<jid>/ret/<minion>' of ret_id
  data      TEXT,                      -- JSON; NULL: the payload is ret_id's full_ret
  ret_id    INTEGER,                   -- the return whose full_ret is this event's data
  stamp     TEXT                       -- this event's own _stamp when it differs from full_ret's
);
-- Job events are reached through their job; other events by tag prefix.
CREATE INDEX event_job ON event (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX event_tag ON event (tag) WHERE job_id IS NULL;

-- Frames that could not be decoded, kept byte for byte with the reason.
CREATE TABLE quarantine (
  id     INTEGER PRIMARY KEY,          -- arrival time, UTC microseconds
  reason TEXT NOT NULL,
  raw    BLOB NOT NULL
);

-- brine-master's counters (received, stored, filtered, ...), written in the
-- same transaction as the batch they count, so they always agree with the data.
CREATE TABLE master_counter (
  master_id INTEGER NOT NULL,
  name      TEXT NOT NULL,
  value     INTEGER NOT NULL,
  PRIMARY KEY (master_id, name)
) WITHOUT ROWID;

-- Salt's SQL-returner names over the layout above ---------------------------

CREATE VIEW jids AS
SELECT j.jid AS jid,
       j.load AS load,
       j.fun AS fun,
       j.metadata AS metadata,
       j.endtime AS endtime,
       CASE j.load_kind WHEN 1 THEN 'return' ELSE 'publish' END AS load_source,
       strftime('%Y-%m-%d %H:%M:%f', j.seen_us / 1000000.0, 'unixepoch') AS alter_time
FROM job AS j
WHERE j.load IS NOT NULL;

CREATE VIEW jid_minions AS
SELECT j.jid AS jid, m.name AS minion
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id;

CREATE VIEW salt_returns AS
SELECT json_extract(r.full_ret, '$.fun') AS fun,
       j.jid AS jid,
       r.full_ret -> '$.return' AS "return",
       m.name AS id,
       r.success AS success,
       r.full_ret AS full_ret,
       strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch') AS alter_time,
       r.retcode AS retcode,
       json_extract(r.full_ret, '$.out') AS out
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

CREATE VIEW salt_events AS
SELECT e.id AS id,
       coalesce(e.tag, 'salt/job/' || rj.jid || '/ret/' || rm.name) AS tag,
       CASE
         WHEN e.ret_id IS NULL THEN e.data
         WHEN e.stamp IS NULL THEN r.full_ret
         ELSE json_set(r.full_ret, '$._stamp', e.stamp)
       END AS data,
       strftime('%Y-%m-%d %H:%M:%f', e.id / 1000000.0, 'unixepoch') AS alter_time,
       ms.name AS master_id
FROM event AS e
JOIN master AS ms ON ms.id = e.master_id
LEFT JOIN ret AS r ON r.id = e.ret_id
LEFT JOIN job AS rj ON rj.id = r.job_id
LEFT JOIN minion AS rm ON rm.id = r.minion_id;

-- Which expected minions have not returned (jid, minion).
CREATE VIEW jid_missing AS
SELECT j.jid AS jid, m.name AS minion
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id
WHERE NOT EXISTS (SELECT 1 FROM ret AS r WHERE r.job_id = jm.job_id AND r.minion_id = jm.minion_id);

CREATE VIEW brine_counters AS
SELECT ms.name AS master_id, c.name AS name, c.value AS value
FROM master_counter AS c
JOIN master AS ms ON ms.id = c.master_id;
