-- Session transcripts (DESIGN §2: the transcript lives in Postgres, never in etcd). One row per event,
-- numbered per session from 1. Tool results and approval outcomes are written by the gateway from
-- Core's records (source 'gateway'); what the agent posts is stored with source 'agent' and never
-- replayed as a tool result.

-- Up Migration
CREATE TABLE session_events (
  session_uid text NOT NULL,
  seq         bigint NOT NULL CHECK (seq >= 1),
  source      text NOT NULL CHECK (source IN ('user', 'agent', 'gateway')),
  kind        text NOT NULL,
  payload     jsonb NOT NULL,
  at_us       bigint NOT NULL,
  PRIMARY KEY (session_uid, seq)
);

-- Down Migration
DROP TABLE session_events;
