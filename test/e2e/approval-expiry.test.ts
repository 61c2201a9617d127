/**
 * Approval expiry on the real control plane, local node and Postgres: an Approval nobody decides in
 * time ends Expired, is evidence (an audit record and a Warning Event), cannot be approved afterwards,
 * and its call never runs. The components run with a default Approval lifetime of a few seconds
 * (`APPROVAL_TTL_SECONDS`), so expiry is seen without waiting out the shortest lifetime a Capability may
 * set (60 s); a Capability's own `policy.ttlSeconds` still wins over that default.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "./cluster-info.ts";
import { type Agent, coreNamespace, SLEEPER_IMAGE, startAgent } from "./core-agent.ts";
import { approvalPast, approvalWithStatus, decide, getApproval } from "./core-approvals.ts";
import { deployCounter, type Ledger, toolName } from "./core-counter.ts";
import { auditOfExecution, executionsOfSession } from "./core-records.ts";
import { type Environment, startEnvironment } from "./environment.ts";

/** The components' default Approval lifetime: long enough to see the Approval Pending first. */
const DEFAULT_TTL_SECONDS = 8;
/** A write on the default lifetime, and one whose Capability sets its own (the shortest allowed). */
const EXPIRING = "counter.expiring.write";
const OWN_TTL = "counter.own-ttl.write";
const OWN_TTL_SECONDS = 60;

let env: Environment;
let namespace: string;
let counter: Ledger;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), {
    componentEnv: { AGENT_IMAGE: SLEEPER_IMAGE, APPROVAL_TTL_SECONDS: String(DEFAULT_TTL_SECONDS) },
  });
  namespace = await coreNamespace(env, "expiry");
  counter = await deployCounter(
    env,
    namespace,
    "counter",
    [
      { id: EXPIRING, effect: "write", idempotency: "key" },
      { id: OWN_TTL, effect: "write", idempotency: "key" },
    ],
    { [OWN_TTL]: { ttlSeconds: OWN_TTL_SECONDS } },
  );
}, 600_000);

afterAll(async () => {
  await env?.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

/** Proposes capability `id` at `position` through `agent`; returns the Pending Approval. */
async function propose(agent: Agent, id: string, position: number) {
  const answer = await agent.invoke({
    turn: 0,
    position,
    tool: toolName(id),
    arguments: JSON.stringify({ planId: "week-22", version: 1 }),
  });
  expect(answer.status).toBe("pending_approval");
  const approval = await approvalWithStatus(env, namespace, answer.approval?.name ?? "");
  expect(approval.status?.phase).toBe("Pending");
  return approval;
}

/**
 * Expects the Approval to live `seconds` from its creation to its `spec.expiresAt`. Core takes the
 * time when it proposes; the API server stamps whole seconds a moment later: hence the second either way.
 */
function expectLifetime(approval: Awaited<ReturnType<typeof propose>>, seconds: number): void {
  const created = Date.parse(approval.metadata.creationTimestamp ?? "");
  const lifetimeMs = Date.parse(approval.spec.expiresAt) - created;
  expect(Math.abs(lifetimeMs - seconds * 1000)).toBeLessThanOrEqual(1_000);
}

describe("an Approval nobody decides in time", () => {
  it("ends Expired: admission refuses a later decision, nothing runs, the chain and an Event say so", async () => {
    const agent = await startAgent(env, namespace, "expired");
    const proposed = await propose(agent, EXPIRING, 0);
    const ownTtl = await propose(agent, OWN_TTL, 1);
    // The operator's default applies where the Capability sets no lifetime, and only there.
    expectLifetime(proposed, DEFAULT_TTL_SECONDS);
    expectLifetime(ownTtl, OWN_TTL_SECONDS);

    const name = proposed.metadata.name;
    const expired = await approvalPast(env, namespace, name, ["Pending"], 60_000);
    expect(expired.status?.phase).toBe("Expired");
    expect((await getApproval(env, namespace, ownTtl.metadata.name)).status?.phase).toBe("Pending");

    const refused = await decide(env, namespace, name, "alice");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/decision-closed: Approval \S+ is Expired/);
    const approval = await approvalWithStatus(env, namespace, name);
    expect(approval.status?.phase).toBe("Expired");
    expect(approval.spec.decisions).toEqual([]);
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await counter.calls(EXPIRING)).toEqual([]);
    // The expiry is evidence: its record in the audit chain, and an Event on the Approval.
    const audit = await auditOfExecution(env.pool, approval.spec.executionId);
    expect(audit.map((r) => r.kind)).toEqual(["approval.requested", "approval.expired"]);
    expect(audit[1]).toMatchObject({ outcome: "failure", payload: { phase: "Expired", decisions: [] } });
    const events = await env.kubectl.json<{ items: Array<{ type: string; message: string }> }>("admin", [
      "get",
      "events",
      "-n",
      namespace,
      "--field-selector",
      `involvedObject.name=${name},reason=Expired`,
    ]);
    expect(events.items).toEqual([expect.objectContaining({ type: "Warning" })]);
    expect(events.items[0]?.message).toMatch(/No decision before .* The proposed call will not run\./);
  });
});
