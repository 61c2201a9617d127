-- Session transcripts (DESIGN §2: the transcript lives in Postgres, never in etcd). One row per event,
-- numbered per session from 1. `source` says who wrote it: 'core' for what the operator records from
-- its own state (user messages, tool results and approval outcomes from Core's records), 'agent' for
-- what the agent posts, which is never replayed as a tool result. The operator may only append.

-- Up Migration
CREATE TABLE session_events (
  session_uid text NOT NULL,
  seq         bigint NOT NULL CHECK (seq >= 1),
  source      text NOT NULL CHECK (source IN ('agent', 'core')),
  kind        text NOT NULL,
  payload     jsonb NOT NULL,
  at_us       bigint NOT NULL,
  PRIMARY KEY (session_uid, seq)
);

REVOKE ALL ON session_events FROM PUBLIC;
GRANT SELECT, INSERT ON session_events TO gatehouse_operator;

-- Down Migration
DROP TABLE session_events;
