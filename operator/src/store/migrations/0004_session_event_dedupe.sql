-- A transcript event may carry a deduplication key: the gateway writes each tool call, its result and
-- each approval outcome under a key derived from Core's records (turn and position, or the Approval),
-- so an agent that repeats a request — after a timeout, or a resumed pod that waits again — does not
-- put a second result for the same call into the history it is replayed.

-- Up Migration
ALTER TABLE session_events ADD COLUMN dedupe_key text;
CREATE UNIQUE INDEX session_events_dedupe_key ON session_events (session_uid, dedupe_key)
  WHERE dedupe_key IS NOT NULL;

-- Down Migration
DROP INDEX session_events_dedupe_key;
ALTER TABLE session_events DROP COLUMN dedupe_key;
