/**
 * The approval reconciler's part for an execution of unknown outcome (core/resolution.ts):
 *   approval Unknown, or an Auto execution's record not yet marked Unknown
 *   execution = the row of spec.executionId
 *   plan = planResolution(approval, execution)      ; pure
 *   plan.resolve → Core applies spec.resolutions[0] (row, `execution.resolved`), then plan again
 *   status = plan.status, written if changed        ; Succeeded | Failed, reason ResolvedByPerson, or
 *                                                     OutcomeSettled when the leader's sweep learned it
 *   settled → its outcome goes to the session's transcript (once more: the agent was told "unknown")
 *   still unknown → looked at again after the sweep's next attempt
 */
import type { Logger } from "pino";
import type { Approval } from "../../api/kinds.ts";
import { APPROVAL } from "../../api/kinds.ts";
import type { ApprovalPhase, CoreDeps, ExecutionRecord } from "../../core/ports.ts";
import { type ResolutionEntry, resolveExecution } from "../../core/resolution.ts";
import { recordApprovalOutcome } from "../../kube/approval-outcome.ts";
import { requestOf } from "../../kube/approvals.ts";
import type { KubeClients } from "../../kube/client.ts";
import { setCondition } from "../../kube/conditions.ts";
import type { EventRecorder } from "../../kube/events.ts";
import { writeStatusIfChanged } from "../../kube/status.ts";
import type { ReconcileResult } from "../../kube/workqueue.ts";
import type { TranscriptStore } from "../../store/transcripts.ts";

type Status = NonNullable<Approval["status"]>;

/** What {@link reconcileResolution} needs of the approval reconciler's dependencies. */
export interface ResolutionDeps {
  clients: KubeClients;
  core: CoreDeps;
  transcripts: TranscriptStore;
  now: () => Date;
  events: EventRecorder;
}

/** The condition reason of an Approval whose unknown outcome a person settled. */
export const RESOLVED_BY_PERSON = "ResolvedByPerson";
/**
 * The condition reason of an Approval whose unknown outcome the leader's settle sweep learned later
 * from the provider (a status query, or a re-invoke by key; core/recovery.ts).
 */
export const OUTCOME_SETTLED = "OutcomeSettled";

/** What the reconciler does for an Approval whose execution's outcome is (or was) unknown. */
export interface ResolutionPlan {
  /** A resolution in spec.resolutions that the execution row does not hold yet: Core applies it. */
  resolve?: ResolutionEntry;
  /** The status the Approval should have, from the execution row as it is. */
  status: Status;
}

const PHASE_OF_STATE: Record<ExecutionRecord["state"], ApprovalPhase> = {
  started: "Executing",
  succeeded: "Succeeded",
  failed: "Failed",
  unknown: "Unknown",
};

function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** Whether the reconciler hands this Approval to {@link reconcileResolution}. */
export function needsResolution(approval: Approval): boolean {
  const phase = approval.status?.phase;
  return phase === "Unknown" || (approval.spec.autoExecution === true && phase === undefined);
}

/**
 * The plan for an Approval whose execution's outcome is unknown (or was, until a person resolved it):
 * resolve when spec.resolutions holds an entry the row does not; the phase follows the row (Unknown
 * while unknown; Succeeded | Failed after, with condition Executed reason ResolvedByPerson when a
 * person settled it); status.execution is copied from the row. No row: nothing to do but keep the
 * status. Pure.
 */
export function planResolution(approval: Approval, execution: ExecutionRecord | undefined): ResolutionPlan {
  const status: Status = { ...approval.status, observedGeneration: approval.metadata.generation };
  if (!execution) return { status };
  const entry = approval.spec.resolutions?.[0];
  const held =
    entry !== undefined &&
    execution.resolution?.resolver === entry.resolver &&
    execution.resolution.reason === entry.reason;
  const applied =
    held && status.conditions?.some((c) => c.type === "Executed" && c.reason === RESOLVED_BY_PERSON);
  const resolve =
    entry !== undefined && (execution.state === "unknown" || (held && !applied)) ? entry : undefined;

  const phase = PHASE_OF_STATE[execution.state];
  status.phase = phase;
  const resolution = execution.resolution;
  const summary =
    resolution && phase !== "Unknown"
      ? execution.message
      : execution.state === "unknown"
        ? (execution.message ?? execution.receipt?.message)
        : (execution.receipt?.message ?? execution.message);
  status.execution = {
    id: execution.id,
    state: execution.state,
    ...(execution.errorKind ? { errorKind: execution.errorKind } : {}),
    ...(summary ? { resultSummary: summary.slice(0, 4096) } : {}),
    startedAt: iso(execution.createdAtMicros),
    ...(execution.state !== "started" ? { finishedAt: iso(execution.updatedAtMicros) } : {}),
  };
  status.conditions = setCondition(
    status.conditions,
    {
      type: "Executed",
      status: phase === "Executing" ? "False" : "True",
      reason:
        phase === "Unknown"
          ? "Unknown"
          : phase === "Executing"
            ? "Executing"
            : resolution
              ? RESOLVED_BY_PERSON
              : OUTCOME_SETTLED,
      message:
        resolution && phase !== "Unknown"
          ? `resolved by ${resolution.resolver} as ${phase}: ${resolution.reason}`
          : phase === "Succeeded" || phase === "Failed"
            ? `the provider settled the unknown outcome as ${phase}${summary ? `: ${summary}` : ""}`
            : (summary ?? phase),
      observedGeneration: approval.metadata.generation,
    },
    // The time only matters when the condition changes; setCondition keeps it otherwise.
    new Date(Math.floor(execution.updatedAtMicros / 1000)),
  );
  return { ...(resolve ? { resolve } : {}), status };
}

/**
 * Applies {@link planResolution}: Core resolves the execution when the plan says so, the status
 * follows the row, and an outcome a person settled reaches the session's transcript once.
 * Errors: Postgres, audit and API errors (the work queue retries; every step is idempotent).
 */
export async function reconcileResolution(
  deps: ResolutionDeps,
  approval: Approval,
  log: Logger,
): Promise<ReconcileResult> {
  const view = {
    request: requestOf(approval),
    decisions: approval.spec.decisions,
    phase: approval.status?.phase ?? "Pending",
    uid: approval.metadata.uid,
  };
  let execution = await deps.core.executions.get(approval.spec.executionId);
  let plan = planResolution(approval, execution);
  if (plan.resolve) {
    const result = await resolveExecution(deps.core, { approval: view, resolution: plan.resolve });
    if (result.kind === "refused") {
      log.warn({ reason: result.reason }, result.message);
      deps.events.warning(approval, result.reason, result.message);
    }
    execution = result.execution ?? execution;
    plan = planResolution(approval, execution);
  }
  await writeStatusIfChanged(deps.clients, APPROVAL, approval, plan.status);
  if (plan.status.phase !== "Unknown" && plan.status.phase !== approval.status?.phase) {
    log.info({ phase: plan.status.phase }, "unknown outcome settled");
    deps.events.normal(
      approval,
      plan.status.conditions?.find((c) => c.type === "Executed")?.reason ?? String(plan.status.phase),
      `The outcome of execution ${approval.spec.executionId} is settled: ${plan.status.phase}.`,
    );
    await recordApprovalOutcome(
      deps.core,
      deps.transcripts,
      { ...approval, status: plan.status },
      deps.now().getTime() * 1000,
    );
  }
  // While unknown, look again when the leader's sweep next asks the provider: it may settle the row.
  if (plan.status.phase === "Unknown" && execution?.nextSettleMicros !== undefined) {
    const untilMs = Math.floor(execution.nextSettleMicros / 1000) - deps.now().getTime();
    return { requeueAfterMs: Math.max(1_000, untilMs + SETTLE_LOOK_AGAIN_MS) };
  }
  return undefined;
}

/** How long after a settle attempt is due the Approval looks at its row again (the sweep runs every 5 s). */
const SETTLE_LOOK_AGAIN_MS = 10_000;
