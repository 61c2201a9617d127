import { describe, expect, it } from "vitest";
import { replayConversation } from "./messages.ts";

const call = (position: number, callId: string) => ({
  position,
  callId,
  name: "aps_schedule_read",
  arguments: "{}",
});

describe("replayConversation", () => {
  it("returns the last turn's calls without a result as unanswered", () => {
    const replay = replayConversation("sys", [
      { role: "user", text: "go" },
      { role: "assistant", turn: 0, text: "", calls: [call(0, "a"), call(1, "b")] },
      { role: "tool", turn: 0, position: 0, callId: "a", name: "aps_schedule_read", content: "ok" },
    ]);
    expect(replay.unanswered).toEqual({ turn: 0, calls: [call(1, "b")] });
    expect(replay.messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"]);
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
});
