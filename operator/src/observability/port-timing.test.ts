import { describe, expect, it } from "vitest";
import { timedFunction, timedPort } from "./port-timing.ts";

function recorder() {
  const calls: string[] = [];
  return { calls, observe: (port: string, method: string) => void calls.push(`${port}.${method}`) };
}

describe("timedPort", () => {
  it("observes each method call once, when its promise settles, with `this` still the port", async () => {
    const { calls, observe } = recorder();
    let release: () => void = () => {};
    const port = {
      rows: 2,
      async count(): Promise<number> {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return this.rows;
      },
    };
    const timed = timedPort(port, "store", observe);
    const pending = timed.count();
    await Promise.resolve();
    expect(calls).toEqual([]);
    release();
    expect(await pending).toBe(2);
    expect(calls).toEqual(["store.count"]);
    expect(timed.rows).toBe(2);
    expect(timed.count).toBe(timed.count);
  });

  it("observes rejected and thrown calls and passes the error on", async () => {
    const { calls, observe } = recorder();
    const port = {
      async refuse(): Promise<void> {
        throw new Error("refused");
      },
      fail(): void {
        throw new Error("failed");
      },
    };
    const timed = timedPort(port, "p", observe);
    await expect(timed.refuse()).rejects.toThrow("refused");
    expect(() => timed.fail()).toThrow("failed");
    expect(calls).toEqual(["p.refuse", "p.fail"]);
  });

  it("observes a synchronous function when it returns", () => {
    const { calls, observe } = recorder();
    const add = timedFunction((a: number, b: number) => a + b, "math", "add", observe);
    expect(add(1, 2)).toBe(3);
    expect(calls).toEqual(["math.add"]);
  });
});
