import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chatMessagesOf, type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeEvent, ToolCallRequest, ToolExecutor } from "../../runtime.ts";
import { createCodexRuntime } from "./engine.ts";
import { CodexHost } from "./host.ts";

/**
 * Codex compacts a thread on its own once a request's usage nears the window the catalog gives: it asks
 * the model for a summary, mid-turn, and goes on from it. That summary is Codex's, not an answer of the
 * session: it must not become text, a turn or a final answer of the run.
 */
const WINDOW = 4_000;
const SUMMARY = "Summary of the work so far.";

let dir = "";
let model: ScriptedModel;
let host: CodexHost;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "gatehouse-codex-compaction-"));
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: dir });
  host = new CodexHost({
    dir: path.join(dir, "codex"),
    model: { baseUrl: model.url, auth: { apiKey: "k" }, timeoutMs: 10_000, maxRetries: 0 },
    logger: pino({ level: "silent" }),
  });
  host.catalog = { slugPrefix: "scripted", contextWindow: WINDOW };
}, 30_000);
afterAll(async () => {
  await host?.close();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the codex engine when Codex compacts the thread", { timeout: 30_000 }, () => {
  it("gives the run no event of the summary request: the session's turns go on, each call proposed and run once", async () => {
    // Every request that reads the plan reports more tokens than the window holds, so Codex compacts
    // before it asks again; the summary it asks for plays the second step. After the compaction the
    // conversation has no answer left, so the model reads the plan again, until maxTurns ends the run.
    writeFileSync(
      path.join(dir, "compacting.yaml"),
      JSON.stringify({
        steps: [
          {
            call: [{ tool: "plan_read", arguments: { planId: "plan-1" } }],
            usage: { promptTokens: WINDOW + 1_000, completionTokens: 10 },
          },
          { wait: "previous", say: SUMMARY },
        ],
      }),
    );
    const invoked: ToolCallRequest[] = [];
    const executor: ToolExecutor = {
      invoke: async (call) => {
        invoked.push(call);
        return { kind: "done", status: "succeeded", content: '{"planId":"plan-1","version":3}' };
      },
    };
    const runtime = createCodexRuntime({
      host,
      model: "scripted/compacting",
      tools: executor,
      maxTurns: 2,
      maxToolCalls: 10,
      logger: pino({ level: "silent" }),
    });
    const session = runtime.createSession({
      subject: { user: "alice", groups: [] },
      system: "You schedule production.",
      tools: [{ name: "plan_read", description: "read a plan", parameters: { type: "object" } }],
      history: [],
    });
    const events: RuntimeEvent[] = [];
    for await (const event of session.send("Read the plan.")) events.push(event);

    // Codex did compact: a request asked the model for the summary.
    const asked = model
      .requests()
      .filter((request) => request.responses)
      .map((request) => chatMessagesOf(request.responses!));
    expect(asked.some((messages) => JSON.stringify(messages).includes("COMPACTION"))).toBe(true);
    // The run saw two turns, each a call, and no text at all: the summary is not the session's.
    expect(events.map((event) => event.type)).toEqual([
      "tool_call",
      "tool_result",
      "turn_end",
      "tool_call",
      "tool_result",
      "turn_end",
      "error",
    ]);
    expect(events.filter((event) => event.type === "turn_end")).toMatchObject([
      { turn: 0, toolCalls: 1, final: false, text: "" },
      { turn: 1, toolCalls: 1, final: false, text: "" },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "error", kind: "limit_exceeded" });
    expect(invoked.map((call) => call.turn)).toEqual([0, 1]);
  });
});
