/**
 * Codex (the real `codex app-server` of `@openai/codex`, the binary the codex engine runs) as an MCP
 * client of the gateway's `/mcp`, for mcp.test.ts:
 *   - `startCodexMcpClient` writes a CODEX_HOME whose config.toml is the engine's (config-files.ts:
 *     the model provider, nothing of Codex's own enabled) plus `[mcp_servers.gatehouse]` — the URL and
 *     the pod token from an environment variable — and drives the app server over its JSON-RPC stdio,
 *     as a user interface would: threads, turns, interrupts, and every notification kept;
 *   - `recordMcpExchanges` is a relay in front of the gateway that keeps each MCP request as the
 *     gateway received it and its answer as the gateway sent it (SSE included), so the test sees the
 *     wire: initialize, tools/list, tools/call, progress, notifications/cancelled.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { API_KEY_ENV, writeCodexConfig } from "../../agent-image/src/engines/codex/config-files.ts";
import { codexBinary, codexEnvironment, codexVersion } from "../../agent-image/src/engines/codex/package.ts";

/** The server name in config.toml: Codex offers its tools to the model in namespace `mcp__gatehouse`. */
export const CODEX_MCP_SERVER = "gatehouse";
/** The environment variable Codex reads the bearer token from (`bearer_token_env_var`). */
const TOKEN_ENV = "GATEHOUSE_MCP_TOKEN";

/** One JSON-RPC message Codex sent us (a notification, or a request of the server). */
export interface CodexMessage {
  method: string;
  params: Record<string, unknown>;
}

export interface CodexMcpClient {
  version: string;
  /** Sends `method` and resolves with Codex's result (rejects on its error answer). */
  request(method: string, params: unknown): Promise<Record<string, unknown>>;
  /** The first notification from `since` (an index into `messages`) that `match` accepts. */
  next(match: (message: CodexMessage) => boolean, since?: number, timeoutMs?: number): Promise<CodexMessage>;
  /** Every notification and server request so far, in order. */
  messages: CodexMessage[];
  /** What Codex wrote on stderr (for failure messages). */
  stderr(): string;
  close(): Promise<void>;
}

/**
 * Starts `codex app-server` with the gateway's MCP endpoint at `mcpUrl` (bearer `token`) and the model
 * at `modelUrl`, and completes its `initialize` handshake. Codex's tool-approval prompt for the
 * server's tools is off (`default_tools_approval_mode = "approve"`): Gatehouse's policy decides.
 */
export async function startCodexMcpClient(options: {
  mcpUrl: string;
  token: string;
  modelUrl: string;
}): Promise<CodexMcpClient> {
  const home = mkdtempSync(path.join(tmpdir(), "gatehouse-codex-mcp-"));
  writeCodexConfig(
    home,
    { baseUrl: options.modelUrl, auth: { apiKey: "unused" }, timeoutMs: 10_000, maxRetries: 0 },
    { slugPrefix: "scripted", contextWindow: 128_000 },
  );
  appendFileSync(
    path.join(home, "config.toml"),
    [
      `[mcp_servers.${CODEX_MCP_SERVER}]`,
      `url = ${JSON.stringify(options.mcpUrl)}`,
      `bearer_token_env_var = ${JSON.stringify(TOKEN_ENV)}`,
      `default_tools_approval_mode = "approve"`,
      "",
    ].join("\n"),
  );
  const child: ChildProcessWithoutNullStreams = spawn(
    codexBinary(),
    ["app-server", "--strict-config", "--listen", "stdio://"],
    {
      cwd: home,
      env: { ...codexEnvironment(home), [API_KEY_ENV]: "unused", [TOKEN_ENV]: options.token },
    },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const messages: CodexMessage[] = [];
  const waiters = new Set<() => void>();
  const pending = new Map<number, { resolve(v: Record<string, unknown>): void; reject(e: Error): void }>();
  let nextId = 0;
  createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line) as {
      id?: number;
      method?: string;
      params?: Record<string, unknown>;
      result?: Record<string, unknown>;
      error?: { message: string };
    };
    if (message.method === undefined) {
      const answer = pending.get(message.id ?? -1);
      pending.delete(message.id ?? -1);
      if (message.error) answer?.reject(new Error(`codex: ${message.error.message}`));
      else answer?.resolve(message.result ?? {});
      return;
    }
    // A request of Codex's (an approval, an elicitation) is refused: nothing of it is expected here.
    if (message.id !== undefined)
      child.stdin.write(
        `${JSON.stringify({ id: message.id, error: { code: -32601, message: "not served" } })}\n`,
      );
    messages.push({ method: message.method, params: message.params ?? {} });
    for (const wake of waiters) wake();
  });
  const request = (method: string, params: unknown) => {
    nextId += 1;
    const id = nextId;
    const answer = new Promise<Record<string, unknown>>((resolve, reject) =>
      pending.set(id, { resolve, reject }),
    );
    child.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
    return answer;
  };
  const next = (match: (message: CodexMessage) => boolean, since = 0, timeoutMs = 60_000) =>
    new Promise<CodexMessage>((resolve, reject) => {
      const look = () => {
        const found = messages.slice(since).find(match);
        if (!found) return;
        waiters.delete(look);
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(look);
        const seen = messages.map((m) => m.method).join(", ");
        reject(
          new Error(
            `codex sent no awaited notification in ${timeoutMs} ms; seen: ${seen}; stderr: ${stderr}`,
          ),
        );
      }, timeoutMs);
      waiters.add(look);
      look();
    });
  await request("initialize", {
    clientInfo: { name: "gatehouse-e2e", version: "1" },
    capabilities: { experimentalApi: true },
  });
  child.stdin.write(`${JSON.stringify({ method: "initialized" })}\n`);
  return {
    version: codexVersion(),
    request,
    next,
    messages,
    stderr: () => stderr,
    async close() {
      child.stdin.end();
      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), 2000)),
      ]);
      if (!stopped) {
        child.kill("SIGKILL");
        await exited;
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** One HTTP exchange on `/mcp`: the request as sent and the answer as received so far. */
export interface McpExchange {
  httpMethod: string;
  /** The JSON-RPC body (a message or a batch), undefined for GET and DELETE. */
  body: unknown;
  status?: number;
  /** The answer's `Mcp-Session-Id` header, if any. */
  sessionId?: string;
  /** The answer's text: JSON, or SSE events as they came. */
  response: string;
  /** True once the answer's stream ended. */
  ended: boolean;
}

/** A relay to `target` (the gateway's /mcp URL) recording every exchange; `url` is where clients point. */
export async function recordMcpExchanges(
  target: string,
): Promise<{ url: string; exchanges: McpExchange[]; close(): Promise<void> }> {
  const exchanges: McpExchange[] = [];
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const raw = Buffer.concat(chunks);
      const exchange: McpExchange = {
        httpMethod: incoming.method ?? "",
        body: raw.length > 0 ? JSON.parse(raw.toString()) : undefined,
        response: "",
        ended: false,
      };
      exchanges.push(exchange);
      const headers = { ...incoming.headers, host: new URL(target).host };
      const upstream = httpRequest(target, { method: incoming.method, headers }, (answer) => {
        exchange.status = answer.statusCode;
        const sessionId = answer.headers["mcp-session-id"];
        if (typeof sessionId === "string") exchange.sessionId = sessionId;
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.on("data", (chunk: Buffer) => {
          exchange.response += chunk.toString();
          outgoing.write(chunk);
        });
        answer.on("end", () => {
          exchange.ended = true;
          outgoing.end();
        });
        answer.on("error", () => outgoing.destroy());
      });
      // The client closing its side (a cancelled stream) closes the gateway's side too.
      outgoing.on("close", () => {
        if (!exchange.ended) upstream.destroy();
      });
      upstream.on("error", () => outgoing.destroy());
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${new URL(target).pathname}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The JSON-RPC messages of an exchange's answer: its JSON body, or each SSE `data:` event. */
export function answerMessages(exchange: McpExchange): Array<Record<string, unknown>> {
  const text = exchange.response;
  if (!text.trim()) return [];
  if (text.trimStart().startsWith("{")) return [JSON.parse(text)];
  return text
    .split("\n")
    .filter((line) => line.startsWith("data:") && line.slice(5).trim())
    .map((line) => JSON.parse(line.slice(5)));
}

/** The JSON-RPC method (or `answer` for a response) of each message a request body carries. */
export function methodsOf(exchange: McpExchange): string[] {
  const body = exchange.body;
  const list = Array.isArray(body) ? body : body === undefined ? [] : [body];
  return list.map((m: { method?: string }) => m.method ?? "answer");
}
