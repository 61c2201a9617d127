/**
 * The agent's loop against the scripted model (a real OpenAI-compatible HTTP server) and a real MCP
 * server of the SDK over its in-memory transport, which answers as Gatehouse's endpoint does: a call
 * waiting for an Approval reports progress, then asks to be called again.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runAgent } from "./agent.ts";
import { FINAL_ANSWER_TOOL } from "./convert.ts";

const SCRIPTS = {
  // Reads, places an order that waits for an approval, then ends with the final-answer tool.
  order: `
steps:
  - call:
      - tool: lookup
        arguments: { sku: R-1 }
  - call:
      - tool: place
        arguments: { sku: "{{last.sku}}", count: 2 }
  - call:
      - tool: ${FINAL_ANSWER_TOOL}
        arguments: { text: "Placed order {{last.orderId}}." }
`,
  // Answers in text at once, without a tool call.
  plain: `
steps:
  - say: Nothing needs doing.
`,
  // Calls a tool the server lists but no longer offers, then answers in text.
  vanished: `
steps:
  - call:
      - tool: gone
  - say: "The tool is gone: {{last}}"
`,
};

const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] });

/** An MCP server like Gatehouse's: `place` waits for an Approval once, then runs. Records every call. */
function gatehouseLike() {
  const calls: Array<{ name: string; arguments: unknown }> = [];
  let placed = 0;
  const server = new Server({ name: "gatehouse-like", version: "1" }, { capabilities: { tools: {} } });
  const object = { type: "object" as const };
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: ["lookup", "place", "gone", FINAL_ANSWER_TOOL].map((name) => ({ name, inputSchema: object })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    calls.push({ name, arguments: args });
    if (name === "lookup") return text(JSON.stringify({ sku: "R-1", stock: 4 }));
    if (name === FINAL_ANSWER_TOOL) return text("Your final answer is recorded.");
    // As Gatehouse answers a tool the session no longer offers.
    if (name !== "place") throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    placed += 1;
    if (placed > 1) return text(JSON.stringify({ orderId: "O-7" }));
    const progressToken = request.params._meta?.progressToken;
    if (progressToken !== undefined) {
      await extra.sendNotification({
        method: "notifications/progress",
        params: {
          progressToken,
          progress: 5,
          total: 50,
          message: "Waiting for a person to decide Approval a-1.",
        },
      });
    }
    return {
      content: [{ type: "text", text: "This call is waiting for a person to approve it (Approval a-1)." }],
      structuredContent: { status: "pending_approval", approval: "a-1" },
    };
  });
  return { server, calls };
}

let model: ScriptedModel;
let scriptsDir: string;
beforeAll(async () => {
  scriptsDir = mkdtempSync(join(tmpdir(), "mcp-agent-scripts-"));
  for (const [name, script] of Object.entries(SCRIPTS))
    writeFileSync(join(scriptsDir, `${name}.yaml`), script);
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir });
});
afterAll(async () => {
  await model.close();
  rmSync(scriptsDir, { recursive: true, force: true });
});
beforeEach(() => model.clearRequests());

async function play(script: keyof typeof SCRIPTS) {
  const { server, calls } = gatehouseLike();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const mcp = new Client({ name: "test", version: "1" });
  await mcp.connect(clientSide);
  const lines: string[] = [];
  try {
    const answer = await runAgent({
      model: new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 0 }),
      modelName: `scripted/${script}`,
      mcp,
      messages: [{ role: "user", content: `Do the ${script} task.` }],
      maxSteps: 5,
      log: (line) => lines.push(line),
    });
    return { answer, calls, lines };
  } finally {
    await mcp.close();
  }
}

describe("runAgent", () => {
  it("runs each call once, calls a waiting one again with the same arguments, and ends with the model's final-answer call", async () => {
    const { answer, calls, lines } = await play("order");
    expect(answer).toBe("Placed order O-7.");
    expect(calls).toEqual([
      { name: "lookup", arguments: { sku: "R-1" } },
      { name: "place", arguments: { sku: "R-1", count: 2 } },
      { name: "place", arguments: { sku: "R-1", count: 2 } },
      { name: FINAL_ANSWER_TOOL, arguments: { text: "Placed order O-7." } },
    ]);
    expect(lines).toContain("Waiting for a person to decide Approval a-1.");
    // The model got every server answer once, unchanged, and never the "call again" text.
    const last = model.requests().at(-1)?.chat?.messages ?? [];
    expect(last.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
      JSON.stringify({ sku: "R-1", stock: 4 }),
      JSON.stringify({ orderId: "O-7" }),
    ]);
    expect(
      model
        .requests()
        .at(-1)
        ?.chat?.tools?.map((t) => t.function.name),
    ).toEqual(["lookup", "place", "gone", FINAL_ANSWER_TOOL]);
  });

  it("sends a reply without tool calls as the final answer", async () => {
    const { answer, calls } = await play("plain");
    expect(answer).toBe("Nothing needs doing.");
    expect(calls).toEqual([{ name: FINAL_ANSWER_TOOL, arguments: { text: "Nothing needs doing." } }]);
  });

  it("gives the model the server's refusal of a tool it does not offer, and goes on", async () => {
    const { answer, calls } = await play("vanished");
    expect(answer).toMatch(/^The tool is gone: .*Unknown tool: gone/);
    expect(calls.map((c) => c.name)).toEqual(["gone", FINAL_ANSWER_TOOL]);
  });
});
