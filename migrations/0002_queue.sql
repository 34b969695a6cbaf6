-- 0002_queue: the queues of Salt's queue runner (brine-run queue.*).
--
-- Salt's sqlite queue backend keeps a database file per queue holding one
-- table named like the queue, so a queue name has to be a bare SQL identifier,
-- items are strings only, and the pop order is whatever the query plan gives.
-- brine keeps every queue in the store instead (docs/schema.md, "Queues"):
--   * `queue` has a row for every queue name any queue.* call has named, so
--     list_queues lists a queue even while it is empty (Salt: any call on a
--     queue creates <queue>.db, and list_queues lists the files);
--   * `queue_item` has a row per queued item. Its INTEGER PRIMARY KEY is the
--     insertion order, so pop and list_items are FIFO. The item is its JSON
--     text in brine's storage form, so a dict stays a dict and 5 stays 5, and
--     UNIQUE (queue_id, item) is Salt's duplicate rule (`name TEXT UNIQUE`).
-- Queue names and items are only ever bound as parameters; no SQL is built
-- from them. brine-run writes these tables directly, under BEGIN IMMEDIATE.

CREATE TABLE queue (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE            -- 1-255 bytes of UTF-8, no '/', NUL or control characters
);

CREATE TABLE queue_item (
  id       INTEGER PRIMARY KEY,        -- insertion order (ids only grow while rows exist): FIFO
  queue_id INTEGER NOT NULL,
  item     TEXT NOT NULL,              -- JSON of the item (storage form)
  UNIQUE (queue_id, item)
);
-- A queue's items oldest first: pop, list_items and list_length.
CREATE INDEX queue_item_order ON queue_item (queue_id, id);
