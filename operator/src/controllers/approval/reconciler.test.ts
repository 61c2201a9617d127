import { describe, expect, it } from "vitest";
import type { Approval } from "../../api/kinds.ts";
import { rulesCheckedSince } from "./reconciler.ts";

const approval = { metadata: { namespace: "team", name: "apr-1" } } as Approval;
const now = new Date(10_000);

describe("the time a decision-rules check must have started since", () => {
  it("is when the cache took in the Approval's current version", () => {
    const observedAt = (namespace: string, name: string) =>
      namespace === "team" && name === "apr-1" ? 4_000 : undefined;
    expect(rulesCheckedSince({ observedAt }, approval, now)).toBe(4_000);
  });

  it("is the pass's own time when that is unknown (cached before the controllers started)", () => {
    expect(rulesCheckedSince({ observedAt: () => undefined }, approval, now)).toBe(10_000);
    expect(rulesCheckedSince({}, approval, now)).toBe(10_000);
  });

  it("is never later than the pass's own time (a clock that stepped back)", () => {
    expect(rulesCheckedSince({ observedAt: () => 12_000 }, approval, now)).toBe(10_000);
  });
});
