/**
 * The execution step (DESIGN §4 step 8–10), shared by `invoke` (Auto calls) and `executeApproved`
 * (Approved Approvals):
 *   claim the row (exactly one claimer executes; fencing token 1) → re-check the stored arguments'
 *   digest → audit `execution.started` → renew the lease unless the claim is fresh (or leave the call
 *   to whoever took the row over meanwhile) → call the provider with a deadline and the idempotency key
 *   (`provider-call.ts`: retries with the same key, status query, unknown) → record the receipt →
 *   audit `execution.finished` → answer.
 * A claim that finds the row already there returns that row — after recovering it (`recovery.ts`)
 * when its claimer's lease ended without an outcome.
 */
import type { InvokeRequest, Subject } from "@gatehouse/provider-sdk";
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import { answerFromExecution } from "./answer.ts";
import { AuditKind } from "./audit.ts";
import type { JsonObject } from "./canonical.ts";
import { sha256Hex } from "./canonical.ts";
import { GatehouseError } from "./errors.ts";
import { failpointSite } from "./failpoints.ts";
import type { AppendedRecord, CoreDeps, ExecutionRecord, ResolvedCapability } from "./ports.ts";
import { callProvider, finishExecution, invokeAttemptsOf, leaseMsOf } from "./provider-call.ts";
import { recoverExecution } from "./recovery.ts";

const BEFORE_CLAIM = failpointSite("dispatch.before-claim");
const AFTER_CLAIM = failpointSite("dispatch.after-claim");
const AFTER_STARTED = failpointSite("dispatch.after-started");
const BEFORE_PROVIDER_CALL = failpointSite("dispatch.before-provider-call");
const AFTER_PROVIDER_CALL = failpointSite("dispatch.after-provider-call");

/** Everything needed to execute one call. */
export interface ExecutionPlan {
  executionId: string;
  idempotencyKey: string;
  session: { uid: string; namespace: string; name: string };
  subject: Subject;
  /** Business account, when the provider requires identity. */
  account?: string;
  capability: Pick<ResolvedCapability, "id" | "name" | "providerRef" | "idempotency">;
  /** RFC 8785 JSON of the arguments — what is stored and executed. */
  argumentsCanonical: string;
  /** sha256 hex of `argumentsCanonical`, as computed when the call was validated (or approved). */
  argumentsDigest: string;
  approvalName?: string;
  /** The `approval.approved` record this execution carries out (seq and hash), for an approved call. */
  approvalRecord?: AppendedRecord;
  /** Audit actor. */
  actor: string;
}

/** The answer plus the row it came from; `executedNow` is false when another claimer owns the row. */
export interface ExecutionResult {
  answer: InvokeAnswer;
  execution: ExecutionRecord;
  executedNow: boolean;
}

/**
 * Executes `plan` at most once per execution id. Errors: throws when Postgres or the audit log fail
 * (the row then stays `started` and its lease hands it to recovery, never silently lost); provider
 * failures never throw — they become outcomes.
 */
export async function execute(deps: CoreDeps, plan: ExecutionPlan): Promise<ExecutionResult> {
  const { clock, config } = deps;
  if (sha256Hex(plan.argumentsCanonical) !== plan.argumentsDigest) {
    throw new GatehouseError(
      "conflict",
      `execution ${plan.executionId}: arguments do not match their digest`,
    );
  }
  const attempts = invokeAttemptsOf(plan.capability.idempotency, config);
  const now = clock.nowMicros();
  const request: InvokeRequest = {
    executionId: plan.executionId,
    idempotencyKey: plan.idempotencyKey,
    capability: plan.capability.id,
    arguments: JSON.parse(plan.argumentsCanonical) as JsonObject,
    subject: plan.subject,
    ...(plan.account !== undefined ? { account: plan.account } : {}),
  };
  deps.failpoint?.(BEFORE_CLAIM);
  const claim = await deps.executions.claim({
    id: plan.executionId,
    idempotencyKey: plan.idempotencyKey,
    session: plan.session,
    capability: plan.capability.id,
    providerRef: plan.capability.providerRef,
    idempotency: plan.capability.idempotency,
    request,
    argumentsCanonical: plan.argumentsCanonical,
    requestDigest: plan.argumentsDigest,
    ...(plan.approvalName !== undefined ? { approvalName: plan.approvalName } : {}),
    leaseUntilMicros: now + leaseMsOf(config, attempts) * 1000,
    atMicros: now,
  });
  if (!claim.owned) {
    const execution = await recoverExecution(deps, claim.execution);
    return { answer: answerFromExecution(execution, config.maxResultBytes), execution, executedNow: false };
  }
  deps.failpoint?.(AFTER_CLAIM);

  const stored = claim.execution;
  const finish = async (outcome: Parameters<typeof finishExecution>[3], attemptsMade: number) => {
    const { execution, recorded } = await finishExecution(deps, stored.id, plan.session.uid, outcome, {
      actor: plan.actor,
      capability: plan.capability.id,
      attemptsMade,
      fencingToken: stored.fencingToken,
    });
    return {
      answer: answerFromExecution(execution, config.maxResultBytes),
      execution,
      executedNow: recorded,
    };
  };

  // Execute what is stored, after re-checking it is what was validated/approved.
  if (
    sha256Hex(stored.argumentsCanonical) !== plan.argumentsDigest ||
    stored.requestDigest !== plan.argumentsDigest
  ) {
    return finish(
      {
        state: "failed",
        errorKind: "conflict",
        message: "the stored arguments do not match their digest; not executed",
        atMicros: clock.nowMicros(),
        neverSent: true,
      },
      0,
    );
  }

  try {
    await deps.audit.append({
      kind: AuditKind.executionStarted,
      actor: plan.actor,
      outcome: "pending",
      sessionUid: plan.session.uid,
      executionId: plan.executionId,
      atMicros: clock.nowMicros(),
      payload: {
        capability: plan.capability.id,
        capabilityObject: plan.capability.name,
        provider: `${plan.capability.providerRef.namespace}/${plan.capability.providerRef.name}`,
        argumentsDigest: plan.argumentsDigest,
        idempotencyKey: plan.idempotencyKey,
        approval: plan.approvalName ?? null,
        ...(plan.approvalRecord
          ? { approvalRecord: { seq: plan.approvalRecord.seq, hash: plan.approvalRecord.hash } }
          : {}),
      },
    });
  } catch (error) {
    // No audit, no execution (DESIGN §11): the provider was not called, so this is a definite failure.
    await deps.executions.recordReceipt(
      plan.executionId,
      {
        state: "failed",
        errorKind: "unavailable",
        message: "the audit log is unavailable; not executed",
        atMicros: clock.nowMicros(),
        neverSent: true,
      },
      stored.fencingToken,
    );
    throw error;
  }
  deps.failpoint?.(AFTER_STARTED);

  // The append may have waited past the lease: renew it from now, or — when a recoverer already took
  // the row over — leave the call to that holder instead of sending it a second time. A claim still
  // within half the grace period needs neither: the provider calls fit in the lease with the other
  // half to spare, and nobody can have taken over a lease that has not ended.
  const renewedAt = clock.nowMicros();
  const fresh = renewedAt - now <= (config.leaseGraceMs / 2) * 1000;
  const renewed =
    fresh ||
    (await deps.executions.renewLease(
      stored.id,
      stored.fencingToken,
      renewedAt + leaseMsOf(config, attempts) * 1000,
      renewedAt,
    ));
  if (!renewed) {
    deps.logger.warn(
      { executionId: stored.id, fencingToken: stored.fencingToken },
      "the lease ended before the provider was called and another holder took the execution over; not calling it",
    );
    const current = (await deps.executions.get(stored.id)) ?? stored;
    return {
      answer: answerFromExecution(current, config.maxResultBytes),
      execution: current,
      executedNow: false,
    };
  }

  deps.failpoint?.(BEFORE_PROVIDER_CALL);
  const { outcome, attemptsMade } = await callProvider(
    deps,
    {
      // The stored row, with the very arguments whose digest was just re-checked.
      request: { ...stored.request, arguments: JSON.parse(stored.argumentsCanonical) as JsonObject },
      provider: plan.capability.providerRef,
      sessionUid: plan.session.uid,
    },
    attempts,
    false,
  );
  deps.failpoint?.(AFTER_PROVIDER_CALL);
  return finish(outcome, attemptsMade);
}
