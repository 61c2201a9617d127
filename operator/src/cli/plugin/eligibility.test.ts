import { describe, expect, it } from "vitest";
import type { Approval } from "../../api/kinds.ts";
import { decisionRightOf, rightText } from "./eligibility.ts";

const NOW = new Date("2026-12-01T12:00:00Z");

function approval(spec: Partial<Approval["spec"]> = {}, phase?: string): Approval {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: { name: "apr-1", namespace: "plant-a" },
    spec: {
      requester: { user: "alice", groups: [] },
      approvers: { users: ["alice"], groups: ["approvers"] },
      allowSelfApproval: true,
      requiredApprovals: 1,
      expiresAt: "2026-12-01T13:00:00Z",
      decisions: [],
      ...spec,
    },
    ...(phase ? { status: { phase } } : {}),
  } as unknown as Approval;
}

const carol = { username: "carol", groups: ["approvers", "system:authenticated"] };
const alice = { username: "alice", groups: ["system:authenticated"] };
const bob = { username: "bob", groups: ["planners", "system:authenticated"] };

describe("the decision right shown by pending", () => {
  it("lets a member of an approver group decide", () => {
    expect(decisionRightOf(approval(), carol, true, NOW)).toMatchObject({ may: "yes" });
  });

  it("lets the requester approve when self-approval is allowed, and only reject when it is not", () => {
    expect(decisionRightOf(approval(), alice, true, NOW).may).toBe("yes");
    expect(decisionRightOf(approval({ allowSelfApproval: false }), alice, true, NOW).may).toBe("reject-only");
  });

  it("lets a requester who is not a listed approver only reject", () => {
    const right = decisionRightOf(approval({ approvers: { users: [], groups: [] } }), alice, true, NOW);
    expect(right.may).toBe("reject-only");
  });

  it("refuses someone who is neither an approver nor the requester", () => {
    expect(rightText(decisionRightOf(approval(), bob, true, NOW))).toBe("no (not an approver)");
  });

  it("says an uncounted entry in one's name is not one's decision", () => {
    const forged = approval({ decisions: [{ approver: "carol", verdict: "Approve" }] });
    forged.status = {
      phase: "Pending",
      ignoredDecisions: [
        { approver: "carol", reason: "observed while admission did not enforce the decision rules" },
      ],
    } as Approval["status"];
    expect(rightText(decisionRightOf(forged, carol, true, NOW))).toBe(
      "no (an uncounted Approve in your name)",
    );
  });

  it("refuses without RBAC, after a decision of one's own, once expired, and once no longer Pending", () => {
    expect(decisionRightOf(approval(), carol, false, NOW).why).toMatch(/RBAC/);
    const decided = approval({ decisions: [{ approver: "carol", verdict: "Reject", reason: "no" }] });
    expect(rightText(decisionRightOf(decided, carol, true, NOW))).toBe("no (decided (Reject))");
    expect(decisionRightOf(approval({ expiresAt: "2026-12-01T11:00:00Z" }), carol, true, NOW).why).toBe(
      "expired",
    );
    expect(decisionRightOf(approval({}, "Approved"), carol, true, NOW).why).toBe("it is Approved");
  });
});
