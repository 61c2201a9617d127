import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import {
  defaultRetryPolicy,
  failureOf,
  isFinalFailure,
  type ModelFailure,
  retryAfterMsOf,
  retryDecision,
} from "./retry.ts";

const status = (
  code: number,
  extra: Partial<Extract<ModelFailure, { kind: "status" }>> = {},
): ModelFailure => ({
  kind: "status",
  status: code,
  retryAfterMs: undefined,
  shouldRetry: undefined,
  ...extra,
});
const noJitter = () => 0;
const fullJitter = () => 0.999;

describe("retryDecision", () => {
  it.each([429, 500, 502, 503, 504])("retries HTTP %i", (code) => {
    expect(retryDecision(status(code), 1, defaultRetryPolicy, noJitter)).toMatchObject({ retry: true });
  });

  it.each([400, 401, 403, 404, 408, 409, 413, 422])("does not retry HTTP %i", (code) => {
    expect(retryDecision(status(code), 1)).toMatchObject({ retry: false });
  });

  it("does not retry a 4xx even when the endpoint says x-should-retry: true", () => {
    expect(retryDecision(status(400, { shouldRetry: true }), 1)).toMatchObject({ retry: false });
  });

  it("does not retry a 5xx the endpoint marks x-should-retry: false", () => {
    expect(retryDecision(status(500, { shouldRetry: false }), 1)).toMatchObject({ retry: false });
  });

  it("retries connection failures and timeouts with backoff", () => {
    expect(retryDecision({ kind: "connection" }, 1, defaultRetryPolicy, noJitter)).toEqual({
      retry: true,
      delayMs: 500,
      why: "backoff",
    });
    expect(retryDecision({ kind: "timeout" }, 2, defaultRetryPolicy, noJitter)).toMatchObject({
      retry: true,
      delayMs: 1000,
    });
  });

  it("doubles the backoff per attempt up to the cap, with up to 25% less for jitter", () => {
    const delays = [1, 2, 3, 4].map(
      (attempt) =>
        (retryDecision(status(503), attempt, defaultRetryPolicy, noJitter) as { delayMs: number }).delayMs,
    );
    expect(delays).toEqual([500, 1000, 2000, 4000]);
    const capped = retryDecision(status(503), 4, { ...defaultRetryPolicy, maxDelayMs: 1500 }, fullJitter);
    expect(capped).toMatchObject({ retry: true });
    const delay = (capped as { delayMs: number }).delayMs;
    expect(delay).toBeGreaterThan(1500 * 0.75);
    expect(delay).toBeLessThanOrEqual(1500);
  });

  it("waits at least as long as Retry-After asks, however the jitter falls", () => {
    for (const random of [noJitter, fullJitter]) {
      const decision = retryDecision(status(429, { retryAfterMs: 1000 }), 1, defaultRetryPolicy, random);
      expect(decision).toMatchObject({ retry: true, why: "Retry-After" });
      const delay = (decision as { delayMs: number }).delayMs;
      expect(delay).toBeGreaterThanOrEqual(1000);
      expect(delay).toBeLessThan(1250);
    }
  });

  it("gives up instead of retrying early when Retry-After is longer than it waits", () => {
    const decision = retryDecision(status(429, { retryAfterMs: 3_600_000 }), 1);
    expect(decision).toMatchObject({ retry: false });
    expect(decision.why).toMatch(/3600 s/);
  });

  it("stops after maxRetries retries", () => {
    const policy = { ...defaultRetryPolicy, maxRetries: 2 };
    expect(retryDecision(status(500), 2, policy)).toMatchObject({ retry: true });
    expect(retryDecision(status(500), 3, policy)).toMatchObject({ retry: false });
  });

  it("does not retry what is not a model endpoint failure", () => {
    expect(retryDecision({ kind: "other" }, 1)).toMatchObject({ retry: false });
  });
});

describe("isFinalFailure", () => {
  it.each<[string, ModelFailure, boolean]>([
    ["a 500 the endpoint marks x-should-retry: false", status(500, { shouldRetry: false }), true],
    ["a 429 the endpoint marks x-should-retry: false", status(429, { shouldRetry: false }), true],
    ["a 400", status(400), true],
    ["a 404 even with x-should-retry: true", status(404, { shouldRetry: true }), true],
    ["the token-budget refusal", { kind: "budget", message: "used up" }, true],
    ["a 500 without retry advice", status(500), false],
    ["a 503 with x-should-retry: true", status(503, { shouldRetry: true }), false],
    ["a 429 with Retry-After", status(429, { retryAfterMs: 1000 }), false],
    ["a connection failure", { kind: "connection" }, false],
    ["a timeout", { kind: "timeout" }, false],
    ["anything else", { kind: "other" }, false],
  ])("calls %s final: %s", (_what, failure, final) => {
    expect(isFinalFailure(failure)).toBe(final);
  });

  it("is final for every failure that a retry decision refuses on the endpoint's word, never for giving up", () => {
    expect(retryDecision(status(500, { shouldRetry: false }), 1).retry).toBe(false);
    expect(retryDecision(status(500), defaultRetryPolicy.maxRetries + 1).retry).toBe(false);
    expect(isFinalFailure(status(500))).toBe(false);
  });
});

describe("retryAfterMsOf", () => {
  it("reads retry-after-ms first, then Retry-After seconds or an HTTP date", () => {
    expect(retryAfterMsOf(new Headers({ "retry-after-ms": "250", "retry-after": "9" }))).toBe(250);
    expect(retryAfterMsOf(new Headers({ "retry-after": "2" }))).toBe(2000);
    const now = Date.parse("2026-12-01T10:00:00Z");
    expect(retryAfterMsOf(new Headers({ "retry-after": "Tue, 01 Dec 2026 10:00:05 GMT" }), now)).toBe(5000);
    expect(retryAfterMsOf(new Headers({ "retry-after": "Tue, 01 Dec 2026 09:00:00 GMT" }), now)).toBe(0);
  });

  it("is undefined when the header is absent or unreadable", () => {
    expect(retryAfterMsOf(new Headers())).toBeUndefined();
    expect(retryAfterMsOf(new Headers({ "retry-after": "soon" }))).toBeUndefined();
    expect(retryAfterMsOf(undefined)).toBeUndefined();
  });
});

describe("failureOf", () => {
  it("classifies the SDK's status errors with their retry headers", () => {
    const error = OpenAI.APIError.generate(
      429,
      { error: { message: "slow down" } },
      "slow down",
      new Headers({ "retry-after": "1", "x-should-retry": "false" }),
    );
    expect(failureOf(error)).toEqual({ kind: "status", status: 429, retryAfterMs: 1000, shouldRetry: false });
  });

  it("recognises the model proxy's token-budget refusal, which is never retried", () => {
    const error = OpenAI.APIError.generate(
      400,
      {
        error: {
          message: "Token budget exhausted: this session used 1234 of its 1000 tokens (tokenBudget).",
          type: "budget_exceeded",
          code: "token_budget_exceeded",
          param: null,
        },
      },
      undefined,
      new Headers({ "x-should-retry": "false" }),
    );
    const failure = failureOf(error);
    expect(failure).toEqual({
      kind: "budget",
      message: "Token budget exhausted: this session used 1234 of its 1000 tokens (tokenBudget).",
    });
    expect(retryDecision(failure, 1)).toMatchObject({ retry: false });
  });

  it("classifies connection failures, timeouts and anything else", () => {
    expect(failureOf(new OpenAI.APIConnectionError({ message: "reset" }))).toEqual({ kind: "connection" });
    expect(failureOf(new OpenAI.APIConnectionTimeoutError())).toEqual({ kind: "timeout" });
    expect(failureOf(new OpenAI.APIUserAbortError())).toEqual({ kind: "other" });
    expect(failureOf(new Error("boom"))).toEqual({ kind: "other" });
  });
});
