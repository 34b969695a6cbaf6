-- 0002 (PostgreSQL): what the batched writes need, and the forensic columns
-- and views of SQLite's 0004_forensics and 0005 (docs/schema.md).

-- A batch's returns are sent at commit as one multi-row INSERT ... ON
-- CONFLICT DO NOTHING, each with the id the store already handed to the
-- batch's events (drawn from ret's identity sequence). When another master
-- stored one of them first, the batch's view of first-wins was wrong: this
-- fails the statement, so the COMMIT sent behind it in the same pipeline
-- commits nothing, and the master replays the batch, which then sees the
-- other master's return. 40001 is serialization_failure: a BusyError.
CREATE FUNCTION brine_check_stored(stored bigint, expected bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
  IF stored <> expected THEN
    RAISE EXCEPTION 'another master stored % of this batch''s % returns first; the batch must be replayed',
      expected - stored, expected USING ERRCODE = 'serialization_failure';
  END IF;
  RETURN stored;
END
$$;
