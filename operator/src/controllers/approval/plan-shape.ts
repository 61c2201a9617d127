/**
 * The shape of one Approval pass: what it observes, what its plan holds, how soon it looks again, and
 * what follows from the Approval and its session alone (late decisions, the session's end, the
 * requester's match). The planner is plan.ts.
 */
import type { Decision } from "../../api/approval.ts";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { isTerminalSessionPhase } from "../../api/status/agentsession.ts";
import { ApprovalPhase, type DecidedPhase, isOpenApprovalPhase } from "../../api/status/approval.ts";
import type { ApprovalHistory } from "../../core/approval-lifecycle.ts";
import type { ApprovalSettings } from "../../core/policy.ts";
import type { ApprovalView, AuditEntry, DecisionRulesVerdict, ExecutionRecord } from "../../core/ports.ts";
import type { ResolutionEntry } from "../../core/resolution.ts";
import { requestOf } from "../../kube/approvals.ts";
import { needsResolution } from "./resolution.ts";

/** `status` of an Approval. */
export type ApprovalStatus = NonNullable<Approval["status"]>;

/** What the planner is given: the Approval as cached, and what was read for it this pass. */
export interface ApprovalPlanInput {
  approval: Approval;
  /** Its AgentSession from the cache (by uid), absent when gone. */
  session: AgentSession | undefined;
  now: Date;
  /** Whether admission enforces the decision rules; read when {@link observationsFor} says so. */
  rules?: DecisionRulesVerdict | undefined;
  /** Its records in the audit chain (`historyOf`); read when {@link observationsFor} says so. */
  history?: ApprovalHistory | undefined;
  /** The Capability's current approval settings for the requester; absent when the Capability is gone. */
  policy?: ApprovalSettings | undefined;
  /** Its execution row, if any; read when {@link observationsFor} says so. */
  execution?: ExecutionRecord | undefined;
}

/** Which reads a pass needs (a settled Approval needs none: its reconcile stays cheap). */
export interface Observations {
  rules: boolean;
  history: boolean;
  policy: boolean;
  execution: boolean;
}

/** An Event for people. */
export interface PlannedEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/** One log line the applier writes. */
export interface PlannedLog {
  level: "info" | "warn";
  fields: Record<string, unknown>;
  message: string;
}

/** What to hand Core's executeApproved. */
export interface DispatchPlan {
  session: AgentSession | undefined;
  rules: DecisionRulesVerdict;
  /**
   * The history the decision was planned on, when it was approved in this pass: the applier adds the
   * records it just appended (`historyWith`), so the dispatch reads no chain again. Absent → Core reads it.
   */
  history?: ApprovalHistory | undefined;
}

/** What one pass does, in the applier's order. */
export interface ApprovalPlan {
  /** Audit entries, in order, appended together. */
  audit: AuditEntry[];
  /**
   * When they are appended: lifecycle records before the status moves (the chain dedupes a repeat);
   * late-decision reports after the status write that counts them (guarded by the cached
   * resourceVersion, so a stale cache fails with 409 and reports nothing twice).
   */
  auditWhen: "beforeStatus" | "afterStatus";
  /** The status to write (only if it differs), or absent. */
  status?: ApprovalStatus | undefined;
  events: PlannedEvent[];
  /** The decision this pass made, for gatehouse_approval_decision_seconds (creation → now). */
  decided?: { outcome: DecidedPhase; durationMs: number } | undefined;
  /** Record the settled outcome in the session's transcript (transcripts/approval-outcome.ts). */
  recordOutcome: boolean;
  /** Dispatch after the status write; then {@link planDispatchOutcome}. */
  dispatch?: DispatchPlan | undefined;
  /**
   * A person's resolution in spec.resolutions that the execution row does not hold yet: Core records
   * it first (core/resolution.ts), then the pass is planned again on the row it left.
   */
  resolve?: ResolutionEntry | undefined;
  /** After everything else. */
  finalizer?: "add" | "remove" | undefined;
  requeueAfterMs?: number | undefined;
  log: PlannedLog[];
}

/** How long a Pending Approval waits before the rules' verification is looked at again. */
export const RULES_RECHECK_MS = 5_000;

/** How soon an Executing or deferred dispatch is looked at again. */
export const DISPATCH_RECHECK_MS = 2_000;

/** How soon an Approval that just got its finalizer is looked at again. */
export const FINALIZER_RECHECK_MS = 500;

/** A decision appended after the Approval was decided, with its index in spec.decisions. */
export interface LateDecision {
  index: number;
  decision: Decision;
}

/**
 * The decisions of a decided (non-Pending) Approval that the operator has not taken into account:
 * those beyond status.observedDecisions. Without that count (an Approval decided before the operator
 * kept it) every decision present counts as observed. Pure.
 */
export function lateDecisionsOf(approval: Approval): LateDecision[] {
  const observed = approval.status?.observedDecisions;
  if (observed === undefined) return [];
  return approval.spec.decisions.slice(observed).map((decision, i) => ({ index: observed + i, decision }));
}

/** The Event message about a late decision: who decided what, and the phase it found. */
export function lateDecisionMessage(late: LateDecision, phase: ApprovalPhase): string {
  const { approver, verdict } = late.decision;
  return `Decision ${verdict} by ${approver} (spec.decisions[${late.index}]) ignored: the Approval is already ${phase} and takes no more decisions; nothing changed.`;
}

/** The Event message when dispatch refuses an approved call for good, leaving it in `phase`. */
export function dispatchRefusedMessage(phase: ApprovalPhase, message: string): string {
  return `The approved call was not run; the Approval is ${phase}: ${message}.`;
}

/** The Approval as Core reads it. */
export function viewOf(approval: Approval): ApprovalView {
  const created = Date.parse(String(approval.metadata.creationTimestamp ?? ""));
  return {
    request: requestOf(approval),
    decisions: approval.spec.decisions,
    phase: approval.status?.phase ?? ApprovalPhase.Pending,
    uid: approval.metadata.uid,
    ...(Number.isNaN(created) ? {} : { createdAtMicros: created * 1000 }),
  };
}

/** Why nobody waits for the decision any more (the session is gone, cancelled or over), or undefined. */
export function sessionEndedWhy(session: AgentSession | undefined): string | undefined {
  if (!session || session.metadata.deletionTimestamp) return "was deleted";
  if (session.spec.cancel) return "was cancelled";
  if (isTerminalSessionPhase(session.status?.phase)) return `ended ${session.status?.phase}`;
  return undefined;
}

/**
 * Why `approval` cannot be its session's request: its requester is not the session's subject (the
 * user every call of the session acts for). Undefined when they agree, or there is no session. Pure.
 */
export function requesterMismatch(approval: Approval, session: AgentSession | undefined): string | undefined {
  if (!session) return undefined;
  const subject = session.spec.subject.user;
  const requester = approval.spec.requester.user;
  if (requester === subject) return undefined;
  return `Approval ${approval.metadata.name} names requester ${requester}, but AgentSession ${session.metadata.name} acts for ${subject}: Gatehouse never proposed it, and it will not run.`;
}

/** The reads a pass over `approval` needs. Pure. */
export function observationsFor(approval: Approval, session: AgentSession | undefined): Observations {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  const deleting = approval.metadata.deletionTimestamp !== undefined;
  // An execution of unknown outcome is planned from its row alone.
  if (!deleting && needsResolution(approval)) {
    return { rules: false, history: false, policy: false, execution: true };
  }
  const undecided = isOpenApprovalPhase(phase);
  const pending = phase === ApprovalPhase.Pending;
  const ending = deleting || (pending && sessionEndedWhy(session) !== undefined);
  return {
    rules: undecided,
    history: pending || (deleting && undecided),
    policy: pending && !deleting,
    // An approved call whose Approval ends without a dispatch is ended only if it never started; an
    // Unknown one is where a resolution starts.
    execution: (ending && undecided) || phase === ApprovalPhase.Unknown,
  };
}
