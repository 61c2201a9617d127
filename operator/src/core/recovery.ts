/**
 * Recovery of executions whose claimer died (DESIGN §4 step 8, "exactly once"). A claimer owns a
 * `started` row until its lease ends; an operator killed between the claim and the receipt leaves the
 * row `started` with nobody to finish it. Whoever finds such a row after its lease — a repeated invoke,
 * a re-dispatched Approval, or the leader's periodic sweep — takes it over (one UPDATE decides who and
 * hands out the next fencing token) and settles it without risking a second effect, by the
 * idempotency recorded on the row when it was claimed:
 *   - `idempotency: key|natural`: invoke again with the same idempotency key (the provider and its
 *     business system answer a repeated key with the first outcome), then the status query;
 *   - `idempotency: none`: never invoke again; only ask the status endpoint.
 * The dead claimer may have sent the request, so nothing but an answer settles the row: a provider
 * that cannot be reached now leaves it `unknown`, never `failed`.
 * An `unknown` row is asked again on a back-off schedule (`nextSettleAfter`) for a day after its
 * claim — the same conversation, under a fresh fencing token — and a person settles what stays unknown.
 * The same sweep empties the finish outbox: a finish recorded on its row whose `execution.finished`
 * append failed is appended late, so no outcome is missing from the audit chain for good.
 */
import { AuditKind, auditOutcomeOf } from "./audit.ts";
import type { CoreDeps, ExecutionRecord } from "./ports.ts";
import {
  callProvider,
  finishExecution,
  finishedPayload,
  invokeAttemptsOf,
  leaseMsOf,
  nextSettleAfter,
} from "./provider-call.ts";

/**
 * Settles `execution` if it is `started` and its lease has ended; otherwise returns it unchanged.
 * Returns the row as stored afterwards (possibly settled by a concurrent recoverer).
 * Errors: throws when Postgres or the audit log fail (the row stays `started`; the next recoverer tries).
 */
export async function recoverExecution(deps: CoreDeps, execution: ExecutionRecord): Promise<ExecutionRecord> {
  const now = deps.clock.nowMicros();
  if (execution.state !== "started" || execution.leaseUntilMicros >= now) return execution;
  const attempts = reinvokeAttemptsOf(deps, execution);
  const taken = await deps.executions.takeOverExpired(
    execution.id,
    now + leaseMsOf(deps.config, attempts) * 1000,
    now,
  );
  if (!taken) return (await deps.executions.get(execution.id)) ?? execution;

  await deps.audit.append({
    kind: AuditKind.executionRecovering,
    actor: "gatehouse",
    outcome: "pending",
    sessionUid: taken.session.uid,
    executionId: taken.id,
    atMicros: deps.clock.nowMicros(),
    payload: {
      reason: "the lease ended before an outcome was recorded",
      idempotency: taken.idempotency,
      reinvoke: attempts > 0,
      idempotencyKey: taken.idempotencyKey,
      fencingToken: taken.fencingToken,
    },
  });
  deps.logger.warn(
    { executionId: taken.id, idempotency: taken.idempotency, fencingToken: taken.fencingToken },
    "recovering an execution whose claimer stopped",
  );
  return settleTaken(deps, taken, attempts);
}

/** Re-invokes a row's provider may take: by the idempotency recorded at claim, none when it does not deduplicate. */
function reinvokeAttemptsOf(deps: CoreDeps, execution: ExecutionRecord): number {
  return execution.idempotency === "none" ? 0 : invokeAttemptsOf(execution.idempotency, deps.config);
}

/** Asks the provider about a row this caller holds (the request may have been sent) and records what it learns. */
async function settleTaken(
  deps: CoreDeps,
  taken: ExecutionRecord,
  attempts: number,
): Promise<ExecutionRecord> {
  const { outcome, attemptsMade } = await callProvider(
    deps,
    {
      request: { ...taken.request, arguments: JSON.parse(taken.argumentsCanonical) },
      provider: taken.providerRef,
      sessionUid: taken.session.uid,
    },
    attempts,
    true,
  );
  if (taken.state === "unknown" && outcome.state === "unknown") return taken; // still nobody knows
  const { execution: settled } = await finishExecution(deps, taken.id, taken.session.uid, outcome, {
    actor: "gatehouse",
    capability: taken.capability,
    attemptsMade,
    fencingToken: taken.fencingToken,
  });
  return settled;
}

/**
 * One settle attempt of an `unknown` row that is due: takes it under a fresh fencing token (moving its
 * next attempt along the back-off), audits `execution.settling`, asks the provider (re-invoking by
 * key only when the claim recorded that the provider deduplicates) and records a definite answer.
 * Returns the row as stored afterwards. Errors: throws when Postgres or the audit log fail.
 */
export async function settleUnknownExecution(
  deps: CoreDeps,
  execution: ExecutionRecord,
): Promise<ExecutionRecord> {
  const now = deps.clock.nowMicros();
  const attempts = reinvokeAttemptsOf(deps, execution);
  const attempt = execution.settleAttempts + 1;
  const taken = await deps.executions.takeUnknownForSettling(
    execution.id,
    now + leaseMsOf(deps.config, attempts) * 1000,
    now,
    nextSettleAfter(execution.createdAtMicros, attempt, now),
  );
  if (!taken) return (await deps.executions.get(execution.id)) ?? execution;
  await deps.audit.append({
    kind: AuditKind.executionSettling,
    actor: "gatehouse",
    outcome: "pending",
    sessionUid: taken.session.uid,
    executionId: taken.id,
    atMicros: now,
    payload: {
      attempt,
      idempotency: taken.idempotency,
      reinvoke: attempts > 0,
      idempotencyKey: taken.idempotencyKey,
      fencingToken: taken.fencingToken,
      lastAttempt: taken.nextSettleMicros === undefined,
    },
  });
  return settleTaken(deps, taken, attempts);
}

/**
 * One sweep of unknown rows: up to `limit` that are due get a settle attempt each. Returns how many
 * were due. Errors: one row's failure is logged and does not stop the sweep.
 */
export async function settleUnknownExecutions(deps: CoreDeps, limit = 20): Promise<number> {
  const due = await deps.executions.listUnsettled(deps.clock.nowMicros(), limit);
  for (const execution of due) {
    try {
      await settleUnknownExecution(deps, execution);
    } catch (error) {
      deps.logger.error(
        { executionId: execution.id, err: String(error) },
        "settling an unknown execution failed",
      );
    }
  }
  return due.length;
}

/** How often a repeated call polls an execution another caller is finishing, in ms. */
const OUTCOME_POLL_MS = 250;

/**
 * The outcome of `execution` as a repeated call should report it: while the row is `started` under a
 * live lease (another caller is executing it, e.g. the invoke of a killed agent pod that the gateway is
 * still finishing), polls it every 250 ms; once the lease has ended, settles it as
 * {@link recoverExecution} does. So a repeat answers with the first call's receipt, not with "being
 * executed". Waits at most until the lease ends (`leaseMsOf`: the provider deadlines plus the grace).
 * Errors: as {@link recoverExecution}.
 */
export async function outcomeOfExecution(
  deps: CoreDeps,
  execution: ExecutionRecord,
): Promise<ExecutionRecord> {
  let current = execution;
  while (current.state === "started" && current.leaseUntilMicros >= deps.clock.nowMicros()) {
    await deps.timer.sleep(OUTCOME_POLL_MS);
    current = (await deps.executions.get(current.id)) ?? current;
  }
  return recoverExecution(deps, current);
}

/**
 * One sweep: recovers up to `limit` `started` rows whose lease ended. Returns how many it looked at.
 * The leader runs it periodically, so rows of Auto calls whose agent never repeated them are settled
 * too. Errors: one row's failure is logged and does not stop the sweep.
 */
export async function recoverExpiredExecutions(deps: CoreDeps, limit = 20): Promise<number> {
  const expired = await deps.executions.listExpired(deps.clock.nowMicros(), limit);
  for (const execution of expired) {
    try {
      await recoverExecution(deps, execution);
    } catch (error) {
      deps.logger.error({ executionId: execution.id, err: String(error) }, "execution recovery failed");
    }
  }
  return expired.length;
}

/**
 * How long after a finish was recorded the sweep waits before appending its missing `execution.finished`,
 * in milliseconds. The normal path appends within milliseconds of the receipt; a minute keeps the sweep
 * from racing an append still in flight (which would put the finish into the chain twice).
 */
export const LATE_FINISH_GRACE_MS = 60_000;

/**
 * One sweep of the finish outbox: for up to `limit` finished rows whose `execution.finished` is not in
 * the audit chain and that finished more than {@link LATE_FINISH_GRACE_MS} ago, appends it late
 * (payload.late = true) — or, when the chain already holds it (the append succeeded but the row was
 * not marked), only marks the row. Returns how many rows it looked at.
 * Errors: one row's failure is logged and does not stop the sweep (the row stays for the next one).
 */
export async function appendMissingFinishes(deps: CoreDeps, limit = 20): Promise<number> {
  const finishedBefore = deps.clock.nowMicros() - LATE_FINISH_GRACE_MS * 1000;
  const unaudited = await deps.executions.listUnauditedFinishes(finishedBefore, limit);
  for (const execution of unaudited) {
    try {
      await appendMissingFinish(deps, execution);
    } catch (error) {
      deps.logger.error(
        { executionId: execution.id, err: String(error) },
        "appending a missing execution.finished failed",
      );
    }
  }
  return unaudited.length;
}

async function appendMissingFinish(deps: CoreDeps, execution: ExecutionRecord): Promise<void> {
  // A row that went unknown → succeeded|failed has two finishes; only one of its own state is this one.
  const chained = (await deps.audit.recordsOf(execution.id)).findLast(
    (record) => record.kind === AuditKind.executionFinished && record.payload.state === execution.state,
  );
  if (chained) {
    await deps.executions.markFinishAudited(execution.id, chained.seq);
    return;
  }
  const appended = await deps.audit.append({
    kind: AuditKind.executionFinished,
    actor: "gatehouse",
    outcome: auditOutcomeOf(execution.state),
    sessionUid: execution.session.uid,
    executionId: execution.id,
    atMicros: deps.clock.nowMicros(),
    payload: { ...finishedPayload(execution, null), late: true },
  });
  await deps.executions.markFinishAudited(execution.id, appended.seq);
  if (execution.state !== "started") deps.metrics?.executionFinished(execution.state, execution.errorKind);
  deps.logger.warn(
    { executionId: execution.id, state: execution.state, seq: appended.seq },
    "appended a missing execution.finished late",
  );
}
