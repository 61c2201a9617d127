/**
 * A deduplicating work queue of object keys, after client-go's workqueue
 * (k8s.io/client-go/util/workqueue): a key is queued at most once, never processed by two workers at
 * once (a key added while it is processed is re-queued after), and failures back off exponentially
 * per key (5 ms doubling to 1000 s, as client-go's DefaultTypedControllerRateLimiter).
 */
export type ReconcileResult = { requeueAfterMs?: number } | undefined;

/** Reconciles one key; throws to retry with backoff. */
export type Reconcile = (key: string) => Promise<ReconcileResult>;

const BASE_DELAY_MS = 5;
const MAX_DELAY_MS = 1_000_000;

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirtyWhileProcessing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters: Array<() => void> = [];
  private stopped = false;

  /** Queues a key now (deduplicated). */
  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirtyWhileProcessing.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.waiters.shift()?.();
  }

  /** Queues a key after a delay in milliseconds; an earlier pending delay for the key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped || this.timers.has(key)) return;
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.timers.set(key, timer);
  }

  /** Queues a key after its per-key exponential backoff. */
  addRateLimited(key: string): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.addAfter(key, Math.min(BASE_DELAY_MS * 2 ** failures, MAX_DELAY_MS));
  }

  /** Clears a key's backoff after a successful reconcile. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Runs `workers` loops calling `reconcile` until stop(); errors are passed to onError and retried. */
  async run(
    workers: number,
    reconcile: Reconcile,
    onError: (key: string, error: unknown) => void,
  ): Promise<void> {
    const loop = async () => {
      for (;;) {
        const key = await this.next();
        if (key === undefined) return;
        try {
          const result = await reconcile(key);
          this.forget(key);
          if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
        } catch (error) {
          onError(key, error);
          this.addRateLimited(key);
        } finally {
          this.done(key);
        }
      }
    };
    await Promise.all(Array.from({ length: workers }, loop));
  }

  /** Stops the workers after their current item; pending timers are dropped. */
  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Number of keys waiting (for metrics). */
  get length(): number {
    return this.queue.length;
  }

  private async next(): Promise<string | undefined> {
    while (!this.stopped) {
      const key = this.queue.shift();
      if (key !== undefined) {
        this.queued.delete(key);
        this.processing.add(key);
        return key;
      }
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
      });
    }
    return undefined;
  }

  private done(key: string): void {
    this.processing.delete(key);
    if (this.dirtyWhileProcessing.delete(key)) this.add(key);
  }
}
