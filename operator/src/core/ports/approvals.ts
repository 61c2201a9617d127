/** Approvals: what Core reads and writes of an Approval and its decisions; ../ports.ts gathers every port. */

import type { Subject } from "@gatehouse/provider-sdk";
import type { ApprovalPhase } from "../../api/status/approval.ts";
import type { PrincipalSet, ProviderRef } from "./sessions.ts";

// ---------------------------------------------------------------------------------------------------
// Approvals

/** `status.phase` of an Approval (DESIGN §2), declared once among the Approval's words. */
export type { ApprovalPhase };

/** One entry of `spec.decisions`. */
export interface ApprovalDecision {
  approver: string;
  verdict: "Approve" | "Reject";
  reason?: string;
}

/**
 * The spec Core wants an Approval to have. The adapter stores every field (the ones not in the CRD's
 * spec list — `executionId`, `capabilityId`, `schemaDigest` — as labels/annotations or spec fields) and
 * sets the session as controller owner.
 */
export interface ApprovalRequest {
  namespace: string;
  /** `apr-<first 20 hex of the execution identity>` (see `core/execution-identity.ts`). */
  name: string;
  executionId: string;
  sessionRef: { name: string; uid: string };
  /** Capability object name. */
  capability: string;
  capabilityId: string;
  providerRef: ProviderRef;
  /** RFC 8785 canonical JSON of the validated arguments. */
  arguments: string;
  /** sha256 hex of `arguments`. */
  argumentsDigest: string;
  /** `status.schemaDigest` of the Capability when the Approval was created (re-checked at dispatch). */
  schemaDigest: string;
  requester: Subject;
  approvers: PrincipalSet;
  requiredApprovals: number;
  allowSelfApproval: boolean;
  /** RFC 3339 UTC timestamp. */
  expiresAt: string;
  /** The business object the call changes and its version when proposed (re-checked at dispatch). */
  target?: ApprovalTarget;
  /**
   * The provider idempotency key to execute under, when it is not the one derived from `executionId`:
   * the call proposes again an action whose earlier execution certainly never reached the provider,
   * and runs under that execution's key (core/reproposal.ts).
   */
  idempotencyKey?: string;
  /**
   * True when the Approval records a call that ran without approval (Auto) and ended unknown, so a
   * person can resolve it: it takes no decisions.
   */
  autoExecution?: boolean;
}

/** `spec.target` of an Approval: a business object and the version the call was proposed against. */
export interface ApprovalTarget {
  kind: string;
  id: string;
  version?: string;
}

/** What Core needs to know of an existing Approval. */
export interface ApprovalHandle {
  name: string;
  phase: ApprovalPhase;
  /** The Approval's controller owner is the session (by uid). */
  ownedBySession: boolean;
  /** The stored spec equals the request (only meaningful from `createOrGet`). */
  sameSpec: boolean;
  /**
   * What the stored spec says it is for: the call it was created for is identified by exactly these
   * (`core/execution-identity.ts`), so a session-owned Approval whose fields differ from the call's is
   * not ours — a squat — however it got its owner reference.
   */
  identity: { executionId: string; capabilityId: string; argumentsDigest: string; sessionUid: string };
  /** The decisions appended so far, in order. */
  decisions: ApprovalDecision[];
  /** The message of its `Executed` or `Decided` condition, when it has one (why it ended as it did). */
  conditionMessage?: string | undefined;
  /** The object's uid: tells an Approval from one re-created under the same name. */
  uid?: string | undefined;
}

/** An Approval as the dispatcher reads it (spec + decisions + phase). */
export interface ApprovalView {
  request: ApprovalRequest;
  decisions: ApprovalDecision[];
  phase: ApprovalPhase;
  /**
   * The object's uid. An Approval deleted and re-created under the same name (same execution id) is
   * another object: its lifecycle records carry its uid, so the two histories never mix.
   */
  uid?: string | undefined;
  /** When the object was created (`metadata.creationTimestamp`): the current policy's ttl counts from it. */
  createdAtMicros?: number | undefined;
}

/** Creates and finds Approval objects (backed by the API server). */
export interface ApprovalPort {
  /** The Approval `namespace/name` as seen for `sessionUid`, or undefined if none exists. */
  get(namespace: string, name: string, sessionUid: string): Promise<ApprovalHandle | undefined>;
  /**
   * Creates the Approval, or returns the existing one of that name with `sameSpec`/`ownedBySession`
   * telling whether it is ours. Errors: throws on API failures (the caller answers `unavailable`).
   */
  createOrGet(request: ApprovalRequest): Promise<ApprovalHandle>;
  /**
   * A Rejected Approval of this session for the same capability and arguments digest (any turn), or
   * undefined (DESIGN §4 step 6: a rejected action repeated identically is refused).
   */
  findRejected(query: {
    namespace: string;
    sessionUid: string;
    capability: string;
    argumentsDigest: string;
  }): Promise<{ name: string } | undefined>;
  /**
   * Every Approval of this session for the same capability (object name) and arguments digest, any
   * turn and position, in no particular order (core/reproposal.ts: an identical proposal waits on an
   * open one instead of getting a second Approval).
   */
  findByAction(query: {
    namespace: string;
    sessionUid: string;
    capability: string;
    argumentsDigest: string;
  }): Promise<ApprovalHandle[]>;
  /**
   * Creates the Approval `request` describes — an Auto execution's record, `autoExecution` set — or
   * reads the existing one of that name; `created` is true when this call created it. Writes no
   * status: the approval reconciler moves a new record to phase Unknown from its execution row.
   * Errors: throws on API failures (the caller or the leader's sweep tries again).
   */
  createOrGetRecord(request: ApprovalRequest): Promise<{ handle: ApprovalHandle; created: boolean }>;
}
