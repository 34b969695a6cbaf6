-- 0015_return_trimmed (issue 29): a return whose only copy is one the master
-- trimmed for its bus (max_event_size: Salt's trim_dict put the string
-- VALUE_TRIMMED where it cut a value out) is marked, so an operator sees that
-- the store does not hold the whole return.
--
-- The writer sets ret.trimmed when it stores such a copy, and clears it when
-- the whole copy arrives later and replaces it (a trimmed copy never replaces
-- a whole one: store/src/job_cache.cpp, ClassifyRepeat). A return stored
-- before this migration is marked here when a string value of its load is
-- VALUE_TRIMMED (a key of that name is no mark), as the writer decides.
ALTER TABLE ret ADD COLUMN trimmed INTEGER NOT NULL DEFAULT 0;

UPDATE ret SET trimmed = 1
WHERE instr(full_ret, '"VALUE_TRIMMED"') > 0
  AND EXISTS (SELECT 1 FROM json_tree(ret.full_ret) AS t WHERE t.type = 'text' AND t.atom = 'VALUE_TRIMMED');

-- salt_returns again (0009), with `trimmed` last: Salt's own columns keep
-- their places.
DROP VIEW salt_returns;
CREATE VIEW salt_returns AS
SELECT j.fun AS fun,
       j.jid AS jid,
       r.full_ret -> '$.return' AS "return",
       m.name AS id,
       r.success AS success,
       r.full_ret AS full_ret,
       strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch') AS alter_time,
       r.retcode AS retcode,
       json_extract(r.full_ret, '$.out') AS out,
       strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch') AS recv_time,
       j.start_time AS start_time,
       round((julianday(strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch')) -
              julianday(j.start_time)) * 86400.0, 3) AS seconds_after_start,
       r.trimmed AS trimmed
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE j.jid < x'';
