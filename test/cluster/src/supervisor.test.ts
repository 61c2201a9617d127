import { type ChildProcess, spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import type { ExitInfo } from "./process.ts";
import {
  backoffResets,
  KUBELET_RESTART_BACKOFF,
  type RestartEvent,
  restartDelayMs,
  type SupervisedRun,
  Supervisor,
} from "./supervisor.ts";

describe("restartDelayMs", () => {
  it("follows the kubelet's back-off: 10 s doubling, capped at 5 min", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => restartDelayMs(KUBELET_RESTART_BACKOFF, n) / 1000);
    expect(delays).toEqual([10, 20, 40, 80, 160, 300, 300, 300]);
  });

  it("stays at the cap however many restarts came before", () => {
    expect(restartDelayMs({ initialDelayMs: 1_000, maxDelayMs: 4_000 }, 60)).toBe(4_000);
  });
});

describe("backoffResets", () => {
  it("forgets the back-off after a run of twice the cap, not before", () => {
    const backoff = { initialDelayMs: 1_000, maxDelayMs: 4_000 };
    expect(backoffResets(backoff, 7_999)).toBe(false);
    expect(backoffResets(backoff, 8_000)).toBe(true);
  });
});

/**
 * A real process that exits with `code` as soon as it has started. A shell, not node: a run longer than
 * twice the back-off's cap resets it, and a node process on a loaded machine can live past the 160 ms of
 * the test's cap, which made the delays start over.
 */
function exitingProcess(code: number): { child: ChildProcess; run: SupervisedRun } {
  const child = spawn("sh", ["-c", `exit ${code}`], { stdio: "ignore" });
  const exited = new Promise<ExitInfo>((resolve) =>
    child.once("exit", (exitCode, signal) => resolve({ code: exitCode, signal })),
  );
  return { child, run: { exited } };
}

describe("Supervisor", () => {
  it("restarts a process that keeps exiting with a growing, capped delay, and stops when told", async () => {
    const events: RestartEvent[] = [];
    let starts = 0;
    let enough: () => void = () => {};
    const fourRestarts = new Promise<void>((resolve) => {
      enough = resolve;
    });
    const supervisor = new Supervisor({ initialDelayMs: 20, maxDelayMs: 80 }, (event) => {
      events.push(event);
      if (events.length === 5) enough();
    });
    supervisor.supervise("crasher", exitingProcess(3).run, () => {
      starts += 1;
      return exitingProcess(3).run;
    });
    await fourRestarts;
    supervisor.stop();
    const startsAtStop = starts;
    await new Promise((resolve) => setTimeout(resolve, 300));

    expect(events.map((e) => e.delayMs)).toEqual([20, 40, 80, 80, 80]);
    expect(events.map((e) => e.restart)).toEqual([1, 2, 3, 4, 5]);
    expect(events.every((e) => e.name === "crasher" && e.exit.code === 3)).toBe(true);
    expect(startsAtStop).toBe(4);
    expect(starts).toBe(startsAtStop);
  });

  it("reports a killed process by its signal", async () => {
    const reported = new Promise<RestartEvent>((resolve) => {
      const supervisor = new Supervisor({ initialDelayMs: 10_000, maxDelayMs: 10_000 }, (event) => {
        supervisor.stop();
        resolve(event);
      });
      const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
      const exited = new Promise<ExitInfo>((done) =>
        child.once("exit", (code, signal) => done({ code, signal })),
      );
      supervisor.supervise("sleeper", { exited }, () => ({ exited: new Promise(() => {}) }));
      child.kill("SIGKILL");
    });
    expect(await reported).toMatchObject({
      name: "sleeper",
      exit: { code: null, signal: "SIGKILL" },
      restart: 1,
    });
  });
});
