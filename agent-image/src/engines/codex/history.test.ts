import { describe, expect, it } from "vitest";
import { historyItems } from "./history.ts";

describe("the transcript as the items a Codex thread starts from", () => {
  it("gives each user message, answer text, call and result in order, ids, arguments and text as stored", () => {
    const args = '{ "planId":"p-1" ,"x":"\\u00e9"}';
    expect(
      historyItems([
        { role: "user", text: "Push it back." },
        {
          role: "assistant",
          turn: 0,
          text: "Reading both.",
          calls: [
            { position: 1, callId: "call_b", name: "plan_draft", arguments: "{" },
            { position: 0, callId: "call_a", name: "plan_read", arguments: args },
          ],
        },
        { role: "tool", turn: 0, position: 0, callId: "call_a", name: "plan_read", content: "receipt a" },
        {
          role: "tool",
          turn: 0,
          position: 1,
          callId: "call_b",
          name: "plan_draft",
          content: "invalid_arguments",
        },
        { role: "assistant", turn: 1, text: "Done.", calls: [] },
      ]),
    ).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "Push it back." }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Reading both." }] },
      { type: "function_call", call_id: "call_a", name: "plan_read", arguments: args },
      { type: "function_call", call_id: "call_b", name: "plan_draft", arguments: "{" },
      { type: "function_call_output", call_id: "call_a", output: "receipt a" },
      { type: "function_call_output", call_id: "call_b", output: "invalid_arguments" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] },
    ]);
  });

  it("gives an answer that only called tools no empty message", () => {
    expect(
      historyItems([
        {
          role: "assistant",
          turn: 0,
          text: "",
          calls: [{ position: 0, callId: "c", name: "t", arguments: "{}" }],
        },
      ]),
    ).toEqual([{ type: "function_call", call_id: "c", name: "t", arguments: "{}" }]);
  });
});
