/**
 * Who may do what, and whether a human must approve it (DESIGN §2 Capability `spec.policy`, §4 step 6).
 *
 * Each rule yields allow, approval or deny; the strictest wins (deny > approval > allow). Rules:
 *   - approval mode: the Capability's explicit `policy.approval` if set, else by effect (read/draft →
 *     Auto, write → Required); Auto → allow, Required → approval, Forbidden → deny; an unknown effect
 *     or mode → deny;
 *   - operator floor (optional): a minimum mode per effect from the operator's configuration;
 *   - subjects: when `policy.subjects` names anyone, the session's subject must be one of them
 *     ({@link mayUse}; the same rule hides the tool from the session, `core/visibility.ts`);
 *   - limits: `maxTurns` against the call's turn. `maxToolCalls` and `maxWrites` are counted by the
 *     budget ledger (`BudgetLedger` in ports.ts) when Core reserves the call, after these rules allowed
 *     it; {@link limitDecision} words its refusal.
 */
import type { Effect, Subject } from "@gatehouse/provider-sdk";
import { APPROVAL_MODES, ApprovalMode } from "../api/status/capability.ts";
import { type PolicyReason, ToolCallReason } from "../api/status/tool-call.ts";
import type {
  BudgetResource,
  CapabilityPolicy,
  PrincipalSet,
  ResolvedCapability,
  SessionLimits,
} from "./ports.ts";

/** Outcome of one rule or of the whole policy. */
export type PolicyVerdict = "allow" | "approval" | "deny";

export type { PolicyReason };

/** A verdict with its reason and a message for the model. */
export interface PolicyDecision {
  verdict: PolicyVerdict;
  reason: PolicyReason;
  message: string;
}

/** Input of {@link decidePolicy}. */
export interface PolicyInput {
  capability: Pick<ResolvedCapability, "id" | "effect" | "policy">;
  subject: Subject;
  /** The call's turn (0-based, as the agent numbers them). */
  turn: number;
  limits: Pick<SessionLimits, "maxTurns">;
  /** Operator-wide minimum approval mode per effect (e.g. `{ write: "Required" }`). */
  floor?: Partial<Record<Effect, ApprovalMode>>;
}

const EFFECTS: readonly string[] = ["read", "draft", "write"];
const RANK: Record<PolicyVerdict, number> = { allow: 0, approval: 1, deny: 2 };

/** The approval mode by effect: read/draft → Auto, write → Required (DESIGN §2). Undefined for an unknown effect. */
export function defaultApproval(effect: string): ApprovalMode | undefined {
  if (effect === "read" || effect === "draft") return ApprovalMode.Auto;
  if (effect === "write") return ApprovalMode.Required;
  return undefined;
}

/**
 * The effective approval mode: an explicit `policy.approval` wins over the default by effect.
 * Undefined for an unknown effect (without an explicit mode) or an unknown explicit mode.
 */
export function effectiveApproval(effect: string, explicit: string | undefined): ApprovalMode | undefined {
  if (explicit !== undefined) return isApprovalMode(explicit) ? explicit : undefined;
  return defaultApproval(effect);
}

function isApprovalMode(mode: string): mode is ApprovalMode {
  return (APPROVAL_MODES as readonly string[]).includes(mode);
}

/** True when `subject` is named in `set` by user or by one of its groups. */
export function inPrincipalSet(set: PrincipalSet, subject: Subject): boolean {
  return set.users.includes(subject.user) || subject.groups.some((g) => set.groups.includes(g));
}

/** True when `subject` may use a capability with `policy.subjects` (absent or empty → everyone). */
export function mayUse(subjects: PrincipalSet | undefined, subject: Subject): boolean {
  if (!subjects || (subjects.users.length === 0 && subjects.groups.length === 0)) return true;
  return inPrincipalSet(subjects, subject);
}

/** `set` for people: `users bob, carol and groups ops` (the empty parts left out). */
export function describePrincipals(set: PrincipalSet): string {
  const parts: string[] = [];
  if (set.users.length > 0)
    parts.push(`${set.users.length === 1 ? "user" : "users"} ${set.users.join(", ")}`);
  if (set.groups.length > 0)
    parts.push(`${set.groups.length === 1 ? "group" : "groups"} ${set.groups.join(", ")}`);
  return parts.join(" and ");
}

/** The strictest of `decisions` (the first one among equals). Errors: throws on an empty list. */
export function strictest(decisions: readonly PolicyDecision[]): PolicyDecision {
  if (decisions.length === 0) throw new RangeError("strictest() needs at least one decision");
  return decisions.reduce((worst, d) => (RANK[d.verdict] > RANK[worst.verdict] ? d : worst));
}

/**
 * The rules that do not depend on the session's consumption — approval mode, operator floor, subjects
 * — as their strictest decision. Re-checked when an Approved call is dispatched.
 */
export function decideAccess(input: Omit<PolicyInput, "limits" | "turn">): PolicyDecision {
  const { capability, subject } = input;
  const effect = String(capability.effect);
  const decisions: PolicyDecision[] = [modeDecision(capability.id, effect, capability.policy.approval)];
  const floor = EFFECTS.includes(effect) ? input.floor?.[effect as Effect] : undefined;
  if (floor) decisions.push(modeDecision(capability.id, effect, floor));
  const subjects = capability.policy.subjects;
  if (subjects && !mayUse(subjects, subject)) {
    decisions.push({
      verdict: "deny",
      reason: ToolCallReason.NotASubject,
      message:
        `${subject.user} may not use ${capability.id}: its spec.policy.subjects admits only ` +
        `${describePrincipals(subjects)}; ask the platform team to add you, or use another capability`,
    });
  }
  return strictest(decisions);
}

/** Applies the access rules and the turn limit and returns the strictest decision. */
export function decidePolicy(input: PolicyInput): PolicyDecision {
  const decisions: PolicyDecision[] = [decideAccess(input)];
  if (input.turn >= input.limits.maxTurns) {
    decisions.push({
      verdict: "deny",
      reason: ToolCallReason.TurnLimitReached,
      message: `this session may use ${input.limits.maxTurns} turns and this call is in turn ${input.turn + 1}; finish with what you have`,
    });
  }
  return strictest(decisions);
}

/** The denial for a call the budget ledger found no room for: `limit` of `resource` is used up. */
export function limitDecision(resource: BudgetResource, limit: number): PolicyDecision {
  return resource === "tool_call"
    ? {
        verdict: "deny",
        reason: ToolCallReason.ToolCallLimitReached,
        message: `this session has used the ${limit} tool ${limit === 1 ? "call" : "calls"} it is allowed; finish with what you have`,
      }
    : {
        verdict: "deny",
        reason: ToolCallReason.WriteLimitReached,
        message: `this session has used the ${limit} ${limit === 1 ? "write" : "writes"} it is allowed`,
      };
}

function modeDecision(id: string, effect: string, explicit: string | undefined): PolicyDecision {
  const mode = effectiveApproval(effect, explicit);
  switch (mode) {
    case ApprovalMode.Auto:
      return { verdict: "allow", reason: ToolCallReason.Auto, message: `${id} is allowed without approval` };
    case ApprovalMode.Required:
      return {
        verdict: "approval",
        reason: ToolCallReason.ApprovalRequired,
        message: `${id} needs a human's approval`,
      };
    case ApprovalMode.Forbidden:
      return { verdict: "deny", reason: ToolCallReason.Forbidden, message: `${id} is forbidden by policy` };
    default:
      return explicit !== undefined && !isApprovalMode(explicit)
        ? {
            verdict: "deny",
            reason: ToolCallReason.UnknownApprovalMode,
            message: `${id} has an unknown approval mode; denied`,
          }
        : {
            verdict: "deny",
            reason: ToolCallReason.UnknownEffect,
            message: `${id} has an unknown effect; denied`,
          };
  }
}

/** Approval settings with the defaults of DESIGN §2 applied. */
export interface ApprovalSettings {
  approvers: PrincipalSet;
  requiredApprovals: number;
  allowSelfApproval: boolean;
  ttlSeconds: number;
}

/**
 * The approval settings for a request by `requester` (DESIGN §1, §2): the approvers are the policy's
 * approvers and — unless `allowSelfApproval` is false — the requester too, since the requester
 * confirming their own intent is the base case (with no approvers configured, the requester alone).
 * `requiredApprovals` defaults to 1 (at least 1), `allowSelfApproval` to true, ttl to
 * `defaultTtlSeconds`. With `allowSelfApproval: false` and no approvers configured, nobody can
 * approve: the call can only be rejected or expire (four-eyes without a second pair of eyes).
 */
export function approvalSettings(
  policy: CapabilityPolicy,
  requester: Subject,
  defaultTtlSeconds: number,
): ApprovalSettings {
  const allowSelfApproval = policy.allowSelfApproval ?? true;
  const users = [...(policy.approvers?.users ?? [])];
  if (allowSelfApproval && !users.includes(requester.user)) users.unshift(requester.user);
  return {
    approvers: { users, groups: [...(policy.approvers?.groups ?? [])] },
    requiredApprovals: Math.max(1, Math.floor(policy.requiredApprovals ?? 1)),
    allowSelfApproval,
    ttlSeconds: policy.ttlSeconds && policy.ttlSeconds > 0 ? policy.ttlSeconds : defaultTtlSeconds,
  };
}
