import { describe, expect, it } from "vitest";
import type { Condition } from "../api/common.ts";
import type { Approval } from "../api/kinds.ts";
import { createInMemoryWorld } from "../core/in-memory-ports.ts";
import { answerOfApproval, settlementMessageOf } from "./approval-outcome.ts";

const T = "2026-11-29T10:00:00Z";
const condition = (
  type: string,
  status: Condition["status"],
  reason: string,
  message: string,
): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: T,
});
/** An Approval in `phase` with `conditions` (sorted by type, as setCondition keeps them). */
const approval = (phase: string, conditions: Condition[]): Approval =>
  ({
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: { name: "apr-1", namespace: "plant-a" },
    spec: { executionId: "exec-1", decisions: [{ approver: "carol", verdict: "Approve" }] },
    status: { phase, conditions },
  }) as unknown as Approval;

const approvedThenStale = approval("Stale", [
  condition("Decided", "True", "Approved", "Approved by carol."),
  condition(
    "Executed",
    "False",
    "TargetVersionMoved",
    "plan week-21 is now at version 6; the call was approved for version 5",
  ),
]);

describe("settlementMessageOf", () => {
  it("gives the dispatch's reason and message for an approved call refused at dispatch", () => {
    expect(settlementMessageOf(approvedThenStale)).toBe(
      "TargetVersionMoved: plan week-21 is now at version 6; the call was approved for version 5",
    );
  });

  it("gives the decision's message when the decision itself ended the Approval", () => {
    const expired = approval("Expired", [
      condition("Decided", "True", "Expired", "No decision before 2026-11-29T11:00:00Z."),
      // Left from an earlier dispatch that found the decisions short of Approved.
      condition("Executed", "False", "NotApproved", "0 of 1 approvals counted"),
    ]);
    expect(settlementMessageOf(expired)).toBe("No decision before 2026-11-29T11:00:00Z.");
    expect(settlementMessageOf(approval("Pending", []))).toBeUndefined();
  });
});

describe("answerOfApproval", () => {
  it("tells the agent why a Stale Approval did not run, not who approved it", async () => {
    const world = createInMemoryWorld();
    const answer = await answerOfApproval(world.deps, approvedThenStale);
    expect(answer.status).toBe("denied");
    expect(answer.content).toBe(
      "The call was not executed: its approval is Stale (TargetVersionMoved: plan week-21 is now at version 6; the call was approved for version 5).",
    );
  });
});
