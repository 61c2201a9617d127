/**
 * What runs is what was approved (DESIGN §2 Approval, re-checks at dispatch), on Core's in-memory
 * ports: an approved call is refused for good when the Capability now names another provider
 * (ProviderChanged), and when the Capability's approval policy became stricter than the decisions
 * that approved it (PolicyChanged); a looser policy changes nothing.
 */
import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { decideApproval } from "./approval-lifecycle.ts";
import { AuditKind } from "./audit.ts";
import { sha256Hex } from "./canonical.ts";
import {
  createInMemoryWorld,
  type InMemoryWorld,
  RULES_ENFORCED,
  TEST_SESSION,
  testCapability,
  testCoreConfig,
} from "./in-memory-ports.ts";
import { executeApproved, invoke } from "./invoke.ts";
import type { ApprovalDecision, ApprovalView, CapabilityPolicy, ResolvedCapability } from "./ports.ts";

const session = TEST_SESSION;

const publish = testCapability({
  id: "aps.schedule.publish",
  effect: "write",
  idempotency: "key",
  policy: { approval: "Required", approvers: { users: ["carol", "dave"], groups: [] } },
  inputSchema: { type: "object", properties: { planId: { type: "string" } }, required: ["planId"] },
});

const call: InvokeCall = {
  turn: 0,
  position: 0,
  callId: "call_0",
  tool: "aps_schedule_publish",
  arguments: '{"planId":"P-7"}',
};

/** Proposes the publish, then approves it with `decisions` in the chain; returns the Approved view. */
async function approved(world: InMemoryWorld, decisions: ApprovalDecision[]): Promise<ApprovalView> {
  const { answer } = await invoke(world.deps, session, call);
  expect(answer.status).toBe("pending_approval");
  const stored = [...world.approvals.values()][0];
  if (!stored) throw new Error("no Approval was created");
  const view: ApprovalView = {
    request: stored.request,
    decisions,
    phase: "Pending",
    uid: "apr-uid",
    createdAtMicros: world.now.micros,
  };
  const decided = await decideApproval(world.deps, { approval: view, rules: RULES_ENFORCED });
  expect(decided.phase).toBe("Approved");
  return { ...view, phase: "Approved" };
}

function worldWith(capability: ResolvedCapability): InMemoryWorld {
  const world = createInMemoryWorld();
  world.capabilities.push(capability);
  return world;
}

/** The Capability as the platform edited it after the proposal. */
function edit(world: InMemoryWorld, change: Partial<ResolvedCapability>): void {
  world.capabilities[0] = { ...(world.capabilities[0] as ResolvedCapability), ...change };
}

function dispatchEnds(world: InMemoryWorld) {
  return world.audit.filter((e) => e.kind === AuditKind.approvalStale && e.payload.atDispatch === true);
}

describe("an approved call whose Capability now names another provider", () => {
  it("is refused Stale (ProviderChanged), naming both providers, and nothing is sent to either", async () => {
    const world = worldWith(publish);
    const approval = await approved(world, [{ approver: "carol", verdict: "Approve" }]);
    edit(world, { providerRef: { namespace: "plant-a", name: "aps-prod" } });
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", phase: "Stale", reason: "ProviderChanged" });
    if (result.kind !== "refused") throw new Error("not refused");
    expect(result.message).toBe(
      "Capability aps-schedule-publish now uses ProviderInstance plant-a/aps-prod; the call was approved for ProviderInstance plant-a/aps",
    );
    expect(world.providerCalls).toEqual([]);
    expect(world.executions.size).toBe(0);
    expect(dispatchEnds(world)).toEqual([
      expect.objectContaining({ payload: expect.objectContaining({ reason: "ProviderChanged" }) }),
    ]);
  });

  it("is refused for a provider of the same name in another namespace too", async () => {
    const world = worldWith(publish);
    const approval = await approved(world, [{ approver: "carol", verdict: "Approve" }]);
    edit(world, { providerRef: { namespace: "shared", name: "aps" } });
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", reason: "ProviderChanged" });
    expect(world.providerCalls).toEqual([]);
  });

  it("runs, once, against the provider it was approved for when nothing changed", async () => {
    const world = worldWith(publish);
    const approval = await approved(world, [{ approver: "carol", verdict: "Approve" }]);
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "executed", execution: { state: "succeeded" } });
    expect(world.providerCalls.map((c) => c.provider)).toEqual([{ namespace: "plant-a", name: "aps" }]);
  });
});

describe("an approved call whose Capability's approval policy became stricter", () => {
  const rows: Array<{
    name: string;
    policy: CapabilityPolicy;
    decisions: ApprovalDecision[];
    refused: boolean;
    message?: RegExp;
  }> = [
    {
      name: "is refused (PolicyChanged) when the policy now requires more approvals than it got",
      policy: {
        approval: "Required",
        approvers: { users: ["carol", "dave"], groups: [] },
        requiredApprovals: 2,
      },
      decisions: [{ approver: "carol", verdict: "Approve" }],
      refused: true,
      message: /now requires 2 approvals, and only 1 of 2 approvals count/,
    },
    {
      name: "is refused (PolicyChanged) when its only approval was the requester's and self-approval is now off",
      policy: {
        approval: "Required",
        approvers: { users: ["carol", "dave"], groups: [] },
        allowSelfApproval: false,
      },
      decisions: [{ approver: "alice", verdict: "Approve" }],
      refused: true,
      message: /no longer allows self-approval/,
    },
    {
      name: "is refused (PolicyChanged) when its approver is no longer one",
      policy: { approval: "Required", approvers: { users: ["dave"], groups: [] } },
      decisions: [{ approver: "carol", verdict: "Approve" }],
      refused: true,
      message: /now admits as approvers only user dave/,
    },
    {
      name: "runs when its decisions satisfy the stricter policy too",
      policy: {
        approval: "Required",
        approvers: { users: ["carol", "dave"], groups: [] },
        requiredApprovals: 2,
      },
      decisions: [
        { approver: "carol", verdict: "Approve" },
        { approver: "dave", verdict: "Approve" },
      ],
      refused: false,
    },
    {
      name: "runs when the policy became looser (the spec's rules still apply)",
      policy: { approval: "Required", approvers: { users: ["carol", "dave", "erin"], groups: ["ops"] } },
      decisions: [{ approver: "carol", verdict: "Approve" }],
      refused: false,
    },
  ];
  for (const row of rows) {
    it(row.name, async () => {
      const world = worldWith(publish);
      const approval = await approved(world, row.decisions);
      edit(world, { policy: row.policy });
      const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
      if (row.refused) {
        expect(result).toMatchObject({ kind: "refused", phase: "Stale", reason: "PolicyChanged" });
        if (result.kind === "refused") expect(result.message).toMatch(row.message ?? /./);
        expect(world.providerCalls).toEqual([]);
        expect(dispatchEnds(world)).toHaveLength(1);
      } else {
        expect(result).toMatchObject({ kind: "executed", execution: { state: "succeeded" } });
        expect(world.providerCalls).toHaveLength(1);
      }
    });
  }

  it("is refused Expired when the policy's ttl, counted from creation, has passed", async () => {
    const world = worldWith(publish);
    const approval = await approved(world, [{ approver: "carol", verdict: "Approve" }]);
    edit(world, { policy: { ...publish.policy, ttlSeconds: 60 } });
    world.now.micros += 61_000_000;
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", phase: "Expired", reason: "Expired" });
    expect(world.providerCalls).toEqual([]);
  });
});

describe("an approved Approval without the tool call's approval.requested in the chain", () => {
  /** The Approval of `call` made straight in the API (no tool call), approved; created `ageMs` ago. */
  async function madeAndApproved(ageMs: number): Promise<{ world: InMemoryWorld; approval: ApprovalView }> {
    // The same call in another world gives the very spec the gateway would have made.
    const elsewhere = worldWith(publish);
    await invoke(elsewhere.deps, session, call);
    const stored = [...elsewhere.approvals.values()][0];
    if (!stored) throw new Error("no Approval was created");
    const world = worldWith(publish);
    await world.deps.approvals.createOrGet(stored.request);
    const view: ApprovalView = {
      request: stored.request,
      decisions: [{ approver: "carol", verdict: "Approve" }],
      phase: "Pending",
      createdAtMicros: world.now.micros - ageMs * 1000,
    };
    expect(await decideApproval(world.deps, { approval: view, rules: RULES_ENFORCED })).toMatchObject({
      phase: "Approved",
    });
    return { world, approval: { ...view, phase: "Approved" } };
  }

  it("is refused Failed (RequestNotRecorded) for good, citing its approval record, and nothing is sent", async () => {
    const { world, approval } = await madeAndApproved(testCoreConfig.requestRecordGraceMs);
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", phase: "Failed", reason: "RequestNotRecorded" });
    expect(world.providerCalls).toEqual([]);
    expect(world.executions.size).toBe(0);
    const approvedRecord = world.audit.findIndex((e) => e.kind === AuditKind.approvalApproved);
    expect(world.audit.filter((e) => e.kind === AuditKind.approvalFailed)).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({
          reason: "RequestNotRecorded",
          atDispatch: true,
          approvalRecord: { seq: approvedRecord + 1, hash: expect.any(String) },
        }),
      }),
    ]);
  });

  it("waits (deferred, RequestNotRecorded) while it is younger than the grace, appending nothing", async () => {
    const { world, approval } = await madeAndApproved(testCoreConfig.requestRecordGraceMs - 1_000);
    const before = world.audit.length;
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "deferred", phase: "Approved", reason: "RequestNotRecorded" });
    expect(world.audit.length).toBe(before);
    expect(world.providerCalls).toEqual([]);
  });

  it("is refused when the chain's request was for other arguments than the spec now holds", async () => {
    const world = worldWith(publish);
    const approval = await approved(world, [{ approver: "carol", verdict: "Approve" }]);
    const edited = '{"planId":"P-8"}';
    const swapped: ApprovalView = {
      ...approval,
      request: { ...approval.request, arguments: edited, argumentsDigest: sha256Hex(edited) },
      createdAtMicros: world.now.micros - testCoreConfig.requestRecordGraceMs * 1000,
    };
    const result = await executeApproved(world.deps, { approval: swapped, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", phase: "Failed", reason: "RequestNotRecorded" });
    expect(world.providerCalls).toEqual([]);
  });

  it("is refused when the chain's request names another object of the same name", async () => {
    const world = worldWith(publish);
    const approval = await approved(world, [{ approver: "carol", verdict: "Approve" }]);
    const request = world.audit.find((e) => e.kind === AuditKind.approvalRequested);
    if (!request) throw new Error("no approval.requested");
    request.payload.approvalUid = "an-earlier-object";
    const result = await executeApproved(world.deps, {
      approval: {
        ...approval,
        createdAtMicros: world.now.micros - testCoreConfig.requestRecordGraceMs * 1000,
      },
      session,
      rules: RULES_ENFORCED,
    });
    expect(result).toMatchObject({ kind: "refused", reason: "RequestNotRecorded" });
    expect(world.providerCalls).toEqual([]);
  });
});

describe("an Approval the call did not record a request for", () => {
  it("is never run when its approval.requested could not be appended as it was made, though the call's repeat waits on it", async () => {
    const world = worldWith(publish);
    world.auditFails = (entry) => entry.kind === AuditKind.approvalRequested;
    await expect(invoke(world.deps, session, call)).rejects.toMatchObject({ kind: "unavailable" });
    world.auditFails = () => false;
    expect((await invoke(world.deps, session, call)).answer.status).toBe("pending_approval");
    const stored = [...world.approvals.values()][0];
    if (!stored) throw new Error("no Approval was created");
    const view: ApprovalView = {
      request: stored.request,
      decisions: [{ approver: "carol", verdict: "Approve" }],
      phase: "Pending",
      createdAtMicros: world.now.micros - testCoreConfig.requestRecordGraceMs * 1000,
    };
    await decideApproval(world.deps, { approval: view, rules: RULES_ENFORCED });
    const result = await executeApproved(world.deps, {
      approval: { ...view, phase: "Approved" },
      session,
      rules: RULES_ENFORCED,
    });
    expect(result).toMatchObject({ kind: "refused", phase: "Failed", reason: "RequestNotRecorded" });
    expect(world.providerCalls).toEqual([]);
  });

  it("is never run when it was made before the call under its name and identity, with approvers of its maker's choosing", async () => {
    const elsewhere = worldWith(publish);
    await invoke(elsewhere.deps, session, call);
    const genuine = [...elsewhere.approvals.values()][0];
    if (!genuine) throw new Error("no Approval was created");
    const world = worldWith(publish);
    const lax = {
      ...genuine.request,
      approvers: { users: [session.subject.user], groups: [] },
      allowSelfApproval: true,
    };
    await world.deps.approvals.createOrGet(lax);
    // The call takes the session-owned Approval of its identity as its own and waits on it.
    expect((await invoke(world.deps, session, call)).answer.status).toBe("pending_approval");
    expect(world.audit.filter((e) => e.kind === AuditKind.approvalRequested)).toEqual([]);
    const view: ApprovalView = {
      request: lax,
      decisions: [{ approver: session.subject.user, verdict: "Approve" }],
      phase: "Pending",
      createdAtMicros: world.now.micros - testCoreConfig.requestRecordGraceMs * 1000,
    };
    expect(await decideApproval(world.deps, { approval: view, rules: RULES_ENFORCED })).toMatchObject({
      phase: "Approved",
    });
    const result = await executeApproved(world.deps, {
      approval: { ...view, phase: "Approved" },
      session,
      rules: RULES_ENFORCED,
    });
    expect(result).toMatchObject({ kind: "refused", phase: "Failed", reason: "RequestNotRecorded" });
    expect(world.providerCalls).toEqual([]);
  });
});
