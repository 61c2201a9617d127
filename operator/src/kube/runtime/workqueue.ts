/**
 * A deduplicating work queue of object keys, after client-go's workqueue
 * (k8s.io/client-go/util/workqueue): a key is queued at most once (the dirty set), never processed by
 * two workers at once (the processing set; a key added while it is processed is queued again after),
 * and failures are retried after the delay of a {@link ControllerRateLimiter} (per-key exponential
 * backoff combined with an overall token bucket). A successful reconcile forgets the key's failures and
 * may ask to be run again after a delay (controller-runtime's `RequeueAfter`); a {@link TerminalError}
 * is reported and not retried; an error its {@link RetryCap} caps (a dependency that comes back by
 * itself) is retried within that cap, so work resumes soon after the dependency does.
 */
import { ControllerRateLimiter } from "./rate-limiter.ts";

export type ReconcileResult = { requeueAfterMs?: number } | undefined;

/** Reconciles one key; throws to retry with backoff, or throws a TerminalError to give up on it. */
export type Reconcile = (key: string) => Promise<ReconcileResult>;

/** An error retrying cannot fix (controller-runtime's reconcile.TerminalError): logged, not requeued. */
export class TerminalError extends Error {
  override readonly name = "TerminalError";
}

/**
 * The longest retry delay for `error` in milliseconds, or undefined for an ordinary error (the full
 * backoff). For failures of a dependency every key waits on, which may end any moment.
 */
export type RetryCap = (error: unknown) => number | undefined;

/** What happened to one reconcile, for metrics and logs. */
export type Outcome = "success" | "requeue" | "error" | "terminal";

/** Called after every reconcile with its key, outcome, duration in milliseconds and error, if any. */
export type ReconcileObserver = (key: string, outcome: Outcome, durationMs: number, error?: unknown) => void;

/**
 * Called when a worker takes `key`, with how long it waited in the queue since it was added, in
 * milliseconds (client-go's workqueue_queue_duration_seconds; a delayed add counts from its due time).
 */
export type QueueWaitObserver = (key: string, waitedMs: number) => void;

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  /** When each queued key was added (performance.now()), for the queue-wait observer. */
  private readonly addedAt = new Map<string, number>();
  private readonly processing = new Set<string>();
  private readonly dirtyWhileProcessing = new Set<string>();
  private readonly limiter: ControllerRateLimiter;
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; dueAt: number }>();
  private readonly waiters: Array<() => void> = [];
  private stopped = false;

  private readonly retryCap: RetryCap;

  constructor(limiter = new ControllerRateLimiter(), retryCap: RetryCap = () => undefined) {
    this.limiter = limiter;
    this.retryCap = retryCap;
  }

  /** Queues a key now (deduplicated). */
  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirtyWhileProcessing.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.addedAt.set(key, performance.now());
    this.queue.push(key);
    this.waiters.shift()?.();
  }

  /** Queues a key after a delay in milliseconds; of several pending delays for a key the earliest wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    const dueAt = Date.now() + delayMs;
    const pending = this.timers.get(key);
    if (pending && pending.dueAt <= dueAt) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.timers.set(key, { timer, dueAt });
  }

  /**
   * Queues a key after the rate limiter's delay for it (one more failure counted); with `capMs`, after
   * at most that (`ControllerRateLimiter.whenCapped`).
   */
  addRateLimited(key: string, capMs?: number): void {
    this.addAfter(key, capMs === undefined ? this.limiter.when(key) : this.limiter.whenCapped(key, capMs));
  }

  /** Clears a key's backoff after a successful reconcile. */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  /** Failures of `key` since its last success. */
  retries(key: string): number {
    return this.limiter.retries(key);
  }

  /**
   * Runs `workers` loops calling `reconcile` until stop(). Each outcome goes to `observe`; thrown errors
   * are retried through the rate limiter (within the {@link RetryCap}'s cap for the errors it caps)
   * unless they are {@link TerminalError}s; `waited` is told each key's time in the queue.
   */
  async run(
    workers: number,
    reconcile: Reconcile,
    observe: ReconcileObserver,
    waited?: QueueWaitObserver,
  ): Promise<void> {
    const loop = async () => {
      for (;;) {
        const key = await this.next();
        if (key === undefined) return;
        const started = performance.now();
        waited?.(key, started - (this.addedAt.get(key) ?? started));
        this.addedAt.delete(key);
        try {
          const result = await reconcile(key);
          this.forget(key);
          const requeue = result?.requeueAfterMs !== undefined;
          if (requeue) this.addAfter(key, result.requeueAfterMs ?? 0);
          observe(key, requeue ? "requeue" : "success", performance.now() - started);
        } catch (error) {
          const terminal = error instanceof TerminalError;
          if (terminal) this.forget(key);
          else this.addRateLimited(key, this.retryCap(error));
          observe(key, terminal ? "terminal" : "error", performance.now() - started, error);
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
    for (const pending of this.timers.values()) clearTimeout(pending.timer);
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
