-- Failures and state.apply jobs for forensic_bench --uri on pg_bench's store
-- of 1M jobs, whose sample stream is all cmd.run and never fails (the SQLite
-- query store has a third state.apply jobs and 2.6% failed returns: 1,389 of
-- an hour's 4,167 jobs, 263,840 failed returns). Run once with psql after
-- forensic_pg_events.sql:
--   * every third job becomes a state.apply (job.fun and the load's fun);
--   * one return in 38 fails (retcode 1, success false); a failed return of
--     a state.apply job gets retcode 2, fun state.apply and a highstate dict
--     with a failed state, so failed_states has rows.
-- Then VACUUM ANALYZE job, ret.
\set ON_ERROR_STOP on
\timing on
BEGIN;
UPDATE job SET fun = 'state.apply', load = replace(load, '"fun":"cmd.run"', '"fun":"state.apply"')
WHERE id % 3 = 0 AND fun = 'cmd.run';
UPDATE ret AS r
SET retcode = CASE WHEN j.fun = 'state.apply' THEN 2 ELSE 1 END,
    success = false,
    full_ret = CASE WHEN j.fun = 'state.apply'
                    THEN jsonb_set(jsonb_set(r.full_ret::jsonb, '{fun}', '"state.apply"'), '{return}',
                                   '{"pkg_|-vim_|-vim_|-installed": {"__id__": "vim", "name": "vim", "result": false, "comment": "no such package"}}')::text
                    ELSE r.full_ret END
FROM job AS j
WHERE j.id = r.job_id AND (r.job_id * 7 + r.minion_id) % 38 = 0;
COMMIT;
VACUUM ANALYZE job;
VACUUM ANALYZE ret;
SELECT count(*) FILTER (WHERE fun = 'state.apply') AS state_jobs FROM job;
SELECT count(*) AS failed FROM ret WHERE retcode <> 0 OR NOT success;
