-- One runtime role per long-running component (DESIGN §6). gatehouse_gateway and gatehouse_controller
-- are created by ensureRoles (roles and memberships are cluster-global) as members of
-- gatehouse_operator, which keeps the privileges both share. Only the controller takes audit
-- checkpoints, so INSERT on audit_checkpoints moves from the shared role to it. SELECT on pgmigrations
-- lets a long-running process check at start that the schema is at the latest migration without
-- migrating it.

-- Up Migration
REVOKE INSERT ON audit_checkpoints FROM gatehouse_operator;
GRANT INSERT ON audit_checkpoints TO gatehouse_controller;
GRANT SELECT ON pgmigrations TO gatehouse_operator;

-- Down Migration
REVOKE SELECT ON pgmigrations FROM gatehouse_operator;
REVOKE INSERT ON audit_checkpoints FROM gatehouse_controller;
GRANT INSERT ON audit_checkpoints TO gatehouse_operator;
