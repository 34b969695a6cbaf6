-- 0003 (PostgreSQL): retention drops whole days of returns and expected
-- minions (issue 16; docs/scaling.md, "Partitions for jobs and returns").
--
-- ret and job_minion are partitioned by their job's day: job.part_day, the
-- UTC day brine first saw the jid. A return or an expected minion always has
-- its job's day, so the first-return-wins key (job_id, minion_id) and the
-- day key (job_id, minion_id, job_day) hold for the same rows; PostgreSQL
-- enforces a unique key on a partitioned table only with the partition key in
-- it. The store creates ret_pYYYYMMDD and job_minion_pYYYYMMDD for
-- yesterday, today and tomorrow as the days pass (as event_p*), and retention
-- drops a day once every job first seen that day is past its keep_jobs cut.
-- The job rows themselves stay in one table: `jid` must stay unique across
-- every day (two masters meeting one jid meet one row), and they are a tenth
-- of the rows.
--
-- On a store that has rows, nothing is copied: the old tables become the
-- DEFAULT partitions, unchanged (the new column is NULL in every old row, so
-- no rewrite). Their jobs keep part_day NULL, so their late returns land
-- beside their first ones in the default partition, whose own
-- UNIQUE (job_id, minion_id) still holds; retention empties it job by job
-- (as event_default). The new unique index is built on the old rows (an index
-- build, no rewrite).

-- Views are bound to tables, not to names: their texts, kept now, re-create
-- them on the new tables at the end.
DO $$
DECLARE
  views text[];
  stmt text;
BEGIN
  SELECT coalesce(array_agg(format('CREATE OR REPLACE VIEW %s AS %s', c.oid::regclass, pg_get_viewdef(c.oid))
                            ORDER BY c.oid), '{}')
    INTO views
    FROM pg_class AS c
   WHERE c.relkind = 'v' AND c.relnamespace = current_schema()::regnamespace;

  ALTER TABLE job ADD COLUMN part_day date;  -- NULL: first seen before this migration
  CREATE INDEX job_part_day ON job (part_day) WHERE part_day IS NOT NULL;

  ALTER TABLE ret RENAME TO ret_default;
  ALTER INDEX ret_minion RENAME TO ret_default_minion;
  ALTER INDEX ret_failed RENAME TO ret_default_failed;
  ALTER TABLE ret_default ADD COLUMN job_day date;
  -- Return ids keep coming from the old identity's sequence (the store draws
  -- them ahead for a batch's events); ret_default, which owns it, stays.
  CREATE TABLE ret (
    id        bigint NOT NULL DEFAULT nextval('ret_id_seq'),
    job_id    bigint NOT NULL,
    minion_id bigint NOT NULL,
    recv      timestamptz NOT NULL,
    success   boolean,
    retcode   bigint,
    full_ret  text NOT NULL,
    job_day   date,                              -- job.part_day of job_id
    UNIQUE NULLS NOT DISTINCT (job_id, minion_id, job_day)
  ) PARTITION BY RANGE (job_day);
  ALTER TABLE ret ATTACH PARTITION ret_default DEFAULT;
  CREATE INDEX ret_id ON ret (id);
  CREATE INDEX ret_minion ON ret (minion_id, job_id);
  CREATE INDEX ret_failed ON ret (recv, job_id, minion_id, retcode, success) WHERE retcode <> 0 OR NOT success;

  ALTER TABLE job_minion RENAME TO job_minion_default;
  ALTER TABLE job_minion_default ADD COLUMN job_day date;
  CREATE TABLE job_minion (
    job_id    bigint NOT NULL,
    minion_id bigint NOT NULL,
    job_day   date,                              -- job.part_day of job_id
    UNIQUE NULLS NOT DISTINCT (job_id, minion_id, job_day)
  ) PARTITION BY RANGE (job_day);
  ALTER TABLE job_minion ATTACH PARTITION job_minion_default DEFAULT;

  FOREACH stmt IN ARRAY views LOOP
    EXECUTE stmt;
  END LOOP;
END
$$;
