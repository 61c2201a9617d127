/**
 * A leader's periodic sweep: runs `sweep` now and then every `intervalMs`, never overlapping the
 * previous run; a failed run is logged and the next one tries again. `stop()` waits for a run in flight.
 */
import type { Logger } from "pino";

/** What a sweep is given: how often it runs, in milliseconds. */
export interface SweepSettings {
  intervalMs: number;
}

/**
 * The settings of the leader's sweeps (execution recovery, the conflict sweep): every 5 s, so recovery
 * resumes within 5 s of the database's return (DESIGN §3). A constant, not an environment variable.
 */
export const LEADER_SWEEPS: SweepSettings = { intervalMs: 5_000 };

/** Starts `sweep`; see the file comment. */
export function startPeriodicSweep(
  name: string,
  sweep: () => Promise<unknown>,
  log: Logger,
  { intervalMs }: SweepSettings,
): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const run = () => {
    running = sweep()
      .then(() => undefined)
      .catch((error: unknown) => log.error({ err: error }, `${name} failed`));
  };
  const timer = setInterval(() => {
    if (!stopped) void running.then(run);
  }, intervalMs);
  timer.unref();
  run();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
