import { describe, expect, it } from "vitest";
import { defaultSessionCeilings, effectiveLimits, loweredLimits, type SessionCeilings } from "./limits.ts";

const ceilings: SessionCeilings = {
  maxTurns: 10,
  maxToolCalls: 40,
  maxWrites: 3,
  tokenBudget: 1000,
  timeoutSeconds: 600,
  holdPodForSeconds: 30,
};

describe("effective session limits", () => {
  it.each([
    ["an unset value is the ceiling", {}, "maxWrites", 3],
    ["a lower value wins", { maxWrites: 1 }, "maxWrites", 1],
    ["a higher value is capped", { maxWrites: 100 }, "maxWrites", 3],
    ["zero stays zero", { maxToolCalls: 0 }, "maxToolCalls", 0],
    ["the token budget is capped", { tokenBudget: 5000 }, "tokenBudget", 1000],
    ["the timeout is capped", { timeoutSeconds: 86_400 }, "timeoutSeconds", 600],
    ["the pod hold is capped", { holdPodForSeconds: 3600 }, "holdPodForSeconds", 30],
  ] as const)("%s", (_, requested, key, expected) => {
    expect(effectiveLimits(requested, ceilings)[key]).toBe(expected);
  });

  it("gives the default ceilings when nothing is asked or configured", () => {
    expect(effectiveLimits({}, defaultSessionCeilings)).toEqual(defaultSessionCeilings);
  });
});

describe("limits a ceiling lowers", () => {
  it("lists each value asked above its ceiling with both numbers, in the order of the limits", () => {
    expect(loweredLimits({ holdPodForSeconds: 900, maxTurns: 11, maxWrites: 3 }, ceilings)).toEqual([
      { limit: "maxTurns", asked: 11, ceiling: 10 },
      { limit: "holdPodForSeconds", asked: 900, ceiling: 30 },
    ]);
  });

  it("lists nothing for values at or below their ceiling, or unset", () => {
    expect(loweredLimits({ maxWrites: 3, maxToolCalls: 0 }, ceilings)).toEqual([]);
    expect(loweredLimits({}, ceilings)).toEqual([]);
  });
});
