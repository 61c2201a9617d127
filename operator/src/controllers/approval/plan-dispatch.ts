/**
 * The status of an Approval once Core's executeApproved has answered: its phase, Executed condition
 * and execution as Core's record says, and the Events and logs that report it. The planner is plan.ts.
 */
import type { Approval } from "../../api/kinds.ts";
import { ApprovalCondition, ApprovalPhase, PHASE_OF_EXECUTION_STATE } from "../../api/status/approval.ts";
import type { ExecuteApprovedResult } from "../../core/execute-approved.ts";
import type { ExecutionRecord } from "../../core/ports.ts";
import { setCondition } from "../../kube/runtime/conditions.ts";
import { isSettled } from "../../transcripts/approval-outcome.ts";
import {
  type ApprovalStatus,
  DISPATCH_RECHECK_MS,
  dispatchRefusedMessage,
  type PlannedEvent,
  type PlannedLog,
} from "./plan-shape.ts";
import { unknownOutcomeMessage } from "./resolution.ts";

export function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** status.execution from an execution row. */
export function executionStatusOf(execution: ExecutionRecord): ApprovalStatus["execution"] {
  // For an unknown outcome Core's own message says what a human must check; the provider's says less.
  const summary =
    execution.state === "unknown"
      ? (execution.message ?? execution.receipt?.message)
      : (execution.receipt?.message ?? execution.message);
  return {
    id: execution.id,
    state: execution.state,
    ...(execution.errorKind && execution.state !== "succeeded" ? { errorKind: execution.errorKind } : {}),
    ...(summary ? { resultSummary: summary.slice(0, 4096) } : {}),
    startedAt: iso(execution.createdAtMicros),
    ...(execution.state !== "started" ? { finishedAt: iso(execution.updatedAtMicros) } : {}),
  };
}

/** What a dispatch's result leads to: the final status, Events, transcript and requeue. */
export interface DispatchOutcomePlan {
  status: ApprovalStatus;
  events: PlannedEvent[];
  recordOutcome: boolean;
  requeueAfterMs?: number | undefined;
  log: PlannedLog[];
}

/**
 * The second pure step of a dispatching pass: Core's `executeApproved` result on top of the status
 * written before the call. Executed → the execution row's state is the phase (Executing while it
 * runs); refused → the refusal's phase, with a Warning Event when that settles it; deferred → back to
 * Approved and looked at again soon.
 */
export function planDispatchOutcome(
  approval: Approval,
  status: ApprovalStatus,
  result: ExecuteApprovedResult,
  now: Date,
): DispatchOutcomePlan {
  const generation = approval.metadata.generation;
  const final: ApprovalStatus = { ...status };
  const events: PlannedEvent[] = [];
  let log: PlannedLog;
  if (result.kind === "executed") {
    final.execution = executionStatusOf(result.execution);
    const next = PHASE_OF_EXECUTION_STATE[result.execution.state];
    final.phase = next;
    final.conditions = setCondition(
      final.conditions,
      {
        type: ApprovalCondition.Executed,
        status: next === ApprovalPhase.Executing ? "False" : "True",
        // The phase an execution leads to is the Executed reason too (Executing, Succeeded, Failed, Unknown).
        reason: next,
        message:
          next === ApprovalPhase.Unknown
            ? unknownOutcomeMessage(approval, final.execution?.resultSummary)
            : (final.execution?.resultSummary ?? next),
        observedGeneration: generation,
      },
      now,
    );
    log = {
      level: "info",
      fields: { executionId: result.execution.id, state: result.execution.state },
      message: "approval dispatched",
    };
  } else {
    final.phase = result.phase;
    final.conditions = setCondition(
      final.conditions,
      {
        type: ApprovalCondition.Executed,
        status: "False",
        reason: result.reason,
        message: result.message,
        observedGeneration: generation,
      },
      now,
    );
    log = {
      level: "info",
      fields: { phase: result.phase, reason: result.reason },
      message: `approval ${result.kind} at dispatch`,
    };
  }
  const settled = isSettled({ ...approval, status: final });
  if (result.kind === "refused" && settled) {
    // A deferral retries by itself; a refusal that settles it (Stale, Expired, Cancelled…) needs a human.
    events.push({
      type: "Warning",
      reason: result.reason,
      message: dispatchRefusedMessage(result.phase, result.message),
    });
  }
  const again = final.phase === ApprovalPhase.Executing || result.kind === "deferred";
  return {
    status: final,
    events,
    recordOutcome: settled,
    ...(again ? { requeueAfterMs: DISPATCH_RECHECK_MS } : {}),
    log: [log],
  };
}
