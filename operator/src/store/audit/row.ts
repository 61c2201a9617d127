/**
 * One `audit_log` row (migration 0002) as the store reads and writes it: its column list, the values
 * of a sealed record in that order, and the mapping back. The chain's pure parts (encoding, hashing,
 * checking) live in `core/audit.ts`.
 */
import { type SealedAuditRecord, toHex } from "../../core/audit.ts";
import { toBytes, toSafeInteger } from "../sql-values.ts";

/** The columns of `audit_log`, in the order of {@link auditRowValues}. */
export const AUDIT_COLUMNS = [
  "seq",
  "prev_hash",
  "hash",
  "canonical",
  "kind",
  "actor",
  "outcome",
  "session_uid",
  "execution_id",
  "at_us",
] as const;

/** The column list for SQL: `seq, prev_hash, …`. */
export const AUDIT_COLUMN_LIST = AUDIT_COLUMNS.join(", ");

/** A stored record with its hashes as hex (for display and APIs). */
export interface StoredAuditRecord {
  seq: number;
  prevHash: string;
  hash: string;
  kind: string;
  actor: string;
  outcome: string | null;
  sessionUid: string | null;
  executionId: string | null;
  atMicros: number;
  /** The exact hashed bytes, decoded as UTF-8 JSON text. */
  canonical: string;
}

/** The values of `record` in {@link AUDIT_COLUMNS} order, byte columns as Buffers (what `pg` sends as bytea). */
export function auditRowValues(record: SealedAuditRecord): unknown[] {
  const bytes = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return [
    record.seq,
    bytes(record.prevHash),
    bytes(record.hash),
    bytes(record.canonical),
    record.kind,
    record.actor,
    record.outcome,
    record.sessionUid,
    record.executionId,
    record.atMicros,
  ];
}

/** A selected `audit_log` row as a sealed record. Errors: `internal` for a column of the wrong type. */
export function sealedFromRow(row: Record<string, unknown>): SealedAuditRecord {
  return {
    seq: toSafeInteger(row.seq, "seq"),
    prevHash: toBytes(row.prev_hash, "prev_hash"),
    hash: toBytes(row.hash, "hash"),
    canonical: toBytes(row.canonical, "canonical"),
    kind: String(row.kind),
    actor: String(row.actor),
    outcome: row.outcome === null ? null : String(row.outcome),
    sessionUid: row.session_uid === null ? null : String(row.session_uid),
    executionId: row.execution_id === null ? null : String(row.execution_id),
    atMicros: toSafeInteger(row.at_us, "at_us"),
  };
}

/** A sealed record for display: hashes as hex, the canonical bytes as text. */
export function storedFromSealed(sealed: SealedAuditRecord): StoredAuditRecord {
  return {
    seq: sealed.seq,
    prevHash: toHex(sealed.prevHash),
    hash: toHex(sealed.hash),
    kind: sealed.kind,
    actor: sealed.actor,
    outcome: sealed.outcome,
    sessionUid: sealed.sessionUid,
    executionId: sealed.executionId,
    atMicros: sealed.atMicros,
    canonical: new TextDecoder().decode(sealed.canonical),
  };
}
