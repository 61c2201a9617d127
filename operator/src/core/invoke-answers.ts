/** Core.invoke's answers to a call it has seen before: a repeat of an execution, a concurrent or repeated proposal of the same write, a call whose Approval exists or whose Approval name is squatted (DESIGN §4 step 2). */
import type { InvokeAnswer, InvokeCall } from "../api/agent-protocol.ts";
import { SETTLED_APPROVAL_PHASES } from "../api/status/approval.ts";
import { ReproposalRule } from "../api/status/tool-call.ts";
import { answerFromExecution, deniedAnswer, pendingApprovalAnswer } from "./answer.ts";
import { answerOfSettledApproval } from "./approval-answer.ts";
import { AuditKind } from "./audit.ts";
import type { JsonObject } from "./canonical.ts";
import { GatehouseError } from "./errors.ts";
import type { ExecutionIdentity } from "./execution-identity.ts";
import type {
  ApprovalHandle,
  AuditOutcome,
  CoreDeps,
  ExecutionRecord,
  InvokeDecision,
  SessionContext,
} from "./ports.ts";
import { outcomeOfExecution } from "./recovery.ts";
import { alreadySucceededAnswer, type Reproposal, resolvedAnswer, unsettledAnswer } from "./reproposal.ts";
import { tryRecordUnknownAutoExecution } from "./resolution.ts";

/** Result of {@link invoke}: the answer for the agent and how it was decided. */
export interface InvokeResult {
  answer: InvokeAnswer;
  decision: InvokeDecision;
}

/**
 * The answer to a repeat of a call that has an execution row: its outcome, waited for while it runs
 * within its lease, with the Approval a person resolves an unknown outcome on. Audited as
 * `invoke.repeated`.
 */
export async function answerRepeat(
  deps: CoreDeps,
  call: InvokeCall,
  existing: ExecutionRecord,
  audit: (kind: string, outcome: AuditOutcome, payload: JsonObject) => Promise<unknown>,
): Promise<InvokeResult> {
  const current = await outcomeOfExecution(deps, existing);
  await audit(AuditKind.repeated, "success", { tool: call.tool, state: current.state });
  const answer = await withResolutionApproval(deps, current, answerOfExecution(deps, current));
  return { answer, decision: "repeated" };
}

/**
 * The answer to a write whose action key a concurrent identical proposal claimed first: that run's
 * outcome (waited for while it runs), audited as `invoke.reproposed`; this call's reservations go back,
 * since nothing new ran. Errors: throws when no row holds the key (the conflict was something else).
 */
export async function answerConcurrentProposal(
  deps: CoreDeps,
  session: SessionContext,
  executionId: string,
  capability: string,
  argumentsDigest: string,
  idempotencyKey: string,
  facts: JsonObject,
  audit: (kind: string, outcome: AuditOutcome, payload: JsonObject) => Promise<unknown>,
): Promise<InvokeResult> {
  const rows = await deps.executions.findByAction({ sessionUid: session.uid, capability, argumentsDigest });
  const holder = rows.findLast(
    (e) => e.idempotencyKey === idempotencyKey && !(e.state === "failed" && e.neverSent),
  );
  if (!holder) {
    throw new GatehouseError("conflict", `idempotency key ${idempotencyKey} is taken by another action`);
  }
  await deps.budget.release(executionId, deps.clock.nowMicros());
  const current = await outcomeOfExecution(deps, holder);
  await audit(AuditKind.reproposed, "success", {
    ...facts,
    rule: ReproposalRule.ConcurrentProposal,
    earlierExecution: holder.id,
    state: current.state,
  });
  return { answer: answerOfExecution(deps, current), decision: "repeated" };
}

/**
 * The answer to an action proposed again while an identical earlier one is unsettled, waiting on its
 * Approval, succeeded or resolved by a person (`effect`: the capability's, which words the answer):
 * nothing new is created or sent; the answer names the earlier record. Audited as `invoke.reproposed`.
 */
export async function answerReproposal(
  call: InvokeCall,
  earlier: Extract<Reproposal, { kind: "unsettled" | "approval_open" | "resolved" | "succeeded" }>,
  facts: JsonObject,
  audit: (kind: string, outcome: AuditOutcome, payload: JsonObject) => Promise<unknown>,
  maxResultBytes: number,
  effect: string,
): Promise<InvokeResult> {
  let answer: InvokeAnswer;
  let payload: JsonObject;
  if (earlier.kind === "approval_open") {
    const { approval } = earlier;
    answer = pendingApprovalAnswer(
      approval.name,
      approval.identity.executionId,
      `This exact action is already waiting on Approval ${approval.name} (${approval.phase}); wait for its ` +
        "decision instead of proposing it again.",
    );
    payload = { rule: ReproposalRule.ApprovalOpen, approval: approval.name, phase: approval.phase };
  } else {
    // A `started` row whose claimer died is settled by the leader's sweep or a repeat of its own call.
    const { execution } = earlier;
    answer =
      earlier.kind === "resolved"
        ? resolvedAnswer(execution)
        : earlier.kind === "succeeded"
          ? alreadySucceededAnswer(execution, maxResultBytes, effect)
          : unsettledAnswer(execution);
    payload = {
      rule: RULE_OF_REPROPOSAL[earlier.kind],
      earlierExecution: execution.id,
      state: execution.state,
      approval: answer.approval?.name ?? null,
    };
  }
  const settled = earlier.kind === "resolved" || earlier.kind === "succeeded";
  await audit(AuditKind.reproposed, settled ? "success" : "pending", {
    ...facts,
    tool: call.tool,
    ...payload,
  });
  return { answer, decision: "repeated" };
}

/** The audit `rule` of each re-proposal answered from an earlier record. */
export const RULE_OF_REPROPOSAL = {
  unsettled: ReproposalRule.OutcomeUnsettled,
  resolved: ReproposalRule.ResolvedByPerson,
  succeeded: ReproposalRule.AlreadySucceeded,
} as const;

/**
 * `answer` naming the Approval a person resolves an Auto call's unknown outcome on, created now if it
 * is missing (core/resolution.ts); `answer` unchanged for any other row.
 */
export async function withResolutionApproval(
  deps: CoreDeps,
  execution: ExecutionRecord,
  answer: InvokeAnswer,
): Promise<InvokeAnswer> {
  const name = await tryRecordUnknownAutoExecution(deps, execution);
  if (!name) return answer;
  return {
    ...answer,
    approval: { name },
    content: `${answer.content} A person resolves it on Approval ${name}.`,
  };
}

/** The agent's answer for an execution row (used for repeats and by the approval wait endpoint). */
export function answerOfExecution(deps: Pick<CoreDeps, "config">, execution: ExecutionRecord): InvokeAnswer {
  return answerFromExecution(execution, deps.config.maxResultBytes);
}

/**
 * Refuses a call whose Approval name is squatted. Only audited here (the gateway writes no status):
 * the controller marks the squat Failed/Conflict from this record, by `approvalUid`
 * (controllers/approval/conflict-sweep.ts).
 */
export async function conflict(
  deps: CoreDeps,
  session: SessionContext,
  identity: ExecutionIdentity,
  tool: string,
  squat: ApprovalHandle,
  audit: (kind: string, outcome: AuditOutcome, payload: JsonObject) => Promise<unknown>,
): Promise<InvokeResult> {
  await audit(AuditKind.approvalConflict, "failure", {
    tool,
    approval: `${session.namespace}/${identity.approvalName}`,
    ...(squat.uid ? { approvalUid: squat.uid } : {}),
  });
  deps.logger.warn(
    { executionId: identity.executionId, approval: identity.approvalName },
    "approval name squatted",
  );
  return {
    answer: deniedAnswer(
      "This call cannot be approved: its approval record was tampered with. Report it to the user.",
      "conflict",
      identity.executionId,
    ),
    decision: "conflict",
  };
}

/**
 * The answer to a call repeated after its Approval was made: wait while it is undecided or running;
 * once settled, the same answer the wait endpoint and the transcript's `approval_outcome` give.
 */
export async function answerOfExistingApproval(
  deps: CoreDeps,
  approval: ApprovalHandle,
  identity: ExecutionIdentity,
): Promise<InvokeAnswer> {
  if (!SETTLED_APPROVAL_PHASES.has(approval.phase)) {
    return pendingApprovalAnswer(
      approval.name,
      identity.executionId,
      `Approval ${approval.name} for this call is ${approval.phase}; wait for it, do not repeat the call.`,
    );
  }
  return answerOfSettledApproval(
    deps.executions,
    { ...approval, executionId: identity.executionId },
    deps.config.maxResultBytes,
  );
}
