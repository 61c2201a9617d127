import type { V1Pod } from "@kubernetes/client-node";
import type { PodHandler } from "./pod-source.ts";
import { PodWorker, type PodWorkerDeps } from "./pod-worker.ts";

/**
 * One {@link PodWorker} per pod uid bound to the node: creates workers for new pods, forwards updates
 * and removals, forgets workers when they finish, and shuts them all down when the node stops.
 */
export class PodManager implements PodHandler {
  private readonly workers = new Map<string, PodWorker>();
  private readonly deps: Omit<PodWorkerDeps, "onFinished">;
  private closing = false;

  constructor(deps: Omit<PodWorkerDeps, "onFinished">) {
    this.deps = deps;
  }

  /** See {@link PodHandler.upsert}. */
  upsert(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid || this.closing) return;
    const worker = this.workers.get(uid);
    if (worker) {
      worker.update(pod);
      return;
    }
    this.workers.set(
      uid,
      new PodWorker(pod, { ...this.deps, onFinished: (done) => this.workers.delete(done) }),
    );
  }

  /** See {@link PodHandler.remove}. */
  remove(uid: string): void {
    this.workers.get(uid)?.objectRemoved();
  }

  /** Stops every pod's processes (short grace) and removes their network namespaces. */
  async shutdown(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.workers.values()].map((w) => w.shutdown()));
  }
}
