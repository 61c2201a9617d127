/**
 * The parts of an OpenAI Chat Completions request the scripted model reads, parsed once at the
 * boundary, and what it derives from the conversation: which step to play and the latest tool results
 * that templates may use.
 */
import { z } from "zod";

const TextPart = z.object({ type: z.string(), text: z.string().optional() }).loose();

/** One request message (loose: unknown fields of real clients are kept out of the way, not refused). */
export const ChatMessage = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"]),
    content: z.union([z.string(), z.array(TextPart), z.null()]).optional(),
    tool_calls: z
      .array(
        z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }) }).loose(),
      )
      .optional(),
    tool_call_id: z.string().optional(),
  })
  .loose();
export type ChatMessage = z.infer<typeof ChatMessage>;

/** `POST /v1/chat/completions` body, as far as the scripted model cares. */
export const ChatRequest = z
  .object({
    model: z.string().min(1),
    messages: z.array(ChatMessage).min(1),
    tools: z
      .array(
        z.object({ type: z.literal("function"), function: z.object({ name: z.string() }).loose() }).loose(),
      )
      .optional(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullish(),
  })
  .loose();
export type ChatRequest = z.infer<typeof ChatRequest>;

/** A tool message's content, raw and (when it is JSON) parsed. */
export interface ToolResult {
  /** The message's index in the request's `messages`. */
  position: number;
  callId: string | undefined;
  tool: string | undefined;
  content: string;
  value: unknown;
}

/** A tool call an assistant message of the conversation made. */
export interface MadeCall {
  /** The assistant message's index in the request's `messages`. */
  position: number;
  id: string;
  name: string;
}

/** What the scripted model needs to know about a conversation. */
export interface ConversationView {
  /** The step to play: the number of assistant messages so far. */
  step: number;
  /** Every tool call of the assistant messages, in order. */
  calls: MadeCall[];
  /** Every tool message, in order. */
  results: ToolResult[];
  /** The latest tool message, if any. */
  last: ToolResult | undefined;
  /** The latest result per tool name (names resolved through the assistant messages' call ids). */
  byTool: Map<string, ToolResult>;
  /** The latest result per call id. */
  byCall: Map<string, ToolResult>;
  /** Characters of all message text: the basis of the usage estimate. */
  promptChars: number;
}

/** The text of a message's content (string, parts, or none). */
export function textOf(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!content) return "";
  return content.map((part) => part.text ?? "").join("");
}

function parsedOrRaw(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return content;
  }
}

/** Derives the step, the calls made and the tool results from the request's messages. */
export function viewConversation(messages: ChatMessage[]): ConversationView {
  const toolNameById = new Map<string, string>();
  const calls: MadeCall[] = [];
  const results: ToolResult[] = [];
  const byTool = new Map<string, ToolResult>();
  const byCall = new Map<string, ToolResult>();
  let step = 0;
  let promptChars = 0;
  messages.forEach((message, position) => {
    const text = textOf(message.content);
    promptChars += text.length;
    if (message.role === "assistant") {
      step += 1;
      for (const call of message.tool_calls ?? []) {
        toolNameById.set(call.id, call.function.name);
        calls.push({ position, id: call.id, name: call.function.name });
        promptChars += call.function.name.length + call.function.arguments.length;
      }
    }
    if (message.role === "tool") {
      const callId = message.tool_call_id;
      const tool = callId ? toolNameById.get(callId) : undefined;
      const result: ToolResult = { position, callId, tool, content: text, value: parsedOrRaw(text) };
      results.push(result);
      if (tool) byTool.set(tool, result);
      if (callId) byCall.set(callId, result);
    }
  });
  return { step, calls, results, last: results.at(-1), byTool, byCall, promptChars };
}
