-- 0013_bus_gaps: what an attached brine-master missed of its Salt master's
-- event bus (issue 29).
--
-- A modern Salt master (2016.3 and later) serves its bus itself, with no
-- replay and no sequence numbers: what is fired while brine-master is not
-- reading is gone. So brine-master records each span it was not reading:
-- from the EOF, the replaced socket, the drop, the stop (not from the last
-- frame: a quiet bus is not a gap) until it reads again. gap_end_us is NULL
-- while the gap is open; one open gap per master at most (the first reason
-- of an episode stands).
CREATE TABLE bus_gap (
  id            INTEGER PRIMARY KEY,
  master_id     INTEGER NOT NULL,
  gap_start_us  INTEGER NOT NULL,
  gap_end_us    INTEGER,
  last_frame_us INTEGER,
  reason        TEXT NOT NULL CHECK (reason IN ('master went away', 'socket replaced', 'brine fell behind',
                                                'undecodable stream', 'brine-master stopped', 'permission denied'))
);
CREATE INDEX bus_gap_by_master ON bus_gap (master_id, gap_end_us);

CREATE VIEW brine_bus_gaps AS
SELECT strftime('%Y-%m-%d %H:%M:%f', g.gap_start_us / 1000000.0, 'unixepoch') AS gap_start,
       CASE WHEN g.gap_end_us IS NULL THEN NULL
            ELSE strftime('%Y-%m-%d %H:%M:%f', g.gap_end_us / 1000000.0, 'unixepoch') END AS gap_end,
       CASE WHEN g.last_frame_us IS NULL THEN NULL
            ELSE strftime('%Y-%m-%d %H:%M:%f', g.last_frame_us / 1000000.0, 'unixepoch') END AS last_frame_time,
       g.reason AS reason,
       m.name AS master_id
FROM bus_gap AS g
JOIN master AS m ON m.id = g.master_id;
