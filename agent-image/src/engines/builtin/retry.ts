/**
 * When to ask the model endpoint again (DESIGN §9): 429 and 5xx answers, connection failures and
 * timeouts are retried with exponential backoff and jitter, and a `Retry-After` (or `retry-after-ms`)
 * is honoured — never retried earlier than the endpoint asked; other 4xx answers are not retried, nor
 * is an answer carrying `x-should-retry: false`, nor the model proxy's token-budget refusal
 * (`BUDGET_EXCEEDED` in the agent protocol: final for the whole session). Pure: the
 * engine classifies the error once (`failureOf`), asks `retryDecision` per attempt, and marks the
 * error that ends the run final when `isFinalFailure` says no new pod could do better.
 *
 * The backoff follows openai-node's `calculateDefaultRetryTimeoutMillis` (0.5 s doubling to 8 s, up to
 * 25% less for jitter); the engine does its own retries (the SDK client runs with `maxRetries: 0`)
 * because the SDK also retries 408/409, honours `x-should-retry: true` on any status, and replaces a
 * Retry-After above 60 s by its own shorter backoff.
 */
import { isBudgetExceeded } from "@gatehouse/operator/agent-protocol";
import OpenAI from "openai";

/** How the engine retries; milliseconds. */
export interface RetryPolicy {
  /** Retries after the first attempt (so at most maxRetries + 1 requests). */
  maxRetries: number;
  /** Backoff of the first retry; doubled per retry. */
  baseDelayMs: number;
  /** Cap of the computed backoff (not of Retry-After). */
  maxDelayMs: number;
  /** The longest Retry-After honoured; an endpoint asking for longer ends the run instead. */
  maxRetryAfterMs: number;
}

/** The defaults: 4 retries, 500 ms doubling to 8 s, Retry-After honoured up to 60 s. */
export const defaultRetryPolicy: RetryPolicy = {
  maxRetries: 4,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

/** A failed model request, as far as retrying is concerned. */
export type ModelFailure =
  | {
      kind: "status";
      status: number;
      /** Milliseconds the endpoint asked to wait (Retry-After / retry-after-ms), when it did. */
      retryAfterMs: number | undefined;
      /** The `x-should-retry` header: `false` means the endpoint knows a retry cannot succeed. */
      shouldRetry: boolean | undefined;
    }
  /** The model proxy refused: the session's token budget is used up. */
  | { kind: "budget"; message: string }
  | { kind: "connection" }
  | { kind: "timeout" }
  | { kind: "other" };

/** Whether to retry, and after how long. `why` is for the log line. */
export type RetryDecision = { retry: true; delayMs: number; why: string } | { retry: false; why: string };

/**
 * The wait a response asks for, in milliseconds: `retry-after-ms` (non-standard, sent by OpenAI),
 * else `Retry-After` as delta-seconds or an HTTP date (RFC 9110 §10.2.3). Undefined when absent or
 * unreadable; a date in the past is 0.
 */
export function retryAfterMsOf(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  const ms = headers?.get("retry-after-ms");
  if (ms && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Number.parseFloat(ms);
  const value = headers?.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number.parseFloat(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Classifies what a model request threw (an openai SDK error, or anything else). */
export function failureOf(error: unknown): ModelFailure {
  if (error instanceof OpenAI.APIConnectionTimeoutError) return { kind: "timeout" };
  if (error instanceof OpenAI.APIUserAbortError) return { kind: "other" };
  if (error instanceof OpenAI.APIConnectionError) return { kind: "connection" };
  if (error instanceof OpenAI.APIError && typeof error.status === "number") {
    if (isBudgetExceeded(error)) {
      const message = (error.error as { message?: unknown } | undefined)?.message;
      return { kind: "budget", message: typeof message === "string" ? message : error.message };
    }
    const header = error.headers?.get("x-should-retry");
    return {
      kind: "status",
      status: error.status,
      retryAfterMs: retryAfterMsOf(error.headers),
      shouldRetry: header === "false" ? false : header === "true" ? true : undefined,
    };
  }
  return { kind: "other" };
}

/**
 * True when `failure` is final: no later request — from this pod or a new one — can succeed, so the
 * run ends for good (`run-agent.ts` exits `EXIT_FINAL` and the operator starts no new pod). That is a
 * 4xx other than 429 (the request itself is refused), any status whose answer carries
 * `x-should-retry: false` (the endpoint knows a retry cannot succeed, e.g. a deterministic 500), and
 * the token-budget refusal. Overload, connection failures and timeouts are not final, nor is giving up
 * after `maxRetries`: a later pod may find the endpoint back.
 */
export function isFinalFailure(failure: ModelFailure): boolean {
  if (failure.kind === "budget") return true;
  if (failure.kind !== "status") return false;
  const transient = failure.status === 429 || failure.status >= 500;
  return !transient || failure.shouldRetry === false;
}

/**
 * Whether attempt `attempt` (1 = the first request) that failed with `failure` is retried, and the
 * delay before the next one. `random` is in [0, 1) (Math.random in production, fixed in tests).
 */
export function retryDecision(
  failure: ModelFailure,
  attempt: number,
  policy: RetryPolicy = defaultRetryPolicy,
  random: () => number = Math.random,
): RetryDecision {
  if (failure.kind === "other") return { retry: false, why: "not a transient failure" };
  if (failure.kind === "budget") return { retry: false, why: "the session's token budget is used up" };
  if (failure.kind === "status") {
    const transient = failure.status === 429 || failure.status >= 500;
    if (!transient) return { retry: false, why: `HTTP ${failure.status} is not retried` };
    if (failure.shouldRetry === false)
      return { retry: false, why: `HTTP ${failure.status} with x-should-retry: false` };
  }
  if (attempt > policy.maxRetries)
    return { retry: false, why: `gave up after ${attempt} attempts (maxRetries ${policy.maxRetries})` };
  const retryAfterMs = failure.kind === "status" ? failure.retryAfterMs : undefined;
  if (retryAfterMs !== undefined) {
    if (retryAfterMs > policy.maxRetryAfterMs) {
      return {
        retry: false,
        why: `the endpoint asks to wait ${Math.ceil(retryAfterMs / 1000)} s, longer than the ${policy.maxRetryAfterMs / 1000} s this agent waits`,
      };
    }
    // Never earlier than asked; a little later, so callers told the same second do not return together.
    return { retry: true, delayMs: retryAfterMs + random() * 250, why: "Retry-After" };
  }
  const backoff = Math.min(policy.baseDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
  return { retry: true, delayMs: backoff * (1 - random() * 0.25), why: "backoff" };
}
