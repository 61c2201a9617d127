import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BUDGET_EXCEEDED, isBudgetExceeded, ModelProxyError } from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import type { ModelEndpoint } from "../config-environment.ts";
import { GatehouseError } from "../core/errors.ts";
import { defaultSessionCeilings } from "../core/limits.ts";
import { sessionRecords } from "../store/session-records.ts";
import type { SessionEvent, TranscriptStore } from "../store/transcripts.ts";
import { truncateUtf8, UPSTREAM_ERROR_BYTES } from "./model-credentials.ts";
import { modelProxyRoute } from "./model-proxy.ts";
import { type SessionRequestLimits, sessionLimiter } from "./session-limits.ts";

const POD_TOKEN = "pod-token-of-the-agent";
const KEY = "sk-from-the-secret";
const MAX_REQUEST_BYTES = 1024 * 1024;

/** One request the stub endpoint received. */
interface Received {
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
}

/** How the stub endpoint answers the next requests. */
type Answer = (request: Received, response: ServerResponse) => Promise<void> | void;

const completion = (usage?: Record<string, number>) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "gpt-test",
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: "The plan stands.", refusal: null },
      finish_reason: "stop",
    },
  ],
  ...(usage ? { usage } : {}),
});

const sse = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: "chatcmpl-2",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-test",
  choices: [{ index: 0, delta, finish_reason: finish }],
  usage: null,
});
const usageChunk = {
  id: "chatcmpl-2",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-test",
  choices: [],
  usage: { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 },
};

function session(tokenBudget?: number): AgentSession {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "AgentSession",
    metadata: { name: "push-plan", namespace: "plant-a", uid: `uid-${Math.random()}` },
    spec: {
      subject: { user: "alice", groups: [] },
      engine: "builtin",
      model: { name: "gpt-test" },
      instructions: "",
      messages: [{ text: "Push the plan." }],
      ...(tokenBudget !== undefined ? { limits: { tokenBudget } } : {}),
    },
    status: { phase: "Running" },
  } as AgentSession;
}

/** A transcript in memory, as the Postgres store behaves (dedupe keys, seq from 1). */
function memoryTranscripts(): TranscriptStore & { events: SessionEvent[] } {
  const events: SessionEvent[] = [];
  const keys = new Map<string, SessionEvent>();
  return {
    events,
    async append(event) {
      const id = event.dedupeKey && `${event.sessionUid}\u0000${event.dedupeKey}`;
      const existing = id ? keys.get(id) : undefined;
      if (existing) return existing;
      const { dedupeKey: _key, ...rest } = event;
      const stored = { ...rest, seq: events.filter((e) => e.sessionUid === event.sessionUid).length + 1 };
      events.push(stored);
      if (id) keys.set(id, stored);
      return stored;
    },
    async appendAll(batch) {
      const appended: SessionEvent[] = [];
      for (const event of batch) appended.push(await this.append(event));
      return appended;
    },
    async list(sessionUid, options = {}) {
      return events
        .filter((e) => e.sessionUid === sessionUid && e.seq > (options.afterSeq ?? 0))
        .slice(0, options.limit ?? 1000);
    },
    async findFirst(sessionUid, kind, field, value) {
      return events.find((e) => e.sessionUid === sessionUid && e.kind === kind && e.payload[field] === value);
    },
  };
}

let upstream: Server;
let upstreamUrl: string;
let received: Received[] = [];
let answer: Answer;

beforeAll(async () => {
  upstream = createServer(async (request, response) => {
    const parts: Buffer[] = [];
    for await (const part of request) parts.push(part as Buffer);
    const entry = { headers: request.headers, body: JSON.parse(Buffer.concat(parts).toString("utf8")) };
    received.push(entry);
    await answer(entry, response);
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

let gateway: FastifyInstance | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  received = [];
});

/** The gateway's /v1 scope in small: a bearer check binding `theSession`, its limits, then the proxy. */
async function startGateway(
  theSession: AgentSession,
  endpoint: Partial<ModelEndpoint> = {},
  limits: SessionRequestLimits = { requestsPerSecond: 1000, burst: 1000, maxInFlight: 100 },
): Promise<{
  url: string;
  transcripts: ReturnType<typeof memoryTranscripts>;
  records: ReturnType<typeof sessionRecords>;
  /** Every line the gateway logged. */
  logLines: string[];
}> {
  const transcripts = memoryTranscripts();
  const records = sessionRecords(transcripts);
  const logLines: string[] = [];
  const limiter = sessionLimiter(limits);
  const app = Fastify({
    logger: { level: "debug", stream: { write: (line: string) => logLines.push(line) } },
  });
  await app.register(async (v1) => {
    v1.decorateRequest("session", undefined as unknown as AgentSession);
    v1.addHook("onRequest", async (request, reply) => {
      if (request.headers.authorization !== `Bearer ${POD_TOKEN}`) {
        throw new GatehouseError("forbidden", "A bearer token (the pod's projected token) is required.");
      }
      request.session = theSession;
      reply.raw.once("close", limiter.admit(theSession.metadata.uid));
    });
    await v1.register(modelProxyRoute, {
      endpointFor: (ref) =>
        ref === undefined
          ? {
              name: "test",
              baseURL: upstreamUrl,
              keySecretRef: { name: "model-key", key: "apiKey" },
              models: [],
              default: true,
              ...endpoint,
            }
          : undefined,
      keys: {
        keyOf: async (ref) => {
          if (ref.name !== "model-key" || ref.key !== "apiKey") throw new Error(`unexpected ref ${ref.name}`);
          return KEY;
        },
      },
      records,
      transcripts,
      ceilings: defaultSessionCeilings,
      maxRequestBytes: MAX_REQUEST_BYTES,
    });
  });
  const origin = await app.listen({ host: "127.0.0.1", port: 0 });
  gateway = app;
  return { url: `${origin}/v1/model`, transcripts, records, logLines };
}

const client = (baseURL: string) => new OpenAI({ baseURL, apiKey: POD_TOKEN, maxRetries: 2 });

describe("POST /v1/model/chat/completions", () => {
  it("sends a request to the session's endpoint with the Secret's key, never the pod's token", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "x-request-id": "req-7" });
      response.end(JSON.stringify(completion({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 })));
    };
    const { url } = await startGateway(session());
    const sent = {
      model: "gpt-test",
      messages: [{ role: "user" as const, content: "Push the plan." }],
      temperature: 0.25,
    };
    const { data, response } = await client(url).chat.completions.create(sent).withResponse();
    expect(data).toEqual(completion({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 }));
    expect(response.headers.get("x-request-id")).toBe("req-7");
    expect(received).toHaveLength(1);
    expect(received[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(JSON.stringify(received[0]!.headers)).not.toContain(POD_TOKEN);
    expect(received[0]!.body).toEqual(sent);
  });

  it("records the endpoint's usage as the session's, from the proxy's own metering", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(completion({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 })));
    };
    const theSession = session();
    const { url, transcripts, records } = await startGateway(theSession);
    await client(url).chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }],
    });
    expect(transcripts.events).toEqual([
      expect.objectContaining({
        source: "core",
        kind: "usage",
        payload: {
          inputTokens: 12,
          outputTokens: 5,
          model: "gpt-test",
          endpoint: "test",
          stream: false,
          estimated: false,
        },
      }),
    ]);
    expect((await records.recordOf(theSession.metadata.uid)).usage).toEqual({
      inputTokens: 12,
      outputTokens: 5,
    });
  });

  it("passes a stream through as it arrives, asks for its usage and meters it", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    answer = async (_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      response.write(sse(chunk({ role: "assistant", content: "" })));
      response.write(sse(chunk({ content: "Hel" })));
      await held; // the rest comes only after the client has read the first pieces
      response.write(sse(chunk({ content: "lo" })));
      response.write(sse(chunk({}, "stop")));
      response.write(sse(usageChunk));
      response.end("data: [DONE]\n\n");
    };
    const theSession = session();
    const { url, records } = await startGateway(theSession);
    const stream = await client(url).chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }],
      stream: true,
    });
    const pieces: string[] = [];
    let usage: unknown;
    for await (const part of stream) {
      pieces.push(part.choices[0]?.delta.content ?? "");
      if (part.usage) usage = part.usage;
      if (pieces.join("") === "Hel") release();
    }
    expect(pieces.join("")).toBe("Hello");
    expect(usage).toEqual(usageChunk.usage);
    expect(received[0]!.body.stream_options).toEqual({ include_usage: true });
    expect((await records.recordOf(theSession.metadata.uid)).usage).toEqual({
      inputTokens: 30,
      outputTokens: 4,
    });
  });

  it("relays the stream's bytes unchanged", async () => {
    const body = `${sse(chunk({ role: "assistant", content: "" }))}: comment\n\n${sse(usageChunk)}data: [DONE]\n\n`;
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(body);
    };
    const { url } = await startGateway(session());
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [], stream: true }),
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(await response.text()).toBe(body);
  });

  it("meters a stream even when the pod hangs up before its usage chunk", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    answer = async (_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(sse(chunk({ content: "partial" })));
      await held;
      response.write(sse(usageChunk));
      response.end("data: [DONE]\n\n");
    };
    const theSession = session();
    const { url, records } = await startGateway(theSession);
    const controller = new AbortController();
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [], stream: true }),
      signal: controller.signal,
    });
    await response.body!.getReader().read();
    controller.abort();
    release();
    await expect
      .poll(async () => (await records.recordOf(theSession.metadata.uid)).usage)
      .toEqual({ inputTokens: 30, outputTokens: 4 });
  });

  it("estimates the usage of an answer that reports none", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(completion()));
    };
    const theSession = session();
    const { url, transcripts } = await startGateway(theSession);
    await client(url).chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }],
    });
    const usage = transcripts.events.find((e) => e.kind === "usage")!.payload;
    expect(usage).toMatchObject({ estimated: true, outputTokens: 4 });
    expect(usage.inputTokens).toBeGreaterThan(0);
  });

  it("refuses a model other than the session's without calling the endpoint", async () => {
    const { url } = await startGateway(session());
    const error = await client(url)
      .chat.completions.create({ model: "gpt-expensive", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("model_not_allowed");
    expect(received).toHaveLength(0);
  });

  it("refuses a model the endpoint does not list", async () => {
    const { url } = await startGateway(session(), { models: ["gpt-other"] });
    const error = await client(url)
      .chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain(
      "does not offer model gpt-test",
    );
    expect(received).toHaveLength(0);
  });

  it("refuses every request once the token budget is used, finally and with the budget named", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify(completion({ prompt_tokens: 40, completion_tokens: 15, total_tokens: 55 })),
      );
    };
    const theSession = session(50);
    const { url, transcripts, records } = await startGateway(theSession);
    const openai = client(url);
    const ask = () =>
      openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "x" }] });
    await ask(); // 0 of 50 used: allowed, and it spends 55
    for (let i = 0; i < 2; i += 1) {
      const error = (await ask().catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(isBudgetExceeded(error)).toBe(true);
      expect(error.code).toBe(BUDGET_EXCEEDED.code);
      expect(error.headers?.get("x-should-retry")).toBe("false");
      expect(error.message).toContain("used 55 of its 50 tokens");
    }
    expect(received).toHaveLength(1); // neither the SDK nor the proxy retried a refusal
    expect(transcripts.events.filter((e) => e.kind === "budget_exceeded")).toHaveLength(1);
    expect((await records.recordOf(theSession.metadata.uid)).budgetExceeded).toContain("50 tokens");
  });

  it("relays an endpoint's refusal with its status and retry headers, and meters nothing", async () => {
    answer = (_request, response) => {
      response.writeHead(429, { "content-type": "application/json", "retry-after": "3" });
      response.end(
        JSON.stringify({
          error: { message: "slow down", type: "rate_limit_error", param: null, code: null },
        }),
      );
    };
    const { url, transcripts } = await startGateway(session());
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [] }),
    });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("3");
    expect(ModelProxyError.parse(await response.json()).error.message).toBe("slow down");
    expect(transcripts.events).toHaveLength(0);
  });

  it("sends no Authorization to an endpoint without keySecretRef", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(completion({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })));
    };
    const { url } = await startGateway(session(), { keySecretRef: undefined });
    await client(url).chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }],
    });
    expect(received[0]!.headers.authorization).toBeUndefined();
  });

  it("answers a request without the pod's token in OpenAI's error shape", async () => {
    const { url } = await startGateway(session());
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [] }),
    });
    expect(response.status).toBe(403);
    expect(ModelProxyError.parse(await response.json()).error).toMatchObject({
      type: "permission_error",
      code: "forbidden",
    });
    expect(received).toHaveLength(0);
  });

  it("refuses a session that has ended", async () => {
    const ended = { ...session(), status: { phase: "Completed" } } as AgentSession;
    const { url } = await startGateway(ended);
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [] }),
    });
    expect(response.status).toBe(409);
    expect(received).toHaveLength(0);
  });

  it("forwards an allowlist of headers: none of the pod's credential-like headers reaches the endpoint", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(completion({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })));
    };
    const { url } = await startGateway(session());
    const smuggled: Record<string, string> = {
      "x-api-key": "pod-x-api-key",
      "api-key": "pod-api-key",
      "x-pass-authorization": "Bearer pod-pass-through",
      "x-pass-x-api-key": "pod-pass-key",
      cookie: "session=pod-cookie",
      "proxy-authorization": "Basic cG9kOnNlY3JldA==",
      "openai-organization": "org-pod",
      "openai-project": "proj-pod",
      "x-goog-api-key": "pod-goog-key",
      "anthropic-api-key": "pod-anthropic-key",
      "x-forwarded-for": "10.0.0.1",
      "x-custom-header": "pod-custom",
    };
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { ...smuggled, authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "x" }] }),
    });
    expect(response.status).toBe(200);
    expect(received).toHaveLength(1);
    const sent = received[0]!.headers;
    // Only what the proxy sets itself, and what HTTP framing adds.
    expect(Object.keys(sent).sort()).toEqual(
      [
        "accept",
        "accept-encoding",
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "host",
        "user-agent",
      ].sort(),
    );
    expect(sent.authorization).toBe(`Bearer ${KEY}`);
    for (const value of Object.values(smuggled)) expect(JSON.stringify(sent)).not.toContain(value);
  });

  it("refuses a body carrying a credential-like field, naming it, without calling the endpoint", async () => {
    const { url } = await startGateway(session());
    for (const field of ["api_key", "apiKey", "extra_headers", "api_base", "Authorization"]) {
      const response = await fetch(`${url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-test", messages: [], [field]: "sk-pod-own-key-123456" }),
      });
      expect(response.status, field).toBe(400);
      const error = ModelProxyError.parse(await response.json()).error;
      expect(error.code).toBe("credential_field");
      expect(error.message).toContain(field);
    }
    expect(received).toHaveLength(0);
  });

  it("returns an endpoint's error answer truncated and with the key redacted, and logs no key", async () => {
    answer = (request, response) => {
      response.writeHead(401, { "content-type": "application/json" });
      // Endpoints echo what they were sent: the key, the Authorization header, and then some.
      response.end(
        JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${KEY}. You sent ${request.headers.authorization}; other key sk-proj-abcdefghijkl.`,
            type: "invalid_request_error",
            param: null,
            code: "invalid_api_key",
          },
          padding: "x".repeat(100_000),
        }),
      );
    };
    const { url, logLines } = await startGateway(session());
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [] }),
    });
    expect(response.status).toBe(401);
    const text = await response.text();
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(UPSTREAM_ERROR_BYTES);
    expect(text).toContain("Incorrect API key provided: [REDACTED]");
    expect(text).not.toContain(KEY);
    expect(text).not.toContain("sk-proj-abcdefghijkl");
    expect(logLines.join("")).toContain("model endpoint refused the request");
    expect(logLines.join("")).not.toContain(KEY);
  });

  it("cuts an error answer at a character boundary, after redacting a key that straddles the cut", () => {
    expect(truncateUtf8("aé€😀", 1 + 2 + 3 + 3)).toBe("aé€");
    expect(truncateUtf8("short", 100)).toBe("short");
  });

  it("redacts a key the endpoint echoes right at the cut, and in a header", async () => {
    answer = (_request, response) => {
      response.writeHead(400, { "content-type": "text/plain", "x-debug-key": KEY });
      response.end(`${"x".repeat(UPSTREAM_ERROR_BYTES - 5)}${KEY} and more`);
    };
    const { url } = await startGateway(session());
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [] }),
    });
    const text = await response.text();
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(UPSTREAM_ERROR_BYTES);
    expect(text.slice(-5)).toBe("[REDA");
    expect(text).not.toContain(KEY.slice(0, 5));
    expect(response.headers.get("x-debug-key")).toBe("[REDACTED]");
  });

  it("answers a session over its request limits 429 in OpenAI's shape with Retry-After, which the openai client honours", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(completion({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })));
    };
    const { url } = await startGateway(session(), {}, { requestsPerSecond: 1, burst: 1, maxInFlight: 10 });
    const first = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [] }),
    });
    expect(first.status).toBe(200);
    const limited = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [] }),
    });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("1");
    expect(ModelProxyError.parse(await limited.json()).error).toMatchObject({
      type: "rate_limit_error",
      code: "session_rate_limited",
    });
    // The SDK waits the Retry-After and asks again: the third request gets through.
    const started = Date.now();
    await client(url).chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }],
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(received).toHaveLength(2);
  });
});

/** A Responses API answer (`response` object) with one message, as OpenAI sends it. */
const responseBody = (usage?: Record<string, unknown>, status = "completed") => ({
  id: "resp_1",
  object: "response",
  created_at: 1,
  status,
  model: "gpt-test",
  output: [
    {
      id: "msg_1",
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "The plan stands.", annotations: [] }],
    },
  ],
  parallel_tool_calls: true,
  tool_choice: "auto",
  tools: [],
  usage: usage ?? null,
});
const responsesUsage = {
  input_tokens: 21,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 6,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 27,
};
/** One Responses SSE event, framed as OpenAI frames them (`event:` line, then `data:`). */
const responseEvent = (event: Record<string, unknown> & { type: string }) =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

/** The events of a streamed answer "The plan stands." ending with `ending` (usage in it when given). */
function responseStream(ending: "response.completed" | "none", usage?: Record<string, unknown>): string {
  const item = { id: "msg_1", type: "message", role: "assistant", status: "in_progress", content: [] };
  const part = { type: "output_text", text: "", annotations: [] };
  const at = { item_id: "msg_1", output_index: 0, content_index: 0 };
  const events = [
    { type: "response.created", response: { ...responseBody(), status: "in_progress", output: [] } },
    { type: "response.output_item.added", output_index: 0, item },
    { type: "response.content_part.added", ...at, part },
    { type: "response.output_text.delta", ...at, delta: "The plan ", logprobs: [] },
    { type: "response.output_text.delta", ...at, delta: "stands.", logprobs: [] },
    { type: "response.output_text.done", ...at, text: "The plan stands.", logprobs: [] },
    { type: "response.content_part.done", ...at, part: { ...part, text: "The plan stands." } },
    { type: "response.output_item.done", output_index: 0, item: responseBody().output[0] },
    ...(ending === "response.completed" ? [{ type: ending, response: responseBody(usage) }] : []),
  ];
  return events.map((event, sequence) => responseEvent({ ...event, sequence_number: sequence })).join("");
}

describe("POST /v1/model/responses", () => {
  it("sends a request to the session's endpoint with the Secret's key, never the pod's token, and meters its usage", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(responseBody(responsesUsage)));
    };
    const theSession = session();
    const { url, transcripts, records } = await startGateway(theSession);
    const sent = {
      model: "gpt-test",
      input: [{ role: "user" as const, content: "Push the plan." }],
      tools: [{ type: "function" as const, name: "read", parameters: {}, strict: false }],
      store: false,
    };
    const answered = await client(url).responses.create(sent);
    expect(answered.output_text).toBe("The plan stands.");
    expect(received).toHaveLength(1);
    expect(received[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(JSON.stringify(received[0]!.headers)).not.toContain(POD_TOKEN);
    expect(received[0]!.body).toEqual(sent);
    expect(transcripts.events).toEqual([
      expect.objectContaining({
        kind: "usage",
        payload: expect.objectContaining({
          inputTokens: 21,
          outputTokens: 6,
          stream: false,
          estimated: false,
        }),
      }),
    ]);
    expect((await records.recordOf(theSession.metadata.uid)).usage).toEqual({
      inputTokens: 21,
      outputTokens: 6,
    });
  });

  it("passes a stream through unchanged and meters the usage of response.completed", async () => {
    const body = responseStream("response.completed", responsesUsage);
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(body);
    };
    const theSession = session();
    const { url, records } = await startGateway(theSession);
    const stream = client(url).responses.stream({ model: "gpt-test", input: "Push the plan." });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe("The plan stands.");
    expect(final.usage?.total_tokens).toBe(27);
    // Nothing is added to a Responses request: its stream always ends with the usage.
    expect(received[0]!.body).toEqual({ model: "gpt-test", input: "Push the plan.", stream: true });
    expect((await records.recordOf(theSession.metadata.uid)).usage).toEqual({
      inputTokens: 21,
      outputTokens: 6,
    });

    const raw = await fetch(`${url}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", input: "x", stream: true }),
    });
    expect(await raw.text()).toBe(body);
  });

  it("estimates a stream cut off before response.completed from its deltas", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(responseStream("none"));
    };
    const { url, transcripts } = await startGateway(session());
    const raw = await fetch(`${url}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", input: "x", stream: true }),
    });
    await raw.text();
    const usage = transcripts.events.find((e) => e.kind === "usage")!.payload;
    // "The plan stands." is 16 characters: 4 tokens, counted once though the done events repeat it.
    expect(usage).toMatchObject({ estimated: true, outputTokens: 4, stream: true });
  });

  it("counts both wires against one token budget and refuses a Responses request once it is used", async () => {
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify(completion({ prompt_tokens: 40, completion_tokens: 15, total_tokens: 55 })),
      );
    };
    const theSession = session(50);
    const { url, transcripts } = await startGateway(theSession);
    const openai = client(url);
    await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "x" }] });
    const error = (await openai.responses
      .create({ model: "gpt-test", input: "x" })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(isBudgetExceeded(error)).toBe(true);
    expect(error.headers?.get("x-should-retry")).toBe("false");
    expect(error.message).toContain("used 55 of its 50 tokens");
    expect(received).toHaveLength(1);
    expect(transcripts.events.filter((e) => e.kind === "budget_exceeded")).toHaveLength(1);
  });

  it("refuses tools the endpoint would run itself, which would reach the outside past the gateway", async () => {
    const { url } = await startGateway(session());
    const attempts = [
      { type: "mcp", server_label: "out", server_url: "https://attacker.example/mcp" },
      { type: "web_search" },
      { type: "code_interpreter", container: { type: "auto" } },
      { type: "shell", environment: { type: "container_auto" } },
      { type: "namespace", name: "ns", description: "", tools: [{ type: "web_search_preview" }] },
    ];
    for (const tool of attempts) {
      const response = await fetch(`${url}/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${POD_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "gpt-test",
          input: "x",
          tools: [{ type: "function", name: "read", parameters: {} }, tool],
        }),
      });
      expect(response.status, tool.type).toBe(400);
      expect(ModelProxyError.parse(await response.json()).error.code).toBe("endpoint_tool_not_allowed");
    }
    expect(received).toHaveLength(0);
  });

  it("refuses a background response, whose usage would come after the answer", async () => {
    const { url } = await startGateway(session());
    const error = await client(url)
      .responses.create({ model: "gpt-test", input: "x", background: true })
      .catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("background_not_allowed");
    expect(received).toHaveLength(0);
  });

  it("refuses another model, a credential field and a missing token as on Chat Completions", async () => {
    const { url } = await startGateway(session());
    const post = (body: unknown, authorization = `Bearer ${POD_TOKEN}`) =>
      fetch(`${url}/responses`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const refusals = [
      [await post({ model: "gpt-expensive", input: "x" }), 400, "model_not_allowed"],
      [
        await post({ model: "gpt-test", input: "x", api_key: "sk-pod-own-key-123456" }),
        400,
        "credential_field",
      ],
      [await post({ input: "x" }), 400, "invalid_request"],
      [await post({ model: "gpt-test", input: "x" }, "Bearer stranger"), 403, "forbidden"],
    ] as const;
    for (const [response, status, code] of refusals) {
      expect(response.status, code).toBe(status);
      expect(ModelProxyError.parse(await response.json()).error.code).toBe(code);
    }
    expect(received).toHaveLength(0);
  });
});
