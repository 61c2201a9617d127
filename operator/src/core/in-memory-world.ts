/**
 * The state of an in-memory world (in-memory-ports.ts): what its fakes of Core's ports store, and the
 * knobs a test turns (the clock, provider behaviour, audit failures).
 */
import type { InvokeRequest } from "@gatehouse/provider-sdk";
import type {
  ApprovalDecision,
  ApprovalPhase,
  ApprovalRequest,
  AuditEntry,
  BudgetResource,
  CoreDeps,
  ExecutionRecord,
  ProviderCallOutcome,
  ProviderRef,
  ProviderStatusOutcome,
  ResolvedCapability,
} from "./ports.ts";

/** A stored Approval: the request, its owner (session uid), decisions and phase. */
export interface StoredApproval {
  request: ApprovalRequest;
  ownerUid: string;
  decisions: ApprovalDecision[];
  phase: ApprovalPhase;
  conflictMessage?: string;
}

/** One reservation of a session's budget, as the Postgres ledger stores it. */
export interface StoredReservation {
  sessionUid: string;
  executionId: string;
  resource: BudgetResource;
  state: "reserved" | "consumed" | "released";
  reservedAtMicros: number;
  settledAtMicros?: number;
}

/** One provider call as the fake provider saw it. */
export interface ProviderCall {
  provider: ProviderRef;
  request: InvokeRequest;
  deadlineMs: number;
}

/** The fakes and what they recorded. Mutate `capabilities`, `bindings`, `providerBehaviour` freely. */
export interface InMemoryWorld {
  deps: CoreDeps;
  now: { micros: number };
  capabilities: ResolvedCapability[];
  /** user → account; a missing user is unbound. */
  bindings: Map<string, string>;
  executions: Map<string, ExecutionRecord>;
  approvals: Map<string, StoredApproval>;
  /** The budget ledger's reservations, in the order they were first made. */
  reservations: StoredReservation[];
  audit: AuditEntry[];
  /** Decides whether appending `entry` fails (default: never), e.g. to lose one `execution.finished`. */
  auditFails: (entry: AuditEntry) => boolean;
  providerCalls: ProviderCall[];
  statusCalls: string[];
  /** How often Core waited on the timer (each wait advances `now` by its milliseconds). */
  sleeps: number;
  /** What the provider does with a call; default: succeed with `{ ok: true }`. */
  providerBehaviour: (call: ProviderCall) => ProviderCallOutcome | Promise<ProviderCallOutcome>;
  /** What the status endpoint says; default: not found. */
  statusBehaviour: (idempotencyKey: string) => ProviderStatusOutcome;
  /** Current versions of business objects by `kind/id` (absent → not found). */
  targetVersions: Map<string, string>;
}
