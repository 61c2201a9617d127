/**
 * OpenAI Chat Completions framing of a played answer: the non-streamed `chat.completion` body, and the
 * `chat.completion.chunk` sequence of a stream. Streams split text into small pieces and each call's
 * arguments into at least three pieces (after a first chunk carrying id and name), so clients must
 * merge deltas by `index` — as real models make them do.
 */
import type { PlayedAnswer } from "./play.ts";

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

function finishReason(answer: PlayedAnswer): "tool_calls" | "stop" {
  return answer.calls.length > 0 ? "tool_calls" : "stop";
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
        finish_reason: finishReason(answer),
      },
    ],
    usage,
  };
}

/** The chunks of a streamed answer, in order; the usage chunk only when the client asked for it. */
export function completionChunks(meta: CompletionMeta, answer: PlayedAnswer, usage: Usage | undefined) {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const chunks: unknown[] = [chunk({ role: "assistant", content: answer.text === null ? null : "" })];
  for (const piece of split(answer.text ?? "", Math.ceil((answer.text?.length ?? 0) / 12))) {
    chunks.push(chunk({ content: piece }));
  }
  answer.calls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
    );
    for (const piece of split(call.arguments, 3)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, finishReason(answer)));
  if (usage) {
    chunks.push({
      id: meta.id,
      object: "chat.completion.chunk",
      created: meta.created,
      model: meta.model,
      choices: [],
      usage,
    });
  }
  return chunks;
}
