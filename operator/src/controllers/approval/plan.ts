/**
 * What one reconcile of an Approval does, as a pure function of what was observed, so the reconciler
 * reads like the paragraph that explains it (the applier is reconciler.ts):
 *
 *   being deleted     → a Pending one ends Cancelled (ApprovalDeleted) after its decisions; an approved
 *                       one that never started ends its dispatch so; then the finalizer goes
 *   no finalizer      → add it (Approvals of an earlier version), look again
 *   Pending, session gone, cancelled or ended → its decisions and Cancelled (SessionEnded)
 *   Pending           → Core's planDecision (core/approval-lifecycle.ts): each new decision once, and the
 *                       end when decisions or the clock settle it, under the stricter of the spec and
 *                       the Capability's current policy (core/approval-rules.ts); still Pending → the
 *                       status says how many approvals count of how many, under which rule; settled
 *                       Approved → dispatch
 *   decided, decisions appended since → each reported once (status first, then audit + Event)
 *   Approved | Executing → dispatch through Core's executeApproved; {@link planDispatchOutcome} turns
 *                       its result into the final status
 *   Unknown (or an Auto call's record Approval) → the phase follows the execution row
 *                       (resolution.ts `planResolution`): a person's resolution is recorded by Core
 *                       first; settled by it or by the leader's settle sweep → Succeeded | Failed, and
 *                       the agent is told once more; still unknown → looked at after the next attempt
 *
 * Audit entries of the lifecycle are appended together (`AuditLog.appendAll`, one transaction) before
 * the status moves, so the status only ever follows the chain.
 */
import type { Approval } from "../../api/kinds.ts";
import {
  ApprovalCondition,
  ApprovalEventReason,
  ApprovalPhase,
  ApprovalReason,
  isDecidedPhase,
  type UndecidedEndPhase,
} from "../../api/status/approval.ts";
import { APPROVAL_FINALIZER } from "../../api/well-known.ts";
import { type ApprovalHistory, planDecision, undispatchedEnd } from "../../core/approval-lifecycle.ts";
import { AuditKind } from "../../core/audit.ts";
import type { ApprovalView, AuditEntry } from "../../core/ports.ts";
import { setCondition } from "../../kube/runtime/conditions.ts";
import { hasFinalizer } from "../../kube/runtime/finalizers.ts";
import {
  type ApprovalPlan,
  type ApprovalPlanInput,
  type ApprovalStatus,
  FINALIZER_RECHECK_MS,
  lateDecisionMessage,
  lateDecisionsOf,
  RULES_RECHECK_MS,
  requesterMismatch,
  sessionEndedWhy,
  viewOf,
} from "./plan-shape.ts";
import {
  emptyPlan,
  need,
  noteRules,
  setPhase,
  sinceCreation,
  startStatus,
  withoutDatabaseUnavailable,
} from "./plan-status.ts";
import { needsResolution, planResolution } from "./resolution.ts";

export { type DispatchOutcomePlan, executionStatusOf, planDispatchOutcome } from "./plan-dispatch.ts";
export {
  type ApprovalPlan,
  type ApprovalPlanInput,
  type ApprovalStatus,
  DISPATCH_RECHECK_MS,
  type DispatchPlan,
  dispatchRefusedMessage,
  type LateDecision,
  lateDecisionMessage,
  lateDecisionsOf,
  type Observations,
  observationsFor,
  type PlannedEvent,
  type PlannedLog,
  RULES_RECHECK_MS,
  requesterMismatch,
  sessionEndedWhy,
  viewOf,
} from "./plan-shape.ts";
export { planDatabaseUnavailable } from "./plan-status.ts";

/** Plans one reconcile of `input.approval` (see the header). Pure; throws only when a needed read is missing. */
export function planApproval(input: ApprovalPlanInput): ApprovalPlan {
  const { approval } = input;
  if (approval.metadata.deletionTimestamp) return planDeleted(input);
  if (!hasFinalizer(approval, APPROVAL_FINALIZER)) {
    // Approvals created by an earlier version have no finalizer yet; the update queues it again.
    return { ...emptyPlan(), finalizer: "add", requeueAfterMs: FINALIZER_RECHECK_MS };
  }
  if (needsResolution(approval)) return planUnknown(input);
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  if (phase === ApprovalPhase.Pending) return planPending(input);
  const reported = planLateDecisions(input, phase);
  if (phase === ApprovalPhase.Approved || phase === ApprovalPhase.Executing) {
    const rules = need(input.rules, "the decision-rules verdict");
    const status: ApprovalStatus = { ...reported.status };
    noteRules(status, rules, approval.metadata.generation, input.now);
    // Written beside the call (reconciler.ts): people see it run; a crash before the receipt is resumed
    // from the chain and the execution row. status.execution is only ever copied from the execution row.
    status.phase = ApprovalPhase.Executing;
    return { ...reported, status, dispatch: { session: input.session, rules } };
  }
  return reported;
}

/** How long after a settle attempt is due the Approval looks at its row again (the sweep runs every 5 s). */
const SETTLE_LOOK_AGAIN_MS = 10_000;

/**
 * Phase Unknown — or an Auto call's record Approval not yet marked so: the phase follows the execution
 * row (resolution.ts `planResolution`). A resolution in spec.resolutions that the row does not hold is
 * recorded by Core first; once the leader's settle sweep or a person settled the row, the Approval is
 * Succeeded or Failed and the agent, told "unknown" before, is told once more; while it stays
 * unknown, it is looked at again after the sweep's next attempt.
 */
function planUnknown(input: ApprovalPlanInput): ApprovalPlan {
  const { approval, execution, now } = input;
  const resolution = planResolution(approval, execution);
  const plan: ApprovalPlan = {
    ...emptyPlan(),
    status: resolution.status,
    ...(resolution.resolve ? { resolve: resolution.resolve } : {}),
  };
  const phase = resolution.status.phase;
  if (phase !== ApprovalPhase.Unknown && phase !== approval.status?.phase && execution?.state !== "started") {
    const reason = resolution.reason ?? String(phase);
    plan.events.push({
      type: "Normal",
      reason,
      message: `The outcome of execution ${approval.spec.executionId} is settled: ${phase}.`,
    });
    plan.recordOutcome = true;
    plan.log.push({ level: "info", fields: { phase, reason }, message: "unknown outcome settled" });
  }
  if (phase === ApprovalPhase.Unknown && execution?.nextSettleMicros !== undefined) {
    const untilMs = Math.floor(execution.nextSettleMicros / 1000) - now.getTime();
    plan.requeueAfterMs = Math.max(1_000, untilMs + SETTLE_LOOK_AGAIN_MS);
  }
  return plan;
}

/**
 * status.observedDecisions of a Pending Approval as this reconcile leaves it: every decision, unless
 * its end was already in the chain (`endRecorded`: the status write after the append was lost). Then
 * only those the chain recorded before the end count as observed; the ones appended after it are late,
 * and the late-decision path records them (approval.decision_ignored) once the status shows the end.
 */
function observedDecisionsOf(approval: Approval, history: ApprovalHistory, endRecorded: boolean): number {
  if (!endRecorded) return approval.spec.decisions.length;
  let recorded = 0;
  while (recorded < approval.spec.decisions.length && history.decided.has(recorded)) recorded += 1;
  return recorded;
}

/** A Pending Approval: its session over → Cancelled; else Core's decision. */
function planPending(input: ApprovalPlanInput): ApprovalPlan {
  const { approval, now } = input;
  const view = viewOf(approval);
  const rules = need(input.rules, "the decision-rules verdict");
  const history = need(input.history, "the audit history");
  const status = withoutDatabaseUnavailable(startStatus(input));
  const generation = approval.metadata.generation;
  const nowMicros = now.getTime() * 1000;
  /** Ends the Pending Approval undecided: its decisions so far recorded, then `end`; nothing runs. */
  const endUndecided = (
    end: { phase: UndecidedEndPhase; reason: string; message: string },
    event: { type: "Normal" | "Warning"; reason: string },
    log: { level: "info" | "warn"; message: string },
  ): ApprovalPlan => {
    const decision = planDecision({ approval: view, history, rules, nowMicros, end });
    setPhase(status, input, end.phase, end.reason, end.message);
    status.observedDecisions = observedDecisionsOf(
      approval,
      history,
      "recorded" in decision && decision.recorded,
    );
    noteRules(status, rules, generation, now);
    return {
      ...emptyPlan(),
      audit: [...decision.entries, ...undispatched(input, view, history, end.reason, end.message)],
      status,
      events: [{ ...event, message: end.message }],
      log: [{ ...log, fields: { reason: end.reason } }],
    };
  };
  const why = sessionEndedWhy(input.session);
  if (why !== undefined) {
    // The session that proposed the call is gone or over: nobody is waiting for this decision.
    const message = `AgentSession ${approval.spec.sessionRef.name} ${why}; the proposed call will not run.`;
    return endUndecided(
      { phase: ApprovalPhase.Cancelled, reason: ApprovalReason.SessionEnded, message },
      { type: "Normal", reason: ApprovalEventReason.Cancelled },
      { level: "info", message: "pending approval cancelled" },
    );
  }
  const impostor = requesterMismatch(approval, input.session);
  if (impostor !== undefined) {
    // Only the invoke path creates a Pending Approval, for the session's own subject: one naming
    // another requester was made by someone else (a compromised gateway's token, say) and never runs.
    return endUndecided(
      { phase: ApprovalPhase.Failed, reason: ApprovalReason.RequesterMismatch, message: impostor },
      { type: "Warning", reason: ApprovalReason.RequesterMismatch },
      { level: "warn", message: "approval of another requester failed" },
    );
  }

  const decision = planDecision({ approval: view, history, rules, nowMicros, policy: input.policy });
  noteRules(status, rules, generation, now);
  status.approvals = decision.evaluation.approvals;
  status.ignoredDecisions = decision.evaluation.ignored.map((i) => ({
    approver: i.approver,
    reason: i.reason,
  }));
  status.observedDecisions = observedDecisionsOf(
    approval,
    history,
    "recorded" in decision && decision.recorded,
  );
  const plan: ApprovalPlan = { ...emptyPlan(), audit: decision.entries, status };
  if (decision.phase === ApprovalPhase.Pending) {
    const required = decision.rules.requiredApprovals;
    const stricter = decision.rules.tightened.length > 0 ? ` (${decision.rules.tightened.join("; ")})` : "";
    const counted = `${decision.evaluation.approvals} of ${required} approvals${stricter}.`;
    setPhase(
      status,
      input,
      ApprovalPhase.Pending,
      rules.enforced ? ApprovalReason.AwaitingDecision : ApprovalReason.DecisionRulesNotEnforced,
      rules.enforced ? counted : `${counted} No decision counts until admission enforces the decision rules.`,
    );
    const untilExpiry = Math.max(1_000, Date.parse(decision.rules.expiresAt) - now.getTime());
    return {
      ...plan,
      requeueAfterMs: rules.enforced ? untilExpiry : Math.min(untilExpiry, RULES_RECHECK_MS),
    };
  }
  const settled = decision as Extract<typeof decision, { reason: string }>;
  setPhase(status, input, settled.phase, settled.phase, settled.message);
  const durationMs = sinceCreation(approval, now);
  const outcome = settled.phase;
  if (isDecidedPhase(outcome) && durationMs !== undefined) plan.decided = { outcome, durationMs };
  if (settled.phase === ApprovalPhase.Approved) {
    status.phase = ApprovalPhase.Executing;
    return { ...plan, dispatch: { session: input.session, rules, history } };
  }
  if (settled.phase === ApprovalPhase.Rejected || settled.phase === ApprovalPhase.Expired) {
    plan.events.push({
      type: settled.phase === ApprovalPhase.Rejected ? "Normal" : "Warning",
      reason: settled.phase,
      message: `${settled.message} The proposed call will not run.`,
    });
  }
  return { ...plan, recordOutcome: true };
}

/** The end of an approved call's dispatch that never started, when one is owed (see `undispatchedEnd`). */
function undispatched(
  input: ApprovalPlanInput,
  view: ApprovalView,
  history: ApprovalHistory,
  reason: string,
  message: string,
): AuditEntry[] {
  const entry = undispatchedEnd(
    view,
    history,
    input.execution !== undefined,
    input.now.getTime() * 1000,
    reason,
    message,
  );
  return entry ? [entry] : [];
}

/** An Approval being deleted: its end in the chain, then the finalizer goes. */
function planDeleted(input: ApprovalPlanInput): ApprovalPlan {
  const { approval, now } = input;
  if (!hasFinalizer(approval, APPROVAL_FINALIZER)) return emptyPlan();
  const { name } = approval.metadata;
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  const message = `Approval ${name} was deleted before ${phase === ApprovalPhase.Pending ? "it was decided" : "its call started"}; the proposed call will not run.`;
  const plan: ApprovalPlan = {
    ...emptyPlan(),
    finalizer: "remove",
    log: [
      { level: "info", fields: { phase }, message: "approval deleted; its lifecycle is in the audit chain" },
    ],
  };
  if (phase === ApprovalPhase.Pending) {
    const view = viewOf(approval);
    const history = need(input.history, "the audit history");
    const decision = planDecision({
      approval: view,
      history,
      rules: need(input.rules, "the decision-rules verdict"),
      nowMicros: now.getTime() * 1000,
      end: { phase: ApprovalPhase.Cancelled, reason: ApprovalReason.ApprovalDeleted, message },
    });
    return {
      ...plan,
      audit: [
        ...decision.entries,
        ...undispatched(input, view, history, ApprovalReason.ApprovalDeleted, message),
      ],
      status: {
        ...approval.status,
        phase: ApprovalPhase.Cancelled,
        observedDecisions: approval.spec.decisions.length,
        conditions: setCondition(
          approval.status?.conditions,
          {
            type: ApprovalCondition.Decided,
            status: "True",
            reason: ApprovalReason.ApprovalDeleted,
            message,
          },
          now,
        ),
      },
      events: [{ type: "Normal", reason: ApprovalEventReason.Cancelled, message }],
    };
  }
  // A decided one's decisions appended since and not yet reported go into the chain before it goes.
  const late = planLateDecisions(input, phase).audit;
  if (phase === ApprovalPhase.Approved || phase === ApprovalPhase.Executing) {
    const view = viewOf(approval);
    const history = need(input.history, "the audit history");
    return {
      ...plan,
      audit: [...late, ...undispatched(input, view, history, ApprovalReason.ApprovalDeleted, message)],
    };
  }
  return { ...plan, audit: late };
}

/**
 * A decided Approval: the decisions appended since it was decided change nothing; each is reported
 * once — counted in status.observedDecisions (and listed in ignoredDecisions), then an audit record
 * (approval.decision_ignored; the approver as written, which no admission checked) and a Warning Event.
 */
function planLateDecisions(input: ApprovalPlanInput, phase: ApprovalPhase): ApprovalPlan {
  const { approval, now } = input;
  const status = startStatus(input);
  const late = lateDecisionsOf(approval);
  const plan: ApprovalPlan = { ...emptyPlan(), auditWhen: "afterStatus", status };
  const observed = approval.status?.observedDecisions;
  if (observed !== undefined && observed > approval.spec.decisions.length) {
    plan.log.push({
      level: "warn",
      fields: { observedDecisions: observed, decisions: approval.spec.decisions.length },
      message: "spec.decisions is shorter than the decisions already observed: entries were removed",
    });
  }
  status.observedDecisions = approval.spec.decisions.length;
  if (late.length === 0) return plan;
  status.ignoredDecisions = [
    ...(status.ignoredDecisions ?? []),
    ...late.map((l) => ({
      approver: l.decision.approver,
      reason: `${l.decision.verdict} appended when the Approval was already ${phase}; changes nothing`,
    })),
  ].slice(-32);
  plan.log.push({
    level: "warn",
    fields: {
      phase,
      late: late.map((l) => ({ index: l.index, approver: l.decision.approver, verdict: l.decision.verdict })),
    },
    message: "decisions appended after the Approval was decided; ignoring them",
  });
  for (const l of late) {
    plan.audit.push({
      kind: AuditKind.decisionIgnored,
      actor: "gatehouse",
      outcome: "failure",
      sessionUid: approval.spec.sessionRef.uid,
      executionId: approval.spec.executionId,
      atMicros: now.getTime() * 1000,
      payload: {
        approval: `${approval.metadata.namespace}/${approval.metadata.name}`,
        index: l.index,
        approver: l.decision.approver,
        verdict: l.decision.verdict,
        phase,
      },
    });
    plan.events.push({
      type: "Warning",
      reason: ApprovalEventReason.DecisionIgnored,
      message: lateDecisionMessage(l, phase),
    });
  }
  return plan;
}
