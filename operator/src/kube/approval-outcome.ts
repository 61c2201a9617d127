/**
 * The outcome of an Approval as the agent learns it (DESIGN §4: "tool results and approval outcomes in
 * the transcript are written from Core's records"). One function builds the tool result from the
 * execution row (Succeeded / Failed / Unknown) or from the decision (Rejected — worded as a person's
 * decision, not an error — Expired, Cancelled, Stale); one appends it to the transcript as
 * `approval_outcome`, once per Approval (deduplication key), with the turn and call id of the call
 * that proposed it, so a resumed agent gives that call exactly one result. The gateway's wait endpoint
 * and the approval controller both record it; whichever comes first writes it.
 */
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import type { Approval } from "../api/kinds.ts";
import { answerFromExecution } from "../core/answer.ts";
import type { CoreDeps } from "../core/ports.ts";
import type { SessionEvent, TranscriptStore } from "../store/transcripts.ts";

const SETTLED = new Set(["Rejected", "Expired", "Cancelled", "Stale", "Succeeded", "Failed", "Unknown"]);

/** True once the Approval will not change its outcome any more. */
export function isSettled(approval: Approval): boolean {
  return SETTLED.has(approval.status?.phase ?? "Pending");
}

/** Why a settled Approval did not execute, in words for the model. */
function refusalText(approval: Approval): string {
  const phase = approval.status?.phase ?? "Pending";
  if (phase === "Rejected") {
    const rejection = approval.spec.decisions.find((d) => d.verdict === "Reject");
    const by = rejection ? `rejected by ${rejection.approver}` : "rejected";
    return `${by}${rejection?.reason ? `: ${rejection.reason}` : ""}. This is a person's decision, not an error: the call was not executed; do not propose it again unchanged.`;
  }
  const condition = approval.status?.conditions?.find((c) => c.type === "Executed" || c.type === "Decided");
  const why = condition?.message ? ` (${condition.message})` : "";
  return `The call was not executed: its approval is ${phase}${why}.`;
}

/** The tool result for a settled Approval: the execution's receipt, or the refusal. */
export async function answerOfApproval(
  core: Pick<CoreDeps, "executions" | "config">,
  approval: Approval,
): Promise<InvokeAnswer> {
  const execution = await core.executions.get(approval.spec.executionId);
  if (execution) return answerFromExecution(execution, core.config.maxResultBytes);
  return {
    status: "denied",
    content: refusalText(approval),
    executionId: approval.spec.executionId,
    approval: { name: approval.metadata.name },
    errorKind: "forbidden",
  };
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
  const history = await transcripts.list(sessionUid, { limit: 100_000 });
  const proposal = history.find(
    (e) => e.kind === "tool_result" && e.payload.approval === approval.metadata.name,
  );
  const capability = await core.catalog.get(approval.metadata.namespace, approval.spec.capability);
  return transcripts.append({
    dedupeKey: `approval_outcome:${approval.metadata.name}`,
    sessionUid,
    source: "core",
    kind: "approval_outcome",
    payload: {
      turn: proposal?.payload.turn ?? null,
      callId: proposal?.payload.callId ?? null,
      approval: approval.metadata.name,
      executionId: approval.spec.executionId,
      phase: approval.status?.phase ?? "Pending",
      status: answer.status,
      content: answer.content,
      effect: String(capability?.effect ?? ""),
    },
    atMicros,
  });
}
