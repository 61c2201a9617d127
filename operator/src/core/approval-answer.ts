/**
 * The tool result of an Approval that will not change any more (DESIGN §4 step 10: "tool results and
 * approval outcomes are written from Core's records"). One function, so the model reads the same words
 * whichever path tells it: the gateway's wait endpoint, the approval controller's `approval_outcome`
 * transcript entry, or a repeated invoke of the call after the decision (a resumed pod re-invoking a
 * call whose outcome it has not seen yet).
 */
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import { answerFromExecution } from "./answer.ts";
import type { ApprovalDecision, ExecutionStore } from "./ports.ts";

/** What the answer of a settled Approval is built from. */
export interface SettledApproval {
  name: string;
  phase: ApprovalPhase;
  executionId: string;
  decisions: readonly ApprovalDecision[];
  /** The message of its `Executed` or `Decided` condition, when it has one. */
  conditionMessage?: string | undefined;
}

/**
 * Why a settled Approval did not execute, for the model. A rejection is worded as a person's decision
 * ("rejected by alice: <reason>"), not as an error, so the model reports it rather than retrying.
 */
export function refusalOfApproval(approval: SettledApproval): InvokeAnswer {
  let content: string;
  if (approval.phase === ApprovalPhase.Rejected) {
    const rejection = approval.decisions.find((d) => d.verdict === "Reject");
    const by = rejection ? `rejected by ${rejection.approver}` : "rejected";
    content = `${by}${rejection?.reason ? `: ${rejection.reason}` : ""}. This is a person's decision, not an error: the call was not executed; do not propose it again unchanged.`;
  } else {
    const why = approval.conditionMessage ? ` (${approval.conditionMessage})` : "";
    content = `The call was not executed: its approval is ${approval.phase}${why}.`;
  }
  return {
    status: "denied",
    content,
    executionId: approval.executionId,
    approval: { name: approval.name },
    errorKind: "forbidden",
  };
}

/**
 * The tool result of a settled Approval: its execution's receipt when it ran (whatever the phase),
 * else the refusal. `maxResultBytes` bounds a receipt's content. Errors: the store's errors.
 */
export async function answerOfSettledApproval(
  executions: Pick<ExecutionStore, "get">,
  approval: SettledApproval,
  maxResultBytes: number,
): Promise<InvokeAnswer> {
  const execution = await executions.get(approval.executionId);
  return execution ? answerFromExecution(execution, maxResultBytes) : refusalOfApproval(approval);
}
