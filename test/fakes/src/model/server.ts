/**
 * The scripted model: an OpenAI-compatible server (fastify) that plays YAML scripts (see `script.ts`),
 * the same scripts on both wire APIs:
 *   POST   /v1/chat/completions   streamed (SSE, `data: {chunk}` … `data: [DONE]`) or not, with `usage`
 *                                 (streamed: when `stream_options.include_usage`)
 *   POST   /v1/responses          streamed (SSE events, see responses.ts) or not, always with `usage`
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
import { type CompletionMeta, completionBody, completionChunks, type Usage, usageOf } from "./completion.ts";
import { ChatRequest, type ConversationView, viewConversation } from "./conversation.ts";
import { type PlayedAnswer, play } from "./play.ts";
import { createRecorder, type RecordedRequest, recordedHeaders } from "./recorder.ts";
import { outputItems, responseBody, responseEvents } from "./responses.ts";
import { chatMessagesOf, offeredTools, ResponsesRequest } from "./responses-request.ts";
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

/** A request of either wire, as the player needs it, and how its wire frames an answer. */
interface WireRequest {
  model: string;
  stream: boolean;
  view: ConversationView;
  offered: ReadonlySet<string>;
  /** What makes the conversation, for counting transport faults. */
  conversation: unknown;
  idOf(answerNumber: number): string;
  body(meta: CompletionMeta, answer: PlayedAnswer, usage: Usage): unknown;
  /** The SSE frames of a streamed answer. */
  events(meta: CompletionMeta, answer: PlayedAnswer, usage: Usage): string[];
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

  /** Plays the request's conversation and answers it in its wire's framing (or with a fault or error). */
  const answer = async (request: FastifyRequest, reply: FastifyReply, wire: WireRequest) => {
    const record = entries.get(request);
    if (record) {
      record.model = wire.model;
      record.step = wire.view.step;
      record.stream = wire.stream;
    }
    try {
      const script = await loadScript(options.scriptsDir, wire.model);
      const played = play(script, wire.view, wire.offered);
      const fault = faults.next(wire.conversation, wire.view.step, played.transportFaults);
      if (fault) {
        for (const [name, value] of Object.entries(fault.headers)) reply.header(name, value);
        return openAiError(reply, fault.status, fault.message, fault.type);
      }
      completions += 1;
      const meta = { id: wire.idOf(completions), model: wire.model, created: Math.floor(Date.now() / 1000) };
      const usage = usageOf(wire.view.promptChars, played);
      if (!wire.stream) return wire.body(meta, played, usage);
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
      for (const event of wire.events(meta, played, usage)) reply.raw.write(event);
      reply.raw.end();
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
  };

  app.post("/v1/chat/completions", async (request, reply) => {
    const parsed = ChatRequest.safeParse(request.body);
    if (!parsed.success) return openAiError(reply, 400, parsed.error.message, "invalid_request_error");
    const body = parsed.data;
    const record = entries.get(request);
    if (record) record.chat = body;
    const includeUsage = body.stream_options?.include_usage === true;
    return answer(request, reply, {
      model: body.model,
      stream: body.stream === true,
      view: viewConversation(body.messages),
      offered: new Set((body.tools ?? []).map((tool) => tool.function.name)),
      conversation: { model: body.model, messages: (request.body as { messages: unknown }).messages },
      idOf: (n) => `chatcmpl-scripted-${n}`,
      body: completionBody,
      events: (meta, played, usage) => [
        ...completionChunks(meta, played, includeUsage ? usage : undefined).map(
          (chunk) => `data: ${JSON.stringify(chunk)}\n\n`,
        ),
        "data: [DONE]\n\n",
      ],
    });
  });

  app.post("/v1/responses", async (request, reply) => {
    const parsed = ResponsesRequest.safeParse(request.body);
    if (!parsed.success) return openAiError(reply, 400, parsed.error.message, "invalid_request_error");
    const body = parsed.data;
    const record = entries.get(request);
    if (record) record.responses = body;
    return answer(request, reply, {
      model: body.model,
      stream: body.stream === true,
      view: viewConversation(chatMessagesOf(body)),
      offered: offeredTools(body),
      conversation: { model: body.model, input: (request.body as { input: unknown }).input },
      idOf: (n) => `resp_scripted_${n}`,
      body: (meta, played, usage) => responseBody(meta, played, { output: outputItems(meta, played), usage }),
      // No [DONE]: a Responses stream ends with its last event.
      events: (meta, played, usage) =>
        responseEvents(meta, played, usage).map(
          (event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`,
        ),
    });
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
