/**
 * The ports Core depends on: its boundaries are types. Core is plain TypeScript: it reaches
 * Kubernetes, Postgres and providers only through these interfaces. Real implementations live in
 * `store/` (Postgres), `kube/`/`controllers/` (API objects) and `gateway/` (HTTP); tests use small
 * in-memory ones.
 *
 * Units: every `…Micros` is integer microseconds since the Unix epoch (a safe integer until the year
 * 2255); every `…Ms` is a duration in milliseconds. Digests are lower-case hex SHA-256.
 */

import type {
  Effect,
  ErrorKind,
  ExecutionStatus,
  Idempotency,
  InvokeRequest,
  InvokeResponse,
  Mode,
  Subject,
  TargetOffer,
} from "@gatehouse/provider-sdk";
import type { ApprovalPhase } from "../api/approval.ts";
import type { JsonObject } from "./canonical.ts";
import type { Failpoint } from "./failpoints.ts";

// ---------------------------------------------------------------------------------------------------
// Time and logging

/** Wall clock. `nowMicros()` is integer microseconds since the epoch (`Date.now() * 1000` is fine). */
export interface Clock {
  nowMicros(): number;
}

/** Waiting inside Core: real time in the operator, simulated time (the test clock advances) in tests. */
export interface Timer {
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
}

/** The subset of a pino logger Core uses (a pino `Logger` satisfies it). No argument values: digests. */
export interface CoreLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

// ---------------------------------------------------------------------------------------------------
// Sessions and capabilities

/** A set of principals, as in `spec.policy.approvers` / `spec.policy.subjects`. */
export interface PrincipalSet {
  users: string[];
  groups: string[];
}

/** Effective session limits (minimum of the user's value and the operator's ceiling, DESIGN §2). */
export interface SessionLimits {
  /** A call in turn `maxTurns` or later (turns count from 0) is denied. */
  maxTurns: number;
  maxToolCalls: number;
  maxWrites: number;
}

/**
 * The authenticated session a call comes from, as the gateway built it after TokenReview (DESIGN §4
 * step 1) or as a controller read it from its cache.
 */
export interface SessionContext {
  namespace: string;
  name: string;
  uid: string;
  /** `spec.subject`: who the agent acts for. */
  subject: Subject;
  /** `spec.capabilities`: Capability object names the session may see; `undefined` = all in the namespace. */
  capabilities?: readonly string[];
  limits: SessionLimits;
  /** False once the session is finished, cancelled or being deleted: nothing new is executed for it. */
  active: boolean;
}

/** `spec.policy.approval` of a Capability. Any other string read from an object is treated as unknown → denied. */
export type ApprovalMode = "Auto" | "Required" | "Forbidden";

/** `spec.policy` of a Capability, defaults not yet applied (see `core/policy.ts`). */
export interface CapabilityPolicy {
  /** Explicit approval mode; absent → by effect. A string outside {@link ApprovalMode} is denied. */
  approval?: string;
  /** Absent → the requester alone. */
  approvers?: PrincipalSet;
  /** Absent → 1. */
  requiredApprovals?: number;
  /** Absent → true (the requester confirming their own intent is the base case). */
  allowSelfApproval?: boolean;
  /** Who may use the capability; absent or empty → everyone who may create sessions in the namespace. */
  subjects?: PrincipalSet;
  /** Approval lifetime in seconds; absent → `CoreConfig.approvalTtlSeconds`. */
  ttlSeconds?: number;
}

/** A ProviderInstance reference with its namespace filled in. */
export interface ProviderRef {
  namespace: string;
  name: string;
}

/** A Capability object joined with what its provider offers, as the catalog sees it now. */
export interface ResolvedCapability {
  /** Capability object name. */
  name: string;
  namespace: string;
  /** `spec.id`, e.g. `aps.schedule.publish`. */
  id: string;
  /** Model-facing name: `id` with `.` → `_`. */
  toolName: string;
  /** `status.effect`; a string outside read|draft|write is unknown → denied. */
  effect: Effect | string;
  mode: Mode;
  idempotency: Idempotency;
  policy: CapabilityPolicy;
  /** JSON Schema of the arguments (`status.inputSchema`). */
  inputSchema: Record<string, unknown>;
  /** `status.schemaDigest`. */
  schemaDigest: string;
  /** `status.target`: which arguments name the business object a call changes, when the provider says. */
  target?: TargetOffer;
  providerRef: ProviderRef;
  /** The provider's manifest says it needs the subject mapped to a business account. */
  requiresIdentity: boolean;
  /** Capability `Ready=True`. */
  ready: boolean;
  /** ProviderInstance `Ready=True`. */
  providerReady: boolean;
  /** `spec.disabled` of the Capability or of its ProviderInstance. */
  disabled: boolean;
  /** The Ready condition's reason when not ready (e.g. `EffectChanged`), for the message. */
  notReadyReason?: string;
}

/** Looks up Capabilities (backed by the informer cache in the operator). */
export interface CapabilityCatalog {
  /** The Capability in `namespace` whose tool name is `toolName`, or undefined. */
  resolve(namespace: string, toolName: string): Promise<ResolvedCapability | undefined>;
  /** The Capability object `namespace/name`, or undefined (used when dispatching an Approval). */
  get(namespace: string, name: string): Promise<ResolvedCapability | undefined>;
}

/** Result of mapping a subject to a business account (DESIGN §4 step 5). */
export type IdentityBinding = { bound: true; account: string } | { bound: false; reason: string };

/** Maps subjects to business accounts through the identity-binding Secrets of a ProviderInstance. */
export interface IdentityResolver {
  resolve(provider: ProviderRef, subject: Subject): Promise<IdentityBinding>;
}

// ---------------------------------------------------------------------------------------------------
// Approvals

/** `status.phase` of an Approval (DESIGN §2), declared once with the CRD's schema. */
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
// Budgets

/** What a reservation holds of a session's limits: one tool call (`maxToolCalls`) or one write (`maxWrites`). */
export type BudgetResource = "tool_call" | "write";

/**
 * A request to reserve, for one execution identity, a tool call and (for a write capability) a write
 * of the session's limits, before anything is approved or executed.
 */
export interface BudgetRequest {
  sessionUid: string;
  /** The execution identity (`core/execution-identity.ts`); a repeat of it reserves nothing new. */
  executionId: string;
  /** Whether the call needs a write (`maxWrites`); every call needs a tool call (`maxToolCalls`). */
  write: boolean;
  limits: Pick<SessionLimits, "maxToolCalls" | "maxWrites">;
  atMicros: number;
}

/**
 * Result of {@link BudgetLedger.reserve}: `reserved` (now or by an earlier call of the same identity),
 * or `exceeded` with the limit that has no room left — then nothing was reserved.
 */
export type BudgetReservation =
  | { kind: "reserved" }
  | { kind: "exceeded"; resource: BudgetResource; limit: number };

/**
 * The sessions' budgets (backed by Postgres `budget_reservations`): one reservation per execution
 * identity and resource, counted against the session's limits. A reservation is `reserved` until the
 * call's fate is known, `consumed` once it ran or was handed to approvers, `released` when it turned
 * out to consume nothing; reserved and consumed ones count.
 */
export interface BudgetLedger {
  /**
   * Reserves what `request` needs, atomically per session: of any number of concurrent reserves for
   * one session, never more succeed than the limits leave room for. Idempotent per execution identity:
   * a reservation that exists (not released) is `reserved` again without counting twice; a released
   * one is reserved anew, within the limits.
   */
  reserve(request: BudgetRequest): Promise<BudgetReservation>;
  /** Marks the reservations of `executionId` consumed (they keep counting). Unknown ids: nothing. */
  consume(executionId: string, atMicros: number): Promise<void>;
  /**
   * Releases the reservations of `executionId` — only `resource`'s when given — that are not consumed:
   * they stop counting. Unknown ids: nothing.
   */
  release(executionId: string, atMicros: number, resource?: BudgetResource): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------
// Providers

/**
 * What happened to one provider call. The adapter classifies transport failures:
 * - `answered`: a 2xx with a valid `InvokeResponse` (succeeded or failed; `forbidden` is final);
 * - `not_sent`: the request certainly never reached the provider (connection refused, DNS failure,
 *   grant could not be signed) — safe to report as failed/`unavailable`;
 * - `lost`: it may have reached the provider (timeout, connection reset after sending, 5xx or an
 *   unparseable body) — the outcome is unknown, never failed or succeeded.
 */
export type ProviderCallOutcome =
  | { kind: "answered"; response: InvokeResponse }
  | { kind: "not_sent"; message: string }
  | { kind: "lost"; reason: "timeout" | "connection_lost" | "bad_response"; message: string };

/** What a target query (`GET /v1/targets/{kind}/{id}`) found: the current version, or that the object is gone. */
export type ProviderTargetOutcome =
  | { kind: "answered"; version: string }
  | { kind: "not_found"; message: string }
  | { kind: "unavailable"; message: string };

/** What happened to a status query (`GET /v1/executions/{idempotencyKey}`). */
export type ProviderStatusOutcome =
  | { kind: "answered"; status: ExecutionStatus }
  | { kind: "not_sent"; message: string }
  | { kind: "lost"; message: string };

/**
 * How one provider call is made: its deadline in milliseconds, and the session it serves (a Sidecar
 * provider is reached inside that session's agent pod).
 */
export interface ProviderCallOptions {
  deadlineMs: number;
  sessionUid: string;
}

/** Calls providers (the gateway's HTTP client; it signs the grant from the request, DESIGN §5). */
export interface ProviderClient {
  invoke(
    provider: ProviderRef,
    request: InvokeRequest,
    options: ProviderCallOptions,
  ): Promise<ProviderCallOutcome>;
  status(
    provider: ProviderRef,
    idempotencyKey: string,
    options: ProviderCallOptions,
  ): Promise<ProviderStatusOutcome>;
  /** The current version of business object `kind/id`, as the provider's system reports it now. */
  target(
    provider: ProviderRef,
    target: { kind: string; id: string },
    options: ProviderCallOptions,
  ): Promise<ProviderTargetOutcome>;
}

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
 * What Core reports for metrics (the operator implements it with prom-client in `kube/metrics.ts`;
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

// ---------------------------------------------------------------------------------------------------
// Wiring

/** Tunables of Core, with the defaults in {@link defaultCoreConfig}. */
export interface CoreConfig {
  /** Deadline of one provider call. */
  providerDeadlineMs: number;
  /** Provider attempts for `idempotency: key|natural` when a call is lost (same key each time). */
  maxProviderAttempts: number;
  /** Extra lease time beyond the provider deadlines before an unfinished execution counts as unknown. */
  leaseGraceMs: number;
  /** Tool results above this many UTF-8 bytes are truncated with a marker before they reach the model. */
  maxResultBytes: number;
  /** Approval lifetime when the Capability sets no `policy.ttlSeconds`. */
  approvalTtlSeconds: number;
  /**
   * How long an approved Approval without its `approval.requested` in the chain waits for it before it
   * is refused (`RequestNotRecorded`): Core appends the record right after creating the Approval.
   */
  requestRecordGraceMs: number;
  /** Operator-wide minimum approval mode per effect, e.g. `{ write: "Required" }` (see `core/policy.ts`). */
  approvalFloor?: Partial<Record<Effect, ApprovalMode>>;
}

/**
 * Defaults for {@link CoreConfig}: 30 s provider deadline, 2 attempts when idempotent, 16 KiB results,
 * 1 h approvals, a minute for an Approval's request record to reach the chain. The operator's
 * configuration (config.ts) takes its defaults from here, so each is written once.
 */
export const defaultCoreConfig: Readonly<Required<Omit<CoreConfig, "approvalFloor">>> = {
  providerDeadlineMs: 30_000,
  maxProviderAttempts: 2,
  leaseGraceMs: 30_000,
  maxResultBytes: 16_384,
  approvalTtlSeconds: 3_600,
  requestRecordGraceMs: 60_000,
};

/**
 * Whether the API server is verified to enforce the Approval decision rules (the admission policies
 * and bindings as the chart renders them). While not, no decision counts and nothing is dispatched;
 * `message` says what is missing or different.
 */
export type DecisionRulesVerdict = { enforced: true } | { enforced: false; message: string };

/** Everything Core needs; build once per process and pass to `invoke` / `executeApproved`. */
export interface CoreDeps {
  clock: Clock;
  timer: Timer;
  catalog: CapabilityCatalog;
  identities: IdentityResolver;
  approvals: ApprovalPort;
  executions: ExecutionStore;
  budget: BudgetLedger;
  providers: ProviderClient;
  audit: AuditLog;
  logger: CoreLogger;
  config: CoreConfig;
  /** Absent → nothing is recorded. */
  metrics?: CoreMetrics;
  /** Called at each {@link Failpoint} (core/failpoints.ts); absent unless `GATEHOUSE_FAILPOINTS` arms one. */
  failpoint?: (point: Failpoint) => void;
}
