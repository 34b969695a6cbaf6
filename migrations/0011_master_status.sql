-- 0011_master_status: brine-master's status row and its hourly rollups
-- (issue 26 step 4, issue 28).
--
-- A reader on another host (brine-run brine.stats on a PostgreSQL store,
-- brine-web) must see a master's status from the store alone, not from the
-- master's local metrics file. The status is the master's counters
-- (master_counter, which already hold queue_depth, last_commit_us and
-- started_us, and now also heartbeat_us and commit_lag_us) plus what a counter
-- cannot hold: master_status, one row per master with its version, host and
-- pid, written when it starts.
--
-- master_hour counts what each master filed per hour (jobs published,
-- returns, failed returns, archived events), written in the same batch
-- transaction as the rows it counts, so an overview of 7 days reads 168 rows
-- per master instead of counting 7 days of rows. Retention removes the hours
-- older than every cut it applies, with the rows they counted.
CREATE TABLE master_status (
  master_id  INTEGER PRIMARY KEY,
  version    TEXT NOT NULL,
  host       TEXT NOT NULL,
  pid        INTEGER NOT NULL,
  started_us INTEGER NOT NULL
);

CREATE TABLE master_hour (
  master_id INTEGER NOT NULL,
  hour_us   INTEGER NOT NULL,          -- the hour's start, UTC microseconds
  jobs      INTEGER NOT NULL,
  returns   INTEGER NOT NULL,
  failures  INTEGER NOT NULL,
  events    INTEGER NOT NULL,
  PRIMARY KEY (master_id, hour_us)
) WITHOUT ROWID;
