/**
 * Metering of a model answer as it passes through the proxy (pure): a meter reads the token usage from
 * the answer's bytes without changing them — the SSE events of a stream, the JSON body otherwise — with
 * what each wire API's answers look like left to a reading (gateway/model-wires.ts). An answer that
 * reports no usage (an endpoint that ignores `include_usage`, a stream cut short) is estimated at about
 * four characters per token, so a session cannot spend tokens the budget does not see.
 */

/** Input and output tokens of one answer. */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
}

/** Tokens of one model request; `estimated` when the answer reported none. */
export interface MeteredUsage extends TokenCounts {
  estimated: boolean;
}

/** Reads usage from an answer's bytes, pushed in order as they arrive. */
export interface UsageMeter {
  push(bytes: Uint8Array): void;
  /** The usage once the answer ended (or was cut off). */
  finish(): MeteredUsage;
}

/** What one parsed SSE event or body says: the usage it reports, and the characters the model produced. */
export interface AnswerReading {
  usage: TokenCounts | undefined;
  outputChars: number;
}

/** Reads one parsed SSE event's data or one whole JSON body (any shape: endpoints vary). */
export type AnswerReader = (value: unknown) => AnswerReading;

/** About four characters per token, at least one token for anything non-empty. */
export function estimateTokens(chars: number): number {
  return chars <= 0 ? 0 : Math.ceil(chars / 4);
}

interface MeterState {
  usage?: TokenCounts;
  outputChars: number;
}

/** Folds one reading into the running totals: the latest usage reported wins, output characters add up. */
function fold(state: MeterState, reading: AnswerReading) {
  if (reading.usage) state.usage = reading.usage;
  state.outputChars += reading.outputChars;
}

function result(state: MeterState, promptChars: number): MeteredUsage {
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
 * A meter of a streamed answer (`text/event-stream`: events separated by blank lines, their `data:`
 * lines joined; `data: [DONE]` ends Chat Completions streams). `read` takes each event's parsed data;
 * `promptChars` (the request's length) and the streamed output make the estimate when none reports usage.
 */
export function sseUsageMeter(promptChars: number, read: AnswerReader): UsageMeter {
  const decoder = new TextDecoder();
  const state: MeterState = { outputChars: 0 };
  let pending = "";
  const event = (text: string) => {
    const data = text
      .split(/\r\n|\r|\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5))
      .join("\n");
    if (data === "" || data === "[DONE]") return;
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      return; // Not JSON: nothing to meter in it; it passed through unchanged all the same.
    }
    fold(state, read(value));
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

/** A meter of a non-streamed answer: what `read` finds in the JSON body, else the estimate. */
export function jsonUsageMeter(promptChars: number, read: AnswerReader): UsageMeter {
  const parts: Uint8Array[] = [];
  let size = 0;
  return {
    push(bytes) {
      size += bytes.byteLength;
      if (size <= MAX_BODY_BYTES) parts.push(bytes);
    },
    finish() {
      const state: MeterState = { outputChars: 0 };
      let value: unknown;
      try {
        value = size <= MAX_BODY_BYTES ? JSON.parse(Buffer.concat(parts).toString("utf8")) : undefined;
      } catch {
        // A body that is not JSON reports no usage: estimated below from its length.
      }
      if (value === undefined) state.outputChars = size;
      else fold(state, read(value));
      return result(state, promptChars);
    },
  };
}
