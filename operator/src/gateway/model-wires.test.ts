import { describe, expect, it } from "vitest";
import { jsonUsageMeter, sseUsageMeter } from "./model-usage.ts";
import {
  chatCompletions,
  endpointRunTools,
  responses,
  responsesUsageFrom,
  upstreamUrl,
} from "./model-wires.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const event = (body: Record<string, unknown> & { type: string }) =>
  `event: ${body.type}\ndata: ${JSON.stringify(body)}\n\n`;
const usage = { input_tokens: 41, output_tokens: 7, total_tokens: 48 };

describe("upstreamUrl", () => {
  it("joins the endpoint's base URL and the wire's path, with or without a trailing slash", () => {
    expect(upstreamUrl("https://api.openai.com/v1", responses)).toBe("https://api.openai.com/v1/responses");
    expect(upstreamUrl("http://127.0.0.1:8080/v1//", responses)).toBe("http://127.0.0.1:8080/v1/responses");
  });
});

describe("responses.parse", () => {
  it("sends the request exactly as it came: a Responses stream reports its usage unasked", () => {
    const sent = { model: "m", input: [{ role: "user", content: "x" }], stream: true, store: false };
    const parsed = responses.parse(sent);
    if (!("request" in parsed)) throw new Error("refused");
    expect(parsed.request).toMatchObject({ model: "m", stream: true, fields: sent });
    expect(JSON.parse(parsed.request.body)).toEqual(sent);
  });

  it("refuses a body that is not a Responses request", () => {
    expect(responses.parse({ input: "x" })).toMatchObject({ refused: { code: "invalid_request" } });
    expect(responses.parse({ model: "m", tools: "web_search" })).toMatchObject({
      refused: { code: "invalid_request" },
    });
  });
});

describe("chatCompletions.parse", () => {
  it("refuses web_search_options, with which a search model searches the web at the endpoint", () => {
    const asked = { model: "m", messages: [], web_search_options: {} };
    expect(chatCompletions.parse(asked)).toMatchObject({ refused: { code: "endpoint_tool_not_allowed" } });
    expect(chatCompletions.parse({ ...asked, web_search_options: null })).toHaveProperty("request");
  });
});

describe("endpointRunTools", () => {
  it("lets pass the tools whose calls come back to the agent, as Codex offers them", () => {
    expect(
      endpointRunTools([
        { type: "function", name: "read" },
        { type: "custom", name: "apply_patch" },
        { type: "namespace", tools: [{ type: "function" }, { type: "custom" }] },
        { type: "tool_search", execution: "client" },
        { type: "local_shell" },
        { type: "shell", environment: { type: "local" } },
        { type: "shell" },
      ]),
    ).toEqual([]);
  });

  it("names the tools the endpoint runs itself, nested ones included", () => {
    expect(
      endpointRunTools([
        { type: "image_generation" },
        { type: "file_search" },
        { type: "shell", environment: { type: "container_reference" } },
        { type: "namespace", tools: [{ type: "mcp" }] },
        { type: "some_future_hosted_tool" },
      ]),
    ).toEqual([
      "image_generation",
      "file_search",
      "shell (container_reference)",
      "mcp",
      "some_future_hosted_tool",
    ]);
  });
});

describe("responsesUsageFrom", () => {
  it("reads the Responses usage block as input and output tokens", () => {
    expect(responsesUsageFrom({ ...usage, input_tokens_details: { cached_tokens: 3 } })).toEqual({
      inputTokens: 41,
      outputTokens: 7,
    });
    expect(responsesUsageFrom(null)).toBeUndefined();
    expect(responsesUsageFrom({ total_tokens: 9 })).toEqual({ inputTokens: 9, outputTokens: 0 });
  });
});

describe("metering a Responses stream", () => {
  const stream = [
    event({ type: "response.created", sequence_number: 0, response: { id: "r", usage: null } }),
    event({ type: "response.output_text.delta", sequence_number: 1, output_index: 0, delta: "Grüße ✓" }),
    event({ type: "response.output_text.done", sequence_number: 2, output_index: 0, text: "Grüße ✓" }),
    event({ type: "response.completed", sequence_number: 3, response: { id: "r", usage } }),
  ].join("");

  it("reads the usage of response.completed however the bytes are split", () => {
    const all = bytes(stream);
    const meter = sseUsageMeter(1000, responses.readEvent);
    for (let i = 0; i < all.length; i += 3) meter.push(all.subarray(i, i + 3));
    expect(meter.finish()).toEqual({ inputTokens: 41, outputTokens: 7, estimated: false });
  });

  it("reads the usage of a response that ended incomplete or failed", () => {
    for (const type of ["response.incomplete", "response.failed"]) {
      const meter = sseUsageMeter(1000, responses.readEvent);
      meter.push(bytes(event({ type, sequence_number: 0, response: { id: "r", usage } })));
      expect(meter.finish(), type).toEqual({ inputTokens: 41, outputTokens: 7, estimated: false });
    }
  });

  it("estimates a stream without usage from its text, argument and reasoning deltas only", () => {
    const meter = sseUsageMeter(400, responses.readEvent);
    meter.push(
      bytes(
        [
          event({ type: "response.output_text.delta", delta: "12345678" }),
          event({ type: "response.function_call_arguments.delta", delta: '{"a":1}' }),
          event({ type: "response.reasoning_summary_text.delta", delta: "1" }),
          event({ type: "response.function_call_arguments.done", arguments: '{"a":1}' }),
          event({ type: "response.audio.transcript.delta", delta: "not model text" }),
        ].join(""),
      ),
    );
    expect(meter.finish()).toEqual({ inputTokens: 100, outputTokens: 4, estimated: true });
  });
});

describe("metering a Responses body", () => {
  it("reads its usage", () => {
    const meter = jsonUsageMeter(10, responses.readBody);
    meter.push(bytes(JSON.stringify({ id: "r", output: [], usage })));
    expect(meter.finish()).toEqual({ inputTokens: 41, outputTokens: 7, estimated: false });
  });

  it("estimates a body without usage from its output items", () => {
    const meter = jsonUsageMeter(8, responses.readBody);
    const output = [
      { type: "message", content: [{ type: "output_text", text: "abcd" }] },
      { type: "function_call", call_id: "c", name: "read", arguments: '{"a":1}' },
      { type: "reasoning", summary: [{ type: "summary_text", text: "x" }] },
    ];
    meter.push(bytes(JSON.stringify({ id: "r", output, usage: null })));
    expect(meter.finish()).toEqual({ inputTokens: 2, outputTokens: 4, estimated: true });
  });
});
