import OpenAI from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defaultScriptsDir } from "./index.ts";
import { type RecordedRequest, type ScriptedModel, startScriptedModel } from "./server.ts";

let model: ScriptedModel;
let client: OpenAI;

/** A request with everything a runtime may send: tool messages, content parts, sampling fields. */
const sent: ChatCompletionCreateParamsNonStreaming = {
  model: "scripted/reference-story",
  messages: [
    { role: "system", content: "You schedule production." },
    { role: "user", content: [{ type: "text", text: "Push next week's plan back by one day." }] },
    {
      role: "assistant",
      content: "I will read the current plan first.",
      tool_calls: [
        { id: "c0", type: "function", function: { name: "aps_schedule_read", arguments: '{"planId":"p"}' } },
      ],
    },
    { role: "tool", tool_call_id: "c0", content: '{"id":"plan-2026-w49","version":7}' },
  ],
  tools: [
    {
      type: "function",
      function: {
        name: "aps_schedule_draft",
        description: "Draft a shifted plan.",
        parameters: { type: "object", properties: { planId: { type: "string" } } },
      },
    },
  ],
  temperature: 0,
  parallel_tool_calls: true,
  metadata: { session: "s-1" },
  user: "alice",
};

async function fetchRecorded(query = ""): Promise<RecordedRequest[]> {
  const response = await fetch(`${model.origin}/_recorded${query}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { requests: RecordedRequest[] }).requests;
}

beforeAll(async () => {
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: defaultScriptsDir });
  client = new OpenAI({ baseURL: model.url, apiKey: "key-1", maxRetries: 0 });
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => {
  model.clearRequests();
});

describe("recorded requests", () => {
  it("keeps the body exactly as the SDK sent it", async () => {
    await client.chat.completions.create(sent);
    const [recorded] = model.requests();
    expect(recorded!.body).toEqual(sent);
    expect(recorded!.chat?.messages).toEqual(sent.messages);
  });

  it("keeps method, path, headers of the request, arrival time and the status answered", async () => {
    const before = Date.now();
    await client.chat.completions.create(sent);
    const [recorded] = model.requests();
    expect(recorded).toMatchObject({
      seq: expect.any(Number),
      method: "POST",
      path: "/v1/chat/completions",
      authorization: "Bearer key-1",
      model: "scripted/reference-story",
      step: 1,
      stream: false,
      status: 200,
    });
    expect(recorded!.headers).toMatchObject({
      authorization: "Bearer key-1",
      "content-type": "application/json",
      "user-agent": expect.stringMatching(/^OpenAI\/JS /),
      "x-stainless-retry-count": "0",
    });
    expect(recorded!.headers.host).toBeUndefined();
    expect(Date.parse(recorded!.time)).toBeGreaterThanOrEqual(before - 1);
  });

  it("lets a test count the tool messages per call id a runtime sent", async () => {
    await client.chat.completions.create(sent);
    const toolMessages = model.requests()[0]!.chat!.messages.filter((message) => message.role === "tool");
    expect(toolMessages.map((message) => message.tool_call_id)).toEqual(["c0"]);
  });

  it("records streamed requests with the streaming answer's status and headers", async () => {
    const stream = await client.chat.completions.create({ ...sent, stream: true });
    for await (const _ of stream);
    expect(model.requests()).toMatchObject([
      { stream: true, status: 200, responseHeaders: { "content-type": "text/event-stream" } },
    ]);
  });

  it("records refused requests too: an unknown model with 404, a list of models", async () => {
    await expect(client.chat.completions.create({ ...sent, model: "scripted/nothing" })).rejects.toThrow(
      OpenAI.NotFoundError,
    );
    for await (const _ of client.models.list());
    expect(model.requests().map((request) => [request.method, request.path, request.status])).toEqual([
      ["POST", "/v1/chat/completions", 404],
      ["GET", "/v1/models", 200],
    ]);
  });

  it("serves the same records over GET /_recorded, without recording that call", async () => {
    await client.chat.completions.create(sent);
    const overHttp = await fetchRecorded();
    expect(overHttp).toEqual(model.requests());
    expect(overHttp[0]!.body).toEqual(sent);
    expect(await fetchRecorded()).toHaveLength(1);
  });

  it("returns only the requests after ?since=<seq>", async () => {
    await client.chat.completions.create(sent);
    const first = model.requests()[0]!.seq;
    await client.chat.completions.create({ ...sent, user: "bob" });
    const after = await fetchRecorded(`?since=${first}`);
    expect(after.map((request) => (request.body as { user: string }).user)).toEqual(["bob"]);
    expect(model.requests(first)).toEqual(after);
  });

  it("forgets the records on DELETE /_recorded", async () => {
    await client.chat.completions.create(sent);
    const response = await fetch(`${model.origin}/_recorded`, { method: "DELETE" });
    expect(response.status).toBe(204);
    expect(model.requests()).toEqual([]);
    expect(await fetchRecorded()).toEqual([]);
  });

  it("hands out copies, so a test cannot change what the next one reads", async () => {
    await client.chat.completions.create(sent);
    const [recorded] = model.requests();
    recorded!.chat!.messages.length = 0;
    expect(model.requests()[0]!.chat!.messages).toHaveLength(4);
  });
});
