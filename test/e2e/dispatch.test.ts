/**
 * Re-checks at dispatch (DESIGN §2 Approval, §4 step 8) on the real control plane, local node and
 * Postgres: an approved call runs only if what admission cannot see still holds when Core dispatches
 * it — the provider is not disabled, the business object's version has not moved, the Approval has
 * not expired (approval-expiry.test.ts), the identity binding holds, the Capability still names the
 * provider the call was approved for, and a policy made stricter while Pending applies to it. The
 * test is the agent (its sessions' pods only sleep; it calls `POST /v1/invoke` with a pod's token)
 * and the counting provider's ledger, read from its pod, shows that nothing reached the business
 * system.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDENTITY_BINDINGS_ROLE } from "../../operator/src/api/rbac.ts";
import { clusterInfo } from "./cluster-info.ts";
import { type Agent, coreNamespace, SLEEPER_IMAGE, startAgent } from "./core-agent.ts";
import {
  type ApprovalObject,
  approvalPast,
  approvalWithStatus,
  DISPATCHING,
  decide,
  getApproval,
} from "./core-approvals.ts";
import { deployCounter, type Ledger, toolName } from "./core-counter.ts";
import { auditOfExecution, executionsOfSession } from "./core-records.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { bindIdentities, publishedBindings, unbindIdentities } from "./identity-bindings.ts";
import { eventually } from "./story.ts";

/** Capability ids: a publish with a target plan, one on a provider to disable. */
const PUBLISH = "counter.plan.publish";
const SWITCHED = "switch.plan.publish";
/** On a provider whose manifest requires identity: a read (Auto) and a write (Required). */
const WHOAMI = "ident.account.read";
const BOOK = "ident.account.write";
/** On the counter: a write whose Capability's policy the platform tightens while an Approval waits. */
const TIGHTENED = "counter.tightened.write";
/** Offered by two ProviderInstances of the same image: the Capability is switched from one to the other. */
const MOVED = "moved.plan.publish";

let env: Environment;
let namespace: string;
let counter: Ledger;
let switched: Ledger;
let ident: Ledger;
let movedTo: Ledger;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), { componentEnv: { AGENT_IMAGE: SLEEPER_IMAGE } });
  namespace = await coreNamespace(env, "dispatch");
  counter = await deployCounter(env, namespace, "counter", [
    { id: PUBLISH, effect: "write", idempotency: "key", target: true },
    { id: TIGHTENED, effect: "write", idempotency: "key" },
  ]);
  switched = await deployCounter(env, namespace, "switch", [
    { id: SWITCHED, effect: "write", idempotency: "key", target: true },
  ]);
  ident = await deployCounter(
    env,
    namespace,
    "ident",
    [
      { id: WHOAMI, effect: "read", idempotency: "none" },
      { id: BOOK, effect: "write", idempotency: "key" },
    ],
    {},
    { COUNTER_REQUIRES_IDENTITY: "true" },
  );
  // The same offer on two providers; the second deploy points the Capability at moved-from.
  movedTo = await deployCounter(env, namespace, "moved-to", [
    { id: MOVED, effect: "write", idempotency: "key", target: true },
  ]);
  await deployCounter(env, namespace, "moved-from", [
    { id: MOVED, effect: "write", idempotency: "key", target: true },
  ]);
}, 600_000);

/**
 * Applies identity-binding Secret `name` for ProviderInstance `ident` mapping users to accounts; a
 * labelled one is waited for until the controller publishes it for the gateway.
 */
function bind(name: string, accounts: Record<string, string>, labelled = true): Promise<void> {
  return bindIdentities(env, namespace, "ident", name, accounts, { labelled });
}

afterAll(async () => {
  await env?.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

/** Proposes a publish of plan `planId` at `version` through `agent`; returns the Pending Approval's name. */
async function propose(agent: Agent, id: string, planId: string, version: number): Promise<string> {
  const answer = await agent.invoke({
    turn: 0,
    position: 0,
    tool: toolName(id),
    arguments: JSON.stringify({ planId, version }),
  });
  expect(answer.status).toBe("pending_approval");
  const name = answer.approval?.name ?? "";
  expect((await approvalWithStatus(env, namespace, name)).status?.phase).toBe("Pending");
  return name;
}

/** The Approval's `Executed` condition: why dispatch ran or refused the call. */
function executed(approval: ApprovalObject) {
  return approval.status?.conditions?.find((c) => c.type === "Executed");
}

describe("an approved call", () => {
  it("goes Stale and runs nothing when its ProviderInstance was disabled before the approval", async () => {
    const agent = await startAgent(env, namespace, "disabled");
    const name = await propose(agent, SWITCHED, "week-20", 1);
    await env.kubectl.ok("admin", [
      "patch",
      "providerinstance",
      "switch",
      "-n",
      namespace,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { disabled: true } }),
    ]);
    // The operator has seen it once it reports the provider Disabled.
    await eventually("ProviderInstance switch to be Ready=False Disabled", 60_000, async () => {
      const provider = await env.kubectl.json<{
        status?: { conditions?: Array<{ type: string; reason: string }> };
      }>("admin", ["get", "providerinstance", "switch", "-n", namespace]);
      return provider.status?.conditions?.some((c) => c.type === "Ready" && c.reason === "Disabled")
        ? true
        : undefined;
    });
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);

    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Stale");
    expect(executed(approval)?.reason).toBe("Disabled");
    expect(approval.status?.execution).toBeUndefined();
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await switched.calls(SWITCHED)).toEqual([]);
    expect(await switched.effects(SWITCHED)).toEqual([]);
  });

  it("goes Stale and runs nothing when the target plan's version moved before the approval", async () => {
    const agent = await startAgent(env, namespace, "moved");
    const name = await propose(agent, PUBLISH, "week-21", 1);
    const proposed = await approvalWithStatus(env, namespace, name);
    expect(proposed.spec.target).toEqual({ kind: "plan", id: "week-21", version: "1" });
    // Another writer publishes the plan in the business system meanwhile.
    expect(await counter.bump("week-21")).toBe(2);
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);

    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Stale");
    expect(executed(approval)?.message).toMatch(/now at version 2; the call was approved for version 1/);
    expect(executed(approval)?.reason).toBe("TargetVersionMoved");
    // The agent, repeating the call, hears why it did not run, not who approved it.
    const repeated = await agent.invoke({
      turn: 0,
      position: 0,
      tool: toolName(PUBLISH),
      arguments: JSON.stringify({ planId: "week-21", version: 1 }),
    });
    expect(repeated.status).toBe("denied");
    expect(repeated.content).toMatch(
      /its approval is Stale \(TargetVersionMoved: plan week-21 is now at version 2; the call was approved for version 1\)/,
    );
    // And the Approval's Events say it went Stale.
    const warned = await eventually("a TargetVersionMoved Event on the Approval", 30_000, async () => {
      const events = await env.kubectl.json<{ items: Array<{ type: string; reason: string }> }>("admin", [
        "get",
        "events",
        "-n",
        namespace,
        "--field-selector",
        `involvedObject.name=${name},involvedObject.kind=Approval`,
      ]);
      return events.items.find((e) => e.reason === "TargetVersionMoved");
    });
    expect(warned.type).toBe("Warning");
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await counter.calls(PUBLISH)).toEqual([]);
    expect(await counter.effects(PUBLISH)).toEqual([]);
    expect(await counter.planVersion("week-21")).toBe(2);
  });
});

/** Patches `kind/name` in the test namespace as the platform (admin) with a JSON merge patch. */
async function platformPatch(kind: string, name: string, patch: object): Promise<void> {
  await env.kubectl.ok("admin", [
    "patch",
    kind,
    name,
    "-n",
    namespace,
    "--type=merge",
    "-p",
    JSON.stringify(patch),
  ]);
}

/** The Ready condition's reason of Capability `name`. */
async function capabilityReady(name: string): Promise<string | undefined> {
  const cap = await env.kubectl.json<{ status?: { conditions?: Array<{ type: string; reason: string }> } }>(
    "admin",
    ["get", "capability", name, "-n", namespace],
  );
  return cap.status?.conditions?.find((c) => c.type === "Ready")?.reason;
}

describe("what runs is what was approved", () => {
  it("goes Stale (ProviderChanged) when the Capability is switched to another provider before dispatch, and neither runs it", async () => {
    const agent = await startAgent(env, namespace, "provider-switched");
    const name = await propose(agent, MOVED, "week-30", 1);
    const proposed = (await approvalWithStatus(env, namespace, name)) as ApprovalObject & {
      spec: { providerRef: { name: string } };
    };
    expect(proposed.spec.providerRef.name).toBe("moved-from");
    // Dispatch is held: moved-from has no ready pod, so the approved call waits (ProviderNotReady).
    await platformPatch("providerinstance", "moved-from", { spec: { replicas: 0 } });
    await eventually("Capability moved-plan-publish to be ProviderNotReady", 120_000, async () =>
      (await capabilityReady("moved-plan-publish")) === "ProviderNotReady" ? true : undefined,
    );
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);
    const held = await eventually("the dispatch to be deferred", 60_000, async () => {
      const approval = await getApproval(env, namespace, name);
      return executed(approval)?.reason === "ProviderNotReady" ? approval : undefined;
    });
    expect(held.status?.phase).toBe("Approved");

    // The platform points the Capability at the other ProviderInstance (same image, same schema).
    await platformPatch("capability", "moved-plan-publish", { spec: { providerRef: { name: "moved-to" } } });
    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Stale");
    expect(executed(approval)?.reason).toBe("ProviderChanged");
    expect(executed(approval)?.message).toContain(`ProviderInstance ${namespace}/moved-to`);
    expect(executed(approval)?.message).toContain(`approved for ProviderInstance ${namespace}/moved-from`);
    const audit = await auditOfExecution(env.pool, approval.spec.executionId);
    expect(audit.at(-1)).toMatchObject({
      kind: "approval.stale",
      payload: { reason: "ProviderChanged", atDispatch: true },
    });
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await movedTo.calls(MOVED)).toEqual([]);
    expect(await movedTo.effects(MOVED)).toEqual([]);
  });
});

describe("a policy tightened while an Approval is Pending", () => {
  it("applies to it: the requester's self-approval no longer approves it, and the status says which rule", async () => {
    const agent = await startAgent(env, namespace, "tightened");
    const answer = await agent.invoke({ turn: 0, position: 0, tool: toolName(TIGHTENED), arguments: "{}" });
    expect(answer.status).toBe("pending_approval");
    const name = answer.approval?.name ?? "";
    const proposed = (await approvalWithStatus(env, namespace, name)) as ApprovalObject & {
      spec: { requiredApprovals: number; allowSelfApproval: boolean };
    };
    expect(proposed.spec).toMatchObject({ requiredApprovals: 1, allowSelfApproval: true });

    await platformPatch("capability", "counter-tightened-write", {
      spec: { policy: { requiredApprovals: 2, allowSelfApproval: false } },
    });
    const decided = (a: ApprovalObject) => a.status?.conditions?.find((c) => c.type === "Decided");
    await eventually("the Pending Approval to name the stricter rule", 60_000, async () => {
      const approval = await getApproval(env, namespace, name);
      return decided(approval)?.message.includes("now requires 2 approvals") ? true : undefined;
    });
    // Admission checks the spec (self-approval allowed), so alice's decision is accepted; it does not count.
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);
    const after = await eventually("the operator to observe alice's decision", 60_000, async () => {
      const approval = (await getApproval(env, namespace, name)) as ApprovalObject & {
        status?: {
          observedDecisions?: number;
          ignoredDecisions?: Array<{ approver: string; reason: string }>;
        };
      };
      return approval.status?.observedDecisions === 1 ? approval : undefined;
    });
    expect(after.status?.phase).toBe("Pending");
    expect(decided(after)).toMatchObject({ reason: "AwaitingDecision" });
    expect(decided(after)?.message).toBe(
      "0 of 2 approvals (the Capability's policy now requires 2 approvals; the Capability's policy no longer allows self-approval).",
    );
    expect(after.status?.ignoredDecisions).toEqual([
      { approver: "alice", reason: "self-approval is not allowed for this capability" },
    ]);
    const audit = await auditOfExecution(env.pool, after.spec.executionId);
    expect(audit.map((r) => r.kind)).toEqual(["approval.requested", "approval.decided"]);
    expect(audit[1]).toMatchObject({ actor: "alice", payload: { counted: false } });
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await counter.calls(TIGHTENED)).toEqual([]);
  });
});

describe("a provider that requires identity", () => {
  it("denies a subject with no binding, and ignores a Secret without the binding label", async () => {
    await bind("unlabelled-accounts", { alice: "ALICE-UNLABELLED" }, false);
    const agent = await startAgent(env, namespace, "unbound");
    const answer = await agent.invoke({ turn: 0, position: 0, tool: toolName(WHOAMI), arguments: "{}" });
    expect(answer).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(answer.content).toMatch(/alice has no account/);
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await ident.calls(WHOAMI)).toEqual([]);
  });

  it("denies, naming rbac.identityBindingNamespaces, where Gatehouse may not read identity bindings", async () => {
    // A provider namespace the platform did not list: no RoleBinding of gatehouse-identity-bindings.
    const unlisted = await coreNamespace(env, "unlisted");
    try {
      await env.kubectl.ok("admin", ["delete", "rolebinding", IDENTITY_BINDINGS_ROLE, "-n", unlisted]);
      await deployCounter(
        env,
        unlisted,
        "ident",
        [{ id: WHOAMI, effect: "read", idempotency: "none" }],
        {},
        {
          COUNTER_REQUIRES_IDENTITY: "true",
        },
      );
      await bindIdentities(env, unlisted, "ident", "accounts", { alice: "ALICE-01" }, { wait: false });
      const agent = await startAgent(env, unlisted, "unreadable");
      const answer = await agent.invoke({ turn: 0, position: 0, tool: toolName(WHOAMI), arguments: "{}" });
      expect(answer).toMatchObject({ status: "denied", errorKind: "forbidden" });
      expect(answer.content).toMatch(
        /may not read identity bindings in namespace .*rbac\.identityBindingNamespaces/,
      );
      expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
      // Meanwhile the controller published the listed namespace's bindings and none of these.
      expect(await publishedBindings(env, namespace)).toBeDefined();
      expect(await publishedBindings(env, unlisted)).toBeUndefined();
    } finally {
      await env.kubectl.run("admin", ["delete", "namespace", unlisted, "--wait=false"]);
    }
  });

  it("sends the account of the labelled binding, and denies when two bindings disagree", async () => {
    await bind("accounts", { alice: "ALICE-01" });
    const agent = await startAgent(env, namespace, "bound");
    const answer = await agent.invoke({ turn: 0, position: 0, tool: toolName(WHOAMI), arguments: "{}" });
    expect(answer.status).toBe("succeeded");
    expect((await ident.effects(WHOAMI)).map((e) => e.account)).toEqual(["ALICE-01"]);

    await bind("more-accounts", { alice: "ALICE-02" });
    const ambiguous = await agent.invoke({ turn: 0, position: 1, tool: toolName(WHOAMI), arguments: "{}" });
    expect(ambiguous).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(ambiguous.content).toMatch(/2 different accounts/);
    expect(await ident.effects(WHOAMI)).toHaveLength(1);
    await unbindIdentities(env, namespace, "ident", "more-accounts");

    // Revoked: the next call after the controller republished is denied.
    await unbindIdentities(env, namespace, "ident", "accounts");
    const revoked = await agent.invoke({ turn: 0, position: 2, tool: toolName(WHOAMI), arguments: "{}" });
    expect(revoked).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(revoked.content).toMatch(/alice has no account binding/);
    expect(await ident.effects(WHOAMI)).toHaveLength(1);
  });

  it("goes Stale at dispatch when the binding was removed after the proposal", async () => {
    await bind("accounts", { alice: "ALICE-01" });
    const agent = await startAgent(env, namespace, "unbind");
    const answer = await agent.invoke({ turn: 0, position: 0, tool: toolName(BOOK), arguments: "{}" });
    expect(answer.status).toBe("pending_approval");
    const name = answer.approval?.name ?? "";
    await env.kubectl.ok("admin", ["delete", "secret", "accounts", "-n", namespace]);
    expect((await decide(env, namespace, name, "alice")).code).toBe(0);

    const approval = await approvalPast(env, namespace, name, DISPATCHING);
    expect(approval.status?.phase).toBe("Stale");
    expect(executed(approval)?.reason).toBe("IdentityUnbound");
    expect(await executionsOfSession(env.pool, agent.session.uid)).toEqual([]);
    expect(await ident.calls(BOOK)).toEqual([]);
  });
});
