/**
 * Dispatching an Approved Approval (DESIGN §2 Approval, §4 step 8). Before executing, Core re-checks
 * what admission cannot: the decisions still amount to Approved, the Approval has not expired, the
 * stored arguments match their digest, the session is alive, the capability and its provider are
 * there, enabled and ready, the Capability still names the provider the call was approved for (what
 * runs is what was approved), the schema digest is unchanged, the decisions also satisfy the
 * Capability's current approval policy where it became stricter (core/approval-rules.ts), the policy
 * does not forbid it now, the identity binding holds, and the target business object is still at the version the call was
 * proposed against (asked of the provider: `GET /v1/targets/{kind}/{id}`). Then it executes the arguments stored with the Approval — once: a
 * repeated dispatch returns the existing execution. Nothing is dispatched while admission is not
 * verified to enforce the decision rules, nor before the chain holds the `approval.approved` record
 * that `execution.started` then names (core/approval-lifecycle.ts), nor without the `approval.requested`
 * of the tool call that asked for it (`RequestNotRecorded`: the Approval was made some other way).
 */
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import { ApprovalPhase, ApprovalReason } from "../api/status/approval.ts";
import { answerFromExecution } from "./answer.ts";
import {
  type ApprovalHistory,
  approvalKeyOf,
  backfillApproved,
  END_KIND_OF_PHASE,
  evaluateRecorded,
  lifecycleEntry,
  phaseOfEnd,
  readHistory,
  recordRef,
} from "./approval-lifecycle.ts";
import { type ApprovalRules, approvalRulesOf } from "./approval-rules.ts";
import { AuditKind } from "./audit.ts";
import { canonicalJson, sha256Hex } from "./canonical.ts";
import { isGatehouseError } from "./errors.ts";
import { execute } from "./execute.ts";
import { idempotencyKeyOf } from "./execution-identity.ts";
import { parseIJsonObject } from "./i-json.ts";
import { approvalSettings, decideAccess } from "./policy.ts";
import type {
  AppendedRecord,
  ApprovalView,
  ChainedRecord,
  CoreDeps,
  DecisionRulesVerdict,
  ExecutionRecord,
  SessionContext,
} from "./ports.ts";
import { recoverExecution } from "./recovery.ts";

/** Input of {@link executeApproved}. `session` is absent when the AgentSession is gone. */
export interface ExecuteApprovedInput {
  approval: ApprovalView;
  session?: SessionContext | undefined;
  /** Whether admission is verified to enforce the decision rules; while not, nothing is dispatched. */
  rules: DecisionRulesVerdict;
  /** The Approval's history as `decideApproval` just left it, in the same reconcile; else read from the chain. */
  history?: ApprovalHistory | undefined;
}

/**
 * Result of {@link executeApproved}:
 * - `executed`: the execution ran now or earlier; set `status.execution` from `execution` and the
 *   phase from its state (succeeded → Succeeded, failed → Failed, unknown → Unknown);
 * - `refused`: do not execute; set `status.phase` to `phase` with condition reason `reason`;
 * - `deferred`: a transient condition (provider not ready); keep phase `Approved` and requeue.
 */
export type ExecuteApprovedResult =
  | { kind: "executed"; answer: InvokeAnswer; execution: ExecutionRecord; executedNow: boolean }
  | { kind: "refused"; phase: ApprovalPhase; reason: string; message: string }
  | { kind: "deferred"; phase: typeof ApprovalPhase.Approved; reason: string; message: string };

/** The refusal an end record already in the chain settled: nothing more is appended. */
function refusedBy(end: ChainedRecord): ExecuteApprovedResult {
  return {
    kind: "refused",
    phase: phaseOfEnd(end),
    reason: String(end.payload.reason ?? ApprovalReason.Ended),
    message: String(end.payload.message ?? `the audit chain records ${end.kind} at seq ${end.seq}`),
  };
}

/**
 * Re-checks and executes an Approved Approval: only while the decision rules are enforced, only what
 * the audit chain approved (backfilling the approval record of one an earlier version approved), and
 * a refusal for good is the Approval's end in the chain. Errors: throws only when a dependency fails
 * (Postgres, audit, API server); the caller retries — the execution id makes that safe.
 */
export async function executeApproved(
  deps: CoreDeps,
  input: ExecuteApprovedInput,
): Promise<ExecuteApprovedResult> {
  const { approval, session } = input;
  const request = approval.request;
  const audit = (kind: string, payload: Record<string, string | number | null>) =>
    deps.audit.append({
      kind,
      actor: "gatehouse",
      outcome: "failure",
      sessionUid: request.sessionRef.uid,
      executionId: request.executionId,
      atMicros: deps.clock.nowMicros(),
      payload: { approval: approvalKeyOf(approval), ...payload },
    });
  const found = await deps.executions.get(request.executionId);
  if (found) {
    const existing = await recoverExecution(deps, found);
    return {
      kind: "executed",
      answer: answerFromExecution(existing, deps.config.maxResultBytes),
      execution: existing,
      executedNow: false,
    };
  }
  if (!input.rules.enforced) {
    return {
      kind: "deferred",
      phase: ApprovalPhase.Approved,
      reason: ApprovalReason.DecisionRulesNotEnforced,
      message: `not dispatched while admission does not enforce the decision rules: ${input.rules.message}`,
    };
  }

  // The chain, not the status, says whether and by whom it was approved (core/approval-lifecycle.ts).
  const history = input.history ?? (await readHistory(deps, approval));
  if (history.dispatchEnd) return refusedBy(history.dispatchEnd);
  if (history.end && history.end.kind !== AuditKind.approvalApproved) return refusedBy(history.end);
  const evaluation = evaluateRecorded(approval, history);
  const refuseUnrecorded = (phase: ApprovalPhase, reason: string, message: string) =>
    audit(AuditKind.approvalRefused, { phase, reason, message }).then(
      (): ExecuteApprovedResult => ({ kind: "refused", phase, reason, message }),
    );
  if (evaluation.outcome === ApprovalPhase.Rejected) {
    return refuseUnrecorded(
      ApprovalPhase.Rejected,
      ApprovalReason.Rejected,
      `rejected by ${evaluation.rejectedBy}`,
    );
  }
  if (evaluation.outcome !== ApprovalPhase.Approved) {
    return refuseUnrecorded(
      ApprovalPhase.Pending,
      ApprovalReason.NotApproved,
      `${evaluation.approvals} of ${request.requiredApprovals} approvals counted`,
    );
  }
  // Only what a tool call asked for runs: an Approval made some other way (with the gateway's
  // Kubernetes credentials, say) has no `approval.requested` of its execution, capability and arguments.
  const unrequested = !history.requested;
  if (
    unrequested &&
    deps.clock.nowMicros() - (approval.createdAtMicros ?? 0) < deps.config.requestRecordGraceMs * 1000
  ) {
    return {
      kind: "deferred",
      phase: ApprovalPhase.Approved,
      reason: ApprovalReason.RequestNotRecorded,
      message: `the audit chain holds no approval.requested for execution ${request.executionId} yet; will retry`,
    };
  }
  // Approved by an earlier version, which recorded no decision: record it before anything runs.
  const approved: AppendedRecord = history.end ?? (await backfillApproved(deps, approval, evaluation));

  /** Refuses the approved call for good: the end of its dispatch, citing the approval record. */
  const refuse = async (
    phase: ApprovalPhase,
    reason: string,
    message: string,
  ): Promise<ExecuteApprovedResult> => {
    const kind = END_KIND_OF_PHASE[phase] ?? AuditKind.approvalRefused;
    await deps.audit.append(
      lifecycleEntry(deps, approval, kind, "gatehouse", "failure", {
        phase,
        reason,
        message,
        atDispatch: true,
        approvalRecord: recordRef(approved),
      }),
    );
    return { kind: "refused", phase, reason, message };
  };

  if (unrequested) {
    return refuse(
      ApprovalPhase.Failed,
      ApprovalReason.RequestNotRecorded,
      `the audit chain holds no approval.requested of execution ${request.executionId} for capability ${request.capabilityId} with these arguments: no tool call asked for this Approval, so it is not run`,
    );
  }

  const capability = await deps.catalog.get(request.namespace, request.capability);
  const offered = capability && capability.id === request.capabilityId ? capability : undefined;
  // The stricter of the spec and the Capability's current policy (core/approval-rules.ts).
  const rules = approvalRulesOf(
    request,
    offered ? approvalSettings(offered.policy, request.requester, deps.config.approvalTtlSeconds) : undefined,
    approval.createdAtMicros,
  );

  const expiresAtMicros = Date.parse(rules.expiresAt) * 1000;
  if (!Number.isFinite(expiresAtMicros) || deps.clock.nowMicros() > expiresAtMicros) {
    return refuse(
      ApprovalPhase.Expired,
      ApprovalReason.Expired,
      `the approval expired at ${rules.expiresAt}`,
    );
  }

  const parsed = parseIJsonObject(request.arguments);
  if (
    sha256Hex(request.arguments) !== request.argumentsDigest ||
    !parsed.ok ||
    canonicalJson(parsed.value) !== request.arguments
  ) {
    return refuse(
      ApprovalPhase.Failed,
      ApprovalReason.ArgumentsDigestMismatch,
      "the stored arguments do not match their digest",
    );
  }

  if (!session?.active || session.uid !== request.sessionRef.uid) {
    return refuse(
      ApprovalPhase.Cancelled,
      ApprovalReason.SessionGone,
      "the session that proposed this call is gone or finished",
    );
  }

  if (!capability || !offered) {
    return refuse(
      ApprovalPhase.Stale,
      ApprovalReason.CapabilityChanged,
      `Capability ${request.capability} no longer offers ${request.capabilityId}`,
    );
  }
  const approvedFor = request.providerRef;
  const now = capability.providerRef;
  if (now.namespace !== approvedFor.namespace || now.name !== approvedFor.name) {
    return refuse(
      ApprovalPhase.Stale,
      ApprovalReason.ProviderChanged,
      `Capability ${request.capability} now uses ProviderInstance ${now.namespace}/${now.name}; the call was approved for ProviderInstance ${approvedFor.namespace}/${approvedFor.name}`,
    );
  }
  if (capability.disabled) {
    return refuse(
      ApprovalPhase.Stale,
      ApprovalReason.Disabled,
      `${capability.id} or its provider is disabled`,
    );
  }
  if (capability.schemaDigest !== request.schemaDigest) {
    return refuse(
      ApprovalPhase.Stale,
      ApprovalReason.SchemaChanged,
      `the schema of ${capability.id} changed after the call was proposed`,
    );
  }
  const strict = evaluateRecorded(approval, history, rules);
  if (strict.outcome !== ApprovalPhase.Approved) {
    // Approved under the rules it was created with; an Approved Approval takes no more decisions, so
    // rules that became stricter since can never be met: refused for good, the agent may propose again.
    return refuse(
      ApprovalPhase.Stale,
      ApprovalReason.PolicyChanged,
      policyChangedMessage(rules, strict.approvals),
    );
  }
  if (!capability.ready || !capability.providerReady) {
    return {
      kind: "deferred",
      phase: ApprovalPhase.Approved,
      reason: ApprovalReason.ProviderNotReady,
      message: `${capability.id} is not ready; will retry`,
    };
  }
  const access = decideAccess({
    capability,
    subject: request.requester,
    ...(deps.config.approvalFloor ? { floor: deps.config.approvalFloor } : {}),
  });
  if (access.verdict === "deny") return refuse(ApprovalPhase.Stale, access.reason, access.message);

  let account: string | undefined;
  if (capability.requiresIdentity) {
    const binding = await deps.identities.resolve(capability.providerRef, request.requester);
    if (!binding.bound) return refuse(ApprovalPhase.Stale, ApprovalReason.IdentityUnbound, binding.reason);
    account = binding.account;
  }

  const target = request.target;
  if (target?.version !== undefined) {
    const found = await deps.providers.target(
      capability.providerRef,
      { kind: target.kind, id: target.id },
      { deadlineMs: deps.config.providerDeadlineMs, sessionUid: session.uid },
    );
    if (found.kind === "unavailable") {
      return {
        kind: "deferred",
        phase: ApprovalPhase.Approved,
        reason: ApprovalReason.TargetUnverifiable,
        message: `the current version of ${target.kind} ${target.id} could not be read (${found.message}); will retry`,
      };
    }
    if (found.kind === "not_found") {
      return refuse(
        ApprovalPhase.Stale,
        ApprovalReason.TargetGone,
        `${target.kind} ${target.id} no longer exists: ${found.message}`,
      );
    }
    if (found.version !== target.version) {
      return refuse(
        ApprovalPhase.Stale,
        ApprovalReason.TargetVersionMoved,
        `${target.kind} ${target.id} is now at version ${found.version}; the call was approved for version ${target.version}`,
      );
    }
  }

  const idempotencyKey = request.idempotencyKey ?? idempotencyKeyOf(request.executionId);
  try {
    const result = await execute(deps, {
      executionId: request.executionId,
      idempotencyKey,
      session: { uid: session.uid, namespace: session.namespace, name: session.name },
      subject: request.requester,
      ...(account !== undefined ? { account } : {}),
      capability,
      argumentsCanonical: request.arguments,
      argumentsDigest: request.argumentsDigest,
      approvalName: request.name,
      approvalRecord: approved,
      actor: request.requester.user,
    });
    return { kind: "executed", ...result };
  } catch (error) {
    // Two Approvals of one action (proposed at the same moment, both approved): the first to run holds
    // the action's key, and the second is not run at all.
    if (!isGatehouseError(error) || error.kind !== "conflict" || !error.message.includes(idempotencyKey)) {
      throw error;
    }
    return refuse(
      ApprovalPhase.Stale,
      ApprovalReason.ActionAlreadyExecuted,
      `this exact action already runs under another Approval of the session (${error.message}); it is not run twice`,
    );
  }
}

/** Why decisions approved under the spec's rules do not meet the stricter current ones. */
function policyChangedMessage(rules: ApprovalRules, approvals: number): string {
  return `the decisions approved it under the rules it was created with, but ${rules.tightened.join("; ")}, and only ${approvals} of ${rules.requiredApprovals} approvals count under those rules`;
}
