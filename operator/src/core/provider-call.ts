/**
 * One execution's conversation with its provider (DESIGN §4 step 8), shared by the first execution
 * (`execute.ts`) and by recovery and settling (`recovery.ts`):
 *   invoke up to `invokeAttempts` times with the same idempotency key while the outcome stays unknown
 *   (a lost answer, or a receipt that itself says `timeout`/`unknown_outcome`); on the first execution
 *   a request that certainly never left is a definite failure (`unavailable`, never sent); if the
 *   outcome is still unknown, ask the provider's status endpoint with the same key; if that does not
 *   settle it, the outcome is `unknown` — never guessed as failed or succeeded. A business refusal
 *   (`forbidden`, `conflict`, …) is final at once: never rewritten, never retried.
 * A row an earlier holder may already have sent (recovery, settling) starts out unknown: that this
 * holder's request did not leave says nothing about the earlier one, so `not_sent` never makes it
 * `failed`.
 * Finishing a row (receipt, audit, metrics) is here too, so every path records outcomes identically,
 * each under its fencing token.
 */
import type { ErrorKind, Idempotency, InvokeRequest, InvokeResponse } from "@gatehouse/provider-sdk";
import { AuditKind, auditOutcomeOf } from "./audit.ts";
import { canonicalDigest, type JsonObject } from "./canonical.ts";
import { failpointSite } from "./failpoints.ts";
import type {
  AppendedRecord,
  CoreConfig,
  CoreDeps,
  ExecutionOutcome,
  ExecutionRecord,
  ProviderRef,
} from "./ports.ts";

const AFTER_RECEIPT = failpointSite("dispatch.after-receipt");
const AFTER_FINISHED = failpointSite("dispatch.after-finished");

/** Provider-reported kinds that mean nobody knows whether the effect happened. */
const UNKNOWN_KINDS: readonly ErrorKind[] = ["timeout", "unknown_outcome"];

/** Invoke attempts for a provider of `idempotency`: repeats are safe only when the key deduplicates. */
export function invokeAttemptsOf(idempotency: Idempotency, config: CoreConfig): number {
  return idempotency === "none" ? 1 : Math.max(1, config.maxProviderAttempts);
}

/** How long a claimer owns a `started` row in milliseconds: every attempt, the status query and a grace period. */
export function leaseMsOf(config: CoreConfig, invokeAttempts: number): number {
  return config.providerDeadlineMs * (invokeAttempts + 1) + config.leaseGraceMs;
}

/** Where one execution is sent. */
export interface ProviderCall {
  request: InvokeRequest;
  provider: ProviderRef;
  sessionUid: string;
}

/** The outcome of {@link callProvider} and how many invokes it sent. */
export interface ProviderCallResult {
  outcome: ExecutionOutcome;
  attemptsMade: number;
}

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

/**
 * Runs the conversation described in the header. `mayHaveBeenSent`: an earlier holder of the row may
 * have sent the request (recovery, settling), so the outcome is unknown until an answer settles it.
 * `invokeAttempts` may then be 0 (a provider that does not deduplicate: only the status query is safe).
 * Never throws: a provider client that throws is treated as a lost answer.
 */
export async function callProvider(
  deps: Pick<CoreDeps, "clock" | "config" | "providers" | "logger">,
  call: ProviderCall,
  invokeAttempts: number,
  mayHaveBeenSent: boolean,
): Promise<ProviderCallResult> {
  const { clock, config, providers } = deps;
  const { request, provider } = call;
  const options = { deadlineMs: config.providerDeadlineMs, sessionUid: call.sessionUid };
  const log = { executionId: request.executionId, capability: request.capability };
  let unknown: string | undefined = mayHaveBeenSent
    ? "an earlier holder of this execution stopped before recording an outcome"
    : undefined;
  let unknownReceipt: InvokeResponse | undefined;
  let notSent: string | undefined;
  let attemptsMade = 0;
  for (let attempt = 1; attempt <= invokeAttempts; attempt++) {
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
      const outcome = outcomeOfResponse(result.response, clock.nowMicros());
      if (outcome.state !== "unknown") return { outcome, attemptsMade };
      unknown = `the provider reported ${result.response.errorKind}: ${result.response.message ?? "no message"}`;
      unknownReceipt = result.response;
    } else if (result.kind === "not_sent") {
      notSent = result.message;
      if (unknown === undefined) break; // nothing reached the provider; retrying is the model's choice
      deps.logger.warn({ ...log, attempt, why: notSent }, "provider not reached; the outcome stays unknown");
      continue;
    } else {
      unknown = `${result.reason}: ${result.message}`;
    }
    deps.logger.warn({ ...log, attempt, why: unknown }, "provider outcome unknown");
  }

  if (unknown === undefined) {
    return {
      outcome: {
        state: "failed",
        errorKind: "unavailable",
        message: `the provider could not be reached: ${notSent ?? "unknown reason"}`,
        atMicros: clock.nowMicros(),
        neverSent: true,
      },
      attemptsMade,
    };
  }

  // It may have happened: ask the provider what it knows of this idempotency key.
  try {
    const status = await providers.status(provider, request.idempotencyKey, options);
    if (status.kind === "answered" && status.status.response) {
      if (status.status.status === "succeeded" || status.status.status === "failed") {
        const outcome = outcomeOfResponse(status.status.response, clock.nowMicros());
        if (outcome.state !== "unknown") return { outcome, attemptsMade };
      }
    }
  } catch (error) {
    deps.logger.warn({ ...log, err: String(error) }, "provider status query failed");
  }
  return {
    outcome: {
      state: "unknown",
      errorKind: "unknown_outcome",
      message: `no definite answer from the provider (${unknown}); a human must check the business system`,
      ...(unknownReceipt ? { receipt: unknownReceipt } : {}),
      atMicros: clock.nowMicros(),
      nextSettleMicros: clock.nowMicros() + SETTLE_FIRST_DELAY_MS * 1000,
    },
    attemptsMade,
  };
}

/** How long after an outcome turned out unknown it is first asked again, in milliseconds. */
export const SETTLE_FIRST_DELAY_MS = 30_000;
/** The longest wait between two settle attempts of an unknown row (the back-off doubles up to it). */
export const SETTLE_MAX_DELAY_MS = 3_600_000;
/** How long after its claim an unknown row is still asked; after that only a person settles it. */
export const SETTLE_HORIZON_MS = 24 * 3_600_000;

/**
 * When an unknown row taken for its `attempt`-th settle attempt (1-based) is asked next: the first
 * delay doubled per attempt, at most the maximum; undefined past the horizon from its creation.
 */
export function nextSettleAfter(
  createdAtMicros: number,
  attempt: number,
  nowMicros: number,
): number | undefined {
  const delayMs = Math.min(SETTLE_MAX_DELAY_MS, SETTLE_FIRST_DELAY_MS * 2 ** Math.min(attempt, 20));
  const next = nowMicros + delayMs * 1000;
  return next - createdAtMicros > SETTLE_HORIZON_MS * 1000 ? undefined : next;
}

/** Who finishes a row, for what and under which lease, for the audit record and the fencing. */
export interface FinishContext {
  actor: string;
  capability: string;
  attemptsMade: number;
  /** The fencing token the finisher holds: the outcome is recorded only while it is current. */
  fencingToken: number;
}

/**
 * Records `outcome` on the row under the finisher's fencing token, audits `execution.finished`, marks
 * the row's finish as in the chain and counts it. Returns the row as stored and whether this call
 * recorded it (false when someone else finished the row first, or took it over: a later holder's
 * record stands). A provider's answer that arrives after the row was taken over is not lost: it goes
 * into the chain as `execution.late_answer`, for whoever settles the row. A finish whose append fails
 * stays unmarked on the row, and the leader's sweep appends it late (`appendMissingFinishes` in
 * `recovery.ts`).
 * Errors: throws when Postgres or the audit log fail.
 */
export async function finishExecution(
  deps: CoreDeps,
  executionId: string,
  sessionUid: string,
  outcome: ExecutionOutcome,
  context: FinishContext,
): Promise<{ execution: ExecutionRecord; recorded: boolean }> {
  const { recorded, execution } = await deps.executions.recordReceipt(
    executionId,
    outcome,
    context.fencingToken,
  );
  if (!recorded && execution.fencingToken !== context.fencingToken) {
    await reportSuperseded(deps, execution, sessionUid, outcome, context);
  }
  if (recorded) {
    deps.failpoint?.(AFTER_RECEIPT);
    let appended: AppendedRecord;
    try {
      appended = await deps.audit.append({
        kind: AuditKind.executionFinished,
        actor: context.actor,
        outcome: auditOutcomeOf(execution.state),
        sessionUid,
        executionId,
        atMicros: deps.clock.nowMicros(),
        payload: finishedPayload(execution, context.attemptsMade),
      });
    } catch (error) {
      deps.logger.error(
        { executionId, capability: context.capability, state: execution.state, err: String(error) },
        "execution finished but its audit record could not be appended; the recovery sweep appends it later",
      );
      throw error;
    }
    deps.failpoint?.(AFTER_FINISHED);
    await markFinishAudited(deps, executionId, appended.seq);
    if (execution.state !== "started") deps.metrics?.executionFinished(execution.state, execution.errorKind);
  }
  deps.logger.info(
    {
      executionId,
      capability: context.capability,
      state: execution.state,
      errorKind: execution.errorKind,
      recorded,
    },
    "execution finished",
  );
  return { execution, recorded };
}

/**
 * An outcome this holder may no longer record: a later holder took the row over. A provider's answer
 * is evidence of what happened, so it is appended (`execution.late_answer`) for the person or settle
 * attempt that settles the row; an outcome without an answer tells nothing and is only logged.
 */
async function reportSuperseded(
  deps: CoreDeps,
  current: ExecutionRecord,
  sessionUid: string,
  outcome: ExecutionOutcome,
  context: FinishContext,
): Promise<void> {
  const fields = {
    executionId: current.id,
    capability: context.capability,
    fencingToken: context.fencingToken,
    currentToken: current.fencingToken,
    currentState: current.state,
    outcome: outcome.state,
  };
  deps.logger.warn(
    fields,
    "execution was taken over before this outcome was recorded; the later holder's stands",
  );
  if (!outcome.receipt) return;
  const payload: JsonObject = {
    state: outcome.state,
    fencingToken: context.fencingToken,
    currentToken: current.fencingToken,
    currentState: current.state,
  };
  if (outcome.errorKind) payload.errorKind = outcome.errorKind;
  if (outcome.receipt.result !== undefined) {
    try {
      payload.resultDigest = canonicalDigest(outcome.receipt.result);
    } catch {
      payload.resultDigest = null;
    }
  }
  if (outcome.receipt.evidence) {
    payload.evidence = {
      system: outcome.receipt.evidence.system,
      reference: outcome.receipt.evidence.reference,
    };
  }
  await deps.audit.append({
    kind: AuditKind.executionLateAnswer,
    actor: context.actor,
    outcome: auditOutcomeOf(outcome.state),
    sessionUid,
    executionId: current.id,
    atMicros: deps.clock.nowMicros(),
    payload,
  });
}

/**
 * Marks the row's finish as in the chain at `seq`. Never throws: the record is in the chain and the
 * outcome is stored, so a failed mark only leaves the row for the sweep, which finds the record in
 * the chain and marks it then.
 */
export async function markFinishAudited(deps: CoreDeps, executionId: string, seq: number): Promise<void> {
  try {
    await deps.executions.markFinishAudited(executionId, seq);
  } catch (error) {
    deps.logger.warn(
      { executionId, seq, err: String(error) },
      "could not mark the execution's finish as audited; the recovery sweep marks it later",
    );
  }
}

/**
 * The payload of `execution.finished` for `execution`: `{state, attempts, errorKind?, message?,
 * neverSent?, resultDigest?, evidence?}`. `attempts` is how many invokes were sent, null when nobody counted
 * (a finish appended late from the row, which does not keep it).
 */
export function finishedPayload(execution: ExecutionRecord, attempts: number | null): JsonObject {
  const payload: JsonObject = { state: execution.state, attempts };
  if (execution.errorKind) payload.errorKind = execution.errorKind;
  if (execution.message) payload.message = execution.message;
  if (execution.neverSent) payload.neverSent = true;
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
