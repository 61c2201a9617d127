/**
 * A property test of Core's execution path on the in-memory ports: fast-check generates a scenario —
 * the provider's deduplication, tool calls at positions (repeats of one position are the same call,
 * other positions the identical action proposed again), what becomes of each request that reaches the
 * provider (answered, answer lost before or after the effect, never sent, the claimer dying before or
 * after the effect, a business refusal), the provider going away and coming back, time moving past
 * leases, the leader's recovery and settle sweeps — and its scheduler explores the interleavings of
 * every store operation, provider answer and timer wait. After every scenario and a final round of
 * sweeps with the provider reachable:
 *   - at most one business effect per idempotency key;
 *   - no `failed` row whose request reached the provider and took effect, and a row recorded as never
 *     sent was indeed never seen by the provider (its identical re-proposal then runs under its key);
 *   - a `succeeded` row had its effect;
 *   - every row is settled or `unknown` (none left `started`).
 */
import type { Idempotency, InvokeResponse } from "@gatehouse/provider-sdk";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createInMemoryWorld, TEST_SESSION, testCapability } from "./in-memory-ports.ts";
import { invoke } from "./invoke.ts";
import type { ExecutionStore, ProviderCallOutcome } from "./ports.ts";
import { recoverExpiredExecutions, settleUnknownExecutions } from "./recovery.ts";

/** What happens to one request that the provider receives (or, for `notSent`, does not). */
type Fate = "ok" | "lostAfter" | "lostBefore" | "notSent" | "crashAfter" | "crashBefore" | "refused";

type Step =
  | { kind: "call"; position: number }
  | { kind: "advance"; ms: number }
  | { kind: "recover" }
  | { kind: "settle" }
  | { kind: "providerDown" }
  | { kind: "providerUp" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant("call" as const), position: fc.integer({ min: 0, max: 2 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("advance" as const),
      ms: fc.constantFrom(500, 5_000, 40_000, 200_000),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: "recover" as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: "settle" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "providerDown" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "providerUp" as const }) },
);

const scenarioArb = fc.record({
  idempotency: fc.constantFrom<Idempotency>("key", "natural", "none"),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 10 }),
  fates: fc.array(
    fc.constantFrom<Fate>("ok", "lostAfter", "lostBefore", "notSent", "crashAfter", "crashBefore", "refused"),
    { maxLength: 12 },
  ),
});

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

/** Store methods whose every call the scheduler orders (all of them: each is one database round trip). */
const STORE_METHODS = [
  "claim",
  "get",
  "recordReceipt",
  "renewLease",
  "takeOverExpired",
  "takeUnknownForSettling",
  "listExpired",
  "listUnsettled",
  "markFinishAudited",
  "listUnauditedFinishes",
] as const satisfies ReadonlyArray<keyof ExecutionStore>;

async function run(s: fc.Scheduler, scenario: Scenario) {
  const world = createInMemoryWorld();
  world.capabilities.push(
    testCapability({
      id: "aps.schedule.publish",
      effect: "write",
      idempotency: scenario.idempotency,
      policy: { approval: "Auto" },
    }),
  );
  const deps = world.deps;
  const store = deps.executions as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const method of STORE_METHODS) {
    const real = store[method]!.bind(store);
    store[method] = async (...args: unknown[]) => {
      await s.schedule(Promise.resolve(), method);
      return real(...args);
    };
  }
  deps.timer = {
    async sleep(ms) {
      world.now.micros += ms * 1000;
      await s.schedule(Promise.resolve(), "sleep");
    },
  };

  // The business system behind the provider: effects and remembered answers by idempotency key.
  const effects = new Map<string, number>();
  const reached = new Set<string>();
  /** Executions whose own request reached the provider (a re-run shares its key with a never-sent one). */
  const reachedBy = new Set<string>();
  const answers = new Map<string, InvokeResponse>();
  const fates = [...scenario.fates];
  let down = false;
  const never = new Promise<never>(() => {});
  deps.providers = {
    async invoke(_provider, request) {
      const key = request.idempotencyKey;
      const fate: Fate = down ? "notSent" : (fates.shift() ?? "ok");
      if (fate === "notSent") {
        return s.schedule(Promise.resolve<ProviderCallOutcome>({ kind: "not_sent", message: "unreachable" }));
      }
      reached.add(key);
      reachedBy.add(request.executionId);
      const deduplicates = scenario.idempotency !== "none";
      const remembered = deduplicates ? answers.get(key) : undefined;
      const takeEffect = () => {
        if (remembered) return;
        effects.set(key, (effects.get(key) ?? 0) + 1);
        answers.set(key, { status: "succeeded", result: { published: true } });
      };
      switch (fate) {
        case "ok":
          takeEffect();
          return s.schedule(
            Promise.resolve<ProviderCallOutcome>({ kind: "answered", response: answers.get(key)! }),
          );
        case "refused":
          if (!remembered) answers.set(key, { status: "failed", errorKind: "forbidden", message: "refused" });
          return s.schedule(
            Promise.resolve<ProviderCallOutcome>({ kind: "answered", response: answers.get(key)! }),
          );
        case "lostAfter":
          takeEffect();
          return s.schedule(
            Promise.resolve<ProviderCallOutcome>({ kind: "lost", reason: "timeout", message: "after" }),
          );
        case "lostBefore":
          return s.schedule(
            Promise.resolve<ProviderCallOutcome>({
              kind: "lost",
              reason: "connection_lost",
              message: "before",
            }),
          );
        case "crashAfter":
          takeEffect();
          return never; // the claimer's process died: this call never returns
        case "crashBefore":
          return never;
      }
    },
    async status(_provider, idempotencyKey) {
      if (down) return s.schedule(Promise.resolve({ kind: "not_sent" as const, message: "unreachable" }));
      const response = answers.get(idempotencyKey);
      const status = response
        ? { idempotencyKey, status: response.status, response }
        : {
            idempotencyKey,
            status: reached.has(idempotencyKey) ? ("in_progress" as const) : ("not_found" as const),
          };
      return s.schedule(Promise.resolve({ kind: "answered" as const, status }));
    },
    async target() {
      return { kind: "unavailable", message: "not used here" };
    },
  };

  const call = (position: number) =>
    invoke(deps, TEST_SESSION, {
      turn: 0,
      position,
      callId: `call_${position}`,
      tool: "aps_schedule_publish",
      arguments: '{"planId":"P-7"}',
    });
  const errors: unknown[] = [];
  const started = scenario.steps.map(async (step, index) => {
    await s.schedule(Promise.resolve(), `step ${index}: ${step.kind}`);
    try {
      switch (step.kind) {
        case "call":
          await call(step.position);
          break;
        case "advance":
          world.now.micros += step.ms * 1000;
          break;
        case "recover":
          await recoverExpiredExecutions(deps);
          break;
        case "settle":
          await settleUnknownExecutions(deps);
          break;
        case "providerDown":
          down = true;
          break;
        case "providerUp":
          down = false;
          break;
      }
    } catch (error) {
      errors.push(error);
    }
  });
  void Promise.all(started);
  await s.waitIdle();

  // The end of the story: the provider is back and answers, every lease has run out, the leader sweeps.
  down = false;
  fates.length = 0;
  for (let round = 0; round < 3; round++) {
    world.now.micros += 3_600_000 * 1000;
    await s.waitFor(recoverExpiredExecutions(deps));
    await s.waitFor(settleUnknownExecutions(deps));
  }

  expect(errors.map(String)).toEqual([]);
  const rows = [...world.executions.values()];
  const story = JSON.stringify(
    rows.map((r) => ({ id: r.id, key: r.idempotencyKey, state: r.state, neverSent: r.neverSent })),
  );
  for (const [key, count] of effects) expect(count, `effects of ${key}: ${story}`).toBeLessThanOrEqual(1);
  // Every call proposes the same write: however often, at whatever positions, it takes effect once.
  const total = [...effects.values()].reduce((sum, count) => sum + count, 0);
  expect(total, `effects of the one action: ${story}`).toBeLessThanOrEqual(1);
  for (const row of rows) {
    const effect = effects.get(row.idempotencyKey) ?? 0;
    expect(row.state, `row ${row.id}: ${story}`).not.toBe("started");
    // A never-sent failure may share its key with its re-run, which may take effect; any other failed
    // row holds its key alone.
    if (row.state === "failed" && !row.neverSent) {
      expect(effect, `failed row ${row.id} took effect: ${story}`).toBe(0);
    }
    if (row.neverSent)
      expect(reachedBy.has(row.id), `never-sent row ${row.id} was seen: ${story}`).toBe(false);
    if (row.state === "succeeded") expect(effect, `succeeded row ${row.id}: ${story}`).toBe(1);
  }
}

describe("Core's execution path under every interleaving fast-check finds", () => {
  it("never has two effects per key, never fails what took effect, never leaves a row started", async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), scenarioArb, (s, scenario) => run(s, scenario)),
      { numRuns: 3_000 },
    );
  }, 120_000);
});
