import { describe, expect, it } from "vitest";
import { executionIdentity } from "./execution-identity.ts";

const base = {
  sessionUid: "uid-1",
  turn: 2,
  position: 0,
  capability: "aps.schedule.publish",
  argumentsDigest: "d".repeat(64),
};

describe("execution identity", () => {
  it("is deterministic and derives Kubernetes-safe names", () => {
    const a = executionIdentity(base);
    expect(executionIdentity({ ...base })).toEqual(a);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.executionId).toBe(a.hash.slice(0, 40));
    expect(a.approvalName).toBe(`apr-${a.hash.slice(0, 20)}`);
    expect(a.approvalName).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(a.idempotencyKey).toBe(`gh1.${a.executionId}`);
  });

  it("changes with every component", () => {
    const ids = new Set(
      [
        base,
        { ...base, sessionUid: "uid-2" },
        { ...base, turn: 3 },
        { ...base, position: 1 },
        { ...base, capability: "aps.schedule.read" },
        { ...base, argumentsDigest: "e".repeat(64) },
      ].map((input) => executionIdentity(input).executionId),
    );
    expect(ids.size).toBe(6);
  });
});
