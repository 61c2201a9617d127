/**
 * One engine subprocess (Pi now, others later), the same way for each: spawn with pipes, stdout as
 * JSON lines, the last bytes of stderr kept for the error message, a start deadline, and a stop that
 * asks first and kills later. The child must end when its stdin closes: that is the watchdog — when
 * the agent process dies, even by SIGKILL, the kernel closes the pipe and the child sees EOF.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readLines } from "./jsonl.ts";

/** What to run and how long each step may take. */
export interface ChildSpec {
  /** The engine's name, for messages ("pi"). */
  name: string;
  command: string;
  args: string[];
  /** The whole environment of the child (nothing is inherited implicitly). */
  env: Record<string, string>;
  cwd?: string;
  /** From spawn until `ready` resolves. */
  startTimeoutMs: number;
  /** How long the child has to exit after its stdin closes, then again after SIGTERM, before SIGKILL. */
  stopGraceMs: number;
  /** How much of the end of stderr to keep (default 4096 bytes). */
  stderrTailBytes?: number;
  /** Each stdout line. */
  onLine(line: string): void;
  /** Resolves once the child can take work (e.g. it answered a first command). */
  ready?(child: Child): Promise<void>;
}

/** How a child ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderrTail: string;
}

/** A failure of the subprocess itself (start, timeout, crash); `kind` is from the shared list. */
export class EngineProcessError extends Error {
  readonly kind: string;
  readonly exit: ExitInfo | undefined;

  constructor(kind: string, message: string, exit?: ExitInfo) {
    super(message);
    this.name = "EngineProcessError";
    this.kind = kind;
    this.exit = exit;
  }
}

/** A running child. */
export interface Child {
  readonly pid: number;
  /** False once it exited. */
  readonly running: boolean;
  /** Writes to its stdin (a line must end with LF). */
  write(text: string): void;
  /** Resolves when it exits, whoever ended it. */
  readonly exited: Promise<ExitInfo>;
  /** Closes stdin, then SIGTERM, then SIGKILL, each after `stopGraceMs`. */
  stop(): Promise<ExitInfo>;
  /** True when `stop` was called (an exit then is no crash). */
  readonly stopping: boolean;
}

/** "pi exited with code 1" and the stderr tail, for the run's error. */
export function describeExit(name: string, exit: ExitInfo): string {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  const tail = exit.stderrTail.trim();
  return tail ? `${name} ${how}; stderr ends: ${tail}` : `${name} ${how} (no stderr)`;
}

function tailKeeper(limit: number) {
  let tail = Buffer.alloc(0);
  return {
    push(chunk: Buffer) {
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > limit) tail = tail.subarray(tail.length - limit);
    },
    text: () => tail.toString("utf8").replace(/^\uFFFD+/, ""),
  };
}

/** Starts `spec` and waits until it is ready; on a failure, timeout or `signal` the child is killed. */
export async function startChild(spec: ChildSpec, signal?: AbortSignal): Promise<Child> {
  signal?.throwIfAborted();
  const stderr = tailKeeper(spec.stderrTailBytes ?? 4096);
  const process: ChildProcess = spawn(spec.command, spec.args, {
    env: spec.env,
    cwd: spec.cwd,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let running = true;
  let stopping = false;
  process.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
  readLines(process.stdout!, spec.onLine);
  // Writing to a child that just died raises EPIPE on the stream; the exit is what reports it.
  process.stdin!.on("error", () => {});
  const exited = new Promise<ExitInfo>((resolve) => {
    process.once("close", (code, exitSignal) => {
      running = false;
      resolve({ code, signal: exitSignal, stderrTail: stderr.text() });
    });
  });
  const spawned = new Promise<void>((resolve, reject) => {
    process.once("spawn", resolve);
    process.once("error", (error) =>
      reject(new EngineProcessError("unavailable", `${spec.name} could not start: ${error.message}`)),
    );
  });

  /** `exited`, or undefined after `ms`. */
  function exitWithin(ms: number): Promise<ExitInfo | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms);
    });
    return Promise.race([exited, late]).finally(() => clearTimeout(timer));
  }

  async function stop(): Promise<ExitInfo> {
    stopping = true;
    if (running) process.stdin!.end();
    for (const next of ["SIGTERM", "SIGKILL"] as const) {
      const exit = await exitWithin(spec.stopGraceMs);
      if (exit) return exit;
      process.kill(next);
    }
    return exited;
  }

  const child: Child = {
    get pid() {
      return process.pid ?? -1;
    },
    get running() {
      return running;
    },
    get stopping() {
      return stopping;
    },
    write(text) {
      if (running) process.stdin!.write(text);
    },
    exited,
    stop,
  };

  const timeout = AbortSignal.timeout(spec.startTimeoutMs);
  const abandon = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const settled = new AbortController();
  const gaveUp = once(abandon, "abort", { signal: settled.signal }).then(() => {
    throw abandon.reason === timeout.reason
      ? new EngineProcessError("timeout", `${spec.name} did not start within ${spec.startTimeoutMs} ms`)
      : abandon.reason;
  });
  const died = exited.then((exit) => {
    throw new EngineProcessError(
      "unavailable",
      `${spec.name} ended while starting: ${describeExit(spec.name, exit)}`,
      exit,
    );
  });
  try {
    await Promise.race([
      (async () => {
        await spawned;
        await spec.ready?.(child);
      })(),
      gaveUp,
      died,
    ]);
    return child;
  } catch (error) {
    await stop();
    throw error;
  } finally {
    settled.abort();
    // The losers of the race must not surface as unhandled rejections.
    gaveUp.catch(() => {});
    died.catch(() => {});
  }
}
