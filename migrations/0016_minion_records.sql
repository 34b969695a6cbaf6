-- 0016_minion_records (issue 28): each minion's record per hour, kept by the
-- store itself, and its salt/auth events by minion.
--
-- brine-web's /minions and /minions/<id> show, per minion, how many jobs of a
-- window targeted it and how many of those it returned, failed or missed.
-- Counting the window's (job, expected minion) pairs reads about 1M pairs a
-- day on a fleet of 10,000 minions (1.1 s for 24 h on the bench store); this
-- table holds the same sums per minion and per hour of the job's start, so a
-- page of minions reads 24 rows a minion for a day and 168 for a week.
--
-- hour is the job's jid cut to YYYYMMDDHH (its start hour in UTC); a jid that
-- is not a time keeps its first ten characters, so a window by jid text and
-- a window by hour text select the same jobs. targeted counts job_minion
-- rows; returned and failed count the returns of those pairs only (a return
-- from a minion the job did not expect is not in a minion's record), failed
-- as minion_job_outcome spells it: retcode <> 0 or success false.
--
-- The store keeps the sums in the transaction that changes the rows, whoever
-- writes them (brine-master, an import, retention, a stub's minions being
-- replaced, a trimmed return replaced by the whole one), so they are exact:
-- on SQLite by the backend in its write transaction
-- (store/src/sqlite_minion_hours.cpp says how, and why not triggers), on
-- PostgreSQL by statement triggers (postgres 0011).
CREATE TABLE minion_hour (
  minion_id INTEGER NOT NULL,
  hour      TEXT NOT NULL,               -- substr(job.jid, 1, 10)
  targeted  INTEGER NOT NULL DEFAULT 0,
  returned  INTEGER NOT NULL DEFAULT 0,
  failed    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (minion_id, hour)
) WITHOUT ROWID;

-- The sums of the rows already stored.
INSERT INTO minion_hour (minion_id, hour, targeted, returned, failed)
SELECT jm.minion_id, substr(j.jid, 1, 10), count(*), count(r.id),
       coalesce(sum(coalesce(r.retcode <> 0 OR r.success = 0, 0)), 0)
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
LEFT JOIN ret AS r ON r.job_id = jm.job_id AND r.minion_id = jm.minion_id
GROUP BY jm.minion_id, substr(j.jid, 1, 10);

-- "Last seen" of a page of minions: a minion's newest accepted salt/auth
-- event is one search of this index (its id, then the newest arrival),
-- where it was a read of every salt/auth event since the window's start
-- (20,000 a day on the bench store: 80-110 ms). Partial: only salt/auth
-- events are in it, so other events cost the index nothing at insert.
CREATE INDEX event_auth_minion ON event (json_extract(data, '$.id'), id)
WHERE tag = 'salt/auth' AND job_id IS NULL;
