/**
 * Whether a user may decide an Approval: the rules of the admission policy gatehouse-approval-decide
 * (crds/admission-policies.yaml, generated from api/admission.ts) read from the Approval's spec and
 * status, plus RBAC's answer. Advice for the `pending` table only — the API server decides.
 */
import type { Approval } from "../../api/kinds.ts";
import { ApprovalPhase } from "../../api/status/approval.ts";
import type { Me } from "./connection.ts";

/** What `me` may append: `yes` (Approve or Reject), `reject-only`, or `no`; `why` says which rule. */
export interface DecisionRight {
  may: "yes" | "reject-only" | "no";
  why: string;
}

/**
 * The decision right of `me` on `approval`, given whether RBAC lets them patch it (`rbacAllowed`) at
 * `now`. Mirrors the policy's rules in its order: Pending, RBAC, one decision per user, listed approver
 * (by name or group) — the requester may always reject — and no self-approval when it is off.
 */
export function decisionRightOf(approval: Approval, me: Me, rbacAllowed: boolean, now: Date): DecisionRight {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  if (phase !== ApprovalPhase.Pending) return { may: "no", why: `it is ${phase}` };
  if (Date.parse(approval.spec.expiresAt) <= now.getTime()) return { may: "no", why: "expired" };
  if (!rbacAllowed) return { may: "no", why: "RBAC: no patch on approvals" };
  const mine = approval.spec.decisions.find((d) => d.approver === me.username);
  if (mine) {
    // An entry in your name the operator did not count (e.g. forged while admission was off) is not your decision.
    const uncounted = approval.status?.ignoredDecisions?.some((i) => i.approver === me.username);
    return {
      may: "no",
      why: uncounted ? `an uncounted ${mine.verdict} in your name` : `decided (${mine.verdict})`,
    };
  }
  const isRequester = approval.spec.requester.user === me.username;
  const isApprover =
    approval.spec.approvers.users.includes(me.username) ||
    me.groups.some((g) => approval.spec.approvers.groups.includes(g));
  if (isApprover && (!isRequester || approval.spec.allowSelfApproval)) return { may: "yes", why: "approver" };
  if (isApprover || isRequester) {
    return { may: "reject-only", why: "requester; self-approval is off" };
  }
  return { may: "no", why: "not an approver" };
}

/** The YOU column: `yes`, `reject only` or `no (why)`. */
export function rightText(right: DecisionRight): string {
  if (right.may === "yes") return "yes";
  if (right.may === "reject-only") return "reject only";
  return `no (${right.why})`;
}
