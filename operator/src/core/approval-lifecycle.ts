/**
 * An Approval's lifecycle in the audit chain (DESIGN §6 "Approval lifecycle"): who decided what, and
 * how it ended, provable from the chain after the Approval and its session are gone.
 *
 *   approval.requested                 ; invoke (core/invoke.ts)
 *   approval.decided × each decision   ; as the operator observes them, in index order
 *   one end                            ; approval.approved | rejected | expired | cancelled | failed
 *   then, when approved, the dispatch  ; execution.started (naming the approved record's seq and hash)
 *                                      ;   or a refusal for good: approval.stale | expired | cancelled | failed
 *                                      ;   (failed, RequestNotRecorded, without the approval.requested)
 *
 * Every step reads the Approval's records first (`AuditLog.recordsOf`), so each is appended once
 * however often a reconcile repeats, and the chain, not the Approval's status, is what counts: a
 * decision first observed while admission did not enforce the decision rules is recorded as not
 * counted and never counts afterwards. The judgement is pure ({@link planDecision}: the Approval,
 * its history, the rules verdict, the time and the Capability's current policy in; the records to
 * append and the outcome out); the approval reconciler's planner calls it, and `decideApproval` /
 * `endApproval` are its thin wrappers over the chain.
 */

import { ApprovalPhase, ApprovalReason, type UndecidedEndPhase } from "../api/status/approval.ts";
import {
  countedDecisions,
  decisionEntries,
  endEntry,
  lifecycleEntry,
  lifecycleEntryAt,
} from "./approval-entries.ts";
import {
  type ApprovalHistory,
  evaluateRecorded,
  historyWith,
  phaseOfEnd,
  readHistory,
  recordRef,
} from "./approval-history.ts";
import { type ApprovalRules, approvalRulesOf } from "./approval-rules.ts";
import type { ApprovalEvaluation } from "./approvals.ts";
import { AuditKind } from "./audit.ts";
import type { ApprovalSettings } from "./policy.ts";
import type {
  AppendedRecord,
  ApprovalView,
  AuditEntry,
  ChainedRecord,
  CoreDeps,
  DecisionRulesVerdict,
} from "./ports.ts";

export { lifecycleEntry, lifecycleEntryAt } from "./approval-entries.ts";

type Pending = typeof ApprovalPhase.Pending;

export {
  type ApprovalHistory,
  approvalKeyOf,
  END_KIND_OF_PHASE,
  END_KINDS,
  evaluateRecorded,
  historyOf,
  historyWith,
  isRequestOf,
  phaseOfEnd,
  type RecordedDecision,
  readHistory,
  recordRef,
  unenforcedReason,
} from "./approval-history.ts";

/** Input of {@link planDecision}. */
export interface DecisionInput {
  approval: ApprovalView;
  /** What the chain holds of it (`readHistory`), read for this decision. */
  history: ApprovalHistory;
  rules: DecisionRulesVerdict;
  nowMicros: number;
  /** The Capability's current approval settings for the requester; absent → the spec's rules alone. */
  policy?: ApprovalSettings | undefined;
  /** End it without a decision (its session ended, it was deleted, it conflicts). */
  end?: { phase: UndecidedEndPhase; reason: string; message: string } | undefined;
}

/**
 * What {@link planDecision} found: still Pending, or settled. `entries` are to be appended together
 * (`AuditLog.appendAll`, one transaction) before anything shows the phase; `recorded` says the end
 * was already in the chain (a crash after the append, before the status write): nothing is appended.
 */
export type DecisionPlan =
  | { phase: Pending; evaluation: ApprovalEvaluation; rules: ApprovalRules; entries: AuditEntry[] }
  | {
      phase: ApprovalPhase;
      evaluation: ApprovalEvaluation;
      rules: ApprovalRules;
      reason: string;
      message: string;
      entries: AuditEntry[];
      recorded: boolean;
    };

/**
 * Observes an Approval's decisions and settles it, as records to append. Pure. An `approval.decided`
 * entry for each decision the history does not hold yet (in index order), then — when the decisions
 * (or the clock, or `end`) settle it — its end: Rejected, Approved, Expired, or `end`'s phase. While
 * the rules are not enforced no decision counts: new ones are recorded as never counting and only
 * expiry (or `end`) can end it. The decisions count under the stricter of the spec and the current
 * policy (core/approval-rules.ts). When the chain already ends it, that end is the result and nothing
 * is appended.
 */
export function planDecision(input: DecisionInput): DecisionPlan {
  const { approval, history, nowMicros } = input;
  const rules = approvalRulesOf(approval.request, input.policy, approval.createdAtMicros);
  if (history.end) {
    return {
      phase: phaseOfEnd(history.end),
      evaluation: evaluateRecorded(approval, history, rules),
      rules,
      reason: String(history.end.payload.reason ?? phaseOfEnd(history.end)),
      message: String(history.end.payload.message ?? ""),
      entries: [],
      recorded: true,
    };
  }
  const working: ApprovalHistory = { ...history, decided: new Map(history.decided) };
  const { entries, evaluation } = decisionEntries(nowMicros, approval, working, input.rules, rules);
  const settle = (phase: ApprovalPhase, reason: string, message: string): DecisionPlan => ({
    phase,
    evaluation,
    rules,
    reason,
    message,
    entries: [...entries, endEntry(nowMicros, approval, evaluation, rules, phase, reason, message)],
    recorded: false,
  });
  if (input.end) return settle(input.end.phase, input.end.reason, input.end.message);
  if (input.rules.enforced && evaluation.outcome === ApprovalPhase.Rejected) {
    return settle(ApprovalPhase.Rejected, ApprovalReason.Rejected, `Rejected by ${evaluation.rejectedBy}.`);
  }
  if (input.rules.enforced && evaluation.outcome === ApprovalPhase.Approved) {
    const by = evaluation.approvedBy.join(", ");
    return settle(ApprovalPhase.Approved, ApprovalReason.Approved, `Approved by ${by}.`);
  }
  if (Date.parse(rules.expiresAt) * 1000 <= nowMicros) {
    return settle(ApprovalPhase.Expired, ApprovalReason.Expired, `No decision before ${rules.expiresAt}.`);
  }
  return { phase: ApprovalPhase.Pending, evaluation, rules, entries };
}

/** An Approval whose end is in the chain: its phase, the record and its message. */
export interface SettledApproval {
  phase: ApprovalPhase;
  evaluation: ApprovalEvaluation;
  end: AppendedRecord;
  message: string;
  /** The history with this end in it, for a dispatch in the same reconcile (no second read). */
  history: ApprovalHistory;
}

/** What {@link decideApproval} found: still Pending, or settled. */
export type ApprovalDecisionResult =
  | { phase: Pending; evaluation: ApprovalEvaluation; rules: DecisionRulesVerdict }
  | SettledApproval;

/** Input of {@link decideApproval}. */
export interface DecideApprovalInput {
  approval: ApprovalView;
  /** The verdict, or a check still running (read beside the chain, not after it). */
  rules: DecisionRulesVerdict | Promise<DecisionRulesVerdict>;
  /** The Capability's current approval settings for the requester (see {@link DecisionInput}). */
  policy?: ApprovalSettings | undefined;
}

/**
 * {@link planDecision} over the chain: reads the history, appends what the plan says (decisions and
 * end in one transaction) and returns the outcome. Errors: the audit log's; the caller retries
 * (appends are keyed by what the chain holds).
 */
export async function decideApproval(
  deps: CoreDeps,
  input: DecideApprovalInput,
): Promise<ApprovalDecisionResult> {
  const [history, rules] = await Promise.all([readHistory(deps, input.approval), input.rules]);
  const plan = planDecision({
    approval: input.approval,
    history,
    rules,
    nowMicros: deps.clock.nowMicros(),
    policy: input.policy,
  });
  const appended = plan.entries.length > 0 ? await deps.audit.appendAll(plan.entries) : [];
  if (plan.phase === ApprovalPhase.Pending) {
    return { phase: ApprovalPhase.Pending, evaluation: plan.evaluation, rules };
  }
  return settledOf(input.approval, history, plan, appended);
}

/** The settled result of a plan after its entries were appended (`appended`, same order). */
function settledOf(
  approval: ApprovalView,
  history: ApprovalHistory,
  plan: DecisionPlan,
  appended: readonly AppendedRecord[],
): SettledApproval {
  const after = historyWith(history, approval, plan.entries, appended);
  const end = after.end as ChainedRecord;
  return {
    phase: plan.phase,
    evaluation: plan.evaluation,
    end: { seq: end.seq, hash: end.hash },
    message: plan.phase === ApprovalPhase.Pending ? "" : plan.message,
    history: after,
  };
}

/** Input of {@link endApproval}. */
export interface EndApprovalInput {
  approval: ApprovalView;
  rules: DecisionRulesVerdict;
  phase: UndecidedEndPhase;
  reason: string;
  message: string;
}

/**
 * Ends an Approval that will not be decided — its session ended, the Approval was deleted while
 * Pending, or it conflicts with the call — after recording the decisions it holds. Returns the end
 * record (the existing one when the chain already has an end; when that end is an approval whose
 * dispatch never started, the dispatch is ended instead). Errors: the audit log's.
 */
export async function endApproval(deps: CoreDeps, input: EndApprovalInput): Promise<AppendedRecord> {
  const history = await readHistory(deps, input.approval);
  if (history.end) {
    // Approved in the chain, but the status never said so (a crash between the two): its dispatch ends here.
    if (history.end.kind === AuditKind.approvalApproved) {
      await endUndispatched(deps, input.approval, input.reason, input.message);
    }
    return { seq: history.end.seq, hash: history.end.hash };
  }
  const plan = planDecision({
    approval: input.approval,
    history,
    rules: input.rules,
    nowMicros: deps.clock.nowMicros(),
    end: { phase: input.phase, reason: input.reason, message: input.message },
  });
  return settledOf(input.approval, history, plan, await deps.audit.appendAll(plan.entries)).end;
}

/**
 * The `approval.approved` record of an Approval an earlier version approved without one, appended
 * before its dispatch (marked `backfilled`). Errors: the audit log's.
 */
export async function backfillApproved(
  deps: CoreDeps,
  approval: ApprovalView,
  evaluation: ApprovalEvaluation,
): Promise<AppendedRecord> {
  return deps.audit.append(
    lifecycleEntry(deps, approval, AuditKind.approvalApproved, "gatehouse", "success", {
      phase: ApprovalPhase.Approved,
      reason: ApprovalReason.Approved,
      message: `Approved by ${evaluation.approvedBy.join(", ")}.`,
      decisions: countedDecisions(approval, evaluation),
      approvedBy: evaluation.approvedBy,
      requiredApprovals: approval.request.requiredApprovals,
      backfilled: true,
    }),
  );
}

/**
 * The end of the dispatch of an approved call that never started (its Approval is going away):
 * `approval.cancelled` citing the approval record — none when the chain has no approval record,
 * already ends its dispatch, or an execution row exists (`executionExists`: that execution's own
 * records are its end). Pure.
 */
export function undispatchedEnd(
  approval: ApprovalView,
  history: ApprovalHistory,
  executionExists: boolean,
  atMicros: number,
  reason: string,
  message: string,
): AuditEntry | undefined {
  if (history.end?.kind !== AuditKind.approvalApproved || history.dispatchEnd || executionExists)
    return undefined;
  return lifecycleEntryAt(atMicros, approval, AuditKind.approvalCancelled, "gatehouse", "failure", {
    phase: ApprovalPhase.Cancelled,
    reason,
    message,
    atDispatch: true,
    approvalRecord: recordRef(history.end),
  });
}

/**
 * {@link undispatchedEnd} over the chain and the execution store: reads both, appends the end if
 * one is owed. Errors: the audit log's and the execution store's.
 */
export async function endUndispatched(
  deps: CoreDeps,
  approval: ApprovalView,
  reason: string,
  message: string,
): Promise<void> {
  const history = await readHistory(deps, approval);
  if (history.end?.kind !== AuditKind.approvalApproved || history.dispatchEnd) return;
  const exists = (await deps.executions.get(approval.request.executionId)) !== undefined;
  const entry = undispatchedEnd(approval, history, exists, deps.clock.nowMicros(), reason, message);
  if (entry) await deps.audit.append(entry);
}
