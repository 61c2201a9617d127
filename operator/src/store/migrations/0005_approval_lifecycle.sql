-- From this version on, every Approval's lifecycle is in the audit chain: each approval.requested
-- record is followed by its decisions and exactly one end (approval.approved, .rejected, .expired,
-- .cancelled, .failed). Requests appended by earlier versions have no such end; this migration
-- appends one marker record (kind audit.lifecycle_marker) after them, so checks of "every request
-- has an end" start there. A fresh chain needs no marker: nothing before it is exempt.
--
-- The record is chained exactly as store/audit-append.ts chains one: under the chain's advisory lock,
-- after the current head, its canonical bytes the RFC 8785 JSON of the record (keys in UTF-16 order,
-- integers as plain digits), hash = sha256(prev_hash || canonical). verify() re-checks all of it.

-- Up Migration
DO $$
DECLARE
  head_seq  bigint;
  head_hash bytea;
  at_micros bigint;
  record    bytea;
BEGIN
  PERFORM pg_advisory_xact_lock(1195463749, 1);
  SELECT seq, hash INTO head_seq, head_hash FROM audit_log ORDER BY seq DESC LIMIT 1;
  IF head_seq IS NULL OR EXISTS (SELECT 1 FROM audit_log WHERE kind = 'audit.lifecycle_marker') THEN
    RETURN;
  END IF;
  at_micros := floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
  record := convert_to(format(
    '{"actor":"gatehouse","atMicros":%s,"executionId":null,"kind":"audit.lifecycle_marker",'
    '"outcome":null,"payload":{"exempt":"approval.requested records before this one have no recorded end",'
    '"version":1},"prevHash":"%s","seq":%s,"sessionUid":null,"v":1}',
    at_micros, encode(head_hash, 'hex'), head_seq + 1), 'UTF8');
  INSERT INTO audit_log (seq, prev_hash, hash, canonical, kind, actor, outcome, session_uid, execution_id, at_us)
  VALUES (head_seq + 1, head_hash, sha256(head_hash || record), record, 'audit.lifecycle_marker',
          'gatehouse', NULL, NULL, NULL, at_micros);
END;
$$;

-- Down Migration
-- The marker stays: audit records are append-only evidence.
SELECT 1;
