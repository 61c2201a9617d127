/**
 * Re-proposals (DESIGN §4 step 4b): a write proposed again identically in the same session — same
 * capability and canonical arguments digest, any turn or position — never causes a second business
 * effect. The session's earlier executions and Approvals of that action decide:
 *   1. an execution still `started` or `unknown` → answer from that record (what a person must
 *      check, its execution and Approval) and send nothing until a person resolves it;
 *   2. an Approval still Pending, Approved or Executing → wait on that Approval, not a second one;
 *   3. otherwise the latest execution decides:
 *      - failed, and not provably never sent (a final business error) → refused, naming it;
 *      - failed and never sent → may run again, under that execution's idempotency key;
 *      - succeeded (by its receipt, or by a person's resolution of an unknown outcome) → answered
 *        from that record and not sent again: a model repeating a write it already made (it lost
 *        track, or an injected instruction asks for it) would otherwise make it twice; an action meant
 *        to happen again differs in its arguments, or runs in a new session;
 *   4. no earlier execution or open Approval → proposed anew.
 * Reads and drafts are exempt: repeating them changes nothing in the business system.
 */
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import { isOpenApprovalPhase } from "../api/status/approval.ts";
import { answerFromExecution } from "./answer.ts";
import { approvalNameOf } from "./execution-identity.ts";
import type {
  ApprovalHandle,
  CoreDeps,
  ExecutionRecord,
  ResolvedCapability,
  SessionContext,
} from "./ports.ts";

/** What an identical earlier proposal means for this one. */
export type Reproposal =
  | { kind: "new" }
  | { kind: "unsettled"; execution: ExecutionRecord }
  | { kind: "approval_open"; approval: ApprovalHandle }
  | { kind: "failed"; execution: ExecutionRecord }
  | { kind: "resolved"; execution: ExecutionRecord }
  | { kind: "succeeded"; execution: ExecutionRecord }
  | { kind: "rerun"; execution: ExecutionRecord; idempotencyKey: string };

/** Whether re-proposals of `capability` are checked: every effect but read and draft. */
export function checksReproposals(capability: Pick<ResolvedCapability, "effect">): boolean {
  return capability.effect !== "read" && capability.effect !== "draft";
}

/**
 * Classifies a proposal of `capability` with arguments digest `argumentsDigest` by the session's
 * earlier executions and Approvals of the same action (rules in the file comment). Pure apart from
 * the two lookups. Errors: the stores'.
 */
export async function classifyReproposal(
  deps: Pick<CoreDeps, "executions" | "approvals">,
  session: Pick<SessionContext, "namespace" | "uid">,
  capability: Pick<ResolvedCapability, "id" | "name" | "effect">,
  argumentsDigest: string,
): Promise<Reproposal> {
  if (!checksReproposals(capability)) return { kind: "new" };
  const executions = await deps.executions.findByAction({
    sessionUid: session.uid,
    capability: capability.id,
    argumentsDigest,
  });
  const unsettled = executions.findLast((e) => e.state === "started" || e.state === "unknown");
  if (unsettled) return { kind: "unsettled", execution: unsettled };
  const approvals = await deps.approvals.findByAction({
    namespace: session.namespace,
    sessionUid: session.uid,
    capability: capability.name,
    argumentsDigest,
  });
  const open = approvals.find((a) => a.ownedBySession && isOpenApprovalPhase(a.phase));
  if (open) return { kind: "approval_open", approval: open };
  let latest = executions.at(-1);
  if (!latest) return { kind: "new" };
  // A never-sent failure whose key a later run of it holds is decided by that run (rows created in
  // the same microsecond sort by id, not by age).
  const neverSentKey = latest.state === "failed" && latest.neverSent ? latest.idempotencyKey : undefined;
  const holder = executions.findLast(
    (e) => e.idempotencyKey === neverSentKey && !(e.state === "failed" && e.neverSent),
  );
  if (holder) latest = holder;
  if (latest.state === "failed") {
    return latest.neverSent
      ? { kind: "rerun", execution: latest, idempotencyKey: latest.idempotencyKey }
      : { kind: "failed", execution: latest };
  }
  if (latest.state !== "succeeded") return { kind: "new" };
  return latest.resolution
    ? { kind: "resolved", execution: latest }
    : { kind: "succeeded", execution: latest };
}

/** The Approval a person resolves an execution's outcome on: its own, or the record the operator made. */
export function resolutionApprovalOf(execution: Pick<ExecutionRecord, "id" | "approvalName">): string {
  return execution.approvalName ?? approvalNameOf(execution.id);
}

/** The answer to a re-proposal of an action whose earlier execution is still running or unknown. */
export function unsettledAnswer(execution: ExecutionRecord): InvokeAnswer {
  if (execution.state === "started") {
    // Still running: only an Approval that exists is named (an Auto call has none until its outcome
    // turns out unknown), so the agent never waits on a name nobody created.
    return {
      status: "unknown",
      content:
        `This exact action is already being executed (execution ${execution.id}); its outcome is not ` +
        "known yet. It is not sent again. Do not propose it again; wait for its result.",
      executionId: execution.id,
      ...(execution.approvalName ? { approval: { name: execution.approvalName } } : {}),
      errorKind: "unknown_outcome",
    };
  }
  const approval = resolutionApprovalOf(execution);
  return {
    status: "unknown",
    content:
      `This exact action was proposed before (execution ${execution.id}) and its outcome is unknown ` +
      `(${execution.message ?? "no answer from the business system"}): it may have taken effect. It is ` +
      "not sent again until a person checks the business system and resolves it " +
      `(kubectl gatehouse resolve ${approval} --succeeded|--failed). Do not propose it again; report it to the user.`,
    executionId: execution.id,
    approval: { name: approval },
    errorKind: "unknown_outcome",
  };
}

/** The answer to a re-proposal of an action whose unknown outcome a person resolved as succeeded. */
export function resolvedAnswer(execution: ExecutionRecord): InvokeAnswer {
  const by = execution.resolution;
  return {
    status: "succeeded",
    content:
      `This exact action already took effect (execution ${execution.id}): its outcome was unknown and ` +
      `${by?.resolver ?? "a person"} confirmed it succeeded${by?.reason ? ` (${by.reason})` : ""}. ` +
      "It is not sent again.",
    executionId: execution.id,
    approval: { name: resolutionApprovalOf(execution) },
  };
}

/**
 * The answer to a re-proposal of an action that already succeeded in this session: its receipt, as
 * the model was given it, and that nothing was sent again.
 */
export function alreadySucceededAnswer(execution: ExecutionRecord, maxResultBytes: number): InvokeAnswer {
  const earlier = answerFromExecution(execution, maxResultBytes);
  return {
    status: "succeeded",
    content:
      `This exact action already succeeded in this session (execution ${execution.id}) and is not sent ` +
      `again; to do it once more, the user must ask for it in a new session. Its result was: ${earlier.content}`,
    executionId: execution.id,
  };
}

/** The refusal of a re-proposal of an action whose latest execution failed for good. */
export function previouslyFailedMessage(execution: ExecutionRecord): string {
  const why = execution.resolution
    ? `${execution.resolution.resolver} resolved its unknown outcome as failed: ${execution.resolution.reason}`
    : `${execution.errorKind ?? execution.receipt?.errorKind ?? "failed"}: ${execution.receipt?.message ?? execution.message ?? "no details"}`;
  return (
    `this exact action failed before (execution ${execution.id}; ${why}); the business system's answer ` +
    "is final, so it is not proposed again unchanged: change it or report it to the user"
  );
}
