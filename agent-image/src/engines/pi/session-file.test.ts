import { describe, expect, it } from "vitest";
import type { TranscriptItem } from "../../runtime.ts";
import { sessionFileText } from "./session-file.ts";

const origin = { provider: "gatehouse", model: "scripted/x", cwd: "/work" };

describe("sessionFileText", () => {
  it("writes a header and one chained message entry per transcript item, calls in position order", () => {
    const history: TranscriptItem[] = [
      { role: "user", text: "Push the plan\u2028back." },
      {
        role: "assistant",
        turn: 0,
        text: "",
        calls: [
          { position: 1, callId: "b", name: "plan_draft", arguments: "{not json" },
          { position: 0, callId: "a", name: "plan_read", arguments: '{"planId":"p1"}' },
        ],
      },
      { role: "tool", turn: 0, position: 0, callId: "a", name: "plan_read", content: "read" },
      { role: "tool", turn: 0, position: 1, callId: "b", name: "plan_draft", content: "drafted" },
      { role: "assistant", turn: 1, text: "Done.", calls: [] },
    ];
    const text = sessionFileText(history, origin, new Date("2026-12-06T10:00:00Z"));
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.trimEnd().split("\n");
    expect(lines).toHaveLength(6);
    const [header, ...entries] = lines.map((line) => JSON.parse(line));
    expect(header).toMatchObject({
      type: "session",
      version: 3,
      cwd: "/work",
      timestamp: "2026-12-06T10:00:00.000Z",
    });
    expect(entries.map((e) => [e.id, e.parentId])).toEqual([
      ["00000001", null],
      ["00000002", "00000001"],
      ["00000003", "00000002"],
      ["00000004", "00000003"],
      ["00000005", "00000004"],
    ]);
    expect(entries[0].message).toMatchObject({
      role: "user",
      content: [{ type: "text", text: "Push the plan\u2028back." }],
    });
    expect(entries[1].message).toMatchObject({
      role: "assistant",
      provider: "gatehouse",
      model: "scripted/x",
      stopReason: "toolUse",
      content: [
        { type: "toolCall", id: "a", name: "plan_read", arguments: { planId: "p1" } },
        { type: "toolCall", id: "b", name: "plan_draft", arguments: {} },
      ],
    });
    expect(entries[2].message).toMatchObject({
      role: "toolResult",
      toolCallId: "a",
      toolName: "plan_read",
      content: [{ type: "text", text: "read" }],
      isError: false,
    });
    expect(entries[4].message).toMatchObject({
      stopReason: "stop",
      content: [{ type: "text", text: "Done." }],
    });
  });
});
