/**
 * Approval reconciler: a pure planner (plan.ts) and this thin applier over a writer port (writer.ts).
 *
 *   approval = cache.get(key)                      ; gone → nothing to do
 *   observed = what plan.ts's observationsFor asks : the decision-rules verdict (a check started after
 *              the cached Approval was observed, kube/admission/guard.ts), its audit history, the
 *              Capability's current approval settings, its execution row — a settled Approval needs none
 *   plan = planApproval(approval, session, now, observed)
 *   plan.resolve → Core records the person's resolution of an unknown outcome (core/resolution.ts),
 *              then plan again on the row it left
 *   append plan.audit (together) before the status write — or, for late-decision reports, after it
 *   write plan.status (resourceVersion-guarded), emit its Events, observe the decision metric,
 *   record the settled outcome in the session's transcript
 *   plan.dispatch → Core's executeApproved (beside the Executing write, unless late-decision reports
 *              wait on that write) → planDispatchOutcome → write the final status, its Events, the
 *              transcript outcome
 *   plan.finalizer → add or remove gatehouse.dev/audit-lifecycle
 *   return plan.requeueAfterMs
 *   the database unavailable at any step → planDatabaseUnavailable's status (Executed=False,
 *              DatabaseUnavailable), and the error to the work queue, which retries within seconds
 * So a pass writes the status at most twice: once, or beside and after a dispatch.
 */
import type { Logger } from "pino";
import type { Approval } from "../../api/kinds.ts";
import { historyWith, readHistory } from "../../core/approval-lifecycle.ts";
import { approvalSettings } from "../../core/policy.ts";
import type { AppendedRecord, CoreDeps, DecisionRulesVerdict } from "../../core/ports.ts";
import { sessionByUid } from "../../kube/cache-indexes.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import type { EventRecorder } from "../../kube/runtime/events.ts";
import type { ReconcileResult } from "../../kube/runtime/workqueue.ts";
import type { OperatorMetrics } from "../../observability/metrics.ts";
import { timedPort } from "../../observability/port-timing.ts";
import type { TranscriptStore } from "../../store/transcripts.ts";
import { isDatabaseUnavailable } from "../../store/unavailable.ts";
import {
  type ApprovalPlanInput,
  observationsFor,
  type PlannedLog,
  planApproval,
  planDatabaseUnavailable,
  planDispatchOutcome,
  viewOf,
} from "./plan.ts";
import { type ApprovalControllerSettings, type ApprovalWriter, kubeApprovalWriter } from "./writer.ts";

/**
 * Concurrent reconciles of the Approval controller (the work queue never gives one key to two
 * workers, so each Approval still has one pass at a time; its execution id, the claim and the audit
 * chain keep every call to at most once across passes). A dispatching pass is a row of round trips —
 * the admission check, the audit appends, the claim, the provider's target and call, two status
 * writes, the transcript — about 110 ms on a loaded 2-core machine, so with 2 workers decided
 * Approvals waited in the queue and ran at 6–11 a second (test/bench/scale.ts at 2 000 and 1 000
 * sessions); with 8, 14–15, the API server and Postgres setting the pace.
 */
export const APPROVAL_WORKERS = 8;

export interface ApprovalDeps {
  clients: KubeClients;
  caches: Caches;
  core: CoreDeps;
  transcripts: TranscriptStore;
  now: () => Date;
  events: EventRecorder;
  /**
   * Whether admission enforces the decision rules, by a check started at or after `sinceMs`
   * (kube/admission/guard.ts); if not, fail closed.
   */
  decisionRules: (sinceMs: number) => Promise<DecisionRulesVerdict>;
  /**
   * When the cache took in the Approval's current version (epoch ms; the manager's informer handler),
   * the time its decision rules must have been checked since; unknown (cached before the controllers
   * started): the pass's own time. A decided Approval waiting in a busy queue then takes the check that
   * already ran since instead of waiting for a new one.
   */
  observedAt?: (namespace: string, name: string) => number | undefined;
  metrics?: Pick<OperatorMetrics, "approvalDecided" | "portCalled">;
  settings: ApprovalControllerSettings;
}

/** Reconciles one Approval: observe, plan, apply. */
export async function reconcileApproval(
  deps: ApprovalDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const approval = deps.caches.approvals.get(name, namespace);
  if (!approval) return undefined;
  const now = deps.now();
  const applier = kubeApprovalWriter(deps, now);
  // Each step of the pass is timed as port "approval" (status writes, audit appends, the dispatch).
  const writer = deps.metrics ? timedPort(applier, "approval", deps.metrics.portCalled) : applier;
  try {
    return await applyApproval(writer, await observe(deps, approval, now), log);
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    await sayDatabaseUnavailable(writer, deps.caches.approvals.get(name, namespace) ?? approval, now, log);
    throw error;
  }
}

/**
 * Writes planDatabaseUnavailable's status, so the Approval shows why it waits; the outage's error then
 * goes on to the work queue, which retries within seconds (controller.ts). A failed write (this pass
 * moved the status first, say) is left to the next pass: the outage is what to report.
 */
async function sayDatabaseUnavailable(writer: ApprovalWriter, approval: Approval, now: Date, log: Logger) {
  const status = planDatabaseUnavailable(approval, now);
  if (!status) return;
  await writer.writeStatus(approval, status).catch((error: unknown) => {
    log.debug(
      { err: String(error) },
      "could not say DatabaseUnavailable on the Approval; the next pass will",
    );
  });
}

/** Reads what the plan of `approval` needs (plan.ts `observationsFor`), side by side. */
async function observe(deps: ApprovalDeps, approval: Approval, now: Date): Promise<ApprovalPlanInput> {
  const session = sessionByUid(deps.caches, approval.metadata.namespace, approval.spec.sessionRef.uid);
  const needs = observationsFor(approval, session);
  const view = viewOf(approval);
  const [rules, history, capability, execution] = await Promise.all([
    needs.rules ? deps.decisionRules(rulesCheckedSince(deps, approval, now)) : undefined,
    needs.history ? readHistory(deps.core, view) : undefined,
    needs.policy ? deps.core.catalog.get(approval.metadata.namespace, approval.spec.capability) : undefined,
    needs.execution ? deps.core.executions.get(approval.spec.executionId) : undefined,
  ]);
  // A Capability that no longer offers the approved id sets no policy for it; dispatch refuses it.
  const policy =
    capability && capability.id === approval.spec.capabilityId
      ? approvalSettings(capability.policy, view.request.requester, deps.core.config.approvalTtlSeconds)
      : undefined;
  return { approval, session, now, rules, history, policy, execution };
}

/** The time a decision-rules check must have started since to judge `approval` as cached. */
export function rulesCheckedSince(
  deps: Pick<ApprovalDeps, "observedAt">,
  approval: Approval,
  now: Date,
): number {
  const seen = deps.observedAt?.(approval.metadata.namespace, approval.metadata.name);
  return Math.min(seen ?? now.getTime(), now.getTime());
}

function logAll(log: Logger, lines: readonly PlannedLog[]) {
  for (const line of lines) log[line.level](line.fields, line.message);
}

/**
 * Applies `planApproval(input)` through `writer`, in the order the plan says (see the header).
 * Errors: the writer's; the work queue retries, and every step is safe to repeat (the chain and the
 * execution id dedupe Core's records, the resourceVersion guards the status).
 */
export async function applyApproval(
  writer: ApprovalWriter,
  input: ApprovalPlanInput,
  log: Logger,
): Promise<ReconcileResult> {
  let plan = planApproval(input);
  if (plan.resolve) {
    // Core records the person's resolution on the row and in the chain; the pass follows that row.
    const result = await writer.resolve(input.approval, plan.resolve);
    if (result.kind === "refused") {
      log.warn({ reason: result.reason }, result.message);
      writer.event(input.approval, { type: "Warning", reason: result.reason, message: result.message });
    }
    plan = {
      ...planApproval({ ...input, execution: result.execution ?? input.execution }),
      resolve: undefined,
    };
  }
  logAll(log, plan.log);
  let approval = input.approval;
  let appended: AppendedRecord[] = [];
  if (plan.auditWhen === "beforeStatus" && plan.audit.length > 0)
    appended = await writer.appendAudit(plan.audit);
  const dispatch = plan.dispatch;
  const request = dispatch && {
    approval: input.approval,
    session: dispatch.session,
    rules: dispatch.rules,
    history: dispatch.history && historyWith(dispatch.history, viewOf(input.approval), plan.audit, appended),
  };
  // A dispatch's Executing write goes out beside the call, not before it: what runs is decided by the
  // chain (the approved record just appended) and the execution row, never by the status, and a pass
  // that dies before either lands resumes from the chain. Reports of late decisions are still appended
  // after the write that counts them, before the call.
  const beside =
    request !== undefined &&
    plan.status !== undefined &&
    !(plan.auditWhen === "afterStatus" && plan.audit.length > 0);
  const [written, dispatched] = await Promise.allSettled([
    plan.status ? writer.writeStatus(approval, plan.status) : approval,
    beside ? writer.dispatch(request) : undefined,
  ]);
  // Both settle before the pass goes on: a failed write is retried only after this dispatch finished.
  if (written.status === "rejected") throw written.reason;
  if (plan.status) approval = { ...written.value, status: plan.status };
  if (plan.auditWhen === "afterStatus" && plan.audit.length > 0) await writer.appendAudit(plan.audit);
  for (const event of plan.events) writer.event(approval, event);
  if (plan.decided) writer.observeDecided(plan.decided.outcome, plan.decided.durationMs);
  if (plan.recordOutcome) await writer.recordOutcome(approval);

  if (request && plan.status) {
    if (dispatched.status === "rejected") throw dispatched.reason;
    const result = dispatched.value ?? (await writer.dispatch(request));
    const outcome = planDispatchOutcome(input.approval, plan.status, result, input.now);
    logAll(log, outcome.log);
    approval = { ...(await writer.writeStatus(approval, outcome.status)), status: outcome.status };
    for (const event of outcome.events) writer.event(approval, event);
    if (outcome.recordOutcome) await writer.recordOutcome(approval);
    return outcome.requeueAfterMs !== undefined ? { requeueAfterMs: outcome.requeueAfterMs } : undefined;
  }
  // The status write moved the resourceVersion: the finalizer is changed on what it returned.
  if (plan.finalizer === "add") await writer.addFinalizer(approval);
  if (plan.finalizer === "remove") await writer.removeFinalizer(approval);
  return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : undefined;
}
