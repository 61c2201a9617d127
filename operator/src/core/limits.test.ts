import { describe, expect, it } from "vitest";
import { defaultSessionCeilings, effectiveLimits, type SessionCeilings } from "./limits.ts";

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
