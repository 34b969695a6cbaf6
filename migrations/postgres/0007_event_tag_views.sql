-- 0007 (PostgreSQL): events by tag through an index, one view per half of
-- salt_events (issue 27; SQLite's 0012_event_tag_views says why a predicate on
-- salt_events' tag cannot reach the return events through an index).
--
--   * event_tag covers every stored tag, not only those of events without a
--     job: salt/job/<jid>/new and the bare-jid events are in it too, so
--     `tag = ...` and `tag LIKE 'prefix%'` on tagged_events are searches of it
--     whatever the tag. The presence reads (`tag = ... AND job_id IS NULL`)
--     still use it: an equality implies `tag IS NOT NULL`. Two entries more
--     per job; the index is rebuilt on every event partition, inside the
--     migration's transaction (docs/master.md's upgrade notes time it).
--   * tagged_events: the events whose tag is stored, salt_events' columns
--     (the tag as text, so the index matches it: salt_events' varchar(255) is
--     a length check PostgreSQL does not see through).
--   * return_events: the return events, with their `jid` and `minion`:
--     `jid = ...` is a search of job's jid, then of the job's returns, then
--     of event_ret.

DROP INDEX event_tag;
CREATE INDEX event_tag ON event (tag text_pattern_ops) WHERE tag IS NOT NULL;

CREATE VIEW tagged_events AS
SELECT e.id AS id,
       e.tag AS tag,
       CASE
         WHEN e.ret_id IS NULL THEN brine_jsonb(e.data)
         ELSE (SELECT CASE WHEN e.stamp IS NULL THEN brine_jsonb(r.full_ret)
                           ELSE jsonb_set(brine_jsonb(r.full_ret), '{_stamp}', to_jsonb(e.stamp)) END
               FROM ret AS r WHERE r.id = e.ret_id)
       END AS data,
       e.received AS alter_time,
       (SELECT ms.name::varchar(255) FROM master AS ms WHERE ms.id = e.master_id) AS master_id
FROM event AS e
WHERE e.tag IS NOT NULL;

CREATE VIEW return_events AS
SELECT e.id AS id,
       'salt/job/' || j.jid || '/ret/' || m.name AS tag,
       CASE WHEN e.stamp IS NULL THEN brine_jsonb(r.full_ret)
            ELSE jsonb_set(brine_jsonb(r.full_ret), '{_stamp}', to_jsonb(e.stamp)) END AS data,
       e.received AS alter_time,
       (SELECT ms.name::varchar(255) FROM master AS ms WHERE ms.id = e.master_id) AS master_id,
       j.jid AS jid,
       m.name AS minion
FROM event AS e
JOIN ret AS r ON r.id = e.ret_id
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id
WHERE e.tag IS NULL;
