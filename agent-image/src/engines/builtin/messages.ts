/** Maps the engine-neutral transcript to Chat Completions messages and tools. */
import type {
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { RuntimeTool, TranscriptCall, TranscriptItem } from "../../runtime.ts";

/**
 * The arguments string to send back in an assistant message: the model's own when it is a JSON object,
 * else `{}`. A call cut off by the token limit (`finish_reason: "length"`) or otherwise not JSON is
 * answered with an error result, but endpoints that parse replayed arguments refuse the whole request
 * (HTTP 400) while they hold the broken text — and would again on every retry.
 */
export function replayableArguments(raw: string): string {
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return raw;
  } catch {
    // Not JSON: replaced below.
  }
  return "{}";
}

/** An assistant message; `content` is null when the model said nothing besides its calls. */
export function assistantMessage(text: string, calls: TranscriptCall[]): ChatCompletionMessageParam {
  const toolCalls: ChatCompletionMessageToolCall[] = calls.map((call) => ({
    id: call.callId,
    type: "function",
    function: { name: call.name, arguments: replayableArguments(call.arguments) },
  }));
  return {
    role: "assistant",
    content: text === "" ? null : text,
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
}

/**
 * Replayed messages, and — when the last assistant turn has calls without a result — that turn's calls
 * (all of them, in position order) with the results it has (by position): its tool messages are left
 * out of `messages` for the engine to add, in position order, once the missing ones are run.
 */
export interface ReplayedConversation {
  messages: ChatCompletionMessageParam[];
  unanswered: { turn: number; calls: TranscriptCall[]; results: Map<number, string> } | undefined;
}

/**
 * The system prompt followed by the replayed transcript. Every tool call must be answered before the
 * next message (Chat Completions rejects the request otherwise), so each assistant message is followed
 * by one tool message per call, in call order: the recorded result, or — for a turn the conversation
 * went on from — a tool message saying no result was recorded. Calls of the last assistant turn without
 * a result are returned as `unanswered` for the engine to run again (the gateway recognises them by
 * turn, position and arguments). A tool item that answers no call of its turn is dropped.
 */
export function replayConversation(system: string, history: TranscriptItem[]): ReplayedConversation {
  const messages: ChatCompletionMessageParam[] = system ? [{ role: "system", content: system }] : [];
  let open: { turn: number; calls: TranscriptCall[]; results: Map<number, string> } | undefined;
  const closeTurn = () => {
    for (const call of open?.calls ?? []) {
      messages.push({
        role: "tool",
        tool_call_id: call.callId,
        content: open!.results.get(call.position) ?? "No result was recorded for this call.",
      });
    }
    open = undefined;
  };
  for (const item of history) {
    if (item.role === "tool") {
      if (open?.calls.some((call) => call.position === item.position))
        open.results.set(item.position, item.content);
      continue;
    }
    closeTurn();
    if (item.role === "user") messages.push({ role: "user", content: item.text });
    else {
      messages.push(assistantMessage(item.text, item.calls));
      open = {
        turn: item.turn,
        calls: [...item.calls].sort((a, b) => a.position - b.position),
        results: new Map(),
      };
    }
  }
  const last = open;
  if (last?.calls.some((call) => !last.results.has(call.position))) return { messages, unanswered: last };
  closeTurn();
  return { messages, unanswered: undefined };
}

/** Function tools for the request. */
export function chatTools(tools: RuntimeTool[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}
