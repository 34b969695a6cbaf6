-- 0010_return_trimmed (issue 29): a return whose only copy is one the master
-- trimmed for its bus is marked; the SQLite migration 0015_return_trimmed
-- says why and when the writer sets and clears it.
ALTER TABLE ret ADD COLUMN trimmed boolean NOT NULL DEFAULT false;

UPDATE ret SET trimmed = true
WHERE strpos(full_ret, '"VALUE_TRIMMED"') > 0
  AND jsonb_path_exists(brine_jsonb(full_ret), 'strict $.** ? (@ == "VALUE_TRIMMED")');

-- salt_returns as it stands (0002, with job.start_time since 0004), `trimmed` last.
CREATE OR REPLACE VIEW salt_returns AS
SELECT (brine_jsonb(r.full_ret) ->> 'fun')::varchar(50) AS fun,
       j.jid::varchar(255) AS jid,
       brine_jsonb(r.full_ret) -> 'return' AS "return",
       m.name::varchar(255) AS id,
       (CASE WHEN r.success THEN 'True' WHEN NOT r.success THEN 'False' ELSE '' END)::varchar(10) AS success,
       brine_jsonb(r.full_ret) AS full_ret,
       r.recv AS alter_time,
       r.retcode AS retcode,
       brine_jsonb(r.full_ret) ->> 'out' AS out,
       r.recv AS recv_time,
       j.start_time AS start_time,
       round(extract(epoch FROM r.recv - j.start_time), 3) AS seconds_after_start,
       r.trimmed AS trimmed
FROM ret AS r
JOIN job AS j ON j.id = r.job_id
JOIN minion AS m ON m.id = r.minion_id;
