import { describe, expect, it } from "vitest";
import type { Child, ExitInfo } from "./child.ts";
import { Restarting, restartDelay } from "./restart.ts";

const policy = { initialDelayMs: 40, maxDelayMs: 100, resetAfterMs: 10_000 };

/** A child that exits when told: `crash()` is an exit nobody asked for. */
function fakeChild() {
  let exit: (info: ExitInfo) => void = () => {};
  let running = true;
  let stopping = false;
  const exited = new Promise<ExitInfo>((resolve) => {
    exit = (info) => {
      running = false;
      resolve(info);
    };
  });
  const child: Child = {
    pid: 1,
    get running() {
      return running;
    },
    get stopping() {
      return stopping;
    },
    write() {},
    exited,
    async stop() {
      stopping = true;
      exit({ code: 0, signal: null, stderrTail: "" });
      return exited;
    },
  };
  return { child, crash: () => exit({ code: 1, signal: null, stderrTail: "boom" }) };
}

describe("restartDelay", () => {
  it("doubles from the initial delay up to the cap", () => {
    expect([0, 1, 2, 3, 4].map((failures) => restartDelay(failures, policy))).toEqual([0, 40, 80, 100, 100]);
  });
});

describe("Restarting", () => {
  it("reuses the running child, restarts a crashed one after the backoff, and a stopped one at once", async () => {
    const children: ReturnType<typeof fakeChild>[] = [];
    const restarting = new Restarting(async () => {
      children.push(fakeChild());
      return children.at(-1)!.child;
    }, policy);
    const first = await restarting.get();
    expect(await restarting.get()).toBe(first);
    expect(restarting.starts).toBe(1);

    children[0]!.crash();
    await first.exited;
    let started = Date.now();
    const second = await restarting.get();
    expect(second).not.toBe(first);
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);

    children[1]!.crash();
    await second.exited;
    started = Date.now();
    await restarting.get();
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);

    await restarting.stop();
    started = Date.now();
    await restarting.get();
    expect(Date.now() - started).toBeLessThan(35);
    expect(restarting.starts).toBe(4);
  });

  it("counts a failed start as a crash", async () => {
    let calls = 0;
    const restarting = new Restarting(async () => {
      calls += 1;
      if (calls === 1) throw new Error("did not start");
      return fakeChild().child;
    }, policy);
    await expect(restarting.get()).rejects.toThrow("did not start");
    const started = Date.now();
    await restarting.get();
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
  });
});
