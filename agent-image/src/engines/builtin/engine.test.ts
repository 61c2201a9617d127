import {
  defaultScriptsDir,
  type RecordedRequest,
  type ScriptedModel,
  startScriptedModel,
} from "@gatehouse/fakes/model";
import { BUDGET_EXCEEDED } from "@gatehouse/operator/agent-protocol";
import Fastify from "fastify";
import OpenAI from "openai";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type {
  RuntimeEvent,
  ToolAnswer,
  ToolCallRequest,
  ToolExecutor,
  ToolInvocation,
  TranscriptItem,
} from "../../runtime.ts";
import { type BuiltinRuntimeOptions, createBuiltinRuntime } from "./engine.ts";
import { defaultRetryPolicy } from "./retry.ts";

/**
 * The builtin engine against the scripted model (in process, real HTTP) with an in-memory executor
 * standing in for the gateway: what it sends the model, what it hands the executor, and how it stops.
 */

const tools = ["aps_schedule_read", "aps_schedule_draft", "aps_schedule_publish"].map((name) => ({
  name,
  description: name,
  parameters: { type: "object" },
}));

/** An executor that answers like Core: invalid_arguments for non-JSON, pending_approval for `pending` tools. */
function fakeExecutor(options: { pending?: string[]; decide?: (call: ToolCallRequest) => ToolAnswer } = {}) {
  const invoked: ToolCallRequest[] = [];
  const waits: string[] = [];
  const executor: ToolExecutor = {
    async invoke(call): Promise<ToolInvocation> {
      invoked.push(call);
      try {
        JSON.parse(call.arguments);
      } catch {
        return { kind: "done", status: "invalid_arguments", content: "Invalid arguments: not JSON." };
      }
      const answer = options.decide?.(call) ?? {
        status: "succeeded",
        content: JSON.stringify({ result: { id: "plan-2026-w49", version: 7, call: call.callId } }),
      };
      if (options.pending?.includes(call.name)) {
        const approval = `apr-${call.turn}-${call.position}`;
        return {
          kind: "pending_approval",
          approval,
          wait: async () => {
            waits.push(approval);
            return answer;
          },
        };
      }
      return { kind: "done", ...answer };
    },
  };
  return { executor, invoked, waits };
}

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: defaultScriptsDir });
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => {
  model.clearRequests();
  model.resetFaults();
});

function engine(script: string, executor: ToolExecutor, overrides: Partial<BuiltinRuntimeOptions> = {}) {
  return createBuiltinRuntime({
    client: new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 0 }),
    model: `scripted/${script}`,
    tools: executor,
    maxTurns: 10,
    maxToolCalls: 10,
    retry: { ...defaultRetryPolicy, baseDelayMs: 10 },
    logger: pino({ level: "silent" }),
    ...overrides,
  });
}

async function events(
  script: string,
  executor: ToolExecutor,
  overrides: Partial<BuiltinRuntimeOptions> = {},
  history: TranscriptItem[] = [],
): Promise<RuntimeEvent[]> {
  const session = engine(script, executor, overrides).createSession({
    subject: { user: "alice", groups: [] },
    system: "You schedule production.",
    tools,
    history,
  });
  const seen: RuntimeEvent[] = [];
  for await (const event of session.send(history.length === 0 ? "Push the plan back by one day." : undefined))
    seen.push(event);
  return seen;
}

function chatRequests(): RecordedRequest[] {
  return model.requests().filter((request) => request.path === "/v1/chat/completions");
}

/** Tool call ids of the conversation's assistant messages, and the ids its tool messages answer. */
function callsAndAnswers(request: RecordedRequest) {
  const messages = request.chat?.messages ?? [];
  return {
    calls: messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [])),
    answers: messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id),
    arguments: messages.flatMap((m) =>
      m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.function.arguments) : [],
    ),
  };
}

describe("the builtin engine", () => {
  it("offers the session's tools and merges interleaved deltas into two well-formed calls", async () => {
    const { executor, invoked } = fakeExecutor();
    const seen = await events("fault-interleaved-deltas", executor);
    expect(
      invoked.map((call) => [call.position, call.callId, call.name, JSON.parse(call.arguments)]),
    ).toEqual([
      [0, "call_w49", "aps_schedule_read", { planId: "plan-2026-w49" }],
      [1, "call_w50", "aps_schedule_read", { planId: "plan-2026-w50" }],
    ]);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", final: true });
    const first = chatRequests()[0]!;
    expect(first.chat?.tools?.map((tool) => tool.function.name)).toEqual(tools.map((tool) => tool.name));
  });

  it("sends a cut-off call to the executor and replays it with {} so the next request is valid", async () => {
    const { executor, invoked } = fakeExecutor();
    const seen = await events("fault-truncated-arguments", executor);
    expect(invoked[0]).toMatchObject({ callId: "call_cut", arguments: '{"planId":"pl' });
    expect(seen).toContainEqual(
      expect.objectContaining({ type: "tool_result", callId: "call_cut", status: "invalid_arguments" }),
    );
    const requests = chatRequests();
    expect(requests.map((request) => request.status)).toEqual([200, 200, 200]);
    const second = callsAndAnswers(requests[1]!);
    expect(second.calls).toEqual(["call_cut"]);
    expect(second.answers).toEqual(["call_cut"]);
    expect(second.arguments).toEqual(["{}"]);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", final: true });
  });

  it("keeps an id the model reuses across answers: each tool message follows its own call", async () => {
    const { executor, invoked } = fakeExecutor();
    const seen = await events("fault-reused-id", executor);
    expect(invoked.map((call) => [call.turn, call.callId, call.name])).toEqual([
      [0, "call_0", "aps_schedule_read"],
      [1, "call_0", "aps_schedule_draft"],
    ]);
    const last = callsAndAnswers(chatRequests().at(-1)!);
    expect(last.calls).toEqual(["call_0", "call_0"]);
    expect(last.answers).toEqual(["call_0", "call_0"]);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", final: true });
  });

  it("proposes every call of an answer before it waits for the first approval", async () => {
    const order: string[] = [];
    const { executor } = fakeExecutor({ pending: ["aps_schedule_read"] });
    const tracking: ToolExecutor = {
      async invoke(call, options) {
        order.push(`invoke ${call.callId}`);
        const invocation = await executor.invoke(call, options);
        if (invocation.kind !== "pending_approval") return invocation;
        return {
          ...invocation,
          wait: async (signal) => {
            order.push(`wait ${call.callId}`);
            return invocation.wait(signal);
          },
        };
      },
    };
    const seen = await events("fault-interleaved-deltas", tracking);
    expect(order).toEqual(["invoke call_w49", "invoke call_w50", "wait call_w49", "wait call_w50"]);
    expect(seen.filter((event) => event.type === "approval_required")).toHaveLength(2);
    expect(callsAndAnswers(chatRequests().at(-1)!).answers).toEqual(["call_w49", "call_w50"]);
  });

  it("waits as long as Retry-After asks before asking again after a 429", async () => {
    const { executor } = fakeExecutor();
    const seen = await events("fault-rate-limit", executor);
    const [limited, retried] = chatRequests();
    expect(limited?.status).toBe(429);
    expect(limited?.responseHeaders["retry-after"]).toBe("1");
    expect(retried?.status).toBe(200);
    expect(Date.parse(retried!.time) - Date.parse(limited!.time)).toBeGreaterThanOrEqual(1000);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", final: true });
  });

  it("retries a 500 with backoff", async () => {
    const { executor } = fakeExecutor();
    const seen = await events("fault-server-error", executor);
    expect(chatRequests().map((request) => request.status)).toEqual([500, 200, 200]);
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", final: true });
  });

  it("does not retry a 400 and ends with an error naming it", async () => {
    const { executor } = fakeExecutor();
    const seen = await events("runtime-bad-request", executor);
    expect(chatRequests().map((request) => request.status)).toEqual([400]);
    expect(seen.at(-1)).toMatchObject({
      type: "error",
      kind: "invalid_arguments",
      message: expect.stringContaining("400"),
    });
  });

  it("gives up when the endpoint stays unavailable after maxRetries", async () => {
    const { executor } = fakeExecutor();
    const client = new OpenAI({ baseURL: "http://127.0.0.1:9/v1", apiKey: "unused", maxRetries: 0 });
    const seen = await events("answer", executor, {
      client,
      retry: { ...defaultRetryPolicy, maxRetries: 2, baseDelayMs: 1 },
    });
    expect(seen.at(-1)).toMatchObject({
      type: "error",
      kind: "unavailable",
      message: expect.stringContaining("3 attempts"),
    });
  });

  it("ends the run with the model proxy's reason at its token-budget refusal, asking once", async () => {
    const proxy = Fastify({ logger: false });
    let asked = 0;
    const reason = "Token budget exhausted: this session used 1234 of its 1000 tokens (tokenBudget).";
    proxy.post("/v1/chat/completions", async (_request, reply) => {
      asked += 1;
      return reply
        .code(BUDGET_EXCEEDED.status)
        .header("x-should-retry", "false")
        .send({
          error: { message: reason, type: BUDGET_EXCEEDED.type, code: BUDGET_EXCEEDED.code, param: null },
        });
    });
    const origin = await proxy.listen({ host: "127.0.0.1", port: 0 });
    try {
      const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: "unused", maxRetries: 0 });
      const seen = await events("answer", fakeExecutor().executor, { client });
      expect(asked).toBe(1);
      expect(seen.at(-1)).toEqual({ type: "error", kind: "limit_exceeded", message: reason, final: true });
    } finally {
      await proxy.close();
    }
  });

  it("does not retry a 500 marked x-should-retry: false, and ends with a final error naming it", async () => {
    const proxy = Fastify({ logger: false });
    let asked = 0;
    proxy.post("/v1/chat/completions", async (_request, reply) => {
      asked += 1;
      return reply
        .code(500)
        .header("x-should-retry", "false")
        .send({ error: { message: "script is invalid", type: "server_error", code: null, param: null } });
    });
    const origin = await proxy.listen({ host: "127.0.0.1", port: 0 });
    try {
      const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: "unused", maxRetries: 0 });
      const seen = await events("answer", fakeExecutor().executor, { client });
      expect(asked).toBe(1);
      expect(seen.at(-1)).toEqual({
        type: "error",
        kind: "unavailable",
        message: expect.stringContaining("x-should-retry: false"),
        final: true,
      });
    } finally {
      await proxy.close();
    }
  });

  it("ends a run that gave up on an unavailable endpoint with an error that is not final", async () => {
    const { executor } = fakeExecutor();
    const client = new OpenAI({ baseURL: "http://127.0.0.1:9/v1", apiKey: "unused", maxRetries: 0 });
    const seen = await events("answer", executor, {
      client,
      retry: { ...defaultRetryPolicy, maxRetries: 1, baseDelayMs: 1 },
    });
    expect(seen.at(-1)).toMatchObject({ type: "error", kind: "unavailable" });
    expect(seen.at(-1)).not.toHaveProperty("final");
  });

  it("stops at maxTurns, counting the answers of the history", async () => {
    const { executor, invoked } = fakeExecutor();
    const seen = await events("reference-story", executor, { maxTurns: 2 });
    expect(invoked.map((call) => call.name)).toEqual(["aps_schedule_read", "aps_schedule_draft"]);
    expect(seen.at(-1)).toMatchObject({
      type: "error",
      kind: "limit_exceeded",
      message: expect.stringContaining("maxTurns (2)"),
    });
  });

  it("asks without tools once maxToolCalls are used, and stops when the model calls one anyway", async () => {
    const { executor, invoked } = fakeExecutor();
    const seen = await events("reference-story", executor, { maxToolCalls: 1 });
    const requests = chatRequests();
    expect(requests.map((request) => (request.body as { tool_choice?: string }).tool_choice)).toEqual([
      undefined,
      "none",
    ]);
    // The call it made anyway went to the executor (Core refuses it) so the transcript stays whole.
    expect(invoked.map((call) => call.name)).toEqual(["aps_schedule_read", "aps_schedule_draft"]);
    expect(seen.at(-1)).toMatchObject({
      type: "error",
      kind: "limit_exceeded",
      message: expect.stringContaining("maxToolCalls (1)"),
    });
  });

  it("on resume, runs only the call of a turn that has no result and answers the turn's calls in call order", async () => {
    const { executor, invoked } = fakeExecutor();
    const read = (callId: string, planId: string, position: number) => ({
      position,
      callId,
      name: "aps_schedule_read",
      arguments: JSON.stringify({ planId }),
    });
    const history: TranscriptItem[] = [
      { role: "user", text: "Push the plan back by one day." },
      {
        role: "assistant",
        turn: 0,
        text: "",
        calls: [read("call_w49", "plan-2026-w49", 0), read("call_w50", "plan-2026-w50", 1)],
      },
      { role: "tool", turn: 0, position: 1, callId: "call_w50", name: "aps_schedule_read", content: '"w50"' },
    ];
    await events("fault-interleaved-deltas", executor, {}, history);
    expect(invoked.map((call) => call.callId)).toEqual(["call_w49"]);
    const [request] = chatRequests();
    expect(callsAndAnswers(request!).answers).toEqual(["call_w49", "call_w50"]);
  });

  it("on resume, finishes the calls the history left without a result before asking the model", async () => {
    const { executor, invoked } = fakeExecutor();
    const history: TranscriptItem[] = [
      { role: "user", text: "Push the plan back by one day." },
      {
        role: "assistant",
        turn: 0,
        text: "",
        calls: [{ position: 0, callId: "call_cut", name: "aps_schedule_read", arguments: '{"planId":"p' }],
      },
      {
        role: "tool",
        turn: 0,
        position: 0,
        callId: "call_cut",
        name: "aps_schedule_read",
        content: "Invalid.",
      },
      {
        role: "assistant",
        turn: 1,
        text: "",
        calls: [
          {
            position: 0,
            callId: "call_whole",
            name: "aps_schedule_read",
            arguments: '{"planId":"plan-2026-w49"}',
          },
        ],
      },
    ];
    const seen = await events("fault-truncated-arguments", executor, {}, history);
    expect(invoked.map((call) => [call.turn, call.callId])).toEqual([[1, "call_whole"]]);
    const [request] = chatRequests();
    expect(request?.step).toBe(2);
    expect(callsAndAnswers(request!)).toEqual({
      calls: ["call_cut", "call_whole"],
      answers: ["call_cut", "call_whole"],
      arguments: ["{}", '{"planId":"plan-2026-w49"}'],
    });
    expect(seen.at(-1)).toMatchObject({ type: "turn_end", turn: 2, final: true });
  });
});
