-- 0009_job_master (issue 28): which master
-- published each job; the SQLite migration 0014_job_master says why.
-- NULL: unknown (a job filed before this migration, or only a stub).
ALTER TABLE job ADD COLUMN master_id bigint;
