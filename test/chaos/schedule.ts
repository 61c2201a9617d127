/**
 * The fault campaign's schedule: a pure function of (seed, run index) → the calls of one run and the
 * steps that drive them, drawn with a seeded PRNG (pure-rand's xoroshiro128+), so a failing run replays
 * step for step with the same seed. Faults that crash or freeze a process fire at failpoints
 * (core/failpoints.ts), the Postgres and kube-apiserver restarts when the business system holds the
 * call — never on timers — so a replay hits the same points in the same order.
 */
import { uniformInt } from "pure-rand/distribution/uniformInt";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import type { Failpoint } from "../../operator/src/core/failpoints.ts";

/**
 * How the business system treats a call (one counter capability each): `ok` answers at once; `held`
 * commits and answers after 2 s (Postgres is restarted meanwhile); `slow` commits and answers after the
 * provider deadline (a timeout); `lost` commits and drops the answer (keyed: the status query learns
 * the outcome); `lost-unkeyed` commits and drops it without a key (Unknown until a person resolves it).
 */
export type Behaviour = "ok" | "held" | "slow" | "lost" | "lost-unkeyed";
export const BEHAVIOURS: readonly Behaviour[] = ["ok", "held", "slow", "lost", "lost-unkeyed"];

/** Auto runs at once; Required waits on an Approval. */
export type Policy = "Auto" | "Required";

/**
 * What the approvers do with a Required call: approve; reject; approve and reject at once (one wins);
 * approve twice (the second a re-submitted decision).
 */
export type Decision = "approve" | "reject" | "approve-and-reject" | "approve-twice";

/** One write call of a run, sent through agent session `agent` at turn 0, position `position`. */
export interface CallSpec {
  index: number;
  agent: number;
  position: number;
  behaviour: Behaviour;
  policy: Policy;
  /** How many identical invokes are sent at once (more than 1: the duplicate-invoke fault). */
  copies: number;
  /** Required calls only. */
  decision?: Decision;
}

export type FaultKind =
  | "gateway-killed"
  | "controller-killed"
  | "standby-takeover"
  | "postgres-restarted"
  | "apiserver-restarted"
  | "provider-timeout"
  | "response-lost"
  | "duplicate-invoke"
  | "agent-pod-killed";

export const FAULT_KINDS: readonly FaultKind[] = [
  "gateway-killed",
  "controller-killed",
  "standby-takeover",
  "postgres-restarted",
  "apiserver-restarted",
  "provider-timeout",
  "response-lost",
  "duplicate-invoke",
  "agent-pod-killed",
];

/** A fault of a run: its kind, the call it hits and, for a process fault, the failpoint. */
export interface Fault {
  kind: FaultKind;
  call: number;
  point?: Failpoint;
}

export type Component = "gateway" | "controller";

/** One thing the runner does, in order. */
export type Step =
  /** Replace the component's replica by one that acts at `point` (`exit` SIGKILL, `block` freeze). */
  | { kind: "arm"; component: Component; point: Failpoint; action: "exit" | "block" }
  /** Start a second controller replica, unarmed, which takes over when the leader stops renewing. */
  | { kind: "start-standby" }
  /** Send the call (`copies` at once). The gateway may die under it (an armed gateway). */
  | { kind: "invoke"; call: number }
  /** Wait until the armed replica reached its failpoint; `exit`: start a clean one, `block`: the
   * standby leads, then the frozen replica is SIGKILLed. */
  | { kind: "await-failpoint"; component: Component }
  /** The agent sends the call again, as a replacement pod would (after the gateway died under it). */
  | { kind: "reinvoke"; call: number }
  /** Delete the call's agent pod while the call waits on its Approval; the replacement pod re-invokes. */
  | { kind: "kill-agent-pod"; call: number }
  | { kind: "decide"; call: number; decision: Decision }
  /** Stop and start the campaign's Postgres once the business system holds the call. */
  | { kind: "restart-postgres"; call: number }
  /**
   * Stop kube-apiserver once the business system holds the call, until the leading controller has
   * lost its Lease and exited, then start it again; a new controller replica takes over, as a kubelet
   * would restart the exited one.
   */
  | { kind: "restart-apiserver"; call: number }
  /** Wait until the call's outcome is final; a person resolves an Unknown one (`resolve`). */
  | { kind: "settle"; call: number; resolve: boolean };

/** One run: its calls, the faults it injects and the steps that drive them. */
export interface RunSchedule {
  seed: number;
  run: number;
  agents: number;
  calls: CallSpec[];
  faults: Fault[];
  steps: Step[];
}

const INVOKE_POINTS: readonly Failpoint[] = ["invoke.before-decision", "invoke.after-decision"];
const APPROVAL_CREATE_POINTS: readonly Failpoint[] = [
  "invoke.before-approval-create",
  "invoke.after-approval-create",
];
const DISPATCH_POINTS: readonly Failpoint[] = [
  "dispatch.before-claim",
  "dispatch.after-claim",
  "dispatch.after-started",
  "dispatch.before-provider-call",
  "dispatch.after-provider-call",
  "dispatch.after-receipt",
  "dispatch.after-finished",
];
const APPROVAL_POINTS: readonly Failpoint[] = [
  "approval.before-audit",
  "approval.after-audit",
  "approval.before-status-write",
  "approval.after-status-write",
];

/** Faults that stop a process or the database: at most one per call, so each has its own moment. */
const PROCESS_FAULTS: readonly FaultKind[] = [
  "gateway-killed",
  "controller-killed",
  "standby-takeover",
  "postgres-restarted",
  "apiserver-restarted",
];

/** Faults that make their call a Required one. */
const NEEDS_APPROVAL: readonly FaultKind[] = [
  "controller-killed",
  "standby-takeover",
  "postgres-restarted",
  "apiserver-restarted",
  "agent-pod-killed",
];

/** A seeded draw: integers in [from, to], picks and coin flips. */
interface Draw {
  int(from: number, to: number): number;
  pick<T>(items: readonly T[]): T;
  chance(percent: number): boolean;
}

function drawFor(seed: number, run: number): Draw {
  // One generator per (seed, run): run r of seed s is the same whether or not runs before it ran.
  const rng = xoroshiro128plus((Math.imul(seed | 0, 0x9e3779b1) ^ Math.imul(run + 1, 0x85ebca6b)) | 0);
  const int = (from: number, to: number) => uniformInt(rng, from, to);
  return {
    int,
    pick: (items) => {
      const item = items[int(0, items.length - 1)];
      if (item === undefined) throw new Error("pick from an empty list");
      return item;
    },
    chance: (percent) => int(0, 99) < percent,
  };
}

function drawDecision(draw: Draw): Decision {
  return draw.pick<Decision>(["approve", "approve", "reject", "approve-and-reject", "approve-twice"]);
}

/** Whether a Required call's decision certainly leads to a dispatch. */
function approves(call: CallSpec): boolean {
  return call.decision === "approve" || call.decision === "approve-twice";
}

/** Makes `call` fit fault `kind` (e.g. a Postgres restart needs a held, approved write); returns the point. */
function shape(draw: Draw, call: CallSpec, kind: FaultKind): Failpoint | undefined {
  const required = (decision?: Decision) => {
    call.policy = "Required";
    call.decision = decision ?? call.decision ?? drawDecision(draw);
  };
  switch (kind) {
    case "gateway-killed":
      if (call.policy === "Auto") return draw.pick([...INVOKE_POINTS, ...DISPATCH_POINTS]);
      return draw.pick([...INVOKE_POINTS, ...APPROVAL_CREATE_POINTS]);
    case "controller-killed":
    case "standby-takeover":
      required();
      return draw.pick(approves(call) ? [...APPROVAL_POINTS, ...DISPATCH_POINTS] : APPROVAL_POINTS);
    case "postgres-restarted":
    case "apiserver-restarted":
      required(draw.pick<Decision>(["approve", "approve-twice"]));
      // A slow or lost call is in progress at the business system too; an ok one is made to wait.
      if (call.behaviour === "ok") call.behaviour = "held";
      return undefined;
    case "provider-timeout":
      call.behaviour = "slow";
      return undefined;
    case "response-lost":
      call.behaviour = draw.pick<Behaviour>(["lost", "lost-unkeyed"]);
      return undefined;
    case "duplicate-invoke":
      call.copies = draw.int(2, 3);
      return undefined;
    case "agent-pod-killed":
      required();
      return undefined;
  }
}

/**
 * The schedule of run `run` of campaign `seed`: 1–2 agent sessions, 1–3 write calls, 1–2 faults.
 * Pure: the same (seed, run) gives the same schedule.
 */
export function scheduleOf(seed: number, run: number): RunSchedule {
  const draw = drawFor(seed, run);
  const agents = draw.int(1, 2);
  const positions = new Array<number>(agents).fill(0);
  const calls: CallSpec[] = [];
  const callCount = draw.int(1, 3);
  for (let index = 0; index < callCount; index++) {
    const agent = draw.int(0, agents - 1);
    const policy: Policy = draw.chance(50) ? "Auto" : "Required";
    const position = positions[agent] ?? 0;
    positions[agent] = position + 1;
    calls.push({
      index,
      agent,
      position,
      behaviour: "ok",
      policy,
      copies: 1,
      ...(policy === "Required" ? { decision: drawDecision(draw) } : {}),
    });
  }

  const faults: Fault[] = [];
  const processFaulted = new Set<number>();
  const faultCount = draw.int(1, Math.min(2, callCount + 1));
  for (let n = 0; n < faultCount; n++) {
    const kind = draw.pick(FAULT_KINDS);
    const candidates = calls.filter(
      (c) =>
        !faults.some((f) => f.call === c.index && f.kind === kind) &&
        !(PROCESS_FAULTS.includes(kind) && processFaulted.has(c.index)) &&
        // An Auto call's gateway dies in its dispatch: it must stay Auto.
        !(
          NEEDS_APPROVAL.includes(kind) &&
          faults.some((f) => f.call === c.index && f.point?.startsWith("dispatch."))
        ),
    );
    if (candidates.length === 0) continue;
    const call = draw.pick(candidates);
    const point = shape(draw, call, kind);
    if (PROCESS_FAULTS.includes(kind)) processFaulted.add(call.index);
    faults.push({ kind, call: call.index, ...(point ? { point } : {}) });
  }
  // A behaviour drawn for another reason is still that fault: count it where it happens.
  for (const call of calls) {
    const implied: FaultKind | undefined =
      call.behaviour === "slow"
        ? "provider-timeout"
        : call.behaviour.startsWith("lost")
          ? "response-lost"
          : undefined;
    if (implied && !faults.some((f) => f.kind === implied && f.call === call.index)) {
      faults.push({ kind: implied, call: call.index });
    }
  }
  return { seed, run, agents, calls, faults, steps: stepsOf(calls, faults) };
}

function stepsOf(calls: readonly CallSpec[], faults: readonly Fault[]): Step[] {
  const steps: Step[] = [];
  for (const call of calls) {
    const on = (kind: FaultKind) => faults.find((f) => f.call === call.index && f.kind === kind);
    const gatewayKill = on("gateway-killed");
    if (gatewayKill?.point) {
      steps.push({ kind: "arm", component: "gateway", point: gatewayKill.point, action: "exit" });
    }
    steps.push({ kind: "invoke", call: call.index });
    if (gatewayKill) {
      steps.push({ kind: "await-failpoint", component: "gateway" }, { kind: "reinvoke", call: call.index });
    }
    if (call.policy === "Required" && call.decision) {
      if (on("agent-pod-killed")) steps.push({ kind: "kill-agent-pod", call: call.index });
      const controllerKill = on("controller-killed");
      const takeover = on("standby-takeover");
      if (controllerKill?.point) {
        steps.push({ kind: "arm", component: "controller", point: controllerKill.point, action: "exit" });
      }
      if (takeover?.point) {
        steps.push(
          { kind: "arm", component: "controller", point: takeover.point, action: "block" },
          { kind: "start-standby" },
        );
      }
      steps.push({ kind: "decide", call: call.index, decision: call.decision });
      if (controllerKill || takeover) steps.push({ kind: "await-failpoint", component: "controller" });
      if (on("postgres-restarted")) steps.push({ kind: "restart-postgres", call: call.index });
      if (on("apiserver-restarted")) steps.push({ kind: "restart-apiserver", call: call.index });
    }
    steps.push({ kind: "settle", call: call.index, resolve: call.behaviour === "lost-unkeyed" });
  }
  return steps;
}
