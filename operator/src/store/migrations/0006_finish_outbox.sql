-- The finish outbox (DESIGN §4 step 8, §6). A receipt is recorded on the row before `execution.finished`
-- is appended; an append that fails must not lose the finish from the chain for good. finish_audit_seq
-- says whether it is there: NULL while the row's current finish is not in the chain, the seq of its
-- `execution.finished` record once it is, 0 for rows already finished when this migration ran (finished
-- before the outbox; not tracked). The leader's recovery sweep appends what is still NULL a while after
-- the finish. A finished row may change only that column, from NULL to a value, once; a row that leaves
-- `unknown` for a definite outcome has a new finish and starts again at NULL.

-- Up Migration
ALTER TABLE executions ADD COLUMN finish_audit_seq bigint
  CONSTRAINT executions_finish_audit_seq_nonnegative CHECK (finish_audit_seq >= 0),
  ADD CONSTRAINT executions_started_has_no_finish CHECK (state <> 'started' OR finish_audit_seq IS NULL);

CREATE INDEX executions_unaudited_finishes ON executions (updated_at_us)
  WHERE finish_audit_seq IS NULL AND state <> 'started';

-- Allowed: started → started (lease renewal), started → succeeded | failed | unknown,
-- unknown → succeeded | failed, each with finish_audit_seq NULL (the new finish is not in the chain yet);
-- and on a finished row (succeeded, failed, unknown) finish_audit_seq NULL → a value, nothing else.
-- A final row never changes otherwise; the claimed request never changes.
CREATE OR REPLACE FUNCTION gatehouse_guard_execution_update() RETURNS trigger
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
  IF OLD.state <> 'started'
     AND (NEW.state, NEW.receipt, NEW.error_kind, NEW.message, NEW.lease_until_us, NEW.updated_at_us)
         IS NOT DISTINCT FROM
         (OLD.state, OLD.receipt, OLD.error_kind, OLD.message, OLD.lease_until_us, OLD.updated_at_us) THEN
    IF OLD.finish_audit_seq IS NULL AND NEW.finish_audit_seq IS NOT NULL THEN
      RETURN NEW;
    END IF;
    IF OLD.finish_audit_seq IS NOT NULL AND NEW.finish_audit_seq IS DISTINCT FROM OLD.finish_audit_seq THEN
      RAISE EXCEPTION 'execution %: its finish is already in the audit chain at seq %', OLD.id, OLD.finish_audit_seq
        USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  IF NOT ((OLD.state = 'started' AND NEW.state IN ('started', 'succeeded', 'failed', 'unknown'))
       OR (OLD.state = 'unknown' AND NEW.state IN ('succeeded', 'failed'))) THEN
    RAISE EXCEPTION 'execution %: illegal state transition % -> %', OLD.id, OLD.state, NEW.state
      USING ERRCODE = 'check_violation',
            HINT = 'allowed: started -> succeeded|failed|unknown, unknown -> succeeded|failed; '
                   'a finished row may only set finish_audit_seq once';
  END IF;
  IF NEW.finish_audit_seq IS NOT NULL THEN
    RAISE EXCEPTION 'execution %: a new state''s finish is not in the audit chain yet (finish_audit_seq must be NULL)', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

-- Runs through the new guard: NULL → 0 on a finished row is the one change it allows.
UPDATE executions SET finish_audit_seq = 0 WHERE state <> 'started';

-- Down Migration
CREATE OR REPLACE FUNCTION gatehouse_guard_execution_update() RETURNS trigger
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
DROP INDEX executions_unaudited_finishes;
ALTER TABLE executions DROP COLUMN finish_audit_seq;
