import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { HistoryEntry, SessionView } from "@gatehouse/operator/agent-protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGatewayClient, GatewayError, retryAfterMsOf } from "./gateway-client.ts";

let dir: string;
let tokenFile: string;
let server: Server | undefined;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "gateway-client-"));
  tokenFile = path.join(dir, "token");
  await writeFile(tokenFile, "token-1\n");
});
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

const view: SessionView = {
  namespace: "plant-a",
  name: "s1",
  uid: "uid-1",
  subject: { user: "alice", groups: [] },
  instructions: "",
  model: { name: "scripted/answer", contextWindow: 128_000 },
  limits: { maxTurns: 5, maxToolCalls: 5, holdPodForSeconds: 60 },
  tools: [],
  messages: [{ text: "hello" }],
  history: [],
  historyComplete: true,
};

/**
 * A gateway answering GET /v1/session with `statuses` in turn (then 200, with `Retry-After` when one
 * names it); returns its URL, the hit count and when each request came.
 */
async function gateway(statuses: Array<{ status: number; kind: string; retryAfter?: string }>) {
  const hits = { count: 0, at: [] as number[] };
  server = createServer((_request, response) => {
    hits.count += 1;
    hits.at.push(Date.now());
    const next = statuses.shift();
    response.setHeader("content-type", "application/json");
    if (next) {
      response.statusCode = next.status;
      if (next.retryAfter !== undefined) response.setHeader("retry-after", next.retryAfter);
      response.end(JSON.stringify({ kind: next.kind, message: `${next.kind} for now` }));
    } else response.end(JSON.stringify(view));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, hits };
}

describe("the gateway client", () => {
  it("keeps retrying a 503 (a pod its session has not recorded yet) until the gateway answers", async () => {
    const { url, hits } = await gateway(
      Array.from({ length: 6 }, () => ({ status: 503, kind: "unavailable" })),
    );
    const client = createGatewayClient({ baseUrl: url, tokenFile, backoffMs: 5 });
    const session = await client.getSession();
    expect(session.name).toBe("s1");
    expect(hits.count).toBe(7);
  });

  it("gives up on a 503 once its retry budget is spent", async () => {
    const { url } = await gateway(Array.from({ length: 1000 }, () => ({ status: 503, kind: "unavailable" })));
    const client = createGatewayClient({ baseUrl: url, tokenFile, backoffMs: 5, retryForMs: 200 });
    await expect(client.getSession()).rejects.toMatchObject({ kind: "unavailable", status: 503 });
  });

  it("does not retry a 403", async () => {
    const { url, hits } = await gateway([{ status: 403, kind: "forbidden" }]);
    const client = createGatewayClient({ baseUrl: url, tokenFile, backoffMs: 5 });
    const error = await client.getSession().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ kind: "forbidden", status: 403 });
    expect(hits.count).toBe(1);
  });

  it("waits out a 429's Retry-After before asking again, however short its own backoff", async () => {
    const { url, hits } = await gateway([{ status: 429, kind: "unavailable", retryAfter: "1" }]);
    const client = createGatewayClient({ baseUrl: url, tokenFile, backoffMs: 5 });
    const session = await client.getSession();
    expect(session.name).toBe("s1");
    expect(hits.count).toBe(2);
    expect(hits.at[1]! - hits.at[0]!).toBeGreaterThanOrEqual(990);
  });

  it("reads Retry-After as seconds or as an HTTP date, and ignores what it cannot read", () => {
    const now = Date.parse("2026-12-06T10:00:00Z");
    expect(retryAfterMsOf("3", now)).toBe(3000);
    expect(retryAfterMsOf("Sun, 06 Dec 2026 10:00:05 GMT", now)).toBe(5000);
    expect(retryAfterMsOf("soon", now)).toBeUndefined();
    expect(retryAfterMsOf(null, now)).toBeUndefined();
  });

  it("reads the whole history page by page when the view holds only its first page", async () => {
    const entries: HistoryEntry[] = Array.from({ length: 7 }, (_, i) => ({
      seq: i + 1,
      source: "agent",
      kind: "assistant_text",
      payload: { turn: 0, text: `line ${i + 1}` },
    }));
    const asked: string[] = [];
    server = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://gateway");
      asked.push(`${url.pathname}${url.search}`);
      response.setHeader("content-type", "application/json");
      if (url.pathname === "/v1/session") {
        response.end(JSON.stringify({ ...view, history: entries.slice(0, 3), historyComplete: false }));
        return;
      }
      const after = Number(url.searchParams.get("afterSeq"));
      const page = entries.filter((e) => e.seq > after).slice(0, 2);
      response.end(JSON.stringify({ history: page, complete: page.at(-1)?.seq === entries.length }));
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const client = createGatewayClient({
      baseUrl: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`,
      tokenFile,
    });
    const session = await client.getSession();
    expect(session.history.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(session.historyComplete).toBe(true);
    expect(asked).toEqual([
      "/v1/session",
      "/v1/session/history?afterSeq=3",
      "/v1/session/history?afterSeq=5",
    ]);
  });
});
