/**
 * A deduplicating work queue of object keys, after client-go's workqueue
 * (k8s.io/client-go/util/workqueue): a key is queued at most once (the dirty set), never processed by
 * two workers at once (the processing set; a key added while it is processed is queued again after),
 * and failures are retried after the delay of a {@link ControllerRateLimiter} (per-key exponential
 * backoff combined with an overall token bucket). A successful reconcile forgets the key's failures and
 * may ask to be run again after a delay (controller-runtime's `RequeueAfter`); a {@link TerminalError}
 * is reported and not retried; an error its {@link RetryCap} caps (a dependency that comes back by
 * itself) is retried within that cap, so work resumes soon after the dependency does.
 *
 * A requeue may be low priority (a periodic look, such as a running session's poll): low-priority keys
 * are taken only when no other key waits, and an ordinary add of a key waiting at low priority moves
 * it up (controller-runtime's priority queue keeps the higher of two priorities the same way). Without
 * it, thousands of live sessions' polls filled the queue in front of the events that move sessions —
 * a new session waiting for its pod, a pod that ended — each waiting a full round of every poll.
 */
import { ControllerRateLimiter } from "./rate-limiter.ts";

/** What a reconcile asks of the queue: run again after a delay, at low priority if it is only a periodic look. */
export type ReconcileResult = { requeueAfterMs?: number; lowPriority?: boolean } | undefined;

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

/** Which lane a queued key waits in. */
type Lane = "normal" | "low";

export class WorkQueue {
  /** Keys in order of arrival per lane; an entry whose key moved up or was taken is skipped. */
  private readonly lanes: Record<Lane, string[]> = { normal: [], low: [] };
  /** The lane each waiting key is in. */
  private readonly queued = new Map<string, Lane>();
  /** When each queued key was added (performance.now()), for the queue-wait observer. */
  private readonly addedAt = new Map<string, number>();
  private readonly processing = new Set<string>();
  /** Keys added while a worker had them, with the higher lane they were added at. */
  private readonly dirtyWhileProcessing = new Map<string, Lane>();
  private readonly limiter: ControllerRateLimiter;
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; dueAt: number; lane: Lane }>();
  private readonly waiters: Array<() => void> = [];
  private stopped = false;

  private readonly retryCap: RetryCap;

  constructor(limiter = new ControllerRateLimiter(), retryCap: RetryCap = () => undefined) {
    this.limiter = limiter;
    this.retryCap = retryCap;
  }

  /**
   * Queues a key now (deduplicated); `lowPriority` puts it behind every other waiting key. A key
   * already waiting at low priority moves up when added without it.
   */
  add(key: string, lowPriority = false): void {
    if (this.stopped) return;
    const lane: Lane = lowPriority ? "low" : "normal";
    if (this.processing.has(key)) {
      if (this.dirtyWhileProcessing.get(key) !== "normal") this.dirtyWhileProcessing.set(key, lane);
      return;
    }
    const waiting = this.queued.get(key);
    if (waiting === "normal" || (waiting === "low" && lane === "low")) return;
    // New, or moving up from the low lane (its entry there is skipped when reached).
    this.queued.set(key, lane);
    if (waiting === undefined) this.addedAt.set(key, performance.now());
    this.lanes[lane].push(key);
    this.waiters.shift()?.();
  }

  /**
   * Queues a key after a delay in milliseconds; of several pending delays for a key the earliest wins,
   * at the higher of their priorities.
   */
  addAfter(key: string, delayMs: number, lowPriority = false): void {
    if (this.stopped) return;
    const dueAt = Date.now() + delayMs;
    const pending = this.timers.get(key);
    const lane: Lane = lowPriority && (!pending || pending.lane === "low") ? "low" : "normal";
    if (pending && pending.dueAt <= dueAt) {
      pending.lane = lane;
      return;
    }
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      // The entry is this timer's (a replaced one is cleared), with the lane later adds may have raised.
      const due = this.timers.get(key);
      this.timers.delete(key);
      this.add(key, due?.lane === "low");
    }, delayMs);
    timer.unref();
    this.timers.set(key, { timer, dueAt, lane });
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
          if (requeue) this.addAfter(key, result.requeueAfterMs ?? 0, result.lowPriority === true);
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
    return this.queued.size;
  }

  /** The next waiting key of `lane`, skipping entries of keys that moved up or were taken. */
  private take(lane: Lane): string | undefined {
    const entries = this.lanes[lane];
    for (let key = entries.shift(); key !== undefined; key = entries.shift()) {
      if (this.queued.get(key) === lane) return key;
    }
    return undefined;
  }

  private async next(): Promise<string | undefined> {
    while (!this.stopped) {
      const key = this.take("normal") ?? this.take("low");
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
    const lane = this.dirtyWhileProcessing.get(key);
    if (lane === undefined) return;
    this.dirtyWhileProcessing.delete(key);
    this.add(key, lane === "low");
  }
}
