/**
 * What an agent is told once its Approval is settled: the execution's receipt for Succeeded / Failed /
 * Unknown, or the refusal for Rejected / Expired / Cancelled / Stale.
 */
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import type { Approval } from "../api/kinds.ts";
import { answerFromExecution } from "../core/answer.ts";
import type { CoreDeps } from "../core/ports.ts";

const SETTLED = new Set(["Rejected", "Expired", "Cancelled", "Stale", "Succeeded", "Failed", "Unknown"]);

/** True once the Approval will not change its outcome any more. */
export function isSettled(approval: Approval): boolean {
  return SETTLED.has(approval.status?.phase ?? "Pending");
}

/** The tool result for a settled Approval. */
export async function answerOfApproval(core: CoreDeps, approval: Approval): Promise<InvokeAnswer> {
  const phase = approval.status?.phase ?? "Pending";
  const execution = await core.executions.get(approval.spec.executionId);
  if (execution) return answerFromExecution(execution, core.config.maxResultBytes);
  const reason =
    approval.status?.conditions?.find((c) => c.status === "True" || c.type === "Ready")?.message ?? "";
  const decided = approval.spec.decisions
    .map((d) => `${d.approver}: ${d.verdict}${d.reason ? ` (${d.reason})` : ""}`)
    .join("; ");
  return {
    status: "denied",
    content:
      `The call was not executed: the approval is ${phase}. ${decided ? `Decisions: ${decided}.` : ""} ${reason}`.trim(),
    executionId: approval.spec.executionId,
    approval: { name: approval.metadata.name },
    errorKind: "forbidden",
  };
}
