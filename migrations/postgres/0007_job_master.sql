-- 0007_job_master (to be renumbered 0009 at merge; issue 28): which master
-- published each job; the SQLite migration 0012_job_master says why.
-- NULL: unknown (a job filed before this migration, or only a stub).
ALTER TABLE job ADD COLUMN master_id bigint;
