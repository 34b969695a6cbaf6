-- 0005 (PostgreSQL): how far brine-master has filed each of the Salt
-- plug-in's spool files (issue 25, item 8; SQLite's 0010_spool_progress).
--
-- A spool file (master/include/brine/master/spool.h) used to be read whole
-- and filed as one batch: a multi-GB spool after an outage took more memory
-- than the host had, and after the OOM kill the same `.taken` file was read
-- again, so brine-master restart-looped. It is now filed in batches, and each
-- batch's transaction also records the byte offset it reached, so a crash
-- neither files a batch twice (event_return batches are not idempotent) nor
-- loses one: the next pass resumes at the committed offset. `file_key` names
-- the file by its identity (name, device, inode, size, mtime), so a new file
-- under an old name starts at 0. The row goes once the file is removed.
CREATE TABLE spool_progress (
  master_id    bigint NOT NULL,
  file_key     text COLLATE "C" NOT NULL,
  offset_bytes bigint NOT NULL,
  PRIMARY KEY (master_id, file_key)
);
