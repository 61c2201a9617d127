/**
 * The `builtin` engine (DESIGN §9): the runtime's own loop on the openai SDK's Chat Completions.
 *   - streamed answers, deltas merged by index (`delta-merge.ts`), usage requested per answer;
 *   - parallel tool calls of one answer run one after another, in index order, through the ToolExecutor;
 *   - 429/5xx/connection failures are retried by the SDK (`maxRetries` on the client: exponential backoff
 *     with jitter, honouring `retry-after`/`retry-after-ms`; other 4xx are not retried);
 *   - stops at `maxTurns` model answers over the whole session (history included).
 * Not yet: token budget stop and context compaction (the gateway's model proxy meters tokens).
 */
import { createHash } from "node:crypto";
import OpenAI from "openai";
import type { Logger } from "pino";
import type {
  AgentRuntime,
  CreateSessionOptions,
  RuntimeEvent,
  RuntimeSession,
  TokenUsage,
  ToolExecutor,
  TranscriptCall,
} from "../../runtime.ts";
import { emptyAnswer, type MergedAnswer, mergeChunk, orderedCalls } from "./delta-merge.ts";
import { assistantMessage, chatTools, replayConversation } from "./messages.ts";

/** Options of the builtin engine. `client` carries baseURL, key, `maxRetries` and timeout. */
export interface BuiltinRuntimeOptions {
  client: OpenAI;
  model: string;
  tools: ToolExecutor;
  /** Most model answers in the whole session, history included. */
  maxTurns: number;
  logger: Logger;
}

function digest(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Maps whatever stopped the loop to an `error` event with a shared kind. */
function errorEvent(error: unknown, signal: AbortSignal): RuntimeEvent {
  if (signal.aborted) return { type: "error", kind: "aborted", message: "the run was aborted" };
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof OpenAI.APIConnectionTimeoutError) return { type: "error", kind: "timeout", message };
  if (error instanceof OpenAI.APIConnectionError) return { type: "error", kind: "unavailable", message };
  if (error instanceof OpenAI.APIError) {
    const status = error.status ?? 0;
    const kind =
      status === 429 || status >= 500
        ? "unavailable"
        : status === 401 || status === 403
          ? "forbidden"
          : status === 404
            ? "not_found"
            : "internal";
    return { type: "error", kind, message: `model endpoint answered ${status}: ${message}` };
  }
  const kind = (error as { kind?: unknown }).kind;
  return { type: "error", kind: typeof kind === "string" ? kind : "internal", message };
}

/** The builtin engine. */
export function createBuiltinRuntime(options: BuiltinRuntimeOptions): AgentRuntime {
  return { createSession: (init) => createBuiltinSession(options, init) };
}

function createBuiltinSession(options: BuiltinRuntimeOptions, init: CreateSessionOptions): RuntimeSession {
  const { client, model, tools: executor, maxTurns } = options;
  const replay = replayConversation(init.system, init.history);
  const messages = replay.messages;
  let unanswered = replay.unanswered;
  let turn = init.history.reduce(
    (next, item) => (item.role === "assistant" ? Math.max(next, item.turn + 1) : next),
    0,
  );
  const tools = chatTools(init.tools);
  const controller = new AbortController();
  let running = false;
  const logger = options.logger.child({ engine: "builtin", model });

  /** Runs `calls` of `callTurn` in order, appending each result to the conversation. */
  async function* runCalls(
    callTurn: number,
    calls: TranscriptCall[],
    signal: AbortSignal,
  ): AsyncGenerator<RuntimeEvent> {
    for (const call of calls) {
      const base = { turn: callTurn, position: call.position, callId: call.callId, name: call.name };
      logger.info(
        {
          ...base,
          argumentsDigest: digest(call.arguments),
          argumentsBytes: Buffer.byteLength(call.arguments),
        },
        "tool call",
      );
      yield { type: "tool_call", ...base, arguments: call.arguments };
      const invocation = await executor.invoke({ ...base, arguments: call.arguments }, { signal });
      let answer = invocation;
      if (invocation.kind === "pending_approval") {
        logger.info({ ...base, approval: invocation.approval }, "waiting for approval");
        yield { type: "approval_required", ...base, approval: invocation.approval };
        answer = { kind: "done", ...(await invocation.wait(signal)) };
      }
      if (answer.kind !== "done") throw new Error("unreachable: a waited tool call has an answer");
      logger.info({ ...base, status: answer.status }, "tool result");
      yield { type: "tool_result", ...base, status: answer.status, content: answer.content };
      messages.push({ role: "tool", tool_call_id: call.callId, content: answer.content });
    }
  }

  /** Asks the model once (streamed), yielding text deltas; returns the merged answer. */
  async function* modelAnswer(signal: AbortSignal): AsyncGenerator<RuntimeEvent, MergedAnswer> {
    const stream = await client.chat.completions.create(
      {
        model,
        messages,
        ...(tools.length > 0 ? { tools } : {}),
        stream: true,
        stream_options: { include_usage: true },
      },
      { signal },
    );
    const answer = emptyAnswer();
    for await (const chunk of stream) {
      const delta = mergeChunk(answer, chunk);
      if (delta) yield { type: "text", turn, delta };
    }
    return answer;
  }

  async function* run(text: string | undefined, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    if (unanswered) {
      const pending = unanswered;
      unanswered = undefined;
      yield* runCalls(pending.turn, pending.calls, signal);
    }
    if (text !== undefined) messages.push({ role: "user", content: text });
    for (;;) {
      if (turn >= maxTurns) {
        yield {
          type: "error",
          kind: "limit_exceeded",
          message: `the session reached maxTurns (${maxTurns})`,
        };
        return;
      }
      const answer = yield* modelAnswer(signal);
      const calls: TranscriptCall[] = orderedCalls(answer).map((call, position) => ({
        position,
        callId: call.id || `call_${turn}_${position}`,
        name: call.name,
        arguments: call.arguments,
      }));
      const usage: TokenUsage = answer.usage ?? { inputTokens: 0, outputTokens: 0 };
      logger.info(
        { turn, toolCalls: calls.length, finishReason: answer.finishReason, ...usage },
        "model answered",
      );
      messages.push(assistantMessage(answer.text, calls));
      if (calls.length > 0) yield* runCalls(turn, calls, signal);
      yield {
        type: "turn_end",
        turn,
        text: answer.text,
        toolCalls: calls.length,
        final: calls.length === 0,
        usage,
      };
      turn += 1;
      if (calls.length === 0) return;
    }
  }

  async function* send(text: string | undefined, sendOptions: { signal?: AbortSignal } = {}) {
    if (running) {
      yield {
        type: "error",
        kind: "conflict",
        message: "send is already running on this session",
      } as RuntimeEvent;
      return;
    }
    running = true;
    const signal = sendOptions.signal
      ? AbortSignal.any([controller.signal, sendOptions.signal])
      : controller.signal;
    try {
      yield* run(text, signal);
    } catch (error) {
      const event = errorEvent(error, signal);
      // The message only: error objects can carry response headers and request details.
      if (event.type === "error") logger.warn({ kind: event.kind, message: event.message }, "run stopped");
      yield event;
    } finally {
      running = false;
    }
  }

  return { send, abort: () => controller.abort(new Error("aborted by the runtime's caller")) };
}
