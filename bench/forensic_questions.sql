-- The forensic questions of issue 15, as an operator types them in the
-- sqlite3 shell. Read by bench/forensic_bench.cpp (times and plans on a big
-- store) and tests/query_plan_test.cpp (plans on a small one), so both judge
-- the same SQL.
--
-- Grammar: a line `-- q: <name>` starts a question; the SQL runs to the next
-- blank line. A line `-- scans: <text>` names a plan line a question is known
-- to keep (docs/schema.md says why); every other plan line must not scan ret
-- or event. Parameters: :since (a job start time), :recv_since (a return
-- arrival time), :since_us (an event arrival in microseconds),
-- :jid_since (a jid prefix), :jid (a job with many returns), :state_jid (a
-- state.apply job with failed states), :minion, :user.

-- q: returns, jid window, failed (plain salt_returns)
SELECT jid, id, fun, retcode FROM salt_returns
WHERE jid >= :jid_since AND (retcode <> 0 OR success = 0);

-- q: returns, jid window with both ends, failed (plain salt_returns)
SELECT jid, id, fun, retcode FROM salt_returns
WHERE jid BETWEEN :jid_since AND '99999999999999999999~' AND (retcode <> 0 OR success = 0);

-- q: returns, jid window, failed, fun (plain salt_returns)
SELECT jid, id, retcode FROM salt_returns
WHERE jid >= :jid_since AND fun = 'state.apply' AND (retcode <> 0 OR success = 0);

-- q: returns of jobs started in a window (plain salt_returns)
SELECT jid, id, fun FROM salt_returns WHERE start_time >= :since;

-- q: returns of one minion (plain salt_returns)
SELECT jid, fun, retcode FROM salt_returns WHERE id = :minion ORDER BY jid DESC LIMIT 20;

-- q: slowest minions of a job (plain salt_returns)
SELECT id, seconds_after_start FROM salt_returns WHERE jid = :jid
ORDER BY seconds_after_start DESC LIMIT 10;

-- The tag questions ask tagged_events, salt_events' half whose tags are
-- stored (the same rows for any tag but a return's): on salt_events itself a
-- tag predicate walks every return event, whose tag is rebuilt, not stored
-- (0012_event_tag_views; docs/schema.md, "Tag queries").
-- q: events by tag (tagged_events)
SELECT id, tag FROM tagged_events WHERE tag = 'salt/auth';

-- q: events by tag prefix, GLOB (tagged_events)
SELECT id, tag FROM tagged_events WHERE tag GLOB 'salt/auth*';

-- q: a return event by jid and minion (return_events)
SELECT id, tag FROM return_events WHERE jid = :jid AND minion = :minion;

-- q: a job's return events (return_events)
SELECT id, minion FROM return_events WHERE jid = :jid;

-- q: events by arrival window (plain salt_events)
SELECT id, tag FROM salt_events WHERE id >= :since_us;

-- q: jobs started in a window (plain jids)
SELECT jid, fun, user, tgt FROM jids WHERE start_time >= :since;

-- q: jobs of a function in a window (plain jids)
SELECT jid, tgt FROM jids WHERE fun = 'state.apply' AND start_time >= :since;

-- q: failed returns in a window (failed_returns)
SELECT jid, minion, fun, retcode FROM failed_returns WHERE recv_time >= :recv_since;

-- q: failed state IDs of a state.apply job (failed_states)
SELECT state_id, count(*) AS minions FROM failed_states WHERE jid = :state_jid
GROUP BY state_id ORDER BY minions DESC;

-- q: per-minion reliability in a window (minion_job_outcome)
SELECT minion, count(*) AS targeted, sum(returned) AS returned,
       count(*) - sum(returned) AS missing, sum(failed) AS failed
FROM minion_job_outcome WHERE start_time >= :since
GROUP BY minion ORDER BY missing DESC, failed DESC LIMIT 20;

-- q: slowest minions of a job (return_times)
SELECT minion, seconds_after_start FROM return_times WHERE jid = :jid
ORDER BY seconds_after_start DESC LIMIT 10;

-- q: jobs a user ran (user_jobs)
SELECT jid, start_time, fun, tgt, expected, returned, failed FROM user_jobs
WHERE user = :user ORDER BY jid DESC LIMIT 20;

-- Documented slow form, not a target (no `-- q:` line, so neither the bench
-- nor the plan test reads it): the one-sided jid window written on the
-- tables. No view can add the bound it lacks, and Debian's SQLite (no STAT4)
-- guesses that `j.jid >= X` keeps a quarter of the jobs, so it walks every
-- failed return of the store (ret_failed_job): 221-386 ms warm, 12.1 s cold
-- on the 1M-job store (docs/performance-history.md, issue 27's round).
-- docs/schema.md gives the indexed form, the next question:
--   SELECT j.jid, m.name, r.retcode FROM job AS j
--   JOIN ret AS r ON r.job_id = j.id JOIN minion AS m ON m.id = r.minion_id
--   WHERE j.jid >= :jid_since AND (r.retcode <> 0 OR r.success = 0);

-- q: failed returns, jid window with both ends (tables, the indexed form)
SELECT j.jid, m.name, r.retcode FROM job AS j
JOIN ret AS r ON r.job_id = j.id JOIN minion AS m ON m.id = r.minion_id
WHERE j.jid BETWEEN :jid_since AND '99999999999999999999~' AND (r.retcode <> 0 OR r.success = 0);
