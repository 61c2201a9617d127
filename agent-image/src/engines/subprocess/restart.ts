/**
 * Restart with backoff for a long-lived engine subprocess: `get()` hands out the running child, or
 * starts one — at once the first time and after a clean stop, after a delay doubling from
 * `initialDelayMs` to `maxDelayMs` when the previous one crashed or failed to start. A child that ran
 * `resetAfterMs` before crashing starts the count afresh (as a kubelet's CrashLoopBackOff does).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Child } from "./child.ts";

export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  resetAfterMs: number;
}

export const defaultRestartPolicy: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 10_000,
  resetAfterMs: 60_000,
};

/** The delay before start number `failures + 1` when the last `failures` starts crashed. */
export function restartDelay(failures: number, policy: RestartPolicy): number {
  if (failures === 0) return 0;
  return Math.min(policy.initialDelayMs * 2 ** (failures - 1), policy.maxDelayMs);
}

export class Restarting {
  private current: Child | undefined;
  private starting: Promise<Child> | undefined;
  private failures = 0;
  /** Starts so far (for tests and logs). */
  starts = 0;

  private readonly start: (signal: AbortSignal | undefined) => Promise<Child>;
  private readonly policy: RestartPolicy;
  private readonly now: () => number;

  constructor(
    start: (signal: AbortSignal | undefined) => Promise<Child>,
    policy: RestartPolicy = defaultRestartPolicy,
    now: () => number = Date.now,
  ) {
    this.start = start;
    this.policy = policy;
    this.now = now;
  }

  /** The running child, started (after the backoff the last crashes call for) when there is none. */
  get(signal?: AbortSignal): Promise<Child> {
    if (this.current?.running) return Promise.resolve(this.current);
    this.starting ??= this.launch(signal).finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** Stops the running child, if any; the next `get` starts one without delay. */
  async stop(): Promise<void> {
    const child = this.current;
    this.current = undefined;
    this.failures = 0;
    await child?.stop();
  }

  private async launch(signal: AbortSignal | undefined): Promise<Child> {
    const delay = restartDelay(this.failures, this.policy);
    if (delay > 0) await sleep(delay, undefined, { signal });
    this.starts += 1;
    const startedAt = this.now();
    let child: Child;
    try {
      child = await this.start(signal);
    } catch (error) {
      if (!signal?.aborted) this.failures += 1;
      throw error;
    }
    this.current = child;
    void child.exited.then(() => {
      if (child.stopping) return;
      this.failures = this.now() - startedAt >= this.policy.resetAfterMs ? 1 : this.failures + 1;
    });
    return child;
  }
}
