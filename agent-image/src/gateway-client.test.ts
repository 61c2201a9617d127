import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { SessionView } from "@gatehouse/operator/agent-protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGatewayClient, GatewayError } from "./gateway-client.ts";

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
  model: { name: "scripted/answer" },
  limits: { maxTurns: 5, maxToolCalls: 5, holdPodForSeconds: 60 },
  tools: [],
  messages: [{ text: "hello" }],
  history: [],
};

/** A gateway answering GET /v1/session with `statuses` in turn (then 200); returns its URL and the hit count. */
async function gateway(statuses: Array<{ status: number; kind: string }>) {
  const hits = { count: 0 };
  server = createServer((_request, response) => {
    hits.count += 1;
    const next = statuses.shift();
    response.setHeader("content-type", "application/json");
    if (next) {
      response.statusCode = next.status;
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
});
