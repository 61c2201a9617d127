/**
 * The leader's execution-recovery loop: every `intervalMs` it settles `started` executions whose
 * claimer's lease ended (core/recovery.ts) — Auto calls whose agent never repeated them, and Approvals
 * whose dispatcher died before the next reconcile reached them — then asks again about `unknown`
 * executions that are due (core/recovery.ts `settleUnknownExecutions`), appends the
 * `execution.finished` records whose append failed after the receipt was stored (the finish outbox),
 * and gives every Auto call whose outcome is unknown — recovered so just now, or left without one by a
 * crash — its Approval in phase Unknown, so a person can resolve it (core/resolution.ts). A sweep
 * never overlaps the previous one.
 */
import type { Logger } from "pino";
import type { CoreDeps } from "../core/ports.ts";
import {
  appendMissingFinishes,
  recoverExpiredExecutions,
  settleUnknownExecutions,
} from "../core/recovery.ts";
import { recordUnknownAutoExecutions } from "../core/resolution.ts";

/** Starts the loop; `stop()` waits for a running sweep. */
export function startExecutionRecovery(
  core: CoreDeps,
  log: Logger,
  intervalMs = 5_000,
): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const sweep = () => {
    running = recoverExpiredExecutions(core)
      .then((count) => {
        if (count > 0) log.info({ count }, "recovered executions whose lease ended");
      })
      .catch((error: unknown) => log.error({ err: error }, "execution recovery sweep failed"))
      .then(() => settleUnknownExecutions(core))
      .then((count) => {
        if (count > 0) log.info({ count }, "asked again about executions of unknown outcome");
      })
      .catch((error: unknown) => log.error({ err: error }, "settle sweep of unknown executions failed"))
      .then(() => appendMissingFinishes(core))
      .then((count) => {
        if (count > 0) log.info({ count }, "settled finishes missing from the audit chain");
      })
      .catch((error: unknown) => log.error({ err: error }, "finish outbox sweep failed"))
      .then(() => recordUnknownAutoExecutions(core))
      .then(() => undefined)
      .catch((error: unknown) => log.error({ err: error }, "unknown Auto executions sweep failed"));
  };
  const timer = setInterval(() => {
    if (!stopped) void running.then(sweep);
  }, intervalMs);
  timer.unref();
  sweep();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
