/**
 * The status an Approval plan writes while it decides: its phase, the decision rules' verdict and a
 * database outage as conditions. The planner is plan.ts.
 */
import type { Approval } from "../../api/kinds.ts";
import {
  ApprovalCondition,
  ApprovalPhase,
  ApprovalReason,
  isOpenApprovalPhase,
} from "../../api/status/approval.ts";
import type { DecisionRulesVerdict } from "../../core/ports.ts";
import { setCondition } from "../../kube/runtime/conditions.ts";
import type { ApprovalPlan, ApprovalPlanInput, ApprovalStatus } from "./plan-shape.ts";

export function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`planApproval needs ${what} for this Approval (observationsFor)`);
  return value;
}

export function emptyPlan(): ApprovalPlan {
  return { audit: [], auditWhen: "beforeStatus", events: [], recordOutcome: false, log: [] };
}

/** Creation → now in milliseconds, for the decision metric; undefined without a creation time. */
export function sinceCreation(approval: Approval, now: Date): number | undefined {
  const created = Date.parse(String(approval.metadata.creationTimestamp ?? ""));
  return Number.isNaN(created) ? undefined : now.getTime() - created;
}

/** The condition saying whether admission is verified to enforce the decision rules. */
export function rulesCondition(rules: DecisionRulesVerdict, generation: number | undefined) {
  return rules.enforced
    ? {
        type: ApprovalCondition.DecisionRulesEnforced,
        status: "True" as const,
        reason: ApprovalReason.Enforced,
        message: "The API server enforces the decision rules as the chart renders them.",
        observedGeneration: generation,
      }
    : {
        type: ApprovalCondition.DecisionRulesEnforced,
        status: "False" as const,
        reason: ApprovalReason.DecisionRulesNotEnforced,
        message: `No decision counts and nothing runs until admission enforces the decision rules: ${rules.message}.`,
        observedGeneration: generation,
      };
}

/** The status a pass starts from: the cached one, at this generation. */
export function startStatus(input: ApprovalPlanInput): ApprovalStatus {
  return { ...input.approval.status, observedGeneration: input.approval.metadata.generation };
}

/**
 * The status of an Approval whose pass failed because the operator's database is unavailable (pure):
 * condition `Executed=False`, reason `DatabaseUnavailable`, saying what waits — the decisions' record
 * and so the call (Pending), or the approved call (Approved, Executing). Undefined for an Approval
 * being deleted or settled, which no call waits on. A Pending pass that reads its history clears it
 * again; a dispatch replaces it with its own outcome.
 */
export function planDatabaseUnavailable(approval: Approval, now: Date): ApprovalStatus | undefined {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  if (approval.metadata.deletionTimestamp) return undefined;
  if (!isOpenApprovalPhase(phase)) return undefined;
  const database = "the operator's database (Postgres) does not answer";
  const message =
    phase === ApprovalPhase.Pending
      ? `Decisions are recorded in the audit chain before they count, and ${database}: the decisions so far wait, and an approved call runs once it answers again.`
      : `The approved call waits: ${database}; it is dispatched once it answers again.`;
  return {
    ...approval.status,
    phase,
    conditions: setCondition(
      approval.status?.conditions,
      {
        type: ApprovalCondition.Executed,
        status: "False",
        reason: ApprovalReason.DatabaseUnavailable,
        message,
        observedGeneration: approval.metadata.generation,
      },
      now,
    ),
  };
}

/** `status` without the condition {@link planDatabaseUnavailable} set: this pass read the database. */
export function withoutDatabaseUnavailable(status: ApprovalStatus): ApprovalStatus {
  const conditions = status.conditions?.filter((c) => c.reason !== ApprovalReason.DatabaseUnavailable);
  return conditions ? { ...status, conditions } : status;
}

/** Sets the phase and its Decided condition (False while Pending). */
export function setPhase(
  status: ApprovalStatus,
  input: ApprovalPlanInput,
  next: ApprovalPhase,
  reason: string,
  message: string,
): void {
  status.phase = next;
  status.conditions = setCondition(
    status.conditions,
    {
      type: ApprovalCondition.Decided,
      status: next === ApprovalPhase.Pending ? "False" : "True",
      reason,
      message,
      observedGeneration: input.approval.metadata.generation,
    },
    input.now,
  );
}

/** Sets the DecisionRulesEnforced condition: shown once the rules were not enforced, then kept current. */
export function noteRules(
  status: ApprovalStatus,
  rules: DecisionRulesVerdict,
  generation: number | undefined,
  now: Date,
) {
  if (!rules.enforced || status.conditions?.some((c) => c.type === ApprovalCondition.DecisionRulesEnforced)) {
    status.conditions = setCondition(status.conditions, rulesCondition(rules, generation), now);
  }
}
