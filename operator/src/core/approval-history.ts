/**
 * An Approval's history as the audit chain holds it: its request, the decisions recorded and its end,
 * read by the Approval's key, and the phase each end means. Core decides from it (approval-lifecycle.ts).
 */
import { ApprovalPhase } from "../api/status/approval.ts";
import { type ApprovalRules, approvalRulesOf } from "./approval-rules.ts";
import { type ApprovalEvaluation, evaluateApproval } from "./approvals.ts";
import { AuditKind } from "./audit.ts";
import type { JsonObject } from "./canonical.ts";
import type { AppendedRecord, ApprovalView, AuditEntry, ChainedRecord, CoreDeps } from "./ports.ts";

/** The kind of the record that ends an Approval in `phase`, for the phases that end one. */
export const END_KIND_OF_PHASE: Partial<Record<ApprovalPhase, string>> = {
  Approved: AuditKind.approvalApproved,
  Rejected: AuditKind.approvalRejected,
  Expired: AuditKind.approvalExpired,
  Cancelled: AuditKind.approvalCancelled,
  Stale: AuditKind.approvalStale,
  Failed: AuditKind.approvalFailed,
};

export const PHASE_OF_END_KIND = new Map<string, ApprovalPhase>(
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
export function addToHistory(
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
  return PHASE_OF_END_KIND.get(record.kind) ?? ApprovalPhase.Failed;
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
