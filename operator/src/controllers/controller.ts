/**
 * A controller: a work queue of `namespace/name` keys fed by informer events, drained by workers that
 * call a level-triggered reconcile (controller-runtime's shape: sigs.k8s.io/controller-runtime
 * pkg/internal/controller). Reconcile errors are logged and retried with per-key backoff.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { describeApiError } from "../kube/client.ts";
import type { ReconcileResult } from "../kube/workqueue.ts";
import { WorkQueue } from "../kube/workqueue.ts";

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

export class Controller {
  readonly queue = new WorkQueue();
  readonly name: string;
  private readonly reconcile: ReconcileFn;
  private readonly log: Logger;
  private readonly workers: number;
  private running: Promise<void> | undefined;

  constructor(name: string, reconcile: ReconcileFn, log: Logger, workers = 2) {
    this.name = name;
    this.reconcile = reconcile;
    this.log = log;
    this.workers = workers;
  }

  /** Queues an object's key. */
  enqueue(object: { metadata?: { namespace?: string; name?: string } }): void {
    this.queue.add(keyOf(object));
  }

  /** Starts the workers. */
  start(): void {
    const log = this.log.child({ controller: this.name });
    this.running = this.queue.run(
      this.workers,
      (key) => {
        const { namespace, name } = splitKey(key);
        return this.reconcile(namespace, name, log.child({ namespace, name, reconcileID: randomUUID() }));
      },
      (key, error) =>
        log.error({ key, err: describeApiError(error) }, "reconcile failed; retrying with backoff"),
    );
  }

  /** Stops after the current reconciles finish. */
  async stop(): Promise<void> {
    this.queue.stop();
    await this.running;
  }
}
