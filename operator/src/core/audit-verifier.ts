/**
 * Checking an audit chain (DESIGN §6): each record against the one before it, sequence gaps, and the
 * chain's head against the checkpoints kept outside; the report gatehouse-audit verify prints.
 */

import {
  type ChainHead,
  chainHash,
  EMPTY_CHAIN_HEAD,
  type SealedAuditRecord,
  toHex,
  UTF8,
} from "./audit-record.ts";
import { canonicalJson, isCanonicalText, type JsonValue } from "./canonical.ts";

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
    return this.pushChecked(record, checkLink(record, this.head) ? undefined : checkContent(record));
  }

  /**
   * Like {@link push} for a record whose {@link checkContent} was computed elsewhere (another
   * thread): only its link, seq and checkpoints are checked here, so the report is the same.
   */
  pushChecked(record: ChainLink, contentProblem: AuditProblem | undefined): AuditProblem | undefined {
    this.records++;
    if (record.seq !== this.head.seq + 1) {
      this.gaps.push({ from: this.head.seq + 1, to: record.seq - 1 });
    }
    const problem = checkLink(record, this.head) ?? contentProblem;
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

export function compareCheckpoint(
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

/** What linking a record needs: its seq, its stored prev_hash and its stored hash. */
export type ChainLink = Pick<SealedAuditRecord, "seq" | "prevHash" | "hash">;

/** The first problem of one record given the previous head, or undefined. */
export function checkRecord(record: SealedAuditRecord, previous: ChainHead): AuditProblem | undefined {
  return checkLink(record, previous) ?? checkContent(record);
}

/** `broken_link` when `record.prevHash` is not the previous record's hash (checked before the content). */
export function checkLink(record: ChainLink, previous: ChainHead): AuditProblem | undefined {
  if (bytesEqual(record.prevHash, previous.hash)) return undefined;
  const expected =
    previous.seq === 0 ? "the genesis hash (32 zero bytes)" : `the hash of record ${previous.seq}`;
  return { seq: record.seq, reason: "broken_link", message: `prev_hash is not ${expected}` };
}

/**
 * The first problem of one record on its own — its hash over its stored prev_hash, its bytes, their
 * RFC 8785 form, its columns — or undefined. Needs no other record, so records are checked in any
 * order or in parallel; only {@link checkLink} is sequential.
 */
export function checkContent(record: SealedAuditRecord): AuditProblem | undefined {
  const seq = record.seq;
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
  if (!isCanonicalText(text, object)) {
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

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}
