import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defaultScriptsDir, type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import {
  AgentEvent,
  type ApprovalWait,
  type HistoryEntry,
  type InvokeAnswer,
  InvokeCall,
} from "@gatehouse/operator/agent-protocol";
import Fastify, { type FastifyInstance } from "fastify";
import OpenAI from "openai";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createBuiltinRuntime } from "./engines/builtin/engine.ts";
import { type AgentSessionView, createGatewayClient } from "./gateway-client.ts";
import { gatewayToolExecutor } from "./gateway-tools.ts";
import { EXIT_FINAL, runAgent } from "./run-agent.ts";

/**
 * A small real gateway speaking the agent protocol: canned results for read and draft, `pending_approval`
 * for publish followed by one `done: false` wait and then the approved result. It records transcript
 * entries as the real gateway does (`operator/src/gateway/server.ts`: tool_call, tool_result with
 * callId but no position, approval_outcome), the agent's events, and the bearer tokens.
 */
interface TestGateway {
  url: string;
  invokes: InvokeCall[];
  events: AgentEvent[];
  tokens: string[];
  waits: number;
  history: HistoryEntry[];
  close(): Promise<void>;
}

const planV1 = { id: "plan-2026-w49", week: "2026-W49", version: 1, status: "published", lines: [] };
const draftV7 = {
  id: "plan-2026-w49",
  week: "2026-W49",
  version: 7,
  status: "draft",
  basedOnVersion: 1,
  lines: [],
};

interface GatewayOptions {
  model: string;
  tokenFile: string;
  history?: HistoryEntry[];
  /** Publish answers `succeeded` at once, as when its Approval was decided while no pod ran. */
  publishApproved?: boolean;
  /** Writes a new token into the file after the first invoke; the old one stops being valid. */
  rotateToken?: boolean;
  /** `limits.holdPodForSeconds` of the session view (absent: not sent). */
  holdPodForSeconds?: number;
  /** The publish Approval stays Pending whatever the agent waits. */
  neverDecided?: boolean;
}

async function startTestGateway(options: GatewayOptions): Promise<TestGateway> {
  const app: FastifyInstance = Fastify({ logger: false });
  const state: TestGateway = {
    url: "",
    close: () => app.close(),
    invokes: [],
    events: [],
    tokens: [],
    waits: 0,
    history: [...(options.history ?? [])],
  };
  let valid = new Set(["token-1"]);
  let publishArguments = "";
  const record = (source: HistoryEntry["source"], kind: string, payload: Record<string, unknown>) =>
    state.history.push({ seq: state.history.length + 1, source, kind, payload });

  app.addHook("onRequest", async (request, reply) => {
    const token = (request.headers.authorization ?? "").replace(/^Bearer /, "");
    state.tokens.push(token);
    if (!valid.has(token))
      return reply.code(401).send({ kind: "unauthenticated", message: "token not valid" });
  });

  app.get(
    "/v1/session",
    async (): Promise<AgentSessionView> => ({
      namespace: "plant-a",
      name: "push-plan",
      uid: "uid-1",
      subject: { user: "alice", groups: ["planners"] },
      instructions: "You schedule production with the APS tools.",
      messages: [{ text: "Push next week's production plan back by one day." }],
      model: { name: options.model, contextWindow: 128_000 },
      tools: ["aps.schedule.read", "aps.schedule.draft", "aps.schedule.publish"].map((id) => ({
        name: id.replaceAll(".", "_"),
        description: id,
        parameters: { type: "object" },
      })),
      history: state.history,
      historyComplete: true,
      limits: {
        maxTurns: 10,
        maxToolCalls: 10,
        holdPodForSeconds: options.holdPodForSeconds ?? 3600,
      },
    }),
  );

  app.post("/v1/session/events", async (request) => {
    const event = AgentEvent.parse(request.body);
    state.events.push(event);
    record("agent", event.kind, event);
    return { accepted: true };
  });

  const answered = (call: InvokeCall, answer: InvokeAnswer): InvokeAnswer => {
    const extra = answer.approval ? { approval: answer.approval.name } : {};
    const { status, content } = answer;
    record("core", "tool_result", { turn: call.turn, callId: call.callId, status, content, ...extra });
    return answer;
  };
  // Like Core's answers: the provider's result wrapped as {result, evidence}.
  const succeeded = (call: InvokeCall, result: unknown): InvokeAnswer =>
    answered(call, {
      status: "succeeded",
      content: JSON.stringify({ result }),
      executionId: `exec-${call.turn}`,
    });

  app.post("/v1/invoke", async (request): Promise<InvokeAnswer> => {
    const call = InvokeCall.parse(request.body);
    state.invokes.push(call);
    record("agent", "tool_call", { ...call });
    if (options.rotateToken && state.invokes.length === 1) {
      await writeFile(options.tokenFile, "token-2\n");
      valid = new Set(["token-2"]);
    }
    if (call.tool === "aps_schedule_read") return succeeded(call, planV1);
    if (call.tool === "aps_schedule_draft") return succeeded(call, draftV7);
    publishArguments = call.arguments;
    const published = { ...JSON.parse(call.arguments), status: "published", publicationId: "pub-1" };
    if (options.publishApproved) return succeeded(call, published);
    return answered(call, {
      status: "pending_approval",
      content: "waiting for approval apr-1",
      approval: { name: "apr-1" },
    });
  });

  app.get("/v1/approvals/:name/wait", async (request): Promise<ApprovalWait> => {
    state.waits += 1;
    const name = (request.params as { name: string }).name;
    if (state.waits === 1 || options.neverDecided) return { name, phase: "Pending", done: false };
    const result = { ...JSON.parse(publishArguments), status: "published", publicationId: "pub-1" };
    const content = JSON.stringify({ result, evidence: { system: "aps", reference: "pub-1" } });
    record("core", "approval_outcome", {
      approval: name,
      phase: "Succeeded",
      status: "succeeded",
      content,
    });
    return { name, phase: "Succeeded", done: true, answer: { status: "succeeded", content } };
  });

  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  state.url = `http://127.0.0.1:${port}`;
  return state;
}

let model: ScriptedModel;
let dir: string;
let tokenFile: string;
let gateway: TestGateway | undefined;

beforeAll(async () => {
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: defaultScriptsDir });
});
afterAll(async () => {
  await model.close();
});
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "agent-"));
  tokenFile = path.join(dir, "token");
  await writeFile(tokenFile, "token-1\n");
});
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  await rm(dir, { recursive: true, force: true });
});

function run(gatewayUrl: string, modelUrl = model.url) {
  const logger = pino({ level: "silent" });
  const client = createGatewayClient({ baseUrl: gatewayUrl, tokenFile, backoffMs: 10 });
  const openai = new OpenAI({ baseURL: modelUrl, apiKey: "unused", maxRetries: 2 });
  return runAgent({
    gateway: client,
    logger,
    signal: new AbortController().signal,
    createRuntime: (session) =>
      createBuiltinRuntime({
        client: openai,
        model: session.model.name,
        tools: gatewayToolExecutor(client, { waitSeconds: 1, minPollIntervalMs: 10 }),
        maxTurns: session.limits.maxTurns,
        maxToolCalls: session.limits.maxToolCalls,
        logger,
      }),
  });
}

/** Runs the agent and expects exit 0; on failure the assertion shows the error events it posted. */
async function runToCompletion(target: TestGateway) {
  const code = await run(target.url);
  expect({ code, errors: target.events.filter((event) => event.kind === "error") }).toEqual({
    code: 0,
    errors: [],
  });
}

describe("agent runtime with the builtin engine", () => {
  it("plays the reference story through the gateway, waits for the approval and posts the final answer", async () => {
    gateway = await startTestGateway({ model: "scripted/reference-story", tokenFile });
    await runToCompletion(gateway);

    expect(gateway.invokes.map((call) => [call.turn, call.position, call.tool])).toEqual([
      [0, 0, "aps_schedule_read"],
      [1, 0, "aps_schedule_draft"],
      [2, 0, "aps_schedule_publish"],
    ]);
    expect(JSON.parse(gateway.invokes[2]!.arguments)).toEqual({ planId: "plan-2026-w49", version: 7 });
    expect(gateway.waits).toBe(2);
    const final = gateway.events.find((event) => event.kind === "final_answer");
    expect(final).toMatchObject({ kind: "final_answer", turn: 3 });
    expect(final?.text).toContain("published as version 7");
    expect(final?.usage?.inputTokens).toBeGreaterThan(0);
    expect(
      gateway.events.filter((event) => event.kind === "assistant_text").map((event) => event.turn),
    ).toEqual([0, 2]);
  });

  it("re-reads the token file on every request", async () => {
    gateway = await startTestGateway({ model: "scripted/reference-story", tokenFile, rotateToken: true });
    await runToCompletion(gateway);
    expect(gateway.tokens.slice(0, 2)).toEqual(["token-1", "token-1"]);
    expect(gateway.tokens.at(-1)).toBe("token-2");
    expect(gateway.events.map((event) => event.kind)).toContain("final_answer");
  });

  it("resumes from the stored history, re-invoking the publish that had no result yet", async () => {
    const first = await startTestGateway({ model: "scripted/reference-story", tokenFile });
    // The first pod is released while it waits: take its transcript up to the pending publish.
    const released = new AbortController();
    const client = createGatewayClient({ baseUrl: first.url, tokenFile });
    const openai = new OpenAI({ baseURL: model.url, apiKey: "unused" });
    const logger = pino({ level: "silent" });
    const running = runAgent({
      gateway: client,
      logger,
      signal: released.signal,
      createRuntime: (session) =>
        createBuiltinRuntime({
          client: openai,
          model: session.model.name,
          tools: gatewayToolExecutor(client, { waitSeconds: 1, minPollIntervalMs: 60_000 }),
          maxTurns: 10,
          maxToolCalls: 10,
          logger,
        }),
    });
    await expect.poll(() => first.waits).toBe(1);
    released.abort();
    expect(await running).toBe(0);
    const history = [...first.history];
    await first.close();
    expect(history.filter((entry) => entry.kind === "final_answer")).toHaveLength(0);
    expect(
      history.filter((entry) => entry.kind === "assistant_text").map((entry) => entry.payload.turn),
    ).toEqual([0, 2]);

    const requestsBefore = model.requests().length;
    gateway = await startTestGateway({
      model: "scripted/reference-story",
      tokenFile,
      history,
      publishApproved: true,
    });
    await runToCompletion(gateway);
    expect(gateway.invokes.map((call) => [call.turn, call.position, call.tool])).toEqual([
      [2, 0, "aps_schedule_publish"],
    ]);
    expect(
      model
        .requests()
        .slice(requestsBefore)
        .map((request) => request.step),
    ).toEqual([3]);
    expect(gateway.events.find((event) => event.kind === "final_answer")?.text).toContain(
      "published as version 7",
    );
  });

  it("is released after holdPodForSeconds while the approval is undecided: exit 0, only `released` posted after the proposal", async () => {
    gateway = await startTestGateway({
      model: "scripted/reference-story",
      tokenFile,
      holdPodForSeconds: 1,
      neverDecided: true,
    });
    expect(await run(gateway.url)).toBe(0);
    expect(gateway.invokes.map((call) => call.tool).at(-1)).toBe("aps_schedule_publish");
    expect(gateway.waits).toBeGreaterThanOrEqual(1);
    expect(gateway.events.map((event) => event.kind)).toEqual([
      "assistant_text",
      "assistant_text",
      "released",
    ]);
  });

  it("waits for a decision without end when the session view gives no holdPodForSeconds", async () => {
    gateway = await startTestGateway({ model: "scripted/reference-story", tokenFile });
    await runToCompletion(gateway);
    expect(gateway.waits).toBe(2);
  });

  it("posts an error event and exits 2 (final, no new pod) when the model endpoint has no such model", async () => {
    gateway = await startTestGateway({ model: "scripted/no-such-script", tokenFile });
    expect(await run(gateway.url)).toBe(2);
    expect(gateway.events).toEqual([
      expect.objectContaining({ kind: "error", text: expect.stringContaining("not_found") }),
    ]);
  });
});

describe("a model endpoint that says a retry cannot succeed", () => {
  it("ends the run final: one request, an error event naming it, exit 2 so the operator starts no new pod", async () => {
    // The scripted model answers a script it cannot load with HTTP 500 and `x-should-retry: false`
    // (test/fakes/src/model/server.ts): deterministic, as the fresh user's endpoint was.
    const scriptsDir = path.join(dir, "scripts");
    await mkdir(scriptsDir);
    await writeFile(path.join(scriptsDir, "broken.yaml"), "steps: [{ wait: { calls: [] } }]\n");
    const broken = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir });
    try {
      gateway = await startTestGateway({ model: "scripted/broken", tokenFile });
      expect(await run(gateway.url, broken.url)).toBe(EXIT_FINAL);
      const requests = broken.requests();
      expect(requests.map((r) => [r.status, r.responseHeaders["x-should-retry"]])).toEqual([[500, "false"]]);
      expect(gateway.events).toEqual([
        expect.objectContaining({ kind: "error", text: expect.stringContaining("x-should-retry: false") }),
      ]);
    } finally {
      await broken.close();
    }
  });
});

describe("agent process", () => {
  it("runs main.ts with the token under LOCAL_NODE_ROOT, exits 0 and logs neither token nor arguments", async () => {
    const root = path.join(dir, "node-root");
    const mounted = "/var/run/secrets/gatehouse/token";
    await mkdir(path.join(root, path.dirname(mounted)), { recursive: true });
    await writeFile(path.join(root, mounted), "token-1\n");
    gateway = await startTestGateway({
      model: "scripted/reference-story",
      tokenFile: path.join(root, mounted),
    });
    const main = fileURLToPath(new URL("./main.ts", import.meta.url));
    const child = spawn(process.execPath, [main], {
      env: {
        PATH: process.env.PATH,
        GATEHOUSE_GATEWAY_URL: gateway.url,
        LOCAL_NODE_ROOT: root,
        MODEL_BASE_URL: model.url,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (data) => {
      stdout += data;
    });
    child.stderr.on("data", (data) => {
      stderr += data;
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.msg)).toContain("final answer posted");
    expect(stdout).not.toContain("token-1");
    expect(stdout).not.toContain("plan-2026-w49");
    expect(gateway.events.find((event) => event.kind === "final_answer")?.text).toContain("version 7");
  }, 20_000);
});
