/**
 * The execution step (DESIGN §4 step 8–10), shared by `invoke` (Auto calls) and `executeApproved`
 * (Approved Approvals):
 *   claim the row (exactly one claimer executes) → re-check the stored arguments' digest → audit
 *   `execution.started` → call the provider with a deadline and the idempotency key → record the
 *   receipt → audit `execution.finished` → answer.
 * Outcomes: a receipt is recorded as the provider gave it (`forbidden` is final: never rewritten,
 * never retried); a request that certainly never reached the provider is `failed`/`unavailable`;
 * anything that may have reached it without an answer is `unknown` — with `idempotency: key|natural`
 * it is first retried with the same key, then the provider's status endpoint is asked.
 */
import type { ErrorKind, InvokeRequest, InvokeResponse, Subject } from "@gatehouse/provider-sdk";
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import { answerFromExecution } from "./answer.ts";
import { AuditKind, auditOutcomeOf } from "./audit.ts";
import { canonicalDigest, type JsonObject, sha256Hex } from "./canonical.ts";
import { GatehouseError } from "./errors.ts";
import type {
  AuditOutcome,
  CoreDeps,
  ExecutionOutcome,
  ExecutionRecord,
  ResolvedCapability,
} from "./ports.ts";

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
 * (the row then stays `started` and its lease turns it `unknown`, never silently lost); provider
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
  const attempts = plan.capability.idempotency === "none" ? 1 : Math.max(1, config.maxProviderAttempts);
  const now = clock.nowMicros();
  // The lease covers every attempt, the status query and a grace period.
  const leaseMs = config.providerDeadlineMs * (attempts + 1) + config.leaseGraceMs;
  const request: InvokeRequest = {
    executionId: plan.executionId,
    idempotencyKey: plan.idempotencyKey,
    capability: plan.capability.id,
    arguments: JSON.parse(plan.argumentsCanonical) as JsonObject,
    subject: plan.subject,
    ...(plan.account !== undefined ? { account: plan.account } : {}),
  };
  const claim = await deps.executions.claim({
    id: plan.executionId,
    idempotencyKey: plan.idempotencyKey,
    session: plan.session,
    capability: plan.capability.id,
    providerRef: plan.capability.providerRef,
    request,
    argumentsCanonical: plan.argumentsCanonical,
    requestDigest: plan.argumentsDigest,
    ...(plan.approvalName !== undefined ? { approvalName: plan.approvalName } : {}),
    leaseUntilMicros: now + leaseMs * 1000,
    atMicros: now,
  });
  if (!claim.owned) {
    const execution = await settleExpiredLease(deps, claim.execution);
    return { answer: answerFromExecution(execution, config.maxResultBytes), execution, executedNow: false };
  }

  const stored = claim.execution;
  const audit = (kind: string, outcome: AuditOutcome, payload: JsonObject) =>
    deps.audit.append({
      kind,
      actor: plan.actor,
      outcome,
      sessionUid: plan.session.uid,
      executionId: plan.executionId,
      atMicros: clock.nowMicros(),
      payload,
    });

  // Execute what is stored, after re-checking it is what was validated/approved.
  if (
    sha256Hex(stored.argumentsCanonical) !== plan.argumentsDigest ||
    stored.requestDigest !== plan.argumentsDigest
  ) {
    return finish(
      deps,
      plan,
      stored,
      audit,
      {
        state: "failed",
        errorKind: "conflict",
        message: "the stored arguments do not match their digest; not executed",
        atMicros: clock.nowMicros(),
      },
      0,
    );
  }

  try {
    await audit(AuditKind.executionStarted, "pending", {
      capability: plan.capability.id,
      capabilityObject: plan.capability.name,
      provider: `${plan.capability.providerRef.namespace}/${plan.capability.providerRef.name}`,
      argumentsDigest: plan.argumentsDigest,
      idempotencyKey: plan.idempotencyKey,
      approval: plan.approvalName ?? null,
    });
  } catch (error) {
    // No audit, no execution (DESIGN §11): the provider was not called, so this is a definite failure.
    await deps.executions.recordReceipt(plan.executionId, {
      state: "failed",
      errorKind: "unavailable",
      message: "the audit log is unavailable; not executed",
      atMicros: clock.nowMicros(),
    });
    throw error;
  }

  const { outcome, attemptsMade } = await callProvider(deps, request, plan, attempts);
  return finish(deps, plan, stored, audit, outcome, attemptsMade);
}

async function finish(
  deps: CoreDeps,
  plan: ExecutionPlan,
  stored: ExecutionRecord,
  audit: (kind: string, outcome: AuditOutcome, payload: JsonObject) => Promise<unknown>,
  outcome: ExecutionOutcome,
  attemptsMade: number,
): Promise<ExecutionResult> {
  const recorded = await deps.executions.recordReceipt(stored.id, outcome);
  const execution = recorded.execution;
  await audit(
    AuditKind.executionFinished,
    auditOutcomeOf(execution.state),
    finishedPayload(execution, attemptsMade),
  );
  deps.logger.info(
    {
      executionId: plan.executionId,
      capability: plan.capability.id,
      state: execution.state,
      errorKind: execution.errorKind,
    },
    "execution finished",
  );
  return {
    answer: answerFromExecution(execution, deps.config.maxResultBytes),
    execution,
    executedNow: recorded.recorded,
  };
}

function finishedPayload(execution: ExecutionRecord, attempts: number): JsonObject {
  const payload: JsonObject = { state: execution.state, attempts };
  if (execution.errorKind) payload.errorKind = execution.errorKind;
  if (execution.message) payload.message = execution.message;
  const receipt = execution.receipt;
  if (receipt?.result !== undefined) {
    try {
      payload.resultDigest = canonicalDigest(receipt.result);
    } catch {
      payload.resultDigest = null; // not I-JSON; the receipt itself is kept in the execution row
    }
  }
  if (receipt?.evidence)
    payload.evidence = { system: receipt.evidence.system, reference: receipt.evidence.reference };
  return payload;
}

/** Provider-reported kinds that mean nobody knows whether the effect happened. */
const UNKNOWN_KINDS: readonly ErrorKind[] = ["timeout", "unknown_outcome"];

function outcomeOfResponse(response: InvokeResponse, atMicros: number): ExecutionOutcome {
  if (response.status === "succeeded") return { state: "succeeded", receipt: response, atMicros };
  const errorKind = response.errorKind ?? "internal";
  const state = UNKNOWN_KINDS.includes(errorKind) ? "unknown" : "failed";
  return {
    state,
    receipt: response,
    errorKind: state === "unknown" ? "unknown_outcome" : errorKind,
    ...(response.message ? { message: response.message } : {}),
    atMicros,
  };
}

async function callProvider(
  deps: CoreDeps,
  request: InvokeRequest,
  plan: ExecutionPlan,
  attempts: number,
): Promise<{ outcome: ExecutionOutcome; attemptsMade: number }> {
  const { clock, config, providers } = deps;
  const provider = plan.capability.providerRef;
  const options = { deadlineMs: config.providerDeadlineMs, sessionUid: plan.session.uid };
  let lost: string | undefined;
  let notSent: string | undefined;
  let attemptsMade = 0;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    attemptsMade = attempt;
    let result: Awaited<ReturnType<typeof providers.invoke>>;
    try {
      result = await providers.invoke(provider, request, options);
    } catch (error) {
      // The client broke its contract by throwing: we cannot know whether the request left.
      result = {
        kind: "lost",
        reason: "connection_lost",
        message: `provider client error: ${String(error)}`,
      };
    }
    if (result.kind === "answered") {
      return { outcome: outcomeOfResponse(result.response, clock.nowMicros()), attemptsMade };
    }
    if (result.kind === "not_sent") {
      notSent = result.message;
      if (lost === undefined) break; // nothing reached the provider; retrying is the model's choice
      continue;
    }
    lost = `${result.reason}: ${result.message}`;
    deps.logger.warn(
      { executionId: plan.executionId, attempt, reason: result.reason },
      "provider response lost",
    );
  }

  if (lost === undefined) {
    return {
      outcome: {
        state: "failed",
        errorKind: "unavailable",
        message: `the provider could not be reached: ${notSent ?? "unknown reason"}`,
        atMicros: clock.nowMicros(),
      },
      attemptsMade,
    };
  }

  // It may have happened: ask the provider what it knows of this idempotency key.
  try {
    const status = await providers.status(provider, request.idempotencyKey, options);
    if (status.kind === "answered" && status.status.response && status.status.status !== "in_progress") {
      if (status.status.status === "succeeded" || status.status.status === "failed") {
        return { outcome: outcomeOfResponse(status.status.response, clock.nowMicros()), attemptsMade };
      }
    }
  } catch (error) {
    deps.logger.warn({ executionId: plan.executionId, err: String(error) }, "provider status query failed");
  }
  return {
    outcome: {
      state: "unknown",
      errorKind: "unknown_outcome",
      message: `no answer from the provider (${lost})`,
      atMicros: clock.nowMicros(),
    },
    attemptsMade,
  };
}

/** A `started` row whose lease ended is `unknown` (its claimer died or lost the answer). */
async function settleExpiredLease(deps: CoreDeps, execution: ExecutionRecord): Promise<ExecutionRecord> {
  if (execution.state !== "started" || execution.leaseUntilMicros >= deps.clock.nowMicros()) return execution;
  const recorded = await deps.executions.recordReceipt(execution.id, {
    state: "unknown",
    errorKind: "unknown_outcome",
    message: "the lease ended before an outcome was recorded",
    atMicros: deps.clock.nowMicros(),
  });
  if (recorded.recorded) {
    await deps.audit.append({
      kind: AuditKind.executionFinished,
      actor: "gatehouse",
      outcome: "unknown",
      sessionUid: execution.session.uid,
      executionId: execution.id,
      atMicros: deps.clock.nowMicros(),
      payload: { state: "unknown", errorKind: "unknown_outcome", message: "lease expired", attempts: 0 },
    });
  }
  return recorded.execution;
}
