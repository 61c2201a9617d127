/**
 * The outcome of an Approval as the agent learns it (DESIGN §4: "tool results and approval outcomes in
 * the transcript are written from Core's records"). One function builds the tool result from the
 * execution row (Succeeded / Failed / Unknown) or from the decision (Rejected — worded as a person's
 * decision, not an error — Expired, Cancelled, Stale); one appends it to the transcript as
 * `approval_outcome`, once per Approval (deduplication key) — and once more when a person resolves
 * an Unknown outcome — with the turn and call id of the call
 * that proposed it, so a resumed agent gives that call exactly one result. The gateway's wait endpoint
 * and the approval controller both record it; whichever comes first writes it.
 */
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import type { Approval } from "../api/kinds.ts";
import {
  ApprovalCondition,
  ApprovalPhase,
  ApprovalReason,
  SETTLED_APPROVAL_PHASES,
} from "../api/status/approval.ts";
import { answerOfSettledApproval, type SettledApproval } from "../core/approval-answer.ts";
import type { CoreDeps } from "../core/ports.ts";
import { findCondition } from "../kube/runtime/conditions.ts";
import type { SessionEvent, TranscriptStore } from "../store/transcripts.ts";

/** True once the Approval will not change its outcome any more. */
export function isSettled(approval: Approval): boolean {
  return SETTLED_APPROVAL_PHASES.has(approval.status?.phase ?? ApprovalPhase.Pending);
}

/**
 * Why the Approval ended as it did, if a condition says: once it was approved the dispatch decided, so
 * its `Executed` condition as "Reason: message" (e.g. "TargetVersionMoved: plan w is now at version
 * 6; …"); otherwise — a rejection, expiry or cancellation before any approval — the `Decided`
 * condition's message. An `Executed` condition beside a Decided one that is not Approved is left from
 * an earlier dispatch that found no approval (NotApproved), not the outcome.
 */
export function settlementMessageOf(approval: Approval): string | undefined {
  const decided = findCondition(approval.status?.conditions, ApprovalCondition.Decided);
  const executed = findCondition(approval.status?.conditions, ApprovalCondition.Executed);
  if (executed && (!decided || decided.reason === ApprovalReason.Approved)) {
    return executed.message ? `${executed.reason}: ${executed.message}` : executed.reason;
  }
  return decided?.message || undefined;
}

function settledViewOf(approval: Approval): SettledApproval {
  return {
    name: approval.metadata.name,
    phase: approval.status?.phase ?? ApprovalPhase.Pending,
    executionId: approval.spec.executionId,
    decisions: (approval.spec.decisions ?? []).map(({ approver, verdict, reason }) =>
      reason === undefined ? { approver, verdict } : { approver, verdict, reason },
    ),
    conditionMessage: settlementMessageOf(approval),
  };
}

/** The tool result for a settled Approval: the execution's receipt, or the refusal. */
export function answerOfApproval(
  core: Pick<CoreDeps, "executions" | "config">,
  approval: Approval,
): Promise<InvokeAnswer> {
  return answerOfSettledApproval(core.executions, settledViewOf(approval), core.config.maxResultBytes);
}

/**
 * Appends the `approval_outcome` of a settled Approval to its session's transcript, once; returns the
 * event (the existing one when already recorded). Errors: Postgres errors.
 */
export async function recordApprovalOutcome(
  core: Pick<CoreDeps, "executions" | "config" | "catalog">,
  transcripts: TranscriptStore,
  approval: Approval,
  atMicros: number,
): Promise<SessionEvent> {
  const sessionUid = approval.spec.sessionRef.uid;
  const answer = await answerOfApproval(core, approval);
  // The call that proposed it; for an Auto call of unknown outcome, the call whose result named it.
  const proposal = await transcripts.findFirst(sessionUid, "tool_result", "approval", approval.metadata.name);
  const capability = await core.catalog.get(approval.metadata.namespace, approval.spec.capability);
  // A person's resolution, or the provider asked again, settles an outcome that was Unknown (and told
  // as such): it is told once more.
  const reason = findCondition(approval.status?.conditions, ApprovalCondition.Executed)?.reason;
  const resolved = reason === ApprovalReason.ResolvedByPerson || reason === ApprovalReason.OutcomeSettled;
  return transcripts.append({
    dedupeKey: `approval_outcome:${approval.metadata.name}${resolved ? ":resolution" : ""}`,
    sessionUid,
    source: "core",
    kind: "approval_outcome",
    payload: {
      turn: proposal?.payload.turn ?? null,
      callId: proposal?.payload.callId ?? null,
      approval: approval.metadata.name,
      executionId: approval.spec.executionId,
      phase: approval.status?.phase ?? ApprovalPhase.Pending,
      status: answer.status,
      content: answer.content,
      effect: String(capability?.effect ?? ""),
    },
    atMicros,
  });
}
