-- 0001_initial (PostgreSQL): the job cache, the event archive, the
-- quarantine, the counters and the queues, with Salt's pgjsonb names on top.
--
-- The same layout as the SQLite series (migrations/*.sql, docs/schema.md),
-- with PostgreSQL's types:
--   * Payloads (loads, returns, event data, metadata) are kept as the exact
--     JSON text brine received, in `text` columns: jsonb would reorder keys
--     and drop duplicates, and brine-run prints keys in the order Salt sent
--     them. The pgjsonb views below cast them to jsonb for Salt's tools.
--   * Instants are timestamptz. Ids are bigint identities, so several
--     brine-masters can write one database.
--   * The event archive is partitioned by day (below), so retention drops
--     whole days instead of deleting row by row.
--   * Names and jids sort by byte value (COLLATE "C"), as SQLite's BINARY.
-- The store applies each migration in one transaction under
-- pg_advisory_xact_lock, so masters starting together migrate once.

CREATE TABLE master (
  id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text COLLATE "C" NOT NULL UNIQUE     -- Salt's opts["id"] of the archiving master
);

CREATE TABLE minion (
  id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text COLLATE "C" NOT NULL UNIQUE     -- minion id as Salt sends it
);

CREATE TABLE job (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  jid          text COLLATE "C" NOT NULL UNIQUE,  -- the UTC start time: this index serves time windows
  fun          text COLLATE "C",                  -- load.fun, for the by-function index
  load         text,                              -- JSON of the publish load; NULL: jid seen, no load yet
  load_kind    smallint NOT NULL DEFAULT 0,       -- 0 none, 1 stub, 2 publish (event), 3 publish (save_load)
  stub_minions boolean NOT NULL DEFAULT false,    -- the expected minions come from the stub
  metadata     text,                              -- JSON of the job's metadata map
  nocache      boolean NOT NULL DEFAULT false,    -- prep_jid(nocache=True): returns are not kept
  endtime      text,                              -- job_cache_store_endtime text
  seen         timestamptz NOT NULL               -- when brine first heard of the jid
);
CREATE INDEX job_fun ON job (fun, jid) WHERE fun IS NOT NULL;

CREATE TABLE job_minion (
  job_id    bigint NOT NULL,
  minion_id bigint NOT NULL,
  PRIMARY KEY (job_id, minion_id)
);

CREATE TABLE ret (
  id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id    bigint NOT NULL,
  minion_id bigint NOT NULL,
  recv      timestamptz NOT NULL,              -- arrival time
  success   boolean,                           -- load.success, NULL when absent
  retcode   bigint,                            -- load.retcode when an integer
  full_ret  text NOT NULL,                     -- JSON of the whole return load, as received
  UNIQUE (job_id, minion_id)                   -- first return wins, across masters too
);
CREATE INDEX ret_minion ON ret (minion_id, job_id);

-- The archive is partitioned by arrival day (UTC): retention drops whole
-- days. The store creates the partitions event_pYYYYMMDD for yesterday, today
-- and tomorrow as the days pass; anything else lands in event_default, which
-- retention empties row by row.
CREATE TABLE event (
  id        bigint GENERATED ALWAYS AS IDENTITY,  -- archive order
  received  timestamptz NOT NULL,              -- arrival time at its master
  master_id bigint NOT NULL,
  job_id    bigint,                            -- set for job events
  tag       text,                              -- NULL: 'salt/job/<jid>/ret/<minion>' of ret_id
  data      text,                              -- JSON; NULL: the payload is ret_id's full_ret
  ret_id    bigint,                            -- the return whose full_ret is this event's data
  stamp     text,                              -- this event's own _stamp where it differs
  PRIMARY KEY (id, received)
) PARTITION BY RANGE (received);
CREATE TABLE event_default PARTITION OF event DEFAULT;
CREATE INDEX event_received ON event (received);
CREATE INDEX event_job ON event (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX event_ret ON event (ret_id) WHERE ret_id IS NOT NULL;
CREATE INDEX event_tag ON event (tag text_pattern_ops) WHERE job_id IS NULL;

CREATE TABLE quarantine (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  received timestamptz NOT NULL,
  reason   text NOT NULL,
  raw      bytea NOT NULL
);
CREATE INDEX quarantine_received ON quarantine (received);

CREATE TABLE master_counter (
  master_id bigint NOT NULL,
  name      text COLLATE "C" NOT NULL,
  value     bigint NOT NULL,
  PRIMARY KEY (master_id, name)
);

CREATE TABLE queue (
  id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text COLLATE "C" NOT NULL UNIQUE
);

CREATE TABLE queue_item (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- insertion order: FIFO
  queue_id bigint NOT NULL,
  item     text NOT NULL,                                   -- JSON of the item (storage form)
  UNIQUE (queue_id, item)
);
CREATE INDEX queue_item_order ON queue_item (queue_id, id);

-- JSON text as jsonb for the views; text that jsonb cannot hold (a \u0000,
-- say) shows as a jsonb string instead of failing the whole query. PARALLEL
-- UNSAFE: the exception block is a subtransaction, which parallel plans forbid.
CREATE FUNCTION brine_jsonb(t text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $$
BEGIN
  RETURN t::jsonb;
EXCEPTION WHEN others THEN
  RETURN to_jsonb(t);
END
$$;

-- Salt's pgjsonb names and types over the layout above ----------------------

CREATE VIEW jids AS
SELECT j.jid::varchar(255) AS jid,
       brine_jsonb(j.load) AS load,
       j.fun AS fun,
       brine_jsonb(j.metadata) AS metadata,
       j.endtime AS endtime,
       CASE j.load_kind WHEN 1 THEN 'return' ELSE 'publish' END AS load_source,
       j.seen AS alter_time
FROM job AS j
WHERE j.load IS NOT NULL;

CREATE VIEW jid_minions AS
SELECT j.jid AS jid, m.name AS minion
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id;

CREATE VIEW salt_returns AS
SELECT (brine_jsonb(r.full_ret) ->> 'fun')::varchar(50) AS fun,
       j.jid::varchar(255) AS jid,
       brine_jsonb(r.full_ret) -> 'return' AS "return",
       m.name::varchar(255) AS id,
       (CASE WHEN r.success THEN 'True' WHEN NOT r.success THEN 'False' ELSE '' END)::varchar(10) AS success,
       brine_jsonb(r.full_ret) AS full_ret,
       r.recv AS alter_time,
       r.retcode AS retcode,
       brine_jsonb(r.full_ret) ->> 'out' AS out
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

CREATE VIEW salt_events AS
SELECT e.id AS id,
       coalesce(e.tag, 'salt/job/' || rj.jid || '/ret/' || rm.name)::varchar(255) AS tag,
       CASE
         WHEN e.ret_id IS NULL THEN brine_jsonb(e.data)
         WHEN e.stamp IS NULL THEN brine_jsonb(r.full_ret)
         ELSE jsonb_set(brine_jsonb(r.full_ret), '{_stamp}', to_jsonb(e.stamp))
       END AS data,
       e.received AS alter_time,
       ms.name::varchar(255) AS master_id
FROM event AS e
JOIN master AS ms ON ms.id = e.master_id
LEFT JOIN ret AS r ON r.id = e.ret_id
LEFT JOIN job AS rj ON rj.id = r.job_id
LEFT JOIN minion AS rm ON rm.id = r.minion_id;

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
