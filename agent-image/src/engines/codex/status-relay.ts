/**
 * A loopback relay between Codex and the model endpoint that notes each response's HTTP status.
 * Codex reports a request the endpoint refused (a 4xx but 429) with the response body alone; the
 * relay lets the adapter name the status as the builtin engine does. Bodies stream through untouched
 * (no buffering of the SSE answer). It listens on 127.0.0.1 only, serves loopback peers only, and
 * forwards only to paths under the configured base URL: it is no proxy to anywhere else.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream";

/** Headers of one hop only (RFC 9110 §7.6.1), never forwarded. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);

/** A refused model request: its status, and the Codex thread that sent it when Codex named one. */
export interface Refusal {
  status: number;
  thread: string | undefined;
  sequence: number;
}

export class StatusRelay {
  private readonly target: URL;
  private readonly basePath: string;
  private readonly server: http.Server;
  private readonly agent: http.Agent;
  private sequence = 0;
  private readonly refusals: Refusal[] = [];
  private url: string | undefined;

  constructor(baseUrl: string) {
    this.target = new URL(baseUrl);
    // Codex appends the endpoint's path ("/responses") to its base URL.
    this.basePath = this.target.pathname.replace(/\/+$/, "");
    this.agent = new (this.target.protocol === "https:" ? https : http).Agent({ keepAlive: true });
    this.server = http.createServer((request, response) => this.relay(request, response));
  }

  /** Listens on an ephemeral loopback port; resolves with the base URL Codex is to use. */
  async start(): Promise<string> {
    if (this.url) return this.url;
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}${this.basePath}`;
    return this.url;
  }

  /** A counter that later refusals exceed: read it before a turn starts. */
  get mark(): number {
    return this.sequence;
  }

  /** The latest refusal after `mark`, of `thread` when Codex named the thread in its request. */
  refusedSince(mark: number, thread: string): Refusal | undefined {
    for (let i = this.refusals.length - 1; i >= 0; i--) {
      const refusal = this.refusals[i];
      if (!refusal || refusal.sequence <= mark) break;
      if (refusal.thread === undefined || refusal.thread === thread) return refusal;
    }
    return undefined;
  }

  async close(): Promise<void> {
    this.agent.destroy();
    if (!this.server.listening) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The upstream URL of a request's target, or undefined when it leaves the base path. */
  private upstream(requestTarget: string | undefined): URL | undefined {
    // Origin-form only: an absolute-form target ("http://other/…") asks for another host.
    if (!requestTarget?.startsWith("/") || requestTarget.startsWith("//")) return undefined;
    // Dot segments, raw or percent-encoded, could climb out of the base path once resolved.
    const rawPath = requestTarget.split("?")[0] ?? "";
    if (/(^|\/)(\.|%2e){1,2}(\/|$)/i.test(rawPath) || /%2f|%5c|\\/i.test(rawPath)) return undefined;
    if (rawPath !== this.basePath && !rawPath.startsWith(`${this.basePath}/`)) return undefined;
    const url = new URL(requestTarget, this.target.origin);
    return url.origin === this.target.origin ? url : undefined;
  }

  private relay(request: IncomingMessage, response: ServerResponse): void {
    const peer = request.socket.remoteAddress;
    const url = this.upstream(request.url);
    if (!(peer === "127.0.0.1" || peer === "::ffff:127.0.0.1") || !url) {
      request.resume();
      response.writeHead(403, { "content-type": "text/plain" }).end("not a model request\n");
      return;
    }
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(request.headers))
      if (!HOP_BY_HOP.has(name) && value !== undefined) headers[name] = value;
    // Codex names the thread a request is for.
    const thread = request.headers["thread-id"];
    const upstream = (url.protocol === "https:" ? https : http).request(url, {
      method: request.method,
      headers,
      agent: this.agent,
    });
    upstream.on("response", (answer) => {
      const status = answer.statusCode ?? 502;
      if (status >= 400) {
        this.sequence += 1;
        this.refusals.push({
          status,
          thread: typeof thread === "string" ? thread : undefined,
          sequence: this.sequence,
        });
        // Only the latest few matter: a turn reads those after its own start.
        if (this.refusals.length > 64) this.refusals.shift();
      }
      const forwarded: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers))
        if (!HOP_BY_HOP.has(name) && value !== undefined) forwarded[name] = value;
      response.writeHead(status, answer.statusMessage, forwarded);
      response.flushHeaders();
      pipeline(answer, response, () => {});
    });
    upstream.on("error", (error) => {
      // The endpoint could not be reached: a gateway error Codex retries, noted as no refusal of the
      // endpoint's; a stream cut midway is cut for Codex too.
      if (response.headersSent) response.destroy();
      else
        response
          .writeHead(502, { "content-type": "text/plain" })
          .end(`model endpoint unreachable: ${(error as NodeJS.ErrnoException).code ?? error.message}\n`);
    });
    pipeline(request, upstream, () => {});
  }
}
