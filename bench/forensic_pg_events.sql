-- The event archive for forensic_bench --uri on pg_bench's store of 1M jobs
-- (pg_bench --store-jobs copies job, job_minion and ret, not the archive: it
-- holds only the 1,000-job sample's events). Run once with psql on the held
-- store (docs/performance.md, "Forensic SQL"):
--   * a return event for every return of the newest day's jobs (about 1M, as
--     brine-master files them: no tag, no data, ret_id and job_id set) and a
--     salt/job/<jid>/new event for each of those jobs (tag and load stored);
--   * 300,000 events without a job over the 10 days of jobs, spread evenly
--     over the minions: 20,000 salt/auth (the SQLite store's 20,188), 20,000
--     salt/minion/<id>/start and 260,000 salt/beacon/<id>/diskusage/ (the
--     bulk that a tag index must step over).
-- Then VACUUM ANALYZE event, as autovacuum would have.
\set ON_ERROR_STOP on
SET TimeZone = 'UTC';
\timing on
BEGIN;
CREATE TEMP TABLE fleet AS SELECT array_agg(name ORDER BY id) AS names, count(*)::int AS n FROM minion;
CREATE TEMP TABLE span AS
SELECT (SELECT min(id) FROM master) AS master_id,
       (SELECT min(start_time) FROM job WHERE jid LIKE '2%') AS t0,
       (SELECT max(start_time) FROM job WHERE jid LIKE '2%') AS t1;

INSERT INTO event (received, master_id, job_id, tag, data)
SELECT j.seen, s.master_id, j.id, 'salt/job/' || j.jid || '/new', j.load
FROM job AS j, span AS s
WHERE j.jid >= to_char(s.t1 - interval '1 day', 'YYYYMMDDHH24MISS') AND j.load IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM event AS e WHERE e.job_id = j.id)
ORDER BY j.seen;

INSERT INTO event (received, master_id, job_id, ret_id)
SELECT r.recv, s.master_id, r.job_id, r.id
FROM job AS j JOIN ret AS r ON r.job_id = j.id, span AS s
WHERE j.jid >= to_char(s.t1 - interval '1 day', 'YYYYMMDDHH24MISS')
  AND NOT EXISTS (SELECT 1 FROM event AS e WHERE e.ret_id = r.id)
ORDER BY r.recv;

INSERT INTO event (received, master_id, tag, data)
SELECT s.t0 + (s.t1 - s.t0) * (g / 300000.0)::float8, s.master_id,
       CASE WHEN g % 15 = 0 THEN 'salt/auth'
            WHEN g % 15 = 1 THEN 'salt/minion/' || f.names[1 + g % f.n] || '/start'
            ELSE 'salt/beacon/' || f.names[1 + g % f.n] || '/diskusage/' END,
       CASE WHEN g % 15 = 0 THEN json_build_object('id', f.names[1 + g % f.n], 'act', 'accept', 'result', true,
                                                  'pub', '-----BEGIN PUBLIC KEY-----' || repeat('A', 380) || '-----END PUBLIC KEY-----')::text
            WHEN g % 15 = 1 THEN json_build_object('id', f.names[1 + g % f.n], 'cmd', '_minion_event', 'pretag', null,
                                                  'data', 'Minion ' || f.names[1 + g % f.n] || ' started')::text
            ELSE json_build_object('id', f.names[1 + g % f.n], '/', 63.2, '/var', 81.0)::text END
FROM generate_series(0, 299999) AS g, span AS s, fleet AS f
ORDER BY 1;
COMMIT;
VACUUM ANALYZE event;
SELECT count(*) AS events, count(tag) AS tagged, count(*) FILTER (WHERE tag = 'salt/auth') AS auth FROM event;
