/**
 * The scripted model: an OpenAI-compatible server (fastify) that plays YAML scripts (see `script.ts`).
 *   POST   /v1/chat/completions   streamed (SSE, `data: {chunk}` … `data: [DONE]`) or not, with `usage`
 *   GET    /v1/models             one model per script: `scripted/<name>`
 *   GET    /_recorded[?since=N]   `{requests: RecordedRequest[]}`, every request received (see recorder.ts)
 *   DELETE /_recorded             forgets the recorded requests
 *   DELETE /_faults               forgets which transport faults were served
 * Errors use OpenAI's shape `{error: {message, type, param, code}}`: 400 for a conversation the script
 * cannot answer, 404 for an unknown model, 500 for an invalid script (these three with
 * `x-should-retry: false`, being deterministic), and 429 or 5xx for an injected fault. Any bearer key is
 * accepted.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import { z } from "zod";
import { listenAt } from "../listen.ts";
import { completionBody, completionChunks, usageOf } from "./completion.ts";
import { ChatRequest, viewConversation } from "./conversation.ts";
import { play } from "./play.ts";
import { createRecorder, type RecordedRequest, recordedHeaders } from "./recorder.ts";
import { listScriptModels, loadScript, ScriptError } from "./script.ts";
import { createTransportFaults } from "./transport-faults.ts";

export type { RecordedRequest } from "./recorder.ts";

/** Options of `startScriptedModel`. `port: 0` picks a free port. */
export interface ScriptedModelOptions {
  host: string;
  port: number;
  /** Folder of `<name>.yaml` scripts; `defaultScriptsDir` holds the repo's scripts. */
  scriptsDir: string;
}

/** A running scripted model. `url` is the OpenAI base URL (ends in `/v1`); `origin` has no path. */
export interface ScriptedModel {
  url: string;
  origin: string;
  /** Copies of the recorded requests with `seq` greater than `since` (all when omitted). */
  requests(since?: number): RecordedRequest[];
  /** Forgets the recorded requests (as `DELETE /_recorded`). */
  clearRequests(): void;
  /** Lets every conversation meet its transport faults again (as `DELETE /_faults`). */
  resetFaults(): void;
  close(): Promise<void>;
}

const SinceQuery = z.object({ since: z.coerce.number().int().min(0).default(0) });

function openAiError(reply: FastifyReply, status: number, message: string, type: string) {
  return reply.code(status).send({ error: { message, type, param: null, code: null } });
}

function isControlPath(url: string): boolean {
  return url.startsWith("/_");
}

/** Starts the scripted model on `host:port` and resolves once it listens. */
export async function startScriptedModel(options: ScriptedModelOptions): Promise<ScriptedModel> {
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
  const recorder = createRecorder();
  const entries = new WeakMap<FastifyRequest, RecordedRequest>();
  const faults = createTransportFaults();
  let completions = 0;

  app.addHook("onRequest", async (request) => {
    if (isControlPath(request.url)) return;
    entries.set(request, recorder.start(request.method, request.url, request.headers));
  });
  app.addHook("preHandler", async (request) => {
    const entry = entries.get(request);
    if (entry) entry.body = structuredClone(request.body);
  });
  app.addHook("onSend", async (request, reply) => {
    const entry = entries.get(request);
    if (!entry) return;
    entry.status = reply.statusCode;
    entry.responseHeaders = recordedHeaders(reply.getHeaders());
  });

  app.get("/_recorded", async (request, reply) => {
    const query = SinceQuery.safeParse(request.query);
    if (!query.success) return openAiError(reply, 400, z.prettifyError(query.error), "invalid_request_error");
    return { requests: recorder.list(query.data.since) };
  });
  app.delete("/_recorded", async (_request, reply) => {
    recorder.clear();
    return reply.code(204).send();
  });
  app.delete("/_faults", async (_request, reply) => {
    faults.reset();
    return reply.code(204).send();
  });

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
    const record = entries.get(request);
    if (record) {
      record.chat = body;
      record.model = body.model;
      record.step = view.step;
      record.stream = body.stream === true;
    }
    try {
      const script = await loadScript(options.scriptsDir, body.model);
      const offered = new Set((body.tools ?? []).map((tool) => tool.function.name));
      const answer = play(script, view, offered);
      const conversation = { model: body.model, messages: (request.body as { messages: unknown }).messages };
      const fault = faults.next(conversation, view.step, answer.transportFaults);
      if (fault) {
        for (const [name, value] of Object.entries(fault.headers)) reply.header(name, value);
        return openAiError(reply, fault.status, fault.message, fault.type);
      }
      completions += 1;
      const meta = {
        id: `chatcmpl-scripted-${completions}`,
        model: body.model,
        created: Math.floor(Date.now() / 1000),
      };
      const usage = usageOf(view.promptChars, answer);
      if (body.stream !== true) return completionBody(meta, answer, usage);
      const chunks = completionChunks(meta, answer, body.stream_options?.include_usage ? usage : undefined);
      const headers = {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      };
      reply.hijack();
      reply.raw.writeHead(200, headers);
      if (record) {
        record.status = 200;
        record.responseHeaders = recordedHeaders(headers);
      }
      for (const chunk of chunks) reply.raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
      reply.raw.end("data: [DONE]\n\n");
      return reply;
    } catch (error) {
      if (!(error instanceof ScriptError)) throw error;
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

  const origin = await listenAt(app, options.host, options.port);
  return {
    url: `${origin}/v1`,
    origin,
    requests: (since) => recorder.list(since),
    clearRequests: () => recorder.clear(),
    resetFaults: () => faults.reset(),
    close: () => app.close(),
  };
}
