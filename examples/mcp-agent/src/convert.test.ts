import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { argumentsOf, conversationOf, openAiToolsOf, pendingApprovalOf, resultText } from "./convert.ts";

describe("openAiToolsOf", () => {
  it("gives each MCP tool to the model as a function tool with its name, description and input schema", () => {
    const schema = { type: "object", properties: { planId: { type: "string" } }, required: ["planId"] };
    const tools: Tool[] = [
      { name: "aps_schedule_read", description: "Read a plan.", inputSchema: schema as Tool["inputSchema"] },
      { name: "bare", inputSchema: { type: "object" } },
    ];
    expect(openAiToolsOf(tools)).toEqual([
      {
        type: "function",
        function: { name: "aps_schedule_read", description: "Read a plan.", parameters: schema },
      },
      { type: "function", function: { name: "bare", description: "", parameters: { type: "object" } } },
    ]);
  });
});

describe("argumentsOf", () => {
  it("reads a JSON object, and empty arguments as no arguments", () => {
    expect(argumentsOf('{"planId":"p","version":4}')).toEqual({
      ok: true,
      value: { planId: "p", version: 4 },
    });
    expect(argumentsOf("  ")).toEqual({ ok: true, value: {} });
  });

  it("answers arguments cut off or not an object with a message for the model, so nothing is called", () => {
    const cut = argumentsOf('{"planId":"p');
    expect(cut.ok).toBe(false);
    expect(!cut.ok && cut.message).toMatch(/^The arguments are not valid JSON \(.+\); nothing was done\.$/);
    for (const raw of ["[1]", '"text"', "null", "3"]) {
      expect(argumentsOf(raw)).toEqual({
        ok: false,
        message: "The arguments must be a JSON object; nothing was done.",
      });
    }
  });
});

describe("resultText", () => {
  it("passes the server's text on unchanged, refusals included, and names parts that are not text", () => {
    const refused: CallToolResult = {
      content: [{ type: "text", text: "Gatehouse refused this call: writes are used up" }],
      isError: true,
    };
    expect(resultText(refused)).toBe("Gatehouse refused this call: writes are used up");
    const mixed: CallToolResult = {
      content: [
        { type: "text", text: '{"id":"plan-1"}' },
        { type: "image", data: "", mimeType: "image/png" },
      ],
    };
    expect(resultText(mixed)).toBe('{"id":"plan-1"}\n[image omitted]');
  });

  it("falls back to the structured content when there is no text", () => {
    expect(resultText({ content: [], structuredContent: { ok: true } })).toBe('{"ok":true}');
    expect(resultText({ content: [] })).toBe("");
  });
});

describe("pendingApprovalOf", () => {
  it("names the Approval of a call the endpoint asks to repeat, and nothing for any other result", () => {
    const pending: CallToolResult = {
      content: [{ type: "text", text: "This call is waiting for a person to approve it (Approval a-1)…" }],
      structuredContent: { status: "pending_approval", approval: "a-1" },
    };
    expect(pendingApprovalOf(pending)).toBe("a-1");
    expect(pendingApprovalOf({ content: [{ type: "text", text: "pending_approval" }] })).toBeUndefined();
    expect(pendingApprovalOf({ content: [], structuredContent: { status: "succeeded" } })).toBeUndefined();
  });
});

describe("conversationOf", () => {
  const messages = [{ text: "first" }, { text: "second" }, { text: "third" }];

  it("asks the first message when nothing is answered, after the instructions", () => {
    expect(conversationOf("Be brief.", messages, [])).toEqual({
      index: 0,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "first" },
      ],
    });
  });

  it("asks the first unanswered message after the earlier ones and their stored answers", () => {
    expect(conversationOf("", messages, [{ turn: 0, text: "one" }])).toEqual({
      index: 1,
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "one" },
        { role: "user", content: "second" },
      ],
    });
  });

  it("is undefined once every message has its answer", () => {
    const answers = messages.map((_, turn) => ({ turn, text: `answer ${turn}` }));
    expect(conversationOf("x", messages, answers)).toBeUndefined();
  });
});
