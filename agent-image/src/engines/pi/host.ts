/**
 * One Pi process and the bridge its extension connects to. Runs take the host one at a time
 * (`acquire`): each loads its transcript as a fresh session file — Pi is started on it
 * (`--session`), or, when already running, switches to it — and then receives Pi's events and the
 * extension's execute requests until it releases the host. A Pi that crashed is started again on the
 * next run, after the restart backoff. Process handling is the shared subprocess code.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import { answerReserve, DEFAULT_CONTEXT_WINDOW } from "../builtin/context.ts";
import {
  type Child,
  describeExit,
  EngineProcessError,
  type ExitInfo,
  startChild,
} from "../subprocess/child.ts";
import { jsonLine, readLines } from "../subprocess/jsonl.ts";
import { defaultRestartPolicy, Restarting, type RestartPolicy } from "../subprocess/restart.ts";
import {
  BRIDGE_SOCKET_ENV,
  type CompactionReport,
  type FromExtension,
  type RunSetup,
  type ToExtension,
} from "./bridge-protocol.ts";
import { MODEL_ID, type PiModelSettings, PROVIDER, writePiConfig } from "./config-files.ts";
import { piEntryPoint, piEnvironment } from "./package.ts";
import { sessionFileText } from "./session-file.ts";

/** One line of Pi's RPC output (an event; responses are matched here). */
export type PiEvent = { type: string } & Record<string, unknown>;

export type ExecuteRequest = Extract<FromExtension, { type: "execute" }>;

/** What the run holding the host receives. */
export interface RunSink {
  event(event: PiEvent): void;
  execute(request: ExecuteRequest): void;
  /** The extension compacted the request it is about to send (a sink without it ignores that). */
  compaction?(report: CompactionReport): void;
  exited(exit: ExitInfo): void;
}

export interface PiHostOptions {
  /** Writable directory (an emptyDir in the pod): Pi's agent dir, session files, the bridge socket. */
  dir: string;
  model: PiModelSettings;
  logger: Logger;
  /** Default 30 s. */
  startTimeoutMs?: number;
  /** Default 2 s. */
  stopGraceMs?: number;
  restart?: RestartPolicy;
  /**
   * The model's context window in tokens (default DEFAULT_CONTEXT_WINDOW): the extension compacts
   * every request to it. Per host, as a pod's host serves one session (`contextWindow` sets it).
   */
  contextWindow?: number;
}

const EXTENSION = fileURLToPath(new URL("./extension.ts", import.meta.url));

/** Pi's command line: RPC mode, only our extension's tools, nothing discovered from disk. */
function piArguments(sessionFile: string): string[] {
  return [
    piEntryPoint(),
    "--mode",
    "rpc",
    "--no-builtin-tools",
    "--no-extensions",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
    "--no-context-files",
    "--extension",
    EXTENSION,
    "--provider",
    PROVIDER,
    "--model",
    MODEL_ID,
    "--session",
    sessionFile,
  ];
}

type Pending = { resolve(value: unknown): void; reject(error: Error): void };

/** Where a run gets a Pi from: one host, or a pool of them (pool.ts). */
export interface PiHosts {
  acquire(): Promise<{ host: PiHost; release: () => void }>;
}

export class PiHost implements PiHosts {
  private readonly restarting: Restarting;
  private readonly socketPath: string;
  private readonly agentDir: string;
  private readonly workDir: string;
  private readonly sessionsDir: string;
  private server: Server | undefined;
  private socket: Socket | undefined;
  private connectedWaiters: (() => void)[] = [];
  private child: Child | undefined;
  private loadedFile: string | undefined;
  private startFile = "";
  private readonly pendingRpc = new Map<string, Pending>();
  private readonly pendingBridge = new Map<number, Pending>();
  private nextId = 0;
  private runs = 0;
  private sink: RunSink | undefined;
  private queue: Promise<void> = Promise.resolve();

  private readonly options: PiHostOptions;
  /** The window the next runs' requests are compacted to (the session's model endpoint's). */
  contextWindow: number;

  constructor(options: PiHostOptions) {
    this.options = options;
    this.contextWindow = options.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
    this.agentDir = path.join(options.dir, "agent");
    this.workDir = path.join(options.dir, "work");
    this.sessionsDir = path.join(options.dir, "sessions");
    for (const dir of [this.agentDir, this.workDir, this.sessionsDir]) mkdirSync(dir, { recursive: true });
    this.socketPath = path.join(options.dir, "bridge.sock");
    this.restarting = new Restarting((signal) => this.start(signal), options.restart ?? defaultRestartPolicy);
  }

  /** Pi starts so far (a restart counts). */
  get starts(): number {
    return this.restarting.starts;
  }

  /** The running Pi's pid, if any. */
  get pid(): number | undefined {
    return this.child?.running ? this.child.pid : undefined;
  }

  /** Waits for the host; resolves to it and the function that lets the next run have it. */
  async acquire(): Promise<{ host: PiHost; release: () => void }> {
    const previous = this.queue;
    let release = () => {};
    this.queue = new Promise((resolve) => {
      release = resolve;
    });
    await previous;
    return {
      host: this,
      release: () => {
        this.sink = undefined;
        release();
      },
    };
  }

  /** Starts Pi now, on an empty session, rather than at the first run (whose time it would take). */
  async warm(signal?: AbortSignal): Promise<void> {
    const { release } = await this.acquire();
    try {
      this.runs += 1;
      this.startFile = path.join(this.sessionsDir, `run-${this.runs}.jsonl`);
      writeFileSync(this.startFile, sessionFileText([], { provider: PROVIDER, model: MODEL_ID, cwd: "/" }));
      await this.restarting.get(signal);
    } finally {
      release();
    }
  }

  /** Loads `sessionText` into Pi (starting it if needed) and sets the run up; events go to `sink`. */
  async load(sessionText: string, setup: RunSetup, sink: RunSink, signal: AbortSignal): Promise<void> {
    this.runs += 1;
    const file = path.join(this.sessionsDir, `run-${this.runs}.jsonl`);
    writeFileSync(file, sessionText);
    this.sink = sink;
    this.startFile = file;
    await this.restarting.get(signal);
    if (this.loadedFile !== file) {
      const switched = (await this.rpc({ type: "switch_session", sessionPath: file })) as {
        cancelled?: boolean;
      };
      if (switched?.cancelled)
        throw new EngineProcessError("internal", "pi refused to switch to the run's session");
      this.loadedFile = file;
    }
    const window = this.contextWindow;
    await this.toExtension({ type: "setup", context: { window, reserve: answerReserve(window) }, ...setup });
  }

  /** Sends an RPC command; resolves to its `data`, rejects on `success: false` or when Pi exits. */
  rpc(command: { type: string } & Record<string, unknown>): Promise<unknown> {
    const id = `r${this.nextId++}`;
    return new Promise((resolve, reject) => {
      if (!this.child?.running) return reject(new EngineProcessError("unavailable", "pi is not running"));
      this.pendingRpc.set(id, { resolve, reject });
      this.child.write(jsonLine({ ...command, id }));
    });
  }

  /** Sends the extension a message and waits for its `done`. */
  toExtension(
    message: ToExtension extends infer M ? (M extends { id: number } ? Omit<M, "id"> : never) : never,
  ): Promise<void> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.socket)
        return reject(new EngineProcessError("unavailable", "pi's extension is not connected"));
      this.pendingBridge.set(id, { resolve: () => resolve(), reject });
      this.socket.write(jsonLine({ ...message, id }));
    });
  }

  /** Answers an execute request (no reply expected). */
  answer(id: number, content: string, terminate: boolean): void {
    this.socket?.write(jsonLine({ type: "answer", id, content, terminate } satisfies ToExtension));
  }

  /** Stops Pi; the next run starts it again, without delay. */
  async restart(): Promise<void> {
    await this.restarting.stop();
  }

  /** Stops Pi (stdin closed, then signals) and the bridge. */
  async close(): Promise<void> {
    await this.restarting.stop();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
    rmSync(this.socketPath, { force: true });
  }

  private async listen(): Promise<void> {
    if (this.server) return;
    rmSync(this.socketPath, { force: true });
    const server = createServer((socket) => {
      this.socket = socket;
      socket.on("error", () => {});
      socket.on("close", () => {
        if (this.socket === socket) this.socket = undefined;
      });
      readLines(socket, (line) => this.fromExtension(JSON.parse(line) as FromExtension));
      for (const waiter of this.connectedWaiters.splice(0)) waiter();
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.socketPath, resolve);
    });
    this.server = server;
  }

  private async start(signal: AbortSignal | undefined): Promise<Child> {
    await this.listen();
    this.socket = undefined;
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...piEnvironment(this.agentDir),
      ...writePiConfig(this.agentDir, this.options.model),
      [BRIDGE_SOCKET_ENV]: this.socketPath,
    };
    const started = Date.now();
    const child = await startChild(
      {
        name: "pi",
        command: process.execPath,
        args: piArguments(this.startFile),
        env,
        cwd: this.workDir,
        startTimeoutMs: this.options.startTimeoutMs ?? 30_000,
        stopGraceMs: this.options.stopGraceMs ?? 2000,
        onLine: (line) => this.fromPi(line),
        ready: async (running) => {
          this.child = running;
          void running.exited.then((exit) => this.onExit(exit));
          // The extension connects while Pi loads it; a first answered command means the RPC loop runs.
          if (!this.socket) await new Promise<void>((resolve) => this.connectedWaiters.push(resolve));
          await this.rpc({ type: "get_state" });
        },
      },
      signal,
    );
    this.loadedFile = this.startFile;
    this.options.logger.info({ engine: "pi", pid: child.pid, startMs: Date.now() - started }, "pi started");
    return child;
  }

  private onExit(exit: ExitInfo): void {
    const error = new EngineProcessError("unavailable", describeExit("pi", exit), exit);
    for (const pending of [...this.pendingRpc.values(), ...this.pendingBridge.values()])
      pending.reject(error);
    this.pendingRpc.clear();
    this.pendingBridge.clear();
    this.loadedFile = undefined;
    if (!this.child?.stopping) this.options.logger.warn({ engine: "pi", ...exit }, "pi exited");
    this.sink?.exited(exit);
  }

  private fromPi(line: string): void {
    let event: PiEvent;
    try {
      event = JSON.parse(line) as PiEvent;
    } catch {
      this.options.logger.warn({ engine: "pi", bytes: line.length }, "pi wrote a line that is not JSON");
      return;
    }
    if (event.type === "response" && typeof event.id === "string" && this.pendingRpc.has(event.id)) {
      const pending = this.pendingRpc.get(event.id)!;
      this.pendingRpc.delete(event.id);
      if (event.success === true) pending.resolve(event.data);
      else
        pending.reject(
          new EngineProcessError("internal", `pi refused ${String(event.command)}: ${String(event.error)}`),
        );
      return;
    }
    if (event.type === "extension_ui_request") {
      // Only our flow decides (approvals are Core's): any dialog Pi opens is dismissed at once.
      if (["select", "confirm", "input", "editor"].includes(String(event.method))) {
        this.options.logger.warn({ engine: "pi", method: event.method }, "pi asked for a dialog; dismissed");
        this.child?.write(jsonLine({ type: "extension_ui_response", id: event.id, cancelled: true }));
      }
      return;
    }
    this.sink?.event(event);
  }

  private fromExtension(message: FromExtension): void {
    if (message.type === "execute") {
      this.sink?.execute(message);
      return;
    }
    if (message.type === "compaction") {
      const { type: _type, id, ...report } = message;
      this.sink?.compaction?.(report);
      this.socket?.write(jsonLine({ type: "compaction_seen", id } satisfies ToExtension));
      return;
    }
    const pending = this.pendingBridge.get(message.id);
    if (!pending) return;
    this.pendingBridge.delete(message.id);
    if (message.type === "done") pending.resolve(undefined);
    else pending.reject(new EngineProcessError("internal", `pi's extension failed: ${message.error}`));
  }
}
