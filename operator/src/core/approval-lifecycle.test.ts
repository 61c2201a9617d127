import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { decideApproval, endApproval, endUndispatched, historyOf } from "./approval-lifecycle.ts";
import { AuditKind } from "./audit.ts";
import {
  createInMemoryWorld,
  type InMemoryWorld,
  RULES_ENFORCED,
  TEST_SESSION,
  testCapability,
} from "./in-memory-ports.ts";
import { executeApproved, invoke } from "./invoke.ts";
import type { ApprovalDecision, ApprovalView, DecisionRulesVerdict } from "./ports.ts";

const session = TEST_SESSION;

const publish = testCapability({
  id: "aps.schedule.publish",
  effect: "write",
  idempotency: "key",
  policy: { approval: "Required", approvers: { users: ["carol", "dave"], groups: [] } },
  inputSchema: {
    type: "object",
    properties: { planId: { type: "string" }, version: { type: "integer" } },
    required: ["planId", "version"],
  },
  target: { kind: "plan", idArgument: "planId", versionArgument: "version" },
});

const call: InvokeCall = {
  turn: 0,
  position: 0,
  callId: "call_0",
  tool: "aps_schedule_publish",
  arguments: '{"planId":"P-7","version":3}',
};

const NOT_ENFORCED: DecisionRulesVerdict = {
  enforced: false,
  message: "ValidatingAdmissionPolicyBinding gatehouse-approval-decide is missing",
};

/** Proposes the publish and returns the Approval as the reconciler would read it, with `decisions`. */
async function proposed(world: InMemoryWorld, decisions: ApprovalDecision[] = []): Promise<ApprovalView> {
  const { answer } = await invoke(world.deps, session, call);
  expect(answer.status).toBe("pending_approval");
  const stored = [...world.approvals.values()][0];
  if (!stored) throw new Error("no Approval was created");
  return { request: stored.request, decisions, phase: "Pending" };
}

function worldWithPublish(): InMemoryWorld {
  const world = createInMemoryWorld();
  world.capabilities.push(publish);
  world.targetVersions.set("plan/P-7", "3");
  return world;
}

function kinds(world: InMemoryWorld): string[] {
  return world.audit.map((entry) => entry.kind);
}

function recordsOfKind(world: InMemoryWorld, kind: string) {
  return world.audit.filter((entry) => entry.kind === kind);
}

describe("the decisions and the end of an Approval in the audit chain", () => {
  it("records who approved, once, however often the Approval is reconciled", async () => {
    const world = worldWithPublish();
    const approval = await proposed(world, [{ approver: "carol", verdict: "Approve", reason: "checked" }]);
    const first = await decideApproval(world.deps, { approval, rules: RULES_ENFORCED });
    const again = await decideApproval(world.deps, { approval, rules: RULES_ENFORCED });
    expect(first.phase).toBe("Approved");
    expect(again).toMatchObject({ phase: "Approved", end: "end" in first ? first.end : {} });
    expect(kinds(world)).toEqual([
      AuditKind.approvalRequested,
      AuditKind.approvalDecided,
      AuditKind.approvalApproved,
    ]);
    const [decided] = recordsOfKind(world, AuditKind.approvalDecided);
    expect(decided).toMatchObject({
      actor: "carol",
      outcome: "success",
      payload: { index: 0, approver: "carol", verdict: "Approve", reason: "checked", counted: true },
    });
    expect(recordsOfKind(world, AuditKind.approvalApproved)[0]?.payload).toMatchObject({
      approval: `plant-a/${approval.request.name}`,
      phase: "Approved",
      approvedBy: ["carol"],
      decisions: [{ index: 0, approver: "carol", verdict: "Approve" }],
    });
  });

  it("records a rejection with the rejecting approver, and a decision that did not count with why", async () => {
    const world = worldWithPublish();
    const approval = await proposed(world, [
      { approver: "mallory", verdict: "Approve" },
      { approver: "dave", verdict: "Reject", reason: "wrong week" },
    ]);
    const result = await decideApproval(world.deps, { approval, rules: RULES_ENFORCED });
    expect(result.phase).toBe("Rejected");
    expect(recordsOfKind(world, AuditKind.approvalDecided).map((r) => r.payload)).toEqual([
      expect.objectContaining({
        approver: "mallory",
        counted: false,
        ignoredReason: "mallory is not an approver",
      }),
      expect.objectContaining({ approver: "dave", counted: true, reason: "wrong week" }),
    ]);
    expect(recordsOfKind(world, AuditKind.approvalRejected)[0]?.payload).toMatchObject({
      rejectedBy: "dave",
      phase: "Rejected",
    });
  });

  it("records an expiry when nobody decided in time", async () => {
    const world = worldWithPublish();
    const approval = await proposed(world);
    world.now.micros = Date.parse(approval.request.expiresAt) * 1000 + 1;
    const result = await decideApproval(world.deps, { approval, rules: RULES_ENFORCED });
    expect(result.phase).toBe("Expired");
    expect(recordsOfKind(world, AuditKind.approvalExpired)[0]?.payload).toMatchObject({
      phase: "Expired",
      decisions: [],
    });
  });

  it("counts no decision while the rules are not enforced, and never counts one observed then", async () => {
    const world = worldWithPublish();
    // A forged decision in the name of an approver, appended while the decision binding was gone.
    const forged = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    const meanwhile = await decideApproval(world.deps, { approval: forged, rules: NOT_ENFORCED });
    expect(meanwhile.phase).toBe("Pending");
    expect(recordsOfKind(world, AuditKind.approvalDecided)[0]).toMatchObject({
      outcome: "failure",
      payload: { approver: "carol", counted: false, rulesEnforced: false },
    });
    expect(String(recordsOfKind(world, AuditKind.approvalDecided)[0]?.payload.ignoredReason)).toContain(
      "gatehouse-approval-decide is missing",
    );
    // The binding is back: the forged decision still does not count; dave's does.
    const restored = await decideApproval(world.deps, { approval: forged, rules: RULES_ENFORCED });
    expect(restored.phase).toBe("Pending");
    const withDave = {
      ...forged,
      decisions: [...forged.decisions, { approver: "dave", verdict: "Approve" as const }],
    };
    const decided = await decideApproval(world.deps, { approval: withDave, rules: RULES_ENFORCED });
    expect(decided.phase).toBe("Approved");
    expect(recordsOfKind(world, AuditKind.approvalApproved)[0]?.payload).toMatchObject({
      approvedBy: ["dave"],
    });
    expect(recordsOfKind(world, AuditKind.approvalDecided)).toHaveLength(2);
  });

  it("ends an Approval deleted while Pending as Cancelled after recording its decisions, once", async () => {
    const world = worldWithPublish();
    const approval = await proposed(world, [{ approver: "mallory", verdict: "Approve" }]);
    const input = {
      approval,
      rules: RULES_ENFORCED,
      phase: "Cancelled" as const,
      reason: "ApprovalDeleted",
      message: "deleted before it was decided",
    };
    const end = await endApproval(world.deps, input);
    expect(await endApproval(world.deps, input)).toEqual(end);
    expect(kinds(world)).toEqual([
      AuditKind.approvalRequested,
      AuditKind.approvalDecided,
      AuditKind.approvalCancelled,
    ]);
    expect(recordsOfKind(world, AuditKind.approvalCancelled)[0]?.payload).toMatchObject({
      reason: "ApprovalDeleted",
    });
  });

  it("ends the dispatch of an Approval approved in the chain whose status never said so, when its session ends", async () => {
    const world = worldWithPublish();
    const approval = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    await decideApproval(world.deps, { approval, rules: RULES_ENFORCED });
    // The operator stopped before writing Approved; the session ended meanwhile.
    await endApproval(world.deps, {
      approval,
      rules: RULES_ENFORCED,
      phase: "Cancelled",
      reason: "SessionEnded",
      message: "the session ended",
    });
    expect(kinds(world)).toEqual([
      AuditKind.approvalRequested,
      AuditKind.approvalDecided,
      AuditKind.approvalApproved,
      AuditKind.approvalCancelled,
    ]);
    expect(recordsOfKind(world, AuditKind.approvalCancelled)[0]?.payload).toMatchObject({
      atDispatch: true,
      reason: "SessionEnded",
    });
  });

  it("keeps the decisions of an Approval re-created under the same name apart from the deleted one's", async () => {
    const world = worldWithPublish();
    const first = {
      ...(await proposed(world, [{ approver: "mallory", verdict: "Approve" as const }])),
      uid: "uid-first",
    };
    await endApproval(world.deps, {
      approval: first,
      rules: RULES_ENFORCED,
      phase: "Cancelled",
      reason: "ApprovalDeleted",
      message: "deleted before it was decided",
    });
    // The session proposes the call again: a new object of the same name, which carol approves.
    const second = {
      ...first,
      uid: "uid-second",
      decisions: [{ approver: "carol", verdict: "Approve" as const }],
    };
    const decided = await decideApproval(world.deps, { approval: second, rules: RULES_ENFORCED });
    expect(decided.phase).toBe("Approved");
    expect(
      recordsOfKind(world, AuditKind.approvalDecided).map((r) => [r.payload.approver, r.payload.approvalUid]),
    ).toEqual([
      ["mallory", "uid-first"],
      ["carol", "uid-second"],
    ]);
    expect(recordsOfKind(world, AuditKind.approvalApproved)[0]?.payload).toMatchObject({
      approvalUid: "uid-second",
    });
  });

  it("records a decision whose approver name holds U+0000, keeping the name in the payload", async () => {
    const world = worldWithPublish();
    const approval = await proposed(world, [{ approver: "car\u0000ol", verdict: "Approve" }]);
    const result = await decideApproval(world.deps, { approval, rules: RULES_ENFORCED });
    expect(result.phase).toBe("Pending");
    const [decided] = recordsOfKind(world, AuditKind.approvalDecided);
    expect(decided?.actor).toBe("car\uFFFDol");
    expect(decided?.payload.approver).toBe("car\u0000ol");
  });

  it("ignores records of another Approval that shares the execution id", () => {
    const history = historyOf(
      [
        {
          kind: AuditKind.approvalApproved,
          actor: "gatehouse",
          atMicros: 1,
          payload: { approval: "plant-b/apr-x" },
          seq: 4,
          hash: "ab",
        },
      ],
      "plant-a/apr-x",
    );
    expect(history.end).toBeUndefined();
  });
});

describe("dispatch checks the approval in the audit chain", () => {
  it("executes what the chain approved and names that record in execution.started", async () => {
    const world = worldWithPublish();
    const pending = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    const decided = await decideApproval(world.deps, { approval: pending, rules: RULES_ENFORCED });
    if (!("end" in decided)) throw new Error("not settled");
    const result = await executeApproved(world.deps, {
      approval: { ...pending, phase: "Approved" },
      session,
      rules: RULES_ENFORCED,
    });
    expect(result).toMatchObject({ kind: "executed", execution: { state: "succeeded" } });
    expect(recordsOfKind(world, AuditKind.executionStarted)[0]?.payload.approvalRecord).toEqual({
      seq: decided.end.seq,
      hash: decided.end.hash,
    });
  });

  it("dispatches nothing while the decision rules are not enforced", async () => {
    const world = worldWithPublish();
    const pending = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    await decideApproval(world.deps, { approval: pending, rules: RULES_ENFORCED });
    const result = await executeApproved(world.deps, {
      approval: { ...pending, phase: "Approved" },
      session,
      rules: NOT_ENFORCED,
    });
    expect(result).toMatchObject({ kind: "deferred", reason: "DecisionRulesNotEnforced" });
    expect(world.providerCalls).toHaveLength(0);
  });

  it("backfills the approval record of an Approval approved by an earlier version before running it", async () => {
    const world = worldWithPublish();
    const pending = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    const result = await executeApproved(world.deps, {
      approval: { ...pending, phase: "Approved" },
      session,
      rules: RULES_ENFORCED,
    });
    expect(result.kind).toBe("executed");
    const approvedIndex = kinds(world).indexOf(AuditKind.approvalApproved);
    expect(world.audit[approvedIndex]?.payload).toMatchObject({ backfilled: true, approvedBy: ["carol"] });
    expect(approvedIndex).toBeLessThan(kinds(world).indexOf(AuditKind.executionStarted));
  });

  it("does not run a call whose approval record cannot be appended", async () => {
    const world = worldWithPublish();
    const pending = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    world.auditFails = (entry) => entry.kind === AuditKind.approvalApproved;
    await expect(
      executeApproved(world.deps, {
        approval: { ...pending, phase: "Approved" },
        session,
        rules: RULES_ENFORCED,
      }),
    ).rejects.toThrow(/audit log is unavailable/);
    expect(world.providerCalls).toHaveLength(0);
    expect(world.executions.size).toBe(0);
  });

  it("records a refusal at dispatch as the Approval's end, citing the approval, once", async () => {
    const world = worldWithPublish();
    const pending = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    const decided = await decideApproval(world.deps, { approval: pending, rules: RULES_ENFORCED });
    if (!("end" in decided)) throw new Error("not settled");
    world.targetVersions.set("plan/P-7", "4");
    const input = { approval: { ...pending, phase: "Approved" as const }, session, rules: RULES_ENFORCED };
    expect(await executeApproved(world.deps, input)).toMatchObject({ kind: "refused", phase: "Stale" });
    expect(await executeApproved(world.deps, input)).toMatchObject({ kind: "refused", phase: "Stale" });
    const stale = recordsOfKind(world, AuditKind.approvalStale);
    expect(stale).toHaveLength(1);
    expect(stale[0]?.payload).toMatchObject({
      atDispatch: true,
      reason: "TargetVersionMoved",
      approvalRecord: { seq: decided.end.seq, hash: decided.end.hash },
    });
  });

  it("ends the dispatch of an approved call deleted before it started", async () => {
    const world = worldWithPublish();
    const pending = await proposed(world, [{ approver: "carol", verdict: "Approve" }]);
    await decideApproval(world.deps, { approval: pending, rules: RULES_ENFORCED });
    await endUndispatched(world.deps, pending, "ApprovalDeleted", "deleted before its call started");
    await endUndispatched(world.deps, pending, "ApprovalDeleted", "deleted before its call started");
    expect(recordsOfKind(world, AuditKind.approvalCancelled).map((r) => r.payload)).toEqual([
      expect.objectContaining({ atDispatch: true, reason: "ApprovalDeleted" }),
    ]);
  });
});
