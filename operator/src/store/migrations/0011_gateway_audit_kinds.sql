-- The gateway's login appends only the kinds of the invoke path (DESIGN §6; `GATEWAY_AUDIT_KINDS` in
-- core/audit.ts, which a unit test compares with `gateway_kinds` below). Without this, a compromised
-- gateway could append the records the controller decides from — approval.decided, approval.approved,
-- a dispatch's execution.started — and the controller would skip the real ones or act on the forged.
-- The row is the gateway's when the session's login is a member of gatehouse_gateway and not of
-- gatehouse_controller: session_user, not current_user, since a member may SET ROLE gatehouse_operator,
-- which holds the INSERT grant itself. The kind is checked as hashed in `canonical` too, which is what
-- the controller reads back. The gateway executes Auto calls, so its execution.started names no
-- Approval. Owner, migrations and the controller are not restricted.

-- Up Migration
CREATE FUNCTION gatehouse_audit_kind_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  gateway_kinds CONSTANT text[] := ARRAY[
    'invoke.invalid_arguments', 'invoke.denied', 'invoke.repeated', 'invoke.reproposed',
    'approval.requested', 'approval.conflict', 'approval.unknown_recorded',
    'execution.started', 'execution.finished', 'execution.recovering', 'execution.late_answer'
  ];
  hashed jsonb;
BEGIN
  IF NOT pg_has_role(session_user, 'gatehouse_gateway', 'MEMBER')
     OR pg_has_role(session_user, 'gatehouse_controller', 'MEMBER') THEN
    RETURN NEW;
  END IF;
  -- Canonical bytes that are not UTF-8 JSON fail this cast, and so the insert.
  hashed := convert_from(NEW.canonical, 'UTF8')::jsonb;
  IF NOT (NEW.kind = ANY (gateway_kinds)) THEN
    RAISE EXCEPTION 'gatehouse_gateway (login %) may not append audit records of kind %', session_user, NEW.kind
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'The gateway appends only: ' || array_to_string(gateway_kinds, ', ') || '.',
            HINT = 'Decisions, ends and dispatches of Approvals are the controller''s to append.';
  END IF;
  IF (hashed ->> 'kind') IS DISTINCT FROM NEW.kind THEN
    RAISE EXCEPTION 'gatehouse_gateway (login %) may not append a record of kind % under kind column %',
      session_user, coalesce(hashed ->> 'kind', 'null'), NEW.kind
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW.kind = 'execution.started'
     AND (coalesce(hashed #> '{payload,approval}', 'null'::jsonb) <> 'null'::jsonb
          OR (hashed -> 'payload') ? 'approvalRecord') THEN
    RAISE EXCEPTION 'gatehouse_gateway (login %) may not append an execution.started that names an Approval',
      session_user
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'The controller dispatches approved calls; the gateway starts only Auto calls.';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER audit_log_gateway_kinds
  BEFORE INSERT ON audit_log
  FOR EACH ROW EXECUTE FUNCTION gatehouse_audit_kind_guard();

-- Down Migration
DROP TRIGGER audit_log_gateway_kinds ON audit_log;
DROP FUNCTION gatehouse_audit_kind_guard();
