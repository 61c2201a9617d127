/**
 * OpenAI Chat Completions framing of a played answer: the non-streamed `chat.completion` body, and the
 * `chat.completion.chunk` sequence of a stream. Streams split text into small pieces and each call's
 * arguments into at least three pieces after a first delta carrying `index`, `id`, `type`,
 * `function.name` and `function.arguments: ""` (OpenAI's layout); later deltas carry only `index` and
 * `function.arguments`. So clients must merge deltas by `index`, as real models make them do; the
 * answer's layout decides whether parallel calls follow one another or interleave.
 */
import type { PlayedAnswer, PlayedCall } from "./play.ts";

/** OpenAI usage block. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Fields every completion of one request shares. */
export interface CompletionMeta {
  id: string;
  model: string;
  created: number;
}

/** A deterministic token estimate (≈ 4 characters per token, at least 1). */
export function estimateUsage(promptChars: number, answer: PlayedAnswer): Usage {
  const outputChars =
    (answer.text?.length ?? 0) +
    answer.calls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  const prompt_tokens = Math.max(1, Math.ceil(promptChars / 4));
  const completion_tokens = Math.max(1, Math.ceil(outputChars / 4));
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** The usage an answer reports: the script's fixed counts when it gives them, else the estimate. */
export function usageOf(promptChars: number, answer: PlayedAnswer): Usage {
  if (!answer.usage) return estimateUsage(promptChars, answer);
  const { promptTokens, completionTokens } = answer.usage;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

/** Splits `text` into `parts` nearly equal pieces (fewer when the text is shorter). */
export function split(text: string, parts: number): string[] {
  if (text.length === 0) return [];
  const size = Math.ceil(text.length / Math.min(parts, text.length));
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}

/** The non-streamed `chat.completion` body. */
export function completionBody(meta: CompletionMeta, answer: PlayedAnswer, usage: Usage) {
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: answer.text,
          refusal: null,
          ...(answer.calls.length > 0
            ? {
                tool_calls: answer.calls.map((call) => ({
                  id: call.id,
                  type: "function",
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: answer.finishReason,
      },
    ],
    usage,
  };
}

/** One tool-call delta of a stream. */
type CallDelta = Record<string, unknown> & { index: number };

/** The deltas of one call: its first delta (id and name), then its argument pieces. */
function callDeltas(call: PlayedCall, index: number, pieces: number): CallDelta[] {
  return [
    { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
    ...split(call.arguments, pieces).map((piece) => ({ index, function: { arguments: piece } })),
  ];
}

/** The tool-call deltas of an answer in the order its layout sends them, one delta per chunk. */
export function toolCallDeltas(answer: PlayedAnswer): CallDelta[] {
  if (answer.layout === "split") {
    return answer.calls.flatMap((call, index) =>
      callDeltas(call, index, Math.max(3, Math.ceil(call.arguments.length / 4))),
    );
  }
  const perCall = answer.calls.map((call, index) => callDeltas(call, index, 3));
  if (answer.layout === "sequential") return perCall.flat();
  // Interleaved: the first delta of every call, then the calls' argument pieces in turn.
  const deltas: CallDelta[] = [];
  const longest = Math.max(0, ...perCall.map((each) => each.length));
  for (let turn = 0; turn < longest; turn += 1) {
    for (const each of perCall) if (each[turn]) deltas.push(each[turn]!);
  }
  return deltas;
}

/**
 * The chunks of a streamed answer, in order. With `usage` (the client set
 * `stream_options.include_usage`) every chunk carries `usage: null` and a last chunk with no choices
 * carries the usage, as OpenAI streams do.
 */
export function completionChunks(meta: CompletionMeta, answer: PlayedAnswer, usage: Usage | undefined) {
  const frame = (choices: unknown[], usageField: Usage | null) => ({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices,
    ...(usage ? { usage: usageField } : {}),
  });
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    frame([{ index: 0, delta, logprobs: null, finish_reason: finish }], null);
  const chunks: unknown[] = [chunk({ role: "assistant", content: answer.text === null ? null : "" })];
  for (const piece of split(answer.text ?? "", Math.ceil((answer.text?.length ?? 0) / 12))) {
    chunks.push(chunk({ content: piece }));
  }
  for (const delta of toolCallDeltas(answer)) chunks.push(chunk({ tool_calls: [delta] }));
  chunks.push(chunk({}, answer.finishReason));
  if (usage) chunks.push(frame([], usage));
  return chunks;
}
