import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TranscriptItem } from "../../runtime.ts";
import { collect, memoryExecutor, piWorld, SYSTEM, shape, tools } from "./test-support.ts";

/** The Pi engine with the real Pi binary, the scripted model over HTTP and an in-memory executor. */
const world = piWorld({ beforeAll, afterAll });
beforeEach(() => world.model().clearRequests());

const session = (model: string, executor = memoryExecutor().executor, history: TranscriptItem[] = []) =>
  world
    .runtime(model, executor)
    .createSession({ subject: { user: "alice", groups: [] }, system: SYSTEM, tools, history });

describe("the pi engine", { timeout: 30_000 }, () => {
  it("runs a tool call through the executor with the model's arguments and answers", async () => {
    const model = world.script([
      { say: "Reading.", call: [{ tool: "plan_read", arguments: { planId: "p1" }, id: "read_a" }] },
      { wait: "previous", say: "Plan p1 is read." },
    ]);
    const { executor, invoked } = memoryExecutor();
    const events = await collect(session(model, executor).send("Read plan p1."));
    expect(shape(events)).toEqual([
      "tool_call read_a @0",
      "tool_result read_a @0",
      "turn_end @0",
      "turn_end @1",
    ]);
    expect(
      events
        .filter((e) => e.type === "text")
        .map((e) => e.delta)
        .join(""),
    ).toBe("Reading.Plan p1 is read.");
    expect(events.at(-1)).toMatchObject({
      type: "turn_end",
      turn: 1,
      text: "Plan p1 is read.",
      final: true,
      toolCalls: 0,
    });
    expect(events.find((e) => e.type === "turn_end")).toMatchObject({ toolCalls: 1, final: false });
    expect((events.at(-1) as { usage: { inputTokens: number } }).usage.inputTokens).toBeGreaterThan(0);
    expect(invoked).toEqual([
      { turn: 0, position: 0, callId: "read_a", name: "plan_read", arguments: '{"planId":"p1"}' },
    ]);

    const [first, second] = world.requests();
    expect(first!.model).toBe(model);
    expect(first!.authorization).toBe("Bearer test-key");
    expect(first!.chat?.messages[0]).toEqual({ role: "system", content: SYSTEM });
    expect(first!.chat?.tools?.map((tool) => tool.function.name)).toEqual([
      "plan_read",
      "plan_draft",
      "plan_publish",
    ]);
    expect(second!.chat?.messages.at(-1)).toMatchObject({
      role: "tool",
      tool_call_id: "read_a",
      content: '{"result":"plan_read read_a"}',
    });
  });

  it("sends back what the model said: a whitespace-only text, the user's message once, as a string", async () => {
    const model = world.script([
      { say: "\t", call: [{ tool: "plan_read", id: "r" }] },
      { wait: "previous", say: "Done." },
    ]);
    await collect(session(model).send("Read."));
    const second = world.requests()[1]!.chat!.messages;
    expect(second.filter((message) => message.role === "user")).toEqual([{ role: "user", content: "Read." }]);
    expect(second.find((message) => message.role === "assistant")).toMatchObject({ content: "\t" });
  });

  it("leaves arguments that break the capability's schema to the executor (Core), whose answer the model reads", async () => {
    const strict = tools.map((tool) => ({
      ...tool,
      parameters: { type: "object", properties: { planId: { type: "string" } }, required: ["planId"] },
    }));
    const model = world.script([
      { call: [{ tool: "plan_read", arguments: { plan: "w49" }, id: "r" }] },
      { wait: "previous", say: "Retrying." },
    ]);
    const { executor, invoked } = memoryExecutor({
      decide: () => ({ status: "invalid_arguments", content: "Core: planId is required." }),
    });
    await collect(
      world
        .runtime(model, executor)
        .createSession({ subject: { user: "alice", groups: [] }, system: SYSTEM, tools: strict, history: [] })
        .send("Read."),
    );
    expect(invoked.map((call) => call.arguments)).toEqual(['{"plan":"w49"}']);
    const [first, second] = world.requests();
    expect(first!.chat?.tools?.[0]?.function.parameters).toEqual(strict[0]!.parameters);
    expect(second!.chat?.messages.at(-1)).toMatchObject({
      role: "tool",
      content: "Core: planId is required.",
    });
  });

  it("resumes from the transcript: finishes the calls it left open, then continues without a new user message", async () => {
    const model = world.script([
      {
        call: [
          { tool: "plan_read", id: "r" },
          { tool: "plan_publish", id: "p" },
        ],
      },
      { wait: "previous", say: "Published." },
    ]);
    const history: TranscriptItem[] = [
      { role: "user", text: "Publish it." },
      {
        role: "assistant",
        turn: 0,
        text: "",
        calls: [
          { position: 0, callId: "r", name: "plan_read", arguments: "{not json" },
          { position: 1, callId: "p", name: "plan_publish", arguments: '{ "planId" : "p1" }' },
        ],
      },
      { role: "tool", turn: 0, position: 0, callId: "r", name: "plan_read", content: "read before" },
    ];
    const { executor, invoked } = memoryExecutor();
    const events = await collect(session(model, executor, history).send(undefined));
    expect(shape(events)).toEqual(["tool_call p @0", "tool_result p @0", "turn_end @1"]);
    expect(invoked.map((call) => call.callId)).toEqual(["p"]);
    const [request] = world.requests();
    expect(request!.chat?.messages).toEqual([
      { role: "system", content: SYSTEM },
      { role: "user", content: "Publish it." },
      // Arguments go back as the model wrote them; ones that are not a JSON object as {}, as in builtin.
      expect.objectContaining({
        role: "assistant",
        tool_calls: [
          expect.objectContaining({ id: "r", function: { name: "plan_read", arguments: "{}" } }),
          expect.objectContaining({
            id: "p",
            function: { name: "plan_publish", arguments: '{ "planId" : "p1" }' },
          }),
        ],
      }),
      { role: "tool", tool_call_id: "r", content: "read before" },
      { role: "tool", tool_call_id: "p", content: '{"result":"plan_publish p"}' },
    ]);
  });

  it("proposes every call of an answer before it waits for the first approval", async () => {
    const model = world.script([
      {
        call: [
          { tool: "plan_publish", id: "a" },
          { tool: "plan_read", id: "b" },
          { tool: "plan_publish", id: "c" },
        ],
      },
      { wait: "previous", say: "Done." },
    ]);
    const { executor, waits } = memoryExecutor({ pending: ["plan_publish"] });
    const events = await collect(session(model, executor).send("Go."));
    expect(shape(events)).toEqual([
      "tool_call a @0",
      "approval_required a @0",
      "tool_call b @0",
      "tool_result b @0",
      "tool_call c @0",
      "approval_required c @0",
      "tool_result a @0",
      "tool_result c @0",
      "turn_end @0",
      "turn_end @1",
    ]);
    expect(waits).toEqual(["apr-0-0", "apr-0-2"]);
  });

  it("stops at maxTurns once the turn's calls are answered, without asking the model again", async () => {
    const model = world.script([
      { call: [{ tool: "plan_read", id: "r" }] },
      { wait: "previous", say: "never" },
    ]);
    const runtime = world.runtime(model, memoryExecutor().executor, { maxTurns: 1 });
    const events = await collect(
      runtime
        .createSession({ subject: { user: "alice", groups: [] }, system: SYSTEM, tools, history: [] })
        .send("Go."),
    );
    expect(shape(events)).toEqual(["tool_call r @0", "tool_result r @0", "turn_end @0", "error"]);
    expect(events.at(-1)).toMatchObject({
      kind: "limit_exceeded",
      message: "the session reached maxTurns (1)",
    });
    expect(world.requests()).toHaveLength(1);
  });

  it("asks without tools once maxToolCalls is used up", async () => {
    const model = world.script([
      { call: [{ tool: "plan_read", id: "r" }] },
      { wait: "previous", say: "Enough." },
    ]);
    const runtime = world.runtime(model, memoryExecutor().executor, { maxToolCalls: 1 });
    const events = await collect(
      runtime
        .createSession({ subject: { user: "alice", groups: [] }, system: SYSTEM, tools, history: [] })
        .send("Go."),
    );
    expect(events.at(-1)).toMatchObject({ type: "turn_end", final: true, text: "Enough." });
    expect(world.requests().map((request) => request.chat?.tool_choice)).toEqual([undefined, "none"]);
  });

  it("ends with a model error of the shared kind once the retries are spent", async () => {
    const model = world.script([{ say: "never", faults: [{ kind: "server_error", times: 5, status: 503 }] }]);
    const events = await collect(session(model).send("Hello."));
    expect(events).toEqual([expect.objectContaining({ type: "error", kind: "unavailable" })]);
    expect(world.requests()).toHaveLength(2);
  });

  it("aborts a run waiting for an approval, and the next run of the same host works", async () => {
    const model = world.script([
      { call: [{ tool: "plan_publish", id: "p" }] },
      { wait: "previous", say: "ok" },
    ]);
    const controller = new AbortController();
    const blocked = {
      async invoke() {
        return {
          kind: "pending_approval" as const,
          approval: "apr-x",
          wait: (signal: AbortSignal) =>
            new Promise<never>((_, reject) => {
              if (signal.aborted) reject(signal.reason);
              signal.addEventListener("abort", () => reject(signal.reason));
            }),
        };
      },
    };
    const events = [];
    for await (const event of session(model, blocked).send("Publish.", { signal: controller.signal })) {
      events.push(event);
      if (event.type === "approval_required") controller.abort(new Error("released"));
    }
    expect(shape(events)).toEqual(["tool_call p @0", "approval_required p @0", "error"]);
    expect(events.at(-1)).toMatchObject({ kind: "aborted" });

    const next = world.script([{ say: "Fine." }]);
    const after = await collect(session(next).send("Still there?"));
    expect(after.at(-1)).toMatchObject({ type: "turn_end", text: "Fine.", final: true });
  });

  it("reports Pi's death during a run with how it ended, and starts Pi again for the next run", async () => {
    const model = world.script([
      { call: [{ tool: "plan_publish", id: "p" }] },
      { wait: "previous", say: "ok" },
    ]);
    const host = world.host();
    const killer = {
      async invoke() {
        process.kill(host.pid!, "SIGKILL");
        return {
          kind: "pending_approval" as const,
          approval: "apr-k",
          wait: (signal: AbortSignal) =>
            new Promise<never>((_, reject) => {
              if (signal.aborted) reject(signal.reason);
              signal.addEventListener("abort", () => reject(signal.reason));
            }),
        };
      },
    };
    const starts = host.starts;
    const events = await collect(session(model, killer).send("Publish."));
    expect(events.at(-1)).toMatchObject({
      type: "error",
      kind: "unavailable",
      message: expect.stringMatching(/^pi was killed by SIGKILL/),
    });

    const next = world.script([{ say: "Back." }]);
    const after = await collect(session(next).send("Again?"));
    expect(after.at(-1)).toMatchObject({ type: "turn_end", text: "Back." });
    expect(host.starts).toBeGreaterThan(starts);
  });
});
