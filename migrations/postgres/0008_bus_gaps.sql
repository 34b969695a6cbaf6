-- 0008 (PostgreSQL): what an attached brine-master missed of its Salt
-- master's event bus (issue 29; SQLite's 0013_bus_gaps).
--
-- One row per span a master was not reading its Salt master's bus, from the
-- EOF, the replaced socket, the drop or the stop until it reads again;
-- gap_end_us NULL while open, one open gap per master at most.
CREATE TABLE bus_gap (
  id            bigserial PRIMARY KEY,
  master_id     bigint NOT NULL,
  gap_start_us  bigint NOT NULL,
  gap_end_us    bigint,
  last_frame_us bigint,
  reason        text NOT NULL CHECK (reason IN ('master went away', 'socket replaced', 'brine fell behind',
                                                'undecodable stream', 'brine-master stopped', 'permission denied'))
);
CREATE INDEX bus_gap_by_master ON bus_gap (master_id, gap_end_us);

CREATE VIEW brine_bus_gaps AS
SELECT timestamptz 'epoch' + g.gap_start_us * interval '1 microsecond' AS gap_start,
       timestamptz 'epoch' + g.gap_end_us * interval '1 microsecond' AS gap_end,
       timestamptz 'epoch' + g.last_frame_us * interval '1 microsecond' AS last_frame_time,
       g.reason AS reason,
       m.name AS master_id
FROM bus_gap AS g
JOIN master AS m ON m.id = g.master_id;
