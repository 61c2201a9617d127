/**
 * The pi engine's long session, as `../builtin/long-session.test.ts` plays the builtin's: the real Pi
 * binary against the scripted model (real HTTP, streamed) with a context window of 4,000 tokens,
 * parallel calls, calls that wait for an Approval, results far larger than the window. The session
 * completes; every request fits the window by the model's own count and by the estimate; no request
 * holds a tool result without its call or a call without its result; each call runs once; the
 * compactions are reported, and the summary keeps the task.
 *
 * 150 turns rather than 500: Pi re-sends its whole in-memory conversation to the extension on every
 * request, and both Pi and the extension walk it (the extension's estimate and digest), so a turn
 * costs time linear in the session's length; 150 turns compact more than ten times at this window.
 */
import type { RecordedRequest } from "@gatehouse/fakes/model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeEvent, ToolCallRequest, ToolExecutor, ToolInvocation } from "../../runtime.ts";
import { estimateMessage, estimateTools, SUMMARY_HEADER } from "../builtin/compaction.ts";
import { answerReserve } from "../builtin/context.ts";
import { collect, piWorld } from "./test-support.ts";

const TURNS = 150;
const WINDOW = 4_000;
const TASK = "Walk the plan week by week and report when every week is read.";

const world = piWorld({ beforeAll, afterAll }, { contextWindow: WINDOW });

const tools = ["aps_schedule_read", "aps_schedule_draft", "aps_schedule_publish"].map((name) => ({
  name,
  description: `${name}: one week of the production plan`,
  parameters: { type: "object", properties: { week: { type: "integer" } } },
}));

/** Each step calls a read, a read and a draft in parallel, or a publish, unless every week is read. */
function steps(count: number): unknown[] {
  const step = (call: unknown[]) => ({
    choose: [
      { when: { lastToolContains: "EVERY WEEK READ" }, say: "Every week is read." },
      { say: "Reading on.", call },
    ],
  });
  const read = step([{ tool: "aps_schedule_read", arguments: { week: 1 } }]);
  const parallel = step([
    { tool: "aps_schedule_read", arguments: { week: 2 } },
    { tool: "aps_schedule_draft", arguments: { week: 2 } },
  ]);
  const publish = step([{ tool: "aps_schedule_publish", arguments: { week: 3 } }]);
  return Array.from({ length: count }, (_, index) =>
    index % 7 === 6 ? publish : index % 3 === 0 ? parallel : read,
  );
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

/** Problems of one request's messages, checked apart from the planner's own check. */
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

describe(`a ${TURNS}-turn pi session with a small context window`, () => {
  it("completes, each request fits the window, and no call is ever apart from its result", async () => {
    const { tools: executorTools, invoked } = executor();
    const model = world.script(steps(60));
    const runtime = world.runtime(model, executorTools, {
      maxTurns: TURNS,
      maxToolCalls: 10 * TURNS,
    });
    const session = runtime.createSession({
      subject: { user: "alice", groups: [] },
      system: "You check production plans.",
      tools,
      history: [],
    });
    const seen: RuntimeEvent[] = await collect(session.send(TASK));

    expect(seen.filter((event) => event.type === "error")).toEqual([]);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", turn: TURNS - 1, final: true });
    const requests = world.requests();
    expect(requests).toHaveLength(TURNS);
    for (const request of requests) {
      const messages = request.chat?.messages ?? [];
      expect(request.status).toBe(200);
      expect(orphans(messages)).toEqual([]);
      const fixed = estimateTools(((request.body as { tools?: never[] }).tools ?? []) as never) + 3;
      const estimated = fixed + messages.reduce((sum, message) => sum + estimateMessage(message as never), 0);
      expect(estimated).toBeLessThanOrEqual(WINDOW - answerReserve(WINDOW));
    }
    // The model's own count (the scripted model: 4 characters a token) stays under the window too.
    const usage = seen.flatMap((event) => (event.type === "turn_end" ? [event.usage.inputTokens] : []));
    expect(Math.max(...usage)).toBeLessThanOrEqual(WINDOW);
    const keys = invoked.map((call) => `${call.turn}:${call.position}`);
    expect(new Set(keys).size).toBe(keys.length);
    const compactions = seen.filter((event) => event.type === "compaction");
    expect(compactions.length).toBeGreaterThan(10);
    expect(compactions.every((event) => event.tokensAfter <= WINDOW && event.window === WINDOW)).toBe(true);
    // Each compaction precedes its turn's events (the conformance order, a compaction included).
    for (const compaction of compactions) {
      const at = seen.indexOf(compaction);
      expect(seen.slice(0, at).some((event) => "turn" in event && event.turn >= compaction.turn)).toBe(false);
    }
    const last = requests.at(-1)?.chat?.messages ?? [];
    expect(String(last[1]?.content)).toContain(SUMMARY_HEADER);
    expect(String(last[1]?.content)).toContain(TASK);
  }, 60_000);
});
