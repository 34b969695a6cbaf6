-- The forensic questions of bench/forensic_questions.sql in PostgreSQL's
-- dialect, as an operator types them in psql (docs/schema.md, "Forensics on
-- PostgreSQL"): the same names, in the same order, each asking for the same
-- rows. Read by bench/forensic_bench.cpp --uri postgresql://... (times and
-- EXPLAIN plans on a big store).
--
-- Grammar: forensic_questions.sql's. A line `-- q: <name>` starts a question;
-- the SQL runs to the next blank line. No plan line may be a sequential scan
-- of ret or event (or one of their partitions). Parameters, bound as text
-- (PostgreSQL infers their types): :since (a job start time), :recv_since (a
-- return arrival time), :since_received (an event arrival time: PostgreSQL's
-- event ids are a sequence, not microseconds), :jid_since (a jid prefix),
-- :jid (a job with many returns), :state_jid (a state.apply job with failed
-- states), :minion, :ret_minion (a minion that returned to :jid: on
-- pg_bench's store :jid's minions are its own, not the fleet's), :user.
-- salt_returns' success is pgjsonb's text
-- ('True'/'False'); the forensic views' is a boolean; "user" is quoted.

-- q: returns, jid window, failed (plain salt_returns)
SELECT jid, id, fun, retcode FROM salt_returns
WHERE jid >= :jid_since AND (retcode <> 0 OR success = 'False');

-- q: returns, jid window with both ends, failed (plain salt_returns)
SELECT jid, id, fun, retcode FROM salt_returns
WHERE jid BETWEEN :jid_since AND '99999999999999999999~' AND (retcode <> 0 OR success = 'False');

-- q: returns, jid window, failed, fun (plain salt_returns)
SELECT jid, id, retcode FROM salt_returns
WHERE jid >= :jid_since AND fun = 'state.apply' AND (retcode <> 0 OR success = 'False');

-- q: returns of jobs started in a window (plain salt_returns)
SELECT jid, id, fun FROM salt_returns WHERE start_time >= :since;

-- q: returns of one minion (plain salt_returns)
SELECT jid, fun, retcode FROM salt_returns WHERE id = :minion ORDER BY jid DESC LIMIT 20;

-- q: slowest minions of a job (plain salt_returns)
SELECT id, seconds_after_start FROM salt_returns WHERE jid = :jid
ORDER BY seconds_after_start DESC LIMIT 10;

-- q: events by tag (tagged_events)
SELECT id, tag FROM tagged_events WHERE tag = 'salt/auth';

-- q: events by tag prefix, GLOB (tagged_events)
SELECT id, tag FROM tagged_events WHERE tag LIKE 'salt/auth%';

-- q: a return event by jid and minion (return_events)
SELECT id, tag FROM return_events WHERE jid = :jid AND minion = :ret_minion;

-- q: a job's return events (return_events)
SELECT id, minion FROM return_events WHERE jid = :jid;

-- q: events by arrival window (plain salt_events)
SELECT id, tag FROM salt_events WHERE alter_time >= :since_received;

-- q: jobs started in a window (plain jids)
SELECT jid, fun, "user", tgt FROM jids WHERE start_time >= :since;

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
WHERE "user" = :user ORDER BY jid DESC LIMIT 20;

-- q: failed returns, jid window with both ends (tables, the indexed form)
SELECT j.jid, m.name, r.retcode FROM job AS j
JOIN ret AS r ON r.job_id = j.id JOIN minion AS m ON m.id = r.minion_id
WHERE j.jid BETWEEN :jid_since AND '99999999999999999999~' AND (r.retcode <> 0 OR NOT r.success);
