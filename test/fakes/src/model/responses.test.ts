/**
 * The scripted model's Responses wire, driven by the openai SDK: its `responses.stream` helper checks
 * the event sequence as strictly as a client can (item identities, indexes, every item finished
 * before `response.completed`), so what passes here is what Codex and other Responses clients read.
 */
import OpenAI from "openai";
import type {
  FunctionTool,
  NamespaceTool,
  ResponseFunctionToolCall,
  ResponseInputItem,
  ResponseStreamEvent,
} from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultScriptsDir } from "./index.ts";
import { type ScriptedModel, startScriptedModel } from "./server.ts";

const tools: FunctionTool[] = ["aps_schedule_read", "aps_schedule_draft", "aps_schedule_publish"].map(
  (name) => ({ type: "function", name, description: name, parameters: { type: "object" }, strict: false }),
);
const task: ResponseInputItem[] = [
  { role: "user", content: "Push next week's production plan back by one day." },
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

/** The calls of a response's output. */
const callsOf = (output: Array<{ type: string }>) =>
  output.filter((item): item is ResponseFunctionToolCall => item.type === "function_call");

/** A call made and its result, as a Responses client sends them back. */
const turn = (call: ResponseFunctionToolCall, result: unknown): ResponseInputItem[] => [
  { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
  { type: "function_call_output", call_id: call.call_id, output: JSON.stringify(result) },
];

describe("the scripted model on the Responses API", () => {
  it("answers a step non-streamed with a message and a function_call item, and usage", async () => {
    const response = await client.responses.create({
      model: "scripted/reference-story",
      instructions: "You schedule production.",
      input: task,
      tools,
    });
    expect(response.status).toBe("completed");
    expect(response.output_text).toBe("I will read the current plan first.");
    expect(response.output.map((item) => item.type)).toEqual(["message", "function_call"]);
    expect(callsOf(response.output)[0]).toMatchObject({
      call_id: "call_0_0",
      name: "aps_schedule_read",
      arguments: '{"planId":"plan-2026-w49"}',
      status: "completed",
    });
    expect(response.usage).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
    });
  });

  it("streams the same step as events the SDK's strict stream reader accepts", async () => {
    const stream = client.responses.stream({ model: "scripted/reference-story", input: task, tools });
    const events: ResponseStreamEvent[] = [];
    stream.on("event", (event) => events.push(event));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe("I will read the current plan first.");
    expect(JSON.parse(callsOf(final.output)[0]!.arguments)).toEqual({ planId: "plan-2026-w49" });
    expect(final.usage?.total_tokens).toBeGreaterThan(0);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_event, index) => index));
    expect(events[0]!.type).toBe("response.created");
    expect(events.at(-1)!.type).toBe("response.completed");
    const deltas = events.filter((event) => event.type === "response.function_call_arguments.delta");
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    // Clients such as Codex take items from output_item.done, not from response.completed: each item
    // added is done, whole, before the response completes.
    const added = events.flatMap((event) =>
      event.type === "response.output_item.added" ? [event.item.id] : [],
    );
    const done = events.flatMap((event) => (event.type === "response.output_item.done" ? [event.item] : []));
    expect(added).toEqual(final.output.map((item) => item.id));
    expect(final.output).toMatchObject(done); // the SDK adds parsed_arguments to its final items
    // Every item has its own id, which the delta events name.
    const ids = final.output.map((item) => item.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(deltas.map((event) => event.item_id))).toEqual(new Set([callsOf(final.output)[0]!.id]));
  });

  it("plays the whole story from function_call_output items, templates filled from the results", async () => {
    let input: ResponseInputItem[] = [...task];
    const read = callsOf(
      (await client.responses.create({ model: "scripted/reference-story", input, tools })).output,
    )[0]!;
    input = [...input, ...turn(read, { id: "plan-2026-w49", version: 1 })];
    const draft = callsOf(
      (await client.responses.create({ model: "scripted/reference-story", input, tools })).output,
    )[0]!;
    input = [...input, ...turn(draft, { id: "plan-2026-w49", version: 2, status: "draft" })];
    const stream = client.responses.stream({ model: "scripted/reference-story", input, tools });
    const publish = callsOf((await stream.finalResponse()).output)[0]!;
    expect(JSON.parse(publish.arguments)).toEqual({ planId: "plan-2026-w49", version: 2 });
    input = [
      ...input,
      ...turn(publish, { planId: "plan-2026-w49", version: 2, status: "published", publicationId: "pub-9" }),
    ];
    const last = await client.responses.create({ model: "scripted/reference-story", input, tools });
    expect(last.output_text).toContain("published as version 2 (publication pub-9)");

    const recorded = model.requests().at(-1)!;
    expect(recorded).toMatchObject({ path: "/v1/responses", model: "scripted/reference-story", step: 3 });
    expect(recorded.responses?.input).toEqual(input);
    expect(recorded.chat).toBeUndefined();
  });

  it("refuses a step whose wait the input does not satisfy, naming the missing call", async () => {
    const calls = callsOf(
      (await client.responses.create({ model: "scripted/fault-interleaved-deltas", input: task, tools }))
        .output,
    );
    expect(calls.map((call) => call.call_id)).toEqual(["call_w49", "call_w50"]);
    const oneResult: ResponseInputItem[] = [
      ...task,
      ...calls.map(
        (call): ResponseInputItem => ({
          type: "function_call",
          call_id: call.call_id,
          name: call.name,
          arguments: call.arguments,
        }),
      ),
      { type: "function_call_output", call_id: "call_w49", output: '{"week":49}' },
    ];
    const error = await client.responses
      .create({ model: "scripted/fault-interleaved-deltas", input: oneResult, tools })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain(
      "did not have response messages: call_w50",
    );
    const both = [
      ...oneResult,
      { type: "function_call_output" as const, call_id: "call_w50", output: '{"week":50}' },
    ];
    const answered = await client.responses.create({
      model: "scripted/fault-interleaved-deltas",
      input: both,
      tools,
    });
    expect(answered.output_text).toBe('Week 49: {"week":49}; week 50: {"week":50}');
  });

  it("answers a rate-limit fault 429 with Retry-After on the Responses wire too", async () => {
    const input: ResponseInputItem[] = [{ role: "user", content: "A new conversation." }];
    const error = await client.responses
      .create({ model: "scripted/fault-rate-limit", input, tools })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get("retry-after")).toBe("1");
  });

  it("interleaves two calls' events by output index, which the SDK merges into whole arguments", async () => {
    const stream = client.responses.stream({
      model: "scripted/fault-interleaved-deltas",
      input: task,
      tools,
    });
    const order: number[] = [];
    stream.on("response.function_call_arguments.delta", (event) => order.push(event.output_index));
    const calls = callsOf((await stream.finalResponse()).output);
    expect(calls.map((call) => JSON.parse(call.arguments))).toEqual([
      { planId: "plan-2026-w49" },
      { planId: "plan-2026-w50" },
    ]);
    expect(order.slice(0, 4)).toEqual([0, 1, 0, 1]);
  });

  it("ends an answer cut off inside a call's arguments as incomplete, the call's item too", async () => {
    const streamed = client.responses.stream({
      model: "scripted/fault-truncated-arguments",
      input: task,
      tools,
    });
    const events: string[] = [];
    streamed.on("event", (event) => events.push(event.type));
    const cut = await streamed.finalResponse();
    expect(events.at(-1)).toBe("response.incomplete");
    expect(cut.status).toBe("incomplete");
    expect(cut.incomplete_details).toEqual({ reason: "max_output_tokens" });
    const call = callsOf(cut.output)[0]!;
    expect(call.status).toBe("incomplete");
    expect(() => JSON.parse(call.arguments)).toThrow();

    const body = await client.responses.create({
      model: "scripted/fault-truncated-arguments",
      input: task,
      tools,
    });
    expect(body.status).toBe("incomplete");
    expect(callsOf(body.output)[0]!.arguments).toBe(call.arguments);
  });

  it("reuses a call_id across answers as the script says, item ids staying unique, and waits for the latest call's output", async () => {
    const first = await client.responses.create({ model: "scripted/fault-reused-id", input: task, tools });
    const read = callsOf(first.output)[0]!;
    let input: ResponseInputItem[] = [...task, ...turn(read, { version: 1 })];
    const second = await client.responses.create({ model: "scripted/fault-reused-id", input, tools });
    const draft = callsOf(second.output)[0]!;
    expect([read.call_id, draft.call_id]).toEqual(["call_0", "call_0"]);
    expect(draft.id).not.toBe(read.id);
    input = [
      ...input,
      { type: "function_call", call_id: draft.call_id, name: draft.name, arguments: draft.arguments },
    ];
    // The read's output answers an earlier call_0: the draft's is still missing.
    const early = await client.responses
      .create({ model: "scripted/fault-reused-id", input, tools })
      .catch((e: unknown) => e);
    expect(early).toBeInstanceOf(OpenAI.BadRequestError);
    input = [...input, { type: "function_call_output", call_id: "call_0", output: '{"version":2}' }];
    const last = await client.responses.create({ model: "scripted/fault-reused-id", input, tools });
    expect(last.output_text).toBe('Read {"version":1}, then drafted {"version":2}.');
  });

  it("reads a raw stream created with stream: true, as clients without the helper do", async () => {
    const stream = await client.responses.create({
      model: "scripted/answer",
      input: [{ role: "user", content: "Is the plan fine?" }],
      stream: true,
    });
    let text = "";
    let usage: OpenAI.Responses.ResponseUsage | undefined;
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed") usage = event.response.usage;
    }
    expect(text).toBe("Nothing to change; the plan stands.");
    expect(usage?.output_tokens).toBeGreaterThan(0);
  });

  it("calls a tool of a namespace tool with its namespace, as Codex offers an MCP server's tools", async () => {
    const inner = ["ct_stock_read", "ct_order_place"].map(
      (name): FunctionTool => ({ type: "function", name, parameters: { type: "object" }, strict: false }),
    );
    const namespaced: NamespaceTool = {
      type: "namespace",
      name: "mcp__gatehouse",
      description: "Tools in the mcp__gatehouse namespace.",
      tools: inner.map(({ name, parameters }) => ({ type: "function", name, parameters })),
    };
    const input: ResponseInputItem[] = [{ role: "user", content: "Check the stock." }];
    const response = await client.responses.create({
      model: "scripted/codex-mcp",
      input,
      tools: [namespaced],
    });
    expect(callsOf(response.output)[0]).toMatchObject({
      name: "ct_stock_read",
      namespace: "mcp__gatehouse",
      arguments: '{"sku":"CX-1"}',
    });
    // The same tools offered outside the namespace are not the ones the script calls.
    const error = await client.responses
      .create({ model: "scripted/codex-mcp", input, tools: inner })
      .catch((e) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain(
      "mcp__gatehouse/ct_stock_read, which the request does not offer",
    );
  });
});
