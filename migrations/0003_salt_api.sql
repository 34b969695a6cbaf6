-- 0003_salt_api: read-only views for the Salt returner plug-in
-- (contrib/salt/returners/brine.py), and a load kind for the master's own
-- publish load.
--
-- The plug-in runs inside the Salt master and answers get_load, get_jid,
-- get_jids, get_jids_filter, get_fun, get_minions and get_endtime by reading
-- the store with Python's sqlite3 (read-only). So that the query logic stays
-- with the schema, these views give each answer in the shape Salt's
-- local_cache returns it (spec salt-jobs.md 2.5, 4.2), as JSON text the
-- plug-in decodes. The names carry a version (brine_api_v1_*): a later change
-- of shape adds brine_api_v2_* beside them, so an installed plug-in keeps
-- working until it is upgraded.
--
-- job.load_kind gains the value 3: the publish load Salt's master handed to
-- save_load (cmd "publish"). It is never replaced by the copy a
-- salt/job/<jid>/new event carries (kind 2) nor by a return (kind 1, stub);
-- the jids view shows it as load_source 'publish' like kind 2.

-- One row per job that has a load. `instance` is Salt's format_jid_instance
-- (Function, Arguments, Target, Target-type, User, [Metadata], StartTime) and
-- `instance_ext` format_jid_instance_ext (JID before StartTime); StartTime is
-- jid_to_time(jid). `endtime` is the job_cache_store_endtime text or NULL.
CREATE VIEW brine_api_v1_job AS
SELECT x.jid AS jid,
       x.fun AS fun,
       x.load AS load,
       x.endtime AS endtime,
       json_remove(
         json_object('Function', json(x.function), 'Arguments', json(x.arguments),
                     'Target', json(x.target), 'Target-type', json(x.target_type),
                     'User', json(x.user), 'Metadata', json(x.metadata),
                     'StartTime', x.start_time),
         CASE WHEN x.metadata IS NULL THEN '$.Metadata' ELSE '$.brine_none' END) AS instance,
       json_remove(
         json_object('Function', json(x.function), 'Arguments', json(x.arguments),
                     'Target', json(x.target), 'Target-type', json(x.target_type),
                     'User', json(x.user), 'Metadata', json(x.metadata),
                     'JID', x.jid, 'StartTime', x.start_time),
         CASE WHEN x.metadata IS NULL THEN '$.Metadata' ELSE '$.brine_none' END) AS instance_ext
FROM (
  SELECT j.jid AS jid,
         j.fun AS fun,
         j.load AS load,
         j.endtime AS endtime,
         -- Salt's defaults apply when a key is absent, not when it is null.
         CASE WHEN json_type(j.load, '$.fun') IS NULL THEN '"unknown-function"' ELSE j.load -> '$.fun' END AS function,
         CASE WHEN json_type(j.load, '$.arg') IS NULL THEN '[]' ELSE j.load -> '$.arg' END AS arguments,
         CASE WHEN json_type(j.load, '$.tgt') IS NULL THEN '"unknown-target"' ELSE j.load -> '$.tgt' END AS target,
         CASE WHEN json_type(j.load, '$.tgt_type') IS NULL THEN '"list"' ELSE j.load -> '$.tgt_type' END AS target_type,
         CASE WHEN json_type(j.load, '$.user') IS NULL THEN '"root"' ELSE j.load -> '$.user' END AS user,
         CASE
           WHEN json_type(j.load, '$.metadata') IS NOT NULL THEN j.load -> '$.metadata'
           WHEN json_type(j.load, '$.kwargs.metadata') IS NOT NULL THEN j.load -> '$.kwargs.metadata'
         END AS metadata,
         -- jid_to_time: "YYYY, Mon DD hh:mm:ss.ffffff" for a 20-digit jid or
         -- <20 digits>_<pid>, else ''; month 00 gives an empty month name.
         CASE
           WHEN length(j.jid) = 20 OR (length(j.jid) > 21 AND substr(j.jid, 21, 1) = '_') THEN
             substr(j.jid, 1, 4) || ', ' ||
             trim(substr('   JanFebMarAprMayJunJulAugSepOctNovDec', CAST(substr(j.jid, 5, 2) AS INTEGER) * 3 + 1, 3)) ||
             ' ' || substr(j.jid, 7, 2) || ' ' || substr(j.jid, 9, 2) || ':' || substr(j.jid, 11, 2) || ':' ||
             substr(j.jid, 13, 2) || '.' || substr(j.jid, 15, 6)
           ELSE ''
         END AS start_time
  FROM job AS j
  WHERE j.load IS NOT NULL
) AS x;

-- The expected minions of each job (get_load's `Minions`, sorted by the reader).
CREATE VIEW brine_api_v1_job_minion AS
SELECT j.jid AS jid, m.name AS minion
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id;

-- One row per stored return. `result` is what local_cache's get_jid gives for
-- the minion: the keys return, retcode, success and out of the return load,
-- in that order, only those present. `full_ret` is the whole return load.
CREATE VIEW brine_api_v1_return AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       json_remove(
         json_object('return', json(r.full_ret -> '$.return'),
                     'retcode', json(coalesce(r.full_ret -> '$.retcode', 'null')),
                     'success', json(coalesce(r.full_ret -> '$.success', 'null')),
                     'out', json(coalesce(r.full_ret -> '$.out', 'null'))),
         CASE WHEN json_type(r.full_ret, '$.retcode') IS NULL THEN '$.retcode' ELSE '$.brine_none' END,
         CASE WHEN json_type(r.full_ret, '$.success') IS NULL THEN '$.success' ELSE '$.brine_none' END,
         CASE WHEN json_type(r.full_ret, '$.out') IS NULL THEN '$.out' ELSE '$.brine_none' END) AS result,
       r.full_ret AS full_ret
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

-- get_fun: for each function and minion, the full return load of the
-- minion's newest job running it (SQLite takes the bare column from the row
-- of max(jid)). A `WHERE fun = ?` on this view is pushed into the grouping.
CREATE VIEW brine_api_v1_fun_latest AS
SELECT j.fun AS fun, m.name AS minion, r.full_ret AS full_ret, max(j.jid) AS jid
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE j.fun IS NOT NULL
GROUP BY j.fun, m.name;

-- get_minions: every minion that has returned.
CREATE VIEW brine_api_v1_returned_minion AS
SELECT m.name AS minion
FROM minion AS m
WHERE EXISTS (SELECT 1 FROM ret AS r WHERE r.minion_id = m.id);

-- get_endtime: the end time text of each job that has one.
CREATE VIEW brine_api_v1_endtime AS
SELECT j.jid AS jid, j.endtime AS endtime
FROM job AS j
WHERE j.endtime IS NOT NULL;
