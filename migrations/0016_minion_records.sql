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
-- Triggers keep the sums in the transaction that changes the rows, whoever
-- writes them (brine-master, an import, retention, a stub's minions being
-- replaced, a trimmed return replaced by the whole one), so the sums are
-- exact and nothing else maintains them. The triggers look the job's hour up
-- by its id; a job row deleted before its pairs (no writer does) would leave
-- its sums behind until retention forgets the hour.
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

-- An expected minion: one more job targeted it, and its return (if one came
-- first) counts now.
CREATE TRIGGER minion_hour_pair_in AFTER INSERT ON job_minion
BEGIN
  INSERT INTO minion_hour (minion_id, hour, targeted, returned, failed)
  SELECT NEW.minion_id, substr(j.jid, 1, 10), 1,
         EXISTS (SELECT 1 FROM ret WHERE job_id = NEW.job_id AND minion_id = NEW.minion_id),
         EXISTS (SELECT 1 FROM ret WHERE job_id = NEW.job_id AND minion_id = NEW.minion_id
                 AND coalesce(retcode <> 0 OR success = 0, 0))
  FROM job AS j WHERE j.id = NEW.job_id
  ON CONFLICT (minion_id, hour) DO UPDATE SET targeted = targeted + 1,
    returned = returned + excluded.returned, failed = failed + excluded.failed;
END;

CREATE TRIGGER minion_hour_pair_out AFTER DELETE ON job_minion
BEGIN
  UPDATE minion_hour SET targeted = targeted - 1,
    returned = returned - EXISTS (SELECT 1 FROM ret WHERE job_id = OLD.job_id AND minion_id = OLD.minion_id),
    failed = failed - EXISTS (SELECT 1 FROM ret WHERE job_id = OLD.job_id AND minion_id = OLD.minion_id
                              AND coalesce(retcode <> 0 OR success = 0, 0))
  WHERE minion_id = OLD.minion_id AND hour = (SELECT substr(jid, 1, 10) FROM job WHERE id = OLD.job_id);
END;

-- A return of an expected pair.
CREATE TRIGGER minion_hour_ret_in AFTER INSERT ON ret
WHEN EXISTS (SELECT 1 FROM job_minion WHERE job_id = NEW.job_id AND minion_id = NEW.minion_id)
BEGIN
  UPDATE minion_hour SET returned = returned + 1,
    failed = failed + coalesce(NEW.retcode <> 0 OR NEW.success = 0, 0)
  WHERE minion_id = NEW.minion_id AND hour = (SELECT substr(jid, 1, 10) FROM job WHERE id = NEW.job_id);
END;

CREATE TRIGGER minion_hour_ret_out AFTER DELETE ON ret
WHEN EXISTS (SELECT 1 FROM job_minion WHERE job_id = OLD.job_id AND minion_id = OLD.minion_id)
BEGIN
  UPDATE minion_hour SET returned = returned - 1,
    failed = failed - coalesce(OLD.retcode <> 0 OR OLD.success = 0, 0)
  WHERE minion_id = OLD.minion_id AND hour = (SELECT substr(jid, 1, 10) FROM job WHERE id = OLD.job_id);
END;

-- A trimmed return replaced by the whole one may change whether it failed.
CREATE TRIGGER minion_hour_ret_change AFTER UPDATE OF retcode, success ON ret
WHEN coalesce(OLD.retcode <> 0 OR OLD.success = 0, 0) <> coalesce(NEW.retcode <> 0 OR NEW.success = 0, 0)
 AND EXISTS (SELECT 1 FROM job_minion WHERE job_id = NEW.job_id AND minion_id = NEW.minion_id)
BEGIN
  UPDATE minion_hour SET failed = failed - coalesce(OLD.retcode <> 0 OR OLD.success = 0, 0)
                                         + coalesce(NEW.retcode <> 0 OR NEW.success = 0, 0)
  WHERE minion_id = NEW.minion_id AND hour = (SELECT substr(jid, 1, 10) FROM job WHERE id = NEW.job_id);
END;

-- "Last seen" of a page of minions: a minion's newest accepted salt/auth
-- event is one search of this index (its id, then the newest arrival),
-- where it was a read of every salt/auth event since the window's start
-- (20,000 a day on the bench store: 80-110 ms). Partial: only salt/auth
-- events are in it, so other events cost the index nothing at insert.
CREATE INDEX event_auth_minion ON event (json_extract(data, '$.id'), id)
WHERE tag = 'salt/auth' AND job_id IS NULL;
