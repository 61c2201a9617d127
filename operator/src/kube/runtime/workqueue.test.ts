import { describe, expect, it } from "vitest";
import { ControllerRateLimiter } from "./rate-limiter.ts";
import { TerminalError, WorkQueue } from "./workqueue.ts";

describe("WorkQueue", () => {
  it("deduplicates a key added several times before it is processed", async () => {
    const queue = new WorkQueue();
    const seen: string[] = [];
    queue.add("a");
    queue.add("a");
    queue.add("b");
    const running = queue.run(
      1,
      async (key) => {
        seen.push(key);
        if (seen.length === 2) queue.stop();
        return undefined;
      },
      () => {},
    );
    await running;
    expect(seen).toEqual(["a", "b"]);
  });

  it("never processes one key on two workers at once, and re-runs a key added while it ran", async () => {
    const queue = new WorkQueue();
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const running = queue.run(
      4,
      async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        runs++;
        if (runs === 1) queue.add("k");
        await new Promise((resolve) => setTimeout(resolve, 5));
        active--;
        if (runs === 2) queue.stop();
        return undefined;
      },
      () => {},
    );
    queue.add("k");
    await running;
    expect(maxActive).toBe(1);
    expect(runs).toBe(2);
  });

  it("tells how long each key waited: a key added to idle workers is taken at once, a second one waits for a worker", async () => {
    const queue = new WorkQueue();
    const waits = new Map<string, number>();
    const running = queue.run(
      1,
      async (key) => {
        if (key === "first") await new Promise((resolve) => setTimeout(resolve, 30));
        if (key === "second") queue.stop();
        return undefined;
      },
      () => {},
      (key, waitedMs) => waits.set(key, waitedMs),
    );
    queue.add("first");
    queue.add("second");
    await running;
    expect(waits.get("first")).toBeLessThan(5);
    expect(waits.get("second")).toBeGreaterThanOrEqual(25);
  });

  it("retries a failing key with backoff until it succeeds", async () => {
    const queue = new WorkQueue();
    const errors: string[] = [];
    let attempts = 0;
    const running = queue.run(
      1,
      async () => {
        attempts++;
        if (attempts < 3) throw new Error(`attempt ${attempts}`);
        queue.stop();
        return undefined;
      },
      (_key, outcome, _ms, error) => {
        if (outcome === "error") errors.push(String(error));
      },
    );
    queue.add("x");
    await running;
    expect(attempts).toBe(3);
    expect(errors).toEqual(["Error: attempt 1", "Error: attempt 2"]);
  });

  it("gives up on a TerminalError without retrying and reports it", async () => {
    const queue = new WorkQueue();
    const outcomes: string[] = [];
    let attempts = 0;
    const running = queue.run(
      1,
      async (key) => {
        attempts++;
        if (key === "bad") throw new TerminalError("spec cannot work");
        queue.stop();
        return undefined;
      },
      (key, outcome) => outcomes.push(`${key}:${outcome}`),
    );
    queue.add("bad");
    setTimeout(() => queue.add("good"), 50);
    await running;
    expect(attempts).toBe(2);
    expect(outcomes).toEqual(["bad:terminal", "good:success"]);
    expect(queue.retries("bad")).toBe(0);
  });

  it("retries a key its RetryCap caps within the cap, however often it failed", async () => {
    // Uncapped, the twelfth retry alone would wait 5 ms × 2^11 ≈ 10 s, past the test's timeout.
    const unavailable = new Error("the dependency is down");
    const queue = new WorkQueue(undefined, (error) => (error === unavailable ? 20 : undefined));
    let attempts = 0;
    const running = queue.run(
      1,
      async () => {
        attempts++;
        if (attempts <= 12) throw unavailable;
        queue.stop();
        return undefined;
      },
      () => {},
    );
    queue.add("k");
    await running;
    expect(attempts).toBe(13);
  });

  it("keeps the earliest of several delays pending for one key", async () => {
    const queue = new WorkQueue();
    const seen: string[] = [];
    queue.addAfter("k", 60_000);
    queue.addAfter("k", 10);
    await queue.run(
      1,
      async (key) => {
        seen.push(key);
        queue.stop();
        return undefined;
      },
      () => {},
    );
    expect(seen).toEqual(["k"]);
  });
});

describe("ControllerRateLimiter", () => {
  it("takes low-priority keys only when no other key waits, and moves one up when an event adds it", async () => {
    const queue = new WorkQueue();
    const seen: string[] = [];
    queue.add("poll-1", true);
    queue.add("poll-2", true);
    queue.add("event-1");
    queue.add("poll-3", true);
    queue.add("poll-2"); // an event for a key waiting to be polled: it moves up, once
    queue.add("event-2");
    queue.add("event-1", true); // already waiting at normal priority: stays there
    expect(queue.length).toBe(5);
    await queue.run(
      1,
      async (key) => {
        seen.push(key);
        if (seen.length === 5) queue.stop();
        return undefined;
      },
      () => {},
    );
    expect(seen).toEqual(["event-1", "poll-2", "event-2", "poll-1", "poll-3"]);
  });

  it("requeues a low-priority result behind the keys that arrived meanwhile", async () => {
    const queue = new WorkQueue();
    const seen: string[] = [];
    const running = queue.run(
      1,
      async (key) => {
        seen.push(key);
        if (seen.length === 1) {
          // While the poll runs, a second key arrives; the poll's requeue (after 0 ms) waits behind both.
          queue.add("event");
          setTimeout(() => queue.add("later"), 5);
          return { requeueAfterMs: 0, lowPriority: true };
        }
        if (key === "event") await new Promise((resolve) => setTimeout(resolve, 20));
        if (seen.length === 3) queue.stop();
        return undefined;
      },
      () => {},
    );
    queue.add("poll");
    await running;
    expect(seen).toEqual(["poll", "event", "later"]);
  });

  it("backs a key off exponentially from 5 ms and forgets it after a success", () => {
    const limiter = new ControllerRateLimiter({ now: () => 0 });
    expect([1, 2, 3, 4].map(() => limiter.when("k"))).toEqual([5, 10, 20, 40]);
    expect(limiter.when("other")).toBe(5);
    limiter.forget("k");
    expect(limiter.when("k")).toBe(5);
  });

  it("caps the per-key delay at 1000 s", () => {
    const limiter = new ControllerRateLimiter({ now: () => 0, burst: 1_000 });
    let delay = 0;
    for (let i = 0; i < 40; i++) delay = limiter.when("k");
    expect(delay).toBe(1_000_000);
  });

  it("caps a dependency failure's delay, while an ordinary failure of the key keeps growing", () => {
    const limiter = new ControllerRateLimiter({ now: () => 0, burst: 1_000 });
    const capped = Array.from({ length: 12 }, () => limiter.whenCapped("k", 2_000));
    expect(capped.slice(0, 3)).toEqual([5, 10, 20]);
    expect(capped.at(-1)).toBe(2_000);
    expect(limiter.retries("k")).toBe(12);
    expect(limiter.when("k")).toBe(5 * 2 ** 12);
  });

  it("keeps a dependency failure out of the token bucket, however many keys wait on it", () => {
    const limiter = new ControllerRateLimiter({ now: () => 0 });
    const delays = Array.from({ length: 1_000 }, (_, i) => limiter.whenCapped(`k${i}`, 2_000));
    expect(Math.max(...delays)).toBe(5);
    // The bucket was not drawn on: a burst of ordinary failures still gets through at once.
    expect(limiter.when("fresh")).toBe(5);
  });

  it("lets a burst of 100 fresh keys through, then spaces retries at 10 per second", () => {
    let now = 0;
    const limiter = new ControllerRateLimiter({ now: () => now });
    const first = Array.from({ length: 100 }, (_, i) => limiter.when(`k${i}`));
    expect(Math.max(...first)).toBe(5);
    expect(limiter.when("k100")).toBeCloseTo(100, 6);
    expect(limiter.when("k101")).toBeCloseTo(200, 6);
    now = 1_000; // ten tokens later the debt of two is paid and eight are back
    expect(limiter.when("k102")).toBe(5);
  });
});
