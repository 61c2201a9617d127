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
import { isTerminalSessionPhase } from "../../api/agentsession.ts";
import type { Decision } from "../../api/approval.ts";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { APPROVAL_FINALIZER } from "../../api/well-known.ts";
import { type ApprovalHistory, planDecision, undispatchedEnd } from "../../core/approval-lifecycle.ts";
import { AuditKind } from "../../core/audit.ts";
import type { ExecuteApprovedResult } from "../../core/execute-approved.ts";
import type { ApprovalSettings } from "../../core/policy.ts";
import type {
  ApprovalPhase,
  ApprovalView,
  AuditEntry,
  DecisionRulesVerdict,
  ExecutionRecord,
} from "../../core/ports.ts";
import type { ResolutionEntry } from "../../core/resolution.ts";
import { isSettled } from "../../kube/approval-outcome.ts";
import { requestOf } from "../../kube/approvals.ts";
import { setCondition } from "../../kube/conditions.ts";
import { hasFinalizer } from "../../kube/finalizers.ts";
import { needsResolution, planResolution, unknownOutcomeMessage } from "./resolution.ts";

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
  decided?: { outcome: "Approved" | "Rejected" | "Expired"; durationMs: number } | undefined;
  /** Record the settled outcome in the session's transcript (kube/approval-outcome.ts). */
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
const FINALIZER_RECHECK_MS = 500;

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
    phase: approval.status?.phase ?? "Pending",
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
  const phase = approval.status?.phase ?? "Pending";
  const deleting = approval.metadata.deletionTimestamp !== undefined;
  // An execution of unknown outcome is planned from its row alone.
  if (!deleting && needsResolution(approval)) {
    return { rules: false, history: false, policy: false, execution: true };
  }
  const undecided = phase === "Pending" || phase === "Approved" || phase === "Executing";
  const ending = deleting || (phase === "Pending" && sessionEndedWhy(session) !== undefined);
  return {
    rules: undecided,
    history: phase === "Pending" || (deleting && undecided),
    policy: phase === "Pending" && !deleting,
    // An approved call whose Approval ends without a dispatch is ended only if it never started; an
    // Unknown one is where a resolution starts.
    execution: (ending && undecided) || phase === "Unknown",
  };
}

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`planApproval needs ${what} for this Approval (observationsFor)`);
  return value;
}

function emptyPlan(): ApprovalPlan {
  return { audit: [], auditWhen: "beforeStatus", events: [], recordOutcome: false, log: [] };
}

/** Creation → now in milliseconds, for the decision metric; undefined without a creation time. */
function sinceCreation(approval: Approval, now: Date): number | undefined {
  const created = Date.parse(String(approval.metadata.creationTimestamp ?? ""));
  return Number.isNaN(created) ? undefined : now.getTime() - created;
}

/** The condition saying whether admission is verified to enforce the decision rules. */
function rulesCondition(rules: DecisionRulesVerdict, generation: number | undefined) {
  return rules.enforced
    ? {
        type: "DecisionRulesEnforced",
        status: "True" as const,
        reason: "Enforced",
        message: "The API server enforces the decision rules as the chart renders them.",
        observedGeneration: generation,
      }
    : {
        type: "DecisionRulesEnforced",
        status: "False" as const,
        reason: "DecisionRulesNotEnforced",
        message: `No decision counts and nothing runs until admission enforces the decision rules: ${rules.message}.`,
        observedGeneration: generation,
      };
}

/** The status a pass starts from: the cached one, at this generation. */
function startStatus(input: ApprovalPlanInput): ApprovalStatus {
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
  const phase = approval.status?.phase ?? "Pending";
  if (approval.metadata.deletionTimestamp) return undefined;
  if (phase !== "Pending" && phase !== "Approved" && phase !== "Executing") return undefined;
  const database = "the operator's database (Postgres) does not answer";
  const message =
    phase === "Pending"
      ? `Decisions are recorded in the audit chain before they count, and ${database}: the decisions so far wait, and an approved call runs once it answers again.`
      : `The approved call waits: ${database}; it is dispatched once it answers again.`;
  return {
    ...approval.status,
    phase,
    conditions: setCondition(
      approval.status?.conditions,
      {
        type: "Executed",
        status: "False",
        reason: "DatabaseUnavailable",
        message,
        observedGeneration: approval.metadata.generation,
      },
      now,
    ),
  };
}

/** `status` without the condition {@link planDatabaseUnavailable} set: this pass read the database. */
function withoutDatabaseUnavailable(status: ApprovalStatus): ApprovalStatus {
  const conditions = status.conditions?.filter((c) => c.reason !== "DatabaseUnavailable");
  return conditions ? { ...status, conditions } : status;
}

/** Sets the phase and its Decided condition (False while Pending). */
function setPhase(
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
      type: "Decided",
      status: next === "Pending" ? "False" : "True",
      reason,
      message,
      observedGeneration: input.approval.metadata.generation,
    },
    input.now,
  );
}

/** Sets the DecisionRulesEnforced condition: shown once the rules were not enforced, then kept current. */
function noteRules(
  status: ApprovalStatus,
  rules: DecisionRulesVerdict,
  generation: number | undefined,
  now: Date,
) {
  if (!rules.enforced || status.conditions?.some((c) => c.type === "DecisionRulesEnforced")) {
    status.conditions = setCondition(status.conditions, rulesCondition(rules, generation), now);
  }
}

/** Plans one reconcile of `input.approval` (see the header). Pure; throws only when a needed read is missing. */
export function planApproval(input: ApprovalPlanInput): ApprovalPlan {
  const { approval } = input;
  if (approval.metadata.deletionTimestamp) return planDeleted(input);
  if (!hasFinalizer(approval, APPROVAL_FINALIZER)) {
    // Approvals created by an earlier version have no finalizer yet; the update queues it again.
    return { ...emptyPlan(), finalizer: "add", requeueAfterMs: FINALIZER_RECHECK_MS };
  }
  if (needsResolution(approval)) return planUnknown(input);
  const phase = approval.status?.phase ?? "Pending";
  if (phase === "Pending") return planPending(input);
  const reported = planLateDecisions(input, phase);
  if (phase === "Approved" || phase === "Executing") {
    const rules = need(input.rules, "the decision-rules verdict");
    const status: ApprovalStatus = { ...reported.status };
    noteRules(status, rules, approval.metadata.generation, input.now);
    // Written before the call: a crash between here and the receipt leaves a visible state that the
    // next reconcile resumes from. status.execution is only ever copied from the execution row.
    status.phase = "Executing";
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
  if (phase !== "Unknown" && phase !== approval.status?.phase && execution?.state !== "started") {
    const reason = resolution.status.conditions?.find((c) => c.type === "Executed")?.reason ?? String(phase);
    plan.events.push({
      type: "Normal",
      reason,
      message: `The outcome of execution ${approval.spec.executionId} is settled: ${phase}.`,
    });
    plan.recordOutcome = true;
    plan.log.push({ level: "info", fields: { phase, reason }, message: "unknown outcome settled" });
  }
  if (phase === "Unknown" && execution?.nextSettleMicros !== undefined) {
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
    end: { phase: "Cancelled" | "Failed"; reason: string; message: string },
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
      { phase: "Cancelled", reason: "SessionEnded", message },
      { type: "Normal", reason: "Cancelled" },
      { level: "info", message: "pending approval cancelled" },
    );
  }
  const impostor = requesterMismatch(approval, input.session);
  if (impostor !== undefined) {
    // Only the invoke path creates a Pending Approval, for the session's own subject: one naming
    // another requester was made by someone else (a compromised gateway's token, say) and never runs.
    return endUndecided(
      { phase: "Failed", reason: "RequesterMismatch", message: impostor },
      { type: "Warning", reason: "RequesterMismatch" },
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
  if (decision.phase === "Pending") {
    const required = decision.rules.requiredApprovals;
    const stricter = decision.rules.tightened.length > 0 ? ` (${decision.rules.tightened.join("; ")})` : "";
    const counted = `${decision.evaluation.approvals} of ${required} approvals${stricter}.`;
    setPhase(
      status,
      input,
      "Pending",
      rules.enforced ? "AwaitingDecision" : "DecisionRulesNotEnforced",
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
  if (
    (outcome === "Approved" || outcome === "Rejected" || outcome === "Expired") &&
    durationMs !== undefined
  ) {
    plan.decided = { outcome, durationMs };
  }
  if (settled.phase === "Approved") {
    status.phase = "Executing";
    return { ...plan, dispatch: { session: input.session, rules, history } };
  }
  if (settled.phase === "Rejected" || settled.phase === "Expired") {
    plan.events.push({
      type: settled.phase === "Rejected" ? "Normal" : "Warning",
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
  const phase = approval.status?.phase ?? "Pending";
  const message = `Approval ${name} was deleted before ${phase === "Pending" ? "it was decided" : "its call started"}; the proposed call will not run.`;
  const plan: ApprovalPlan = {
    ...emptyPlan(),
    finalizer: "remove",
    log: [
      { level: "info", fields: { phase }, message: "approval deleted; its lifecycle is in the audit chain" },
    ],
  };
  if (phase === "Pending") {
    const view = viewOf(approval);
    const history = need(input.history, "the audit history");
    const decision = planDecision({
      approval: view,
      history,
      rules: need(input.rules, "the decision-rules verdict"),
      nowMicros: now.getTime() * 1000,
      end: { phase: "Cancelled", reason: "ApprovalDeleted", message },
    });
    return {
      ...plan,
      audit: [...decision.entries, ...undispatched(input, view, history, "ApprovalDeleted", message)],
      status: {
        ...approval.status,
        phase: "Cancelled",
        observedDecisions: approval.spec.decisions.length,
        conditions: setCondition(
          approval.status?.conditions,
          { type: "Decided", status: "True", reason: "ApprovalDeleted", message },
          now,
        ),
      },
      events: [{ type: "Normal", reason: "Cancelled", message }],
    };
  }
  // A decided one's decisions appended since and not yet reported go into the chain before it goes.
  const late = planLateDecisions(input, phase).audit;
  if (phase === "Approved" || phase === "Executing") {
    const view = viewOf(approval);
    return {
      ...plan,
      audit: [
        ...late,
        ...undispatched(input, view, need(input.history, "the audit history"), "ApprovalDeleted", message),
      ],
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
    plan.events.push({ type: "Warning", reason: "DecisionIgnored", message: lateDecisionMessage(l, phase) });
  }
  return plan;
}

const PHASE_OF_STATE: Record<ExecutionRecord["state"], ApprovalPhase> = {
  started: "Executing",
  succeeded: "Succeeded",
  failed: "Failed",
  unknown: "Unknown",
};

function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** status.execution from an execution row. */
export function executionStatusOf(execution: ExecutionRecord): ApprovalStatus["execution"] {
  // For an unknown outcome Core's own message says what a human must check; the provider's says less.
  const summary =
    execution.state === "unknown"
      ? (execution.message ?? execution.receipt?.message)
      : (execution.receipt?.message ?? execution.message);
  return {
    id: execution.id,
    state: execution.state,
    ...(execution.errorKind && execution.state !== "succeeded" ? { errorKind: execution.errorKind } : {}),
    ...(summary ? { resultSummary: summary.slice(0, 4096) } : {}),
    startedAt: iso(execution.createdAtMicros),
    ...(execution.state !== "started" ? { finishedAt: iso(execution.updatedAtMicros) } : {}),
  };
}

/** What a dispatch's result leads to: the final status, Events, transcript and requeue. */
export interface DispatchOutcomePlan {
  status: ApprovalStatus;
  events: PlannedEvent[];
  recordOutcome: boolean;
  requeueAfterMs?: number | undefined;
  log: PlannedLog[];
}

/**
 * The second pure step of a dispatching pass: Core's `executeApproved` result on top of the status
 * written before the call. Executed → the execution row's state is the phase (Executing while it
 * runs); refused → the refusal's phase, with a Warning Event when that settles it; deferred → back to
 * Approved and looked at again soon.
 */
export function planDispatchOutcome(
  approval: Approval,
  status: ApprovalStatus,
  result: ExecuteApprovedResult,
  now: Date,
): DispatchOutcomePlan {
  const generation = approval.metadata.generation;
  const final: ApprovalStatus = { ...status };
  const events: PlannedEvent[] = [];
  let log: PlannedLog;
  if (result.kind === "executed") {
    final.execution = executionStatusOf(result.execution);
    const next = PHASE_OF_STATE[result.execution.state];
    final.phase = next;
    final.conditions = setCondition(
      final.conditions,
      {
        type: "Executed",
        status: next === "Executing" ? "False" : "True",
        reason: next,
        message:
          next === "Unknown"
            ? unknownOutcomeMessage(approval, final.execution?.resultSummary)
            : (final.execution?.resultSummary ?? next),
        observedGeneration: generation,
      },
      now,
    );
    log = {
      level: "info",
      fields: { executionId: result.execution.id, state: result.execution.state },
      message: "approval dispatched",
    };
  } else {
    final.phase = result.phase;
    final.conditions = setCondition(
      final.conditions,
      {
        type: "Executed",
        status: "False",
        reason: result.reason,
        message: result.message,
        observedGeneration: generation,
      },
      now,
    );
    log = {
      level: "info",
      fields: { phase: result.phase, reason: result.reason },
      message: `approval ${result.kind} at dispatch`,
    };
  }
  const settled = isSettled({ ...approval, status: final });
  if (result.kind === "refused" && settled) {
    // A deferral retries by itself; a refusal that settles it (Stale, Expired, Cancelled…) needs a human.
    events.push({
      type: "Warning",
      reason: result.reason,
      message: dispatchRefusedMessage(result.phase, result.message),
    });
  }
  const again = final.phase === "Executing" || result.kind === "deferred";
  return {
    status: final,
    events,
    recordOutcome: settled,
    ...(again ? { requeueAfterMs: DISPATCH_RECHECK_MS } : {}),
    log: [log],
  };
}
