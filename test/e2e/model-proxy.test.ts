/**
 * The gateway's model proxy on the real control plane (DESIGN §5, §7). The test is the agent:
 * each session's pod only sleeps (`AGENT_IMAGE=gatehouse/sleeper:dev`); the test mints that pod's token
 * and calls `<gateway>/v1/model/chat/completions` and `/responses` with the openai SDK, the key being the pod's token —
 * the only credential an agent pod has. Behind the gateway is the scripted model, which records every
 * request it gets, so the test sees exactly what the proxy sent: the key from Secret
 * gatehouse-system/gatehouse-model-key, `stream_options.include_usage`, never the pod's token. The
 * metered tokens must show in the session's `status.usage`, and a used-up token budget must stop the
 * session's model requests with the budget named — on both wire APIs, Chat Completions and Responses.
 */

import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatewayClient } from "../../agent-image/src/gateway-client.ts";
import { BUDGET_EXCEEDED, HISTORY_PAGE, isBudgetExceeded } from "../../operator/src/api/agent-protocol.ts";
import { clusterInfo } from "./cluster-info.ts";
import {
  type Agent,
  coreNamespace,
  gatewayRequest,
  getSession,
  SLEEPER_IMAGE,
  startAgent,
} from "./core-agent.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

/** Events an agent may write to its session's transcript in this environment (GATEWAY_LIMITS). */
const INTAKE_EVENTS = 2_600;

/** The model the sleeper sessions ask for (core-agent.ts): a one-message answer. */
const MODEL = "scripted/answer";

let env: Environment;
let namespace: string;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), {
    componentEnv: {
      AGENT_IMAGE: SLEEPER_IMAGE,
      // Low enough for the bound's test to reach with a few posts on top of a stored history.
      GATEWAY_LIMITS: JSON.stringify({ eventsPerSession: INTAKE_EVENTS }),
    },
  });
  namespace = await coreNamespace(env, "model-proxy");
}, 600_000);

afterAll(async () => {
  if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

/** A file holding the agent's token, as the node projects it into the pod. */
async function tokenFileOf(agent: Agent): Promise<string> {
  const file = path.join(await mkdtemp(path.join(tmpdir(), "pod-token-")), "token");
  await writeFile(file, agent.token);
  return file;
}

/** An openai client as the agent pod has one: the gateway's proxy as base URL, its token as the key. */
function clientOf(agent: Agent, maxRetries = 0): OpenAI {
  return new OpenAI({ baseURL: `${env.gatewayUrl}/v1/model`, apiKey: agent.token, maxRetries });
}

/** The scripted model's last recorded request seq, to read only what comes after it. */
function lastSeq(): number {
  return env.model.requests().at(-1)?.seq ?? 0;
}

const question = [{ role: "user" as const, content: "Is the plan fine as it is?" }];

interface SessionUsage {
  status?: { usage?: { inputTokens: number; outputTokens: number } };
}

describe("the model proxy", () => {
  let agent: Agent;
  /** What the model reported per request, summed: what status.usage must show. */
  const reported = { inputTokens: 0, outputTokens: 0 };

  beforeAll(async () => {
    agent = await startAgent(env, namespace, "proxied");
  });

  it("gives the agent pod the proxy as its model endpoint and no key", async () => {
    const pod = await env.kubectl.json<{
      spec: { containers: Array<{ name: string; env?: Array<{ name: string; value?: string }> }> };
    }>("admin", ["get", "pod", agent.session.podName, "-n", namespace]);
    const environment = pod.spec.containers.find((c) => c.name === "agent")?.env ?? [];
    expect(environment.find((e) => e.name === "MODEL_BASE_URL")?.value).toBe(`${env.gatewayUrl}/v1/model`);
    expect(environment.map((e) => e.name).filter((name) => /KEY|SECRET|TOKEN$/.test(name))).toEqual([]);
    expect(JSON.stringify(pod)).not.toContain(env.modelKey);
  });

  it("answers a request sent with only the pod's token, adding the key from the Secret", async () => {
    const since = lastSeq();
    const completion = await clientOf(agent).chat.completions.create({ model: MODEL, messages: question });
    expect(completion.choices[0]?.message.content).toBe("Nothing to change; the plan stands.");
    expect(completion.usage).toBeDefined();
    reported.inputTokens += completion.usage!.prompt_tokens;
    reported.outputTokens += completion.usage!.completion_tokens;

    const [received, ...more] = env.model.requests(since);
    expect(more).toEqual([]);
    expect(received?.path).toBe("/v1/chat/completions");
    expect(received?.authorization).toBe(`Bearer ${env.modelKey}`);
    expect(JSON.stringify(received?.headers)).not.toContain(agent.token);
    expect(received?.body).toEqual({ model: MODEL, messages: question });
  });

  it("streams an answer through, asking the model for its usage", async () => {
    const since = lastSeq();
    // The agent asks for no usage: the proxy asks for it all the same, and the last chunk carries it.
    const stream = await clientOf(agent).chat.completions.create({
      model: MODEL,
      messages: question,
      stream: true,
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Nothing to change; the plan stands.");
    expect(usage).toBeDefined();
    reported.inputTokens += usage!.prompt_tokens;
    reported.outputTokens += usage!.completion_tokens;

    const [received] = env.model.requests(since);
    expect(received?.stream).toBe(true);
    expect(received?.chat?.stream_options).toEqual({ include_usage: true });
    expect(received?.authorization).toBe(`Bearer ${env.modelKey}`);
  });

  it("shows the metered tokens in the session's status.usage", async () => {
    const usage = await eventually("status.usage to show both requests", 60_000, async () => {
      const session = (await getSession(env, namespace, agent.session.name)) as SessionUsage;
      const shown = session.status?.usage;
      return shown?.inputTokens === reported.inputTokens && shown.outputTokens === reported.outputTokens
        ? shown
        : undefined;
    });
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
  });

  it("refuses a model other than the session's, without asking the endpoint", async () => {
    const since = lastSeq();
    const error = await clientOf(agent)
      .chat.completions.create({ model: "scripted/reference-story", messages: question })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("model_not_allowed");
    expect(env.model.requests(since)).toEqual([]);
  });

  it("refuses a token that is not a pod's", async () => {
    const stranger = new OpenAI({
      baseURL: `${env.gatewayUrl}/v1/model`,
      apiKey: env.modelKey,
      maxRetries: 0,
    });
    const since = lastSeq();
    const error = await stranger.chat.completions
      .create({ model: MODEL, messages: question })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(env.model.requests(since)).toEqual([]);
  });
});

describe("the token budget", () => {
  it("stops a session's model requests once its budget is used, naming it, and nothing retries", async () => {
    const agent = await startAgent(env, namespace, "budget", { limits: { tokenBudget: 10 } });
    // The SDK would retry what it may retry: the refusal must not be such a thing.
    const client = clientOf(agent, 3);
    const since = lastSeq();
    const first = await client.chat.completions.create({ model: MODEL, messages: question, stream: true });
    for await (const _chunk of first) {
      // Read to the end: the usage chunk comes last.
    }
    const used = env.model.requests(since);
    expect(used).toHaveLength(1);

    // The first answer's tokens are recorded before its stream ends: the very next request is refused.
    const refusal = (await client.chat.completions
      .create({ model: MODEL, messages: question })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(refusal).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refusal.status).toBe(BUDGET_EXCEEDED.status);
    expect(isBudgetExceeded(refusal)).toBe(true);
    expect(refusal.code).toBe(BUDGET_EXCEEDED.code);
    expect(refusal.message).toMatch(/Token budget exhausted: this session used \d+ of its 10 tokens/);
    expect(refusal.headers?.get("x-should-retry")).toBe("false");
    expect(env.model.requests(since)).toHaveLength(1);

    await eventually("status.usage to show the budget spent", 60_000, async () => {
      const usage = ((await getSession(env, namespace, agent.session.name)) as SessionUsage).status?.usage;
      return usage && usage.inputTokens + usage.outputTokens >= 10 ? usage : undefined;
    });
    const recorded = await env.pool.query<{ payload: { message: string; tokenBudget: number } }>(
      "SELECT payload FROM session_events WHERE session_uid = $1 AND kind = 'budget_exceeded' AND source = 'core'",
      [agent.session.uid],
    );
    expect(recorded.rows).toHaveLength(1);
    expect(recorded.rows[0]?.payload.tokenBudget).toBe(10);
  });
});

describe("the Responses wire", () => {
  const input = [{ role: "user" as const, content: "Is the plan fine as it is?" }];

  it("answers a Responses request with the Secret's key, never the pod's token, streamed or not, and meters both", async () => {
    const agent = await startAgent(env, namespace, "responses");
    const since = lastSeq();
    const answered = await clientOf(agent).responses.create({ model: MODEL, input });
    expect(answered.output_text).toBe("Nothing to change; the plan stands.");
    const stream = clientOf(agent).responses.stream({ model: MODEL, input });
    const streamed = await stream.finalResponse();
    expect(streamed.output_text).toBe("Nothing to change; the plan stands.");

    const received = env.model.requests(since);
    expect(received.map((r) => [r.path, r.stream])).toEqual([
      ["/v1/responses", false],
      ["/v1/responses", true],
    ]);
    for (const request of received) {
      expect(request.authorization).toBe(`Bearer ${env.modelKey}`);
      expect(JSON.stringify(request.headers)).not.toContain(agent.token);
    }
    expect(received[0]?.body).toEqual({ model: MODEL, input });

    const reported = [answered.usage!, streamed.usage!];
    const shown = await eventually("status.usage to show both Responses requests", 60_000, async () => {
      const usage = ((await getSession(env, namespace, agent.session.name)) as SessionUsage).status?.usage;
      return usage?.inputTokens === reported[0]!.input_tokens + reported[1]!.input_tokens &&
        usage.outputTokens === reported[0]!.output_tokens + reported[1]!.output_tokens
        ? usage
        : undefined;
    });
    expect(shown.outputTokens).toBeGreaterThan(0);
  });

  it("refuses a Responses request over the token budget, and one offering a tool the endpoint runs", async () => {
    const agent = await startAgent(env, namespace, "responses-budget", { limits: { tokenBudget: 10 } });
    const client = clientOf(agent, 3);
    const since = lastSeq();
    const hosted = (await client.responses
      .create({ model: MODEL, input, tools: [{ type: "web_search" }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(hosted).toBeInstanceOf(OpenAI.BadRequestError);
    expect(hosted.code).toBe("endpoint_tool_not_allowed");
    expect(env.model.requests(since)).toEqual([]);

    await client.responses.stream({ model: MODEL, input }).finalResponse();
    const refusal = (await client.responses
      .create({ model: MODEL, input })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(refusal).toBeInstanceOf(OpenAI.BadRequestError);
    expect(isBudgetExceeded(refusal)).toBe(true);
    expect(refusal.message).toMatch(/Token budget exhausted: this session used \d+ of its 10 tokens/);
    expect(env.model.requests(since)).toHaveLength(1);
  });
});

/** The gateway's status for a POST of `path` declaring a `bytes`-long body, of which nothing is sent. */
function statusForDeclaredLength(agent: Agent, path: string, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${env.gatewayUrl}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${agent.token}`,
        "content-type": "application/json",
        "content-length": String(bytes),
      },
    });
    request.on("response", (response) => {
      resolve(response.statusCode ?? 0);
      response.resume();
      request.destroy();
    });
    request.on("error", reject);
    request.flushHeaders();
  });
}

describe("the gateway's limits on one session", () => {
  it("answers a flood of invokes from one session 429 with Retry-After, while another session's calls go on", async () => {
    const [flooder, neighbour] = await Promise.all([
      startAgent(env, namespace, "flooder"),
      startAgent(env, namespace, "neighbour"),
    ]);
    // A tool no Capability offers: Core answers it at once, so the flood measures admission alone.
    const call = (position: number) => ({
      turn: 0,
      position,
      callId: `call-${position}`,
      tool: "flood_no_such_tool",
      arguments: "{}",
    });
    const flood = Promise.all(
      Array.from({ length: 300 }, (_, position) =>
        gatewayRequest(env, flooder.token, "POST", "/v1/invoke", call(position)),
      ),
    );
    const calm: number[] = [];
    for (let position = 0; position < 10; position++) {
      calm.push((await gatewayRequest(env, neighbour.token, "POST", "/v1/invoke", call(position))).status);
    }
    const flooded = await flood;
    expect(calm).toEqual(Array.from({ length: 10 }, () => 200));
    const limited = flooded.filter((reply) => reply.status === 429);
    const answered = flooded.filter((reply) => reply.status === 200);
    // The burst (40) passes, at most what dripped in meanwhile with it; the rest is refused.
    expect(answered.length).toBeGreaterThanOrEqual(32);
    expect(answered.length).toBeLessThan(120);
    expect(limited.length + answered.length).toBe(300);
    for (const reply of limited) {
      expect(Number(reply.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(reply.body).toMatchObject({ kind: "unavailable" });
    }
    expect(JSON.stringify(limited[0]?.body)).toMatch(/requests per second|requests in flight/);
    // What was refused left nothing behind: the transcript holds only the answered calls.
    const stored = await env.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM session_events WHERE session_uid = $1 AND kind = 'tool_call'",
      [flooder.session.uid],
    );
    expect(Number(stored.rows[0]?.n)).toBe(answered.length);
  });

  it("serves a long history page by page, and refuses the agent's events past the session's bound", async () => {
    const agent = await startAgent(env, namespace, "long-history");
    const stored = INTAKE_EVENTS - 2;
    // A long session's history, stored as the gateway stores the agent's events, after what is there.
    await env.pool.query(
      `INSERT INTO session_events (session_uid, seq, source, kind, payload, at_us)
       SELECT $1, base.max + n, 'agent', 'assistant_text', jsonb_build_object('turn', 0, 'text', 'line ' || n), n
         FROM generate_series(1, $2::int) AS n,
              (SELECT COALESCE(max(seq), 0) AS max FROM session_events WHERE session_uid = $1) AS base`,
      [agent.session.uid, stored],
    );
    const before = await env.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM session_events WHERE session_uid = $1",
      [agent.session.uid],
    );
    const all = Number(before.rows[0]?.n);
    const view = await gatewayRequest(env, agent.token, "GET", "/v1/session");
    expect(view.status).toBe(200);
    const first = view.body as { history: Array<{ seq: number }>; historyComplete: boolean };
    expect(first.history).toHaveLength(HISTORY_PAGE);
    expect(first.historyComplete).toBe(false);
    const client = createGatewayClient({ baseUrl: env.gatewayUrl, tokenFile: await tokenFileOf(agent) });
    const whole = await client.getSession();
    expect(whole.history.map((e) => e.seq)).toEqual(Array.from({ length: all }, (_, i) => i + 1));

    const event = (text: string) => ({ kind: "assistant_text", turn: 1, text });
    expect(
      (await gatewayRequest(env, agent.token, "POST", "/v1/session/events", event("one more"))).status,
    ).toBe(200);
    expect(
      (await gatewayRequest(env, agent.token, "POST", "/v1/session/events", event("the last"))).status,
    ).toBe(200);
    const refused = await gatewayRequest(
      env,
      agent.token,
      "POST",
      "/v1/session/events",
      event("past the bound"),
    );
    expect(refused.status).toBe(409);
    expect(JSON.stringify(refused.body)).toContain(`at most ${INTAKE_EVENTS} events`);
    const refusedCall = await gatewayRequest(env, agent.token, "POST", "/v1/invoke", {
      turn: 1,
      position: 0,
      callId: "call-0",
      tool: "anything",
      arguments: "{}",
    });
    expect(refusedCall.status).toBe(409);
    const count = await env.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM session_events WHERE session_uid = $1 AND source = 'agent'",
      [agent.session.uid],
    );
    expect(Number(count.rows[0]?.n)).toBe(INTAKE_EVENTS);

    // Only the headers are sent: the gateway refuses by Content-Length, and a body it never reads
    // would make its close of the connection a reset that hides the answer.
    const tooLarge = await statusForDeclaredLength(agent, "/v1/session/events", 300 * 1024);
    expect(tooLarge).toBe(413);
  });
});

describe("the model key", () => {
  it("never lets the model key out: not in a log line, an answer, a status, an Event or an audit row", async () => {
    const agent = await startAgent(env, namespace, "key-probe");
    const since = lastSeq();
    const smuggled: Record<string, string> = {
      "x-api-key": "sk-pod-x-api-key-0001",
      "api-key": "sk-pod-api-key-0002",
      "x-pass-authorization": "Bearer sk-pod-pass-0003",
      cookie: "session=sk-pod-cookie-0004",
      "openai-organization": "org-pod-0005",
    };
    const answers: string[] = [];
    const ask = async (body: Record<string, unknown>) => {
      const response = await fetch(`${env.gatewayUrl}/v1/model/chat/completions`, {
        method: "POST",
        headers: { ...smuggled, authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      answers.push(`${response.status} ${JSON.stringify([...response.headers])} ${await response.text()}`);
      return response.status;
    };
    expect(await ask({ model: MODEL, messages: question })).toBe(200);
    expect(await ask({ model: MODEL, messages: question, stream: true })).toBe(200);
    expect(await ask({ model: MODEL, messages: question, api_key: "sk-pod-body-key-0006" })).toBe(400);
    // A request the endpoint refuses (no list of messages) takes the error answer's path.
    expect(await ask({ model: MODEL, messages: "not a list" })).toBe(400);

    const upstream = env.model.requests(since);
    expect(upstream.length).toBeGreaterThanOrEqual(3);
    for (const request of upstream) {
      expect(request.authorization).toBe(`Bearer ${env.modelKey}`);
      for (const value of Object.values(smuggled))
        expect(JSON.stringify(request.headers)).not.toContain(value);
      expect(JSON.stringify(request.headers)).not.toContain(agent.token);
    }

    const session = await env.kubectl.run("admin", [
      "get",
      "agentsession",
      agent.session.name,
      "-n",
      namespace,
      "-o",
      "json",
    ]);
    const events = await env.kubectl.run("admin", ["get", "events", "-A", "-o", "json"]);
    const audit = await env.pool.query("SELECT * FROM audit_log");
    const transcripts = await env.pool.query("SELECT * FROM session_events");
    const places: Record<string, string> = {
      "the gateway's log": await readFile(env.gateway.logPath, "utf8"),
      "the controller's log": await readFile(env.controller.logPath, "utf8"),
      "the answers to the pod": answers.join("\n"),
      "the AgentSession": session.stdout,
      Events: events.stdout,
      "the audit chain": JSON.stringify(audit.rows),
      "the transcripts": JSON.stringify(transcripts.rows),
    };
    for (const [place, text] of Object.entries(places)) {
      expect(text.length, place).toBeGreaterThan(0);
      expect(text.includes(env.modelKey), `the model key in ${place}`).toBe(false);
    }
  });
});
