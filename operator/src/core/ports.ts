/**
 * The ports Core depends on: its boundaries are types. Core is plain TypeScript: it reaches
 * Kubernetes, Postgres and providers only through these interfaces. Real implementations live in
 * `store/` (Postgres), `kube/`/`controllers/` (API objects) and `gateway/` (HTTP); tests use small
 * in-memory ones. The ports are kept by kind under `ports/`; this module gathers them and holds the
 * wiring (CoreDeps, CoreConfig).
 *
 * Units: every `…Micros` is integer microseconds since the Unix epoch (a safe integer until the year
 * 2255); every `…Ms` is a duration in milliseconds. Digests are lower-case hex SHA-256.
 */

import type { Effect } from "@gatehouse/provider-sdk";
import type { Failpoint } from "./failpoints.ts";
import type { ApprovalPort } from "./ports/approvals.ts";
import type { AuditLog } from "./ports/audit.ts";
import type { CoreMetrics, ExecutionStore } from "./ports/executions.ts";
import type { BudgetLedger, ProviderClient } from "./ports/providers.ts";
import type {
  ApprovalMode,
  CapabilityCatalog,
  Clock,
  CoreLogger,
  IdentityResolver,
  Timer,
} from "./ports/sessions.ts";

export * from "./ports/approvals.ts";
export * from "./ports/audit.ts";
export * from "./ports/executions.ts";
export * from "./ports/providers.ts";
export * from "./ports/sessions.ts";

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
