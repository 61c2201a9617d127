import { describe, expect, it } from "vitest";
import { ADMISSION_SETTLE_MS, settledVerdict } from "./guard.ts";

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
