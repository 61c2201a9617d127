/**
 * Test-only failpoints (`GATEHOUSE_FAILPOINTS`, config.ts): at a named point of Core's execution path
 * the process kills itself with SIGKILL — no cleanup, no lease release, no pending write flushed — so
 * the exactly-once tests can crash the operator exactly between a claim and a receipt. The idea and the
 * name come from etcd's gofail. Each point fires once per process. Not set in production.
 */
import type { Logger } from "pino";
import type { Failpoint } from "../core/ports.ts";

/** A `CoreDeps.failpoint` that SIGKILLs this process the first time it reaches one of `points`. */
export function failpointTrigger(points: readonly Failpoint[], log: Logger): (point: Failpoint) => void {
  const armed = new Set(points);
  log.warn({ failpoints: [...armed] }, "test failpoints armed: the operator will SIGKILL itself at them");
  return (point) => {
    if (!armed.delete(point)) return;
    log.flush();
    process.stderr.write(`gatehouse: failpoint ${point} reached; SIGKILL\n`);
    process.kill(process.pid, "SIGKILL");
  };
}
