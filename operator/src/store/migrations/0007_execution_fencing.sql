-- Fencing, claim-time idempotency and settling what is unknown (DESIGN §4 step 8, §6).
--   fencing_token   1 for the claimer; one more for every takeover (a recoverer after the lease ended,
--                   a settle attempt of an unknown row). Outcomes and lease renewals are written only
--                   WHERE fencing_token = the writer's, so a slow earlier holder cannot overwrite what
--                   a later one recorded.
--   idempotency     the provider's deduplication as the Capability declared it at claim time: what
--                   recovery relies on (re-invoke by key, or only ask). Rows claimed before this
--                   version get 'none': recovery then never invokes them again, only asks.
--   never_sent      set only when a started row fails because its request certainly never reached the
--                   provider; the one failure after which an identical call may run again.
--   settle_attempts, next_settle_us
--                   an unknown row is asked again (status query; re-invoke by key when the provider
--                   deduplicates) on a back-off schedule until settled or until only a person can.

-- Up Migration
ALTER TABLE executions
  ADD COLUMN fencing_token bigint NOT NULL DEFAULT 1
    CONSTRAINT executions_fencing_token_positive CHECK (fencing_token >= 1),
  ADD COLUMN idempotency text NOT NULL DEFAULT 'none'
    CONSTRAINT executions_idempotency_known CHECK (idempotency IN ('none', 'key', 'natural')),
  ADD COLUMN never_sent boolean NOT NULL DEFAULT false,
  ADD COLUMN settle_attempts integer NOT NULL DEFAULT 0
    CONSTRAINT executions_settle_attempts_nonnegative CHECK (settle_attempts >= 0),
  ADD COLUMN next_settle_us bigint,
  ADD CONSTRAINT executions_never_sent_is_failed CHECK (NOT never_sent OR state = 'failed'),
  ADD CONSTRAINT executions_settle_only_unknown CHECK (next_settle_us IS NULL OR state = 'unknown');

CREATE INDEX executions_unsettled ON executions (next_settle_us)
  WHERE state = 'unknown' AND next_settle_us IS NOT NULL;

CREATE OR REPLACE FUNCTION gatehouse_guard_execution_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.id, NEW.idempotency_key, NEW.session_uid, NEW.session_namespace, NEW.session_name,
      NEW.capability, NEW.provider_namespace, NEW.provider_name, NEW.approval_name, NEW.request,
      NEW.arguments_canonical, NEW.request_digest, NEW.created_at_us, NEW.idempotency)
     IS DISTINCT FROM
     (OLD.id, OLD.idempotency_key, OLD.session_uid, OLD.session_namespace, OLD.session_name,
      OLD.capability, OLD.provider_namespace, OLD.provider_name, OLD.approval_name, OLD.request,
      OLD.arguments_canonical, OLD.request_digest, OLD.created_at_us, OLD.idempotency) THEN
    RAISE EXCEPTION 'execution %: the claimed request is immutable', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.fencing_token < OLD.fencing_token THEN
    RAISE EXCEPTION 'execution %: the fencing token went back from % to %', OLD.id, OLD.fencing_token, NEW.fencing_token
      USING ERRCODE = 'check_violation';
  END IF;
  -- A finished row's finish enters the audit chain once: finish_audit_seq NULL → a value, nothing else.
  IF OLD.state <> 'started'
     AND (NEW.state, NEW.receipt, NEW.error_kind, NEW.message, NEW.never_sent, NEW.lease_until_us,
          NEW.updated_at_us, NEW.fencing_token, NEW.settle_attempts, NEW.next_settle_us)
         IS NOT DISTINCT FROM
         (OLD.state, OLD.receipt, OLD.error_kind, OLD.message, OLD.never_sent, OLD.lease_until_us,
          OLD.updated_at_us, OLD.fencing_token, OLD.settle_attempts, OLD.next_settle_us) THEN
    IF OLD.finish_audit_seq IS NULL AND NEW.finish_audit_seq IS NOT NULL THEN
      RETURN NEW;
    END IF;
    IF OLD.finish_audit_seq IS NOT NULL AND NEW.finish_audit_seq IS DISTINCT FROM OLD.finish_audit_seq THEN
      RAISE EXCEPTION 'execution %: its finish is already in the audit chain at seq %', OLD.id, OLD.finish_audit_seq
        USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  -- An unknown row taken for another settle attempt: only the lease, the token and the settle
  -- schedule move; its outcome, its finish and when it was recorded stay.
  IF OLD.state = 'unknown' AND NEW.state = 'unknown' THEN
    IF (NEW.receipt, NEW.error_kind, NEW.message, NEW.never_sent, NEW.updated_at_us, NEW.finish_audit_seq)
       IS DISTINCT FROM
       (OLD.receipt, OLD.error_kind, OLD.message, OLD.never_sent, OLD.updated_at_us, OLD.finish_audit_seq) THEN
      RAISE EXCEPTION 'execution %: an unknown outcome changes only to succeeded or failed', OLD.id
        USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
  END IF;
  IF NOT ((OLD.state = 'started' AND NEW.state IN ('started', 'succeeded', 'failed', 'unknown'))
       OR (OLD.state = 'unknown' AND NEW.state IN ('succeeded', 'failed'))) THEN
    RAISE EXCEPTION 'execution %: illegal state transition % -> %', OLD.id, OLD.state, NEW.state
      USING ERRCODE = 'check_violation',
            HINT = 'allowed: started -> succeeded|failed|unknown, unknown -> succeeded|failed; '
                   'a finished row may only set finish_audit_seq once';
  END IF;
  IF NEW.fencing_token <> OLD.fencing_token AND NEW.state <> 'started' THEN
    RAISE EXCEPTION 'execution %: an outcome is recorded under the current fencing token, not a new one', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.never_sent AND NOT (OLD.state = 'started' AND NEW.state = 'failed') THEN
    RAISE EXCEPTION 'execution %: only a started row that fails can be recorded as never sent', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.finish_audit_seq IS NOT NULL THEN
    RAISE EXCEPTION 'execution %: a new state''s finish is not in the audit chain yet (finish_audit_seq must be NULL)', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

-- Rows already unknown are asked once more (a status query only: their idempotency is 'none').
UPDATE executions SET next_settle_us = updated_at_us WHERE state = 'unknown';

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
DROP INDEX executions_unsettled;
ALTER TABLE executions
  DROP CONSTRAINT executions_settle_only_unknown,
  DROP CONSTRAINT executions_never_sent_is_failed,
  DROP COLUMN next_settle_us,
  DROP COLUMN settle_attempts,
  DROP COLUMN never_sent,
  DROP COLUMN idempotency,
  DROP COLUMN fencing_token;
