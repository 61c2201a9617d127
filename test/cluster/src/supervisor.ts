import type { ExitInfo } from "./process.ts";

/** A capped exponential back-off between restarts of one process, in milliseconds. */
export type RestartBackoff = { initialDelayMs: number; maxDelayMs: number };

/** The kubelet's back-off for restartPolicy Always (CrashLoopBackOff): 10 s, doubling, at most 5 min. */
export const KUBELET_RESTART_BACKOFF: RestartBackoff = { initialDelayMs: 10_000, maxDelayMs: 300_000 };

/**
 * The delay before restart number `restart` (1 for the first since the back-off was last reset):
 * `initialDelayMs` doubled for each restart before it, at most `maxDelayMs`.
 */
export function restartDelayMs(backoff: RestartBackoff, restart: number): number {
  return Math.min(backoff.initialDelayMs * 2 ** Math.max(restart - 1, 0), backoff.maxDelayMs);
}

/**
 * Whether a process that ran `ranMs` before it exited starts the back-off afresh: it ran for twice the
 * cap, as the kubelet forgets a container's back-off after twice the cap without a failure.
 */
export function backoffResets(backoff: RestartBackoff, ranMs: number): boolean {
  return ranMs >= 2 * backoff.maxDelayMs;
}

/** One restart the supervisor scheduled: which process, how its run ended, and when it starts again. */
export type RestartEvent = {
  name: string;
  exit: ExitInfo;
  /** 1 for the first restart since the back-off was last reset. */
  restart: number;
  delayMs: number;
};

/** A started process, as far as the supervisor needs it. */
export type SupervisedRun = { exited: Promise<ExitInfo> };

/** `exit code 3` or `signal SIGKILL`. */
export function describeExit(exit: ExitInfo): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
}

/**
 * Keeps processes running the way a kubelet keeps a restartPolicy Always container: when one exits, it
 * is started again after {@link restartDelayMs} of its consecutive restarts (reset by a long run), and
 * every restart is reported to `onRestart` before its delay. {@link stop} ends the supervision: pending
 * restarts are cancelled and exits are no longer answered, so the owner can then stop the processes.
 */
export class Supervisor {
  private readonly backoff: RestartBackoff;
  private readonly onRestart: (event: RestartEvent) => void;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(backoff: RestartBackoff, onRestart: (event: RestartEvent) => void) {
    this.backoff = backoff;
    this.onRestart = onRestart;
  }

  /**
   * Supervises `first` (already started) under `name`; each restart calls `start()`. A `start()` that
   * throws counts as a run that exited at once with code -1.
   */
  supervise(name: string, first: SupervisedRun, start: () => SupervisedRun): void {
    let restarts = 0;
    const watch = (run: SupervisedRun, startedAt: number): void => {
      void run.exited.then((exit) => {
        if (this.stopped) return;
        if (backoffResets(this.backoff, Date.now() - startedAt)) restarts = 0;
        restarts += 1;
        const delayMs = restartDelayMs(this.backoff, restarts);
        this.onRestart({ name, exit, restart: restarts, delayMs });
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          if (this.stopped) return;
          let next: SupervisedRun;
          try {
            next = start();
          } catch {
            next = { exited: Promise.resolve({ code: -1, signal: null }) };
          }
          watch(next, Date.now());
        }, delayMs);
        this.timers.add(timer);
      });
    };
    watch(first, Date.now());
  }

  /** Stops restarting: cancels pending restarts; later exits are left alone. Idempotent. */
  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
