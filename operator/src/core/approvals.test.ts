import { describe, expect, it } from "vitest";
import { type ApprovalEvaluationInput, evaluateApproval } from "./approvals.ts";
import type { ApprovalDecision } from "./ports.ts";

const approve = (approver: string): ApprovalDecision => ({ approver, verdict: "Approve" });
const reject = (approver: string): ApprovalDecision => ({ approver, verdict: "Reject" });

function evaluate(decisions: ApprovalDecision[], overrides: Partial<ApprovalEvaluationInput> = {}) {
  return evaluateApproval({
    decisions,
    approvers: { users: ["alice"], groups: ["approvers"] },
    requiredApprovals: 1,
    allowSelfApproval: true,
    requester: { user: "alice", groups: ["planners"] },
    groupsOf: (user) =>
      ({ alice: ["planners"], carol: ["approvers"], dave: ["approvers"], bob: ["planners"] })[user],
    ...overrides,
  });
}

describe("approval evaluation", () => {
  it("never counts an excluded decision, nor a later one in the same name", () => {
    const excluded = new Map([[0, "observed while admission did not enforce the decision rules"]]);
    const result = evaluate([approve("carol"), approve("carol")], { excluded });
    expect(result.outcome).toBe("Pending");
    expect(result.ignored).toEqual([
      { index: 0, approver: "carol", reason: "observed while admission did not enforce the decision rules" },
      { index: 1, approver: "carol", reason: "only the first decision of each user counts" },
    ]);
  });

  it("is pending without decisions", () => {
    expect(evaluate([])).toMatchObject({ outcome: "Pending", approvals: 0, ignored: [] });
  });

  it("approves when the requester confirms their own intent", () => {
    expect(evaluate([approve("alice")])).toMatchObject({ outcome: "Approved", approvedBy: ["alice"] });
  });

  it("ignores self-approval when it is not allowed, and reports it", () => {
    const result = evaluate([approve("alice")], { allowSelfApproval: false });
    expect(result.outcome).toBe("Pending");
    expect(result.ignored).toEqual([
      { index: 0, approver: "alice", reason: "self-approval is not allowed for this capability" },
    ]);
  });

  it("counts a group member and ignores a non-approver", () => {
    const result = evaluate([approve("bob"), approve("carol")], { allowSelfApproval: false });
    expect(result.outcome).toBe("Approved");
    expect(result.approvedBy).toEqual(["carol"]);
    expect(result.ignored).toEqual([{ index: 0, approver: "bob", reason: "bob is not an approver" }]);
  });

  it("needs requiredApprovals distinct approvers; one entry per user", () => {
    const result = evaluate([approve("carol"), approve("carol"), approve("dave")], { requiredApprovals: 2 });
    expect(result).toMatchObject({ outcome: "Approved", approvals: 2, approvedBy: ["carol", "dave"] });
    expect(result.ignored).toEqual([
      { index: 1, approver: "carol", reason: "only the first decision of each user counts" },
    ]);
  });

  it("lets the requester always reject, even when not an approver", () => {
    const result = evaluate([reject("bob")], {
      approvers: { users: ["carol"], groups: [] },
      requester: { user: "bob", groups: [] },
    });
    expect(result).toMatchObject({ outcome: "Rejected", rejectedBy: "bob" });
  });

  it("ignores a rejection by a non-approver who is not the requester", () => {
    expect(evaluate([reject("bob")])).toMatchObject({ outcome: "Pending", ignored: [{ approver: "bob" }] });
  });

  it("settles on the first deciding entry and reports later ones", () => {
    const result = evaluate([approve("carol"), reject("dave")]);
    expect(result.outcome).toBe("Approved");
    expect(result.ignored).toEqual([
      { index: 1, approver: "dave", reason: "the approval was already approved" },
    ]);
    expect(evaluate([reject("carol"), approve("dave")]).outcome).toBe("Rejected");
  });

  it("trusts admission's group check when groups are unknown", () => {
    const result = evaluate([approve("erin")], { groupsOf: () => undefined });
    expect(result.outcome).toBe("Approved");
    const namedOnly = evaluate([approve("erin")], {
      approvers: { users: ["alice"], groups: [] },
      groupsOf: () => undefined,
    });
    expect(namedOnly.outcome).toBe("Pending");
  });
});
