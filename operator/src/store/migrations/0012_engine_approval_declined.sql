-- The gateway may also append engine.approval_declined: an agent reports that its engine asked for a
-- person's decision or input (Codex's command, file-change and permission approvals, its questions to
-- the user) and that it declined it; the gateway records the report in the chain (DESIGN §6). The
-- guard is migration 0011's with that kind added to `gateway_kinds` (`GATEWAY_AUDIT_KINDS` in
-- core/audit.ts, which a unit test compares with the newest list).

-- Up Migration
CREATE OR REPLACE FUNCTION gatehouse_audit_kind_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  gateway_kinds CONSTANT text[] := ARRAY[
    'invoke.invalid_arguments', 'invoke.denied', 'invoke.repeated', 'invoke.reproposed',
    'approval.requested', 'approval.conflict', 'approval.unknown_recorded',
    'execution.started', 'execution.finished', 'execution.recovering', 'execution.late_answer',
    'engine.approval_declined'
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

-- Down Migration
CREATE OR REPLACE FUNCTION gatehouse_audit_kind_guard() RETURNS trigger
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
