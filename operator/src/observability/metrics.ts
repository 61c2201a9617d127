/**
 * The operator's Prometheus metrics (prom-client), one registry per process, served by the health
 * server (observability/health.ts). Names follow controller-runtime's
 * (sigs.k8s.io/controller-runtime/pkg/internal/controller/metrics) and client-go's workqueue metrics,
 * prefixed `gatehouse_`. Core's own questions ("how long does an invoke take?", "how many executions
 * fail, and how?") are answered through the `CoreMetrics` port (core/ports.ts), implemented here as
 * {@link OperatorMetrics.coreMetrics}.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { DecidedPhase } from "../api/status/approval.ts";
import type { CoreMetrics } from "../core/ports.ts";
import type { WitnessMetrics } from "../core/witness.ts";
import type { Outcome } from "../kube/runtime/workqueue.ts";

/** How an Approval left Pending, as `gatehouse_approval_decision_seconds{outcome}` labels it. */
export type ApprovalDecisionOutcome = DecidedPhase;

/**
 * How a model proxy request ended, as `gatehouse_model_requests_total{outcome}` labels it: answered
 * (`ok`), answered with the endpoint's own error (`upstream_error`), not reachable (`unreachable`),
 * refused for the token budget (`budget_exceeded`) or for another reason (`refused`).
 */
export type ModelRequestOutcome = "ok" | "upstream_error" | "unreachable" | "budget_exceeded" | "refused";

/** What the gateway's model proxy reports (gateway/model-proxy.ts). */
export interface ModelProxyMetrics {
  /** One request to `endpoint` ended with `outcome` after `durationMs` (to the answer's last byte). */
  requested(endpoint: string, outcome: ModelRequestOutcome, durationMs: number): void;
  /** Tokens metered for one answered request. */
  metered(endpoint: string, usage: { inputTokens: number; outputTokens: number }): void;
}

/** The metrics a controller, an informer and the caches report into. */
export interface OperatorMetrics {
  registry: Registry;
  /** One finished reconcile of `controller` with its outcome and duration in milliseconds. */
  reconciled(controller: string, outcome: Outcome, durationMs: number): void;
  /** A worker of `controller` took a key that waited `waitedMs` in its work queue. */
  queueWaited(controller: string, waitedMs: number): void;
  /** An informer of `path` restarted its list+watch. */
  informerRestarted(path: string, reason: string): void;
  /** Reports the depth of `queue` whenever metrics are collected. */
  trackQueue(queue: string, depth: () => number): void;
  /** Reports the number of Pending Approvals whenever metrics are collected. */
  trackPendingApprovals(count: () => number): void;
  /** Reports whether admission enforces the decision rules (1) or not (0) whenever metrics are collected. */
  trackDecisionRules(enforced: () => boolean): void;
  /** Reports whether the database answers the store's probe (1) or not (0) whenever metrics are collected. */
  trackDatabase(available: () => boolean): void;
  /** Reports whether transcript notices arrive (1) or running sessions are polled (0), on the leader. */
  trackTranscriptNotices(live: () => boolean): void;
  /** Sets whether this replica holds the leader lease (1) or not (0). */
  setLeader(isLeader: boolean): void;
  /**
   * An Approval left Pending with `outcome`, `durationMs` milliseconds after its creationTimestamp
   * (observed once per Approval, by the Approval controller when it writes the new phase).
   */
  approvalDecided(outcome: ApprovalDecisionOutcome, durationMs: number): void;
  /** What Core reports: `gatehouse_invoke_duration_seconds` and `gatehouse_executions_total`. */
  coreMetrics: CoreMetrics;
  /**
   * One call of a port Core or the gateway uses (the store, the API server, a provider, TokenReview)
   * finished after `durationMs`: `gatehouse_port_call_duration_seconds{port,method}` (observability/
   * port-timing.ts), the breakdown of the invoke path by stage.
   */
  portCalled(port: string, method: string, durationMs: number): void;
  /**
   * What the model proxy reports: `gatehouse_model_requests_total{endpoint,outcome}`,
   * `gatehouse_model_request_duration_seconds{endpoint}` and `gatehouse_model_tokens_total{endpoint,direction}`.
   */
  modelProxyMetrics: ModelProxyMetrics;
  /**
   * What the audit witness reports: `gatehouse_audit_witness_mismatch` (1 while it refuses to publish),
   * `gatehouse_audit_witness_mismatch_seq` (the first seq that disagrees, 0 when none) and
   * `gatehouse_audit_witness_refusals_total{reason}`.
   */
  witnessMetrics: WitnessMetrics;
}

/** Creates the registry with process metrics and Gatehouse's own. */
export function createMetrics(): OperatorMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "gatehouse_" });
  const reconcileTotal = new Counter({
    name: "gatehouse_reconcile_total",
    help: "Reconciles per controller and result (success, requeue, error, terminal).",
    labelNames: ["controller", "result"],
    registers: [registry],
  });
  const reconcileErrors = new Counter({
    name: "gatehouse_reconcile_errors_total",
    help: "Reconciles that failed (error or terminal), per controller.",
    labelNames: ["controller"],
    registers: [registry],
  });
  const reconcileSeconds = new Histogram({
    name: "gatehouse_reconcile_time_seconds",
    help: "Reconcile duration per controller.",
    labelNames: ["controller"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const queueSeconds = new Histogram({
    name: "gatehouse_workqueue_queue_duration_seconds",
    help: "How long a key waited in each controller's work queue before a worker took it.",
    labelNames: ["name"],
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
    registers: [registry],
  });
  const informerRestarts = new Counter({
    name: "gatehouse_informer_restarts_total",
    help: "List+watch restarts per informer and reason (gone = 410 relist, error, silent = watchdog).",
    labelNames: ["informer", "reason"],
    registers: [registry],
  });
  const queues = new Map<string, () => number>();
  new Gauge({
    name: "gatehouse_workqueue_depth",
    help: "Keys waiting in each controller's work queue.",
    labelNames: ["name"],
    registers: [registry],
    collect() {
      for (const [name, depth] of queues) this.set({ name }, depth());
    },
  });
  let pending: () => number = () => 0;
  new Gauge({
    name: "gatehouse_approvals_pending",
    help: "Approvals in phase Pending, as the operator's cache sees them.",
    registers: [registry],
    collect() {
      this.set(pending());
    },
  });
  let rulesEnforced: () => boolean = () => false;
  new Gauge({
    name: "gatehouse_decision_rules_enforced",
    help: "1 while the API server is verified to enforce the Approval decision rules; 0: no decision counts and nothing is dispatched.",
    registers: [registry],
    collect() {
      this.set(rulesEnforced() ? 1 : 0);
    },
  });
  let noticesLive: () => boolean = () => false;
  new Gauge({
    name: "gatehouse_transcript_notices_live",
    help: "1 while transcript appends' notices reach the controller (a probe came back); 0: its running sessions are polled every 2 s (a standby, or the listening connection lost).",
    registers: [registry],
    collect() {
      this.set(noticesLive() ? 1 : 0);
    },
  });
  let databaseAvailable: () => boolean = () => false;
  new Gauge({
    name: "gatehouse_database_available",
    help: "1 while the operator's Postgres answers the store's probe (SELECT 1 every 2 s); 0: sessions and Approvals wait (DatabaseUnavailable) and /readyz is 503.",
    registers: [registry],
    collect() {
      this.set(databaseAvailable() ? 1 : 0);
    },
  });
  const leader = new Gauge({
    name: "gatehouse_leader",
    help: "1 while this replica holds the leader lease and runs the controllers.",
    registers: [registry],
  });
  const invokeSeconds = new Histogram({
    name: "gatehouse_invoke_duration_seconds",
    help: "Duration of an agent's invoke from entry to answer (a synchronous provider call included), per decision.",
    labelNames: ["decision"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const portCallSeconds = new Histogram({
    name: "gatehouse_port_call_duration_seconds",
    help: "Duration of one call of a port of the invoke path (store, API server, provider, TokenReview), per port and method: the invoke's breakdown by stage.",
    labelNames: ["port", "method"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
    registers: [registry],
  });
  const executionsTotal = new Counter({
    name: "gatehouse_executions_total",
    help: "Executions that reached a final or unknown state, per state and error kind (none when it succeeded).",
    labelNames: ["state", "error_kind"],
    registers: [registry],
  });
  const approvalDecisionSeconds = new Histogram({
    name: "gatehouse_approval_decision_seconds",
    help: "Time from an Approval's creation to the operator seeing it Approved, Rejected or Expired.",
    labelNames: ["outcome"],
    // Humans decide: from seconds to a day.
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400],
    registers: [registry],
  });
  const modelRequests = new Counter({
    name: "gatehouse_model_requests_total",
    help: "Model proxy requests per endpoint and outcome (ok, upstream_error, unreachable, budget_exceeded, refused).",
    labelNames: ["endpoint", "outcome"],
    registers: [registry],
  });
  const modelRequestSeconds = new Histogram({
    name: "gatehouse_model_request_duration_seconds",
    help: "Duration of a model proxy request to the answer's last byte, per endpoint.",
    labelNames: ["endpoint"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const modelTokens = new Counter({
    name: "gatehouse_model_tokens_total",
    help: "Tokens the model proxy metered, per endpoint and direction (input, output).",
    labelNames: ["endpoint", "direction"],
    registers: [registry],
  });
  const witnessMismatch = new Gauge({
    name: "gatehouse_audit_witness_mismatch",
    help: "1 while the audit witness refuses to publish checkpoints because the chain no longer holds what it kept; a person must intervene (docs/audit.md).",
    registers: [registry],
  });
  const witnessMismatchSeq = new Gauge({
    name: "gatehouse_audit_witness_mismatch_seq",
    help: "The first seq at which the chain disagrees with the audit witness (0 while it agrees).",
    registers: [registry],
  });
  const witnessRefusals = new Counter({
    name: "gatehouse_audit_witness_refusals_total",
    help: "Checkpoint publications the audit witness refused, per reason (rewritten, removed, forged, broken).",
    labelNames: ["reason"],
    registers: [registry],
  });
  const witnessMetrics: WitnessMetrics = {
    agreed() {
      witnessMismatch.set(0);
      witnessMismatchSeq.set(0);
    },
    refused(disagreement) {
      witnessMismatch.set(1);
      witnessMismatchSeq.set(disagreement.seq);
      witnessRefusals.inc({ reason: disagreement.reason });
    },
  };
  const modelProxyMetrics: ModelProxyMetrics = {
    requested(endpoint, outcome, durationMs) {
      modelRequests.inc({ endpoint, outcome });
      modelRequestSeconds.observe({ endpoint }, Math.max(0, durationMs) / 1000);
    },
    metered(endpoint, usage) {
      modelTokens.inc({ endpoint, direction: "input" }, usage.inputTokens);
      modelTokens.inc({ endpoint, direction: "output" }, usage.outputTokens);
    },
  };
  const coreMetrics: CoreMetrics = {
    invoked(decision, durationMs) {
      invokeSeconds.observe({ decision }, durationMs / 1000);
    },
    executionFinished(state, errorKind) {
      executionsTotal.inc({ state, error_kind: errorKind ?? "none" });
    },
  };
  return {
    registry,
    coreMetrics,
    modelProxyMetrics,
    witnessMetrics,
    portCalled(port, method, durationMs) {
      portCallSeconds.observe({ port, method }, durationMs / 1000);
    },
    approvalDecided(outcome, durationMs) {
      approvalDecisionSeconds.observe({ outcome }, Math.max(0, durationMs) / 1000);
    },
    reconciled(controller, outcome, durationMs) {
      reconcileTotal.inc({ controller, result: outcome });
      if (outcome === "error" || outcome === "terminal") reconcileErrors.inc({ controller });
      reconcileSeconds.observe({ controller }, durationMs / 1000);
    },
    queueWaited(controller, waitedMs) {
      queueSeconds.observe({ name: controller }, waitedMs / 1000);
    },
    informerRestarted(path, reason) {
      informerRestarts.inc({ informer: path, reason });
    },
    trackQueue(queue, depth) {
      queues.set(queue, depth);
    },
    trackPendingApprovals(count) {
      pending = count;
    },
    trackDecisionRules(enforced) {
      rulesEnforced = enforced;
    },
    trackDatabase(available) {
      databaseAvailable = available;
    },
    trackTranscriptNotices(live) {
      noticesLive = live;
    },
    setLeader(isLeader) {
      leader.set(isLeader ? 1 : 0);
    },
  };
}
