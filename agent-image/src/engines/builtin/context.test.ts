/**
 * The engine's conversation keeper: re-seeding from the transcript when a result lost its call,
 * scaling the estimate by the endpoint's count, refusing a window too small; and the engine against an
 * endpoint that refuses a request as too long — compacted and asked once more, never a third time.
 */
import { completionChunks } from "@gatehouse/fakes/model";
import Fastify from "fastify";
import OpenAI from "openai";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { RuntimeEvent, TranscriptItem } from "../../runtime.ts";
import { pairingProblems, SUMMARY_HEADER } from "./compaction.ts";
import { ContextError, isContextOverflow, ModelContext, overflowCounts } from "./context.ts";
import { createBuiltinRuntime } from "./engine.ts";

/** `count` answered turns of one read each, results of `size` characters. */
function history(count: number, size = 300): TranscriptItem[] {
  const items: TranscriptItem[] = [{ role: "user", text: "Read every week of the plan." }];
  for (let turn = 0; turn < count; turn += 1) {
    const call = {
      position: 0,
      callId: `c${turn}`,
      name: "aps_schedule_read",
      arguments: `{"week":${turn}}`,
    };
    items.push({ role: "assistant", turn, text: "", calls: [call] });
    items.push({
      role: "tool",
      turn,
      position: 0,
      callId: call.callId,
      name: call.name,
      content: "w".repeat(size),
    });
  }
  return items;
}

const overflow = (status: number, error: Record<string, unknown>) =>
  OpenAI.APIError.generate(status, { error }, undefined, new Headers());

describe("isContextOverflow", () => {
  it.each([
    ["OpenAI's code", overflow(400, { message: "too long", code: "context_length_exceeded" }), true],
    [
      "vLLM's message",
      overflow(400, {
        message: "This model's maximum context length is 8192 tokens. However, you requested 9000",
      }),
      true,
    ],
    ["HTTP 413", overflow(413, { message: "payload too large" }), true],
    ["another 400", overflow(400, { message: "tool_call_ids did not have response messages" }), false],
    ["the token budget", overflow(400, { message: "context length", type: "budget_exceeded" }), false],
    ["a 500", overflow(500, { message: "maximum context length" }), false],
  ])("%s", (_name, error, expected) => {
    expect(isContextOverflow(error)).toBe(expected);
  });
});

describe("overflowCounts", () => {
  it.each([
    [
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.",
      { limit: 128000, used: 130532 },
    ],
    [
      "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion).",
      { limit: 8192, used: 8000 },
    ],
    ["Input tokens exceed the configured limit of 272000 tokens.", { limit: 272000 }],
    ["prompt is too long", {}],
  ])("%s", (message, counts) => {
    expect(overflowCounts(message)).toEqual(counts);
  });
});

describe("ModelContext", () => {
  it("re-seeds from the transcript when a result lost its call", () => {
    const context = new ModelContext({ system: "sys", history: history(3), tools: [], window: 100_000 });
    // A bug's work: a result for a call no assistant message made.
    context.addResults(
      7,
      [{ position: 0, callId: "ghost", name: "aps_schedule_read", arguments: "{}" }],
      () => "?",
    );
    const view = context.next();
    expect(view.compaction).toMatchObject({ reason: "pairing" });
    expect(pairingProblems(view.messages)).toEqual([]);
    expect(view.messages.some((m) => m.role === "tool" && m.tool_call_id === "ghost")).toBe(false);
  });

  it("compacts sooner once the endpoint counts more tokens than estimated", () => {
    const context = new ModelContext({ system: "sys", history: history(20), tools: [], window: 8_000 });
    expect(context.next().compaction).toBeUndefined();
    context.observeUsage(20_000);
    const view = context.next();
    expect(view.compaction).toMatchObject({ reason: "window" });
    expect(String(view.messages[1]?.content)).toContain(SUMMARY_HEADER);
  });

  it("refuses a window that cannot hold the latest turn", () => {
    const items = history(1);
    items.push({ role: "assistant", turn: 1, text: "x".repeat(20_000), calls: [] });
    const context = new ModelContext({ system: "sys", history: items, tools: [], window: 2_000 });
    expect(() => context.next()).toThrow(ContextError);
  });
});

/** An endpoint that refuses bodies above `maxBytes` as too long (all when undefined) and answers others. */
async function endpoint(maxBytes: number | undefined) {
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
  const sizes: number[] = [];
  app.post("/v1/chat/completions", async (request, reply) => {
    const size = Buffer.byteLength(JSON.stringify(request.body));
    sizes.push(size);
    if (maxBytes === undefined || size > maxBytes) {
      const message = `This model's maximum context length is 1000 tokens; the request has ${size} bytes.`;
      return reply
        .code(400)
        .send({ error: { message, type: "invalid_request_error", code: null, param: null } });
    }
    const meta = { id: "chatcmpl-1", model: "m", created: 0 };
    const answer = {
      step: 0,
      text: "Done.",
      calls: [],
      finishReason: "stop" as const,
      layout: "sequential" as const,
    };
    const chunks = completionChunks(meta, { ...answer, transportFaults: [], usage: undefined }, undefined);
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": "text/event-stream" });
    for (const chunk of chunks) reply.raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
    reply.raw.end("data: [DONE]\n\n");
    return reply;
  });
  const origin = await app.listen({ host: "127.0.0.1", port: 0 });
  return { origin, sizes, close: () => app.close() };
}

async function run(origin: string): Promise<RuntimeEvent[]> {
  const runtime = createBuiltinRuntime({
    client: new OpenAI({ baseURL: `${origin}/v1`, apiKey: "unused", maxRetries: 0 }),
    model: "m",
    tools: { invoke: async () => ({ kind: "done", status: "succeeded", content: "{}" }) },
    maxTurns: 100,
    maxToolCalls: 100,
    logger: pino({ level: "silent" }),
  });
  const session = runtime.createSession({
    subject: { user: "alice", groups: [] },
    system: "sys",
    tools: [],
    history: [
      ...history(60),
      { role: "assistant", turn: 60, text: "Read.", calls: [] },
      { role: "user", text: "Go on." },
    ],
  });
  const seen: RuntimeEvent[] = [];
  for await (const event of session.send(undefined)) seen.push(event);
  return seen;
}

describe("the engine at a refusal as too long", () => {
  it("compacts from the transcript and asks once more", async () => {
    const server = await endpoint(12_000);
    try {
      const seen = await run(server.origin);
      expect(server.sizes).toHaveLength(2);
      expect(server.sizes[0]).toBeGreaterThan(12_000);
      expect(seen.find((event) => event.type === "compaction")).toMatchObject({ reason: "refused" });
      expect(seen.at(-1)).toMatchObject({ type: "turn_end", final: true });
    } finally {
      await server.close();
    }
  });

  it("ends the run with a final error when the compacted request is refused too", async () => {
    const server = await endpoint(undefined);
    try {
      const seen = await run(server.origin);
      expect(server.sizes).toHaveLength(2);
      expect(seen.at(-1)).toMatchObject({
        type: "error",
        kind: "invalid_arguments",
        message: expect.stringContaining("too long again after compacting"),
        final: true,
      });
    } finally {
      await server.close();
    }
  });
});
