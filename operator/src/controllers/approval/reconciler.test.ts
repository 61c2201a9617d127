import { describe, expect, it } from "vitest";
import type { Approval } from "../../api/kinds.ts";
import { dispatchRefusedMessage, lateDecisionMessage, lateDecisionsOf } from "./reconciler.ts";

function approval(decisions: Approval["spec"]["decisions"], observedDecisions?: number): Approval {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: { name: "apr-1", namespace: "plant-a", uid: "u-1" },
    spec: { decisions } as Approval["spec"],
    status: { phase: "Rejected", ...(observedDecisions !== undefined ? { observedDecisions } : {}) },
  };
}

describe("late decisions", () => {
  it("are the decisions beyond status.observedDecisions, with their index", () => {
    const late = lateDecisionsOf(
      approval(
        [
          { approver: "alice", verdict: "Reject" },
          { approver: "carol", verdict: "Approve" },
          { approver: "bob", verdict: "Approve" },
        ],
        1,
      ),
    );
    expect(late).toEqual([
      { index: 1, decision: { approver: "carol", verdict: "Approve" } },
      { index: 2, decision: { approver: "bob", verdict: "Approve" } },
    ]);
  });

  it("are none once every decision was observed", () => {
    expect(lateDecisionsOf(approval([{ approver: "alice", verdict: "Reject" }], 1))).toEqual([]);
  });

  it("are none for an Approval decided before the operator counted its decisions", () => {
    expect(lateDecisionsOf(approval([{ approver: "alice", verdict: "Reject" }]))).toEqual([]);
  });

  it("are described with the approver, the verdict and the phase they found", () => {
    const message = lateDecisionMessage(
      { index: 1, decision: { approver: "carol", verdict: "Approve" } },
      "Rejected",
    );
    expect(message).toBe(
      "Decision Approve by carol (spec.decisions[1]) ignored: the Approval is already Rejected and takes no more decisions; nothing changed.",
    );
  });
});

describe("a dispatch that refuses an approved call", () => {
  it("is described with the phase it leaves and the refusal's reason text", () => {
    expect(
      dispatchRefusedMessage(
        "Stale",
        "plan week-21 is now at version 6; the call was approved for version 5",
      ),
    ).toBe(
      "The approved call was not run; the Approval is Stale: plan week-21 is now at version 6; the call was approved for version 5.",
    );
  });
});
