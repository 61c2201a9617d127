/**
 * One audit record (DESIGN §6): its canonical encoding, sealing onto the chain's head with the
 * previous record's hash, and decoding it back. The kinds are in audit.ts; checking a chain is
 * audit-verifier.ts.
 */
import { canonicalBytes, canonicalJson, type JsonObject, type JsonValue, sha256Bytes } from "./canonical.ts";
import { GatehouseError } from "./errors.ts";
import type { AuditEntry, AuditOutcome } from "./ports.ts";

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
export function recordObject(seq: number, prevHash: Uint8Array, entry: AuditEntry): JsonObject {
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

export const UTF8 = new TextDecoder("utf-8", { fatal: true });
