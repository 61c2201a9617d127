/**
 * Approval reconciler:
 *   approval = cache.get(key)
 *   rules = a check of the admission policies started after it was observed (kube/admission-guard.ts)
 *   being deleted → Core ends it in the audit chain (a Pending one: its decisions, then Cancelled,
 *             ApprovalDeleted), then the finalizer gatehouse.dev/audit-lifecycle goes
 *   no finalizer yet (created by an earlier version) → add it
 *   Pending and its session gone, cancelled or ended → Core records its decisions and Cancelled
 *   Pending → Core observes the decisions (core/approval-lifecycle.ts): each recorded once in the
 *             chain, then Approved | Rejected | Expired recorded there before the status says so, or
 *             still Pending; while the rules are not enforced no decision counts (condition
 *             DecisionRulesEnforced=False)
 *   not Pending and decisions appended since it was decided (admission refuses them; anything that
 *             slips through, e.g. while the decision policy is not installed) → they change nothing;
 *             each is reported once: Event DecisionIgnored (Warning) and an audit record
 *   Approved | Executing → dispatch through Core (executeApproved): it re-checks what admission cannot
 *             (rules enforced, the approval in the chain, session alive, policy, schema digest,
 *             argument digest) and executes exactly once (the execution row is claimed by its
 *             idempotency key, so a repeated dispatch is safe)
 *   status = phase, approvals, ignoredDecisions, observedDecisions, execution
 * When the phase first leaves Pending for Approved, Rejected or Expired, the time since the
 * Approval's creation is observed as gatehouse_approval_decision_seconds; Rejected and Expired also
 * get an Event.
 */
import type { Logger } from "pino";
import { isTerminalSessionPhase } from "../../api/agentsession.ts";
import type { Decision } from "../../api/approval.ts";
import type { Approval } from "../../api/kinds.ts";
import { APPROVAL } from "../../api/kinds.ts";
import { APPROVAL_FINALIZER } from "../../api/well-known.ts";
import {
  type ApprovalHistory,
  decideApproval,
  endApproval,
  endUndispatched,
} from "../../core/approval-lifecycle.ts";
import { AuditKind } from "../../core/audit.ts";
import { executeApproved } from "../../core/invoke.ts";
import type { SessionCeilings } from "../../core/limits.ts";
import type {
  ApprovalPhase,
  ApprovalView,
  CoreDeps,
  DecisionRulesVerdict,
  ExecutionRecord,
} from "../../core/ports.ts";
import { isSettled, recordApprovalOutcome } from "../../kube/approval-outcome.ts";
import { requestOf } from "../../kube/approvals.ts";
import type { Caches } from "../../kube/caches.ts";
import type { KubeClients } from "../../kube/client.ts";
import { setCondition } from "../../kube/conditions.ts";
import type { EventRecorder } from "../../kube/events.ts";
import { addFinalizer, hasFinalizer, removeFinalizer } from "../../kube/finalizers.ts";
import type { OperatorMetrics } from "../../kube/metrics.ts";
import { sessionContextOf } from "../../kube/session-context.ts";
import { writeStatusIfChanged } from "../../kube/status.ts";
import type { ReconcileResult } from "../../kube/workqueue.ts";
import type { SessionRecords } from "../../store/session-records.ts";
import type { TranscriptStore } from "../../store/transcripts.ts";
import { needsResolution, reconcileResolution } from "./resolution.ts";

export interface ApprovalDeps {
  clients: KubeClients;
  caches: Caches;
  core: CoreDeps;
  transcripts: TranscriptStore;
  now: () => Date;
  events: EventRecorder;
  /**
   * Whether admission enforces the decision rules, by a check started at or after `sinceMs`
   * (kube/admission-guard.ts); if not, fail closed.
   */
  decisionRules: (sinceMs: number) => Promise<DecisionRulesVerdict>;
  metrics?: Pick<OperatorMetrics, "approvalDecided">;
  /** The operator's ceilings on session limits. */
  ceilings: SessionCeilings;
  records: SessionRecords;
}

type Status = NonNullable<Approval["status"]>;

const PHASE_OF_STATE: Record<ExecutionRecord["state"], ApprovalPhase> = {
  started: "Executing",
  succeeded: "Succeeded",
  failed: "Failed",
  unknown: "Unknown",
};

function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** status.execution from an execution row. */
export function executionStatusOf(execution: ExecutionRecord): Status["execution"] {
  // For an unknown outcome Core's own message says what a human must check; the provider's says less.
  const summary =
    execution.state === "unknown"
      ? (execution.message ?? execution.receipt?.message)
      : (execution.receipt?.message ?? execution.message);
  return {
    id: execution.id,
    state: execution.state,
    ...(execution.errorKind ? { errorKind: execution.errorKind } : {}),
    ...(summary ? { resultSummary: summary.slice(0, 4096) } : {}),
    startedAt: iso(execution.createdAtMicros),
    ...(execution.state !== "started" ? { finishedAt: iso(execution.updatedAtMicros) } : {}),
  };
}

/** A decision appended after the Approval was decided, with its index in spec.decisions. */
export interface LateDecision {
  index: number;
  decision: Decision;
}

/**
 * The decisions of a decided (non-Pending) Approval that the operator has not taken into account:
 * those beyond status.observedDecisions. Without that count (an Approval decided before the operator
 * kept it) every decision present counts as observed. Pure.
 */
export function lateDecisionsOf(approval: Approval): LateDecision[] {
  const observed = approval.status?.observedDecisions;
  if (observed === undefined) return [];
  return approval.spec.decisions.slice(observed).map((decision, i) => ({ index: observed + i, decision }));
}

/** The Event message about a late decision: who decided what, and the phase it found. */
export function lateDecisionMessage(late: LateDecision, phase: ApprovalPhase): string {
  const { approver, verdict } = late.decision;
  return `Decision ${verdict} by ${approver} (spec.decisions[${late.index}]) ignored: the Approval is already ${phase} and takes no more decisions; nothing changed.`;
}

/**
 * Reports the late decisions of a decided Approval, each exactly once. The count is written first,
 * guarded by the cached resourceVersion: a stale cache (our own earlier report not yet seen) then
 * fails with 409 and reports nothing, instead of reporting twice. Then each decision gets an audit
 * record (kind approval.decision_ignored; the approver as written in the decision, which no admission
 * checked) and a Warning Event. Returns the Approval as written (or as cached when nothing changed).
 * Errors: the status write's (409 → requeue) and the audit append's; a crash between the write and
 * the append loses that record, which the log line before the write still names.
 */
async function reportLateDecisions(
  deps: ApprovalDeps,
  approval: Approval,
  status: Status,
  phase: ApprovalPhase,
  now: Date,
  log: Logger,
): Promise<Approval> {
  const late = lateDecisionsOf(approval);
  const observed = approval.status?.observedDecisions;
  if (observed !== undefined && observed > approval.spec.decisions.length) {
    log.warn(
      { observedDecisions: observed, decisions: approval.spec.decisions.length },
      "spec.decisions is shorter than the decisions already observed: entries were removed",
    );
  }
  status.observedDecisions = approval.spec.decisions.length;
  if (late.length > 0) {
    status.ignoredDecisions = [
      ...(status.ignoredDecisions ?? []),
      ...late.map((l) => ({
        approver: l.decision.approver,
        reason: `${l.decision.verdict} appended when the Approval was already ${phase}; changes nothing`,
      })),
    ].slice(-32);
    log.warn(
      {
        phase,
        late: late.map((l) => ({
          index: l.index,
          approver: l.decision.approver,
          verdict: l.decision.verdict,
        })),
      },
      "decisions appended after the Approval was decided; ignoring them",
    );
  }
  const written = (await writeStatusIfChanged(deps.clients, APPROVAL, approval, status)) ?? approval;
  for (const l of late) {
    await deps.core.audit.append({
      kind: AuditKind.decisionIgnored,
      actor: "gatehouse",
      outcome: "failure",
      sessionUid: approval.spec.sessionRef.uid,
      executionId: approval.spec.executionId,
      atMicros: now.getTime() * 1000,
      payload: {
        approval: `${approval.metadata.namespace}/${approval.metadata.name}`,
        index: l.index,
        approver: l.decision.approver,
        verdict: l.decision.verdict,
        phase,
      },
    });
    deps.events.warning(approval, "DecisionIgnored", lateDecisionMessage(l, phase));
  }
  return written;
}

/** The Event message when dispatch refuses an approved call for good, leaving it in `phase`. */
export function dispatchRefusedMessage(phase: ApprovalPhase, message: string): string {
  return `The approved call was not run; the Approval is ${phase}: ${message}.`;
}

/** Observes gatehouse_approval_decision_seconds: creation → now, when the phase first left Pending. */
function observeDecided(
  deps: ApprovalDeps,
  approval: Approval,
  outcome: "Approved" | "Rejected" | "Expired",
  now: Date,
) {
  const created = Date.parse(String(approval.metadata.creationTimestamp));
  if (!Number.isNaN(created)) deps.metrics?.approvalDecided(outcome, now.getTime() - created);
}

/** How long a Pending Approval waits before the rules' verification is looked at again. */
const RULES_RECHECK_MS = 5_000;

/** The condition saying whether admission is verified to enforce the decision rules. */
function rulesCondition(rules: DecisionRulesVerdict, generation: number | undefined) {
  return rules.enforced
    ? {
        type: "DecisionRulesEnforced",
        status: "True" as const,
        reason: "Enforced",
        message: "The API server enforces the decision rules as the chart renders them.",
        observedGeneration: generation,
      }
    : {
        type: "DecisionRulesEnforced",
        status: "False" as const,
        reason: "DecisionRulesNotEnforced",
        message: `No decision counts and nothing runs until admission enforces the decision rules: ${rules.message}.`,
        observedGeneration: generation,
      };
}

/** The Approval as Core reads it. */
function viewOf(approval: Approval): ApprovalView {
  return {
    request: requestOf(approval),
    decisions: approval.spec.decisions,
    phase: approval.status?.phase ?? "Pending",
    uid: approval.metadata.uid,
  };
}

/**
 * An Approval being deleted: a Pending one ends Cancelled (ApprovalDeleted) after its decisions are
 * recorded; an approved one that never started ends its dispatch the same way; then the finalizer
 * goes. Core appends only what the chain does not hold yet, so a repeat is harmless.
 */
async function finalizeApproval(
  deps: ApprovalDeps,
  deleted: Approval,
  rulesNow: () => Promise<DecisionRulesVerdict>,
  now: Date,
  log: Logger,
): Promise<ReconcileResult> {
  if (!hasFinalizer(deleted, APPROVAL_FINALIZER)) return undefined;
  let approval = deleted;
  const { namespace, name } = approval.metadata;
  const phase = approval.status?.phase ?? "Pending";
  const message = `Approval ${name} was deleted before ${phase === "Pending" ? "it was decided" : "its call started"}; the proposed call will not run.`;
  if (phase === "Pending") {
    await endApproval(deps.core, {
      approval: viewOf(approval),
      rules: await rulesNow(),
      phase: "Cancelled",
      reason: "ApprovalDeleted",
      message,
    });
    const status: Status = {
      ...approval.status,
      phase: "Cancelled",
      observedDecisions: approval.spec.decisions.length,
      conditions: setCondition(
        approval.status?.conditions,
        { type: "Decided", status: "True", reason: "ApprovalDeleted", message },
        now,
      ),
    };
    // The status write moves the resourceVersion: the finalizer is removed from what it returned.
    approval = (await writeStatusIfChanged(deps.clients, APPROVAL, approval, status)) ?? approval;
    deps.events.normal(approval, "Cancelled", message);
  } else if (phase === "Approved" || phase === "Executing") {
    await endUndispatched(deps.core, viewOf(approval), "ApprovalDeleted", message);
  }
  await removeFinalizer(deps.clients, APPROVAL, approval, APPROVAL_FINALIZER);
  log.info({ namespace, name, phase }, "approval deleted; its lifecycle is in the audit chain");
  return undefined;
}

/** Reconciles one Approval. */
export async function reconcileApproval(
  deps: ApprovalDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const cached = deps.caches.approvals.get(name, namespace);
  if (!cached) return undefined;
  const now = deps.now();
  // Judged by a check made after the cached Approval was observed (kube/admission-guard.ts), taken
  // only where decisions are counted or a call dispatched: a settled Approval needs none.
  let checked: Promise<DecisionRulesVerdict> | undefined;
  const rulesNow = () => {
    checked ??= deps.decisionRules(now.getTime());
    return checked;
  };
  if (cached.metadata.deletionTimestamp) return finalizeApproval(deps, cached, rulesNow, now, log);
  // Approvals created by an earlier version have no finalizer yet; the update queues it again.
  if (!hasFinalizer(cached, APPROVAL_FINALIZER)) {
    await addFinalizer(deps.clients, APPROVAL, cached, APPROVAL_FINALIZER);
    return { requeueAfterMs: 500 };
  }
  // --- An execution of unknown outcome and its resolution (./resolution.ts). ---
  if (needsResolution(cached)) return reconcileResolution(deps, cached, log);
  // ---
  let approval: Approval = cached;
  const generation = approval.metadata.generation;
  const status: Status = { ...approval.status, observedGeneration: generation };
  const phase: ApprovalPhase = approval.status?.phase ?? "Pending";
  const setPhase = (next: ApprovalPhase, reason: string, message: string) => {
    status.phase = next;
    status.conditions = setCondition(
      status.conditions,
      {
        type: "Decided",
        status: next === "Pending" ? "False" : "True",
        reason,
        message,
        observedGeneration: generation,
      },
      now,
    );
  };
  // The check starts now and runs beside the chain reads; each path below waits for it before it writes.
  const undecided = phase === "Pending" || phase === "Approved" || phase === "Executing";
  if (undecided) void rulesNow();
  const noteRules = async () => {
    if (!undecided) return;
    const rules = await rulesNow();
    if (!rules.enforced || status.conditions?.some((c) => c.type === "DecisionRulesEnforced")) {
      status.conditions = setCondition(status.conditions, rulesCondition(rules, generation), now);
    }
  };

  /** The history decideApproval left, when it approved the call in this reconcile. */
  let justDecided: ApprovalHistory | undefined;
  const sessionObject = deps.caches.sessions
    .list(namespace)
    .find((s) => s.metadata.uid === approval.spec.sessionRef.uid);

  if (
    phase === "Pending" &&
    (!sessionObject ||
      sessionObject.metadata.deletionTimestamp ||
      sessionObject.spec.cancel ||
      isTerminalSessionPhase(sessionObject.status?.phase))
  ) {
    // The session that proposed the call is gone or over: nobody is waiting for this decision.
    const why =
      !sessionObject || sessionObject.metadata.deletionTimestamp
        ? "was deleted"
        : sessionObject.spec.cancel
          ? "was cancelled"
          : `ended ${sessionObject.status?.phase}`;
    const message = `AgentSession ${approval.spec.sessionRef.name} ${why}; the proposed call will not run.`;
    await endApproval(deps.core, {
      approval: viewOf(approval),
      rules: await rulesNow(),
      phase: "Cancelled",
      reason: "SessionEnded",
      message,
    });
    setPhase("Cancelled", "SessionEnded", message);
    status.observedDecisions = approval.spec.decisions.length;
    await noteRules();
    await writeStatusIfChanged(deps.clients, APPROVAL, approval, status);
    log.info({ reason: "SessionEnded" }, "pending approval cancelled");
    deps.events.normal(approval, "Cancelled", message);
    return undefined;
  }

  if (phase === "Pending") {
    // Core observes the decisions, records each in the audit chain and settles the phase there first
    // (core/approval-lifecycle.ts); the status follows what the chain holds.
    const decided = await decideApproval(deps.core, { approval: viewOf(approval), rules: rulesNow() });
    if ("history" in decided) justDecided = decided.history;
    const pendingRules = await rulesNow();
    await noteRules();
    status.approvals = decided.evaluation.approvals;
    status.ignoredDecisions = decided.evaluation.ignored.map((i) => ({
      approver: i.approver,
      reason: i.reason,
    }));
    status.observedDecisions = approval.spec.decisions.length;
    if (!("end" in decided)) {
      const counted = `${decided.evaluation.approvals} of ${approval.spec.requiredApprovals} approvals.`;
      setPhase(
        "Pending",
        pendingRules.enforced ? "AwaitingDecision" : "DecisionRulesNotEnforced",
        pendingRules.enforced
          ? counted
          : `${counted} No decision counts until admission enforces the decision rules.`,
      );
      await writeStatusIfChanged(deps.clients, APPROVAL, approval, status);
      const untilExpiry = Math.max(1_000, Date.parse(approval.spec.expiresAt) - now.getTime());
      return {
        requeueAfterMs: pendingRules.enforced ? untilExpiry : Math.min(untilExpiry, RULES_RECHECK_MS),
      };
    }
    setPhase(decided.phase, decided.phase, decided.message);
    if (decided.phase !== "Approved") {
      await writeStatusIfChanged(deps.clients, APPROVAL, approval, status);
      if (decided.phase === "Rejected" || decided.phase === "Expired") {
        observeDecided(deps, approval, decided.phase, now);
        const say = decided.phase === "Rejected" ? deps.events.normal : deps.events.warning;
        say(approval, decided.phase, `${decided.message} The proposed call will not run.`);
      }
      await recordOutcome(deps, { ...approval, status }, now);
      return undefined;
    }
  } else {
    approval = await reportLateDecisions(deps, approval, status, phase, now, log);
    if (phase !== "Approved" && phase !== "Executing") return undefined;
  }

  // Dispatch. Approved (the decision) and then Executing are written first, so a crash between here
  // and the receipt leaves a visible state that the next reconcile resumes from.
  // status.execution is only ever copied from the execution row, never guessed.
  await noteRules();
  let written = approval;
  if (phase === "Pending") {
    written = (await writeStatusIfChanged(deps.clients, APPROVAL, written, status)) ?? written;
    observeDecided(deps, approval, "Approved", now);
  }
  status.phase = "Executing";
  written = (await writeStatusIfChanged(deps.clients, APPROVAL, written, { ...status })) ?? written;
  const session = sessionObject
    ? sessionContextOf(sessionObject, await deps.records.recordOf(sessionObject.metadata.uid), deps.ceilings)
    : undefined;
  const result = await executeApproved(deps.core, {
    approval: { ...viewOf(approval), phase: "Approved" },
    ...(session ? { session } : {}),
    rules: await rulesNow(),
    history: justDecided,
  });
  const final: Status = { ...status };
  if (result.kind === "executed") {
    final.execution = executionStatusOf(result.execution);
    const next = PHASE_OF_STATE[result.execution.state];
    final.phase = next;
    final.conditions = setCondition(
      final.conditions,
      {
        type: "Executed",
        status: next === "Executing" ? "False" : "True",
        reason: next,
        message: final.execution?.resultSummary ?? next,
        observedGeneration: generation,
      },
      now,
    );
    log.info({ executionId: result.execution.id, state: result.execution.state }, "approval dispatched");
  } else {
    final.phase = result.phase;
    final.conditions = setCondition(
      final.conditions,
      {
        type: "Executed",
        status: "False",
        reason: result.reason,
        message: result.message,
        observedGeneration: generation,
      },
      now,
    );
    log.info({ phase: result.phase, reason: result.reason }, `approval ${result.kind} at dispatch`);
  }
  await writeStatusIfChanged(deps.clients, APPROVAL, written, final);
  if (result.kind === "refused" && isSettled({ ...approval, status: final })) {
    // A deferral retries by itself; a refusal that settles it (Stale, Expired, Cancelled…) needs a human.
    deps.events.warning(approval, result.reason, dispatchRefusedMessage(result.phase, result.message));
  }
  await recordOutcome(deps, { ...approval, status: final }, now);
  return final.phase === "Executing" || result.kind === "deferred" ? { requeueAfterMs: 2_000 } : undefined;
}

/**
 * Writes a settled Approval's outcome into its session's transcript (once; kube/approval-outcome.ts),
 * so an agent resumed after its pod was released finds the result of the call it proposed.
 */
async function recordOutcome(deps: ApprovalDeps, approval: Approval, now: Date): Promise<void> {
  if (!isSettled(approval)) return;
  await recordApprovalOutcome(deps.core, deps.transcripts, approval, now.getTime() * 1000);
}
