/**
 * The local node's part of a pod's start, from its log (JSON lines, pino: `time` in epoch ms) and the
 * API server's audit log (the scheduler's binding), both on the host clock: per pod, from its binding
 * to the node's worker seeing it, then each stage of the worker's first start (node/startup-timeline.ts),
 * and the NetworkPolicy enforcer's passes meanwhile (network-policy/enforcer.ts: planning runs on the
 * node's one event loop, so its time is time every pod worker waits).
 */
import { readFileSync } from "node:fs";
import { RULES_INSTALLED_MESSAGE, RULES_UNCHANGED_MESSAGE } from "../cluster/src/network-policy/enforcer.ts";
import { POD_NETWORK_REMOVED_MESSAGE } from "../cluster/src/node/pod-worker.ts";
import {
  POD_STARTED_MESSAGE,
  type PodStartedLine,
  STARTUP_STAGES,
  type StartupStage,
} from "../cluster/src/node/startup-timeline.ts";
import type { ApiRequest } from "./api-audit-log.ts";
import { p50p95 } from "./percentiles.ts";

/** One pod's first start as the node logged it. */
export type PodStart = PodStartedLine & { namespace: string; name: string };

/** One pass of the NetworkPolicy enforcer: planned at `time`, installed or found unchanged. */
export type PolicyPass = { time: number; planMs: number; installMs?: number; pods: number; waiting: number };

/** What the node logged that the breakdown needs; `released`: pods whose network is gone, per namespace. */
export type NodeLog = { starts: PodStart[]; passes: PolicyPass[]; released: Map<string, number> };

type LogLine = Partial<PodStartedLine> & {
  msg?: string;
  time?: number;
  namespace?: string;
  name?: string;
  ms?: number;
  planMs?: number;
  pods?: number;
  waiting?: number;
};

/** Reads the node's log text (lines that are not JSON are skipped: a crash's stack, say). */
export function parseNodeLog(text: string): NodeLog {
  const starts: PodStart[] = [];
  const passes: PolicyPass[] = [];
  const released = new Map<string, number>();
  for (const raw of text.split("\n")) {
    if (!raw.startsWith("{")) continue;
    let line: LogLine;
    try {
      line = JSON.parse(raw) as LogLine;
    } catch {
      continue;
    }
    if (line.msg === POD_STARTED_MESSAGE && line.seenAt !== undefined && line.msSinceSeen) {
      starts.push({
        namespace: line.namespace ?? "",
        name: line.name ?? "",
        seenAt: line.seenAt,
        msSinceSeen: line.msSinceSeen,
      });
    }
    if (line.msg === POD_NETWORK_REMOVED_MESSAGE && line.namespace) {
      released.set(line.namespace, (released.get(line.namespace) ?? 0) + 1);
    }
    if (line.msg === RULES_INSTALLED_MESSAGE || line.msg === RULES_UNCHANGED_MESSAGE) {
      passes.push({
        time: line.time ?? 0,
        planMs: line.planMs ?? 0,
        ...(line.msg === RULES_INSTALLED_MESSAGE ? { installMs: line.ms ?? 0 } : {}),
        pods: line.pods ?? 0,
        waiting: line.waiting ?? 0,
      });
    }
  }
  return { starts, passes, released };
}

/** Reads the node's log file. */
export function readNodeLog(path: string): NodeLog {
  return parseNodeLog(readFileSync(path, "utf8"));
}

type Percentiles = { p50Ms: number; p95Ms: number };

/** The node's part of the start of the pods of `namespace`, and the enforcer's passes from `sinceMs` to `untilMs`. */
export type NodeStages = {
  pods: number;
  /** Each stage's own time (from the previous stage; `seen` from the scheduler's binding). */
  stageMs: Record<"seen" | StartupStage, Percentiles>;
  /** Seen by the node → Running written. */
  seenToRunning: Percentiles;
  policyPasses: {
    passes: number;
    installs: number;
    planMs: Percentiles & { total: number };
    installMs: Percentiles & { total: number };
    /** The most pod workers waiting for one pass. */
    maxWaiting: number;
    /** The most pods one pass planned. */
    maxPods: number;
  };
};

/** The breakdown of the node's part for the pods of `namespace` (bound as `requests` say). */
export function nodeStages(
  log: NodeLog,
  requests: readonly ApiRequest[],
  namespace: string,
  sinceMs: number,
  untilMs: number,
): NodeStages {
  const bound = new Map<string, number>();
  for (const r of requests) {
    if (r.namespace === namespace && r.resource === "pods" && r.subresource === "binding" && r.name) {
      bound.set(r.name, r.receivedMs);
    }
  }
  const starts = log.starts.filter((s) => s.namespace === namespace && s.seenAt >= sinceMs);
  const samples = new Map<string, number[]>(["seen", ...STARTUP_STAGES].map((s) => [s, []]));
  const seenToRunning: number[] = [];
  for (const start of starts) {
    const boundAt = bound.get(start.name);
    if (boundAt !== undefined) samples.get("seen")!.push(start.seenAt - boundAt);
    let previous = 0;
    for (const stage of STARTUP_STAGES) {
      const at = start.msSinceSeen[stage];
      if (at === undefined) continue;
      samples.get(stage)!.push(at - previous);
      previous = at;
    }
    if (start.msSinceSeen.running !== undefined) seenToRunning.push(start.msSinceSeen.running);
  }
  const passes = log.passes.filter((p) => p.time >= sinceMs && p.time <= untilMs);
  const installs = passes.flatMap((p) => (p.installMs === undefined ? [] : [p.installMs]));
  const planMs = passes.map((p) => p.planMs);
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    pods: starts.length,
    stageMs: Object.fromEntries(
      [...samples].map(([stage, ms]) => [stage, p50p95(ms)]),
    ) as NodeStages["stageMs"],
    seenToRunning: p50p95(seenToRunning),
    policyPasses: {
      passes: passes.length,
      installs: installs.length,
      planMs: { ...p50p95(planMs), total: sum(planMs) },
      installMs: { ...p50p95(installs), total: sum(installs) },
      maxWaiting: Math.max(0, ...passes.map((p) => p.waiting)),
      maxPods: Math.max(0, ...passes.map((p) => p.pods)),
    },
  };
}
