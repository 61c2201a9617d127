/**
 * An Approval's lifecycle in the audit chain (DESIGN §6 "Approval lifecycle"): who decided what, and
 * how it ended, provable from the chain after the Approval and its session are gone.
 *
 *   approval.requested                 ; invoke (core/invoke.ts)
 *   approval.decided × each decision   ; as the operator observes them, in index order
 *   one end                            ; approval.approved | rejected | expired | cancelled | failed
 *   then, when approved, the dispatch  ; execution.started (naming the approved record's seq and hash)
 *                                      ;   or a refusal for good: approval.stale | expired | cancelled | failed
 *
 * Every step reads the Approval's records first (`AuditLog.recordsOf`), so each is appended once
 * however often a reconcile repeats, and the chain, not the Approval's status, is what counts: a
 * decision first observed while admission did not enforce the decision rules is recorded as not
 * counted and never counts afterwards.
 */
import { type ApprovalEvaluation, evaluateApproval } from "./approvals.ts";
import { AuditKind } from "./audit.ts";
import type { JsonObject } from "./canonical.ts";
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
  for (const record of records) {
    if (record.payload.approval !== approval) continue;
    const recordUid = record.payload.approvalUid;
    if (uid !== undefined && recordUid !== undefined && recordUid !== uid) continue;
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
  return history;
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
 * Evaluates the decisions by the rules of `core/approvals.ts`, except that a decision the chain
 * recorded as observed while the rules were not enforced is ignored. Pure.
 */
export function evaluateRecorded(approval: ApprovalView, history: ApprovalHistory): ApprovalEvaluation {
  const excluded = new Map<number, string>();
  for (const recorded of history.decided.values()) {
    if (!recorded.rulesEnforced)
      excluded.set(recorded.index, "observed while admission did not enforce the decision rules");
  }
  const request = approval.request;
  return evaluateApproval({
    decisions: approval.decisions,
    approvers: request.approvers,
    requiredApprovals: request.requiredApprovals,
    allowSelfApproval: request.allowSelfApproval,
    requester: request.requester,
    excluded,
  });
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
}

/**
 * Observes a Pending Approval's decisions and settles it: appends `approval.decided` for each
 * decision not yet recorded, then the end when the decisions (or the clock) settle it — Approved,
 * Rejected or Expired. While the rules are not enforced no decision counts: new ones are recorded as
 * never counting and only expiry can end the Approval. When the chain already holds its end (a crash
 * after the append, before the status write), that end is returned and nothing is appended.
 * Errors: the audit log's; the caller retries (appends are keyed by what the chain holds).
 */
export async function decideApproval(
  deps: CoreDeps,
  input: DecideApprovalInput,
): Promise<ApprovalDecisionResult> {
  const { approval } = input;
  const [history, rules] = await Promise.all([readHistory(deps, approval), input.rules]);
  if (history.end) {
    return {
      phase: phaseOfEnd(history.end),
      evaluation: evaluateRecorded(approval, history),
      end: history.end,
      message: String(history.end.payload.message ?? ""),
      history,
    };
  }
  const { entries, evaluation } = decisionEntries(deps, approval, history, rules);
  const request = approval.request;
  const expired = Date.parse(request.expiresAt) * 1000 <= deps.clock.nowMicros();
  const settle = (phase: ApprovalPhase, message: string) =>
    settled(deps, approval, history, entries, evaluation, phase, phase, message);
  if (rules.enforced && evaluation.outcome === "Rejected") {
    return settle("Rejected", `Rejected by ${evaluation.rejectedBy}.`);
  }
  if (rules.enforced && evaluation.outcome === "Approved") {
    return settle("Approved", `Approved by ${evaluation.approvedBy.join(", ")}.`);
  }
  if (expired) return settle("Expired", `No decision before ${request.expiresAt}.`);
  if (entries.length > 0) await deps.audit.appendAll(entries);
  return { phase: "Pending", evaluation, rules };
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
  const { entries, evaluation } = decisionEntries(deps, input.approval, history, input.rules);
  const result = await settled(
    deps,
    input.approval,
    history,
    entries,
    evaluation,
    input.phase,
    input.reason,
    input.message,
  );
  return result.end;
}

/** The Approval's history as the chain holds it now. */
export async function readHistory(deps: CoreDeps, approval: ApprovalView): Promise<ApprovalHistory> {
  const request = approval.request;
  return historyOf(await deps.audit.recordsOf(request.executionId), approvalKeyOf(approval), approval.uid);
}

/** "namespace/name" of the Approval, as its records name it. */
export function approvalKeyOf(approval: ApprovalView): string {
  return `${approval.request.namespace}/${approval.request.name}`;
}

/** The entry of a lifecycle record of `approval`. */
export function lifecycleEntry(
  deps: CoreDeps,
  approval: ApprovalView,
  kind: string,
  actor: string,
  outcome: "success" | "failure",
  payload: JsonObject,
) {
  return {
    kind,
    // The actor column is text, which cannot hold U+0000; an approver name written while admission
    // was off may contain it. The payload keeps the name exactly (canonical JSON escapes it).
    actor: actor.replaceAll("\u0000", "\uFFFD"),
    outcome,
    sessionUid: approval.request.sessionRef.uid,
    executionId: approval.request.executionId,
    atMicros: deps.clock.nowMicros(),
    payload: {
      approval: approvalKeyOf(approval),
      ...(approval.uid !== undefined ? { approvalUid: approval.uid } : {}),
      ...payload,
    },
  };
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
  deps: CoreDeps,
  approval: ApprovalView,
  history: ApprovalHistory,
  rules: DecisionRulesVerdict,
): { entries: AuditEntry[]; evaluation: ApprovalEvaluation } {
  // Judged before the new decisions join the history: a decision observed while enforced counts by
  // the evaluation; one observed while not enforced is marked so and never counts.
  const before = rules.enforced ? evaluateRecorded(approval, history) : undefined;
  const ignored = new Map(before?.ignored.map((i) => [i.index, i.reason]));
  const entries: AuditEntry[] = [];
  for (const [index, decision] of approval.decisions.entries()) {
    if (history.decided.has(index)) continue;
    const why = rules.enforced ? ignored.get(index) : unenforcedReason(rules.message);
    const recorded = {
      index,
      approver: decision.approver,
      verdict: decision.verdict,
      counted: why === undefined,
      rulesEnforced: rules.enforced,
    };
    entries.push(
      lifecycleEntry(
        deps,
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
  return { entries, evaluation: before ?? evaluateRecorded(approval, history) };
}

/** Appends `decided` and then the end record of `phase` in one transaction; returns the result. */
async function settled(
  deps: CoreDeps,
  approval: ApprovalView,
  history: ApprovalHistory,
  decided: AuditEntry[],
  evaluation: ApprovalEvaluation,
  phase: ApprovalPhase,
  reason: string,
  message: string,
): Promise<SettledApproval> {
  const kind = END_KIND_OF_PHASE[phase] ?? AuditKind.approvalFailed;
  const endEntry = lifecycleEntry(
    deps,
    approval,
    kind,
    "gatehouse",
    phase === "Approved" ? "success" : "failure",
    {
      phase,
      reason,
      message,
      decisions: countedDecisions(approval, evaluation),
      ...(phase === "Approved" ? { approvedBy: evaluation.approvedBy } : {}),
      ...(evaluation.rejectedBy !== undefined ? { rejectedBy: evaluation.rejectedBy } : {}),
      requiredApprovals: approval.request.requiredApprovals,
    },
  );
  const appended = await deps.audit.appendAll([...decided, endEntry]);
  const end = appended[appended.length - 1] as AppendedRecord;
  history.end = { ...endEntry, ...end };
  return { phase, evaluation, end, message, history };
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
 * Ends the dispatch of an approved call that never started (its Approval is going away): appends
 * `approval.cancelled` citing the approval record, unless the chain has no approval record, already
 * ends its dispatch, or an execution row exists (that execution's own records are its end).
 * Errors: the audit log's and the execution store's.
 */
export async function endUndispatched(
  deps: CoreDeps,
  approval: ApprovalView,
  reason: string,
  message: string,
): Promise<void> {
  const history = await readHistory(deps, approval);
  if (history.end?.kind !== AuditKind.approvalApproved || history.dispatchEnd) return;
  if (await deps.executions.get(approval.request.executionId)) return;
  await deps.audit.append(
    lifecycleEntry(deps, approval, AuditKind.approvalCancelled, "gatehouse", "failure", {
      phase: "Cancelled",
      reason,
      message,
      atDispatch: true,
      approvalRecord: recordRef(history.end),
    }),
  );
}
