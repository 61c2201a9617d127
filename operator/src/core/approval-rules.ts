/**
 * The rules an Approval settles under (DESIGN §2 Approval): the stricter of what it was created with
 * (its spec: approvers, requiredApprovals, allowSelfApproval, expiresAt) and what the Capability's
 * policy says now (`approvalSettings` for the requester, core/policy.ts), never the looser — a policy
 * tightened while an Approval waits applies to it, one loosened does not:
 *   required approvals  the larger of the two
 *   approvers           an Approve counts only from a user both sets admit (core/approvals.ts)
 *   self-approval       only when both allow it
 *   expiry              the earlier of spec.expiresAt and creation + the current ttl
 * Who may reject keeps the spec's rule: more ways to refuse is never looser.
 */
import { type ApprovalSettings, describePrincipals } from "./policy.ts";
import type { ApprovalRequest, PrincipalSet } from "./ports.ts";

/** The rules in the header, with what the current policy made stricter. */
export interface ApprovalRules {
  /** The spec's approvers (admission checked decisions against these). */
  approvers: PrincipalSet;
  /** The current policy's approvers, when they may admit fewer users than the spec's; else absent. */
  policyApprovers?: PrincipalSet;
  requiredApprovals: number;
  allowSelfApproval: boolean;
  /** RFC 3339. */
  expiresAt: string;
  /** What the current policy made stricter, for people, e.g. "the Capability's policy now requires 2 approvals". */
  tightened: string[];
}

/** True when every user `narrow` could admit, `wide` admits too (same users or more, same groups or more). */
function admitsAll(wide: PrincipalSet, narrow: PrincipalSet): boolean {
  return (
    narrow.users.every((u) => wide.users.includes(u)) && narrow.groups.every((g) => wide.groups.includes(g))
  );
}

/** RFC 3339 in whole seconds, as core/invoke.ts writes spec.expiresAt. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/**
 * The rules of the header for `request`, given the Capability's current settings for its requester
 * (`current`; absent when the Capability is gone — the spec's rules alone) and the Approval's creation
 * time (`createdAtMicros`; absent → the current ttl is not applied). Pure.
 */
export function approvalRulesOf(
  request: Pick<
    ApprovalRequest,
    "approvers" | "requiredApprovals" | "allowSelfApproval" | "expiresAt" | "requester"
  >,
  current?: ApprovalSettings,
  createdAtMicros?: number,
): ApprovalRules {
  const rules: ApprovalRules = {
    approvers: request.approvers,
    requiredApprovals: request.requiredApprovals,
    allowSelfApproval: request.allowSelfApproval,
    expiresAt: request.expiresAt,
    tightened: [],
  };
  if (!current) return rules;
  if (current.requiredApprovals > request.requiredApprovals) {
    rules.requiredApprovals = current.requiredApprovals;
    rules.tightened.push(`the Capability's policy now requires ${current.requiredApprovals} approvals`);
  }
  if (request.allowSelfApproval && !current.allowSelfApproval) {
    rules.allowSelfApproval = false;
    rules.tightened.push("the Capability's policy no longer allows self-approval");
  }
  // The requester is left out of the comparison: whether they may approve is the self-approval rule.
  const requester = request.requester.user;
  const others = (set: PrincipalSet) => ({
    users: set.users.filter((u) => u !== requester),
    groups: set.groups,
  });
  if (!admitsAll(others(current.approvers), others(request.approvers))) {
    rules.policyApprovers = current.approvers;
    const who = describePrincipals(others(current.approvers));
    rules.tightened.push(`the Capability's policy now admits as approvers only ${who || "the requester"}`);
  }
  if (createdAtMicros !== undefined) {
    const byPolicyMs = Math.floor(createdAtMicros / 1000) + current.ttlSeconds * 1000;
    if (byPolicyMs < Date.parse(request.expiresAt)) {
      rules.expiresAt = rfc3339(byPolicyMs);
      rules.tightened.push(
        `the Capability's policy now lets it wait ${current.ttlSeconds} s, until ${rules.expiresAt}`,
      );
    }
  }
  return rules;
}
