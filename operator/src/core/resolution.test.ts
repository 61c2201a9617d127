import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { AuditKind } from "./audit.ts";
import {
  auditPayloads,
  createInMemoryWorld,
  type InMemoryWorld,
  TEST_SESSION,
  testCapability,
} from "./in-memory-ports.ts";
import { invoke } from "./invoke.ts";
import type { ApprovalView, ExecutionRecord } from "./ports.ts";
import {
  type ResolutionEntry,
  recordUnknownAutoExecution,
  recordUnknownAutoExecutions,
  resolveExecution,
} from "./resolution.ts";

const session = TEST_SESSION;
const autoPublish = testCapability({
  id: "aps.schedule.publish",
  effect: "write",
  idempotency: "key",
  inputSchema: { type: "object", properties: { planId: { type: "string" } }, required: ["planId"] },
  policy: { approval: "Auto" },
});
const call: InvokeCall = {
  turn: 0,
  position: 0,
  callId: "call_0",
  tool: "aps_schedule_publish",
  arguments: '{"planId":"P-7"}',
};
const carol: ResolutionEntry = {
  resolver: "carol",
  outcome: "Succeeded",
  reason: "APS shows the plan published",
};

/** An Auto publish whose provider never answers: its execution ends unknown. */
async function unknownAutoCall(): Promise<{ world: InMemoryWorld; execution: ExecutionRecord }> {
  const world = createInMemoryWorld();
  world.capabilities.push(autoPublish);
  world.providerBehaviour = () => ({ kind: "lost", reason: "timeout", message: "no answer" });
  await invoke(world.deps, session, call);
  const execution = [...world.executions.values()][0]!;
  expect(execution.state).toBe("unknown");
  return { world, execution };
}

function viewOf(world: InMemoryWorld, name: string): ApprovalView {
  const stored = world.approvals.get(`plant-a/${name}`)!;
  return { request: stored.request, decisions: [], phase: stored.phase, uid: "uid-apr" };
}

describe("an Auto call whose outcome is unknown", () => {
  it("gets a record Approval, read as Unknown before the controller marks it, that takes no decisions", async () => {
    const { world, execution } = await unknownAutoCall();
    const stored = [...world.approvals.values()];
    expect(stored).toHaveLength(1);
    // Created phase-less: the approval reconciler writes phase Unknown (controllers/approval/plan.ts).
    const name = `apr-${execution.id.slice(0, 20)}`;
    expect((await world.deps.approvals.get(session.namespace, name, session.uid))?.phase).toBe("Unknown");
    expect(stored[0]).toMatchObject({
      phase: "Pending",
      request: {
        name: `apr-${execution.id.slice(0, 20)}`,
        executionId: execution.id,
        autoExecution: true,
        approvers: { users: [], groups: [] },
        argumentsDigest: execution.requestDigest,
      },
    });
    expect(auditPayloads(world, AuditKind.approvalUnknownRecorded)).toHaveLength(1);
  });

  it("tells the agent which Approval a person resolves it on", async () => {
    const world = createInMemoryWorld();
    world.capabilities.push(autoPublish);
    world.providerBehaviour = () => ({ kind: "lost", reason: "timeout", message: "no answer" });
    const { answer } = await invoke(world.deps, session, call);
    expect(answer).toMatchObject({ status: "unknown", approval: { name: expect.stringMatching(/^apr-/) } });
  });

  it("is recorded once, whether by the call or by the leader's sweep", async () => {
    const { world, execution } = await unknownAutoCall();
    expect(await recordUnknownAutoExecutions(world.deps)).toBe(1);
    expect(await recordUnknownAutoExecution(world.deps, execution)).toBe(`apr-${execution.id.slice(0, 20)}`);
    expect(world.approvals.size).toBe(1);
    expect(auditPayloads(world, AuditKind.approvalUnknownRecorded)).toHaveLength(1);
  });

  it("is recorded by the sweep when nothing recorded it when it ended", async () => {
    const { world } = await unknownAutoCall();
    world.approvals.clear();
    expect(await recordUnknownAutoExecutions(world.deps)).toBe(1);
    expect([...world.approvals.values()][0]?.request.autoExecution).toBe(true);
  });

  it("refuses a squatted Approval name: audited for the controller to mark, its status untouched", async () => {
    const { world, execution } = await unknownAutoCall();
    const stored = [...world.approvals.values()][0]!;
    stored.ownerUid = "someone-else";
    stored.phase = "Pending";
    expect(await recordUnknownAutoExecution(world.deps, execution)).toBeUndefined();
    expect(stored.phase).toBe("Pending");
    expect(auditPayloads(world, AuditKind.approvalConflict)).toEqual([
      expect.objectContaining({ approval: `${stored.request.namespace}/${stored.request.name}` }),
    ]);
  });
});

describe("resolving an unknown outcome", () => {
  it("records the person's outcome on the row and audits execution.resolved in their name", async () => {
    const { world, execution } = await unknownAutoCall();
    const name = `apr-${execution.id.slice(0, 20)}`;
    const unknownFinish = world.audit.findIndex(
      (e) => e.kind === AuditKind.executionFinished && e.payload.state === "unknown",
    );

    const result = await resolveExecution(world.deps, { approval: viewOf(world, name), resolution: carol });
    expect(result).toMatchObject({ kind: "resolved", recordedNow: true });
    const row = world.executions.get(execution.id)!;
    expect(row).toMatchObject({
      state: "succeeded",
      message: "resolved by carol: APS shows the plan published",
      resolution: { resolver: "carol", reason: "APS shows the plan published" },
    });
    const resolved = world.audit.filter((e) => e.kind === AuditKind.executionResolved);
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({
      actor: "carol",
      outcome: "success",
      executionId: execution.id,
      payload: {
        resolver: "carol",
        outcome: "Succeeded",
        reason: "APS shows the plan published",
        approvalUid: "uid-apr",
        unknownFinishSeq: unknownFinish + 1,
      },
    });
    // The resolution is the row's finish in the chain: the outbox has nothing to append late.
    expect(row.finishAuditSeq).toBe(world.audit.indexOf(resolved[0]!) + 1);
  });

  it("is idempotent: a repeat appends nothing and changes nothing", async () => {
    const { world, execution } = await unknownAutoCall();
    const approval = viewOf(world, `apr-${execution.id.slice(0, 20)}`);
    await resolveExecution(world.deps, { approval, resolution: carol });
    const again = await resolveExecution(world.deps, { approval, resolution: carol });
    expect(again).toMatchObject({ kind: "resolved", recordedNow: false });
    expect(auditPayloads(world, AuditKind.executionResolved)).toHaveLength(1);
  });

  it("appends the record a crash left out after the row was resolved", async () => {
    const { world, execution } = await unknownAutoCall();
    const approval = viewOf(world, `apr-${execution.id.slice(0, 20)}`);
    world.auditFails = (entry) => entry.kind === AuditKind.executionResolved;
    await expect(resolveExecution(world.deps, { approval, resolution: carol })).rejects.toThrow();
    expect(world.executions.get(execution.id)?.state).toBe("succeeded");
    world.auditFails = () => false;
    expect(await resolveExecution(world.deps, { approval, resolution: carol })).toMatchObject({
      kind: "resolved",
    });
    expect(auditPayloads(world, AuditKind.executionResolved)).toHaveLength(1);
  });

  it("changes nothing when a receipt settled the row first", async () => {
    const { world, execution } = await unknownAutoCall();
    await world.deps.executions.recordReceipt(
      execution.id,
      { state: "failed", errorKind: "forbidden", atMicros: world.now.micros },
      execution.fencingToken,
    );
    const result = await resolveExecution(world.deps, {
      approval: viewOf(world, `apr-${execution.id.slice(0, 20)}`),
      resolution: carol,
    });
    expect(result).toMatchObject({ kind: "refused", reason: "AlreadySettled" });
    expect(world.executions.get(execution.id)?.state).toBe("failed");
    expect(auditPayloads(world, AuditKind.executionResolved)).toHaveLength(0);
  });

  it("changes nothing for a second, different resolution", async () => {
    const { world, execution } = await unknownAutoCall();
    const approval = viewOf(world, `apr-${execution.id.slice(0, 20)}`);
    await resolveExecution(world.deps, { approval, resolution: carol });
    const other = await resolveExecution(world.deps, {
      approval,
      resolution: { resolver: "dave", outcome: "Failed", reason: "not there" },
    });
    expect(other).toMatchObject({ kind: "refused", reason: "AlreadySettled" });
    expect(world.executions.get(execution.id)?.resolution?.resolver).toBe("carol");
  });

  it("tells the agent the person's outcome, not the unknown one", async () => {
    const { world, execution } = await unknownAutoCall();
    await resolveExecution(world.deps, {
      approval: viewOf(world, `apr-${execution.id.slice(0, 20)}`),
      resolution: { resolver: "carol", outcome: "Failed", reason: "no publish in APS" },
    });
    const { answer } = await invoke(world.deps, session, call);
    expect(answer).toMatchObject({ status: "failed" });
    expect(answer.content).toContain("carol checked the business system and found it did not take effect");
  });
});
