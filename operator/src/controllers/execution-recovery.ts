/**
 * The leader's execution-recovery loop: every `intervalMs` it settles `started` executions whose
 * claimer's lease ended (core/recovery.ts) — Auto calls whose agent never repeated them, and Approvals
 * whose dispatcher died before the next reconcile reached them — then asks again about `unknown`
 * executions that are due (core/recovery.ts `settleUnknownExecutions`), appends the
 * `execution.finished` records whose append failed after the receipt was stored (the finish outbox),
 * and gives every Auto call whose outcome is unknown — recovered so just now, or left without one by a
 * crash — its Approval in phase Unknown, so a person can resolve it (core/resolution.ts). A sweep
 * never overlaps the previous one; one that met a database outage is simply run again on schedule, so
 * recovery resumes within one period of the database's return.
 */
import type { Logger } from "pino";
import type { CoreDeps } from "../core/ports.ts";
import {
  appendMissingFinishes,
  recoverExpiredExecutions,
  settleUnknownExecutions,
} from "../core/recovery.ts";
import { recordUnknownAutoExecutions } from "../core/resolution.ts";
import { isDatabaseUnavailable } from "../store/unavailable.ts";
import { type SweepSettings, startPeriodicSweep } from "./periodic-sweep.ts";

/** Starts the loop (periodic-sweep.ts); `stop()` waits for a running sweep. */
export function startExecutionRecovery(
  core: CoreDeps,
  log: Logger,
  settings: SweepSettings,
): { stop(): Promise<void> } {
  // Each step's failure is logged on its own, so one broken step does not starve the others.
  const step = async (what: string, run: () => Promise<number>, done?: string) => {
    try {
      const count = await run();
      if (done && count > 0) log.info({ count }, done);
    } catch (error) {
      // An outage is the readiness check's and the metric's to report; the next sweep, ≤ 5 s on, resumes.
      if (isDatabaseUnavailable(error)) log.warn({ err: String(error) }, `${what} waits for the database`);
      else log.error({ err: error }, `${what} failed`);
    }
  };
  return startPeriodicSweep(
    "execution recovery",
    async () => {
      await step(
        "execution recovery sweep",
        () => recoverExpiredExecutions(core),
        "recovered executions whose lease ended",
      );
      await step(
        "settle sweep of unknown executions",
        () => settleUnknownExecutions(core),
        "asked again about executions of unknown outcome",
      );
      await step(
        "finish outbox sweep",
        () => appendMissingFinishes(core),
        "settled finishes missing from the audit chain",
      );
      await step("unknown Auto executions sweep", () => recordUnknownAutoExecutions(core));
    },
    log,
    settings,
  );
}
