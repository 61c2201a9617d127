/**
 * A leader's periodic sweep: runs `sweep` now and then every `intervalMs`, never overlapping the
 * previous run; a failed run is logged and the next one tries again. `stop()` waits for a run in flight.
 */
import type { Logger } from "pino";

/** Starts `sweep`; see the file comment. */
export function startPeriodicSweep(
  name: string,
  sweep: () => Promise<unknown>,
  log: Logger,
  intervalMs: number,
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
