import { describe, expect, it } from "vitest";
import { jsonUsageMeter, sseUsageMeter } from "./model-usage.ts";
import { chatCompletions, ProxiedChatRequest, upstreamChatRequest, usageFrom } from "./model-wires.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("upstreamChatRequest", () => {
  it("asks a streamed request for usage and keeps every other field as sent", () => {
    const request = ProxiedChatRequest.parse({
      model: "gpt-x",
      stream: true,
      stream_options: { include_usage: false, other: 1 },
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "t", parameters: {} } }],
      temperature: 0.2,
    });
    const upstream = upstreamChatRequest(request);
    expect(upstream.stream).toBe(true);
    expect(JSON.parse(upstream.body)).toEqual({
      model: "gpt-x",
      stream: true,
      stream_options: { include_usage: true, other: 1 },
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "t", parameters: {} } }],
      temperature: 0.2,
    });
  });

  it("adds stream_options to a streamed request that has none", () => {
    const upstream = upstreamChatRequest(
      ProxiedChatRequest.parse({ model: "m", stream: true, messages: [] }),
    );
    expect(JSON.parse(upstream.body).stream_options).toEqual({ include_usage: true });
  });

  it("leaves a non-streamed request exactly as it came", () => {
    const sent = { model: "m", messages: [{ role: "user", content: "x" }], n: 1 };
    const upstream = upstreamChatRequest(ProxiedChatRequest.parse(sent));
    expect(upstream.stream).toBe(false);
    expect(upstream.body).toBe(JSON.stringify(sent));
  });

  it("refuses a body without a model", () => {
    expect(ProxiedChatRequest.safeParse({ messages: [] }).success).toBe(false);
  });
});

describe("usageFrom", () => {
  it("reads OpenAI's usage block as input and output tokens", () => {
    expect(usageFrom({ prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 })).toEqual({
      inputTokens: 12,
      outputTokens: 3,
    });
    expect(usageFrom(null)).toBeUndefined();
    expect(usageFrom({ total_tokens: 9 })).toEqual({ inputTokens: 9, outputTokens: 0 });
  });
});

describe("sseUsageMeter", () => {
  const chunk = (body: unknown) => `data: ${JSON.stringify(body)}\n\n`;
  const stream = [
    chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" } }], usage: null }),
    chunk({ choices: [{ index: 0, delta: { content: "Hello" } }], usage: null }),
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: null }),
    chunk({ choices: [], usage: { prompt_tokens: 41, completion_tokens: 7, total_tokens: 48 } }),
    "data: [DONE]\n\n",
  ].join("");

  it("reads the usage of the stream's last chunk", () => {
    const meter = sseUsageMeter(1000, chatCompletions.readEvent);
    meter.push(bytes(stream));
    expect(meter.finish()).toEqual({ inputTokens: 41, outputTokens: 7, estimated: false });
  });

  it("reads it however the bytes are split, even inside a multi-byte character", () => {
    const text = stream.replace("Hello", "Grüße ✓");
    const all = bytes(text);
    const meter = sseUsageMeter(1000, chatCompletions.readEvent);
    for (let i = 0; i < all.length; i += 3) meter.push(all.subarray(i, i + 3));
    expect(meter.finish()).toEqual({ inputTokens: 41, outputTokens: 7, estimated: false });
  });

  it("reads CRLF-framed events and multi-line data", () => {
    const meter = sseUsageMeter(0, chatCompletions.readEvent);
    meter.push(
      bytes('data: {"choices": [],\r\ndata: "usage": {"prompt_tokens": 2, "completion_tokens": 1}}\r\n\r\n'),
    );
    expect(meter.finish()).toEqual({ inputTokens: 2, outputTokens: 1, estimated: false });
  });

  it("estimates a stream that reports no usage from the prompt and the streamed output", () => {
    const meter = sseUsageMeter(400, chatCompletions.readEvent);
    meter.push(
      bytes(
        chunk({
          choices: [
            {
              index: 0,
              delta: {
                content: "12345678",
                tool_calls: [{ index: 0, function: { name: "read", arguments: '{"a":1}' } }],
              },
            },
          ],
        }),
      ),
    );
    // A stream cut off before its usage chunk (no blank line after the last event) is metered too.
    meter.push(bytes('data: {"choices": [{"delta": {"content": "1234"}}]}'));
    expect(meter.finish()).toEqual({ inputTokens: 100, outputTokens: 6, estimated: true });
  });
});

describe("jsonUsageMeter", () => {
  it("reads the usage of a completion body", () => {
    const meter = jsonUsageMeter(10, chatCompletions.readBody);
    const body = JSON.stringify({
      choices: [{ message: { role: "assistant", content: "hi" } }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
    meter.push(bytes(body.slice(0, 10)));
    meter.push(bytes(body.slice(10)));
    expect(meter.finish()).toEqual({ inputTokens: 5, outputTokens: 2, estimated: false });
  });

  it("estimates a body without usage from the message it carries", () => {
    const meter = jsonUsageMeter(8, chatCompletions.readBody);
    meter.push(bytes(JSON.stringify({ choices: [{ message: { content: "abcdefgh" } }] })));
    expect(meter.finish()).toEqual({ inputTokens: 2, outputTokens: 2, estimated: true });
  });
});
