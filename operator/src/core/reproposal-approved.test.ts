/**
 * Reads and drafts that need approval, proposed again identically (core/reproposal.ts, scope
 * "approved"): answered from what a person approved — the open Approval, or the run it dispatched —
 * never a second Approval, never a second run; a read its policy lets run alone runs every time.
 */
import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { AuditKind } from "./audit.ts";
import {
  auditPayloads,
  createInMemoryWorld,
  type InMemoryWorld,
  RULES_ENFORCED,
  TEST_SESSION,
  testCapability,
} from "./in-memory-ports.ts";
import { executeApproved, invoke } from "./invoke.ts";
import type { ResolvedCapability } from "./ports.ts";

const session = TEST_SESSION;
const schema = { type: "object", properties: { employee: { type: "string" } }, required: ["employee"] };
const approvedRead = testCapability({
  id: "hr.salary.read",
  effect: "read",
  inputSchema: schema,
  policy: { approval: "Required" },
});
const approvedDraft = testCapability({ ...approvedRead, id: "hr.letter.draft", effect: "draft" });

function proposal(capability: ResolvedCapability, position: number, turn = 0): InvokeCall {
  return {
    turn,
    position,
    callId: `call_${position}`,
    tool: capability.toolName,
    arguments: '{"employee":"E-17"}',
  };
}

function worldWith(capability: ResolvedCapability): InMemoryWorld {
  const world = createInMemoryWorld();
  world.capabilities.push(capability);
  world.providerBehaviour = () => ({
    kind: "answered",
    response: { status: "succeeded", result: { salary: 5200 } },
  });
  return world;
}

/** Approves and dispatches the world's only Approval as the approval controller does. */
async function approveOnly(world: InMemoryWorld) {
  const stored = [...world.approvals.values()];
  expect(stored).toHaveLength(1);
  const approval = stored[0]!;
  const result = await executeApproved(world.deps, {
    approval: {
      request: approval.request,
      decisions: [{ approver: "alice", verdict: "Approve" }],
      phase: "Approved",
    },
    session,
    rules: RULES_ENFORCED,
  });
  approval.phase =
    result.kind === "executed" && result.execution.state === "succeeded" ? "Succeeded" : "Failed";
  return approval;
}

describe.each([approvedRead, approvedDraft])(
  "a $effect that needs approval, proposed again",
  (capability) => {
    it("waits on the open Approval instead of creating a second one, in any turn", async () => {
      const world = worldWith(capability);
      const first = await invoke(world.deps, session, proposal(capability, 0));
      expect(first.answer.status).toBe("pending_approval");

      const again = await invoke(world.deps, session, proposal(capability, 1, 3));
      expect(again.answer).toMatchObject({
        status: "pending_approval",
        approval: first.answer.approval,
        executionId: first.answer.executionId,
      });
      expect(world.approvals.size).toBe(1);
      expect(world.providerCalls).toHaveLength(0);
      expect(auditPayloads(world, AuditKind.reproposed)).toEqual([
        expect.objectContaining({ rule: "ApprovalOpen", approval: first.answer.approval?.name }),
      ]);
      // The repeat reserved nothing: the session's limits count the call once.
      expect(world.reservations.filter((r) => r.resource === "tool_call")).toHaveLength(1);
    });

    it("is answered from the approved run's result, not run again nor approved twice", async () => {
      const world = worldWith(capability);
      const first = await invoke(world.deps, session, proposal(capability, 0));
      const approval = await approveOnly(world);
      expect(world.providerCalls).toHaveLength(1);

      const again = await invoke(world.deps, session, proposal(capability, 1));
      expect(again.answer).toMatchObject({
        status: "succeeded",
        executionId: first.answer.executionId,
        approval: { name: approval.request.name },
      });
      expect(again.answer.content).toContain('{"result":{"salary":5200}}');
      expect(again.answer.content).toContain(`This exact ${capability.effect} was approved`);
      expect(world.providerCalls).toHaveLength(1);
      expect(world.approvals.size).toBe(1);
      expect(auditPayloads(world, AuditKind.reproposed)).toEqual([
        expect.objectContaining({ rule: "AlreadySucceeded", earlierExecution: first.answer.executionId }),
      ]);
    });
  },
);

describe("a read that needs approval, proposed again", () => {
  it("waits on its Approval while the approved run is still executing", async () => {
    const world = worldWith(approvedRead);
    await invoke(world.deps, session, proposal(approvedRead, 0));
    const stored = [...world.approvals.values()][0]!;
    let release: () => void = () => {};
    world.providerBehaviour = () =>
      new Promise((resolve) => {
        release = () => resolve({ kind: "answered", response: { status: "succeeded", result: {} } });
      });
    const dispatch = executeApproved(world.deps, {
      approval: {
        request: stored.request,
        decisions: [{ approver: "alice", verdict: "Approve" }],
        phase: "Approved",
      },
      session,
      rules: RULES_ENFORCED,
    });
    while (world.providerCalls.length === 0) await new Promise((r) => setImmediate(r));
    stored.phase = "Executing";

    const again = await invoke(world.deps, session, proposal(approvedRead, 1));
    expect(again.answer).toMatchObject({
      status: "pending_approval",
      approval: { name: stored.request.name },
    });
    release();
    await dispatch;
    expect(world.providerCalls).toHaveLength(1);
  });

  it("is refused naming the approved run when the business system refused it for good", async () => {
    const world = worldWith(approvedRead);
    world.providerBehaviour = () => ({
      kind: "answered",
      response: {
        status: "failed",
        errorKind: "forbidden",
        message: "carol's account may not read salaries",
      },
    });
    const first = await invoke(world.deps, session, proposal(approvedRead, 0));
    await approveOnly(world);

    const again = await invoke(world.deps, session, proposal(approvedRead, 1));
    expect(again.answer).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(again.answer.content).toContain(`execution ${first.answer.executionId}`);
    expect(world.providerCalls).toHaveLength(1);
  });

  it("asks anew once its Approval expired without a run", async () => {
    const world = worldWith(approvedRead);
    await invoke(world.deps, session, proposal(approvedRead, 0));
    [...world.approvals.values()][0]!.phase = "Expired";

    const again = await invoke(world.deps, session, proposal(approvedRead, 1));
    expect(again.answer.status).toBe("pending_approval");
    expect(world.approvals.size).toBe(2);
  });

  it("is not answered by runs no person approved: an Auto run before the policy required approval", async () => {
    const world = worldWith({ ...approvedRead, policy: { approval: "Auto" } });
    const auto = await invoke(world.deps, session, proposal(approvedRead, 0));
    expect(auto.answer.status).toBe("succeeded");
    world.capabilities.splice(0, world.capabilities.length, approvedRead);

    const again = await invoke(world.deps, session, proposal(approvedRead, 1));
    expect(again.answer.status).toBe("pending_approval");
    expect(world.providerCalls).toHaveLength(1);
  });

  it("runs each time when its policy lets it run alone, even after an approved run", async () => {
    const world = worldWith(approvedRead);
    await invoke(world.deps, session, proposal(approvedRead, 0));
    await approveOnly(world);
    world.capabilities.splice(0, world.capabilities.length, {
      ...approvedRead,
      policy: { approval: "Auto" },
    });

    const again = await invoke(world.deps, session, proposal(approvedRead, 1));
    expect(again.answer.status).toBe("succeeded");
    expect(world.providerCalls).toHaveLength(2);
  });
});
