-- Re-proposals and resolutions (DESIGN §4 step 4b, §6).
--
-- never_sent (migration 0007): true only on a failed row whose request certainly never reached the provider. The same
-- action proposed again may then run again under that row's idempotency key, so the key is unique
-- only among the other rows: a partial unique index replaces the UNIQUE constraint. A row leaves the
-- index when it fails never-sent (one UPDATE sets state and never_sent) and never comes back (failed
-- is final), so at any time at most one row that may have reached the provider holds a key, and a
-- claim (INSERT … ON CONFLICT DO NOTHING, which honours partial unique indexes) of a key held by such
-- a row still conflicts.
--
-- resolved_by / resolution_reason: an unknown outcome settled by a person (kubectl gatehouse resolve)
-- rather than by a receipt. Set only on the transition unknown → succeeded | failed, and never after.
--
-- executions_by_action: the lookup of a session's earlier executions of the same action.
-- executions_unknown_auto: the leader's sweep for Auto calls whose outcome is unknown.

-- Up Migration
ALTER TABLE executions DROP CONSTRAINT executions_idempotency_key_key;
CREATE UNIQUE INDEX executions_idempotency_key_live ON executions (idempotency_key)
  WHERE NOT (state = 'failed' AND never_sent);

CREATE INDEX executions_by_action ON executions (session_uid, capability, request_digest, created_at_us);
-- Auto calls of unknown outcome, which the leader gives an Approval in phase Unknown.
CREATE INDEX executions_unknown_auto ON executions (updated_at_us) WHERE state = 'unknown' AND approval_name IS NULL;

ALTER TABLE executions
  ADD COLUMN resolved_by text CHECK (length(resolved_by) BETWEEN 1 AND 253),
  ADD COLUMN resolution_reason text CHECK (length(resolution_reason) <= 1024),
  ADD CONSTRAINT executions_resolution_is_whole
    CHECK ((resolved_by IS NULL) = (resolution_reason IS NULL)),
  ADD CONSTRAINT executions_resolution_is_final
    CHECK (resolved_by IS NULL OR state IN ('succeeded', 'failed'));

-- A trigger of its own beside gatehouse_guard_execution_update, which keeps guarding the states.
CREATE FUNCTION gatehouse_guard_execution_resolution() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.resolved_by, NEW.resolution_reason) IS DISTINCT FROM (OLD.resolved_by, OLD.resolution_reason)
     AND NOT (OLD.state = 'unknown' AND NEW.state IN ('succeeded', 'failed') AND OLD.resolved_by IS NULL) THEN
    RAISE EXCEPTION 'execution %: a resolution is recorded only when an unknown outcome is settled, once', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER executions_guard_resolution
  BEFORE UPDATE ON executions
  FOR EACH ROW EXECUTE FUNCTION gatehouse_guard_execution_resolution();

-- Down Migration
DROP TRIGGER executions_guard_resolution ON executions;
DROP FUNCTION gatehouse_guard_execution_resolution();
ALTER TABLE executions
  DROP CONSTRAINT executions_resolution_is_final,
  DROP CONSTRAINT executions_resolution_is_whole,
  DROP COLUMN resolution_reason,
  DROP COLUMN resolved_by;
DROP INDEX executions_unknown_auto;
DROP INDEX executions_by_action;
DROP INDEX executions_idempotency_key_live;
-- Fails while a key is shared by a never-sent failure and its re-run: that history has no older form.
ALTER TABLE executions ADD CONSTRAINT executions_idempotency_key_key UNIQUE (idempotency_key);
