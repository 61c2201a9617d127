/**
 * A request the endpoint refuses as too long, through the real Pi binary: an endpoint whose real
 * window (3,000 tokens, by the scripted model's 4 characters a token) is far below the configured one
 * (16,000) refuses in OpenAI's words, naming its limit; the engine compacts for that window and asks
 * once more, as the builtin engine does, and the session completes with each later request fitting.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeEvent, ToolExecutor } from "../../runtime.ts";
import { createPiRuntime } from "./engine.ts";
import { PiHost } from "./host.ts";
import { collect } from "./test-support.ts";

const LIMIT = 3_000;
const TURNS = 14;

let dir = "";
let model: ScriptedModel;
let proxy: Server;
let host: PiHost;
const statuses: number[] = [];

/** In front of the scripted model: refuses a request above LIMIT tokens as OpenAI does, else passes it on. */
function startProxy(target: string): Promise<string> {
  proxy = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const tokens = Math.ceil(body.length / 4);
    if (request.url?.endsWith("/chat/completions") && tokens > LIMIT) {
      statuses.push(400);
      response.writeHead(400, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          error: {
            message: `This model's maximum context length is ${LIMIT} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
            type: "invalid_request_error",
            param: "messages",
            code: "context_length_exceeded",
          },
        }),
      );
      return;
    }
    const upstream = await fetch(`${target}${request.url?.replace(/^\/v1/, "")}`, {
      method: request.method,
      headers: { "content-type": "application/json", authorization: request.headers.authorization ?? "" },
      body: request.method === "POST" ? body : undefined,
    });
    statuses.push(upstream.status);
    response.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "" });
    for await (const chunk of upstream.body ?? []) response.write(chunk);
    response.end();
  });
  return new Promise((resolve) =>
    proxy.listen(0, "127.0.0.1", () => {
      const address = proxy.address() as { port: number };
      resolve(`http://127.0.0.1:${address.port}/v1`);
    }),
  );
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "gatehouse-pi-refusal-"));
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: dir });
  const step = {
    choose: [
      { when: { lastToolContains: "EVERY WEEK READ" }, say: "Every week is read." },
      { say: "Reading on.", call: [{ tool: "plan_read", arguments: { week: 1 } }] },
    ],
  };
  writeFileSync(path.join(dir, "refusal.yaml"), JSON.stringify({ steps: Array(40).fill(step) }));
  host = new PiHost({
    dir: path.join(dir, "pi"),
    model: {
      baseUrl: await startProxy(model.url),
      auth: { apiKey: "test-key" },
      timeoutMs: 10_000,
      maxRetries: 0,
      maxRetryDelayMs: 1000,
    },
    logger: pino({ level: "silent" }),
    contextWindow: 16_000,
  });
});
afterAll(async () => {
  await host?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a request refused as too long", () => {
  it("is compacted for the window the refusal names and asked once more; the session completes", async () => {
    const executor: ToolExecutor = {
      async invoke(call) {
        const rows = `week ${call.turn}: ${"order;".repeat(300)}`;
        const content = JSON.stringify({ result: call.turn >= TURNS - 2 ? `${rows} EVERY WEEK READ` : rows });
        return { kind: "done", status: "succeeded", content };
      },
    };
    const runtime = createPiRuntime({
      host,
      model: "scripted/refusal",
      tools: executor,
      maxTurns: 40,
      maxToolCalls: 40,
      logger: pino({ level: "silent" }),
    });
    const session = runtime.createSession({
      subject: { user: "alice", groups: [] },
      system: "You check production plans.",
      tools: [{ name: "plan_read", description: "one week of the plan", parameters: { type: "object" } }],
      history: [],
    });
    const seen: RuntimeEvent[] = await collect(session.send("Read every week of the plan."));

    expect(seen.filter((event) => event.type === "error")).toEqual([]);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", turn: TURNS - 1, final: true });
    expect(statuses.filter((status) => status === 400)).toHaveLength(1);
    const refused = seen.filter((event) => event.type === "compaction" && event.reason === "refused");
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ window: LIMIT });
    // The refused turn is asked again: turns stay consecutive, no turn lost or doubled.
    const ends = seen.flatMap((event) => (event.type === "turn_end" ? [event.turn] : []));
    expect(ends).toEqual(Array.from({ length: TURNS }, (_, turn) => turn));
  }, 30_000);
});
