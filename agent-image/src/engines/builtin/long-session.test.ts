/**
 * A 500-turn session through the scripted model (in process, real HTTP, streamed) with a context window
 * of 4,000 tokens: parallel calls, calls that wait for an Approval, results far larger than the
 * window. The session completes; every request fits the window by the model's own count and by the
 * engine's estimate; no request holds a tool result without its call or a call without its result;
 * each call ran exactly once; every compaction is reported, and the summary keeps the task.
 *
 * The scripted model plays the step that matches the number of assistant messages it is sent, which
 * compaction keeps small: every step of the generated script is the same choice (call on, or finish
 * once a result says so), laid out for more steps than any request holds uncompacted.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type RecordedRequest, type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import OpenAI from "openai";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeEvent, ToolCallRequest, ToolExecutor, ToolInvocation } from "../../runtime.ts";
import { estimateMessage, estimateTools, SUMMARY_HEADER } from "./compaction.ts";
import { answerReserve } from "./context.ts";
import { createBuiltinRuntime } from "./engine.ts";
import { chatTools } from "./messages.ts";

const TURNS = 500;
const WINDOW = 4_000;
const TASK = "Walk the plan week by week and report when every week is read.";

const tools = ["aps_schedule_read", "aps_schedule_draft", "aps_schedule_publish"].map((name) => ({
  name,
  description: `${name}: one week of the production plan`,
  parameters: { type: "object", properties: { week: { type: "integer" } } },
}));

/**
 * The script: step `index` calls a read, a read and a draft in parallel, or a publish (which needs an
 * Approval), unless the latest result says every week is read. Three step bodies and YAML aliases to
 * them: the scripted model parses the script on every request.
 */
function script(steps: number): string {
  const body = (calls: string) =>
    `{ choose: [{ when: { lastToolContains: EVERY WEEK READ }, say: Every week is read. }, { say: Reading on., call: ${calls} }] }`;
  const kinds = [
    `&read ${body("[{ tool: aps_schedule_read, arguments: { week: 1 } }]")}`,
    "&parallel " +
      body(
        "[{ tool: aps_schedule_read, arguments: { week: 2 } }, { tool: aps_schedule_draft, arguments: { week: 2 } }]",
      ),
    `&publish ${body("[{ tool: aps_schedule_publish, arguments: { week: 3 } }]")}`,
  ];
  const alias = (index: number) => (index % 7 === 6 ? "*publish" : index % 3 === 0 ? "*parallel" : "*read");
  return [
    "steps:",
    ...kinds.map((kind) => `  - ${kind}`),
    ...Array.from({ length: steps }, (_, index) => `  - ${alias(index)}`),
  ].join("\n");
}

/** Answers like Core: a publish waits for an Approval; every 11th result is ten times the window. */
function executor() {
  const invoked: ToolCallRequest[] = [];
  const tools: ToolExecutor = {
    async invoke(call): Promise<ToolInvocation> {
      invoked.push(call);
      const done = call.turn >= TURNS - 2;
      const body = invoked.length % 11 === 0 ? "row;".repeat(WINDOW * 10) : `week ${call.turn} has 5 orders`;
      const answer = {
        status: "succeeded",
        content: JSON.stringify({ result: done ? `${body} EVERY WEEK READ` : body }),
      };
      if (call.name !== "aps_schedule_publish") return { kind: "done", ...answer };
      return { kind: "pending_approval", approval: `apr-${call.turn}`, wait: async () => answer };
    },
  };
  return { tools, invoked };
}

/** Problems of one request's messages, checked apart from the engine's own check. */
function orphans(messages: NonNullable<RecordedRequest["chat"]>["messages"]): string[] {
  const problems: string[] = [];
  let owed: string[] = [];
  for (const message of messages) {
    if (message.role === "tool") {
      const at = owed.indexOf(message.tool_call_id ?? "");
      if (at < 0) problems.push(`orphan result ${message.tool_call_id}`);
      else owed.splice(at, 1);
      continue;
    }
    problems.push(...owed.map((id) => `call ${id} without result`));
    owed = (message.tool_calls ?? []).map((call) => call.id);
  }
  return [...problems, ...owed.map((id) => `call ${id} without result`)];
}

let model: ScriptedModel;
let scriptsDir: string;
beforeAll(async () => {
  scriptsDir = await mkdtemp(path.join(tmpdir(), "gatehouse-long-session-"));
  await writeFile(path.join(scriptsDir, "long-session.yaml"), script(60));
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir });
});
afterAll(async () => {
  await model.close();
  await rm(scriptsDir, { recursive: true, force: true });
});

describe("a 500-turn session with a small context window", () => {
  it("completes, each request fits the window, and no call is ever apart from its result", async () => {
    const { tools: executorTools, invoked } = executor();
    const runtime = createBuiltinRuntime({
      client: new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 0 }),
      model: "scripted/long-session",
      tools: executorTools,
      maxTurns: TURNS,
      maxToolCalls: 10 * TURNS,
      contextWindow: WINDOW,
      logger: pino({ level: "silent" }),
    });
    const session = runtime.createSession({
      subject: { user: "alice", groups: [] },
      system: "You check production plans.",
      tools,
      history: [],
    });
    const seen: RuntimeEvent[] = [];
    for await (const event of session.send(TASK)) seen.push(event);

    expect(seen.filter((event) => event.type === "error")).toEqual([]);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", turn: TURNS - 1, final: true });
    expect(seen.filter((event) => event.type === "error")).toEqual([]);
    const requests = model.requests().filter((request) => request.path === "/v1/chat/completions");
    expect(requests).toHaveLength(TURNS);
    const fixed = estimateTools(chatTools(tools)) + 3;
    for (const request of requests) {
      const messages = request.chat?.messages ?? [];
      expect(request.status).toBe(200);
      expect(orphans(messages)).toEqual([]);
      const estimated = fixed + messages.reduce((sum, message) => sum + estimateMessage(message as never), 0);
      expect(estimated).toBeLessThanOrEqual(WINDOW - answerReserve(WINDOW));
    }
    // The model's own count (the scripted model: 4 characters a token) stays under the window too.
    const usage = seen.flatMap((event) => (event.type === "turn_end" ? [event.usage.inputTokens] : []));
    expect(Math.max(...usage)).toBeLessThanOrEqual(WINDOW);
    // Each call ran once: (turn, position) never repeats.
    const keys = invoked.map((call) => `${call.turn}:${call.position}`);
    expect(new Set(keys).size).toBe(keys.length);
    const compactions = seen.filter((event) => event.type === "compaction");
    expect(compactions.length).toBeGreaterThan(10);
    expect(compactions.every((event) => event.tokensAfter <= WINDOW)).toBe(true);
    const last = requests.at(-1)?.chat?.messages ?? [];
    expect(String(last[1]?.content)).toContain(SUMMARY_HEADER);
    expect(String(last[1]?.content)).toContain(TASK);
  }, 60_000);
});
