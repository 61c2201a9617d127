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
import type { ExecutionRecord, ResolvedCapability } from "./ports.ts";

const session = TEST_SESSION;

const schema = {
  type: "object",
  properties: { planId: { type: "string" }, version: { type: "integer" } },
  required: ["planId", "version"],
};
const autoPublish = testCapability({
  id: "aps.schedule.publish",
  effect: "write",
  idempotency: "key",
  inputSchema: schema,
  policy: { approval: "Auto" },
});
const approvedPublish = testCapability({ ...autoPublish, policy: {} });

function proposal(position: number, overrides: Partial<InvokeCall> = {}): InvokeCall {
  return {
    turn: 0,
    position,
    callId: `call_${position}`,
    tool: "aps_schedule_publish",
    arguments: '{"planId":"P-7","version":3}',
    ...overrides,
  };
}

function worldWith(capability: ResolvedCapability = autoPublish): InMemoryWorld {
  const world = createInMemoryWorld();
  world.capabilities.push(capability);
  return world;
}

/** Starts proposal 0 with the provider holding its answer until `release()`; resolves once it was sent. */
async function startHeldCall(world: InMemoryWorld) {
  let release: () => void = () => {};
  world.providerBehaviour = () =>
    new Promise((resolve) => {
      release = () => resolve({ kind: "answered", response: { status: "succeeded", result: {} } });
    });
  const running = invoke(world.deps, session, proposal(0));
  while (world.providerCalls.length === 0) await new Promise((r) => setImmediate(r));
  return { running, release: () => release() };
}

const lost = { kind: "lost", reason: "timeout", message: "no answer within 1000 ms" } as const;

function onlyExecution(world: InMemoryWorld): ExecutionRecord {
  const rows = [...world.executions.values()];
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

describe("a write proposed again after an unknown outcome", () => {
  it("is answered from the earlier record and not sent again", async () => {
    const world = worldWith();
    world.providerBehaviour = () => lost;
    const first = await invoke(world.deps, session, proposal(0));
    expect(first.answer.status).toBe("unknown");
    const sent = world.providerCalls.length;

    const again = await invoke(world.deps, session, proposal(1));
    const earlier = onlyExecution(world);
    expect(again.answer).toMatchObject({
      status: "unknown",
      errorKind: "unknown_outcome",
      executionId: earlier.id,
      approval: { name: `apr-${earlier.id.slice(0, 20)}` },
    });
    expect(again.answer.content).toContain("kubectl gatehouse resolve");
    expect(world.providerCalls).toHaveLength(sent);
    expect(auditPayloads(world, AuditKind.reproposed)).toEqual([
      expect.objectContaining({ rule: "OutcomeUnsettled", earlierExecution: earlier.id, state: "unknown" }),
    ]);
  });

  it("is answered from the earlier record while that execution is still running", async () => {
    const world = worldWith();
    const { running, release } = await startHeldCall(world);

    const again = await invoke(world.deps, session, proposal(1));
    expect(again.answer.status).toBe("unknown");
    expect(again.answer.content).toContain("already being executed");
    expect(world.providerCalls).toHaveLength(1);
    release();
    expect((await running).answer.status).toBe("succeeded");
  });

  it("answers a copy of the same call sent at once with the call's outcome, naming no Approval", async () => {
    const world = worldWith();
    const { running, release } = await startHeldCall(world);

    // The race: the copy looked the call up before the first copy claimed it, and finds the claimed
    // row only at its re-proposal check; the first copy's provider call ends after that check.
    const { executions } = world.deps;
    let lookups = 0;
    const copyDeps = {
      ...world.deps,
      executions: {
        ...executions,
        get: async (id: string) => (lookups++ === 0 ? undefined : executions.get(id)),
        findByAction: async (query: Parameters<typeof executions.findByAction>[0]) => {
          const rows = await executions.findByAction(query);
          release();
          return rows;
        },
      },
    };
    const copy = await invoke(copyDeps, session, proposal(0));
    const first = await running;

    expect(copy.answer).toEqual(first.answer);
    expect(copy.answer.approval).toBeUndefined();
    expect(copy.decision).toBe("repeated");
    expect(world.providerCalls).toHaveLength(1);
    expect(world.approvals.size).toBe(0);
    expect(auditPayloads(world, AuditKind.repeated)).toEqual([
      expect.objectContaining({ state: "succeeded" }),
    ]);
    expect(auditPayloads(world, AuditKind.reproposed)).toEqual([]);
  });

  it("names no Approval for a running Auto write proposed again in another turn", async () => {
    const world = worldWith();
    const { running, release } = await startHeldCall(world);

    const again = await invoke(world.deps, session, proposal(1, { turn: 1 }));
    expect(again.answer.content).toContain("already being executed");
    expect(again.answer.approval).toBeUndefined();
    release();
    await running;
    expect(world.approvals.size).toBe(0);
  });

  it("waits on the earlier Approval's execution when the write needed approval", async () => {
    const world = worldWith(approvedPublish);
    await invoke(world.deps, session, proposal(0));
    const stored = [...world.approvals.values()][0]!;
    world.providerBehaviour = () => lost;
    await executeApproved(world.deps, {
      approval: {
        request: stored.request,
        decisions: [{ approver: "alice", verdict: "Approve" }],
        phase: "Approved",
      },
      session,
      rules: RULES_ENFORCED,
    });
    stored.phase = "Unknown";

    const again = await invoke(world.deps, session, proposal(1));
    expect(again.answer).toMatchObject({ status: "unknown", approval: { name: stored.request.name } });
    expect(world.approvals.size).toBe(1);
  });
});

describe("a write proposed again after a failure", () => {
  it("is refused like a rejection when the business system's answer was final", async () => {
    const world = worldWith();
    world.providerBehaviour = () => ({
      kind: "answered",
      response: { status: "failed", errorKind: "forbidden", message: "bob may not publish" },
    });
    await invoke(world.deps, session, proposal(0));
    const earlier = onlyExecution(world);

    const again = await invoke(world.deps, session, proposal(1));
    expect(again.answer).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(again.answer.content).toContain(`execution ${earlier.id}`);
    expect(world.providerCalls).toHaveLength(1);
    expect(auditPayloads(world, AuditKind.denied)).toEqual([
      expect.objectContaining({ reason: "PreviouslyFailed", earlierExecution: earlier.id }),
    ]);
  });

  it("runs again under the same idempotency key when the request never reached the provider", async () => {
    const world = worldWith();
    world.providerBehaviour = () => ({ kind: "not_sent", message: "no ready endpoint" });
    await invoke(world.deps, session, proposal(0));
    const earlier = onlyExecution(world);
    // What the execution path records for a request that certainly never left (the row's `neverSent`).
    world.executions.get(earlier.id)!.neverSent = true;
    world.providerBehaviour = () => ({ kind: "answered", response: { status: "succeeded", result: {} } });

    const again = await invoke(world.deps, session, proposal(1));
    expect(again.answer.status).toBe("succeeded");
    expect(world.providerCalls.at(-1)?.request.idempotencyKey).toBe(earlier.idempotencyKey);
    const rows = [...world.executions.values()];
    expect(rows.map((r) => [r.state, r.idempotencyKey])).toEqual([
      ["failed", earlier.idempotencyKey],
      ["succeeded", earlier.idempotencyKey],
    ]);
    expect(auditPayloads(world, AuditKind.reproposed)).toEqual([
      expect.objectContaining({ rule: "NeverSent", idempotencyKey: earlier.idempotencyKey }),
    ]);
  });

  it("carries the never-sent execution's key into the Approval of a write that needs approval", async () => {
    const world = worldWith(approvedPublish);
    await invoke(world.deps, session, proposal(0));
    const first = [...world.approvals.values()][0]!;
    world.providerBehaviour = () => ({ kind: "not_sent", message: "connection refused" });
    const approve = (request: typeof first.request) =>
      executeApproved(world.deps, {
        approval: { request, decisions: [{ approver: "alice", verdict: "Approve" }], phase: "Approved" },
        session,
        rules: RULES_ENFORCED,
      });
    await approve(first.request);
    first.phase = "Failed";
    const earlier = onlyExecution(world);
    world.executions.get(earlier.id)!.neverSent = true;

    const again = await invoke(world.deps, session, proposal(1));
    expect(again.answer.status).toBe("pending_approval");
    const second = [...world.approvals.values()].find((a) => a.request.name !== first.request.name)!;
    expect(second.request.idempotencyKey).toBe(earlier.idempotencyKey);
    world.providerBehaviour = () => ({ kind: "answered", response: { status: "succeeded", result: {} } });
    const result = await approve(second.request);
    expect(result.kind).toBe("executed");
    expect(world.providerCalls.at(-1)?.request.idempotencyKey).toBe(earlier.idempotencyKey);
  });
});

describe("a write proposed again while its Approval is open", () => {
  it("waits on that Approval instead of creating a second one", async () => {
    const world = worldWith(approvedPublish);
    await invoke(world.deps, session, proposal(0));
    const first = [...world.approvals.values()][0]!;

    const again = await invoke(world.deps, session, proposal(1, { turn: 2 }));
    expect(again.answer).toMatchObject({
      status: "pending_approval",
      approval: { name: first.request.name },
      executionId: first.request.executionId,
    });
    expect(world.approvals.size).toBe(1);
    expect(auditPayloads(world, AuditKind.reproposed)).toEqual([
      expect.objectContaining({ rule: "ApprovalOpen", approval: first.request.name, phase: "Pending" }),
    ]);
  });
});

describe("a write proposed again after it succeeded", () => {
  it("is answered from its receipt and not sent again, though the model saw the receipt", async () => {
    const world = worldWith();
    const first = await invoke(world.deps, session, proposal(0));
    const again = await invoke(world.deps, session, proposal(1));
    expect(again.answer).toMatchObject({ status: "succeeded", executionId: first.answer.executionId });
    expect(again.answer.content).toContain("already succeeded in this session");
    expect(world.providerCalls).toHaveLength(1);
    expect(auditPayloads(world, AuditKind.reproposed)).toEqual([
      expect.objectContaining({ rule: "AlreadySucceeded", earlierExecution: first.answer.executionId }),
    ]);
  });

  it("answers from the re-run once a never-sent failure was re-run and succeeded", async () => {
    const world = worldWith();
    world.providerBehaviour = () => ({ kind: "not_sent", message: "connection refused" });
    await invoke(world.deps, session, proposal(0));
    world.executions.get(onlyExecution(world).id)!.neverSent = true;
    world.providerBehaviour = () => ({ kind: "answered", response: { status: "succeeded", result: {} } });
    const rerun = await invoke(world.deps, session, proposal(1));
    const third = await invoke(world.deps, session, proposal(2));
    expect(third.answer).toMatchObject({ status: "succeeded", executionId: rerun.answer.executionId });
    const keys = world.providerCalls.map((c) => c.request.idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
  });

  it("is answered from the record when a person resolved its unknown outcome as succeeded", async () => {
    const world = worldWith();
    world.providerBehaviour = () => lost;
    await invoke(world.deps, session, proposal(0));
    const earlier = onlyExecution(world);
    await world.deps.executions.recordResolution(earlier.id, {
      state: "succeeded",
      resolver: "carol",
      reason: "the plan shows version 4 in APS",
      message: "resolved by carol: the plan shows version 4 in APS",
      atMicros: world.now.micros,
    });
    const sent = world.providerCalls.length;

    const again = await invoke(world.deps, session, proposal(1));
    expect(again.answer).toMatchObject({ status: "succeeded", executionId: earlier.id });
    expect(again.answer.content).toContain("carol confirmed it succeeded");
    expect(world.providerCalls).toHaveLength(sent);
  });
});

describe("reads and drafts their policy lets run alone, proposed again", () => {
  it("run again even after an unknown outcome: repeating them changes nothing", async () => {
    const read = testCapability({ id: "aps.schedule.read", effect: "read", inputSchema: schema });
    const world = worldWith(read);
    world.providerBehaviour = () => lost;
    const args = { tool: "aps_schedule_read" };
    await invoke(world.deps, session, proposal(0, args));
    const sent = world.providerCalls.length;
    world.providerBehaviour = () => ({ kind: "answered", response: { status: "succeeded", result: {} } });
    const again = await invoke(world.deps, session, proposal(1, args));
    expect(again.answer.status).toBe("succeeded");
    expect(world.providerCalls.length).toBe(sent + 1);
  });
});

describe("identical writes proposed at the same moment", () => {
  it("run once: the action's key lets one claim the row, the others are answered by it", async () => {
    const world = worldWith();
    // All three decide before any has claimed: none finds an earlier record of the action.
    const answers = await Promise.all(
      [0, 1, 2].map((position) => invoke(world.deps, session, proposal(position))),
    );
    expect(world.providerCalls).toHaveLength(1);
    expect(answers.map((a) => a.answer.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(new Set(answers.map((a) => a.answer.executionId)).size).toBe(1);
  });

  it("refuse the second of two approved Approvals of one action at dispatch: Stale, ActionAlreadyExecuted", async () => {
    const world = worldWith(approvedPublish);
    world.targetVersions.set("plan/P-7", "3");
    // Both proposed before either Approval was visible to the other's lookup.
    world.deps.approvals.findByAction = async () => [];
    await invoke(world.deps, session, proposal(0));
    await invoke(world.deps, session, proposal(1));
    const approvals = [...world.approvals.values()];
    expect(approvals).toHaveLength(2);
    const results = [];
    for (const stored of approvals) {
      results.push(
        await executeApproved(world.deps, {
          approval: {
            request: stored.request,
            decisions: [{ approver: "alice", verdict: "Approve" }],
            phase: "Approved",
          },
          session,
          rules: RULES_ENFORCED,
        }),
      );
    }
    expect(results[0]).toMatchObject({ kind: "executed", execution: { state: "succeeded" } });
    expect(results[1]).toMatchObject({ kind: "refused", phase: "Stale", reason: "ActionAlreadyExecuted" });
    expect(world.providerCalls).toHaveLength(1);
  });
});
