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
import type { ApprovalView } from "./ports.ts";
import { recoverExpiredExecutions } from "./recovery.ts";

const session = TEST_SESSION;

const publish = testCapability({
  id: "aps.schedule.publish",
  effect: "write",
  idempotency: "key",
  inputSchema: {
    type: "object",
    properties: { planId: { type: "string" }, version: { type: "integer" } },
    required: ["planId", "version"],
  },
  target: { kind: "plan", idArgument: "planId", versionArgument: "version" },
});

function call(overrides: Partial<InvokeCall> = {}): InvokeCall {
  return {
    turn: 0,
    position: 0,
    callId: "call_0",
    tool: "aps_schedule_publish",
    arguments: '{"planId":"P-7","version":3}',
    ...overrides,
  };
}

function worldWith(capability = publish): InMemoryWorld {
  const world = createInMemoryWorld();
  world.capabilities.push(capability);
  world.targetVersions.set("plan/P-7", "3");
  return world;
}

/** Proposes the publish, approves it as alice and returns what the dispatcher would read. */
async function approved(world: InMemoryWorld): Promise<ApprovalView> {
  const { answer } = await invoke(world.deps, session, call());
  expect(answer.status).toBe("pending_approval");
  const stored = [...world.approvals.values()][0]!;
  return {
    request: stored.request,
    decisions: [{ approver: "alice", verdict: "Approve" }],
    phase: "Approved",
  };
}

const lost = { kind: "lost", reason: "connection_lost", message: "reset" } as const;
const unknownReceipt = {
  kind: "answered",
  response: { status: "failed", errorKind: "unknown_outcome", message: "answer lost" },
} as const;

describe("an execution whose outcome is unknown", () => {
  it("retries with the same idempotency key, then settles through the status query", async () => {
    const world = worldWith(testCapability({ id: "aps.schedule.read", idempotency: "key" }));
    world.providerBehaviour = () => unknownReceipt;
    world.statusBehaviour = (idempotencyKey) => ({
      kind: "answered",
      status: { idempotencyKey, status: "succeeded", response: { status: "succeeded", result: { n: 1 } } },
    });
    const { answer } = await invoke(
      world.deps,
      session,
      call({ tool: "aps_schedule_read", arguments: "{}" }),
    );
    expect(answer.status).toBe("succeeded");
    expect(world.providerCalls).toHaveLength(2);
    expect(new Set(world.providerCalls.map((c) => c.request.idempotencyKey)).size).toBe(1);
    expect(world.statusCalls).toHaveLength(1);
    expect([...world.executions.values()][0]).toMatchObject({ state: "succeeded" });
  });

  it("stays unknown for a provider without idempotency: one call, no retry", async () => {
    const world = worldWith(testCapability({ id: "aps.schedule.read", idempotency: "none" }));
    world.providerBehaviour = () => lost;
    const { answer } = await invoke(
      world.deps,
      session,
      call({ tool: "aps_schedule_read", arguments: "{}" }),
    );
    expect(answer.status).toBe("unknown");
    expect(world.providerCalls).toHaveLength(1);
    expect([...world.executions.values()][0]).toMatchObject({
      state: "unknown",
      errorKind: "unknown_outcome",
    });
    expect(auditPayloads(world, AuditKind.executionFinished)).toEqual([
      expect.objectContaining({ state: "unknown" }),
    ]);
  });

  it("takes a business refusal as final: forbidden is recorded as given and never retried", async () => {
    const world = worldWith(testCapability({ id: "aps.schedule.read", idempotency: "key" }));
    world.providerBehaviour = () => ({
      kind: "answered",
      response: { status: "failed", errorKind: "forbidden", message: "bob may not publish" },
    });
    const { answer } = await invoke(
      world.deps,
      session,
      call({ tool: "aps_schedule_read", arguments: "{}" }),
    );
    expect(answer).toMatchObject({ status: "failed", errorKind: "forbidden" });
    expect(world.providerCalls).toHaveLength(1);
    expect(world.statusCalls).toHaveLength(0);
  });
});

describe("recovery of an execution whose claimer died", () => {
  /** A claimed row left `started`, as a SIGKILL right after the claim leaves it. */
  async function abandoned(world: InMemoryWorld, idempotency: "key" | "none") {
    world.capabilities[0] = testCapability({ id: "aps.schedule.read", idempotency });
    let release: () => void = () => {};
    // The first call hangs until released, then its answer is lost; later calls lose theirs at once.
    world.providerBehaviour = () => {
      world.providerBehaviour = () => lost;
      return new Promise((resolve) => {
        release = () => resolve(lost);
      });
    };
    const pending = invoke(world.deps, session, call({ tool: "aps_schedule_read", arguments: "{}" }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    const row = [...world.executions.values()][0]!;
    expect(row.state).toBe("started");
    return { row, pending, release: () => release() };
  }

  it("leaves a row alone while its lease runs", async () => {
    const world = worldWith();
    const { row, pending, release } = await abandoned(world, "key");
    expect(await recoverExpiredExecutions(world.deps)).toBe(0);
    expect(world.executions.get(row.id)?.state).toBe("started");
    release();
    await pending;
  });

  it("re-invokes with the same key once the lease ended, for a provider that deduplicates", async () => {
    const world = worldWith();
    const { row, pending, release } = await abandoned(world, "key");
    world.now.micros = row.leaseUntilMicros + 1;
    world.providerBehaviour = () => ({ kind: "answered", response: { status: "succeeded", result: {} } });
    expect(await recoverExpiredExecutions(world.deps)).toBe(1);
    expect(world.executions.get(row.id)).toMatchObject({ state: "succeeded" });
    expect(world.providerCalls.map((c) => c.request.idempotencyKey)).toEqual([
      row.idempotencyKey,
      row.idempotencyKey,
    ]);
    expect(auditPayloads(world, AuditKind.executionRecovering)).toEqual([
      expect.objectContaining({ reinvoke: true }),
    ]);
    // The original claimer's late answer changes nothing.
    release();
    await pending;
    expect(world.executions.get(row.id)).toMatchObject({ state: "succeeded" });
  });

  it("only asks the status endpoint for a provider without idempotency, and stays unknown when it knows nothing", async () => {
    const world = worldWith();
    const { row, pending, release } = await abandoned(world, "none");
    world.now.micros = row.leaseUntilMicros + 1;
    await recoverExpiredExecutions(world.deps);
    expect(world.providerCalls).toHaveLength(1);
    expect(world.statusCalls).toEqual([row.idempotencyKey]);
    expect(world.executions.get(row.id)).toMatchObject({ state: "unknown" });
    release();
    await pending;
  });
});

describe("dispatch of an approved call", () => {
  it("executes when the target is still at the proposed version", async () => {
    const world = worldWith();
    const result = await executeApproved(world.deps, {
      approval: await approved(world),
      session,
      rules: RULES_ENFORCED,
    });
    expect(result).toMatchObject({ kind: "executed", execution: { state: "succeeded" } });
    expect(world.providerCalls).toHaveLength(1);
  });

  it("is Stale when the target's version moved since the proposal", async () => {
    const world = worldWith();
    const approval = await approved(world);
    expect(approval.request.target).toEqual({ kind: "plan", id: "P-7", version: "3" });
    world.targetVersions.set("plan/P-7", "4");
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", phase: "Stale", reason: "TargetVersionMoved" });
    expect(world.providerCalls).toHaveLength(0);
  });

  it("is Stale when the target is gone", async () => {
    const world = worldWith();
    const approval = await approved(world);
    world.targetVersions.clear();
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", phase: "Stale", reason: "TargetGone" });
  });

  it("is Stale when the provider was disabled after the proposal", async () => {
    const world = worldWith();
    const approval = await approved(world);
    world.capabilities[0] = { ...publish, disabled: true };
    const result = await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    expect(result).toMatchObject({ kind: "refused", phase: "Stale", reason: "Disabled" });
    expect(world.providerCalls).toHaveLength(0);
  });

  it("runs once however often it is dispatched", async () => {
    const world = worldWith();
    const approval = await approved(world);
    const results = await Promise.all(
      [1, 2, 3].map(() => executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED })),
    );
    expect(results.every((r) => r.kind === "executed")).toBe(true);
    expect(world.providerCalls).toHaveLength(1);
  });
});

describe("a call repeated while its first invoke is still executing", () => {
  const read = testCapability({ id: "aps.schedule.read", idempotency: "key" });
  const readCall = call({ tool: "aps_schedule_read", arguments: "{}" });

  it("waits for the first invoke and answers with its receipt, calling the provider once", async () => {
    const world = worldWith(read);
    let answerProvider!: () => void;
    world.providerBehaviour = () =>
      new Promise((resolve) => {
        answerProvider = () =>
          resolve({ kind: "answered", response: { status: "succeeded", result: { n: 7 } } });
      });
    const first = invoke(world.deps, session, readCall);
    await expect.poll(() => world.providerCalls.length).toBe(1);
    const repeat = invoke(world.deps, session, readCall);
    await expect.poll(() => world.sleeps).toBeGreaterThan(0);
    answerProvider();
    expect((await first).answer).toMatchObject({ status: "succeeded" });
    const repeated = await repeat;
    expect(repeated).toMatchObject({ decision: "repeated", answer: { status: "succeeded" } });
    expect(repeated.answer.content).toContain('"n":7');
    expect(world.providerCalls).toHaveLength(1);
  });

  it("takes the execution over once its lease ends without an outcome, and settles it by key", async () => {
    const world = worldWith(read);
    world.providerBehaviour = () => new Promise(() => {});
    void invoke(world.deps, session, readCall);
    await expect.poll(() => world.providerCalls.length).toBe(1);
    world.providerBehaviour = () => ({
      kind: "answered",
      response: { status: "succeeded", result: { n: 8 } },
    });
    const repeated = await invoke(world.deps, session, readCall);
    expect(repeated).toMatchObject({ decision: "repeated", answer: { status: "succeeded" } });
    const key = world.providerCalls[0]!.request.idempotencyKey;
    expect(key).toEqual(expect.any(String));
    expect(world.providerCalls.map((c) => c.request.idempotencyKey)).toEqual([key, key]);
    expect(auditPayloads(world, AuditKind.executionRecovering)).toHaveLength(1);
  });
});

describe("an Approval found under the derived name", () => {
  it("is ours when it records this very call, and the repeat waits for it", async () => {
    const world = worldWith();
    await approved(world);
    const repeat = await invoke(world.deps, session, call());
    expect(repeat).toMatchObject({ decision: "repeated", answer: { status: "pending_approval" } });
  });

  it("once rejected, answers a repeat with the person's decision, as the wait endpoint does", async () => {
    const world = worldWith();
    await approved(world);
    const stored = [...world.approvals.values()][0]!;
    stored.decisions = [{ approver: "alice", verdict: "Reject", reason: "press-1 is booked" }];
    stored.phase = "Rejected";
    const repeat = await invoke(world.deps, session, call());
    expect(repeat).toMatchObject({
      decision: "repeated",
      answer: { status: "denied", errorKind: "forbidden" },
    });
    expect(repeat.answer.content).toMatch(
      /^rejected by alice: press-1 is booked\. This is a person's decision/,
    );
    expect(world.providerCalls).toHaveLength(0);
  });

  it("while its execution runs, answers a repeat by waiting on the Approval, not with 'being executed'", async () => {
    const world = worldWith();
    const approval = await approved(world);
    const stored = [...world.approvals.values()][0]!;
    stored.phase = "Executing";
    let answerProvider!: () => void;
    world.providerBehaviour = () =>
      new Promise((resolve) => {
        answerProvider = () =>
          resolve({ kind: "answered", response: { status: "succeeded", result: { v: 4 } } });
      });
    const dispatch = executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED });
    await expect.poll(() => world.providerCalls.length).toBe(1);
    expect([...world.executions.values()][0]!.state).toBe("started");

    const during = await invoke(world.deps, session, call());
    expect(during).toMatchObject({
      decision: "repeated",
      answer: { status: "pending_approval", approval: { name: stored.request.name } },
    });

    answerProvider();
    expect(await dispatch).toMatchObject({ kind: "executed" });
    stored.phase = "Succeeded";
    const after = await invoke(world.deps, session, call());
    expect(after).toMatchObject({ decision: "repeated", answer: { status: "succeeded" } });
    expect(after.answer.content).toContain('"v":4');
    expect(world.providerCalls).toHaveLength(1);
  });

  it("once executed, answers a repeat with the receipt", async () => {
    const world = worldWith();
    const approval = await approved(world);
    expect(await executeApproved(world.deps, { approval, session, rules: RULES_ENFORCED })).toMatchObject({
      kind: "executed",
    });
    [...world.approvals.values()][0]!.phase = "Succeeded";
    const repeat = await invoke(world.deps, session, call());
    expect(repeat).toMatchObject({ decision: "repeated", answer: { status: "succeeded" } });
    expect(world.providerCalls).toHaveLength(1);
  });

  it("is a squat when it is owned by the session but records other arguments", async () => {
    const world = worldWith();
    await approved(world);
    const stored = [...world.approvals.values()][0]!;
    stored.request = {
      ...stored.request,
      arguments: '{"planId":"P-7","version":2}',
      argumentsDigest: "f".repeat(64),
    };
    const answer = await invoke(world.deps, session, call());
    expect(answer).toMatchObject({
      decision: "conflict",
      answer: { status: "denied", errorKind: "conflict" },
    });
    // Core writes no status (the gateway may patch none): it records the squat for the controller.
    expect(stored.phase).toBe("Pending");
    const [conflict] = world.audit.filter((r) => r.kind === "approval.conflict");
    expect(conflict?.payload).toMatchObject({ approval: `${session.namespace}/${stored.request.name}` });
    expect(world.providerCalls).toHaveLength(0);
    expect(world.approvals.size).toBe(1);
    expect(world.executions.size).toBe(0);
  });

  it("is a squat when it records this very call but the session is not its controller owner", async () => {
    const world = worldWith();
    await approved(world);
    const stored = [...world.approvals.values()][0]!;
    stored.ownerUid = "uid-of-someone-else";
    const reserved = structuredClone(world.reservations);
    const answer = await invoke(world.deps, session, call());
    expect(answer).toMatchObject({
      decision: "conflict",
      answer: { status: "denied", errorKind: "conflict" },
    });
    expect(stored.phase).toBe("Pending");
    expect(auditPayloads(world, AuditKind.approvalConflict)).toEqual([
      expect.objectContaining({ approval: `${session.namespace}/${stored.request.name}` }),
    ]);
    expect(world.reservations).toEqual(reserved);
    expect(world.approvals.size).toBe(1);
    expect(world.executions.size).toBe(0);
    expect(world.providerCalls).toHaveLength(0);
  });
});
