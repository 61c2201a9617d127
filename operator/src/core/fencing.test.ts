/**
 * Exactly once across crashes: a row an earlier holder may have sent is never `failed` because the
 * provider cannot be reached now; every outcome is written under the writer's fencing token; the lease
 * is renewed before the provider is called; recovery trusts the idempotency recorded at claim; an
 * unknown row is asked again until something settles it.
 *
 * "never becomes failed from not_sent" (idempotency key and natural) fails on b72554c, main before
 * fencing: there recovery records `failed`/`unavailable` for the abandoned row, which invited a second
 * proposal of the same write.
 */
import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { AuditKind } from "./audit.ts";
import {
  auditPayloads,
  createInMemoryWorld,
  type InMemoryWorld,
  TEST_SESSION,
  testCapability,
  testCoreConfig,
} from "./in-memory-ports.ts";
import { invoke } from "./invoke.ts";
import type { ExecutionRecord, ProviderCallOutcome } from "./ports.ts";
import { leaseMsOf, nextSettleAfter, SETTLE_FIRST_DELAY_MS, SETTLE_HORIZON_MS } from "./provider-call.ts";
import { recoverExpiredExecutions, settleUnknownExecutions } from "./recovery.ts";

const session = TEST_SESSION;
const publishCall: InvokeCall = {
  turn: 0,
  position: 0,
  callId: "call_0",
  tool: "aps_schedule_publish",
  arguments: '{"planId":"P-7"}',
};

const notSent: ProviderCallOutcome = { kind: "not_sent", message: "no ready endpoint" };
const lost: ProviderCallOutcome = { kind: "lost", reason: "connection_lost", message: "reset" };
const succeeded: ProviderCallOutcome = {
  kind: "answered",
  response: { status: "succeeded", result: { published: true } },
};

function worldWith(idempotency: "key" | "natural" | "none"): InMemoryWorld {
  const world = createInMemoryWorld();
  world.capabilities.push(
    testCapability({
      id: "aps.schedule.publish",
      effect: "write",
      idempotency,
      policy: { approval: "Auto" },
    }),
  );
  return world;
}

/**
 * An invoke whose first provider call hangs until `answer(outcome)`: the claimer as it dies or stalls
 * inside the provider call. Returns the row it claimed.
 */
async function stalledClaimer(world: InMemoryWorld) {
  let answer: (outcome: ProviderCallOutcome) => void = () => {};
  world.providerBehaviour = () => {
    world.providerBehaviour = () => lost;
    return new Promise((resolve) => {
      answer = resolve;
    });
  };
  const pending = invoke(world.deps, session, publishCall);
  await new Promise((resolve) => setTimeout(resolve, 10));
  const row = [...world.executions.values()][0]!;
  expect(row.state).toBe("started");
  return { row, pending, answer: (outcome: ProviderCallOutcome) => answer(outcome) };
}

const stored = (world: InMemoryWorld, row: ExecutionRecord) => world.executions.get(row.id)!;

describe("recovery of a row whose claimer may have sent the request", () => {
  it.each(["key", "natural", "none"] as const)(
    "never becomes failed from not_sent (idempotency %s): it stays unknown",
    async (idempotency) => {
      const world = worldWith(idempotency);
      const { row, pending, answer } = await stalledClaimer(world);
      world.now.micros = row.leaseUntilMicros + 1;
      world.providerBehaviour = () => notSent;
      world.statusBehaviour = () => ({ kind: "not_sent", message: "no ready endpoint" });
      await recoverExpiredExecutions(world.deps);
      expect(stored(world, row)).toMatchObject({
        state: "unknown",
        errorKind: "unknown_outcome",
        neverSent: false,
      });
      expect(auditPayloads(world, AuditKind.executionFinished)).toEqual([
        expect.objectContaining({ state: "unknown" }),
      ]);
      answer(notSent);
      await pending;
      expect(stored(world, row).state).toBe("unknown");
    },
  );

  it("keeps what the recoverer recorded when the slow first claimer answers later (fencing)", async () => {
    const world = worldWith("key");
    const { row, pending, answer } = await stalledClaimer(world);
    world.now.micros = row.leaseUntilMicros + 1;
    world.providerBehaviour = () => succeeded;
    await recoverExpiredExecutions(world.deps);
    expect(stored(world, row)).toMatchObject({ state: "succeeded", fencingToken: 2 });
    // The first claimer's own request never left: that says nothing now and overwrites nothing.
    answer(notSent);
    const { answer: late } = await pending;
    expect(late.status).toBe("succeeded");
    expect(stored(world, row)).toMatchObject({ state: "succeeded", neverSent: false });
    expect(auditPayloads(world, AuditKind.executionFinished)).toHaveLength(1);
  });

  it("puts a provider's answer that arrives after a takeover into the chain, without recording it", async () => {
    const world = worldWith("none");
    const { row, pending, answer } = await stalledClaimer(world);
    world.now.micros = row.leaseUntilMicros + 1;
    await recoverExpiredExecutions(world.deps); // idempotency none: only asks; nobody knows → unknown
    expect(stored(world, row)).toMatchObject({ state: "unknown", fencingToken: 2 });
    answer(succeeded);
    await pending;
    expect(stored(world, row).state).toBe("unknown");
    expect(auditPayloads(world, AuditKind.executionLateAnswer)).toEqual([
      expect.objectContaining({
        state: "succeeded",
        fencingToken: 1,
        currentToken: 2,
        currentState: "unknown",
      }),
    ]);
  });

  it("recovers by the idempotency recorded at claim, not the Capability's current one", async () => {
    const world = worldWith("none");
    const { row, pending, answer } = await stalledClaimer(world);
    // A platform edit (or a second Capability with the same id) now says the provider deduplicates.
    world.capabilities[0] = testCapability({
      id: "aps.schedule.publish",
      effect: "write",
      idempotency: "key",
    });
    world.now.micros = row.leaseUntilMicros + 1;
    await recoverExpiredExecutions(world.deps);
    expect(world.providerCalls).toHaveLength(1); // the claimer's only: never invoked again
    expect(auditPayloads(world, AuditKind.executionRecovering)).toEqual([
      expect.objectContaining({ idempotency: "none", reinvoke: false }),
    ]);
    answer(lost);
    await pending;
  });
});

describe("the first execution", () => {
  it("records a provider it could not reach as failed, never sent", async () => {
    const world = worldWith("key");
    world.providerBehaviour = () => notSent;
    const { answer } = await invoke(world.deps, session, publishCall);
    expect(answer).toMatchObject({ status: "failed", errorKind: "unavailable" });
    expect([...world.executions.values()][0]).toMatchObject({ state: "failed", neverSent: true });
    expect(auditPayloads(world, AuditKind.executionFinished)).toEqual([
      expect.objectContaining({ state: "failed", neverSent: true }),
    ]);
  });

  it.each([
    ["at once", 0],
    ["after half the grace period", testCoreConfig.leaseGraceMs / 2 + 1],
    ["just before its claim's lease ends", leaseMsOf(testCoreConfig, 2) - 1],
  ])(
    "sends the call under a lease that outlasts every attempt when the audit append returns %s",
    async (_, waitMs) => {
      const world = worldWith("key");
      const append = world.deps.audit.append;
      world.deps.audit.append = async (entry) => {
        if (entry.kind === AuditKind.executionStarted) world.now.micros += waitMs * 1000;
        return append(entry);
      };
      const leftAtSend: number[] = [];
      world.providerBehaviour = () => {
        leftAtSend.push([...world.executions.values()][0]!.leaseUntilMicros - world.now.micros);
        return succeeded;
      };
      expect((await invoke(world.deps, session, publishCall)).answer.status).toBe("succeeded");
      // Both attempts and the status query, with at least half the grace period to spare.
      const { providerDeadlineMs, leaseGraceMs } = testCoreConfig;
      expect(leftAtSend).toHaveLength(1);
      expect(leftAtSend[0]).toBeGreaterThanOrEqual((providerDeadlineMs * 3 + leaseGraceMs / 2) * 1000);
    },
  );

  it("does not call the provider when its lease ended during the audit append and the row was taken over", async () => {
    const world = worldWith("key");
    const append = world.deps.audit.append;
    let takeOver: Promise<unknown> = Promise.resolve();
    world.deps.audit.append = async (entry) => {
      if (entry.kind === AuditKind.executionStarted) {
        // The append waits past the lease; meanwhile the leader's sweep takes the row over.
        const row = [...world.executions.values()][0]!;
        world.now.micros = row.leaseUntilMicros + 1;
        takeOver = recoverExpiredExecutions(world.deps);
        await takeOver;
      }
      return append(entry);
    };
    const { answer } = await invoke(world.deps, session, publishCall);
    await takeOver;
    // One business call in all: the recoverer's, under token 2; the claimer only reports the row.
    expect(world.providerCalls).toHaveLength(1);
    expect(answer.status).toBe("succeeded");
    expect([...world.executions.values()][0]).toMatchObject({ state: "succeeded", fencingToken: 2 });
  });
});

describe("settling an unknown outcome", () => {
  async function unknownRow(world: InMemoryWorld) {
    world.providerBehaviour = () => lost;
    const { answer } = await invoke(world.deps, session, publishCall);
    expect(answer.status).toBe("unknown");
    const row = structuredClone([...world.executions.values()][0]!);
    expect(row.nextSettleMicros).toBe(row.updatedAtMicros + SETTLE_FIRST_DELAY_MS * 1000);
    return row;
  }

  it("asks again once due and records the definite answer of a re-invoke by the same key", async () => {
    const world = worldWith("key");
    const row = await unknownRow(world);
    expect(await settleUnknownExecutions(world.deps)).toBe(0); // not due yet
    world.now.micros = row.nextSettleMicros! + 1;
    world.providerBehaviour = () => succeeded;
    expect(await settleUnknownExecutions(world.deps)).toBe(1);
    expect(stored(world, row)).toMatchObject({ state: "succeeded", settleAttempts: 1 });
    expect(new Set(world.providerCalls.map((c) => c.request.idempotencyKey))).toEqual(
      new Set([row.idempotencyKey]),
    );
    expect(auditPayloads(world, AuditKind.executionSettling)).toEqual([
      expect.objectContaining({ attempt: 1, reinvoke: true }),
    ]);
    expect(auditPayloads(world, AuditKind.executionFinished).map((p) => p.state)).toEqual([
      "unknown",
      "succeeded",
    ]);
  });

  it("only asks the status endpoint for a provider that does not deduplicate, and backs off while nobody knows", async () => {
    const world = worldWith("none");
    const row = await unknownRow(world);
    const calls = world.providerCalls.length;
    world.now.micros = row.nextSettleMicros! + 1;
    await settleUnknownExecutions(world.deps);
    expect(world.providerCalls).toHaveLength(calls);
    expect(world.statusCalls.at(-1)).toBe(row.idempotencyKey);
    const after = stored(world, row);
    expect(after).toMatchObject({ state: "unknown", settleAttempts: 1 });
    expect(after.nextSettleMicros).toBe(nextSettleAfter(row.createdAtMicros, 1, row.nextSettleMicros! + 1));
    world.statusBehaviour = (idempotencyKey) => ({
      kind: "answered",
      status: { idempotencyKey, status: "succeeded", response: { status: "succeeded", result: {} } },
    });
    world.now.micros = after.nextSettleMicros! + 1;
    await settleUnknownExecutions(world.deps);
    expect(stored(world, row)).toMatchObject({ state: "succeeded", settleAttempts: 2 });
  });

  it("stops asking a day after the claim: then only a person settles it", () => {
    const created = 1_000_000;
    expect(nextSettleAfter(created, 1, created)).toBe(created + 2 * SETTLE_FIRST_DELAY_MS * 1000);
    expect(nextSettleAfter(created, 40, created + SETTLE_HORIZON_MS * 1000)).toBeUndefined();
  });
});
