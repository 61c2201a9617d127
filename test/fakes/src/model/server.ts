/**
 * The scripted model: an OpenAI-compatible server (fastify) that plays YAML scripts (see `script.ts`).
 *   POST /v1/chat/completions   streamed (SSE, `data: {chunk}` … `data: [DONE]`) or not, with `usage`
 *   GET  /v1/models             one model per script: `scripted/<name>`
 * Errors use OpenAI's shape `{error: {message, type, param, code}}`: 400 for a conversation the script
 * cannot answer, 404 for an unknown model, 500 for an invalid script (with `x-should-retry: false`), 429
 * for an injected rate limit. Any bearer key is accepted.
 */
import Fastify, { type FastifyReply } from "fastify";
import { listenAt } from "../listen.ts";
import { completionBody, completionChunks, estimateUsage } from "./completion.ts";
import { ChatRequest, viewConversation } from "./conversation.ts";
import { play } from "./play.ts";
import { listScriptModels, loadScript, ScriptError } from "./script.ts";

/** Options of `startScriptedModel`. `port: 0` picks a free port. */
export interface ScriptedModelOptions {
  host: string;
  port: number;
  /** Folder of `<name>.yaml` scripts; `defaultScriptsDir` holds the repo's scripts. */
  scriptsDir: string;
}

/** One request the model received, for tests to assert on. */
export interface RecordedRequest {
  model: string;
  step: number;
  stream: boolean;
  /** The request's Authorization header, to check that a proxy added the key (test fixture only). */
  authorization: string | undefined;
  body: ChatRequest;
  /** The HTTP status answered. */
  status: number;
}

/** A running scripted model. `url` is the OpenAI base URL (ends in `/v1`). */
export interface ScriptedModel {
  url: string;
  requests(): RecordedRequest[];
  close(): Promise<void>;
}

function openAiError(reply: FastifyReply, status: number, message: string, type: string) {
  return reply.code(status).send({ error: { message, type, param: null, code: null } });
}

/** Starts the scripted model on `host:port` and resolves once it listens. */
export async function startScriptedModel(options: ScriptedModelOptions): Promise<ScriptedModel> {
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
  const recorded: RecordedRequest[] = [];
  const rateLimitsServed = new Map<string, number>();
  let completions = 0;

  app.get("/v1/models", async () => ({
    object: "list",
    data: (await listScriptModels(options.scriptsDir)).map((id) => ({
      id,
      object: "model",
      created: 0,
      owned_by: "gatehouse-fakes",
    })),
  }));

  app.post("/v1/chat/completions", async (request, reply) => {
    const parsed = ChatRequest.safeParse(request.body);
    if (!parsed.success) return openAiError(reply, 400, parsed.error.message, "invalid_request_error");
    const body = parsed.data;
    const view = viewConversation(body.messages);
    const record: RecordedRequest = {
      model: body.model,
      step: view.step,
      stream: body.stream === true,
      authorization: request.headers.authorization,
      body,
      status: 200,
    };
    recorded.push(record);
    try {
      const script = await loadScript(options.scriptsDir, body.model);
      const offered = new Set((body.tools ?? []).map((tool) => tool.function.name));
      const answer = play(script, view, offered);
      const rateLimit = answer.faults.find((fault) => fault.kind === "rate_limit");
      if (rateLimit) {
        const key = `${body.model}#${view.step}`;
        const served = rateLimitsServed.get(key) ?? 0;
        if (served < rateLimit.times) {
          rateLimitsServed.set(key, served + 1);
          record.status = 429;
          reply.header("retry-after-ms", String(rateLimit.retryAfterMs));
          return openAiError(reply, 429, "scripted rate limit", "rate_limit_error");
        }
      }
      completions += 1;
      const meta = {
        id: `chatcmpl-scripted-${completions}`,
        model: body.model,
        created: Math.floor(Date.now() / 1000),
      };
      const usage = estimateUsage(view.promptChars, answer);
      if (!record.stream) return completionBody(meta, answer, usage);
      const chunks = completionChunks(meta, answer, body.stream_options?.include_usage ? usage : undefined);
      reply.hijack();
      reply.raw.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      });
      for (const chunk of chunks) reply.raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
      reply.raw.end("data: [DONE]\n\n");
      return reply;
    } catch (error) {
      if (!(error instanceof ScriptError)) throw error;
      record.status = error.status;
      // A script error is deterministic: tell OpenAI SDKs not to retry it (they retry 5xx by default).
      reply.header("x-should-retry", "false");
      const type =
        error.status === 404
          ? "not_found_error"
          : error.status >= 500
            ? "server_error"
            : "invalid_request_error";
      return openAiError(reply, error.status, error.message, type);
    }
  });

  const url = await listenAt(app, options.host, options.port);
  return {
    url: `${url}/v1`,
    requests: () => recorded.map((entry) => ({ ...entry })),
    close: () => app.close(),
  };
}
