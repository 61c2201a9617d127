import { describe, expect, it } from "vitest";
import { decisionPatchOf } from "./decide.ts";

describe("the decision patch", () => {
  it("tests the decisions as read, then appends one entry at the end", () => {
    const seen = [{ approver: "alice", verdict: "Approve" as const }];
    expect(
      decisionPatchOf(seen, { approver: "carol", verdict: "Reject", reason: "press-1 is booked" }),
    ).toEqual([
      { op: "test", path: "/spec/decisions", value: [{ approver: "alice", verdict: "Approve" }] },
      {
        op: "add",
        path: "/spec/decisions/-",
        value: { approver: "carol", verdict: "Reject", reason: "press-1 is booked" },
      },
    ]);
  });
});
