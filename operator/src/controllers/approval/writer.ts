/**
 * What the approval reconciler's applier does to the world, as a small port (a pure planner, a thin
 * applier over this writer): the real one over the API server, Postgres and Core
 * ({@link kubeApprovalWriter}); an in-memory one for tests (in-memory-writer.ts).
 */
import { isDeepStrictEqual } from "node:util";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { APPROVAL } from "../../api/kinds.ts";
import { ApprovalPhase, type DecidedPhase } from "../../api/status/approval.ts";
import { APPROVAL_FINALIZER } from "../../api/well-known.ts";
import type { OperatorConfig } from "../../config.ts";
import type { ApprovalHistory } from "../../core/approval-lifecycle.ts";
import type { ExecuteApprovedResult } from "../../core/execute-approved.ts";
import { failpointSite } from "../../core/failpoints.ts";
import { executeApproved } from "../../core/invoke.ts";
import type { AppendedRecord, AuditEntry, CoreDeps, DecisionRulesVerdict } from "../../core/ports.ts";
import { type ResolutionEntry, type ResolveResult, resolveExecution } from "../../core/resolution.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import type { EventRecorder } from "../../kube/runtime/events.ts";
import { addFinalizer, removeFinalizer } from "../../kube/runtime/finalizers.ts";
import { writeStatusIfChanged } from "../../kube/runtime/status.ts";
import { sessionContextOf } from "../../kube/session-context.ts";
import type { OperatorMetrics } from "../../observability/metrics.ts";
import type { TranscriptStore } from "../../store/transcripts.ts";
import { recordApprovalOutcome } from "../../transcripts/approval-outcome.ts";
import type { ApprovalStatus, PlannedEvent } from "./plan.ts";
import { viewOf } from "./plan.ts";

/** What Core's executeApproved is given for one Approval. */
export interface DispatchRequest {
  approval: Approval;
  session: AgentSession | undefined;
  rules: DecisionRulesVerdict;
  history?: ApprovalHistory | undefined;
}

/** The applier's side effects. Every method throws its dependency's error; the work queue retries. */
export interface ApprovalWriter {
  /** Appends `entries` in order, together (`AuditLog.appendAll`); returns where each landed. */
  appendAudit(entries: readonly AuditEntry[]): Promise<AppendedRecord[]>;
  /**
   * Writes `status` unless it equals the Approval's, guarded by its resourceVersion (409 Conflict
   * when stale). Returns the Approval as written (as given when nothing changed).
   */
  writeStatus(approval: Approval, status: ApprovalStatus): Promise<Approval>;
  addFinalizer(approval: Approval): Promise<void>;
  removeFinalizer(approval: Approval): Promise<void>;
  event(approval: Approval, event: PlannedEvent): void;
  /** gatehouse_approval_decision_seconds: creation → decision. */
  observeDecided(outcome: DecidedPhase, durationMs: number): void;
  /** Writes a settled Approval's outcome into its session's transcript, once. */
  recordOutcome(approval: Approval): Promise<void>;
  /** Re-checks and executes the approved call through Core (exactly once per execution id). */
  dispatch(request: DispatchRequest): Promise<ExecuteApprovedResult>;
  /** Records a person's resolution of the execution's unknown outcome through Core (once). */
  resolve(approval: Approval, resolution: ResolutionEntry): Promise<ResolveResult>;
}

const BEFORE_AUDIT = failpointSite("approval.before-audit");
const AFTER_AUDIT = failpointSite("approval.after-audit");
const BEFORE_STATUS_WRITE = failpointSite("approval.before-status-write");
const AFTER_STATUS_WRITE = failpointSite("approval.after-status-write");

/**
 * What the Approval controller is given of the operator's configuration (built once by
 * controllers/manager.ts): the session ceilings, which a dispatched call's session context carries.
 * The default Approval lifetime is Core's (`core.config`); not core/policy.ts's ApprovalSettings, which
 * are a Capability's.
 */
export const APPROVAL_CONTROLLER_SETTINGS = [
  "sessionCeilings",
] as const satisfies readonly (keyof OperatorConfig)[];
export type ApprovalControllerSettings = Pick<OperatorConfig, (typeof APPROVAL_CONTROLLER_SETTINGS)[number]>;

/** What the real writer uses. */
export interface KubeApprovalWriterDeps {
  clients: KubeClients;
  caches: Caches;
  core: CoreDeps;
  transcripts: TranscriptStore;
  events: EventRecorder;
  settings: ApprovalControllerSettings;
  metrics?: Pick<OperatorMetrics, "approvalDecided"> | undefined;
}

/** The writer over the API server (status, finalizer, Events), Postgres (audit, transcript) and Core. */
export function kubeApprovalWriter(deps: KubeApprovalWriterDeps, now: Date): ApprovalWriter {
  return {
    // The failpoints mark writes that happen: a resync that changes nothing passes none of them.
    async appendAudit(entries) {
      if (entries.length > 0) deps.core.failpoint?.(BEFORE_AUDIT);
      const appended = await deps.core.audit.appendAll(entries);
      if (entries.length > 0) deps.core.failpoint?.(AFTER_AUDIT);
      return appended;
    },
    async writeStatus(approval, status) {
      if (isDeepStrictEqual(approval.status ?? {}, status)) return approval;
      deps.core.failpoint?.(BEFORE_STATUS_WRITE);
      const written = (await writeStatusIfChanged(deps.clients, APPROVAL, approval, status)) ?? approval;
      deps.core.failpoint?.(AFTER_STATUS_WRITE);
      return written;
    },
    addFinalizer: (approval) => addFinalizer(deps.clients, APPROVAL, approval, APPROVAL_FINALIZER),
    removeFinalizer: (approval) => removeFinalizer(deps.clients, APPROVAL, approval, APPROVAL_FINALIZER),
    event(approval, event) {
      const say = event.type === "Warning" ? deps.events.warning : deps.events.normal;
      say(approval, event.reason, event.message);
    },
    observeDecided(outcome, durationMs) {
      deps.metrics?.approvalDecided(outcome, durationMs);
    },
    async recordOutcome(approval) {
      await recordApprovalOutcome(deps.core, deps.transcripts, approval, now.getTime() * 1000);
    },
    resolve(approval, resolution) {
      return resolveExecution(deps.core, { approval: viewOf(approval), resolution });
    },
    async dispatch(request) {
      const found = request.session;
      const session = found ? sessionContextOf(found, deps.settings.sessionCeilings) : undefined;
      return executeApproved(deps.core, {
        approval: { ...viewOf(request.approval), phase: ApprovalPhase.Approved },
        ...(session ? { session } : {}),
        rules: request.rules,
        history: request.history,
      });
    },
  };
}
