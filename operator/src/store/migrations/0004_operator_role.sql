-- The role the operator runs as (DESIGN §6): migrations run as the owner, the operator as
-- gatehouse_operator, which may only INSERT/SELECT the audit tables. Roles are cluster-global, so the
-- role is created only if missing, tolerating a concurrent creator (another database's migration).
-- It is created NOLOGIN; credentials are provisioned out of band (store/operator-role.ts does it for
-- local and test clusters). The role is kept on down-migration: other databases may use it.

-- Up Migration
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'gatehouse_operator') THEN
    BEGIN
      CREATE ROLE gatehouse_operator NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration: fine
    END;
  END IF;
END;
$$;

GRANT USAGE ON SCHEMA public TO gatehouse_operator;
GRANT SELECT, INSERT ON audit_log, audit_checkpoints TO gatehouse_operator;
GRANT SELECT, INSERT, UPDATE ON executions TO gatehouse_operator;
GRANT SELECT, INSERT ON session_events TO gatehouse_operator;

-- Down Migration
REVOKE ALL ON audit_log, audit_checkpoints, executions, session_events FROM gatehouse_operator;
REVOKE USAGE ON SCHEMA public FROM gatehouse_operator;
