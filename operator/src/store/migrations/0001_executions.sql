-- Executions: one row per execution identity (DESIGN §4 step 8, §6). Claimed with
-- INSERT … ON CONFLICT DO NOTHING, so a repeated call can never execute twice. The claimer holds the
-- row while lease_until_us lies ahead; a started row whose lease ended is turned into 'unknown'.
-- Timestamps are integer microseconds since the epoch (bigint): the pg driver would turn timestamptz
-- into millisecond Dates. The stored request, its canonical arguments and their digest sit beside
-- the receipt and never change after the claim; state transitions are guarded here, in SQL.

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
  -- The InvokeRequest sent to the provider (queryable; jsonb does not keep key order).
  request            jsonb NOT NULL,
  -- The exact RFC 8785 bytes of the arguments: what is executed after the digest is re-checked.
  arguments_canonical text NOT NULL,
  -- sha256 hex of arguments_canonical (the arguments digest); the database checks it covers them.
  request_digest     text NOT NULL
    CONSTRAINT executions_digest_covers_arguments
    CHECK (request_digest = encode(sha256(convert_to(arguments_canonical, 'UTF8')), 'hex')),
  receipt            jsonb,
  error_kind         text,
  message            text,
  lease_until_us     bigint NOT NULL,
  created_at_us      bigint NOT NULL,
  updated_at_us      bigint NOT NULL
);

CREATE INDEX executions_by_session ON executions (session_uid, created_at_us);
CREATE INDEX executions_open_leases ON executions (lease_until_us) WHERE state = 'started';

-- Allowed: started → started (lease renewal), started → succeeded | failed | unknown,
-- unknown → succeeded | failed. A final row never changes; the claimed request never changes.
CREATE FUNCTION gatehouse_guard_execution_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.id, NEW.idempotency_key, NEW.session_uid, NEW.session_namespace, NEW.session_name,
      NEW.capability, NEW.provider_namespace, NEW.provider_name, NEW.approval_name, NEW.request,
      NEW.arguments_canonical, NEW.request_digest, NEW.created_at_us)
     IS DISTINCT FROM
     (OLD.id, OLD.idempotency_key, OLD.session_uid, OLD.session_namespace, OLD.session_name,
      OLD.capability, OLD.provider_namespace, OLD.provider_name, OLD.approval_name, OLD.request,
      OLD.arguments_canonical, OLD.request_digest, OLD.created_at_us) THEN
    RAISE EXCEPTION 'execution %: the claimed request is immutable', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NOT ((OLD.state = 'started' AND NEW.state IN ('started', 'succeeded', 'failed', 'unknown'))
       OR (OLD.state = 'unknown' AND NEW.state IN ('succeeded', 'failed'))) THEN
    RAISE EXCEPTION 'execution %: illegal state transition % -> %', OLD.id, OLD.state, NEW.state
      USING ERRCODE = 'check_violation',
            HINT = 'allowed: started -> succeeded|failed|unknown, unknown -> succeeded|failed';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER executions_guard_update
  BEFORE UPDATE ON executions
  FOR EACH ROW EXECUTE FUNCTION gatehouse_guard_execution_update();

REVOKE ALL ON executions FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON executions TO gatehouse_operator;

-- Down Migration
DROP TABLE executions;
DROP FUNCTION gatehouse_guard_execution_update();
