/**
 * The work queue's rate limiter, after client-go's DefaultTypedControllerRateLimiter
 * (k8s.io/client-go/util/workqueue/default_rate_limiters.go): the maximum of a per-item exponential
 * backoff (5 ms doubling per failure, capped at 1000 s) and an overall token bucket (10 requeues per
 * second, burst 100), so one failing key backs off on its own and a storm of failures cannot flood the
 * API server. Times in milliseconds.
 */
export interface RateLimiterOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Token bucket refill, in tokens per second. */
  qps?: number;
  /** Token bucket size. */
  burst?: number;
  now?: () => number;
}

export class ControllerRateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;
  private tokens: number;
  private refilledAt: number;

  constructor(options: RateLimiterOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 1_000_000;
    this.qps = options.qps ?? 10;
    this.burst = options.burst ?? 100;
    this.now = options.now ?? Date.now;
    this.tokens = this.burst;
    this.refilledAt = this.now();
  }

  /** The delay before `key` may be retried, counting this as one more failure of it. */
  when(key: string): number {
    return Math.max(this.itemDelay(key, this.maxDelayMs), this.bucketDelay());
  }

  /**
   * The delay before `key` may be retried after a failure of a dependency that recovers by itself
   * (the database): the same per-key backoff, capped at `capMs`, and outside the token bucket — while
   * every key waits for one outage, the bucket's debt would grow with their number and hold them long
   * after it ended. Counts one more failure of `key`.
   */
  whenCapped(key: string, capMs: number): number {
    return this.itemDelay(key, Math.min(capMs, this.maxDelayMs));
  }

  private itemDelay(key: string, maxMs: number): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    return Math.min(this.baseDelayMs * 2 ** failures, maxMs);
  }

  /** Failures counted for `key` since its last success. */
  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Forgets `key`'s failures (after a successful reconcile). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Takes one token (going into debt when empty, like golang.org/x/time/rate's Reserve) and returns the wait. */
  private bucketDelay(): number {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.refilledAt) / 1000) * this.qps);
    this.refilledAt = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }
}
