/**
 * The session's limits, decided by Core before anything runs: maxTurns against the call's turn, and
 * maxToolCalls / maxWrites reserved in the budget ledger (in memory here; store/budget-ledger.ts on
 * Postgres) — so concurrent calls never pass a limit together, a repeat counts once, and a call that
 * consumed nothing gives its reservation back.
 */
import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { AuditKind } from "./audit.ts";
import {
  auditPayloads,
  createInMemoryWorld,
  type InMemoryWorld,
  inMemoryBudgetLedger,
  type StoredReservation,
  TEST_SESSION,
  testCapability,
} from "./in-memory-ports.ts";
import { invoke } from "./invoke.ts";
import type { SessionContext } from "./ports.ts";

const read = testCapability({ id: "aps.schedule.read", effect: "read" });
const place = testCapability({
  id: "aps.order.place",
  effect: "write",
  policy: { approval: "Auto" },
  inputSchema: { type: "object", properties: { orderId: { type: "string" } } },
});
const publish = testCapability({
  id: "aps.schedule.publish",
  effect: "write",
  inputSchema: { type: "object", properties: { planId: { type: "string" } } },
});

function worldWith(...capabilities: (typeof read)[]): InMemoryWorld {
  const world = createInMemoryWorld();
  world.capabilities.push(...capabilities);
  return world;
}

function sessionWith(limits: Partial<SessionContext["limits"]>): SessionContext {
  return { ...TEST_SESSION, limits: { ...TEST_SESSION.limits, ...limits } };
}

function call(tool: string, position: number, args = "{}", turn = 0): InvokeCall {
  return { turn, position, callId: `call_${position}`, tool, arguments: args };
}

function counting(world: InMemoryWorld, resource: StoredReservation["resource"]): number {
  return world.reservations.filter((r) => r.resource === resource && r.state !== "released").length;
}

describe("maxToolCalls and maxWrites, reserved before anything runs", () => {
  it("lets exactly maxToolCalls of 20 concurrent calls run and denies the rest, audited", async () => {
    const world = worldWith(read);
    const session = sessionWith({ maxToolCalls: 2 });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, position) =>
        invoke(world.deps, session, call("aps_schedule_read", position)),
      ),
    );
    expect(results.filter((r) => r.answer.status === "succeeded")).toHaveLength(2);
    expect(world.providerCalls).toHaveLength(2);
    expect(world.executions.size).toBe(2);
    const denied = auditPayloads(world, AuditKind.denied);
    expect(denied.map((p) => p.reason)).toEqual(Array(18).fill("ToolCallLimitReached"));
    expect(results.filter((r) => r.answer.status === "denied").map((r) => r.answer.content)).toEqual(
      Array(18).fill(expect.stringMatching(/used the 2 tool calls it is allowed/)),
    );
  });

  it("lets exactly maxWrites of concurrent auto-allowed writes run", async () => {
    const world = worldWith(place);
    const session = sessionWith({ maxWrites: 2 });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, position) =>
        invoke(world.deps, session, call("aps_order_place", position, `{"orderId":"O-${position}"}`)),
      ),
    );
    expect(results.filter((r) => r.answer.status === "succeeded")).toHaveLength(2);
    expect(world.providerCalls).toHaveLength(2);
    expect(auditPayloads(world, AuditKind.denied).map((p) => p.reason)).toEqual(
      Array(8).fill("WriteLimitReached"),
    );
  });

  it("counts a write handed to approvers, so more Approvals than maxWrites are never requested", async () => {
    const world = worldWith(publish);
    const session = sessionWith({ maxWrites: 1 });
    const [first, second] = await Promise.all([
      invoke(world.deps, session, call("aps_schedule_publish", 0, '{"planId":"P-1"}')),
      invoke(world.deps, session, call("aps_schedule_publish", 1, '{"planId":"P-2"}')),
    ]);
    expect([first?.answer.status, second?.answer.status].sort()).toEqual(["denied", "pending_approval"]);
    expect(world.approvals.size).toBe(1);
    expect(world.reservations.map((r) => [r.resource, r.state])).toEqual([
      ["tool_call", "consumed"],
      ["write", "consumed"],
    ]);
  });

  it("counts a repeated call once: the same execution identity reserves nothing new", async () => {
    const world = worldWith(read);
    const session = sessionWith({ maxToolCalls: 1 });
    const once = await invoke(world.deps, session, call("aps_schedule_read", 0));
    const again = await invoke(world.deps, session, call("aps_schedule_read", 0));
    expect([once.answer.status, again.answer.status]).toEqual(["succeeded", "succeeded"]);
    expect(world.reservations).toHaveLength(1);
    expect(world.providerCalls).toHaveLength(1);
  });

  it("gives a failed write back, and keeps its tool call counted", async () => {
    const world = worldWith(place);
    world.providerBehaviour = () => ({
      kind: "answered",
      response: { status: "failed", errorKind: "forbidden", message: "no right to place orders" },
    });
    const session = sessionWith({ maxWrites: 1 });
    const failed = await invoke(world.deps, session, call("aps_order_place", 0, '{"orderId":"O-1"}'));
    expect(failed.answer.status).toBe("failed");
    expect(counting(world, "write")).toBe(0);
    expect(counting(world, "tool_call")).toBe(1);
    world.providerBehaviour = () => ({ kind: "answered", response: { status: "succeeded", result: {} } });
    const next = await invoke(world.deps, session, call("aps_order_place", 1, '{"orderId":"O-2"}'));
    expect(next.answer.status).toBe("succeeded");
  });

  it("keeps a write of unknown outcome counted", async () => {
    const world = worldWith(testCapability({ ...place, idempotency: "none" }));
    world.providerBehaviour = () => ({ kind: "lost", reason: "timeout", message: "no answer" });
    const session = sessionWith({ maxWrites: 1 });
    const lost = await invoke(world.deps, session, call("aps_order_place", 0, '{"orderId":"O-1"}'));
    expect(lost.answer.status).toBe("unknown");
    expect(counting(world, "write")).toBe(1);
    const next = await invoke(world.deps, session, call("aps_order_place", 1, '{"orderId":"O-2"}'));
    expect(next.answer).toMatchObject({ status: "denied" });
    expect(world.providerCalls).toHaveLength(1);
  });

  it("releases what a call reserved when its Approval turns out squatted", async () => {
    const world = worldWith(publish);
    // Someone else created the Approval of that name between Core's look-up and its create.
    const createOrGet = world.deps.approvals.createOrGet;
    world.deps.approvals.createOrGet = async (request) => ({
      ...(await createOrGet(request)),
      ownedBySession: false,
    });
    const session = sessionWith({ maxToolCalls: 1, maxWrites: 1 });
    const refused = await invoke(world.deps, session, call("aps_schedule_publish", 0, '{"planId":"P-1"}'));
    expect(refused.answer.errorKind).toBe("conflict");
    expect(world.reservations.map((r) => r.state)).toEqual(["released", "released"]);
  });

  it("reserves nothing for a call the policy denies", async () => {
    const world = worldWith(testCapability({ ...read, policy: { approval: "Forbidden" } }));
    const refused = await invoke(world.deps, sessionWith({ maxToolCalls: 1 }), call("aps_schedule_read", 0));
    expect(refused.answer.status).toBe("denied");
    expect(world.reservations).toEqual([]);
  });
});

describe("maxTurns, enforced by Core", () => {
  it("denies a call in turn maxTurns, audited, and runs and reserves nothing", async () => {
    const world = worldWith(read);
    const session = sessionWith({ maxTurns: 2 });
    const last = await invoke(world.deps, session, call("aps_schedule_read", 0, "{}", 1));
    expect(last.answer.status).toBe("succeeded");
    const over = await invoke(world.deps, session, call("aps_schedule_read", 0, "{}", 2));
    expect(over.answer).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(auditPayloads(world, AuditKind.denied).map((p) => p.reason)).toEqual(["TurnLimitReached"]);
    expect(world.providerCalls).toHaveLength(1);
    expect(world.reservations).toHaveLength(1);
  });
});

describe("the in-memory budget ledger", () => {
  const limits = { maxToolCalls: 1, maxWrites: 1 };
  const request = (executionId: string) => ({
    sessionUid: "s",
    executionId,
    write: true,
    limits,
    atMicros: 1,
  });

  it("reserves a released call anew within the limits, and never a consumed one twice", async () => {
    const rows: StoredReservation[] = [];
    const ledger = inMemoryBudgetLedger(rows);
    expect(await ledger.reserve(request("e1"))).toEqual({ kind: "reserved" });
    expect(await ledger.reserve(request("e2"))).toEqual({
      kind: "exceeded",
      resource: "tool_call",
      limit: 1,
    });
    await ledger.release("e1", 2);
    expect(await ledger.reserve(request("e2"))).toEqual({ kind: "reserved" });
    await ledger.consume("e2", 3);
    await ledger.release("e2", 4);
    expect(rows.map((r) => [r.executionId, r.resource, r.state])).toEqual([
      ["e1", "tool_call", "released"],
      ["e1", "write", "released"],
      ["e2", "tool_call", "consumed"],
      ["e2", "write", "consumed"],
    ]);
    expect(await ledger.reserve(request("e1"))).toEqual({
      kind: "exceeded",
      resource: "tool_call",
      limit: 1,
    });
  });
});
