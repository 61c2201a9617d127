/**
 * One `codex app-server` process, shared by the runs of the pod (or of the conformance suite): the
 * JSON-RPC client over its stdio, the `initialize` handshake, and the routing of what Codex sends to
 * the thread it concerns. Threads are independent, so runs need not take turns. A Codex that crashed
 * is started again on the next run, after the restart backoff. Process handling is the shared
 * subprocess code; the configuration is written into CODEX_HOME before each start.
 */
import { mkdirSync } from "node:fs";
import type { Logger } from "pino";
import type { z } from "zod";
import {
  type Child,
  describeExit,
  EngineProcessError,
  type ExitInfo,
  startChild,
} from "../subprocess/child.ts";
import { jsonLine } from "../subprocess/jsonl.ts";
import { defaultRestartPolicy, Restarting, type RestartPolicy } from "../subprocess/restart.ts";
import { API_KEY_ENV, type CodexModelSettings, writeCodexConfig } from "./config-files.ts";
import { codexBinary, codexEnvironment, codexVersion } from "./package.ts";
import {
  type ClientMethod,
  DECLINED_REQUESTS,
  DynamicToolCall,
  Incoming,
  Notifications,
  ThreadScoped,
} from "./protocol.ts";
import { StatusRelay } from "./status-relay.ts";

type NotificationMethod = keyof typeof Notifications;
/** A notification the engine follows, typed by its method. */
export type CodexNotification = {
  [M in NotificationMethod]: { method: M; params: z.infer<(typeof Notifications)[M]> };
}[NotificationMethod];

/** What the run owning a thread receives. */
export interface ThreadSink {
  notification(notification: CodexNotification): void;
  /** A call of a capability tool: `answer` sends Codex the result. */
  toolCall(call: { callId: string; tool: string }, answer: (result: unknown) => void): void;
  /** Codex asked for a decision or input (`method`); it was declined already. */
  declined(method: string, params: unknown): void;
  exited(exit: ExitInfo): void;
}

export interface CodexHostOptions {
  /** Writable directory (an emptyDir in the pod): CODEX_HOME. */
  dir: string;
  model: CodexModelSettings;
  logger: Logger;
  /** Default 30 s. */
  startTimeoutMs?: number;
  /** Default 2 s. */
  stopGraceMs?: number;
  restart?: RestartPolicy;
}

type Pending = { resolve(value: unknown): void; reject(error: Error): void };

/** A JSON-RPC error answer of Codex to one of our requests. */
export class CodexRequestError extends Error {
  readonly kind = "internal";
  constructor(method: string, message: string) {
    super(`codex refused ${method}: ${message}`);
    this.name = "CodexRequestError";
  }
}

export class CodexHost {
  private readonly restarting: Restarting;
  private readonly options: CodexHostOptions;
  private readonly pending = new Map<number, Pending & { method: string }>();
  private readonly threads = new Map<string, ThreadSink>();
  private nextId = 0;
  private child: Child | undefined;
  /**
   * The catalog entry Codex starts with: a slug prefixing the sessions' model names and the
   * endpoint's context window (a pod serves one session: set from it before the first run).
   */
  catalog = { slugPrefix: "", contextWindow: 128_000 };
  /** Codex's model requests pass here, so a refusal's HTTP status is known (Codex reports none). */
  readonly relay: StatusRelay;

  constructor(options: CodexHostOptions) {
    this.options = options;
    this.relay = new StatusRelay(options.model.baseUrl);
    this.restarting = new Restarting(
      (signal) => this.launch(signal),
      options.restart ?? defaultRestartPolicy,
    );
  }

  /** The running Codex's process id, if one runs (for logs and tests). */
  get pid(): number | undefined {
    return this.child?.running ? this.child.pid : undefined;
  }

  /** Starts Codex now (the suite does, so the first case does not wait for it). */
  async warm(): Promise<void> {
    await this.restarting.get();
  }

  /** Sends `method` and resolves with Codex's result; rejects on its error answer or its exit. */
  async request(method: ClientMethod, params: unknown, signal?: AbortSignal): Promise<unknown> {
    const child = await this.restarting.get(signal);
    return this.send(child, method, params);
  }

  /** Routes `threadId`'s notifications and requests to `sink` until the returned function is called. */
  attach(threadId: string, sink: ThreadSink): () => void {
    this.threads.set(threadId, sink);
    return () => {
      if (this.threads.get(threadId) === sink) this.threads.delete(threadId);
    };
  }

  async close(): Promise<void> {
    await this.restarting.stop();
    await this.relay.close();
  }

  private send(child: Child, method: ClientMethod, params: unknown): Promise<unknown> {
    this.nextId += 1;
    const id = this.nextId;
    const answer = new Promise<unknown>((resolve, reject) =>
      this.pending.set(id, { resolve, reject, method }),
    );
    child.write(jsonLine({ id, method, params }));
    return answer;
  }

  private async launch(signal: AbortSignal | undefined): Promise<Child> {
    const { dir, model, logger } = this.options;
    mkdirSync(dir, { recursive: true });
    writeCodexConfig(dir, { ...model, baseUrl: await this.relay.start() }, this.catalog);
    const env = codexEnvironment(dir);
    if ("apiKey" in model.auth) env[API_KEY_ENV] = model.auth.apiKey;
    const child = await startChild(
      {
        name: "codex",
        command: codexBinary(),
        // A key this version does not know is an error, not a default silently kept.
        args: ["app-server", "--strict-config", "--listen", "stdio://"],
        env,
        cwd: dir,
        startTimeoutMs: this.options.startTimeoutMs ?? 30_000,
        stopGraceMs: this.options.stopGraceMs ?? 2000,
        onLine: (line) => this.receive(line),
        ready: async (started) => {
          this.child = started;
          await this.send(started, "initialize", {
            clientInfo: { name: "gatehouse", title: "Gatehouse", version: codexVersion() },
            // dynamicTools, raw response items and thread/inject_items are experimental API.
            capabilities: { experimentalApi: true, requestAttestation: false },
          });
          started.write(jsonLine({ method: "initialized" }));
        },
      },
      signal,
    );
    this.child = child;
    logger.info({ engine: "codex", pid: child.pid, version: codexVersion() }, "codex started");
    void child.exited.then((exit) => this.onExit(child, exit));
    return child;
  }

  private onExit(child: Child, exit: ExitInfo): void {
    if (this.child !== child) return;
    this.child = undefined;
    const error = new EngineProcessError("unavailable", describeExit("codex", exit), exit);
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      pending.reject(error);
    }
    for (const sink of this.threads.values()) sink.exited(exit);
    this.threads.clear();
    if (!child.stopping) this.options.logger.warn({ code: exit.code, signal: exit.signal }, "codex exited");
  }

  private receive(line: string): void {
    let message: Incoming;
    try {
      message = Incoming.parse(JSON.parse(line));
    } catch {
      // Codex writes only JSON-RPC on stdout; anything else is logged by size, never by content.
      this.options.logger.warn({ bytes: line.length }, "codex wrote a line that is not JSON-RPC");
      return;
    }
    if ("method" in message && "id" in message)
      this.serverRequest(message.id, message.method, message.params);
    else if ("method" in message) this.notification(message.method, message.params);
    else this.response(message.id, message.result, message.error);
  }

  private response(id: string | number, result: unknown, error: { message: string } | undefined): void {
    const pending = this.pending.get(Number(id));
    if (!pending) return;
    this.pending.delete(Number(id));
    if (error) pending.reject(new CodexRequestError(pending.method, error.message));
    else pending.resolve(result);
  }

  private notification(method: string, params: unknown): void {
    if (!(method in Notifications)) return;
    const schema = Notifications[method as NotificationMethod];
    const parsed = schema.safeParse(params);
    if (!parsed.success) {
      this.options.logger.warn({ method }, "codex sent a notification of an unexpected shape");
      return;
    }
    const sink = this.threads.get(parsed.data.threadId);
    sink?.notification({ method, params: parsed.data } as CodexNotification);
  }

  private serverRequest(id: string | number, method: string, params: unknown): void {
    const answer = (result: unknown) => this.child?.write(jsonLine({ id, result }));
    const thread = ThreadScoped.safeParse(params);
    const sink = thread.success ? this.threads.get(thread.data.threadId) : undefined;
    if (method in DECLINED_REQUESTS) {
      answer(DECLINED_REQUESTS[method as keyof typeof DECLINED_REQUESTS]);
      sink?.declined(method, params);
      if (!sink) this.options.logger.warn({ method }, "codex asked for a decision outside a run: declined");
      return;
    }
    const call = method === "item/tool/call" ? DynamicToolCall.safeParse(params) : undefined;
    if (call?.success && sink) {
      sink.toolCall(call.data, answer);
      return;
    }
    // Anything else (account, attestation, a tool call of no run): refused, Codex goes on without it.
    this.child?.write(
      jsonLine({ id, error: { code: -32601, message: `gatehouse does not serve ${method}` } }),
    );
    this.options.logger.warn({ method }, "codex request refused");
  }
}
