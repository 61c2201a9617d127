/**
 * Pure evaluation of an Approval's decisions (DESIGN §2 Approval). Admission already refuses most bad
 * decisions; the operator re-evaluates anyway, so anything that slips through changes nothing and is
 * reported. Rules, applied to `spec.decisions` in order:
 *   - one entry per user: a user's later entries are ignored;
 *   - a decision counts only from an approver (named in `approvers.users`, or in one of
 *     `approvers.groups`) — except that the requester may always reject;
 *   - the requester's Approve counts only when `allowSelfApproval`;
 *   - the first counted Reject rejects; `requiredApprovals` counted Approves approve; whichever comes
 *     first in the list settles the outcome and later decisions are ignored;
 *   - otherwise the Approval stays Pending.
 * With `policyApprovers` (the Capability's current approvers, when they narrowed: core/approval-rules.ts)
 * an Approve counts only from a user both sets admit.
 *
 * Group membership: a decision holds only the approver's user name. When the caller knows the
 * approver's groups (`groupsOf`), they are checked; otherwise a user not named in `approvers.users`
 * counts when `approvers.groups` is non-empty, because admission checked the appending user's groups
 * (`request.userInfo.groups`) against the old object's approvers when the decision was added.
 */
import type { Subject } from "@gatehouse/provider-sdk";
import { ApprovalPhase } from "../api/status/approval.ts";
import type { ApprovalDecision, PrincipalSet } from "./ports.ts";

/** What the decisions amount to. */
export type ApprovalOutcome =
  | typeof ApprovalPhase.Approved
  | typeof ApprovalPhase.Rejected
  | typeof ApprovalPhase.Pending;

/** A decision that did not count, and why (shown in `status.ignoredDecisions`). */
export interface IgnoredDecision {
  /** Index in `spec.decisions`. */
  index: number;
  approver: string;
  reason: string;
}

/** Input of {@link evaluateApproval}: the relevant parts of an Approval's spec. */
export interface ApprovalEvaluationInput {
  decisions: readonly ApprovalDecision[];
  approvers: PrincipalSet;
  requiredApprovals: number;
  allowSelfApproval: boolean;
  requester: Subject;
  /** The groups of a user, when known (else see the header on group membership). */
  groupsOf?: (user: string) => readonly string[] | undefined;
  /** Decisions (by index) that never count, with the reason shown for each. */
  excluded?: ReadonlyMap<number, string>;
  /** The Capability's current approvers, when narrower than `approvers`: an Approve needs both. */
  policyApprovers?: PrincipalSet;
}

/** Result of {@link evaluateApproval}. */
export interface ApprovalEvaluation {
  outcome: ApprovalOutcome;
  /** Counted Approve decisions (up to the settling one). */
  approvals: number;
  /** Users whose Approve counted, in order. */
  approvedBy: string[];
  /** The user whose Reject settled the outcome, when Rejected. */
  rejectedBy?: string;
  ignored: IgnoredDecision[];
}

/** Evaluates decisions by the rules in the header. Pure; never throws. */
export function evaluateApproval(input: ApprovalEvaluationInput): ApprovalEvaluation {
  const required = Math.max(1, input.requiredApprovals);
  const seen = new Set<string>();
  const ignored: IgnoredDecision[] = [];
  const approvedBy: string[] = [];
  let outcome: ApprovalOutcome = ApprovalPhase.Pending;
  let rejectedBy: string | undefined;

  for (const [index, decision] of input.decisions.entries()) {
    const approver = decision.approver;
    const ignore = (reason: string) => ignored.push({ index, approver, reason });
    if (outcome !== ApprovalPhase.Pending) {
      ignore(`the approval was already ${outcome.toLowerCase()}`);
      continue;
    }
    if (seen.has(approver)) {
      ignore("only the first decision of each user counts");
      continue;
    }
    seen.add(approver);
    // An excluded decision still takes its user's one decision: a later entry in that name never counts.
    const excluded = input.excluded?.get(index);
    if (excluded !== undefined) {
      ignore(excluded);
      continue;
    }

    const isRequester = approver === input.requester.user;
    if (decision.verdict === "Reject") {
      if (!isRequester && !isApprover(input, approver)) {
        ignore(`${approver} is not an approver`);
        continue;
      }
      outcome = ApprovalPhase.Rejected;
      rejectedBy = approver;
    } else if (!isApprover(input, approver)) {
      ignore(`${approver} is not an approver`);
    } else if (!isRequester && !admittedByPolicy(input, approver)) {
      ignore(`${approver} is no longer an approver under the Capability's policy`);
    } else if (isRequester && !input.allowSelfApproval) {
      ignore("self-approval is not allowed for this capability");
    } else {
      approvedBy.push(approver);
      if (approvedBy.length >= required) outcome = ApprovalPhase.Approved;
    }
  }

  const result: ApprovalEvaluation = { outcome, approvals: approvedBy.length, approvedBy, ignored };
  if (rejectedBy !== undefined) result.rejectedBy = rejectedBy;
  return result;
}

function isApprover(input: ApprovalEvaluationInput, user: string): boolean {
  if (input.approvers.users.includes(user)) return true;
  if (input.approvers.groups.length === 0) return false;
  const groups = input.groupsOf?.(user);
  if (groups === undefined) return true; // admission verified the group when the decision was appended
  return groups.some((g) => input.approvers.groups.includes(g));
}

/**
 * Whether the current policy's approvers admit `user`. Only admission saw the user's groups, and it
 * checked them against the spec's approvers: that proves membership of a current group only for a user
 * admitted by group alone (not named in the spec) when every spec group is still admitted. The
 * requester's groups are known (the session's subject).
 */
function admittedByPolicy(input: ApprovalEvaluationInput, user: string): boolean {
  const policy = input.policyApprovers;
  if (!policy || policy.users.includes(user)) return true;
  if (policy.groups.length === 0) return false;
  const groups =
    input.groupsOf?.(user) ?? (user === input.requester.user ? input.requester.groups : undefined);
  if (groups !== undefined) return groups.some((g) => policy.groups.includes(g));
  return (
    !input.approvers.users.includes(user) && input.approvers.groups.every((g) => policy.groups.includes(g))
  );
}
