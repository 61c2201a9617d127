-- Executions: one row per execution identity (DESIGN §4 step 8, §6). Claimed with
-- INSERT … ON CONFLICT DO NOTHING, so a repeated call can never execute twice. Timestamps are integer
-- microseconds since the epoch (bigint): the pg driver would turn timestamptz into millisecond Dates.

-- Up Migration
CREATE TABLE executions (
  id                 text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
  idempotency_key    text NOT NULL UNIQUE CHECK (length(idempotency_key) BETWEEN 1 AND 128),
  session_uid        text NOT NULL,
  session_namespace  text NOT NULL,
  session_name       text NOT NULL,
  capability         text NOT NULL,
  provider_namespace text NOT NULL,
  provider_name      text NOT NULL,
  approval_name      text,
  state              text NOT NULL CHECK (state IN ('started', 'succeeded', 'failed', 'unknown')),
  -- sha256 hex of arguments_canonical: the arguments digest.
  request_digest     text NOT NULL CHECK (request_digest ~ '^[0-9a-f]{64}$'),
  -- The InvokeRequest sent to the provider (queryable; key order not kept by jsonb).
  request            jsonb NOT NULL,
  -- The exact RFC 8785 bytes request_digest covers; what is executed after the digest is re-checked.
  arguments_canonical text NOT NULL,
  receipt            jsonb,
  error_kind         text,
  message            text,
  lease_until_us     bigint NOT NULL,
  created_at_us      bigint NOT NULL,
  updated_at_us      bigint NOT NULL
);

CREATE INDEX executions_by_session ON executions (session_uid, created_at_us);
CREATE INDEX executions_open_leases ON executions (lease_until_us) WHERE state = 'started';

-- Down Migration
DROP TABLE executions;
