-- 0009_recv_time_expression: a return's recv_time is computed where it is
-- read, not at every insert (issue 15, ingest).
--
-- ret.recv_time was a VIRTUAL generated column. SQLite computes every
-- generated column of a row it inserts, whether an index needs it or not:
-- ret_failed indexes the recv_time of failed returns only, yet each return's
-- INSERT ran strftime before the partial index's test (EXPLAIN: a PureFunc
-- strftime ahead of the WHERE). callgrind of brine-master's ingest put it at
-- some 3,800 instructions per return, nearly 4 % of the process.
--
-- Now ret_failed indexes the same expression over recv_us, which SQLite
-- computes only for the rows its WHERE admits, and the views spell recv_time
-- (and alter_time, seconds_after_start) as that expression: the planner
-- matches an indexed expression written the same way, so a recv_time window
-- still reaches the index (tests/query_plan_test.cpp). Every view keeps its
-- columns, values and rows. The ret table loses its recv_time column: ad-hoc
-- SQL on the table uses recv_us or the views (docs/schema.md). Dropping a
-- VIRTUAL column rewrites no row; ret_failed is built again, one read of ret.

DROP VIEW failed_states;
DROP VIEW return_times;
DROP VIEW salt_returns;
DROP VIEW failed_returns;
DROP INDEX ret_failed;
ALTER TABLE ret DROP COLUMN recv_time;

-- Failed returns only, by arrival time; covers a list of failures.
CREATE INDEX ret_failed ON ret (strftime('%Y-%m-%d %H:%M:%f', recv_us / 1000000.0, 'unixepoch'), job_id, minion_id,
                                retcode, success) WHERE retcode <> 0 OR success = 0;

CREATE VIEW failed_states AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       json_extract(s.value, '$.__id__') AS state_id,
       s.key AS state,
       json_extract(s.value, '$.name') AS name,
       json_extract(s.value, '$.comment') AS comment,
       strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch') AS recv_time,
       j.start_time AS start_time
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
JOIN json_each(r.full_ret, '$.return') AS s
WHERE (r.retcode <> 0 OR r.success = 0)
  AND j.fun GLOB 'state.*'
  AND json_type(r.full_ret, '$.return') = 'object'
  AND json_type(s.value, '$.result') = 'false';

CREATE VIEW return_times AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       j.start_time AS start_time,
       strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch') AS recv_time,
       round((julianday(strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch')) -
              julianday(j.start_time)) * 86400.0, 3) AS seconds_after_start
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;

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
              julianday(j.start_time)) * 86400.0, 3) AS seconds_after_start
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE j.jid < x'';

CREATE VIEW failed_returns AS
SELECT j.jid AS jid,
       j.fun AS fun,
       m.name AS minion,
       r.retcode AS retcode,
       r.success AS success,
       strftime('%Y-%m-%d %H:%M:%f', r.recv_us / 1000000.0, 'unixepoch') AS recv_time,
       j.start_time AS start_time,
       j.user AS user,
       r.full_ret -> '$.return' AS "return"
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE (r.retcode <> 0 OR r.success = 0) AND j.jid < x'';
