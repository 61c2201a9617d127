/**
 * The leader's conflict sweep: Core refuses a call whose Approval name is squatted and records it in
 * the audit chain (`approval.conflict`), but writes no status — it runs in the gateway, which may patch
 * none. Every `intervalMs` this sweep reads the conflicts recorded in the last
 * {@link CONFLICT_LOOK_BACK_MS} and marks each squatted Approval still in the cache phase Failed with
 * condition Ready=False reason Conflict:
 *
 *   records = audit.recentOfKind(approval.conflict, now − look-back)
 *   for each: squat = cache.get(namespace/name)          ; gone → nothing to do
 *             status = planConflictMark(squat, conflict) ; pure: another object, or already marked → none
 *             writeStatusIfChanged(status)                ; resourceVersion-guarded; 409 → next sweep
 *
 * The look-back bounds the work as the unknown-Auto record sweep's does (core/resolution.ts): the call
 * is refused at once and the sweep follows within seconds; a record older than that is not read again.
 */
import type { Logger } from "pino";
import type { Approval } from "../../api/kinds.ts";
import { APPROVAL } from "../../api/kinds.ts";
import { ApprovalCondition, ApprovalPhase, ApprovalReason } from "../../api/status/approval.ts";
import { AuditKind } from "../../core/audit.ts";
import type { AuditEntry, CoreDeps } from "../../core/ports.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import { isConflict } from "../../kube/runtime/client.ts";
import { setCondition } from "../../kube/runtime/conditions.ts";
import { writeStatusIfChanged } from "../../kube/runtime/status.ts";
import { namespaceNamedBy } from "../../store/approval-records.ts";
import { type SweepSettings, startPeriodicSweep } from "../periodic-sweep.ts";
import type { ApprovalStatus } from "./plan.ts";

/** How far back the sweep reads `approval.conflict` records. */
export const CONFLICT_LOOK_BACK_MS = 15 * 60_000;
/** At most this many records per sweep (the newest). */
const CONFLICT_SWEEP_LIMIT = 100;

/** A squat as its `approval.conflict` record names it. */
export interface RecordedConflict {
  namespace: string;
  name: string;
  executionId: string;
  atMicros: number;
  /** The squatting object's uid; absent in records of earlier versions. */
  approvalUid?: string | undefined;
}

/**
 * The squat an `approval.conflict` record names, or undefined when it names none. `payload.approval`
 * is `namespace/name`, or (records of earlier versions) the bare name with the namespace the session's.
 * Pure.
 */
export function conflictOf(record: AuditEntry): RecordedConflict | undefined {
  const approval = record.payload.approval;
  if (record.kind !== AuditKind.approvalConflict || typeof approval !== "string" || !record.executionId)
    return undefined;
  const name = approval.slice(approval.indexOf("/") + 1);
  const namespace = namespaceNamedBy(record, name);
  if (!namespace || !name) return undefined;
  const uid = record.payload.approvalUid;
  return {
    namespace,
    name,
    executionId: record.executionId,
    atMicros: record.atMicros,
    ...(typeof uid === "string" ? { approvalUid: uid } : {}),
  };
}

/** The Ready condition's message on a squat. */
export function conflictMessage(conflict: RecordedConflict): string {
  return `Approval ${conflict.name} already exists but was not created for execution ${conflict.executionId}; refusing it`;
}

/**
 * The status that marks `approval` as the squat `conflict` recorded, or undefined when nothing is to
 * be written: another object holds the name now (its uid differs, or — records without a uid — it was
 * created after the record), or it is marked already. Pure.
 */
export function planConflictMark(
  approval: Approval,
  conflict: RecordedConflict,
  now: Date,
): ApprovalStatus | undefined {
  if (conflict.approvalUid !== undefined) {
    if (approval.metadata.uid !== conflict.approvalUid) return undefined;
  } else {
    const created = Date.parse(String(approval.metadata.creationTimestamp ?? ""));
    // Second precision: an object created in the record's second still counts as the squat.
    if (Number.isNaN(created) || created > Math.ceil(conflict.atMicros / 1_000_000) * 1000) return undefined;
  }
  const marked =
    approval.status?.phase === ApprovalPhase.Failed &&
    approval.status.conditions?.some(
      (c) =>
        c.type === ApprovalCondition.Ready && c.status === "False" && c.reason === ApprovalReason.Conflict,
    );
  if (marked) return undefined;
  return {
    ...approval.status,
    phase: ApprovalPhase.Failed,
    conditions: setCondition(
      approval.status?.conditions,
      {
        type: ApprovalCondition.Ready,
        status: "False",
        reason: ApprovalReason.Conflict,
        message: conflictMessage(conflict),
      },
      now,
    ),
  };
}

/** What the sweep reads and writes. */
export interface ConflictSweepDeps {
  core: CoreDeps;
  caches: Caches;
  clients: KubeClients;
  now: () => Date;
}

/**
 * One sweep (see the header). Returns how many Approvals it marked. A write refused with 409 (the
 * cache was stale) is left to the next sweep; other write errors are logged and left so too.
 * Errors: the audit store's.
 */
export async function markRecordedConflicts(deps: ConflictSweepDeps, log: Logger): Promise<number> {
  const now = deps.now();
  const since = (now.getTime() - CONFLICT_LOOK_BACK_MS) * 1000;
  const records = await deps.core.audit.recentOfKind(AuditKind.approvalConflict, since, CONFLICT_SWEEP_LIMIT);
  const seen = new Set<string>();
  let marked = 0;
  for (const record of records) {
    const conflict = conflictOf(record);
    if (!conflict) continue;
    const key = `${conflict.namespace}/${conflict.name}/${conflict.approvalUid ?? ""}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const approval = deps.caches.approvals.get(conflict.name, conflict.namespace);
    const status = approval && planConflictMark(approval, conflict, now);
    if (!approval || !status) continue;
    try {
      await writeStatusIfChanged(deps.clients, APPROVAL, approval, status);
      marked++;
      log.warn(
        { namespace: conflict.namespace, name: conflict.name, executionId: conflict.executionId },
        "squatted Approval marked Failed (Conflict)",
      );
    } catch (error) {
      if (isConflict(error)) continue;
      log.warn(
        { namespace: conflict.namespace, name: conflict.name, err: String(error) },
        "could not mark a squatted Approval; the next sweep tries again",
      );
    }
  }
  return marked;
}

/** Starts the sweep every `settings.intervalMs` (periodic-sweep.ts: never overlapping; `stop()` waits for it). */
export function startConflictSweep(
  deps: ConflictSweepDeps,
  log: Logger,
  settings: SweepSettings,
): { stop(): Promise<void> } {
  return startPeriodicSweep("conflict sweep", () => markRecordedConflicts(deps, log), log, settings);
}
