import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { HarnessError } from "./errors.ts";

/** How a process ended: its exit code, or the signal that ended it. */
export type ExitInfo = { code: number | null; signal: NodeJS.Signals | null };

/** What to start: see {@link ManagedProcess.spawn}. */
export type SpawnOptions = {
  /** Short name used in messages, e.g. `kube-apiserver`. */
  name: string;
  command: string;
  args: readonly string[];
  /** stdout and stderr are appended to this file. */
  logPath: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
};

/**
 * A child process whose output goes to a log file and which dies with its parent: it is started through
 * `setpriv --pdeathsig KILL`, so a crashed harness leaves no orphaned API server or pod behind.
 */
export class ManagedProcess {
  readonly name: string;
  readonly logPath: string;
  readonly child: ChildProcess;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<ExitInfo>;
  private exit: ExitInfo | undefined;

  private constructor(options: SpawnOptions) {
    this.name = options.name;
    this.logPath = options.logPath;
    const log = openSync(options.logPath, "a");
    try {
      this.child = spawn("setpriv", ["--pdeathsig", "KILL", "--", options.command, ...options.args], {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ["ignore", log, log],
        // A process group of its own: a terminal's Ctrl-C reaches only the harness, which stops the
        // components in order (etcd last), instead of etcd dying under a draining API server.
        detached: true,
      });
    } finally {
      closeSync(log);
    }
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
      this.child.once("error", (err) => {
        this.exit = { code: -1, signal: null };
        resolve(this.exit);
        void err;
      });
    });
  }

  /** Starts `options.command` with `options.args`; output is appended to `options.logPath`. */
  static spawn(options: SpawnOptions): ManagedProcess {
    return new ManagedProcess(options);
  }

  /** The process id, or undefined if it could not start. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** How it ended, or undefined while it runs. */
  get exitInfo(): ExitInfo | undefined {
    return this.exit;
  }

  /**
   * If the process has exited, an `unavailable` HarnessError saying so with the last lines of its log;
   * otherwise undefined. Used to fail fast while waiting for a process to become ready.
   */
  deathError(): HarnessError | undefined {
    if (!this.exit) return undefined;
    const how = this.exit.signal ? `signal ${this.exit.signal}` : `exit code ${this.exit.code}`;
    return new HarnessError(
      "unavailable",
      `${this.name} exited during start (${how}); last lines of ${this.logPath}:\n${tailFile(this.logPath, 30)}`,
    );
  }

  /** Sends SIGTERM, waits up to `graceMs`, then SIGKILL; resolves when the process has exited. */
  async stop(graceMs: number): Promise<ExitInfo> {
    if (this.exit) return this.exit;
    this.child.kill("SIGTERM");
    const ac = new AbortController();
    const timer = sleep(graceMs, undefined, { signal: ac.signal }).catch(() => undefined);
    const result = await Promise.race([this.exited, timer]);
    ac.abort();
    if (result) return result;
    this.child.kill("SIGKILL");
    return this.exited;
  }
}

/** The last `lines` lines of a text file (reads at most its last 64 KiB); "" if it cannot be read. */
export function tailFile(path: string, lines: number): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const size = fstatSync(fd).size;
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString("utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
