/**
 * What the model proxy changes in a Chat Completions request and what it reads from the answer (pure):
 * streamed requests ask for usage (`stream_options.include_usage: true`), and a meter reads the token
 * usage from the answer's bytes as they pass — the last SSE chunk's `usage` of a stream, the body's
 * `usage` otherwise — without changing them. An answer that reports no usage (an endpoint that ignores
 * `include_usage`, a stream cut short) is estimated at about four characters per token, so a session
 * cannot spend tokens the budget does not see.
 */
import { z } from "zod";

/** The fields of a Chat Completions request the proxy reads; everything else passes through as sent. */
export const ProxiedChatRequest = z.looseObject({
  model: z.string().min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({}).nullish(),
});
export type ProxiedChatRequest = z.infer<typeof ProxiedChatRequest>;

/** The request as sent upstream: the body text and what the proxy needs to know about it. */
export interface UpstreamChatRequest {
  model: string;
  stream: boolean;
  /** JSON text of the request with `stream_options.include_usage: true` when streamed. */
  body: string;
}

/** `request` as the endpoint gets it: unchanged, except that a streamed request asks for usage. */
export function upstreamChatRequest(request: ProxiedChatRequest): UpstreamChatRequest {
  const stream = request.stream === true;
  const body = stream
    ? { ...request, stream_options: { ...(request.stream_options ?? {}), include_usage: true } }
    : request;
  return { model: request.model, stream, body: JSON.stringify(body) };
}

/** Tokens of one model request; `estimated` when the answer reported none. */
export interface MeteredUsage {
  inputTokens: number;
  outputTokens: number;
  estimated: boolean;
}

/** Reads usage from an answer's bytes, pushed in order as they arrive. */
export interface UsageMeter {
  push(bytes: Uint8Array): void;
  /** The usage once the answer ended (or was cut off). */
  finish(): MeteredUsage;
}

const OpenAiUsage = z.looseObject({
  prompt_tokens: z.number().int().min(0).optional(),
  completion_tokens: z.number().int().min(0).optional(),
  total_tokens: z.number().int().min(0).optional(),
});

/** An answer's or chunk's `usage` as input/output tokens, or undefined when it carries none. */
export function usageFrom(value: unknown): { inputTokens: number; outputTokens: number } | undefined {
  const parsed = OpenAiUsage.safeParse(value);
  if (!parsed.success) return undefined;
  const { prompt_tokens, completion_tokens, total_tokens } = parsed.data;
  if (prompt_tokens === undefined && completion_tokens === undefined) {
    return total_tokens === undefined ? undefined : { inputTokens: total_tokens, outputTokens: 0 };
  }
  return { inputTokens: prompt_tokens ?? 0, outputTokens: completion_tokens ?? 0 };
}

/** About four characters per token, at least one token for anything non-empty. */
export function estimateTokens(chars: number): number {
  return chars <= 0 ? 0 : Math.ceil(chars / 4);
}

const Choice = z.looseObject({
  delta: z.looseObject({}).nullish(),
  message: z.looseObject({}).nullish(),
});
const Completion = z.looseObject({ choices: z.array(Choice).nullish(), usage: z.unknown().optional() });

/** Characters the model produced in a message or delta: text, reasoning, tool names and arguments. */
function outputChars(part: Record<string, unknown> | null | undefined): number {
  if (!part) return 0;
  let chars = 0;
  for (const field of ["content", "reasoning_content", "refusal"]) {
    const value = part[field];
    if (typeof value === "string") chars += value.length;
  }
  const calls = part.tool_calls;
  if (Array.isArray(calls)) {
    for (const call of calls) {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
      if (typeof fn?.name === "string") chars += fn.name.length;
      if (typeof fn?.arguments === "string") chars += fn.arguments.length;
    }
  }
  return chars;
}

/** Folds one parsed completion or chunk into the running totals. */
function fold(
  state: { usage?: { inputTokens: number; outputTokens: number }; outputChars: number },
  value: unknown,
) {
  const parsed = Completion.safeParse(value);
  if (!parsed.success) return;
  const usage = usageFrom(parsed.data.usage);
  if (usage) state.usage = usage;
  for (const choice of parsed.data.choices ?? []) {
    state.outputChars += outputChars(choice.delta) + outputChars(choice.message);
  }
}

function result(
  state: { usage?: { inputTokens: number; outputTokens: number }; outputChars: number },
  promptChars: number,
): MeteredUsage {
  if (state.usage) return { ...state.usage, estimated: false };
  return {
    inputTokens: estimateTokens(promptChars),
    outputTokens: estimateTokens(state.outputChars),
    estimated: true,
  };
}

/** One SSE event's data larger than this is not parsed (it still passes through). */
const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/**
 * A meter of a streamed answer (`text/event-stream`: `data: {chunk}` events separated by blank lines,
 * `data: [DONE]` last). The usage is the last chunk's `usage`; `promptChars` (the request's length)
 * and the streamed output make the estimate when no chunk carries one.
 */
export function sseUsageMeter(promptChars: number): UsageMeter {
  const decoder = new TextDecoder();
  const state: { usage?: { inputTokens: number; outputTokens: number }; outputChars: number } = {
    outputChars: 0,
  };
  let pending = "";
  const event = (text: string) => {
    const data = text
      .split(/\r\n|\r|\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5))
      .join("\n");
    if (data === "" || data === "[DONE]") return;
    try {
      fold(state, JSON.parse(data));
    } catch {
      // Not JSON: nothing to meter in it; it passed through unchanged all the same.
    }
  };
  const drain = (final: boolean) => {
    for (;;) {
      const boundary = /\r\n\r\n|\n\n|\r\r/.exec(pending);
      if (!boundary) break;
      event(pending.slice(0, boundary.index));
      pending = pending.slice(boundary.index + boundary[0].length);
    }
    if (final && pending.trim() !== "") event(pending);
    if (final || pending.length > MAX_EVENT_CHARS) pending = "";
  };
  return {
    push(bytes) {
      pending += decoder.decode(bytes, { stream: true });
      drain(false);
    },
    finish() {
      pending += decoder.decode();
      drain(true);
      return result(state, promptChars);
    },
  };
}

/** A body larger than this is not parsed for usage (it still passes through; usage is then estimated). */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** A meter of a non-streamed answer: the JSON body's `usage`, else the estimate. */
export function jsonUsageMeter(promptChars: number): UsageMeter {
  const parts: Uint8Array[] = [];
  let size = 0;
  return {
    push(bytes) {
      size += bytes.byteLength;
      if (size <= MAX_BODY_BYTES) parts.push(bytes);
    },
    finish() {
      const state: { usage?: { inputTokens: number; outputTokens: number }; outputChars: number } = {
        outputChars: 0,
      };
      if (size <= MAX_BODY_BYTES) {
        try {
          fold(state, JSON.parse(Buffer.concat(parts).toString("utf8")));
        } catch {
          // A body that is not JSON reports no usage: estimated below from its length.
          state.outputChars = size;
        }
      } else {
        state.outputChars = size;
      }
      return result(state, promptChars);
    },
  };
}
