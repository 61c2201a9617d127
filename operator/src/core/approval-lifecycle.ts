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
import { type ApprovalRules, approvalRulesOf } from "./approval-rules.ts";
import { type ApprovalEvaluation, evaluateApproval } from "./approvals.ts";
import { AuditKind } from "./audit.ts";
import type { JsonObject } from "./canonical.ts";
import type { ApprovalSettings } from "./policy.ts";
import type {
  AppendedRecord,
  ApprovalPhase,
  ApprovalView,
  AuditEntry,
  ChainedRecord,
  CoreDeps,
  DecisionRulesVerdict,
} from "./ports.ts";

/** The kind of the record that ends an Approval in `phase`, for the phases that end one. */
export const END_KIND_OF_PHASE: Partial<Record<ApprovalPhase, string>> = {
  Approved: AuditKind.approvalApproved,
  Rejected: AuditKind.approvalRejected,
  Expired: AuditKind.approvalExpired,
  Cancelled: AuditKind.approvalCancelled,
  Stale: AuditKind.approvalStale,
  Failed: AuditKind.approvalFailed,
};

const PHASE_OF_END_KIND = new Map<string, ApprovalPhase>(
  Object.entries(END_KIND_OF_PHASE).map(([phase, kind]) => [kind as string, phase as ApprovalPhase]),
);

/** Kinds that end an Approval (its decision, or its dispatch after approval). */
export const END_KINDS: ReadonlySet<string> = new Set(PHASE_OF_END_KIND.keys());

/** A decision as its `approval.decided` record has it. */
export interface RecordedDecision {
  index: number;
  approver: string;
  verdict: string;
  counted: boolean;
  rulesEnforced: boolean;
}

/** What the chain says of one Approval so far. */
export interface ApprovalHistory {
  /** Its `approval.decided` records by decision index. */
  decided: Map<number, RecordedDecision>;
  /** The record that ended its decision (approved, rejected, …), if any. */
  end?: ChainedRecord;
  /** After approval: the record that refused its dispatch for good, if any. */
  dispatchEnd?: ChainedRecord;
  /** The `approval.requested` the tool call appended for it ({@link isRequestOf}), if the chain holds one. */
  requested?: ChainedRecord;
}

/** A reference to a record by position and hash, as later records cite it. */
export function recordRef(record: AppendedRecord): JsonObject {
  return { seq: record.seq, hash: record.hash };
}

/**
 * The history of Approval `approval` ("namespace/name") from the records of its execution id. Pure.
 * Records naming another Approval (squatted under the same name), or another object of the same name
 * (`uid`: an Approval deleted and re-created), are not its own.
 */
export function historyOf(
  records: readonly ChainedRecord[],
  approval: string,
  uid?: string | undefined,
): ApprovalHistory {
  const history: ApprovalHistory = { decided: new Map() };
  for (const record of records) addToHistory(history, record, approval, uid);
  return history;
}

/** Adds one chained record to `history`, as {@link historyOf} reads it. */
function addToHistory(
  history: ApprovalHistory,
  record: ChainedRecord,
  approval: string,
  uid: string | undefined,
): void {
  if (record.payload.approval !== approval) return;
  const recordUid = record.payload.approvalUid;
  if (uid !== undefined && recordUid !== undefined && recordUid !== uid) return;
  if (record.kind === AuditKind.approvalDecided) {
    const p = record.payload;
    const index = Number(p.index);
    if (!history.decided.has(index)) {
      history.decided.set(index, {
        index,
        approver: String(p.approver),
        verdict: String(p.verdict),
        counted: p.counted === true,
        rulesEnforced: p.rulesEnforced === true,
      });
    }
  } else if (END_KINDS.has(record.kind)) {
    if (!history.end) history.end = record;
    else if (history.end.kind === AuditKind.approvalApproved && !history.dispatchEnd)
      history.dispatchEnd = record;
  }
}

/**
 * `history` with `entries` added where `appendAll` placed them (`appended`, same order), so a
 * dispatch in the same reconcile sees the end just recorded without reading the chain again. Pure.
 */
export function historyWith(
  history: ApprovalHistory,
  approval: ApprovalView,
  entries: readonly AuditEntry[],
  appended: readonly AppendedRecord[],
): ApprovalHistory {
  const next: ApprovalHistory = { ...history, decided: new Map(history.decided) };
  entries.forEach((entry, i) => {
    const at = appended[i];
    if (at) addToHistory(next, { ...entry, ...at }, approvalKeyOf(approval), approval.uid);
  });
  return next;
}

/** The phase an end record settles, e.g. Approved for approval.approved. */
export function phaseOfEnd(record: ChainedRecord): ApprovalPhase {
  return PHASE_OF_END_KIND.get(record.kind) ?? "Failed";
}

/** Why a decision first observed while the rules were not enforced never counts. */
export function unenforcedReason(message: string): string {
  return `observed while admission did not enforce the decision rules (${message}); it never counts`;
}

/**
 * Evaluates the decisions by the rules of `core/approvals.ts` under `rules` (default: the spec's
 * alone; core/approval-rules.ts), except that a decision the chain recorded as observed while the
 * rules were not enforced is ignored. Pure.
 */
export function evaluateRecorded(
  approval: ApprovalView,
  history: ApprovalHistory,
  rules: ApprovalRules = approvalRulesOf(approval.request),
): ApprovalEvaluation {
  const excluded = new Map<number, string>();
  for (const recorded of history.decided.values()) {
    if (!recorded.rulesEnforced)
      excluded.set(recorded.index, "observed while admission did not enforce the decision rules");
  }
  return evaluateApproval({
    decisions: approval.decisions,
    approvers: rules.approvers,
    ...(rules.policyApprovers ? { policyApprovers: rules.policyApprovers } : {}),
    requiredApprovals: rules.requiredApprovals,
    allowSelfApproval: rules.allowSelfApproval,
    requester: approval.request.requester,
    excluded,
  });
}

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
  end?: { phase: "Cancelled" | "Failed"; reason: string; message: string } | undefined;
}

/**
 * What {@link planDecision} found: still Pending, or settled. `entries` are to be appended together
 * (`AuditLog.appendAll`, one transaction) before anything shows the phase; `recorded` says the end
 * was already in the chain (a crash after the append, before the status write): nothing is appended.
 */
export type DecisionPlan =
  | { phase: "Pending"; evaluation: ApprovalEvaluation; rules: ApprovalRules; entries: AuditEntry[] }
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
  if (input.rules.enforced && evaluation.outcome === "Rejected") {
    return settle("Rejected", "Rejected", `Rejected by ${evaluation.rejectedBy}.`);
  }
  if (input.rules.enforced && evaluation.outcome === "Approved") {
    return settle("Approved", "Approved", `Approved by ${evaluation.approvedBy.join(", ")}.`);
  }
  if (Date.parse(rules.expiresAt) * 1000 <= nowMicros) {
    return settle("Expired", "Expired", `No decision before ${rules.expiresAt}.`);
  }
  return { phase: "Pending", evaluation, rules, entries };
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
  | { phase: "Pending"; evaluation: ApprovalEvaluation; rules: DecisionRulesVerdict }
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
  if (plan.phase === "Pending") return { phase: "Pending", evaluation: plan.evaluation, rules };
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
    message: plan.phase === "Pending" ? "" : plan.message,
    history: after,
  };
}

/** Input of {@link endApproval}. */
export interface EndApprovalInput {
  approval: ApprovalView;
  rules: DecisionRulesVerdict;
  phase: "Cancelled" | "Failed";
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

/** The Approval's history as the chain holds it now, with the request it was created for. */
export async function readHistory(deps: CoreDeps, approval: ApprovalView): Promise<ApprovalHistory> {
  const records = await deps.audit.recordsOf(approval.request.executionId);
  const history = historyOf(records, approvalKeyOf(approval), approval.uid);
  const requested = records.find((record) => isRequestOf(record, approval));
  return requested ? { ...history, requested } : history;
}

/**
 * Whether `record` is the `approval.requested` a tool call appended for `approval` (core/invoke.ts):
 * of its execution and session, naming it (the bare name, as invoke records it, or `namespace/name`),
 * for the capability and arguments digest its spec holds, and — when both know it — for this object
 * (`approvalUid`). An Approval made any other way has none, however it got its spec. Pure.
 */
export function isRequestOf(record: AuditEntry, approval: ApprovalView): boolean {
  const request = approval.request;
  const payload = record.payload;
  return (
    record.kind === AuditKind.approvalRequested &&
    record.executionId === request.executionId &&
    record.sessionUid === request.sessionRef.uid &&
    (payload.approval === request.name || payload.approval === approvalKeyOf(approval)) &&
    payload.session === `${request.namespace}/${request.sessionRef.name}` &&
    payload.capability === request.capabilityId &&
    payload.argumentsDigest === request.argumentsDigest &&
    (approval.uid === undefined || payload.approvalUid === undefined || payload.approvalUid === approval.uid)
  );
}

/** "namespace/name" of the Approval, as its records name it. */
export function approvalKeyOf(approval: ApprovalView): string {
  return `${approval.request.namespace}/${approval.request.name}`;
}

/** The entry of a lifecycle record of `approval`, at `atMicros`. Pure. */
export function lifecycleEntryAt(
  atMicros: number,
  approval: ApprovalView,
  kind: string,
  actor: string,
  outcome: "success" | "failure",
  payload: JsonObject,
): AuditEntry {
  return {
    kind,
    // The actor column is text, which cannot hold U+0000; an approver name written while admission
    // was off may contain it. The payload keeps the name exactly (canonical JSON escapes it).
    actor: actor.replaceAll("\u0000", "\uFFFD"),
    outcome,
    sessionUid: approval.request.sessionRef.uid,
    executionId: approval.request.executionId,
    atMicros,
    payload: {
      approval: approvalKeyOf(approval),
      ...(approval.uid !== undefined ? { approvalUid: approval.uid } : {}),
      ...payload,
    },
  };
}

/** The entry of a lifecycle record of `approval`, now. */
export function lifecycleEntry(
  deps: CoreDeps,
  approval: ApprovalView,
  kind: string,
  actor: string,
  outcome: "success" | "failure",
  payload: JsonObject,
): AuditEntry {
  return lifecycleEntryAt(deps.clock.nowMicros(), approval, kind, actor, outcome, payload);
}

/** The decisions that counted toward `evaluation`'s outcome, for an end record. */
function countedDecisions(approval: ApprovalView, evaluation: ApprovalEvaluation): JsonObject[] {
  const ignored = new Set(evaluation.ignored.map((i) => i.index));
  return approval.decisions.flatMap((d, index) =>
    ignored.has(index) ? [] : [{ index, approver: d.approver, verdict: d.verdict }],
  );
}

/**
 * The `approval.decided` entries for each decision the history does not hold yet, in index order
 * (added to `history`), and the evaluation they amount to. While the rules are not enforced the new
 * ones are recorded as never counting, and the evaluation takes that into account.
 */
function decisionEntries(
  atMicros: number,
  approval: ApprovalView,
  history: ApprovalHistory,
  verdict: DecisionRulesVerdict,
  rules: ApprovalRules,
): { entries: AuditEntry[]; evaluation: ApprovalEvaluation } {
  // Judged before the new decisions join the history: a decision observed while enforced counts by
  // the evaluation; one observed while not enforced is marked so and never counts.
  const before = verdict.enforced ? evaluateRecorded(approval, history, rules) : undefined;
  const ignored = new Map(before?.ignored.map((i) => [i.index, i.reason]));
  const entries: AuditEntry[] = [];
  for (const [index, decision] of approval.decisions.entries()) {
    if (history.decided.has(index)) continue;
    const why = verdict.enforced ? ignored.get(index) : unenforcedReason(verdict.message);
    const recorded = {
      index,
      approver: decision.approver,
      verdict: decision.verdict,
      counted: why === undefined,
      rulesEnforced: verdict.enforced,
    };
    entries.push(
      lifecycleEntryAt(
        atMicros,
        approval,
        AuditKind.approvalDecided,
        decision.approver,
        why ? "failure" : "success",
        {
          ...recorded,
          ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
          ...(why !== undefined ? { ignoredReason: why } : {}),
        },
      ),
    );
    history.decided.set(index, recorded);
  }
  return { entries, evaluation: before ?? evaluateRecorded(approval, history, rules) };
}

/** The end record of `phase`, naming the decisions that counted and the rules they counted under. */
function endEntry(
  atMicros: number,
  approval: ApprovalView,
  evaluation: ApprovalEvaluation,
  rules: ApprovalRules,
  phase: ApprovalPhase,
  reason: string,
  message: string,
): AuditEntry {
  return lifecycleEntryAt(
    atMicros,
    approval,
    END_KIND_OF_PHASE[phase] ?? AuditKind.approvalFailed,
    "gatehouse",
    phase === "Approved" ? "success" : "failure",
    {
      phase,
      reason,
      message,
      decisions: countedDecisions(approval, evaluation),
      ...(phase === "Approved" ? { approvedBy: evaluation.approvedBy } : {}),
      ...(evaluation.rejectedBy !== undefined ? { rejectedBy: evaluation.rejectedBy } : {}),
      requiredApprovals: rules.requiredApprovals,
      ...(rules.tightened.length > 0 ? { policyTightened: rules.tightened } : {}),
    },
  );
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
      phase: "Approved",
      reason: "Approved",
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
    phase: "Cancelled",
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
