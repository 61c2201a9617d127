import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import { emptyAnswer, mergeChunk, orderedCalls, toolCallsOf } from "./delta-merge.ts";

function chunk(
  delta: ChatCompletionChunk.Choice.Delta,
  finish: ChatCompletionChunk.Choice["finish_reason"] = null,
) {
  return {
    id: "x",
    object: "chat.completion.chunk",
    created: 0,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  } satisfies ChatCompletionChunk;
}

describe("mergeChunk", () => {
  it("merges interleaved argument pieces of parallel calls by index", () => {
    const answer = emptyAnswer();
    const chunks = [
      chunk({ role: "assistant", content: "Let me " }),
      chunk({ content: "look." }),
      chunk({
        tool_calls: [{ index: 1, id: "b", type: "function", function: { name: "second", arguments: "" } }],
      }),
      chunk({
        tool_calls: [{ index: 0, id: "a", type: "function", function: { name: "first", arguments: '{"x"' } }],
      }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"y":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: "2}" } }] }),
      chunk({}, "tool_calls"),
    ];
    const deltas = chunks.map((each) => mergeChunk(answer, each));
    expect(deltas.filter(Boolean)).toEqual(["Let me ", "look."]);
    expect(answer.text).toBe("Let me look.");
    expect(answer.finishReason).toBe("tool_calls");
    expect(orderedCalls(answer)).toEqual([
      { index: 0, id: "a", name: "first", arguments: '{"x":1}' },
      { index: 1, id: "b", name: "second", arguments: '{"y":2}' },
    ]);
  });

  it("takes usage from the final usage chunk", () => {
    const answer = emptyAnswer();
    mergeChunk(answer, {
      ...chunk({}),
      choices: [],
      usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
    });
    expect(answer.usage).toEqual({ inputTokens: 11, outputTokens: 3 });
  });
});

describe("toolCallsOf", () => {
  it("numbers the calls by index and keeps their own ids when they are unique", () => {
    const answer = emptyAnswer();
    mergeChunk(
      answer,
      chunk({
        tool_calls: [
          { index: 1, id: "b", type: "function", function: { name: "second", arguments: "{}" } },
          { index: 0, id: "a", type: "function", function: { name: "first", arguments: "{}" } },
        ],
      }),
    );
    expect(toolCallsOf(answer, 3)).toEqual([
      { position: 0, callId: "a", name: "first", arguments: "{}" },
      { position: 1, callId: "b", name: "second", arguments: "{}" },
    ]);
  });

  it("gives a missing id, and an id an earlier call of the answer carries, one of its own", () => {
    const answer = emptyAnswer();
    mergeChunk(
      answer,
      chunk({
        tool_calls: [
          { index: 0, id: "call_0", type: "function", function: { name: "read", arguments: "{}" } },
          { index: 1, id: "call_0", type: "function", function: { name: "read", arguments: "{}" } },
          { index: 2, type: "function", function: { name: "read", arguments: "{}" } },
          { index: 3, id: "call_2_1", type: "function", function: { name: "read", arguments: "{}" } },
        ],
      }),
    );
    const ids = toolCallsOf(answer, 2).map((call) => call.callId);
    expect(ids).toEqual(["call_0", "call_2_1", "call_2_2", "call_2_3"]);
    expect(new Set(ids).size).toBe(4);
  });
});
