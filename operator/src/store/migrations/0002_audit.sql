-- Tamper-evident audit chain (DESIGN §6). Each row stores the exact RFC 8785 bytes it hashes
-- (`canonical`); hash = sha256(prev_hash || canonical); the first row's prev_hash is 32 zero bytes.
-- UNIQUE(prev_hash) is the fork guard: no record can have two successors. The queryable columns
-- repeat fields of `canonical` and are compared with it by verify(). Rows can only be inserted:
-- gatehouse_operator is granted INSERT and SELECT only, row triggers block UPDATE/DELETE, and a
-- statement-level trigger blocks TRUNCATE (row triggers do not fire on TRUNCATE). Neither binds a
-- superuser or the owner, who can disable triggers: verify() and the checkpoints kept outside
-- Postgres are what detect their edits.

-- Up Migration
CREATE TABLE audit_log (
  seq          bigint PRIMARY KEY CHECK (seq >= 1),
  prev_hash    bytea NOT NULL CHECK (octet_length(prev_hash) = 32),
  hash         bytea NOT NULL CHECK (octet_length(hash) = 32),
  canonical    bytea NOT NULL,
  kind         text NOT NULL,
  actor        text NOT NULL,
  -- success | failure | pending | unknown (DMTF CADF outcome), NULL when the writer gave none.
  outcome      text CHECK (outcome IN ('success', 'failure', 'pending', 'unknown')),
  session_uid  text,
  execution_id text,
  at_us        bigint NOT NULL,
  CONSTRAINT audit_log_fork_guard UNIQUE (prev_hash),
  CONSTRAINT audit_log_genesis CHECK ((seq = 1) = (prev_hash = decode(repeat('00', 32), 'hex'))),
  CONSTRAINT audit_log_hash_links CHECK (hash = sha256(prev_hash || canonical))
);

CREATE INDEX audit_log_by_session ON audit_log (session_uid, seq) WHERE session_uid IS NOT NULL;
CREATE INDEX audit_log_by_execution ON audit_log (execution_id, seq) WHERE execution_id IS NOT NULL;
CREATE INDEX audit_log_by_kind ON audit_log (kind, at_us);

-- Checkpoints of the chain head (seq, head hash, time), also published outside Postgres (the ConfigMap
-- gatehouse-audit-checkpoints) so that truncation or a rewrite of audit_log is detectable from
-- outside it. seq 0 = the empty chain (head hash = 32 zero bytes).
CREATE TABLE audit_checkpoints (
  seq       bigint PRIMARY KEY CHECK (seq >= 0),
  head_hash bytea NOT NULL CHECK (octet_length(head_hash) = 32),
  at_us     bigint NOT NULL
);

CREATE FUNCTION gatehouse_refuse_audit_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'gatehouse audit tables are append-only: % on % is not allowed', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'Audit rows are evidence; append a correcting record instead.';
END;
$$;

CREATE TRIGGER audit_log_append_only
  BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION gatehouse_refuse_audit_change();
CREATE TRIGGER audit_log_no_truncate
  BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_refuse_audit_change();
CREATE TRIGGER audit_checkpoints_append_only
  BEFORE UPDATE OR DELETE ON audit_checkpoints
  FOR EACH ROW EXECUTE FUNCTION gatehouse_refuse_audit_change();
CREATE TRIGGER audit_checkpoints_no_truncate
  BEFORE TRUNCATE ON audit_checkpoints
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_refuse_audit_change();

REVOKE ALL ON audit_log, audit_checkpoints FROM PUBLIC;
GRANT SELECT, INSERT ON audit_log, audit_checkpoints TO gatehouse_operator;

-- Down Migration
DROP TABLE audit_checkpoints;
DROP TABLE audit_log;
DROP FUNCTION gatehouse_refuse_audit_change();
