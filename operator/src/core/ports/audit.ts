/** Audit: the hash-chained log Core appends every decision and outcome to; ../ports.ts gathers every port. */

import type { JsonObject } from "../canonical.ts";

// ---------------------------------------------------------------------------------------------------
// Audit

/**
 * One audit record before it is chained (DESIGN §6). `payload` holds digests, ids and decisions —
 * never secrets and never argument values (those live in `executions`).
 */
export interface AuditEntry {
  /** Dotted event name, e.g. `invoke.denied`, `execution.finished` (see `AuditKind` in `core/audit.ts`). */
  kind: string;
  /** Who acted: the session's subject for agent calls, `gatehouse` for Core's own transitions. */
  actor: string;
  /**
   * What came of the audited step, in DMTF CADF's terms: `success`, `failure`, `pending` (waits for
   * an approval or a provider) or `unknown` (nobody knows whether it happened). Stored as a
   * queryable column; absent → null.
   */
  outcome?: AuditOutcome;
  sessionUid?: string;
  executionId?: string;
  atMicros: number;
  payload: JsonObject;
}

/** The outcome vocabulary of audit records (DMTF CADF, DSP0262 "outcome"). */
export type AuditOutcome = "success" | "failure" | "pending" | "unknown";

/** Where an appended record sits in the chain: its sequence number (1-based) and hash (lower-case hex). */
export interface AppendedRecord {
  seq: number;
  hash: string;
}

/** A record read back from the chain: where it sits and what it says. */
export interface ChainedRecord extends AuditEntry, AppendedRecord {}

/** Appends to and reads from the tamper-evident audit chain (backed by Postgres `audit_log`). */
export interface AuditLog {
  /** Appends `entry`; resolves once it is durable. */
  append(entry: AuditEntry): Promise<AppendedRecord>;
  /** Appends `entries` in order, in one transaction when they fit; resolves once all are durable. */
  appendAll(entries: readonly AuditEntry[]): Promise<AppendedRecord[]>;
  /**
   * Every record whose `executionId` is `executionId`, ascending by seq: one proposed call's history
   * (its request, decisions, end, execution). Errors: the store's.
   */
  recordsOf(executionId: string): Promise<ChainedRecord[]>;
  /**
   * The records of `kind` appended at or after `sinceMicros`, newest first, at most `limit` (a leader
   * sweep's bounded look-back). Errors: the store's.
   */
  recentOfKind(kind: string, sinceMicros: number, limit: number): Promise<ChainedRecord[]>;
}
