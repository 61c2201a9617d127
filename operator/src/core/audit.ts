/**
 * The audit chain's pure parts (DESIGN §6): how a record is encoded, hashed and verified. The SQL lives
 * in `store/audit-log.ts`; everything here is deterministic and unit-tested.
 *
 * Encoding: the canonical bytes of a record are the RFC 8785 JSON of
 *   { v: 1, seq, prevHash: <hex>, kind, actor, outcome|null, sessionUid|null, executionId|null,
 *     atMicros, payload }
 * with timestamps as integer microseconds. hash = sha256(prevHash || canonicalBytes); the first
 * record's prevHash is 32 zero bytes. The exact hashed bytes are stored, so verification never depends
 * on how the database re-serializes JSON.
 */
import { canonicalBytes, canonicalJson, type JsonObject, type JsonValue, sha256Bytes } from "./canonical.ts";
import { GatehouseError } from "./errors.ts";
import type { AuditEntry, AuditOutcome, ExecutionState } from "./ports.ts";

/** Audit record kinds Core emits. Other components may add their own dotted kinds. */
export const AuditKind = {
  invalidArguments: "invoke.invalid_arguments",
  denied: "invoke.denied",
  repeated: "invoke.repeated",
  /** A write proposed again identically, answered from or run under an earlier record (core/reproposal.ts). */
  reproposed: "invoke.reproposed",
  approvalRequested: "approval.requested",
  approvalConflict: "approval.conflict",
  approvalRefused: "approval.refused",
  // An Approval's lifecycle (core/approval-lifecycle.ts): each decision observed, then one end.
  approvalDecided: "approval.decided",
  approvalApproved: "approval.approved",
  approvalRejected: "approval.rejected",
  approvalExpired: "approval.expired",
  approvalCancelled: "approval.cancelled",
  approvalStale: "approval.stale",
  approvalFailed: "approval.failed",
  decisionIgnored: "approval.decision_ignored",
  /** Appended once by the migration to this version: requests before it have no recorded end. */
  lifecycleMarker: "audit.lifecycle_marker",
  executionStarted: "execution.started",
  executionFinished: "execution.finished",
  executionRecovering: "execution.recovering",
  /** An unknown outcome asked again (status query, or a re-invoke by key) by the leader's sweep. */
  executionSettling: "execution.settling",
  /** A provider's answer that arrived after a later holder took the execution over. */
  executionLateAnswer: "execution.late_answer",
  /** A person settled an unknown outcome (core/resolution.ts). */
  executionResolved: "execution.resolved",
  /** An Approval in phase Unknown was created to record an Auto call of unknown outcome. */
  approvalUnknownRecorded: "approval.unknown_recorded",
} as const;

/**
 * The kinds the gateway program appends (DESIGN §6), from everything its `POST /v1/invoke` reaches
 * (`core/invoke.ts`): its decisions, the Approval it requests or finds squatted, the Approval that
 * records an Auto call of unknown outcome, and an Auto call's execution — started, finished, recovered
 * when a repeat finds its claimer gone, answered after a takeover. Its other routes write the session's
 * transcript, not the chain. Migration 0011 refuses a gateway login any other kind, and an
 * `execution.started` that names an Approval: deciding, ending and dispatching an Approval, settling
 * and resolving executions are the controller's.
 */
export const GATEWAY_AUDIT_KINDS: readonly string[] = [
  AuditKind.invalidArguments,
  AuditKind.denied,
  AuditKind.repeated,
  AuditKind.reproposed,
  AuditKind.approvalRequested,
  AuditKind.approvalConflict,
  AuditKind.approvalUnknownRecorded,
  AuditKind.executionStarted,
  AuditKind.executionFinished,
  AuditKind.executionRecovering,
  AuditKind.executionLateAnswer,
];

/** The audit outcome of an execution in `state`: started → pending, succeeded → success, … */
export function auditOutcomeOf(state: ExecutionState): AuditOutcome {
  const outcomes = {
    started: "pending",
    succeeded: "success",
    failed: "failure",
    unknown: "unknown",
  } as const;
  return outcomes[state];
}

/** Format version written into every record (`v`). */
export const AUDIT_RECORD_VERSION = 1;

/** `prevHash` of the first record: 32 zero bytes. */
export const GENESIS_PREV_HASH: Uint8Array = new Uint8Array(32);

/** A record as stored: the chained fields, the exact hashed bytes and the queryable columns. */
export interface SealedAuditRecord {
  seq: number;
  prevHash: Uint8Array;
  hash: Uint8Array;
  canonical: Uint8Array;
  kind: string;
  actor: string;
  outcome: string | null;
  sessionUid: string | null;
  executionId: string | null;
  atMicros: number;
}

/** The chain head: the last record's seq and hash (seq 0 and the genesis hash for an empty chain). */
export interface ChainHead {
  seq: number;
  hash: Uint8Array;
}

/** The head of an empty chain. */
export const EMPTY_CHAIN_HEAD: ChainHead = { seq: 0, hash: GENESIS_PREV_HASH };

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** The JSON object a record's canonical bytes encode. */
function recordObject(seq: number, prevHash: Uint8Array, entry: AuditEntry): JsonObject {
  return {
    v: AUDIT_RECORD_VERSION,
    seq,
    prevHash: toHex(prevHash),
    kind: entry.kind,
    actor: entry.actor,
    outcome: entry.outcome ?? null,
    sessionUid: entry.sessionUid ?? null,
    executionId: entry.executionId ?? null,
    atMicros: entry.atMicros,
    payload: entry.payload,
  };
}

/** sha256(prevHash || canonical): the chain link (DESIGN §6). */
export function chainHash(prevHash: Uint8Array, canonical: Uint8Array): Uint8Array {
  return sha256Bytes(prevHash, canonical);
}

/**
 * Checks that `entry` can be encoded and stored before it is queued: a safe-integer timestamp, text
 * fields without U+0000 (Postgres `text` cannot hold it), a JSON-only payload.
 * Errors: `GatehouseError("invalid_arguments")` for a bad time or text field; `GatehouseError
 * ("internal")` from canonicalization (lone surrogate, NaN, …).
 */
export function assertEncodable(entry: AuditEntry): void {
  if (!Number.isSafeInteger(entry.atMicros)) {
    throw new GatehouseError("invalid_arguments", `atMicros ${entry.atMicros} is not a safe integer`);
  }
  const texts = {
    kind: entry.kind,
    actor: entry.actor,
    outcome: entry.outcome,
    sessionUid: entry.sessionUid,
    executionId: entry.executionId,
  };
  for (const [field, value] of Object.entries(texts)) {
    if (value?.includes("\u0000")) {
      throw new GatehouseError(
        "invalid_arguments",
        `audit entry ${field} contains U+0000, which Postgres text cannot store`,
      );
    }
  }
  canonicalJson(recordObject(1, GENESIS_PREV_HASH, entry));
}

/** Seals `entry` as the record after `head`: assigns seq, links prevHash, encodes and hashes it. */
export function sealAuditRecord(head: ChainHead, entry: AuditEntry): SealedAuditRecord {
  const seq = head.seq + 1;
  const canonical = canonicalBytes(recordObject(seq, head.hash, entry));
  return {
    seq,
    prevHash: head.hash,
    hash: chainHash(head.hash, canonical),
    canonical,
    kind: entry.kind,
    actor: entry.actor,
    outcome: entry.outcome ?? null,
    sessionUid: entry.sessionUid ?? null,
    executionId: entry.executionId ?? null,
    atMicros: entry.atMicros,
  };
}

/** Decodes a record's canonical bytes back into an entry plus its chained fields. */
export function decodeAuditRecord(canonical: Uint8Array): {
  seq: number;
  prevHash: string;
  entry: AuditEntry;
} {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(canonical);
  const object = JSON.parse(text) as Record<string, JsonValue>;
  return {
    seq: object.seq as number,
    prevHash: object.prevHash as string,
    entry: {
      kind: object.kind as string,
      actor: object.actor as string,
      ...(object.outcome !== null && object.outcome !== undefined
        ? { outcome: object.outcome as AuditOutcome }
        : {}),
      ...(object.sessionUid !== null ? { sessionUid: object.sessionUid as string } : {}),
      ...(object.executionId !== null ? { executionId: object.executionId as string } : {}),
      atMicros: object.atMicros as number,
      payload: object.payload as JsonObject,
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Verification

/** Why a stored record fails verification. */
export type AuditProblemReason =
  | "undecodable" // canonical bytes are not UTF-8 JSON of the record shape
  | "not_canonical" // the bytes parse but are not their own RFC 8785 form
  | "hash_mismatch" // hash ≠ sha256(prev_hash || canonical)
  | "broken_link" // prev_hash ≠ the previous record's hash (or genesis for seq 1)
  | "column_mismatch"; // a queryable column differs from the canonical bytes

/** The first record that failed, and why. */
export interface AuditProblem {
  seq: number;
  reason: AuditProblemReason;
  message: string;
}

/** A run of missing sequence numbers: `from`..`to` inclusive are absent. */
export interface SequenceGap {
  from: number;
  to: number;
}

/** A checkpoint of the chain head (from `audit_checkpoints` or the ConfigMap copy). */
export interface AuditCheckpoint {
  seq: number;
  /** Hex of the hash of record `seq` (genesis hash for seq 0). */
  headHash: string;
  atMicros: number;
}

/** How the chain compares with a checkpoint. */
export interface CheckpointCheck {
  checkpoint: AuditCheckpoint;
  status: "ok" | "hash_mismatch" | "missing";
  message: string;
}

/** Result of verifying a whole chain. `ok` iff no bad row, no gap and every checkpoint check is `ok`. */
export interface AuditVerifyReport {
  ok: boolean;
  /** Records examined. */
  records: number;
  head: { seq: number; hash: string };
  firstBadRow?: AuditProblem;
  /** How many records failed (each counted once, by its first problem). */
  badRows: number;
  gaps: SequenceGap[];
  checkpoints: CheckpointCheck[];
}

/**
 * Streaming verifier: feed records in ascending `seq` order with {@link ChainVerifier.push}, then call
 * {@link ChainVerifier.finish}. Memory is O(number of checkpoints), so a chain of any length verifies
 * in batches. After a bad record the verifier continues from the record's stored hash, so one
 * tampered row is reported once rather than poisoning every later row.
 */
export class ChainVerifier {
  private head: ChainHead;
  private records = 0;
  private badRows = 0;
  private firstBadRow: AuditProblem | undefined;
  private readonly gaps: SequenceGap[] = [];
  private readonly expected = new Map<number, AuditCheckpoint[]>();
  private readonly seen = new Map<number, string>();

  /**
   * `checkpoints`: every checkpoint to compare with (the last stored one, plus outside copies).
   * `start`: the record before the first one pushed, taken on trust (default: the empty chain, so
   * the first record must be seq 1 linked to the genesis hash). Checkpoints below `start.seq` cannot
   * be checked and are ignored.
   */
  constructor(checkpoints: AuditCheckpoint[] = [], start: ChainHead = EMPTY_CHAIN_HEAD) {
    this.head = start;
    for (const checkpoint of checkpoints) {
      if (checkpoint.seq < start.seq) continue;
      const list = this.expected.get(checkpoint.seq) ?? [];
      list.push(checkpoint);
      this.expected.set(checkpoint.seq, list);
    }
    if (this.expected.has(start.seq)) this.seen.set(start.seq, toHex(start.hash));
  }

  /** Checks one record against its predecessor; returns its problem, if any. */
  push(record: SealedAuditRecord): AuditProblem | undefined {
    this.records++;
    if (record.seq !== this.head.seq + 1) {
      this.gaps.push({ from: this.head.seq + 1, to: record.seq - 1 });
    }
    const problem = checkRecord(record, this.head);
    if (problem) {
      this.badRows++;
      this.firstBadRow ??= problem;
    }
    if (this.expected.has(record.seq)) this.seen.set(record.seq, toHex(record.hash));
    this.head = { seq: record.seq, hash: record.hash };
    return problem;
  }

  /** The report after the last record. */
  finish(): AuditVerifyReport {
    const checkpoints: CheckpointCheck[] = [];
    for (const [seq, list] of this.expected) {
      for (const checkpoint of list)
        checkpoints.push(compareCheckpoint(checkpoint, this.seen.get(seq), this.head));
    }
    const report: AuditVerifyReport = {
      ok: this.badRows === 0 && this.gaps.length === 0 && checkpoints.every((c) => c.status === "ok"),
      records: this.records,
      head: { seq: this.head.seq, hash: toHex(this.head.hash) },
      badRows: this.badRows,
      gaps: this.gaps,
      checkpoints,
    };
    if (this.firstBadRow) report.firstBadRow = this.firstBadRow;
    return report;
  }
}

function compareCheckpoint(
  checkpoint: AuditCheckpoint,
  actual: string | undefined,
  head: ChainHead,
): CheckpointCheck {
  if (actual === undefined) {
    const message =
      head.seq < checkpoint.seq
        ? `checkpoint at seq ${checkpoint.seq} but the chain ends at seq ${head.seq}: records were removed`
        : `checkpoint at seq ${checkpoint.seq} but that record is missing`;
    return { checkpoint, status: "missing", message };
  }
  if (actual !== checkpoint.headHash) {
    return {
      checkpoint,
      status: "hash_mismatch",
      message: `record ${checkpoint.seq} hashes to ${actual}, the checkpoint says ${checkpoint.headHash}: the chain was rewritten`,
    };
  }
  return { checkpoint, status: "ok", message: `record ${checkpoint.seq} matches the checkpoint` };
}

/** The first problem of one record given the previous head, or undefined. */
export function checkRecord(record: SealedAuditRecord, previous: ChainHead): AuditProblem | undefined {
  const seq = record.seq;
  if (!bytesEqual(record.prevHash, previous.hash)) {
    const expected =
      previous.seq === 0 ? "the genesis hash (32 zero bytes)" : `the hash of record ${previous.seq}`;
    return { seq, reason: "broken_link", message: `prev_hash is not ${expected}` };
  }
  if (!bytesEqual(record.hash, chainHash(record.prevHash, record.canonical))) {
    return {
      seq,
      reason: "hash_mismatch",
      message: "hash ≠ sha256(prev_hash || canonical): the bytes were changed",
    };
  }
  let text: string;
  let object: Record<string, JsonValue>;
  try {
    text = UTF8.decode(record.canonical);
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return { seq, reason: "undecodable", message: "canonical bytes are not a JSON object" };
    }
    object = parsed as Record<string, JsonValue>;
  } catch (error) {
    return { seq, reason: "undecodable", message: `canonical bytes are not UTF-8 JSON: ${String(error)}` };
  }
  let recanonical: string;
  try {
    recanonical = canonicalJson(object);
  } catch (error) {
    return {
      seq,
      reason: "undecodable",
      message: `canonical bytes cannot be canonicalized: ${String(error)}`,
    };
  }
  if (recanonical !== text) {
    return { seq, reason: "not_canonical", message: "canonical bytes are not in RFC 8785 form" };
  }
  const columns: Array<[string, unknown, unknown]> = [
    ["seq", record.seq, object.seq],
    ["prev_hash", toHex(record.prevHash), object.prevHash],
    ["kind", record.kind, object.kind],
    ["actor", record.actor, object.actor],
    ["outcome", record.outcome, object.outcome ?? null],
    ["session_uid", record.sessionUid, object.sessionUid ?? null],
    ["execution_id", record.executionId, object.executionId ?? null],
    ["at_us", record.atMicros, object.atMicros],
  ];
  for (const [column, stored, hashed] of columns) {
    if (stored !== hashed) {
      return {
        seq,
        reason: "column_mismatch",
        message: `column ${column} is ${JSON.stringify(stored)} but the hashed record says ${JSON.stringify(hashed)}`,
      };
    }
  }
  return undefined;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}
