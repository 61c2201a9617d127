/**
 * The audit entries of an Approval's lifecycle: each decision counted or not (and why), and its end,
 * as approval-lifecycle.ts appends them.
 */

import { ApprovalPhase } from "../api/status/approval.ts";
import {
  type ApprovalHistory,
  approvalKeyOf,
  END_KIND_OF_PHASE,
  evaluateRecorded,
  unenforcedReason,
} from "./approval-history.ts";
import type { ApprovalRules } from "./approval-rules.ts";
import type { ApprovalEvaluation } from "./approvals.ts";
import { AuditKind } from "./audit.ts";
import type { JsonObject } from "./canonical.ts";
import type { ApprovalView, AuditEntry, CoreDeps, DecisionRulesVerdict } from "./ports.ts";

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
export function countedDecisions(approval: ApprovalView, evaluation: ApprovalEvaluation): JsonObject[] {
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
export function decisionEntries(
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
export function endEntry(
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
    phase === ApprovalPhase.Approved ? "success" : "failure",
    {
      phase,
      reason,
      message,
      decisions: countedDecisions(approval, evaluation),
      ...(phase === ApprovalPhase.Approved ? { approvedBy: evaluation.approvedBy } : {}),
      ...(evaluation.rejectedBy !== undefined ? { rejectedBy: evaluation.rejectedBy } : {}),
      requiredApprovals: rules.requiredApprovals,
      ...(rules.tightened.length > 0 ? { policyTightened: rules.tightened } : {}),
    },
  );
}
