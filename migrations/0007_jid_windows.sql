-- 0007_jid_windows: a one-sided jid window reads only the jobs in it
-- (issue 15, round 2's last slow salt_returns question).
--
-- Debian's SQLite is built without STAT4, so the planner cannot know how many
-- jobs `jid >= X` keeps: it guesses a quarter, and for salt_returns and
-- failed_returns with a failure filter it then preferred walking every failed
-- return of the store (ret_failed_job) and probing each one's job: 0.36-0.46 s
-- on the 1M-job store, growing with the failures kept. A range with two ends
-- is guessed far smaller, and the plan becomes what it should be: the jobs in
-- the window by jid, then each job's failures. `jid BETWEEN X AND '9...~'` did
-- that by hand (docs/schema.md told operators to write it).
--
-- So the two views carry the upper end themselves: `j.jid < x''`. In SQLite
-- every TEXT value sorts before every BLOB, and job.jid is TEXT NOT NULL (its
-- affinity turns a number into text), so the bound keeps every row and each
-- view returns exactly what it did; it only tells the planner that any jid
-- range the reader adds has two ends. Measured on the 1M-job store: the
-- question above 464 ms -> 1 ms (796 rows), and the plans of the other
-- questions unchanged (tests/query_plan_test.cpp).

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
JOIN minion AS m ON m.id = r.minion_id
WHERE j.jid < x'';

DROP VIEW failed_returns;
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
WHERE (r.retcode <> 0 OR r.success = 0) AND j.jid < x'';
