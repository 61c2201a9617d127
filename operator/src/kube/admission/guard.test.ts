import { describe, expect, it } from "vitest";
import { ADMISSION_SETTLE_MS, checkStartedSince, settledVerdict } from "./guard.ts";

const ENFORCED = { enforced: true } as const;
const MISSING = {
  enforced: false,
  message: "ValidatingAdmissionPolicyBinding gatehouse-approval-decide is missing",
} as const;

describe("the verdict after the decision rules' history", () => {
  it("is the check's own when the rules were never seen not enforced", () => {
    expect(settledVerdict(ENFORCED, undefined, 1_000)).toEqual(ENFORCED);
  });

  it("is the check's own when the rules are not enforced", () => {
    expect(settledVerdict(MISSING, 500, 1_000)).toEqual(MISSING);
  });

  it("counts rules restored a moment ago as not enforced yet, saying when they count again", () => {
    const verdict = settledVerdict(ENFORCED, 10_000, 10_000 + ADMISSION_SETTLE_MS - 1);
    expect(verdict.enforced).toBe(false);
    expect(verdict.enforced === false && verdict.message).toMatch(
      /^the decision rules were restored 5 s ago; decisions count again 5 s after that/,
    );
  });

  it("counts restored rules as enforced once they have settled", () => {
    expect(settledVerdict(ENFORCED, 10_000, 10_000 + ADMISSION_SETTLE_MS)).toEqual(ENFORCED);
  });
});

/**
 * Checks as the guard runs them: one at a time, `checkOnce` joining the running one; each takes 100
 * ticks of the clock, and its verdict counts from when it started.
 */
function checks(clock: { now: number }, startedAt = Number.NEGATIVE_INFINITY) {
  const state = {
    verdictStartedAt: startedAt,
    started: [] as number[],
    running: undefined as Promise<void> | undefined,
  };
  const checkOnce = () => {
    state.running ??= (async () => {
      const started = clock.now;
      state.started.push(started);
      await new Promise((resolve) => setImmediate(resolve));
      clock.now += 100;
      state.verdictStartedAt = started;
    })().finally(() => {
      state.running = undefined;
    });
    return state.running;
  };
  return { state, checkOnce, startedAt: () => state.verdictStartedAt };
}

describe("waiting for a check started since an Approval was observed", () => {
  it("takes the last finished check when it started at or after the observation: no wait, no request", async () => {
    const clock = { now: 5_000 };
    const c = checks(clock, 4_000);
    await checkStartedSince(4_000, c.startedAt, c.checkOnce);
    await checkStartedSince(3_000, c.startedAt, c.checkOnce);
    expect(c.state.started).toEqual([]);
  });

  it("joins a running check that started after the observation", async () => {
    const clock = { now: 5_000 };
    const c = checks(clock, 1_000);
    const running = c.checkOnce();
    await checkStartedSince(4_500, c.startedAt, c.checkOnce);
    await running;
    expect(c.state.started).toEqual([5_000]);
  });

  it("after a running check that started before the observation, starts one more and waits for it", async () => {
    const clock = { now: 5_000 };
    const c = checks(clock, 1_000);
    void c.checkOnce();
    await checkStartedSince(5_050, c.startedAt, c.checkOnce);
    expect(c.state.started).toEqual([5_000, 5_100]);
    expect(c.state.verdictStartedAt).toBe(5_100);
  });

  it("starts a check when none ran since the observation, and many waiters share it", async () => {
    const clock = { now: 9_000 };
    const c = checks(clock, 1_000);
    await Promise.all(
      [8_000, 8_500, 9_000].map((since) => checkStartedSince(since, c.startedAt, c.checkOnce)),
    );
    expect(c.state.started).toEqual([9_000]);
  });
});
