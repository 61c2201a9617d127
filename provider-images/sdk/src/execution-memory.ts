/**
 * Remembers invoke outcomes by idempotency key, so a repeated key returns the stored receipt without
 * calling the business system again, and concurrent invokes with one key share one call.
 *
 * Only final outcomes are kept (success, and business refusals such as `forbidden` or `conflict`);
 * retryable ones (`unavailable`, `timeout`, `unknown_outcome`, `internal`) are not, so Core's retry with
 * the same key reaches the business system again. Memory is per process and bounded: a restarted provider
 * forgets, which is why the key is also passed to the business system, whose own idempotency is the
 * durable backstop.
 */
import type { ExecutionStatus, InvokeResponse } from "./contract.ts";

interface Entry {
  fingerprint: string;
  response: InvokeResponse;
}

interface Running {
  fingerprint: string;
  outcome: Promise<InvokeResponse>;
}

/** What a piece of work produced and whether it is final enough to replay for the same key. */
export interface WorkOutcome {
  response: InvokeResponse;
  final: boolean;
}

/** Bounded in-memory outcomes by idempotency key (oldest evicted first), plus the calls in flight. */
export class ExecutionMemory {
  private readonly done = new Map<string, Entry>();
  private readonly running = new Map<string, Running>();
  private readonly maxEntries: number;

  constructor(options: { maxEntries?: number } = {}) {
    this.maxEntries = options.maxEntries ?? 10_000;
  }

  /**
   * Runs `work` once for `key`. A stored or running outcome for the same `fingerprint` (digest of the
   * request) is shared; a different fingerprint under the same key is answered `failed/conflict`.
   */
  async run(key: string, fingerprint: string, work: () => Promise<WorkOutcome>): Promise<InvokeResponse> {
    const known = this.done.get(key) ?? this.running.get(key);
    if (known) {
      if (known.fingerprint !== fingerprint) {
        return {
          status: "failed",
          errorKind: "conflict",
          message: `idempotency key ${key} was already used for a different request`,
        };
      }
      return "response" in known ? known.response : known.outcome;
    }
    const outcome = work()
      .then(({ response, final }) => {
        if (final) this.remember(key, { fingerprint, response });
        return response;
      })
      .finally(() => this.running.delete(key));
    this.running.set(key, { fingerprint, outcome });
    return outcome;
  }

  /** `GET /v1/executions/{key}`: the stored outcome, `in_progress` while running, else `not_found`. */
  status(key: string): ExecutionStatus {
    const entry = this.done.get(key);
    if (entry) return { idempotencyKey: key, status: entry.response.status, response: entry.response };
    if (this.running.has(key)) return { idempotencyKey: key, status: "in_progress" };
    return { idempotencyKey: key, status: "not_found" };
  }

  private remember(key: string, entry: Entry): void {
    this.done.set(key, entry);
    while (this.done.size > this.maxEntries) {
      const oldest = this.done.keys().next().value;
      if (oldest === undefined) break;
      this.done.delete(oldest);
    }
  }
}
