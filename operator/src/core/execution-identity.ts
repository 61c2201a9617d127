/**
 * The execution identity (DESIGN §4 step 2): a hash of (session uid, turn, position, capability id,
 * arguments digest) — never the model's call id, which models reuse across turns. One identity = one
 * execution row = at most one Approval = at most one provider effect.
 *
 * identity = sha256( RFC 8785 JSON of {v:1, sessionUid, turn, position, capability, argumentsDigest} )
 * Canonical JSON rather than string concatenation, so no choice of field values can collide by
 * shifting a delimiter.
 */
import { canonicalJson, sha256Hex } from "./canonical.ts";

/** What identifies one proposed action. */
export interface ExecutionIdentityInput {
  sessionUid: string;
  /** 0-based turn of the session. */
  turn: number;
  /** 0-based position of the tool call within the turn. */
  position: number;
  /** Capability id (`aps.schedule.publish`). */
  capability: string;
  /** sha256 hex of the canonical arguments (or of the raw text when they do not parse; see invoke.ts). */
  argumentsDigest: string;
}

/** The identity and the names derived from it. */
export interface ExecutionIdentity {
  /** Full sha256 hex (64). */
  hash: string;
  /** First 40 hex (160 bits): the execution id — the `executions.id`, fits a label value (≤ 63). */
  executionId: string;
  /** Sent to the provider; stable across retries of this execution. */
  idempotencyKey: string;
  /** `apr-<first 20 hex>`: the Approval's name (a valid DNS-1123 subdomain, 24 characters). */
  approvalName: string;
}

/** Length of an execution id in hex characters. */
export const EXECUTION_ID_LENGTH = 40;

/** Computes the identity of a proposed action. */
export function executionIdentity(input: ExecutionIdentityInput): ExecutionIdentity {
  const hash = sha256Hex(
    canonicalJson({
      v: 1,
      sessionUid: input.sessionUid,
      turn: input.turn,
      position: input.position,
      capability: input.capability,
      argumentsDigest: input.argumentsDigest,
    }),
  );
  const executionId = hash.slice(0, EXECUTION_ID_LENGTH);
  return {
    hash,
    executionId,
    idempotencyKey: idempotencyKeyOf(executionId),
    approvalName: approvalNameOf(executionId),
  };
}

/** What one business action is, whatever turn or position proposes it: its session, capability and arguments. */
export interface ActionInput {
  sessionUid: string;
  capability: string;
  argumentsDigest: string;
}

/**
 * The provider idempotency key of a write: `gh1.a<39 hex>`, one per action of a session (not per
 * execution), so identical proposals of it — at other positions, in other turns, at the same moment —
 * claim the same key: the executions table lets only one of them hold it (a never-sent failure lets
 * it go), and a provider that deduplicates sees one request. Reads and drafts keep a key per execution:
 * repeating them is harmless and each may run.
 */
export function actionKeyOf(input: ActionInput): string {
  const hash = sha256Hex(
    canonicalJson({
      v: 1,
      action: true,
      sessionUid: input.sessionUid,
      capability: input.capability,
      argumentsDigest: input.argumentsDigest,
    }),
  );
  return `gh1.a${hash.slice(0, EXECUTION_ID_LENGTH - 1)}`;
}

/** The provider idempotency key of an execution: `gh1.<execution id>`. */
export function idempotencyKeyOf(executionId: string): string {
  return `gh1.${executionId}`;
}

/** The Approval name of an execution: `apr-<first 20 hex of the execution id>`. */
export function approvalNameOf(executionId: string): string {
  return `apr-${executionId.slice(0, 20)}`;
}
