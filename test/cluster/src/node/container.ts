import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { constants } from "node:os";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** Regular init container, native sidecar (init container with restartPolicy Always), or app container. */
export type ContainerRole = "init" | "sidecar" | "main";

/** Not running yet or held back (reason CamelCase, e.g. ContainerCreating, CrashLoopBackOff). */
export type Waiting = { kind: "waiting"; reason: string; message?: string };
/** Running since `startedAt`. */
export type Running = { kind: "running"; startedAt: Date; containerID: string };
/** Exited: exit code (128+n for signal n), reason Completed (0) or Error. */
export type Terminated = {
  kind: "terminated";
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt: Date;
  finishedAt: Date;
  containerID: string;
};
/** The three container states of core/v1 ContainerState. */
export type ContainerState = Waiting | Running | Terminated;

/** How to run one container process. */
export type LaunchSpec = {
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd: string;
  netns: string;
  logPath: string;
};

/** First restart delay; doubles per crash up to {@link BACKOFF_MAX_MS}. Shorter than the kubelet's 10 s. */
export const BACKOFF_INITIAL_MS = 1_000;
/** Longest restart delay (the kubelet's is 5 min; tests want quicker recovery). */
export const BACKOFF_MAX_MS = 60_000;
/** A container that ran at least this long before exiting restarts after the initial delay again. */
const BACKOFF_RESET_AFTER_MS = 60_000;

/**
 * One container of a pod, run as a process inside the pod's network namespace (`ip netns exec`) through
 * `setpriv --pdeathsig KILL`, so it dies with the local node, in a process group of its own: SIGTERM goes
 * to the container's main process, SIGKILL (after the grace period, or once the main process has exited)
 * to the whole group. Tracks the container's state, last
 * termination, restart count, readiness and restart back-off; the pod worker decides when to (re)start.
 */
export class ContainerRunner {
  readonly name: string;
  readonly image: string;
  readonly role: ContainerRole;
  state: ContainerState = { kind: "waiting", reason: "ContainerCreating" };
  restartCount = 0;
  /** Readiness as last reported by the prober (the worker sets it; without a probe it is `running`). */
  ready = false;
  private lastTermination: Terminated | undefined;
  private priorTermination: Terminated | undefined;
  private starts = 0;
  private backoffMs = 0;
  private nextStartAt = 0;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly onExit: () => void;

  constructor(name: string, image: string, role: ContainerRole, onExit: () => void) {
    this.name = name;
    this.image = image;
    this.role = role;
    this.onExit = onExit;
  }

  /** True while the process runs. */
  get running(): boolean {
    return this.child !== undefined;
  }

  /** True once the container has been started at least once. */
  get everStarted(): boolean {
    return this.starts > 0;
  }

  /** The latest termination, if the container has exited at least once. */
  get lastExit(): Terminated | undefined {
    return this.lastTermination;
  }

  /** core/v1 `lastState`: the termination before the current state. */
  get previousState(): Terminated | undefined {
    return this.state.kind === "terminated" ? this.priorTermination : this.lastTermination;
  }

  /** Milliseconds since the epoch before which a restart is held back. */
  get restartNotBefore(): number {
    return this.nextStartAt;
  }

  /** Shows the container as waiting (e.g. ImageNotInMap, CreateContainerConfigError, CrashLoopBackOff). */
  wait(reason: string, message?: string): void {
    if (!this.child) this.state = { kind: "waiting", reason, message };
  }

  /**
   * A pod gone terminal before this container ever exited (e.g. its deadline passed while the sandbox
   * was still being set up) reports it terminated, never waiting: the kubelet's ContainerStatusUnknown,
   * exit code 137.
   */
  terminateUnstarted(at: Date): void {
    if (this.child || this.state.kind === "terminated") return;
    this.state = {
      kind: "terminated",
      exitCode: 137,
      reason: "ContainerStatusUnknown",
      message: "The container could not be located when the pod was terminated",
      startedAt: at,
      finishedAt: at,
      containerID: "",
    };
  }

  /** Starts the process; output is appended to `spec.logPath` after a header line. */
  start(spec: LaunchSpec): void {
    if (this.child) return;
    if (this.starts > 0) this.restartCount++;
    this.starts++;
    mkdirSync(dirname(spec.logPath), { recursive: true });
    const log = openSync(spec.logPath, "a");
    const startedAt = new Date();
    let child: ChildProcess;
    try {
      writeSync(log, `---- ${this.name} start #${this.starts} at ${startedAt.toISOString()}\n`);
      child = spawn("setpriv", netnsArgv(spec.netns, spec.argv), {
        cwd: spec.cwd,
        env: { ...spec.env },
        stdio: ["ignore", log, log],
        // Its own process group, so SIGKILL reaches whatever the container started, as the end of a
        // container's PID namespace would.
        detached: true,
      });
    } finally {
      closeSync(log);
    }
    this.child = child;
    this.ready = false;
    const containerID = `localnode://${child.pid ?? "none"}`;
    this.state = { kind: "running", startedAt, containerID };
    this.exited = new Promise((resolve) => {
      let done = false;
      const finish = (exitCode: number, signal: number | undefined, message?: string): void => {
        if (done) return;
        done = true;
        const finishedAt = new Date();
        const termination: Terminated = {
          kind: "terminated",
          exitCode,
          signal,
          reason: exitCode === 0 ? "Completed" : message ? "StartError" : "Error",
          message,
          startedAt,
          finishedAt,
          containerID,
        };
        this.priorTermination = this.lastTermination;
        this.lastTermination = termination;
        this.state = termination;
        this.child = undefined;
        this.ready = false;
        const ranMs = finishedAt.getTime() - startedAt.getTime();
        this.backoffMs =
          ranMs >= BACKOFF_RESET_AFTER_MS
            ? BACKOFF_INITIAL_MS
            : Math.min(Math.max(BACKOFF_INITIAL_MS, this.backoffMs * 2), BACKOFF_MAX_MS);
        this.nextStartAt = finishedAt.getTime() + this.backoffMs;
        resolve();
        this.onExit();
      };
      child.once("exit", (code, signal) => {
        const number = signal ? constants.signals[signal] : undefined;
        killGroup(child.pid, "SIGKILL");
        finish(code ?? 128 + (number ?? 0), number);
      });
      child.once("error", (err) => finish(128, undefined, `could not start: ${err.message}`));
    });
  }

  /**
   * Stops the process: SIGTERM, up to `graceMs` to exit, then SIGKILL. `hurry` aborting skips the rest of
   * the grace period (the pod object was force-deleted). Resolves once the process is gone.
   */
  async stop(graceMs: number, hurry?: AbortSignal): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill("SIGTERM");
    const ac = new AbortController();
    const onHurry = (): void => ac.abort();
    hurry?.addEventListener("abort", onHurry);
    if (hurry?.aborted) ac.abort();
    try {
      await Promise.race([
        this.exited,
        sleep(graceMs, undefined, { signal: ac.signal }).catch(() => undefined),
      ]);
    } finally {
      ac.abort();
      hurry?.removeEventListener("abort", onHurry);
    }
    if (this.child === child) killGroup(child.pid, "SIGKILL");
    await this.exited;
  }
}

/**
 * Runs `argv` once inside network namespace `netns` with `env` and `cwd`, as an exec probe does, and
 * resolves with its exit code; 1 when it cannot start, and, after `timeoutMs`, its process group is
 * killed and the result is `"timeout"`. Output is discarded.
 */
export function execInNetns(
  netns: string,
  argv: readonly string[],
  options: { env: Readonly<Record<string, string>>; cwd: string; timeoutMs: number },
): Promise<number | "timeout"> {
  return new Promise((resolve) => {
    const child = spawn("setpriv", netnsArgv(netns, argv), {
      cwd: options.cwd,
      env: { ...options.env },
      stdio: "ignore",
      detached: true,
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid, "SIGKILL");
    }, options.timeoutMs);
    child.once("error", () => {
      clearTimeout(timer);
      resolve(1);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      killGroup(child.pid, "SIGKILL");
      resolve(timedOut ? "timeout" : (code ?? 1));
    });
  });
}

/** `setpriv` arguments that run `argv` in `netns` and make it die with the local node. */
function netnsArgv(netns: string, argv: readonly string[]): string[] {
  return ["--pdeathsig", "KILL", "--", "ip", "netns", "exec", netns, ...argv];
}

/** Signals the process group led by `pid`; a group that is already gone is fine. */
function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group has no members left
  }
}
