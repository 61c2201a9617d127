import { describe, expect, it } from "vitest";
import { FAILPOINTS } from "../../operator/src/core/failpoints.ts";
import { FAULT_KINDS, scheduleOf } from "./schedule.ts";

const SEEDS = Array.from({ length: 300 }, (_, i) => i + 1);

describe("the campaign schedule", () => {
  it("is the same for the same seed and run", () => {
    for (const seed of [1, 42, 7_777]) {
      for (const run of [0, 1, 5]) expect(scheduleOf(seed, run)).toEqual(scheduleOf(seed, run));
    }
  });

  it("differs between seeds and between runs of one seed", () => {
    const bySeed = new Set(SEEDS.slice(0, 50).map((seed) => JSON.stringify(scheduleOf(seed, 0).steps)));
    expect(bySeed.size).toBeGreaterThan(25);
    const byRun = new Set([0, 1, 2, 3, 4, 5, 6, 7].map((run) => JSON.stringify(scheduleOf(9, run).steps)));
    expect(byRun.size).toBeGreaterThan(4);
  });

  it("draws every fault kind across a few hundred seeds, and at least one fault in every run", () => {
    const drawn = new Map<string, number>();
    for (const seed of SEEDS) {
      const { faults } = scheduleOf(seed, 0);
      expect(faults.length).toBeGreaterThan(0);
      for (const fault of faults) drawn.set(fault.kind, (drawn.get(fault.kind) ?? 0) + 1);
    }
    expect([...drawn.keys()].sort()).toEqual([...FAULT_KINDS].sort());
  });

  it("arms only listed failpoints, the gateway's dispatch points only for Auto calls, the controller's only for approved ones", () => {
    for (const seed of SEEDS) {
      const { calls, faults } = scheduleOf(seed, 1);
      for (const fault of faults.filter((f) => f.point)) {
        const call = calls[fault.call]!;
        expect(Object.keys(FAILPOINTS)).toContain(fault.point);
        if (fault.kind === "gateway-killed" && fault.point?.startsWith("dispatch.")) {
          expect(call.policy).toBe("Auto");
        }
        if (fault.kind !== "gateway-killed") {
          expect(fault.point?.startsWith("invoke.")).toBe(false);
          expect(call.policy).toBe("Required");
          if (fault.point?.startsWith("dispatch.")) expect(call.decision).toMatch(/^approve(-twice)?$/);
        }
      }
    }
  });

  it("decides every Required call and settles every call, after its invoke", () => {
    for (const seed of SEEDS.slice(0, 100)) {
      const { calls, steps } = scheduleOf(seed, 2);
      for (const call of calls) {
        const at = (kind: string) =>
          steps.findIndex((s) => s.kind === kind && "call" in s && s.call === call.index);
        expect(at("invoke")).toBeGreaterThanOrEqual(0);
        expect(at("settle")).toBeGreaterThan(at("invoke"));
        if (call.policy === "Required") expect(at("decide")).toBeGreaterThan(at("invoke"));
        else expect(at("decide")).toBe(-1);
      }
      // Every armed replica is awaited before the next is armed.
      let armed = 0;
      for (const step of steps) {
        if (step.kind === "arm") armed += 1;
        if (step.kind === "await-failpoint") armed -= 1;
        expect(armed).toBeLessThanOrEqual(1);
      }
      expect(armed).toBe(0);
    }
  });

  it("restarts Postgres or kube-apiserver only under an approved call, after its decision", () => {
    let restarts = 0;
    for (const seed of SEEDS) {
      const { calls, faults, steps } = scheduleOf(seed, 3);
      for (const fault of faults) {
        const step = { "postgres-restarted": "restart-postgres", "apiserver-restarted": "restart-apiserver" }[
          fault.kind as string
        ];
        if (!step) continue;
        restarts += 1;
        const call = calls[fault.call]!;
        expect(call.policy).toBe("Required");
        expect(call.decision).toMatch(/^approve(-twice)?$/);
        expect(call.behaviour).not.toBe("ok");
        const at = (kind: string) =>
          steps.findIndex((s) => s.kind === kind && "call" in s && s.call === call.index);
        expect(at(step)).toBeGreaterThan(at("decide"));
        expect(at("settle")).toBeGreaterThan(at(step));
      }
    }
    expect(restarts).toBeGreaterThan(0);
  });
});
