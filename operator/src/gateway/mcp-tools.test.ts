/** The MCP endpoint's pure parts: annotations, results as the model reads them, ids and call positions. */
import { describe, expect, it } from "vitest";
import { approvalWaitMsOf, MCP_APPROVAL_WAIT_SECONDS } from "./mcp.ts";
import {
  annotationsOf,
  callPositionOf,
  finalAnswerResultOf,
  mcpSessionBelongsTo,
  mcpToolOf,
  newMcpSessionId,
  requestProblemOf,
  toolResultOf,
} from "./mcp-tools.ts";

describe("annotationsOf", () => {
  it("marks a read read-only and idempotent, never destructive", () => {
    expect(annotationsOf({ effect: "read", idempotency: "none" })).toMatchObject({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
    });
  });

  it("marks a write destructive, idempotent only when its provider deduplicates", () => {
    expect(annotationsOf({ effect: "write", idempotency: "key" })).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(annotationsOf({ effect: "write", idempotency: "none" }).idempotentHint).toBe(false);
  });

  it("marks a draft neither read-only nor destructive", () => {
    expect(annotationsOf({ effect: "draft", idempotency: "natural" })).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
    });
  });
});

describe("mcpToolOf", () => {
  it("lists the capability's tool name, description and input schema", () => {
    const parameters = { type: "object", properties: { id: { type: "string" } }, required: ["id"] };
    const tool = mcpToolOf({
      spec: { name: "aps_plan_get", description: "Reads a plan.", parameters },
      effect: "read",
      idempotency: "natural",
    });
    expect(tool).toMatchObject({
      name: "aps_plan_get",
      description: "Reads a plan.",
      inputSchema: parameters,
    });
  });
});

describe("toolResultOf", () => {
  it("gives a success's content as is, not as an error", () => {
    const result = toolResultOf({ status: "succeeded", content: '{"value":3}', executionId: "e1" });
    expect(result).toEqual({ content: [{ type: "text", text: '{"value":3}' }] });
  });

  it.each([
    ["denied", "Gatehouse refused this call: "],
    ["invalid_arguments", "The arguments were not accepted, nothing was done: "],
    ["failed", "The business system refused or failed this call: "],
    ["unknown", "The outcome of this call is unknown: "],
  ] as const)("words a %s answer for the model, as an error", (status, prefix) => {
    const result = toolResultOf({ status, content: "because" });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: `${prefix}because` }]);
  });

  it("names the Approval of a call still pending and asks for the same call again", () => {
    const result = toolResultOf({
      status: "pending_approval",
      content: "waiting",
      approval: { name: "approval-abc" },
    });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({ status: "pending_approval", approval: "approval-abc" });
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain("Approval approval-abc");
    expect(text).toContain("again with exactly the same arguments");
  });
});

describe("MCP session ids", () => {
  it("belong to the AgentSession they were issued to, and to no other", () => {
    const id = newMcpSessionId("uid-1");
    expect(mcpSessionBelongsTo(id, "uid-1")).toBe(true);
    expect(mcpSessionBelongsTo(id, "uid-2")).toBe(false);
    expect(mcpSessionBelongsTo("uid-1", "uid-1")).toBe(false);
    expect(mcpSessionBelongsTo("uid-1.", "uid-1")).toBe(false);
    expect(mcpSessionBelongsTo(newMcpSessionId("uid-10"), "uid-1")).toBe(false);
  });

  it("are new for every initialize", () => {
    expect(newMcpSessionId("uid-1")).not.toBe(newMcpSessionId("uid-1"));
  });
});

describe("callPositionOf", () => {
  it("gives a resent request (same MCP session and request id) the same turn and position", () => {
    expect(callPositionOf(2, "uid.a", 7)).toEqual(callPositionOf(2, "uid.a", 7));
    expect(callPositionOf(2, "uid.a", 7).turn).toBe(2);
  });

  it("gives other requests other positions: another id, another MCP session, a string id", () => {
    const positions = new Set(
      [
        callPositionOf(0, "uid.a", 7),
        callPositionOf(0, "uid.a", 8),
        callPositionOf(0, "uid.b", 7),
        callPositionOf(0, "uid.a", "7"),
      ].map((p) => p.position),
    );
    expect(positions.size).toBe(4);
  });

  it("keeps positions exact integers a JSON number and Core's identity carry", () => {
    for (let id = 0; id < 200; id++) {
      const { position } = callPositionOf(0, "uid.a", id);
      expect(Number.isSafeInteger(position)).toBe(true);
      expect(position).toBeGreaterThanOrEqual(0);
    }
  });
});

describe("approvalWaitMsOf", () => {
  it("waits the endpoint's bound unless the client asks for less", () => {
    expect(approvalWaitMsOf(undefined)).toBe(MCP_APPROVAL_WAIT_SECONDS * 1000);
    expect(approvalWaitMsOf({ "gatehouse.dev/approvalWaitSeconds": 2 })).toBe(2000);
    expect(approvalWaitMsOf({ "gatehouse.dev/approvalWaitSeconds": 3600 })).toBe(
      MCP_APPROVAL_WAIT_SECONDS * 1000,
    );
    expect(approvalWaitMsOf({ "gatehouse.dev/approvalWaitSeconds": 0 })).toBe(
      MCP_APPROVAL_WAIT_SECONDS * 1000,
    );
    expect(approvalWaitMsOf({ "gatehouse.dev/approvalWaitSeconds": "2" })).toBe(
      MCP_APPROVAL_WAIT_SECONDS * 1000,
    );
  });
});

describe("finalAnswerResultOf", () => {
  it("tells the agent its answer is recorded when the transcript holds this text", () => {
    const result = finalAnswerResultOf({ turn: 0, text: "done" }, "done");
    expect(result.isError).toBeUndefined();
    expect((result.content[0] as { text: string }).text).toContain("is recorded");
  });

  it("says a later, different answer was not kept when an earlier one is recorded", () => {
    const result = finalAnswerResultOf({ turn: 0, text: "first" }, "second");
    expect(result).toEqual({
      content: [
        { type: "text", text: "A final answer for this session is already recorded; this one was not kept." },
      ],
      isError: true,
    });
  });
});

describe("requestProblemOf", () => {
  const call = (params: unknown, id: unknown = 4) => ({ jsonrpc: "2.0", id, method: "tools/call", params });
  const needs = "tools/call needs params.name (a string) and params.arguments (an object)";

  it("refuses an empty batch as JSON-RPC's Invalid Request", () => {
    expect(requestProblemOf([])).toEqual({
      status: 400,
      code: -32600,
      message: "Invalid Request: an empty batch",
      id: null,
    });
  });

  it("answers a tools/call without a name, or with arguments that are not an object, as invalid params", () => {
    for (const params of [
      { arguments: {} },
      { name: 3 },
      { name: "t", arguments: [1] },
      { name: "t", arguments: "x" },
      undefined,
    ]) {
      expect(requestProblemOf(call(params))).toEqual({ status: 200, code: -32602, message: needs, id: 4 });
    }
  });

  it("refuses a batch holding a malformed tools/call, nothing of it done", () => {
    expect(requestProblemOf([call({ name: "t" }, 1), call({ name: "t", arguments: null }, 2)])).toEqual({
      status: 400,
      code: -32602,
      message: needs,
      id: null,
    });
  });

  it("lets well-formed calls, other methods and non-empty batches through", () => {
    expect(requestProblemOf(call({ name: "t" }))).toBeUndefined();
    expect(requestProblemOf(call({ name: "t", arguments: { a: 1 } }))).toBeUndefined();
    expect(requestProblemOf({ jsonrpc: "2.0", id: 1, method: "tools/list" })).toBeUndefined();
    // Not JSON-RPC 2.0: left to the SDK's parse error.
    expect(requestProblemOf({ jsonrpc: "1.0", id: 1, method: "tools/call" })).toBeUndefined();
    expect(requestProblemOf([{ jsonrpc: "2.0", method: "notifications/initialized" }])).toBeUndefined();
  });
});
