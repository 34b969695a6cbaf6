-- 0012_event_tag_views: events by tag through an index, one view per half of
-- salt_events (issue 27).
--
-- salt_events is a UNION ALL of the events whose tag is stored (every event
-- but a return's own salt/job/<jid>/ret/<minion>) and the return events, whose
-- tag is rebuilt from the jid and the minion. A `tag` predicate reaches the
-- first half through event_tag, but no SQLite plan can take the second half
-- through an index: an index covers one table, the rebuilt tag spans job and
-- minion, and the planner does not reason that 'salt/auth' cannot equal
-- 'salt/job/' || ... . So `tag = 'salt/auth'` on salt_events walks every return
-- event (41.6 s on the 10M-return store). The only index that answers it is
-- one holding every return's tag: measured with store_bench (20,000 jobs,
-- 240,000 events), an expression index of the tag over ret costs 59.8 bytes
-- per event, taking the store from 1.279 to 1.39 x the JSON, over the 1.3
-- budget; a (job, minion) key does not help, the predicate names the tag.
--
-- So the two halves get views of their own, at no cost on disk:
--   * tagged_events: the events whose tag is stored, salt_events' columns.
--     `tag = ...`, `tag GLOB 'prefix*'` and an `id` window are searches of
--     event_tag or of the table's key; it holds salt/auth, salt/minion/...,
--     salt/job/<jid>/new, the bare-jid events, salt/presence/... .
--   * return_events: the return events, with their `jid` and `minion` beside
--     salt_events' columns. `jid = ...` (and `minion = ...`) are searches of
--     job's jid and minion's name, then of the job's events (event_job): a
--     return event's job is its return's (the store keeps that, see
--     kDetachEvents), which the view states so the planner can use it.
-- Both name the master through a scalar subquery rather than a join, so a
-- query that does not ask for `master_id` does not read it: `SELECT id, tag
-- FROM tagged_events WHERE tag = ...` is then index-only (event_tag holds the
-- tag and the key), not a read of each event's row (with the join, 20,188
-- salt/auth events took 165.8 ms on the 10M-return store).
-- salt_events stays as 0006 made it, though its first half holds tagged_events
-- rows: as a UNION ALL of views SQLite would run it as a co-routine that
-- builds every row's data (0006's note), and its return half has no job link,
-- so an arrival window (`id >= ...`) stays a range of the event table's key,
-- where return_events' link lets the planner walk the jobs instead.

CREATE VIEW tagged_events AS
SELECT e.id AS id,
       e.tag AS tag,
       CASE
         WHEN e.ret_id IS NULL THEN e.data
         ELSE (SELECT CASE WHEN e.stamp IS NULL THEN r.full_ret ELSE json_set(r.full_ret, '$._stamp', e.stamp) END
               FROM ret AS r WHERE r.id = e.ret_id)
       END AS data,
       strftime('%Y-%m-%d %H:%M:%f', e.id / 1000000.0, 'unixepoch') AS alter_time,
       (SELECT ms.name FROM master AS ms WHERE ms.id = e.master_id) AS master_id
FROM event AS e
WHERE e.tag IS NOT NULL;

CREATE VIEW return_events AS
SELECT e.id AS id,
       CAST('salt/job/' || j.jid || '/ret/' || m.name AS TEXT) AS tag,
       CASE WHEN e.stamp IS NULL THEN r.full_ret ELSE json_set(r.full_ret, '$._stamp', e.stamp) END AS data,
       strftime('%Y-%m-%d %H:%M:%f', e.id / 1000000.0, 'unixepoch') AS alter_time,
       (SELECT ms.name FROM master AS ms WHERE ms.id = e.master_id) AS master_id,
       j.jid AS jid,
       m.name AS minion
FROM event AS e
JOIN ret AS r ON r.id = e.ret_id
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE e.tag IS NULL AND e.job_id = r.job_id;
