import { describe, expect, it } from "vitest";
import { isSessionRateLimited, SessionRateLimited, sessionLimiter } from "./session-limits.ts";

const refusalOf = (f: () => unknown): SessionRateLimited => {
  try {
    f();
  } catch (error) {
    if (isSessionRateLimited(error)) return error;
    throw error;
  }
  throw new Error("admitted");
};

describe("sessionLimiter", () => {
  it("admits a session's burst at once, then refuses with the seconds until a token drips in", () => {
    const limiter = sessionLimiter({ requestsPerSecond: 1, burst: 3, maxInFlight: 100 });
    for (let i = 0; i < 3; i++) limiter.admit("a")();
    const refusal = refusalOf(() => limiter.admit("a"));
    expect(refusal.kind).toBe("unavailable");
    expect(refusal.retryAfterSeconds).toBe(1);
    expect(refusal.message).toContain("1 requests per second (burst 3)");
  });

  it("keeps one session's flood from touching another session's bucket", () => {
    const limiter = sessionLimiter({ requestsPerSecond: 1, burst: 2, maxInFlight: 100 });
    limiter.admit("flood")();
    limiter.admit("flood")();
    expect(() => limiter.admit("flood")).toThrow(SessionRateLimited);
    expect(() => limiter.admit("quiet")()).not.toThrow();
  });

  it("caps requests in flight and frees a slot when one is released, once however often it is called", () => {
    const limiter = sessionLimiter({ requestsPerSecond: 1000, burst: 1000, maxInFlight: 2 });
    const first = limiter.admit("a");
    limiter.admit("a");
    expect(limiter.inFlight("a")).toBe(2);
    const refusal = refusalOf(() => limiter.admit("a"));
    expect(refusal.message).toContain("2 requests in flight");
    first();
    first();
    expect(limiter.inFlight("a")).toBe(1);
    limiter.admit("a");
    expect(() => limiter.admit("a")).toThrow(SessionRateLimited);
  });

  it("refills at the sustained rate", async () => {
    const limiter = sessionLimiter({ requestsPerSecond: 20, burst: 1, maxInFlight: 100 });
    limiter.admit("a")();
    expect(() => limiter.admit("a")).toThrow(SessionRateLimited);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(() => limiter.admit("a")()).not.toThrow();
  });
});
