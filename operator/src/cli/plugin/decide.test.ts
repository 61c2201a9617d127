import { describe, expect, it } from "vitest";
import type { Approval } from "../../api/kinds.ts";
import type { ApprovalPhase } from "../../api/status/approval.ts";
import {
  decisionPatchOf,
  exitCodeOf,
  isSettled,
  phaseLine,
  recordedDecisionOf,
  repeatedDecisionReport,
} from "./decide.ts";

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

/** An Approval of one required vote in `phase`, with `conditions` and `observedDecisions`. */
function approvalIn(
  phase: ApprovalPhase,
  observedDecisions: number,
  conditions: Array<{ type: string; status: "True" | "False"; reason: string; message: string }> = [],
): Approval {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: { name: "apr-1", namespace: "plant-a" },
    spec: { requiredApprovals: 1, decisions: [] },
    status: {
      phase,
      observedDecisions,
      approvals: phase === "Rejected" || phase === "Pending" ? 0 : 1,
      conditions: conditions.map((c) => ({ ...c, lastTransitionTime: "2026-01-01T00:00:00Z" })),
    },
  } as unknown as Approval;
}

describe("settling an Approval after a decision", () => {
  it("keeps waiting while it is Approved or Executing, or Pending without the decision counted", () => {
    expect(isSettled(approvalIn("Approved", 1), 0)).toBe(false);
    expect(isSettled(approvalIn("Executing", 1), 0)).toBe(false);
    expect(isSettled(approvalIn("Pending", 0), 0)).toBe(false);
  });

  it("is settled in a final phase, or Pending with the decision counted (waiting for more votes)", () => {
    for (const phase of [
      "Succeeded",
      "Failed",
      "Unknown",
      "Stale",
      "Rejected",
      "Expired",
      "Cancelled",
    ] as const) {
      expect(isSettled(approvalIn(phase, 1), 0), phase).toBe(true);
    }
    expect(isSettled(approvalIn("Pending", 1), 0)).toBe(true);
  });

  it("exits 1 when the approved call did not run or did not succeed, else 0", () => {
    for (const phase of ["Stale", "Failed", "Unknown", "Expired", "Cancelled", "Rejected"] as const) {
      expect(exitCodeOf("Approve", approvalIn(phase, 1)), phase).toBe(1);
    }
    expect(exitCodeOf("Approve", approvalIn("Succeeded", 1))).toBe(0);
    expect(exitCodeOf("Approve", approvalIn("Pending", 1))).toBe(0);
    expect(exitCodeOf("Reject", approvalIn("Rejected", 1))).toBe(0);
  });

  it("prints the Executed condition's reason and message before the Decided one", () => {
    const stale = approvalIn("Stale", 1, [
      { type: "Decided", status: "True", reason: "Approved", message: "1 of 1 approvals" },
      { type: "Executed", status: "False", reason: "Disabled", message: "aps.schedule.publish is disabled" },
    ]);
    expect(phaseLine(stale, 0, 30)).toBe(
      "phase: Stale (1/1 approvals) — Executed Disabled: aps.schedule.publish is disabled",
    );
  });

  it("says when the Approval is not settled yet and how to follow it", () => {
    expect(phaseLine(approvalIn("Executing", 1), 0, 30)).toBe(
      "phase: Executing (1/1 approvals) (not settled after 30 s; follow it with kubectl get approval apr-1 -n plant-a -w)",
    );
  });
});

describe("a decision asked for again by someone who has decided", () => {
  /** A Succeeded Approval alice approved and carol rejected, whose call ran. */
  function decided(): Approval {
    const approval = approvalIn("Succeeded", 2, [
      { type: "Executed", status: "True", reason: "Succeeded", message: "published plan-1" },
    ]);
    approval.spec.decisions = [
      { approver: "alice", verdict: "Approve" },
      { approver: "carol", verdict: "Reject", reason: "press 1 is booked" },
    ];
    approval.status = { ...approval.status, execution: { id: "e-1", state: "succeeded" } };
    return approval;
  }

  it("finds the caller's own recorded decision and where it is, and nothing for someone else", () => {
    expect(recordedDecisionOf(decided(), "carol")).toEqual({
      index: 1,
      decision: { approver: "carol", verdict: "Reject", reason: "press 1 is booked" },
    });
    expect(recordedDecisionOf(decided(), "bob")).toBeUndefined();
  });

  it("with the same verdict, reports the recorded decision, the phase and the execution, and exits 0", () => {
    const approval = decided();
    const recorded = recordedDecisionOf(approval, "alice");
    expect(recorded && repeatedDecisionReport(approval, recorded, "Approve")).toEqual({
      out: [
        "approval.gatehouse.dev/apr-1: Approve by alice is already recorded (spec.decisions[0]); nothing sent",
        "phase: Succeeded (1/1 approvals) — Executed Succeeded: published plan-1; execution: succeeded",
      ],
      err: [],
      code: 0,
    });
  });

  it("with the other verdict, says what is recorded and exits 1", () => {
    const approval = decided();
    const recorded = recordedDecisionOf(approval, "carol");
    const report = recorded && repeatedDecisionReport(approval, recorded, "Approve");
    expect(report?.code).toBe(1);
    expect(report?.err).toEqual([
      "kubectl-gatehouse: approve apr-1 refused: carol has already decided Approval apr-1: Reject (spec.decisions[1], reason: press 1 is booked); each user decides once",
    ]);
  });

  it("says a decision recorded in the caller's name that did not count is not done, and exits 1", () => {
    const approval = approvalIn("Pending", 1);
    approval.spec.decisions = [{ approver: "alice", verdict: "Approve" }];
    approval.status = {
      ...approval.status,
      ignoredDecisions: [
        { approver: "alice", reason: "observed while admission did not enforce the decision rules" },
      ],
    };
    const recorded = recordedDecisionOf(approval, "alice");
    const report = recorded && repeatedDecisionReport(approval, recorded, "Approve");
    expect(report?.code).toBe(1);
    expect(report?.err[0]).toMatch(
      /the decision recorded in your name \(spec\.decisions\[0\]: Approve\) did not count: observed while admission did not enforce the decision rules/,
    );
  });

  it("says the execution has not started while the Approval still waits for votes", () => {
    const approval = approvalIn("Pending", 1);
    approval.spec.decisions = [{ approver: "carol", verdict: "Approve" }];
    const recorded = recordedDecisionOf(approval, "carol");
    expect(recorded && repeatedDecisionReport(approval, recorded, "Approve").out[1]).toBe(
      "phase: Pending (0/1 approvals); execution: not started",
    );
  });
});
