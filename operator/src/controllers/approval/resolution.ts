/**
 * The status of an Approval whose execution's outcome is (or was) unknown (core/resolution.ts), for
 * the approval planner (plan.ts `planUnknown`):
 *   approval Unknown, or an Auto execution's record not yet marked Unknown
 *   resolve = spec.resolutions[0] when the execution row does not hold it yet (Core records it)
 *   status = the phase of the row; Succeeded | Failed with reason ResolvedByPerson, or OutcomeSettled
 *            when the leader's settle sweep learned it from the provider
 */
import type { Approval } from "../../api/kinds.ts";
import {
  ApprovalCondition,
  ApprovalPhase,
  ApprovalReason,
  PHASE_OF_EXECUTION_STATE,
} from "../../api/status/approval.ts";
import type { ExecutionRecord } from "../../core/ports.ts";
import type { ResolutionEntry } from "../../core/resolution.ts";
import { setCondition } from "../../kube/runtime/conditions.ts";

type Status = NonNullable<Approval["status"]>;

/** What the reconciler does for an Approval whose execution's outcome is (or was) unknown. */
export interface ResolutionPlan {
  /** A resolution in spec.resolutions that the execution row does not hold yet: Core applies it. */
  resolve?: ResolutionEntry;
  /** The status the Approval should have, from the execution row as it is. */
  status: Status;
  /** The reason of the Executed condition that status has, when there is an execution row. */
  reason?: ApprovalReason;
}

function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** Whether the reconciler hands this Approval to {@link reconcileResolution}. */
export function needsResolution(approval: Approval): boolean {
  const phase = approval.status?.phase;
  return phase === ApprovalPhase.Unknown || (approval.spec.autoExecution === true && phase === undefined);
}

/**
 * The plan for an Approval whose execution's outcome is unknown (or was, until a person resolved it):
 * resolve when spec.resolutions holds an entry the row does not; the phase follows the row (Unknown
 * while unknown; Succeeded | Failed after, with condition Executed reason ResolvedByPerson when a
 * person settled it); status.execution is copied from the row. No row: nothing to do but keep the
 * status. Pure.
 */
/**
 * The Executed condition's message while an outcome is unknown: what is known, and how a person
 * settles it (the command, with the namespace and the reason admission requires).
 */
export function unknownOutcomeMessage(approval: Approval, summary: string | undefined): string {
  const known = (summary ?? "the outcome is unknown").replace(/[.\s]+$/, "");
  return `${known}. Check the business system, then: kubectl gatehouse resolve ${approval.metadata.name} -n ${approval.metadata.namespace} --succeeded|--failed --reason "…"`;
}

export function planResolution(approval: Approval, execution: ExecutionRecord | undefined): ResolutionPlan {
  const status: Status = { ...approval.status, observedGeneration: approval.metadata.generation };
  if (!execution) return { status };
  const entry = approval.spec.resolutions?.[0];
  const held =
    entry !== undefined &&
    execution.resolution?.resolver === entry.resolver &&
    execution.resolution.reason === entry.reason;
  const applied =
    held &&
    status.conditions?.some(
      (c) => c.type === ApprovalCondition.Executed && c.reason === ApprovalReason.ResolvedByPerson,
    );
  const resolve =
    entry !== undefined && (execution.state === "unknown" || (held && !applied)) ? entry : undefined;

  const phase = PHASE_OF_EXECUTION_STATE[execution.state];
  status.phase = phase;
  const resolution = execution.resolution;
  const summary =
    resolution && phase !== ApprovalPhase.Unknown
      ? execution.message
      : execution.state === "unknown"
        ? (execution.message ?? execution.receipt?.message)
        : (execution.receipt?.message ?? execution.message);
  status.execution = {
    id: execution.id,
    state: execution.state,
    // A settled success carries no error kind: the unknown_outcome it had is history, in the chain.
    ...(execution.errorKind && execution.state !== "succeeded" ? { errorKind: execution.errorKind } : {}),
    ...(summary ? { resultSummary: summary.slice(0, 4096) } : {}),
    startedAt: iso(execution.createdAtMicros),
    ...(execution.state !== "started" ? { finishedAt: iso(execution.updatedAtMicros) } : {}),
  };
  // A person's settlement, or the leader's settle sweep that learned the outcome later from the
  // provider (a status query, or a re-invoke by key; core/recovery.ts).
  const reason =
    phase === ApprovalPhase.Unknown
      ? ApprovalReason.Unknown
      : phase === ApprovalPhase.Executing
        ? ApprovalReason.Executing
        : resolution
          ? ApprovalReason.ResolvedByPerson
          : ApprovalReason.OutcomeSettled;
  status.conditions = setCondition(
    status.conditions,
    {
      type: ApprovalCondition.Executed,
      status: phase === ApprovalPhase.Executing ? "False" : "True",
      reason,
      message:
        resolution && phase !== ApprovalPhase.Unknown
          ? `resolved by ${resolution.resolver} as ${phase}: ${resolution.reason}`
          : phase === ApprovalPhase.Succeeded || phase === ApprovalPhase.Failed
            ? `the provider settled the unknown outcome as ${phase}${summary ? `: ${summary}` : ""}`
            : phase === ApprovalPhase.Unknown
              ? unknownOutcomeMessage(approval, summary)
              : (summary ?? phase),
      observedGeneration: approval.metadata.generation,
    },
    // The time only matters when the condition changes; setCondition keeps it otherwise.
    new Date(Math.floor(execution.updatedAtMicros / 1000)),
  );
  return { ...(resolve ? { resolve } : {}), status, reason };
}
