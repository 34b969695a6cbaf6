-- 0008_minion_outcome_indexes: per-minion reliability from index entries
-- alone (issue 15, round 6).
--
-- minion_job_outcome joined each (job, minion) pair to its return through
-- whichever of ret's two (job, minion) indexes the planner took: it took
-- ret_minion (minion_id, job_id), where the pairs of one hour's jobs are spread
-- over a leaf page per minion, and then read the return's row for its retcode
-- and success. Over an hour of a 1,000-minion fleet (41,680 pairs on the
-- 1M-job store) that is some 40,000 scattered page reads; with the sqlite3
-- shell's default 2 MiB page cache most of them go to the OS (0.11-0.13 s of
-- system time).
--
-- Now `returned` comes from ret_job_minion (job_id, minion_id), whose entries
-- for one hour's jobs sit side by side, and `failed` from ret_failed_job, the
-- failed-only index keyed the same way; both are covering, so no return row
-- is read. The rows are the same (EXCEPT both ways on the 1M-job store: none),
-- and the CPU of the per-minion question halves (docs/performance.md).

DROP VIEW minion_job_outcome;
CREATE VIEW minion_job_outcome AS
SELECT j.jid AS jid,
       j.fun AS fun,
       j.start_time AS start_time,
       m.name AS minion,
       r.id IS NOT NULL AS returned,
       f.id IS NOT NULL AS failed
FROM job_minion AS jm
JOIN job AS j ON j.id = jm.job_id
JOIN minion AS m ON m.id = jm.minion_id
LEFT JOIN ret AS r INDEXED BY ret_job_minion ON r.job_id = jm.job_id AND r.minion_id = jm.minion_id
LEFT JOIN ret AS f INDEXED BY ret_failed_job
  ON f.job_id = jm.job_id AND f.minion_id = jm.minion_id AND (f.retcode <> 0 OR f.success = 0);
