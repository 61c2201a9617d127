-- Session budgets (DESIGN §4 step 6, §6): what each call reserved of its session's limits, before it
-- was approved or executed. One row per execution identity and resource ('tool_call' counts against
-- maxToolCalls, 'write' against maxWrites). 'reserved' until the call's fate is known, then
-- 'consumed' (it ran, or it was handed to approvers) or 'released' (it consumed nothing); reserved
-- and consumed rows count. Reserving happens under a per-session advisory lock
-- (store/budget-ledger.ts), so concurrent calls of one session never reserve past a limit. `amount`
-- lets later quotas reserve more than one unit of a resource; the session limits reserve 1.

-- Up Migration
CREATE TABLE budget_reservations (
  session_uid    text NOT NULL CHECK (length(session_uid) BETWEEN 1 AND 128),
  execution_id   text NOT NULL CHECK (length(execution_id) BETWEEN 1 AND 128),
  resource       text NOT NULL CHECK (resource IN ('tool_call', 'write')),
  amount         bigint NOT NULL DEFAULT 1 CHECK (amount >= 1),
  state          text NOT NULL CHECK (state IN ('reserved', 'consumed', 'released')),
  reserved_at_us bigint NOT NULL,
  -- When the row became consumed or released; NULL while reserved.
  settled_at_us  bigint,
  PRIMARY KEY (execution_id, resource),
  CONSTRAINT budget_reservations_settled CHECK ((state = 'reserved') = (settled_at_us IS NULL))
);

CREATE INDEX budget_reservations_counting ON budget_reservations (session_uid, resource)
  WHERE state <> 'released';

-- Allowed: reserved → consumed | released, released → reserved (the same call reserved anew). A
-- consumed row is final; what a row is for never changes.
CREATE FUNCTION gatehouse_guard_budget_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.session_uid, NEW.execution_id, NEW.resource, NEW.amount)
     IS DISTINCT FROM (OLD.session_uid, OLD.execution_id, OLD.resource, OLD.amount) THEN
    RAISE EXCEPTION 'budget reservation %/%: what it reserves is immutable', OLD.execution_id, OLD.resource
      USING ERRCODE = 'check_violation';
  END IF;
  IF NOT ((OLD.state = 'reserved' AND NEW.state IN ('consumed', 'released'))
       OR (OLD.state = 'released' AND NEW.state = 'reserved')) THEN
    RAISE EXCEPTION 'budget reservation %/%: illegal state transition % -> %',
      OLD.execution_id, OLD.resource, OLD.state, NEW.state
      USING ERRCODE = 'check_violation',
            HINT = 'allowed: reserved -> consumed|released, released -> reserved';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER budget_reservations_guard_update
  BEFORE UPDATE ON budget_reservations
  FOR EACH ROW EXECUTE FUNCTION gatehouse_guard_budget_update();

REVOKE ALL ON budget_reservations FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON budget_reservations TO gatehouse_operator;

-- Down Migration
DROP TABLE budget_reservations;
DROP FUNCTION gatehouse_guard_budget_update();
