/**
 * Resolving an unknown outcome (DESIGN §2 Approval, §4 step 8). When nobody knows whether a call took
 * effect, a person checks the business system and says so: `kubectl gatehouse resolve APPROVAL
 * --succeeded|--failed --reason …` appends to the Approval's `spec.resolutions` (admission: one entry,
 * in their own name, only while the Approval is Unknown, only with the RBAC verb `resolve`). Core
 * records it on the execution row — unknown → succeeded | failed, the row keeping that a person, not
 * a receipt, settled it — and appends `execution.resolved` exactly once.
 *
 * A call that ran without an Approval (Auto) and ended unknown gets one, so it can be resolved the
 * same way: an Approval of the usual name for its execution, `spec.autoExecution: true` (it takes no
 * decisions), phase Unknown. Core creates it when `execute` returns unknown; the leader's sweep
 * creates any still missing (rows recovered to unknown, or a crash in between).
 */

import { ApprovalEventReason, ApprovalPhase, type ResolutionOutcome } from "../api/status/approval.ts";
import { AuditKind } from "./audit.ts";
import type { JsonObject } from "./canonical.ts";
import { approvalNameOf, idempotencyKeyOf } from "./execution-identity.ts";
import type { ApprovalRequest, ApprovalView, CoreDeps, ExecutionRecord } from "./ports.ts";
import { markFinishAudited } from "./provider-call.ts";
import { toolNameOf } from "./tool-names.ts";

/** One entry of an Approval's `spec.resolutions`. */
export interface ResolutionEntry {
  resolver: string;
  outcome: ResolutionOutcome;
  reason: string;
}

/** Input of {@link resolveExecution}: the Approval as read, and the resolution to apply. */
export interface ResolveInput {
  approval: ApprovalView;
  resolution: ResolutionEntry;
}

/**
 * Result of {@link resolveExecution}:
 * - `resolved`: the row holds this resolution (now or from an earlier pass) and the chain its
 *   `execution.resolved` record;
 * - `refused`: nothing changed — there is no execution, or it was settled otherwise first (a late
 *   receipt or status query, or another resolution); `reason` is CamelCase.
 */
export type ResolveResult =
  | { kind: "resolved"; execution: ExecutionRecord; recordedNow: boolean }
  | { kind: "refused"; reason: string; message: string; execution?: ExecutionRecord };

const STATE_OF_OUTCOME = { Succeeded: "succeeded", Failed: "failed" } as const;

/** `resolved by alice: <reason>`: the row's message after a person's resolution. */
export function resolutionMessageOf(resolution: ResolutionEntry): string {
  return `resolved by ${resolution.resolver}: ${resolution.reason}`;
}

function holds(execution: ExecutionRecord, resolution: ResolutionEntry): boolean {
  return (
    execution.resolution?.resolver === resolution.resolver &&
    execution.resolution.reason === resolution.reason &&
    execution.state === STATE_OF_OUTCOME[resolution.outcome]
  );
}

/**
 * Applies a person's resolution to the Approval's execution: records it on the row while the row is
 * `unknown`, then appends `execution.resolved` (actor: the resolver; payload: resolver, outcome,
 * reason, approval and its uid, the seq of the unknown finish it settles) unless the chain has it,
 * and marks that record as the row's finish. Idempotent: a repeat appends nothing.
 * Errors: throws when Postgres or the audit log fail (the caller retries; the row tells what is done).
 */
export async function resolveExecution(deps: CoreDeps, input: ResolveInput): Promise<ResolveResult> {
  const { approval, resolution } = input;
  const executionId = approval.request.executionId;
  const found = await deps.executions.get(executionId);
  if (!found) {
    return {
      kind: "refused",
      reason: ApprovalEventReason.NoExecution,
      message: `Approval ${approval.request.name} has no execution to resolve`,
    };
  }
  // The unknown finish being settled, read before the resolution replaces the row's finish.
  const records = await deps.audit.recordsOf(executionId);
  const already = records.find(
    (r) => r.kind === AuditKind.executionResolved && r.payload.approvalUid === (approval.uid ?? null),
  );
  let execution = found;
  let recordedNow = false;
  if (found.state === "unknown") {
    const recorded = await deps.executions.recordResolution(executionId, {
      state: STATE_OF_OUTCOME[resolution.outcome],
      resolver: resolution.resolver,
      reason: resolution.reason,
      message: resolutionMessageOf(resolution),
      atMicros: deps.clock.nowMicros(),
    });
    execution = recorded.execution;
    recordedNow = recorded.recorded;
  }
  if (!holds(execution, resolution)) {
    return {
      kind: "refused",
      reason: ApprovalEventReason.AlreadySettled,
      message: `execution ${executionId} is ${execution.state}${execution.resolution ? ` (resolved by ${execution.resolution.resolver})` : ""}; the resolution by ${resolution.resolver} changes nothing`,
      execution,
    };
  }
  if (!already) {
    const unknownFinish = records.findLast(
      (r) => r.kind === AuditKind.executionFinished && r.payload.state === "unknown",
    );
    const payload: JsonObject = {
      approval: `${approval.request.namespace}/${approval.request.name}`,
      approvalUid: approval.uid ?? null,
      resolver: resolution.resolver,
      outcome: resolution.outcome,
      reason: resolution.reason,
      state: execution.state,
      unknownFinishSeq: unknownFinish?.seq ?? null,
    };
    const appended = await deps.audit.append({
      kind: AuditKind.executionResolved,
      actor: resolution.resolver,
      outcome: resolution.outcome === ApprovalPhase.Succeeded ? "success" : "failure",
      sessionUid: approval.request.sessionRef.uid,
      executionId,
      atMicros: deps.clock.nowMicros(),
      payload,
    });
    await markFinishAudited(deps, executionId, appended.seq);
    deps.metrics?.executionFinished(execution.state === "succeeded" ? "succeeded" : "failed", undefined);
  }
  deps.logger.info(
    { executionId, resolver: resolution.resolver, outcome: resolution.outcome, recordedNow },
    "unknown outcome resolved by a person",
  );
  return { kind: "resolved", execution, recordedNow };
}

/** Largest `spec.arguments` an Approval holds (api/approval.ts). */
const MAX_APPROVAL_ARGUMENTS = 65_536;

/** The Approval that records an Auto execution of unknown outcome, as a pure function of its row. */
export function autoExecutionRecordOf(
  execution: ExecutionRecord,
  capability: { name: string; schemaDigest: string } | undefined,
): ApprovalRequest {
  const seconds = Math.floor(execution.createdAtMicros / 1_000_000);
  return {
    namespace: execution.session.namespace,
    name: approvalNameOf(execution.id),
    executionId: execution.id,
    sessionRef: { name: execution.session.name, uid: execution.session.uid },
    capability: capability?.name ?? execution.capability,
    capabilityId: execution.capability,
    providerRef: execution.providerRef,
    arguments: execution.argumentsCanonical,
    argumentsDigest: execution.requestDigest,
    schemaDigest: capability?.schemaDigest ?? "",
    requester: execution.request.subject,
    // Nobody decides a call that already ran: no approvers, and admission refuses decisions on it.
    approvers: { users: [], groups: [] },
    requiredApprovals: 1,
    allowSelfApproval: false,
    // When it ran; nothing expires it (the operator expires only Pending Approvals).
    expiresAt: new Date(seconds * 1000).toISOString().replace(".000Z", "Z"),
    ...(execution.idempotencyKey !== idempotencyKeyOf(execution.id)
      ? { idempotencyKey: execution.idempotencyKey }
      : {}),
    autoExecution: true,
  };
}

/**
 * Makes sure an Auto execution whose outcome is unknown has its record Approval, which the approval
 * reconciler moves to phase Unknown so a person can resolve it. Returns that Approval's name, or
 * undefined when the row needs none (not unknown, or it has an Approval of its own) or cannot have one
 * (arguments beyond what an Approval holds, or the name is squatted: audited `approval.conflict`, which
 * the controller marks on the squat). Audits `approval.unknown_recorded`
 * when it creates one. Errors: throws on API or audit failures (the leader's sweep tries again).
 */
export async function recordUnknownAutoExecution(
  deps: CoreDeps,
  execution: ExecutionRecord,
): Promise<string | undefined> {
  if (execution.state !== "unknown" || execution.approvalName !== undefined) return undefined;
  const log = { executionId: execution.id, session: execution.session.uid };
  if (new TextEncoder().encode(execution.argumentsCanonical).length > MAX_APPROVAL_ARGUMENTS) {
    deps.logger.error(log, "an Auto execution of unknown outcome has arguments too large for an Approval");
    return undefined;
  }
  const capability = await deps.catalog.resolve(
    execution.session.namespace,
    toolNameOf(execution.capability),
  );
  const request = autoExecutionRecordOf(
    execution,
    capability?.id === execution.capability ? capability : undefined,
  );
  // Created phase-less: the approval reconciler moves it to Unknown from this row (with the message
  // saying how to resolve it, controllers/approval/resolution.ts).
  const { handle, created } = await deps.approvals.createOrGetRecord(request);
  const ours =
    handle.ownedBySession &&
    handle.identity.executionId === execution.id &&
    handle.identity.sessionUid === execution.session.uid &&
    handle.identity.capabilityId === execution.capability &&
    handle.identity.argumentsDigest === execution.requestDigest;
  const audit = (kind: string, outcome: "unknown" | "failure", payload: JsonObject) =>
    deps.audit.append({
      kind,
      actor: "gatehouse",
      outcome,
      sessionUid: execution.session.uid,
      executionId: execution.id,
      atMicros: deps.clock.nowMicros(),
      payload: { approval: `${request.namespace}/${request.name}`, ...payload },
    });
  if (!ours) {
    // The controller marks the squat Failed from this record (controllers/approval/conflict-sweep.ts).
    await audit(AuditKind.approvalConflict, "failure", {
      ...(handle.uid ? { approvalUid: handle.uid } : {}),
      capability: execution.capability,
    });
    deps.logger.warn(log, "approval name of an unknown Auto execution squatted");
    return undefined;
  }
  if (created) {
    await audit(AuditKind.approvalUnknownRecorded, "unknown", {
      ...(handle.uid ? { approvalUid: handle.uid } : {}),
      capability: execution.capability,
      argumentsDigest: execution.requestDigest,
    });
  }
  return request.name;
}

/**
 * {@link recordUnknownAutoExecution} for a call that has just ended: never throws, since the call has
 * run and its answer must reach the agent; a failure is logged and left to the leader's sweep.
 */
export async function tryRecordUnknownAutoExecution(
  deps: CoreDeps,
  execution: ExecutionRecord,
): Promise<string | undefined> {
  try {
    return await recordUnknownAutoExecution(deps, execution);
  } catch (error) {
    deps.logger.warn(
      { executionId: execution.id, err: String(error) },
      "could not record the Approval of an unknown Auto execution now; the leader's sweep will",
    );
    return undefined;
  }
}

/**
 * How far back the leader's sweep looks for Auto executions of unknown outcome without their Approval.
 * The call itself creates the Approval at once; the sweep covers what a crash or a recovery to
 * unknown left in the last minutes. Older rows are not looked at again every sweep: one whose session
 * is gone (its record Approval collected with it) would otherwise cost API requests forever.
 */
export const UNKNOWN_RECORD_WINDOW_MS = 15 * 60_000;

/**
 * The leader's sweep: gives every Auto execution that turned unknown in the last
 * {@link UNKNOWN_RECORD_WINDOW_MS} its Approval (at most `limit` rows, the most recently finished
 * first). Returns how many it created or found. A row that fails is logged and left for the next
 * sweep. Errors: the store's.
 */
export async function recordUnknownAutoExecutions(deps: CoreDeps, limit = 100): Promise<number> {
  const since = deps.clock.nowMicros() - UNKNOWN_RECORD_WINDOW_MS * 1000;
  const rows = await deps.executions.listUnknownWithoutApproval(since, limit);
  let count = 0;
  for (const row of rows) {
    try {
      // From the cache first: a row whose record exists already costs no API request.
      const existing = await deps.approvals.get(
        row.session.namespace,
        approvalNameOf(row.id),
        row.session.uid,
      );
      // Its own record, whatever its phase: the approval reconciler moves it to Unknown.
      if (
        existing?.ownedBySession &&
        existing.identity.executionId === row.id &&
        existing.identity.sessionUid === row.session.uid
      )
        count++;
      else if (await recordUnknownAutoExecution(deps, row)) count++;
    } catch (error) {
      deps.logger.warn(
        { executionId: row.id, err: String(error) },
        "could not record the Approval of an unknown Auto execution",
      );
    }
  }
  return count;
}
