import { describe, expect, it } from "vitest";
import type { ApiRequest } from "./api-audit-log.ts";
import { nodeStages, parseNodeLog } from "./node-stages.ts";

const binding = (namespace: string, name: string, receivedMs: number): ApiRequest => ({
  verb: "create",
  user: "system:kube-scheduler",
  resource: "pods",
  subresource: "binding",
  namespace,
  name,
  code: 201,
  receivedMs,
  completedMs: receivedMs + 1,
});

const line = (fields: Record<string, unknown>) => JSON.stringify({ level: 30, ...fields });

describe("the local node's part of a pod's start, from its log", () => {
  const log = parseNodeLog(
    [
      line({ time: 1_000, msg: "local node running" }),
      "not json: a stack trace line",
      line({
        time: 1_400,
        msg: "pod started",
        namespace: "a",
        name: "p0",
        seenAt: 1_100,
        msSinceSeen: { network: 50, policy: 150, volumes: 170, spawned: 200, running: 300 },
      }),
      line({
        time: 1_600,
        msg: "pod started",
        namespace: "a",
        name: "p1",
        seenAt: 1_200,
        msSinceSeen: { network: 20, policy: 320, volumes: 330, spawned: 340, running: 400 },
      }),
      line({
        time: 1_700,
        msg: "pod started",
        namespace: "b",
        name: "p0",
        seenAt: 1_300,
        msSinceSeen: { running: 10 },
      }),
      line({ time: 1_150, msg: "NetworkPolicy rules installed", ms: 30, planMs: 80, pods: 2, waiting: 1 }),
      line({ time: 1_500, msg: "NetworkPolicy rules unchanged", planMs: 40, pods: 2, waiting: 2 }),
      line({ time: 1_800, msg: "pod network removed", namespace: "b", name: "p0" }),
      line({ time: 9_000, msg: "NetworkPolicy rules installed", ms: 99, planMs: 99, pods: 9, waiting: 9 }),
    ].join("\n"),
  );

  it("reads each pod's first start and each pass of the NetworkPolicy enforcer", () => {
    expect(log.starts.map((s) => `${s.namespace}/${s.name}`)).toEqual(["a/p0", "a/p1", "b/p0"]);
    expect(log.released).toEqual(new Map([["b", 1]]));
    expect(log.passes).toEqual([
      { time: 1_150, planMs: 80, installMs: 30, pods: 2, waiting: 1 },
      { time: 1_500, planMs: 40, pods: 2, waiting: 2 },
      { time: 9_000, planMs: 99, installMs: 99, pods: 9, waiting: 9 },
    ]);
  });

  it("splits one namespace's pods by stage, from the binding, and counts the passes in the window", () => {
    const stages = nodeStages(log, [binding("a", "p0", 1_090), binding("a", "p1", 1_150)], "a", 1_000, 2_000);
    expect(stages.pods).toBe(2);
    expect(stages.stageMs.seen).toEqual({ p50Ms: 10, p95Ms: 50 });
    expect(stages.stageMs.network).toEqual({ p50Ms: 20, p95Ms: 50 });
    expect(stages.stageMs.policy).toEqual({ p50Ms: 100, p95Ms: 300 });
    expect(stages.stageMs.running).toEqual({ p50Ms: 60, p95Ms: 100 });
    expect(stages.seenToRunning).toEqual({ p50Ms: 300, p95Ms: 400 });
    expect(stages.policyPasses).toEqual({
      passes: 2,
      installs: 1,
      planMs: { p50Ms: 40, p95Ms: 80, total: 120 },
      installMs: { p50Ms: 30, p95Ms: 30, total: 30 },
      maxWaiting: 2,
      maxPods: 2,
    });
  });
});
