/**
 * The operator's Prometheus metrics (prom-client), one registry per process, served by the health
 * server (gateway/health.ts). Names follow controller-runtime's
 * (sigs.k8s.io/controller-runtime/pkg/internal/controller/metrics) and client-go's workqueue metrics,
 * prefixed `gatehouse_`.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Outcome } from "./workqueue.ts";

/** The metrics a controller, an informer and the caches report into. */
export interface OperatorMetrics {
  registry: Registry;
  /** One finished reconcile of `controller` with its outcome and duration in milliseconds. */
  reconciled(controller: string, outcome: Outcome, durationMs: number): void;
  /** An informer of `path` restarted its list+watch. */
  informerRestarted(path: string, reason: string): void;
  /** Reports the depth of `queue` whenever metrics are collected. */
  trackQueue(queue: string, depth: () => number): void;
  /** Reports the number of Pending Approvals whenever metrics are collected. */
  trackPendingApprovals(count: () => number): void;
  /** Sets whether this replica holds the leader lease (1) or not (0). */
  setLeader(isLeader: boolean): void;
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
  const leader = new Gauge({
    name: "gatehouse_leader",
    help: "1 while this replica holds the leader lease and runs the controllers.",
    registers: [registry],
  });
  return {
    registry,
    reconciled(controller, outcome, durationMs) {
      reconcileTotal.inc({ controller, result: outcome });
      if (outcome === "error" || outcome === "terminal") reconcileErrors.inc({ controller });
      reconcileSeconds.observe({ controller }, durationMs / 1000);
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
    setLeader(isLeader) {
      leader.set(isLeader ? 1 : 0);
    },
  };
}
