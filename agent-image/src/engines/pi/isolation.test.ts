import { existsSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPiRuntime } from "./engine.ts";
import { PiHost } from "./host.ts";
import { collect, memoryExecutor, piWorld, SYSTEM, tools } from "./test-support.ts";

/**
 * Pi's own tools (read, bash, edit, …) must neither be offered to the model nor run. The scripted
 * model only plays calls of tools the request offers, so a proxy between Pi and it records what Pi
 * sent and then offers `read` and `bash` too: the model asks for them, as a model talked into it would.
 */
const world = piWorld({ beforeAll, afterAll });
const sent: { tools: string[]; messages: { role: string; content: unknown }[] }[] = [];
let proxy: Server;
let proxyUrl = "";

beforeAll(async () => {
  const upstream = new URL(world.model().url);
  proxy = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      sent.push({
        tools: (body.tools ?? []).map((t: { function: { name: string } }) => t.function.name),
        messages: body.messages,
      });
      for (const name of ["read", "bash"])
        body.tools.push({
          type: "function",
          function: { name, description: name, parameters: { type: "object" } },
        });
      const payload = JSON.stringify(body);
      const forwarded = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: incoming.url,
          method: "POST",
          headers: { ...incoming.headers, "content-length": Buffer.byteLength(payload) },
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.end(payload);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${upstream.pathname}`;
});
afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
});

describe("the pi engine's tools", { timeout: 30_000 }, () => {
  it("are the capability tools only: a model asking to read a file and run a shell command gets neither run", async () => {
    const secret = path.join(world.dir(), "secret.txt");
    writeFileSync(secret, "the-secret-content");
    const marker = path.join(world.dir(), "ran");
    const model = world.script([
      {
        call: [
          { tool: "read", arguments: { path: secret }, id: "read_1" },
          { tool: "bash", arguments: { command: `touch ${marker}` }, id: "bash_1" },
        ],
      },
      { wait: "previous", say: "I could do neither." },
    ]);
    const { executor, invoked } = memoryExecutor({
      decide: (call) => ({ status: "not_found", content: `No capability ${call.name}.` }),
    });
    // A host of its own: this one's model endpoint is the proxy.
    const host = new PiHost({
      dir: path.join(world.dir(), "pi-proxied"),
      model: {
        baseUrl: proxyUrl,
        auth: { apiKey: "k" },
        timeoutMs: 10_000,
        maxRetries: 0,
        maxRetryDelayMs: 1000,
      },
      logger: pino({ level: "silent" }),
    });
    try {
      const runtime = createPiRuntime({
        host,
        model,
        tools: executor,
        maxTurns: 5,
        maxToolCalls: 5,
        logger: pino({ level: "silent" }),
      });
      const events = await collect(
        runtime
          .createSession({ subject: { user: "alice", groups: [] }, system: SYSTEM, tools, history: [] })
          .send("Read it and run it."),
      );
      expect(events.at(-1)).toMatchObject({ type: "turn_end", text: "I could do neither.", final: true });
    } finally {
      await host.close();
    }
    expect(sent).toHaveLength(2);
    for (const request of sent) expect(request.tools).toEqual(tools.map((tool) => tool.name));
    expect(existsSync(marker)).toBe(false);
    expect(JSON.stringify(sent[1]!.messages)).not.toContain("the-secret-content");
    // Core is asked (and refuses): every call the model makes is proposed and audited, whatever its name.
    expect(invoked.map((call) => [call.name, call.arguments])).toEqual([
      ["read", JSON.stringify({ path: secret })],
      ["bash", JSON.stringify({ command: `touch ${marker}` })],
    ]);
    const results = sent[1]!.messages.filter((message) => message.role === "tool");
    // What the model reads is Pi's own refusal (Pi has no such tool); the transcript keeps Core's.
    expect(results.map((message) => message.content)).toEqual([
      expect.stringMatching(/read.*not found/i),
      expect.stringMatching(/bash.*not found/i),
    ]);
  });
});
