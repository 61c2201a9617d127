/**
 * Re-proposals (DESIGN §4 step 4b): an action proposed again identically in the same session — same
 * capability and canonical arguments digest, any turn or position — is decided by the session's
 * earlier executions and Approvals of that action, so it never causes a second business effect nor a
 * second Approval for one decision:
 *   1. an Approval still Pending, Approved or Executing → wait on that Approval, not a second one
 *      (also while its approved execution is running: the wait ends with the outcome);
 *   2. an execution still `started` or `unknown` → answer from that record (what a person must
 *      check, its execution and Approval) and send nothing until a person resolves it;
 *   3. otherwise the latest execution decides:
 *      - failed, and not provably never sent (a final business error) → refused, naming it;
 *      - failed and never sent → may run again, under that execution's idempotency key;
 *      - succeeded (by its receipt, or by a person's resolution of an unknown outcome) → answered
 *        from that record and not sent again: a model repeating a write it already made (it lost
 *        track, or an injected instruction asks for it) would otherwise make it twice; an action meant
 *        to happen again differs in its arguments, or runs in a new session;
 *   4. no earlier execution or open Approval → proposed anew.
 * Writes (every effect but read and draft) are checked before identity and policy. A read or draft is
 * checked only when its policy requires approval, and only against what people approved — its earlier
 * Approvals and the executions they dispatched, never a run without one: a repeat of an approved read
 * (an MCP client calling again past the approval wait's bound) returns that run's result, so nothing
 * runs without a person and nobody is asked twice; a read the policy lets run on its own runs each time.
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

/** Whether re-proposals of `capability` are checked whatever its policy: every effect but read and draft. */
export function checksReproposals(capability: Pick<ResolvedCapability, "effect">): boolean {
  return capability.effect !== "read" && capability.effect !== "draft";
}

/** What a re-proposal is classified by: every record of the action, or only what people approved. */
export type ReproposalScope = "action" | "approved";

/**
 * Classifies a proposal of `capability` with arguments digest `argumentsDigest` by the session's
 * earlier executions and Approvals of the same action (rules in the file comment); `scope` "approved"
 * (a read or draft that needs approval) counts only Approvals a session's call proposed and the
 * executions they dispatched. Pure apart from the two lookups. Errors: the stores'.
 */
export async function classifyReproposal(
  deps: Pick<CoreDeps, "executions" | "approvals">,
  session: Pick<SessionContext, "namespace" | "uid">,
  capability: Pick<ResolvedCapability, "id" | "name" | "effect">,
  argumentsDigest: string,
  scope: ReproposalScope = "action",
): Promise<Reproposal> {
  if (scope === "action" && !checksReproposals(capability)) return { kind: "new" };
  const all = await deps.executions.findByAction({
    sessionUid: session.uid,
    capability: capability.id,
    argumentsDigest,
  });
  // An Auto run and the record Approval made for its unknown outcome were no person's decision.
  const unapproved = new Set(all.filter((e) => e.approvalName === undefined).map((e) => e.id));
  const executions = scope === "approved" ? all.filter((e) => !unapproved.has(e.id)) : all;
  const approvals = await deps.approvals.findByAction({
    namespace: session.namespace,
    sessionUid: session.uid,
    capability: capability.name,
    argumentsDigest,
  });
  const open = approvals.find(
    (a) =>
      a.ownedBySession &&
      isOpenApprovalPhase(a.phase) &&
      (scope === "action" || !unapproved.has(a.identity.executionId)),
  );
  const unsettled = executions.findLast((e) => e.state === "started" || e.state === "unknown");
  // An approved execution still running is waited on through its Approval: the wait ends with its outcome.
  const dispatching = unsettled?.state === "started" && open && unsettled.approvalName === open.name;
  if (unsettled && !dispatching) return { kind: "unsettled", execution: unsettled };
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
 * the model was given it, and that nothing was sent again — for a read or draft, that a person
 * approved it once and this is the result of that run.
 */
export function alreadySucceededAnswer(
  execution: ExecutionRecord,
  maxResultBytes: number,
  effect = "write",
): InvokeAnswer {
  const earlier = answerFromExecution(execution, maxResultBytes);
  const approved = effect === "read" || effect === "draft";
  return {
    status: "succeeded",
    content: approved
      ? `This exact ${effect} was approved (Approval ${resolutionApprovalOf(execution)}) and ran in this ` +
        `session (execution ${execution.id}); it is not run again nor approved twice, so this is the ` +
        `result of that run; for a fresh one, the user asks for it in a new session. Its result was: ${earlier.content}`
      : `This exact action already succeeded in this session (execution ${execution.id}) and is not sent ` +
        `again; to do it once more, the user must ask for it in a new session. Its result was: ${earlier.content}`,
    executionId: execution.id,
    ...(approved ? { approval: { name: resolutionApprovalOf(execution) } } : {}),
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
