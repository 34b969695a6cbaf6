-- 0006 (PostgreSQL): brine-master's status row and its hourly rollups
-- (issue 26 step 4, issue 28; SQLite's 0011_master_status).
--
-- A reader on another host (brine-run brine.stats, brine-web) must see a
-- master's status from the store alone, not from the master's local metrics
-- file. The status is the master's counters (master_counter, which already
-- hold queue_depth, last_commit_us and started_us, and now also heartbeat_us
-- and commit_lag_us) plus what a counter cannot hold: master_status, one row
-- per master with its version, host and pid, written when it starts.
--
-- master_hour counts what each master filed per hour (jobs published,
-- returns, failed returns, archived events), written in the same batch
-- transaction as the rows it counts, so an overview of 7 days reads 168 rows
-- per master instead of counting 7 days of rows. Retention removes the hours
-- older than every cut it applies, with the rows they counted.
CREATE TABLE master_status (
  master_id  bigint PRIMARY KEY,
  version    text NOT NULL,
  host       text NOT NULL,
  pid        bigint NOT NULL,
  started_us bigint NOT NULL
);

CREATE TABLE master_hour (
  master_id bigint NOT NULL,
  hour_us   bigint NOT NULL,
  jobs      bigint NOT NULL,
  returns   bigint NOT NULL,
  failures  bigint NOT NULL,
  events    bigint NOT NULL,
  PRIMARY KEY (master_id, hour_us)
);
