import OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defaultScriptsDir } from "./index.ts";
import { type ScriptedModel, startScriptedModel } from "./server.ts";

const tools: ChatCompletionTool[] = ["aps_schedule_read", "aps_schedule_draft"].map((name) => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object" } },
}));

const start: ChatCompletionMessageParam[] = [
  { role: "system", content: "You schedule production." },
  { role: "user", content: "Push next week's production plan back by one day." },
];

/** `messages` followed by an assistant message making `calls` and a tool message answering each. */
function answered(
  messages: ChatCompletionMessageParam[],
  calls: Array<{ id: string; name: string; arguments: string; result: unknown }>,
): ChatCompletionMessageParam[] {
  return [
    ...messages,
    {
      role: "assistant",
      content: null,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      })),
    },
    ...calls.map(
      (call): ChatCompletionMessageParam => ({
        role: "tool",
        tool_call_id: call.id,
        content: typeof call.result === "string" ? call.result : JSON.stringify(call.result),
      }),
    ),
  ];
}

let model: ScriptedModel;
let client: OpenAI;

async function streamed(scriptModel: string, messages: ChatCompletionMessageParam[]) {
  const stream = await client.chat.completions.create({
    model: scriptModel,
    messages,
    tools,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** The tool-call deltas of raw chunks, in arrival order, each as sent. */
function callDeltas(chunks: ChatCompletionChunk[]) {
  return chunks.flatMap((chunk) => chunk.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
}

/** Argument pieces of raw chunks concatenated per index. */
function argumentsByIndex(chunks: ChatCompletionChunk[]): string[] {
  const merged: string[] = [];
  for (const delta of callDeltas(chunks)) {
    merged[delta.index] = (merged[delta.index] ?? "") + (delta.function?.arguments ?? "");
  }
  return merged;
}

function finishReasons(chunks: ChatCompletionChunk[]) {
  return chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).filter(Boolean);
}

beforeAll(async () => {
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: defaultScriptsDir });
  client = new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => {
  model.clearRequests();
  model.resetFaults();
});

describe("fault-truncated-arguments", () => {
  const whole = JSON.stringify({ planId: "plan-2026-w49" });

  it("stops inside the call's arguments with finish_reason length, non-streamed", async () => {
    const completion = await client.chat.completions.create({
      model: "scripted/fault-truncated-arguments",
      messages: start,
      tools,
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe("length");
    expect(choice.message.tool_calls).toEqual([
      {
        id: "call_cut",
        type: "function",
        function: { name: "aps_schedule_read", arguments: whole.slice(0, Math.floor(whole.length / 2)) },
      },
    ]);
  });

  it("streams the cut-off arguments and ends with finish_reason length", async () => {
    const chunks = await streamed("scripted/fault-truncated-arguments", start);
    expect(argumentsByIndex(chunks)).toEqual([whole.slice(0, Math.floor(whole.length / 2))]);
    expect(() => JSON.parse(argumentsByIndex(chunks)[0]!)).toThrow();
    expect(finishReasons(chunks)).toEqual(["length"]);
  });

  it("sends the call whole once the cut one has an error result", async () => {
    const messages = answered(start, [
      {
        id: "call_cut",
        name: "aps_schedule_read",
        arguments: whole.slice(0, 12),
        result: "error: the arguments are not valid JSON",
      },
    ]);
    const completion = await client.chat.completions.create({
      model: "scripted/fault-truncated-arguments",
      messages,
      tools,
    });
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
    expect(completion.choices[0]!.message.tool_calls?.[0]).toMatchObject({
      id: "call_whole",
      function: { arguments: whole },
    });
  });

  it("refuses with 400 a next request that leaves the cut call without a tool message", async () => {
    const messages: ChatCompletionMessageParam[] = [
      ...start,
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_cut", type: "function", function: { name: "aps_schedule_read", arguments: "{" } },
        ],
      },
      { role: "user", content: "Go on." },
    ];
    const refused = client.chat.completions.create({
      model: "scripted/fault-truncated-arguments",
      messages,
      tools,
    });
    await expect(refused).rejects.toThrow(OpenAI.BadRequestError);
    await expect(refused).rejects.toThrow(/did not have response messages: call_cut/);
  });
});

describe("fault-reused-id", () => {
  const read = { id: "call_0", name: "aps_schedule_read", arguments: "{}", result: { version: 1 } };

  it("gives the first call the id call_0", async () => {
    const completion = await client.chat.completions.create({
      model: "scripted/fault-reused-id",
      messages: start,
      tools,
    });
    expect(completion.choices[0]!.message.tool_calls?.map((call) => call.id)).toEqual(["call_0"]);
  });

  it("gives the next turn's call the same id call_0", async () => {
    const chunks = await streamed("scripted/fault-reused-id", answered(start, [read]));
    expect(callDeltas(chunks)[0]).toEqual({
      index: 0,
      id: "call_0",
      type: "function",
      function: { name: "aps_schedule_draft", arguments: "" },
    });
  });

  it("answers with each result under its own tool once the reused id's second result follows", async () => {
    const messages = answered(answered(start, [read]), [
      { id: "call_0", name: "aps_schedule_draft", arguments: "{}", result: { version: 2, status: "draft" } },
    ]);
    const completion = await client.chat.completions.create({
      model: "scripted/fault-reused-id",
      messages,
      tools,
    });
    expect(completion.choices[0]!.message.content).toBe(
      'Read {"version":1}, then drafted {"version":2,"status":"draft"}.',
    );
  });

  it("does not take the first result of call_0 for the second call's", async () => {
    const messages: ChatCompletionMessageParam[] = [
      ...answered(start, [read]),
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "aps_schedule_draft", arguments: "{}" } },
        ],
      },
      { role: "user", content: "Carry on." },
    ];
    await expect(
      client.chat.completions.create({ model: "scripted/fault-reused-id", messages, tools }),
    ).rejects.toThrow(/did not have response messages: call_0/);
  });
});

describe("fault-rate-limit", () => {
  it("answers 429 with Retry-After: 1, and the SDK's retry after that wait gets the call", async () => {
    const retrying = new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 1 });
    const completion = await retrying.chat.completions.create({
      model: "scripted/fault-rate-limit",
      messages: start,
      tools,
    });
    expect(completion.choices[0]!.message.tool_calls?.[0]?.id).toBe("call_0_0");

    const [failed, retried] = model.requests();
    expect(model.requests()).toHaveLength(2);
    expect(failed).toMatchObject({ status: 429, responseHeaders: { "retry-after": "1" } });
    expect(failed!.responseHeaders["retry-after-ms"]).toBeUndefined();
    expect(retried).toMatchObject({ status: 200, headers: { "x-stainless-retry-count": "1" } });
    expect(retried!.body).toEqual(failed!.body);
    // The SDK's own backoff would be 0.5 s at most: a gap of about a second is the Retry-After.
    expect(Date.parse(retried!.time) - Date.parse(failed!.time)).toBeGreaterThanOrEqual(900);
  });

  it("surfaces the 429 and its Retry-After to a client that does not retry", async () => {
    const error = await client.chat.completions
      .create({ model: "scripted/fault-rate-limit", messages: start, tools })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get("retry-after")).toBe("1");
    expect(model.requests().map((request) => request.status)).toEqual([429]);
  });

  it("meets a streamed request with the 429 before any chunk", async () => {
    await expect(streamed("scripted/fault-rate-limit", start)).rejects.toThrow(OpenAI.RateLimitError);
    expect(model.requests()).toMatchObject([{ status: 429, stream: true }]);
  });
});

describe("fault-server-error", () => {
  it("answers 500 once, and the SDK's retry gets the call", async () => {
    const retrying = new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 1 });
    const chunks: ChatCompletionChunk[] = [];
    const stream = await retrying.chat.completions.create({
      model: "scripted/fault-server-error",
      messages: start,
      tools,
      stream: true,
    });
    for await (const chunk of stream) chunks.push(chunk);
    expect(argumentsByIndex(chunks)).toEqual([JSON.stringify({ planId: "plan-2026-w49" })]);

    const [failed, retried] = model.requests();
    expect(model.requests()).toHaveLength(2);
    expect(failed).toMatchObject({ status: 500, headers: { "x-stainless-retry-count": "0" } });
    expect(failed!.responseHeaders["x-should-retry"]).toBeUndefined();
    expect(failed!.responseHeaders["retry-after"]).toBeUndefined();
    expect(retried).toMatchObject({ status: 200, headers: { "x-stainless-retry-count": "1" } });
    expect(retried!.body).toEqual(failed!.body);
  });

  it("surfaces the 500 to a client that does not retry", async () => {
    await expect(
      client.chat.completions.create({ model: "scripted/fault-server-error", messages: start, tools }),
    ).rejects.toThrow(OpenAI.InternalServerError);
  });
});

describe("fault-interleaved-deltas", () => {
  it("streams two calls' deltas alternating by index, each in OpenAI's delta layout", async () => {
    const deltas = callDeltas(await streamed("scripted/fault-interleaved-deltas", start));
    expect(deltas.map((delta) => delta.index)).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    expect(deltas.slice(0, 2)).toEqual([
      { index: 0, id: "call_w49", type: "function", function: { name: "aps_schedule_read", arguments: "" } },
      { index: 1, id: "call_w50", type: "function", function: { name: "aps_schedule_read", arguments: "" } },
    ]);
    for (const later of deltas.slice(2)) {
      expect(Object.keys(later).sort()).toEqual(["function", "index"]);
      expect(Object.keys(later.function!)).toEqual(["arguments"]);
    }
  });

  it("merges by index into two well-formed calls", async () => {
    const chunks = await streamed("scripted/fault-interleaved-deltas", start);
    expect(argumentsByIndex(chunks).map((text) => JSON.parse(text))).toEqual([
      { planId: "plan-2026-w49" },
      { planId: "plan-2026-w50" },
    ]);
    expect(finishReasons(chunks)).toEqual(["tool_calls"]);
  });

  it("reports both results once both are in", async () => {
    const messages = answered(start, [
      { id: "call_w49", name: "aps_schedule_read", arguments: "{}", result: { week: 49 } },
      { id: "call_w50", name: "aps_schedule_read", arguments: "{}", result: { week: 50 } },
    ]);
    const completion = await client.chat.completions.create({
      model: "scripted/fault-interleaved-deltas",
      messages,
      tools,
    });
    expect(completion.choices[0]!.message.content).toBe('Week 49: {"week":49}; week 50: {"week":50}');
  });

  it("refuses with 400 a conversation that answers only one of the two calls", async () => {
    const messages = answered(start, [
      { id: "call_w49", name: "aps_schedule_read", arguments: "{}", result: { week: 49 } },
    ]);
    const assistant = messages[2] as { tool_calls: unknown[] };
    assistant.tool_calls.push({
      id: "call_w50",
      type: "function",
      function: { name: "aps_schedule_read", arguments: "{}" },
    });
    await expect(
      client.chat.completions.create({ model: "scripted/fault-interleaved-deltas", messages, tools }),
    ).rejects.toThrow(/did not have response messages: call_w50$/);
  });
});

describe("fault-split-first-delta", () => {
  const whole = JSON.stringify({ planId: "plan-2026-w49", includeLines: true });

  it("sends the id and name in a chunk of their own, then small argument pieces under the same index", async () => {
    const chunks = await streamed("scripted/fault-split-first-delta", start);
    const withCalls = chunks.filter((chunk) => chunk.choices[0]?.delta.tool_calls);
    expect(withCalls[0]!.choices[0]!.delta).toEqual({
      tool_calls: [
        {
          index: 0,
          id: "call_split",
          type: "function",
          function: { name: "aps_schedule_read", arguments: "" },
        },
      ],
    });
    const pieces = withCalls.slice(1).map((chunk) => chunk.choices[0]!.delta);
    expect(pieces.length).toBeGreaterThanOrEqual(10);
    for (const piece of pieces) {
      expect(piece).toEqual({ tool_calls: [{ index: 0, function: { arguments: expect.any(String) } }] });
      expect(piece.tool_calls![0]!.function!.arguments!.length).toBeLessThanOrEqual(4);
    }
    expect(argumentsByIndex(chunks)).toEqual([whole]);
  });

  it("sends its text before the call and ends with finish_reason tool_calls", async () => {
    const chunks = await streamed("scripted/fault-split-first-delta", start);
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("");
    const firstCall = chunks.findIndex((chunk) => chunk.choices[0]?.delta.tool_calls);
    const lastText = chunks.findLastIndex((chunk) => chunk.choices[0]?.delta.content);
    expect(text).toBe("Reading the plan.");
    expect(lastText).toBeLessThan(firstCall);
    expect(finishReasons(chunks)).toEqual(["tool_calls"]);
  });
});
