/**
 * The `builtin` engine (DESIGN §9): the runtime's own loop on the openai SDK's Chat Completions.
 *   - streamed answers, deltas merged by index (`delta-merge.ts`), usage requested per answer;
 *   - the calls of one answer (parallel calls) go through the ToolExecutor one after another, in index
 *     order, each exactly once — a call cut off by the token limit or with arguments that are not JSON
 *     too: Core answers it `invalid_arguments` (audited), and the conversation replays it with `{}`
 *     arguments (`messages.ts`), so the next request is valid and each call id has one tool message;
 *     calls that need approval are all proposed before the engine waits for the first decision;
 *   - failed model requests are retried as `retry.ts` decides (429/5xx/connection failures with backoff
 *     and jitter honouring Retry-After; no other 4xx, nor `x-should-retry: false`, which also makes
 *     the error final: no new pod either); the SDK client must have `maxRetries: 0`; the
 *     model proxy's token-budget refusal ends the run at once with kind `limit_exceeded` and its message;
 *   - stops at `maxTurns` model answers over the whole session (history included); once the session
 *     has made `maxToolCalls` calls the model is asked with `tool_choice: "none"`, and calling a tool
 *     anyway ends the run (Core refuses the calls themselves).
 *   - compacts the conversation the model sees when its estimate nears the model's context window
 *     (`contextWindow`): a structured summary of the older turns, the recent ones whole, a call never
 *     apart from its result; each compaction is a `compaction` event (`context.ts`, `compaction.ts`).
 *     An endpoint refusing a request as too long is answered by re-seeding the conversation from the
 *     transcript and compacting, once per request; refused again, the run ends (final).
 */
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI from "openai";
import type { Logger } from "pino";
import type {
  AgentRuntime,
  CreateSessionOptions,
  RuntimeEvent,
  RuntimeSession,
  TokenUsage,
  ToolAnswer,
  ToolExecutor,
  ToolInvocation,
  TranscriptCall,
} from "../../runtime.ts";
import { kindOfStatus } from "../model-errors.ts";
import { type ErrorEvent, sessionSend } from "../session-send.ts";
import type { ChatMessage } from "./compaction.ts";
import { ContextError, DEFAULT_CONTEXT_WINDOW, isContextOverflow, ModelContext } from "./context.ts";
import { emptyAnswer, type MergedAnswer, mergeChunk, toolCallsOf } from "./delta-merge.ts";
import { chatTools } from "./messages.ts";
import { defaultRetryPolicy, failureOf, isFinalFailure, type RetryPolicy, retryDecision } from "./retry.ts";

/** Options of the builtin engine. `client` carries baseURL, key and timeout, and `maxRetries: 0`. */
export interface BuiltinRuntimeOptions {
  client: OpenAI;
  model: string;
  tools: ToolExecutor;
  /** Most model answers in the whole session, history included. */
  maxTurns: number;
  /** Most tool calls in the whole session, history included (Core enforces it too). */
  maxToolCalls: number;
  /** The model's context window in tokens (default `DEFAULT_CONTEXT_WINDOW`). */
  contextWindow?: number;
  /** Model request retries (default `defaultRetryPolicy`). */
  retry?: RetryPolicy;
  logger: Logger;
}

/**
 * A model request that failed for good: `kind` from the shared list, the SDK error as `cause`, and
 * `final` when no new pod could succeed either (`retry.ts` `isFinalFailure`).
 */
export class ModelRequestError extends Error {
  readonly kind: string;
  readonly final: boolean;

  constructor(kind: string, message: string, options?: { cause?: unknown; final?: boolean }) {
    super(message, options);
    this.name = "ModelRequestError";
    this.kind = kind;
    this.final = options?.final ?? false;
  }
}

function digest(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** The error a model request ends the run with, after `why` it was not retried; `final` as `isFinalFailure`. */
function modelRequestError(error: unknown, why: string, final: boolean): ModelRequestError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof OpenAI.APIConnectionTimeoutError)
    return new ModelRequestError("timeout", `model request timed out (${why})`, { cause: error });
  if (error instanceof OpenAI.APIConnectionError)
    return new ModelRequestError("unavailable", `model endpoint unreachable (${why}): ${message}`, {
      cause: error,
    });
  if (error instanceof OpenAI.APIError && typeof error.status === "number") {
    // The SDK's message is "<status> <body>"; the status is named once, the body after a colon.
    const body = message.startsWith(`${error.status} `) ? message.slice(`${error.status} `.length) : message;
    const said = `model endpoint answered HTTP ${error.status}: ${body} (${why})`;
    return new ModelRequestError(kindOfStatus(error.status), said, {
      cause: error,
      final,
    });
  }
  return new ModelRequestError("internal", `model request failed (${why}): ${message}`, { cause: error });
}

/** Maps whatever stopped the loop to an `error` event with a shared kind. */
function errorEvent(error: unknown, signal: AbortSignal): ErrorEvent {
  if (signal.aborted) return { type: "error", kind: "aborted", message: "the run was aborted" };
  const message = error instanceof Error ? error.message : String(error);
  const kind = (error as { kind?: unknown }).kind;
  const final = (error instanceof ModelRequestError || error instanceof ContextError) && error.final;
  return {
    type: "error",
    kind: typeof kind === "string" ? kind : "internal",
    message,
    ...(final ? { final } : {}),
  };
}

/** The builtin engine. */
export function createBuiltinRuntime(options: BuiltinRuntimeOptions): AgentRuntime {
  return { createSession: (init) => createBuiltinSession(options, init) };
}

function createBuiltinSession(options: BuiltinRuntimeOptions, init: CreateSessionOptions): RuntimeSession {
  const { client, model, tools: executor, maxTurns, maxToolCalls } = options;
  const retryPolicy = options.retry ?? defaultRetryPolicy;
  const tools = chatTools(init.tools);
  const context = new ModelContext({
    system: init.system,
    history: init.history,
    tools,
    window: options.contextWindow ?? DEFAULT_CONTEXT_WINDOW,
  });
  let unanswered = context.unanswered;
  let turn = init.history.reduce(
    (next, item) => (item.role === "assistant" ? Math.max(next, item.turn + 1) : next),
    0,
  );
  let toolCalls = init.history.reduce(
    (count, item) => (item.role === "assistant" ? count + item.calls.length : count),
    0,
  );
  const logger = options.logger.child({ engine: "builtin", model });

  /**
   * Runs `calls` of `callTurn` (but those with a `known` result, by position): each goes to the
   * executor once, in position order; the approvals they need are waited for once every call is
   * proposed. The results join the conversation in position order, one tool message per call.
   */
  async function* runCalls(
    callTurn: number,
    calls: TranscriptCall[],
    signal: AbortSignal,
    known: ReadonlyMap<number, string> = new Map(),
  ): AsyncGenerator<RuntimeEvent> {
    const answers = new Map<number, ToolAnswer>();
    const waiting: Array<{
      call: TranscriptCall;
      invocation: Extract<ToolInvocation, { kind: "pending_approval" }>;
    }> = [];
    const base = (call: TranscriptCall) => ({
      turn: callTurn,
      position: call.position,
      callId: call.callId,
      name: call.name,
    });
    const answered = (call: TranscriptCall, answer: ToolAnswer): RuntimeEvent => {
      answers.set(call.position, answer);
      const note = context.approvals.get(call.callId);
      if (note) context.approvals.set(call.callId, { ...note, decided: true, status: answer.status });
      logger.info({ ...base(call), status: answer.status }, "tool result");
      return { type: "tool_result", ...base(call), status: answer.status, content: answer.content };
    };
    for (const call of calls) {
      const result = known.get(call.position);
      if (result !== undefined) {
        answers.set(call.position, { status: "recorded", content: result });
        continue;
      }
      logger.info(
        {
          ...base(call),
          argumentsDigest: digest(call.arguments),
          argumentsBytes: Buffer.byteLength(call.arguments),
        },
        "tool call",
      );
      yield { type: "tool_call", ...base(call), arguments: call.arguments };
      const invocation = await executor.invoke({ ...base(call), arguments: call.arguments }, { signal });
      if (invocation.kind === "pending_approval") {
        logger.info({ ...base(call), approval: invocation.approval }, "waiting for approval");
        yield { type: "approval_required", ...base(call), approval: invocation.approval };
        context.approvals.set(call.callId, { approval: invocation.approval, decided: false });
        waiting.push({ call, invocation });
      } else {
        yield answered(call, { status: invocation.status, content: invocation.content });
      }
    }
    for (const { call, invocation } of waiting) yield answered(call, await invocation.wait(signal));
    context.addResults(callTurn, calls, (call) => answers.get(call.position)!.content);
  }

  /** Asks the model once (streamed), yielding text deltas; returns the merged answer. */
  async function* modelAnswer(
    messages: ChatMessage[],
    signal: AbortSignal,
    withoutTools: boolean,
  ): AsyncGenerator<RuntimeEvent, MergedAnswer> {
    for (let attempt = 1; ; attempt += 1) {
      const answer = emptyAnswer();
      let shown = false;
      try {
        const stream = await client.chat.completions.create(
          {
            model,
            messages,
            ...(tools.length > 0 ? { tools, ...(withoutTools ? { tool_choice: "none" as const } : {}) } : {}),
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal, maxRetries: 0 },
        );
        for await (const chunk of stream) {
          const delta = mergeChunk(answer, chunk);
          if (delta) {
            shown = true;
            yield { type: "text", turn, delta };
          }
        }
        return answer;
      } catch (error) {
        if (signal.aborted) throw error;
        // Too long: the caller compacts and asks again, once (never a plain retry).
        if (!shown && isContextOverflow(error)) throw error;
        // Text already handed out cannot be taken back, so a stream broken after it is not asked again.
        const failure = failureOf(error);
        const decision = shown
          ? { retry: false as const, why: "the stream broke after text was shown" }
          : retryDecision(failure, attempt, retryPolicy);
        if (failure.kind === "budget")
          throw new ModelRequestError("limit_exceeded", failure.message, { cause: error, final: true });
        if (!decision.retry) throw modelRequestError(error, decision.why, isFinalFailure(failure));
        logger.warn(
          {
            turn,
            attempt,
            status: error instanceof OpenAI.APIError ? error.status : undefined,
            delayMs: Math.round(decision.delayMs),
            why: decision.why,
          },
          "model request failed; retrying",
        );
        await sleep(decision.delayMs, undefined, { signal });
      }
    }
  }

  async function* run(text: string | undefined, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    if (unanswered) {
      const pending = unanswered;
      unanswered = undefined;
      yield* runCalls(pending.turn, pending.calls, signal, pending.results);
    }
    if (text !== undefined) context.addUser(text);
    for (;;) {
      if (turn >= maxTurns) {
        yield {
          type: "error",
          kind: "limit_exceeded",
          message: `the session reached maxTurns (${maxTurns})`,
        };
        return;
      }
      const withoutTools = toolCalls >= maxToolCalls;
      let answer: MergedAnswer | undefined;
      for (let refusals = 0; answer === undefined; refusals += 1) {
        const view = context.next();
        if (view.compaction) {
          logger.info({ turn, ...view.compaction }, "context compacted");
          yield { type: "compaction", turn, ...view.compaction };
        }
        try {
          answer = yield* modelAnswer(view.messages, signal, withoutTools);
        } catch (error) {
          if (signal.aborted || !isContextOverflow(error)) throw error;
          if (refusals > 0) throw modelRequestError(error, "too long again after compacting", true);
          logger.warn({ turn }, "the model endpoint refused the context as too long; compacting");
          context.refusedAsTooLong(error instanceof Error ? error.message : String(error));
        }
      }
      if (answer.usage) context.observeUsage(answer.usage.inputTokens);
      const calls = toolCallsOf(answer, turn);
      const usage: TokenUsage = answer.usage ?? { inputTokens: 0, outputTokens: 0 };
      logger.info(
        { turn, toolCalls: calls.length, finishReason: answer.finishReason, ...usage },
        answer.finishReason === "length" ? "model answer cut off by the token limit" : "model answered",
      );
      context.addAssistant(turn, answer.text, calls);
      toolCalls += calls.length;
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
      if (withoutTools) {
        yield {
          type: "error",
          kind: "limit_exceeded",
          message: `the session reached maxToolCalls (${maxToolCalls}) and the model kept calling tools`,
        };
        return;
      }
    }
  }

  return sessionSend({ run, errorEvent, logger });
}
