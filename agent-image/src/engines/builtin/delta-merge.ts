/**
 * Merges a streamed Chat Completions answer into one assistant message. Text deltas are concatenated;
 * tool-call deltas are merged by `index` (id and name from the first delta that carries them,
 * argument pieces concatenated in arrival order), as OpenAI documents for streamed function calls —
 * pieces of parallel calls may interleave.
 */
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { TranscriptCall } from "../../runtime.ts";

/** One merged tool call; `arguments` is the raw string the model produced (possibly invalid JSON). */
export interface MergedCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

/** The merged answer so far. */
export interface MergedAnswer {
  text: string;
  calls: Map<number, MergedCall>;
  finishReason: string | null;
  usage: { inputTokens: number; outputTokens: number } | undefined;
}

/** An empty answer to merge chunks into. */
export function emptyAnswer(): MergedAnswer {
  return { text: "", calls: new Map(), finishReason: null, usage: undefined };
}

/** Merges one chunk into `answer` (mutated) and returns the chunk's text delta ("" when none). */
export function mergeChunk(answer: MergedAnswer, chunk: ChatCompletionChunk): string {
  if (chunk.usage) {
    answer.usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
  }
  let text = "";
  // Only choice 0 is requested (n = 1); other choices would be other answers, not parts of this one.
  for (const choice of chunk.choices) {
    if (choice.index !== 0) continue;
    if (choice.finish_reason) answer.finishReason = choice.finish_reason;
    if (choice.delta.content) text += choice.delta.content;
    for (const delta of choice.delta.tool_calls ?? []) {
      let call = answer.calls.get(delta.index);
      if (!call) {
        call = { index: delta.index, id: "", name: "", arguments: "" };
        answer.calls.set(delta.index, call);
      }
      if (delta.id && !call.id) call.id = delta.id;
      if (delta.function?.name && !call.name) call.name = delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
    }
  }
  answer.text += text;
  return text;
}

/** The merged calls in index order. */
export function orderedCalls(answer: MergedAnswer): MergedCall[] {
  return [...answer.calls.values()].sort((a, b) => a.index - b.index);
}

/**
 * The answer's tool calls as the transcript keeps them: in index order, `position` 0, 1, …, and a call
 * id unique within the answer — a missing id, or one an earlier call of the same answer already
 * carries, becomes `call_<turn>_<position>`, since the next request must answer each id exactly once.
 * (Ids reused across answers are fine: each tool message follows its own assistant message.)
 */
export function toolCallsOf(answer: MergedAnswer, turn: number): TranscriptCall[] {
  const seen = new Set<string>();
  return orderedCalls(answer).map((call, position) => {
    let callId = call.id;
    if (!callId || seen.has(callId)) callId = `call_${turn}_${position}`;
    while (seen.has(callId)) callId = `${callId}_`;
    seen.add(callId);
    return { position, callId, name: call.name, arguments: call.arguments };
  });
}
