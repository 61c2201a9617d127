import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultScriptsDir } from "./index.ts";
import { type ScriptedModel, startScriptedModel } from "./server.ts";

const tools: ChatCompletionTool[] = ["aps_schedule_read", "aps_schedule_draft", "aps_schedule_publish"].map(
  (name) => ({
    type: "function",
    function: { name, description: name, parameters: { type: "object" } },
  }),
);

const start: ChatCompletionMessageParam[] = [
  { role: "system", content: "You schedule production." },
  { role: "user", content: "Push next week's production plan back by one day." },
];

/** The conversation after the read and the draft, the draft having returned version 2. */
const afterDraft: ChatCompletionMessageParam[] = [
  ...start,
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c0", type: "function", function: { name: "aps_schedule_read", arguments: "{}" } }],
  },
  { role: "tool", tool_call_id: "c0", content: JSON.stringify({ id: "plan-2026-w49", version: 1 }) },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "aps_schedule_draft", arguments: "{}" } }],
  },
  {
    role: "tool",
    tool_call_id: "c1",
    content: JSON.stringify({ id: "plan-2026-w49", version: 2, status: "draft" }),
  },
];

let model: ScriptedModel;
let client: OpenAI;

beforeAll(async () => {
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: defaultScriptsDir });
  client = new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await model.close();
});

describe("scripted model through the openai SDK", () => {
  it("streams a tool call whose arguments arrive split across chunks and merge into the whole object", async () => {
    const stream = await client.chat.completions.create({
      model: "scripted/reference-story",
      messages: start,
      tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let name = "";
    let finish: string | null = null;
    let usage: unknown;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        finish = choice.finish_reason ?? finish;
        for (const call of choice.delta.tool_calls ?? []) {
          expect(call.index).toBe(0);
          name += call.function?.name ?? "";
          if (call.function?.arguments) pieces.push(call.function.arguments);
        }
      }
    }
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(name).toBe("aps_schedule_read");
    expect(JSON.parse(pieces.join(""))).toEqual({ planId: "plan-2026-w49" });
    expect(finish).toBe("tool_calls");
    expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  });

  it("answers the same step non-streamed with whole arguments and usage", async () => {
    const completion = await client.chat.completions.create({
      model: "scripted/reference-story",
      messages: start,
      tools,
    });
    const message = completion.choices[0]!.message;
    expect(message.content).toBe("I will read the current plan first.");
    expect(message.tool_calls?.[0]).toMatchObject({
      id: "call_0_0",
      function: { name: "aps_schedule_read", arguments: '{"planId":"plan-2026-w49"}' },
    });
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
  });

  it("fills the publish version from the draft's result, keeping it a number", async () => {
    const completion = await client.chat.completions.create({
      model: "scripted/reference-story",
      messages: afterDraft,
      tools,
    });
    const call = completion.choices[0]!.message.tool_calls![0]!;
    expect(call.type === "function" && JSON.parse(call.function.arguments)).toEqual({
      planId: "plan-2026-w49",
      version: 2,
    });
  });

  it("continues a resumed conversation with the final answer naming the published version", async () => {
    const messages: ChatCompletionMessageParam[] = [
      ...afterDraft,
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c2", type: "function", function: { name: "aps_schedule_publish", arguments: "{}" } },
        ],
      },
      {
        role: "tool",
        tool_call_id: "c2",
        content: JSON.stringify({
          planId: "plan-2026-w49",
          version: 2,
          status: "published",
          publicationId: "pub-1",
        }),
      },
    ];
    const stream = await client.chat.completions.create({
      model: "scripted/reference-story",
      messages,
      tools,
      stream: true,
    });
    let text = "";
    let chunks = 0;
    for await (const chunk of stream) {
      chunks += 1;
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toContain("published as version 2");
  });

  it("answers a refused publish with the refusal branch", async () => {
    const messages: ChatCompletionMessageParam[] = [
      ...afterDraft,
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c2", type: "function", function: { name: "aps_schedule_publish", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "c2", content: "failed (forbidden): APS refused publish with HTTP 403" },
    ];
    const completion = await client.chat.completions.create({
      model: "scripted/reference-story",
      messages,
      tools,
    });
    expect(completion.choices[0]!.message.content).toContain("refused");
  });

  it("refuses a conversation beyond the end of the script with 400", async () => {
    const messages: ChatCompletionMessageParam[] = [
      ...start,
      ...Array.from({ length: 4 }, (): ChatCompletionMessageParam => ({ role: "assistant", content: "…" })),
    ];
    await expect(
      client.chat.completions.create({ model: "scripted/reference-story", messages, tools }),
    ).rejects.toThrow(OpenAI.BadRequestError);
  });

  it("lists one model per script", async () => {
    const models = [];
    for await (const entry of client.models.list()) models.push(entry.id);
    expect(models).toEqual(
      expect.arrayContaining([
        "scripted/reference-story",
        "scripted/fault-truncated-arguments",
        "scripted/fault-reused-id",
        "scripted/fault-rate-limit",
        "scripted/fault-server-error",
        "scripted/fault-interleaved-deltas",
        "scripted/fault-split-first-delta",
      ]),
    );
  });
});
