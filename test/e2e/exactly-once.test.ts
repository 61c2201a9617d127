/**
 * Exactly-once execution (DESIGN §4 step 8) on the real control plane, local node and
 * Postgres, through real operator processes. The test is the agent: each session's pod only sleeps,
 * and the test calls `POST /v1/invoke` with that pod's token. The business system is the counting
 * provider (`gatehouse/provider-counter:dev`), whose own ledger — read straight from its pod — shows
 * at most one effect per action in every test: for the same call sent twice at once, for an operator
 * SIGKILLed right after claiming an execution or right after the provider answered (test-only
 * failpoints; a new replica recovers the execution with the same idempotency key), for an answer
 * lost after the commit, and for a business refusal, which is final. First, in a namespace of its
 * own, an Auto write whose outcome is unknown is resolved by a person (`resolve-cases.ts`), while the
 * environment's first replica still leads. A read that needs approval, called again over MCP past the
 * approval wait's bound and over `POST /v1/invoke`, is answered from its one Approval and runs once.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "./cluster-info.ts";
import { type Agent, coreNamespace, SLEEPER_IMAGE, startAgent } from "./core-agent.ts";
import {
  approvalPast,
  approvalsOfSession,
  approvalWithStatus,
  DISPATCHING,
  decide,
} from "./core-approvals.ts";
import { deployCounter, type Ledger, toolName } from "./core-counter.ts";
import { type AuditRow, auditOfExecution, executionsOfSession } from "./core-records.ts";
import { type Replicas, replaceReplicas } from "./core-replicas.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { describeResolve } from "./resolve-cases.ts";
import { verifyAudit } from "./story.ts";

/**
 * Every replica's environment: sleeping agent pods, and a provider deadline and lease grace small
 * enough that a crashed claimer's lease (deadline × (attempts + 1) + grace) ends within seconds.
 */
const OPERATOR_ENV: NodeJS.ProcessEnv = {
  AGENT_IMAGE: SLEEPER_IMAGE,
  PROVIDER_DEADLINE_MS: "3000",
  EXECUTION_LEASE_GRACE_MS: "2000",
};

/** Capability ids, one per test, so each test reads only its own part of the ledger. */
const AUTO_WRITE = "counter.auto.write";
const APPROVED_WRITE = "counter.approved.write";
const CLAIM_CRASH = "counter.claim-crash.write";
const ANSWER_CRASH = "counter.answer-crash.write";
const LOST_KEYED = "counter.lost-keyed.write";
const LOST_UNKEYED = "counter.lost-unkeyed.write";
const REFUSED = "counter.refused.write";
const APPROVED_READ = "counter.approved.read";

let env: Environment;
let namespace: string;
let ledger: Ledger;
const replicas: Replicas = { running: [] };

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), { componentEnv: OPERATOR_ENV });
  replicas.running = [env.controller];
  namespace = await coreNamespace(env, "once");
  ledger = await deployCounter(
    env,
    namespace,
    "counter",
    [
      // Held a second after committing, so the second of two simultaneous calls arrives mid-execution.
      { id: AUTO_WRITE, effect: "write", idempotency: "key", delayMs: 1000 },
      { id: APPROVED_WRITE, effect: "write", idempotency: "key" },
      { id: CLAIM_CRASH, effect: "write", idempotency: "key" },
      { id: ANSWER_CRASH, effect: "write", idempotency: "key" },
      { id: LOST_KEYED, effect: "write", idempotency: "key", behaviour: "drop" },
      { id: LOST_UNKEYED, effect: "write", idempotency: "none", behaviour: "drop" },
      { id: REFUSED, effect: "write", idempotency: "key", behaviour: "forbidden" },
      { id: APPROVED_READ, effect: "read", idempotency: "none" },
    ],
    // A write is Required by default, a read Auto; an explicit mode overrides it (core/policy.ts).
    { [AUTO_WRITE]: { approval: "Auto" }, [APPROVED_READ]: { approval: "Required" } },
  );
}, 600_000);

afterAll(async () => {
  await env?.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

/** A first call of capability `id` (turn 0, position 0) with `args`, as the agent sends it. */
function callOf(id: string, args: Record<string, unknown>) {
  return { turn: 0, position: 0, tool: toolName(id), arguments: JSON.stringify(args) };
}

/** The execution.* audit rows as [kind, outcome], in chain order. */
function executionAudit(rows: AuditRow[]): Array<[string, string | null]> {
  return rows.filter((r) => r.kind.startsWith("execution.")).map((r) => [r.kind, r.outcome]);
}

/** Proposes a write through `agent`, returns its Approval's name once the operator wrote its status. */
async function propose(agent: Agent, id: string): Promise<string> {
  const answer = await agent.invoke(callOf(id, { planId: "week-12", shiftDays: 1 }));
  expect(answer.status).toBe("pending_approval");
  const name = answer.approval?.name ?? "";
  expect((await approvalWithStatus(env, namespace, name)).status?.phase).toBe("Pending");
  return name;
}

describeResolve(() => env);

describe("the same call sent twice at once", () => {
  it("runs an Auto write once: one execution row, one effect, both answers name that execution", async () => {
    const agent = await startAgent(env, namespace, "twice-auto");
    const call = callOf(AUTO_WRITE, { planId: "week-12", shiftDays: 1 });
    const answers = await Promise.all([agent.invoke(call), agent.invoke(call)]);

    const rows = await executionsOfSession(env.pool, agent.session.uid);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.state).toBe("succeeded");
    expect(answers.map((a) => a.executionId)).toEqual([rows[0]?.id, rows[0]?.id]);
    expect(answers.map((a) => a.status)).toContain("succeeded");
    const effects = await ledger.effects(AUTO_WRITE);
    expect(effects).toHaveLength(1);
    expect(effects[0]?.executionId).toBe(rows[0]?.id);
    expect(await ledger.calls(AUTO_WRITE)).toHaveLength(1);
  });

  it("proposes a Required write once: one Approval, both answers name it and the one execution id", async () => {
    const agent = await startAgent(env, namespace, "twice-required");
    const call = callOf(APPROVED_WRITE, { planId: "week-12", shiftDays: 1 });
    const answers = await Promise.all([agent.invoke(call), agent.invoke(call)]);

    expect(answers.map((a) => a.status)).toEqual(["pending_approval", "pending_approval"]);
    const approvals = await approvalsOfSession(env, namespace, agent.session.uid);
    expect(approvals).toHaveLength(1);
    const approval = approvals[0]!;
    expect(answers.map((a) => a.approval?.name)).toEqual([approval.metadata.name, approval.metadata.name]);
    expect(answers.map((a) => a.executionId)).toEqual([approval.spec.executionId, approval.spec.executionId]);
    // Nothing runs before a human decides.
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await ledger.calls(APPROVED_WRITE)).toEqual([]);
  });
});

describe("a provider whose answer is lost after it committed", () => {
  it("with an idempotency key: retries with the same key, learns the outcome from the status query, one effect, Succeeded", async () => {
    const agent = await startAgent(env, namespace, "lost-keyed");
    const name = await propose(agent, LOST_KEYED);
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);

    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Succeeded");
    expect(approval.status?.execution?.state).toBe("succeeded");
    const [row] = await executionsOfSession(env.pool, agent.session.uid);
    expect(row?.state).toBe("succeeded");
    // Every invoke answered unknown_outcome: only the status query by key can have said succeeded.
    const calls = await ledger.calls(LOST_KEYED);
    expect(calls.length).toBeGreaterThan(1);
    expect(new Set(calls.map((c) => c.idempotencyKey))).toEqual(new Set([row?.idempotencyKey]));
    expect(await ledger.effects(LOST_KEYED)).toHaveLength(1);
  });

  it("without an idempotency key: stays Unknown with a condition asking a human to check, one effect, no second call", async () => {
    const agent = await startAgent(env, namespace, "lost-unkeyed");
    const name = await propose(agent, LOST_UNKEYED);
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);

    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Unknown");
    expect(approval.status?.execution).toMatchObject({ state: "unknown", errorKind: "unknown_outcome" });
    expect(approval.status?.conditions?.map((c) => `${c.type}/${c.reason}: ${c.message}`)).toEqual(
      expect.arrayContaining([expect.stringMatching(/human/i)]),
    );
    const [row] = await executionsOfSession(env.pool, agent.session.uid);
    expect(row?.state).toBe("unknown");
    expect(await ledger.calls(LOST_UNKEYED)).toHaveLength(1);
    expect(await ledger.effects(LOST_UNKEYED)).toHaveLength(1);
  });
});

describe("a business refusal", () => {
  it("is final: Failed with errorKind forbidden, exactly one call, the outcome audited", async () => {
    const agent = await startAgent(env, namespace, "refused");
    const name = await propose(agent, REFUSED);
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);

    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Failed");
    expect(approval.status?.execution).toMatchObject({ state: "failed", errorKind: "forbidden" });
    expect(await ledger.calls(REFUSED)).toHaveLength(1);
    expect(await ledger.effects(REFUSED)).toEqual([]);
    const audit = await auditOfExecution(env.pool, approval.spec.executionId);
    expect(audit.filter((r) => r.kind === "execution.finished")).toEqual([
      expect.objectContaining({
        outcome: "failure",
        payload: expect.objectContaining({ errorKind: "forbidden" }),
      }),
    ]);
  });
});

describe("a read that needs approval, called again", () => {
  it("over MCP past the approval wait's bound and over POST /v1/invoke: one Approval; approved, one run answers every repeat", async () => {
    const agent = await startAgent(env, namespace, "read-again");
    const transport = new StreamableHTTPClientTransport(new URL("/mcp", env.gatewayUrl), {
      requestInit: { headers: { authorization: `Bearer ${agent.token}` } },
    });
    const client = new Client({ name: "gatehouse-e2e", version: "1" });
    await client.connect(transport);
    const call = { name: toolName(APPROVED_READ), arguments: { employee: "E-17" } };
    // The wait's bound, 50 s, shortened as a client may ask: each call answers "call again" after 1 s.
    const bounded = { ...call, _meta: { "gatehouse.dev/approvalWaitSeconds": 1 } };
    const approvalOf = (result: unknown) =>
      (result as { structuredContent?: { approval?: string } }).structuredContent?.approval;
    try {
      const first = await client.callTool(bounded);
      const name = approvalOf(first) ?? "";
      expect(name).toMatch(/^apr-/);
      // A new JSON-RPC id is a new call position: the repeat is answered from the same Approval.
      expect(approvalOf(await client.callTool(bounded))).toBe(name);
      const invoked = await agent.invoke({ ...callOf(APPROVED_READ, call.arguments), turn: 1, position: 7 });
      expect(invoked).toMatchObject({ status: "pending_approval", approval: { name } });
      expect(
        (await approvalsOfSession(env, namespace, agent.session.uid)).map((a) => a.metadata.name),
      ).toEqual([name]);
      expect(await ledger.calls(APPROVED_READ)).toEqual([]);

      await decide(env, namespace, name, "alice");
      expect((await approvalPast(env, namespace, name, DISPATCHING)).status?.phase).toBe("Succeeded");
      const again = await client.callTool(call);
      expect(again.isError).toBeFalsy();
      const text = (again.content as Array<{ text?: string }>)[0]?.text ?? "";
      expect(text).toContain(`This exact read was approved (Approval ${name})`);
      const rows = await executionsOfSession(env.pool, agent.session.uid);
      expect(rows.map((r) => r.state)).toEqual(["succeeded"]);
      const invokedAfter = await agent.invoke({
        ...callOf(APPROVED_READ, call.arguments),
        turn: 2,
        position: 0,
      });
      expect(invokedAfter).toMatchObject({ status: "succeeded", executionId: rows[0]?.id });
      expect(await ledger.calls(APPROVED_READ)).toHaveLength(1);
      expect(await approvalsOfSession(env, namespace, agent.session.uid)).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});

// Last: these tests replace the operator replicas.
describe("an operator SIGKILLed in the middle of an approved write", () => {
  /**
   * Proposes a write of `id`, makes a replica with failpoint `failpoint` the only one (and the
   * leader), approves, and waits until that replica killed itself. Returns the session and Approval.
   */
  async function crashDuringDispatch(id: string, failpoint: string) {
    const agent = await startAgent(env, namespace, failpoint);
    const name = await propose(agent, id);
    const crashing = await replaceReplicas(env, replicas, `failpoint-${failpoint}`, {
      ...OPERATOR_ENV,
      GATEHOUSE_FAILPOINTS: `dispatch.${failpoint}=exit`,
    });
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);
    expect(await crashing.exited).toMatch(/\(SIGKILL\)/);
    replicas.running = [];
    return { agent, name };
  }

  /** Starts a replica without failpoints; it takes over once the dead leader's Lease lapsed. */
  async function recover(name: string) {
    replicas.running = [await env.startReplica("controller", `recovery-${name}`, OPERATOR_ENV)];
  }

  it("right after the claim: a new replica executes it once with the same key, Succeeded, audited", async () => {
    const { agent, name } = await crashDuringDispatch(CLAIM_CRASH, "after-claim");
    // The replica died holding the claim, before it called the provider.
    const [claimed] = await executionsOfSession(env.pool, agent.session.uid);
    expect(claimed?.state).toBe("started");
    expect(await ledger.calls(CLAIM_CRASH)).toEqual([]);

    await recover("after-claim");
    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Succeeded");
    const effects = await ledger.effects(CLAIM_CRASH);
    expect(effects).toHaveLength(1);
    expect(effects[0]?.idempotencyKey).toBe(claimed?.idempotencyKey);
    const rows = await executionsOfSession(env.pool, agent.session.uid);
    expect(rows.map((r) => [r.id, r.state])).toEqual([[claimed?.id, "succeeded"]]);
    // The dead claimer audited nothing; the recovery is audited before it calls the provider.
    const audit = await auditOfExecution(env.pool, approval.spec.executionId);
    expect(executionAudit(audit)).toEqual([
      ["execution.recovering", "pending"],
      ["execution.finished", "success"],
    ]);
  });

  it("after the provider answered, before the receipt: the retry with the same key adds no effect, Succeeded, audited", async () => {
    const { agent, name } = await crashDuringDispatch(ANSWER_CRASH, "after-provider-call");
    // The business system committed; Gatehouse never recorded the receipt.
    const [claimed] = await executionsOfSession(env.pool, agent.session.uid);
    expect(claimed?.state).toBe("started");
    expect(await ledger.effects(ANSWER_CRASH)).toHaveLength(1);

    await recover("after-provider-call");
    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Succeeded");
    const effects = await ledger.effects(ANSWER_CRASH);
    expect(effects).toHaveLength(1);
    expect(new Set((await ledger.calls(ANSWER_CRASH)).map((c) => c.idempotencyKey))).toEqual(
      new Set([claimed?.idempotencyKey]),
    );
    const rows = await executionsOfSession(env.pool, agent.session.uid);
    expect(rows.map((r) => [r.id, r.state])).toEqual([[claimed?.id, "succeeded"]]);
    const audit = await auditOfExecution(env.pool, approval.spec.executionId);
    expect(executionAudit(audit)).toEqual([
      ["execution.started", "pending"],
      ["execution.recovering", "pending"],
      ["execution.finished", "success"],
    ]);
  });

  it("leaves an audit chain that verifies", async () => {
    const audit = await verifyAudit(env);
    expect(audit.report).toMatchObject({ ok: true });
  });
});
