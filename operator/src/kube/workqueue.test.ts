import { describe, expect, it } from "vitest";
import { WorkQueue } from "./workqueue.ts";

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
      (_key, error) => errors.push(String(error)),
    );
    queue.add("x");
    await running;
    expect(attempts).toBe(3);
    expect(errors).toEqual(["Error: attempt 1", "Error: attempt 2"]);
  });
});
