/** Executions: the record of one call from claim to outcome, and Core's metrics of them; ../ports.ts gathers every port. */

import type { ErrorKind, Idempotency, InvokeRequest, InvokeResponse } from "@gatehouse/provider-sdk";
import type { ProviderRef } from "./sessions.ts";

// ---------------------------------------------------------------------------------------------------
// Executions

/** Lifecycle of an execution row: `started` until a receipt or a definite failure; `unknown` when nobody knows. */
export type ExecutionState = "started" | "succeeded" | "failed" | "unknown";

/** A row to claim (DESIGN §6 `executions`). */
export interface NewExecution {
  /** The execution identity (`core/execution-identity.ts`): 40 hex characters. */
  id: string;
  idempotencyKey: string;
  session: { uid: string; namespace: string; name: string };
  /** Capability id (`aps.schedule.publish`). */
  capability: string;
  providerRef: ProviderRef;
  /**
   * The provider's deduplication as the Capability declared it when the row was claimed: what
   * recovery relies on, never the Capability's value at recovery time.
   */
  idempotency: Idempotency;
  /** The request as it will be sent to the provider (without grant). */
  request: InvokeRequest;
  /** RFC 8785 canonical JSON of `request.arguments`, the exact bytes `requestDigest` covers. */
  argumentsCanonical: string;
  /** sha256 hex of `argumentsCanonical` (the arguments digest). */
  requestDigest: string;
  /** The Approval this execution dispatches, if any. */
  approvalName?: string;
  /** Until when the claimer owns the `started` row; after it an unfinished row is `unknown`. */
  leaseUntilMicros: number;
  atMicros: number;
}

/** A stored execution row. */
export interface ExecutionRecord extends NewExecution {
  state: ExecutionState;
  /**
   * The fencing token of the current lease holder: 1 for the claimer, one more for every takeover.
   * Only the holder of the current token records an outcome, renews the lease or settles the row, so
   * a slow earlier holder cannot overwrite what a later one recorded.
   */
  fencingToken: number;
  /**
   * True only for a `failed` row whose request certainly never reached the provider (a `not_sent` on
   * the first execution, the audit failure before sending, a digest mismatch): the one failure after
   * which the same action may run again, under this row's idempotency key.
   */
  neverSent: boolean;
  /** How often an `unknown` row was taken to be settled again (status query, or a re-invoke by key). */
  settleAttempts: number;
  /** When an `unknown` row is next taken to be settled; absent once only a person can settle it. */
  nextSettleMicros?: number;
  /** The provider's receipt, when it answered. */
  receipt?: InvokeResponse;
  errorKind?: ErrorKind;
  /** Why the row is failed/unknown when no receipt explains it (timeout, lease expired, …). */
  message?: string;
  createdAtMicros: number;
  /** When the row last changed; for a finished row, when its outcome was recorded. */
  updatedAtMicros: number;
  /**
   * The audit seq of this finish's `execution.finished` record once it is in the chain; absent while
   * it is not (and always while `started`); 0 for rows finished before the finish outbox existed.
   */
  finishAuditSeq?: number;
  /**
   * Present when a person, not a receipt, settled the row's unknown outcome (`kubectl gatehouse
   * resolve`): who, and the reason they gave.
   */
  resolution?: { resolver: string; reason: string };
}

/** A person's settlement of an unknown outcome, to record on its row. */
export interface ExecutionResolution {
  state: "succeeded" | "failed";
  resolver: string;
  reason: string;
  /** The row's new message, e.g. `resolved by alice: <reason>`. */
  message: string;
  atMicros: number;
}

/** A final or unknown outcome to record on a claimed row. */
export interface ExecutionOutcome {
  state: Exclude<ExecutionState, "started">;
  receipt?: InvokeResponse;
  errorKind?: ErrorKind;
  message?: string;
  atMicros: number;
  /** For a `failed` outcome: the request certainly never reached the provider. */
  neverSent?: boolean;
  /** For an `unknown` outcome: when to try settling it again; absent → only a person settles it. */
  nextSettleMicros?: number;
}

/** Execution rows (backed by Postgres `executions`). */
export interface ExecutionStore {
  /**
   * Inserts the row unless one with the same id or idempotency key exists (`INSERT … ON CONFLICT DO
   * NOTHING`). `owned: true` means this caller created it and must execute it; otherwise `execution`
   * is the existing row.
   */
  claim(row: NewExecution): Promise<{ owned: boolean; execution: ExecutionRecord }>;
  get(id: string): Promise<ExecutionRecord | undefined>;
  /**
   * Records an outcome as the holder of `fencingToken`. Allowed transitions: started →
   * succeeded|failed|unknown, unknown → succeeded|failed (a later settle attempt resolved it), each
   * only while `fencingToken` is the row's current token. Anything else leaves the row unchanged and
   * returns `recorded: false` with the current row. A recorded outcome is a new finish, not yet in the
   * audit chain: `finishAuditSeq` is cleared. Errors: throws `not_found` for an unknown id.
   */
  recordReceipt(
    id: string,
    outcome: ExecutionOutcome,
    fencingToken: number,
  ): Promise<{ recorded: boolean; execution: ExecutionRecord }>;
  /**
   * Extends the lease of a `started` row to `leaseUntilMicros` while `fencingToken` is still current;
   * false when someone took the row over (its lease had ended) or it is finished — the caller must
   * then not call the provider.
   */
  renewLease(id: string, fencingToken: number, leaseUntilMicros: number, nowMicros: number): Promise<boolean>;
  /**
   * Takes over a `started` row whose lease ended before `nowMicros` (its claimer died or hung), giving
   * the caller the lease until `leaseUntilMicros` and the next fencing token. Of concurrent callers at
   * most one gets the row; the others (and callers for a row that is finished or still leased) get
   * undefined.
   */
  takeOverExpired(
    id: string,
    leaseUntilMicros: number,
    nowMicros: number,
  ): Promise<ExecutionRecord | undefined>;
  /**
   * Takes an `unknown` row due to be settled again (`nextSettleMicros` before `nowMicros`, no live
   * lease) for one settle attempt: the lease until `leaseUntilMicros`, the next fencing token,
   * `settleAttempts` plus one, and `nextSettleMicros` moved to `nextSettleMicros` (absent → none).
   * At most one concurrent caller gets the row.
   */
  takeUnknownForSettling(
    id: string,
    leaseUntilMicros: number,
    nowMicros: number,
    nextSettleMicros: number | undefined,
  ): Promise<ExecutionRecord | undefined>;
  /** Up to `limit` `unknown` rows due to be settled again before `nowMicros`, the longest due first. */
  listUnsettled(nowMicros: number, limit: number): Promise<ExecutionRecord[]>;
  /** Up to `limit` `started` rows whose lease ended before `nowMicros`, the longest expired first. */
  listExpired(nowMicros: number, limit: number): Promise<ExecutionRecord[]>;
  /**
   * Records that the row's current finish is in the audit chain at `seq` (the finish outbox). Sets
   * `finishAuditSeq` only on a finished row that has none; returns false (and changes nothing) otherwise.
   */
  markFinishAudited(id: string, seq: number): Promise<boolean>;
  /**
   * Up to `limit` finished rows whose finish is not in the audit chain (no `finishAuditSeq`) and was
   * recorded before `finishedBeforeMicros`, the oldest finish first.
   */
  listUnauditedFinishes(finishedBeforeMicros: number, limit: number): Promise<ExecutionRecord[]>;
  /**
   * Every execution of the same action in one session — same session uid, capability id and
   * arguments digest, any turn or position — oldest first (`createdAtMicros`, then id).
   */
  findByAction(action: ExecutionAction): Promise<ExecutionRecord[]>;
  /**
   * Up to `limit` `unknown` rows without an Approval of their own (Auto calls) whose outcome was
   * recorded after `sinceMicros`, the most recent first.
   */
  listUnknownWithoutApproval(sinceMicros: number, limit: number): Promise<ExecutionRecord[]>;
  /**
   * Records a person's resolution of an `unknown` row: state succeeded|failed, `resolution`, the
   * message; a new finish (`finishAuditSeq` cleared). Any other row is left unchanged and returned
   * with `recorded: false`. Errors: throws `not_found` for an unknown id.
   */
  recordResolution(
    id: string,
    resolution: ExecutionResolution,
  ): Promise<{ recorded: boolean; execution: ExecutionRecord }>;
}

/** One business action of a session, whatever turn and position proposed it. */
export interface ExecutionAction {
  sessionUid: string;
  /** Capability id (`aps.schedule.publish`). */
  capability: string;
  /** sha256 hex of the canonical arguments. */
  argumentsDigest: string;
}

// ---------------------------------------------------------------------------------------------------
// Metrics

/** How an invoke was decided, as `gatehouse_invoke_duration_seconds{decision}` labels it. */
export type InvokeDecision =
  | "allowed"
  | "approval"
  | "denied"
  | "invalid_arguments"
  | "repeated"
  | "conflict";

/**
 * What Core reports for metrics (the operator implements it with prom-client in `observability/metrics.ts`;
 * tests may pass {@link noCoreMetrics}). Durations in milliseconds.
 */
export interface CoreMetrics {
  /** One `invoke` answered, with its decision and its duration from entry to answer. */
  invoked(decision: InvokeDecision, durationMs: number): void;
  /** One execution row reached `state` (`errorKind` when failed or unknown). */
  executionFinished(state: Exclude<ExecutionState, "started">, errorKind: ErrorKind | undefined): void;
}

/** A {@link CoreMetrics} that records nothing. */
export const noCoreMetrics: CoreMetrics = { invoked() {}, executionFinished() {} };
