/**
 * The trigger of the test-only failpoints (`GATEHOUSE_FAILPOINTS`, config.ts; the points are listed in
 * core/failpoints.ts). `exit` SIGKILLs the process the first time it reaches the point — no cleanup, no
 * Lease release, no pending write flushed — so a test crashes it exactly between two writes; `block`
 * stops the whole process there (its one thread waits forever: no Lease renewal, no I/O), as a hung
 * replica a standby must take over from. Never armed in production.
 */
import type { Logger } from "pino";
import type { Failpoint, FailpointAction } from "./core/failpoints.ts";

/** A `CoreDeps.failpoint` that acts at the points of `armed`, logging at start which are armed. */
export function failpointTrigger(
  armed: ReadonlyMap<Failpoint, FailpointAction>,
  log: Logger,
): (point: Failpoint) => void {
  const pending = new Map(armed);
  log.warn(
    { failpoints: Object.fromEntries(pending) },
    "test failpoints armed: the process kills or blocks itself at them",
  );
  return (point) => {
    const action = pending.get(point);
    if (action === undefined) return;
    pending.delete(point);
    log.flush();
    process.stderr.write(
      `gatehouse: failpoint ${point} reached; ${action === "exit" ? "SIGKILL" : "blocking"}\n`,
    );
    if (action === "exit") process.kill(process.pid, "SIGKILL");
    // A synchronous wait that never ends: timers, sockets and the Lease renewal stop with it.
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  };
}
