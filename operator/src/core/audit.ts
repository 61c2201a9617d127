/**
 * The audit chain's pure parts (DESIGN §6): the kinds of record Core emits, and, gathered from
 * audit-record.ts and audit-verifier.ts, how a record is encoded, hashed and verified. The SQL lives
 * in `store/audit/log.ts`; everything here is deterministic and unit-tested.
 *
 * Encoding: the canonical bytes of a record are the RFC 8785 JSON of
 *   { v: 1, seq, prevHash: <hex>, kind, actor, outcome|null, sessionUid|null, executionId|null,
 *     atMicros, payload }
 * with timestamps as integer microseconds. hash = sha256(prevHash || canonicalBytes); the first
 * record's prevHash is 32 zero bytes. The exact hashed bytes are stored, so verification never depends
 * on how the database re-serializes JSON.
 */
import type { AuditOutcome, ExecutionState } from "./ports.ts";

export {
  AUDIT_RECORD_VERSION,
  assertEncodable,
  type ChainHead,
  chainHash,
  decodeAuditRecord,
  EMPTY_CHAIN_HEAD,
  GENESIS_PREV_HASH,
  type SealedAuditRecord,
  sealAuditRecord,
  toHex,
} from "./audit-record.ts";
export {
  type AuditCheckpoint,
  type AuditProblem,
  type AuditProblemReason,
  type AuditVerifyReport,
  ChainVerifier,
  type CheckpointCheck,
  checkRecord,
  type SequenceGap,
} from "./audit-verifier.ts";

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
  /** An agent reported that its engine asked a person for a decision or input, and that it declined. */
  engineApprovalDeclined: "engine.approval_declined",
} as const;

/**
 * The kinds the gateway program appends (DESIGN §6), from everything its `POST /v1/invoke` reaches
 * (`core/invoke.ts`): its decisions, the Approval it requests or finds squatted, the Approval that
 * records an Auto call of unknown outcome, and an Auto call's execution — started, finished, recovered
 * when a repeat finds its claimer gone, answered after a takeover; and, from `POST /v1/session/events`,
 * an engine's request for a person that the agent declined. Its other routes write the session's
 * transcript, not the chain. The guard (migrations 0011, 0012) refuses a gateway login any other
 * kind, and an
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
  AuditKind.engineApprovalDeclined,
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
