import { describe, expect, it } from "vitest";
import { assistantMessage, replayableArguments, replayConversation } from "./messages.ts";

const call = (position: number, callId: string) => ({
  position,
  callId,
  name: "aps_schedule_read",
  arguments: "{}",
});

describe("replayConversation", () => {
  it("returns the last turn's calls with the results it has, leaving its tool messages to the engine", () => {
    const replay = replayConversation("sys", [
      { role: "user", text: "go" },
      { role: "assistant", turn: 0, text: "", calls: [call(0, "a"), call(1, "b")] },
      { role: "tool", turn: 0, position: 1, callId: "b", name: "aps_schedule_read", content: "ok" },
    ]);
    expect(replay.unanswered).toEqual({
      turn: 0,
      calls: [call(0, "a"), call(1, "b")],
      results: new Map([[1, "ok"]]),
    });
    expect(replay.messages.map((message) => message.role)).toEqual(["system", "user", "assistant"]);
  });

  it("answers an earlier turn's missing result so the conversation stays valid", () => {
    const replay = replayConversation("", [
      { role: "user", text: "go" },
      { role: "assistant", turn: 0, text: "", calls: [call(0, "a")] },
      { role: "assistant", turn: 1, text: "done", calls: [] },
    ]);
    expect(replay.unanswered).toBeUndefined();
    expect(replay.messages[2]).toEqual({
      role: "tool",
      tool_call_id: "a",
      content: "No result was recorded for this call.",
    });
  });

  it("answers each call of a turn in call order, whatever order the results were recorded in", () => {
    const replay = replayConversation("", [
      { role: "user", text: "go" },
      { role: "assistant", turn: 0, text: "", calls: [call(0, "a"), call(1, "b"), call(2, "c")] },
      { role: "tool", turn: 0, position: 2, callId: "c", name: "aps_schedule_read", content: "third" },
      { role: "tool", turn: 0, position: 0, callId: "a", name: "aps_schedule_read", content: "first" },
      { role: "assistant", turn: 1, text: "done", calls: [] },
    ]);
    expect(replay.messages.slice(2, 5)).toEqual([
      { role: "tool", tool_call_id: "a", content: "first" },
      { role: "tool", tool_call_id: "b", content: "No result was recorded for this call." },
      { role: "tool", tool_call_id: "c", content: "third" },
    ]);
  });
});

describe("replayableArguments", () => {
  it("keeps a JSON object as the model wrote it", () => {
    expect(replayableArguments('{ "planId": "plan-2026-w49" }')).toBe('{ "planId": "plan-2026-w49" }');
  });

  it.each([
    ["cut off", '{"planId":"plan-'],
    ["empty", ""],
    ["an array", "[1]"],
    ["a string", '"x"'],
    ["null", "null"],
  ])("replaces arguments that are %s with {}", (_label, raw) => {
    expect(replayableArguments(raw)).toBe("{}");
  });

  it("is what an assistant message carries, so a cut-off call replays as a valid request", () => {
    const message = assistantMessage("", [
      { position: 0, callId: "call_cut", name: "aps_schedule_read", arguments: '{"planId":"pl' },
    ]);
    expect(message).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_cut", type: "function", function: { name: "aps_schedule_read", arguments: "{}" } },
      ],
    });
  });
});
