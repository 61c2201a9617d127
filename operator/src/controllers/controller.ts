/**
 * A controller: a work queue of `namespace/name` keys fed by informer events, drained by workers that
 * call a level-triggered reconcile (controller-runtime's shape: sigs.k8s.io/controller-runtime
 * pkg/internal/controller). Errors are logged and retried with the queue's rate limiter; a write that
 * lost an optimistic-concurrency race (409 Conflict) is requeued quietly, since the informer will
 * bring the newer object; a create refused because the namespace is being deleted ends the reconcile
 * quietly (the object goes with its namespace); a reconcile that failed because the database is
 * unavailable (store/unavailable.ts) is retried within {@link DATABASE_RETRY_CAP_MS}, not the growing
 * backoff, so waiting work resumes within seconds of its return; every outcome is counted in the
 * metrics.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { describeApiError, isConflict, isNamespaceTerminating } from "../kube/runtime/client.ts";
import type { ReconcileResult } from "../kube/runtime/workqueue.ts";
import { WorkQueue } from "../kube/runtime/workqueue.ts";
import type { OperatorMetrics } from "../observability/metrics.ts";
import { isDatabaseUnavailable } from "../store/unavailable.ts";

/** `namespace/name` of an object. */
export function keyOf(object: { metadata?: { namespace?: string; name?: string } }): string {
  return `${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`;
}

/** Splits a `namespace/name` key. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Reconciles one object; `log` carries controller, namespace, name and reconcileID. */
export type ReconcileFn = (namespace: string, name: string, log: Logger) => Promise<ReconcileResult>;

/** Delay before a key whose write hit a 409 Conflict is reconciled again, in milliseconds. */
const CONFLICT_REQUEUE_MS = 100;

/** The longest wait before a reconcile that found the database unavailable is tried again, in milliseconds. */
export const DATABASE_RETRY_CAP_MS = 2_000;

function databaseRetryCap(error: unknown): number | undefined {
  return isDatabaseUnavailable(error) ? DATABASE_RETRY_CAP_MS : undefined;
}

export class Controller {
  readonly queue = new WorkQueue(undefined, databaseRetryCap);
  readonly name: string;
  private readonly reconcile: ReconcileFn;
  private readonly log: Logger;
  private readonly metrics: OperatorMetrics | undefined;
  private readonly workers: number;
  private running: Promise<void> | undefined;

  constructor(name: string, reconcile: ReconcileFn, log: Logger, metrics?: OperatorMetrics, workers = 2) {
    this.name = name;
    this.reconcile = reconcile;
    this.log = log;
    this.metrics = metrics;
    this.workers = workers;
    metrics?.trackQueue(name, () => this.queue.length);
  }

  /** Queues an object's key; `lowPriority` behind every other waiting key (a resync's periodic look). */
  enqueue(object: { metadata?: { namespace?: string; name?: string } }, lowPriority = false): void {
    this.queue.add(keyOf(object), lowPriority);
  }

  /** Starts the workers. */
  start(): void {
    const log = this.log.child({ controller: this.name });
    this.running = this.queue.run(
      this.workers,
      async (key) => {
        const { namespace, name } = splitKey(key);
        const reconcileLog = log.child({ namespace, name, reconcileID: randomUUID() });
        try {
          return await this.reconcile(namespace, name, reconcileLog);
        } catch (error) {
          if (isNamespaceTerminating(error)) {
            // Whatever it tried to create goes with the namespace, and so does the object: nothing to do.
            reconcileLog.debug({ err: describeApiError(error) }, "namespace is being deleted; nothing to do");
            return undefined;
          }
          if (!isConflict(error)) throw error;
          reconcileLog.debug({ err: describeApiError(error) }, "conflict; requeued for the newer object");
          return { requeueAfterMs: CONFLICT_REQUEUE_MS };
        }
      },
      (key, outcome, durationMs, error) => {
        this.metrics?.reconciled(this.name, outcome, durationMs);
        if (outcome === "error" && isDatabaseUnavailable(error)) {
          // An outage fails every key at once: a warning each; the `database` readiness check says the rest.
          log.warn({ key, err: describeApiError(error) }, "database unavailable; retrying within 2 s");
        } else if (outcome === "error") {
          log.error({ key, err: describeApiError(error) }, "reconcile failed; retrying with backoff");
        } else if (outcome === "terminal") {
          log.error({ key, err: describeApiError(error) }, "reconcile failed for good; not retrying");
        }
      },
      (_key, waitedMs) => this.metrics?.queueWaited(this.name, waitedMs),
    );
  }

  /** Stops after the current reconciles finish. */
  async stop(): Promise<void> {
    this.queue.stop();
    await this.running;
  }
}
