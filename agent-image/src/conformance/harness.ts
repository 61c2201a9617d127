/**
 * What every case uses: the scripted model (a real HTTP server, test/fakes/src/model/) with scripts
 * written per case into a folder of the suite's own, a session of the engine under test over a
 * `Platform` and an in-memory executor, a run that can stop where a pod would be killed, and the
 * checks that hold for every run (event order) and every model request (a valid conversation).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  chatMessagesOf,
  type RecordedRequest,
  type ScriptedModel,
  startScriptedModel,
} from "@gatehouse/fakes/model";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import type { RuntimeEvent, RuntimeSession, RuntimeTool, TranscriptItem } from "../runtime.ts";
import type { EngineEntry, EngineInstance } from "./engines.ts";
import { createPlatform, type Platform } from "./platform.ts";
import { type InMemoryExecutor, inMemoryExecutor, type Plans } from "./tool-executor.ts";

/** The tools every session offers. */
export const tools: RuntimeTool[] = ["plan_read", "plan_draft", "plan_publish"].map((name) => ({
  name,
  description: `${name.replace("_", " ")} of the production plan`,
  parameters: { type: "object", properties: { planId: { type: "string" } } },
}));

export const SYSTEM = "You schedule production.";

/** One case's world: its platform, executor and sessions of the engine under test. */
export interface World {
  platform: Platform;
  executor: InMemoryExecutor;
  /** A new session (a new pod) on `history`; default: what the platform would replay. */
  session(history?: TranscriptItem[]): RuntimeSession;
}

export interface Harness {
  engine: EngineEntry;
  model(): ScriptedModel;
  /** Writes a script of `steps` (script.ts's format) and returns a world that plays it. */
  world(
    steps: unknown[],
    options?: { plans?: Plans; messages?: string[]; unreachableModel?: boolean },
  ): World;
  /** Chat requests the model received since the case began. */
  requests(): RecordedRequest[];
  /** Registers a case, as `it.fails` when the engine lists it as a known failure. */
  it(title: string, body: () => Promise<void>, timeoutMs?: number): void;
}

/** The model requests of either wire an engine speaks: Chat Completions or Responses. */
const MODEL_PATHS = new Set(["/v1/chat/completions", "/v1/responses"]);

/** Where nothing listens: port 9 (discard) refuses connections. */
const UNREACHABLE = "http://127.0.0.1:9/v1";

/** Starts one scripted model and the engine (in beforeAll), and resets the model before each case. */
export function harness(engine: EngineEntry): Harness {
  let model: ScriptedModel | undefined;
  let instances: { scripted: EngineInstance; unreachable: EngineInstance } | undefined;
  let dir = "";
  let scripts = 0;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gatehouse-conformance-"));
    model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: dir });
    instances = { scripted: await engine.start(model.url), unreachable: await engine.start(UNREACHABLE) };
  }, 60_000);
  afterAll(async () => {
    await instances?.scripted.close();
    await instances?.unreachable.close();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    model?.clearRequests();
    model?.resetFaults();
  });
  const running = () => {
    if (!model) throw new Error("the scripted model is not started");
    return model;
  };
  return {
    engine,
    model: running,
    world(steps, options = {}) {
      scripts += 1;
      const name = `${engine.name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}-${scripts}`;
      // JSON is YAML: the script's strings are written exactly, whatever they hold.
      writeFileSync(join(dir, `${name}.yaml`), JSON.stringify({ steps }));
      const platform = createPlatform(options.messages ?? ["Push the plan back by one day."]);
      const executor = inMemoryExecutor(platform, options.plans);
      if (!instances) throw new Error("the engine is not started");
      const instance = options.unreachableModel ? instances.unreachable : instances.scripted;
      const runtime = instance.create({ model: `scripted/${name}`, tools: executor });
      return {
        platform,
        executor,
        session(history = platform.resume().history) {
          return runtime.createSession({
            subject: { user: "alice", groups: [] },
            system: SYSTEM,
            tools,
            history,
          });
        },
      };
    },
    requests: () =>
      running()
        .requests()
        .filter((request) => MODEL_PATHS.has(request.path)),
    it(title, body, timeoutMs = 10_000) {
      const why = engine.knownFailures?.[title];
      if (why !== undefined) it.fails(`${title} (known failure: ${why})`, body, timeoutMs);
      else it(title, body, timeoutMs);
    },
  };
}

/**
 * Runs `send(text)` on `session`, feeding every event to the platform (as the pod reports it), until
 * the run ends or `stop(event)` says the pod dies right after that event; checks the event order.
 */
export async function run(
  world: World,
  session: RuntimeSession,
  text: string | undefined,
  options: {
    stop?: (event: RuntimeEvent) => boolean;
    signal?: AbortSignal;
    onEvent?: (event: RuntimeEvent) => void;
  } = {},
): Promise<RuntimeEvent[]> {
  const events: RuntimeEvent[] = [];
  for await (const event of session.send(text, options.signal ? { signal: options.signal } : {})) {
    events.push(event);
    world.platform.observe(event);
    options.onEvent?.(event);
    if (options.stop?.(event)) break;
  }
  expectEventOrder(events);
  return events;
}

/** Runs what a new pod would: a session from the platform's transcript, sending what it would send. */
export async function resume(world: World): Promise<RuntimeEvent[]> {
  const plan = world.platform.resume();
  expect(plan.done).toBe(false);
  return run(world, world.session(plan.history), plan.next);
}

/**
 * The order every run keeps: turns in increasing order; within a turn, text, then each call's
 * `tool_call` followed (at once, or after the turn's other calls were proposed) by its
 * `approval_required` and/or one `tool_result`, then `turn_end` naming how many calls it made; an
 * `error` only last; nothing after a final `turn_end`.
 */
export function expectEventOrder(events: RuntimeEvent[]): void {
  let turn = -1;
  let open = new Map<string, string>();
  let calls = 0;
  let ended = false;
  events.forEach((event, index) => {
    const where = `event ${index} (${event.type})`;
    expect(ended, `${where} comes after the run ended`).toBe(false);
    if (event.type === "error") {
      expect(index, `${where}: an error is the last event`).toBe(events.length - 1);
      return;
    }
    if (event.turn !== turn) {
      expect(event.turn, `${where}: turns only go forward`).toBeGreaterThan(turn);
      expect(open.size, `${where}: the previous turn left calls without a result`).toBe(0);
      turn = event.turn;
      calls = 0;
      open = new Map();
    }
    const key = "position" in event ? `${event.position}:${event.callId}` : "";
    if (event.type === "text") expect(calls, `${where}: text after the turn's calls`).toBe(0);
    if (event.type === "tool_call") {
      expect(open.has(key), `${where}: call ${key} proposed twice`).toBe(false);
      open.set(key, "proposed");
      calls += 1;
    }
    if (event.type === "approval_required") {
      expect(open.get(key), `${where}: approval of a call not proposed`).toBe("proposed");
      open.set(key, "awaiting");
    }
    if (event.type === "tool_result") {
      expect(open.has(key), `${where}: result of a call not proposed`).toBe(true);
      open.delete(key);
    }
    if (event.type === "turn_end") {
      expect(open.size, `${where}: turn ${turn} ended with calls without a result`).toBe(0);
      expect(event.toolCalls, `${where}: toolCalls`).toBeGreaterThanOrEqual(calls);
      expect(event.final, `${where}: final is "no calls"`).toBe(event.toolCalls === 0);
      ended = event.final;
    }
  });
}

/**
 * A recorded request's conversation as Chat Completions messages, whichever wire it came on. A
 * Responses request's instructions and developer messages are its system prompt.
 */
function messagesOf(request: RecordedRequest): ReturnType<typeof chatMessagesOf> {
  if (request.chat) return request.chat.messages;
  if (!request.responses) return [];
  return chatMessagesOf(request.responses).map((message) =>
    message.role === "developer" ? { ...message, role: "system" } : message,
  );
}

/** An assistant message's calls and the tool messages of a recorded request, in order. */
export function conversationOf(request: RecordedRequest) {
  const messages = messagesOf(request);
  return {
    messages,
    calls: messages.flatMap((m) =>
      m.role === "assistant" ? (m.tool_calls ?? []).map((c) => ({ id: c.id, ...c.function })) : [],
    ),
    results: messages.flatMap((m) =>
      m.role === "tool"
        ? [{ id: m.tool_call_id, content: typeof m.content === "string" ? m.content : "" }]
        : [],
    ),
    users: messages.flatMap((m) => (m.role === "user" ? [m.content] : [])),
  };
}

/** Every tool call of the request is answered exactly once, right after its assistant message. */
export function expectValidConversation(request: RecordedRequest): void {
  const messages = messagesOf(request);
  messages.forEach((message, index) => {
    if (message.role !== "assistant" || !message.tool_calls?.length) return;
    const ids = message.tool_calls.map((call) => call.id);
    const answers = messages
      .slice(index + 1, index + 1 + ids.length)
      .map((m) => (m.role === "tool" ? m.tool_call_id : undefined));
    expect([...answers].sort(), `message ${index}'s calls are answered once, next`).toEqual([...ids].sort());
  });
}
