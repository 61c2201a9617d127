/**
 * The pure parts of the agent: MCP's tool list as OpenAI function tools, the model's raw arguments as
 * the object MCP sends, an MCP tool result as the text the model reads, the Approval a call still
 * waits for, and the conversation a session's messages and earlier answers make. No I/O.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";

/** The tool Gatehouse's MCP endpoint offers to end the session: `{text}` is the answer the user reads. */
export const FINAL_ANSWER_TOOL = "gatehouse_final_answer";

/** MCP tools as Chat Completions function tools: same name, description and JSON Schema. */
export function openAiToolsOf(tools: readonly Tool[]): ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      description: tool.description ?? "",
      parameters: tool.inputSchema as Record<string, unknown>,
    },
  }));
}

/**
 * The model's arguments (a JSON string, possibly empty, cut off or not an object) as MCP's
 * `arguments` object, or the message the model gets instead so it can correct itself.
 */
export function argumentsOf(
  raw: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  if (raw.trim() === "") return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return {
      ok: false,
      message: `The arguments are not valid JSON (${(error as Error).message}); nothing was done.`,
    };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, message: "The arguments must be a JSON object; nothing was done." };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/**
 * What the model reads of a tool result: its text parts as the server wrote them (Gatehouse words
 * refusals and errors for the model itself), other parts named; the structured content only when
 * there is no text.
 */
export function resultText(result: CallToolResult): string {
  const parts = result.content.map((part) => (part.type === "text" ? part.text : `[${part.type} omitted]`));
  if (parts.length > 0) return parts.join("\n");
  return result.structuredContent ? JSON.stringify(result.structuredContent) : "";
}

/**
 * The Approval a call still waits for, when the endpoint answered "not decided yet, call again"
 * (`structuredContent: {status: "pending_approval", approval}`); undefined for any other answer.
 */
export function pendingApprovalOf(result: CallToolResult): string | undefined {
  const structured = result.structuredContent as { status?: unknown; approval?: unknown } | undefined;
  if (structured?.status !== "pending_approval") return undefined;
  return typeof structured.approval === "string" ? structured.approval : "";
}

/** A final answer stored in the session's history: `{turn, text}`, the message it answered. */
export interface StoredAnswer {
  turn: number;
  text: string;
}

/**
 * The conversation to send for the first message without a stored answer: the session's
 * instructions, then each earlier message with its answer, then that message. Undefined when every
 * message is answered. Only the answers of earlier messages are kept, not their tool calls.
 */
export function conversationOf(
  instructions: string,
  messages: ReadonlyArray<{ text: string }>,
  answers: readonly StoredAnswer[],
): { index: number; messages: ChatCompletionMessageParam[] } | undefined {
  const answered = new Map(answers.map((answer) => [answer.turn, answer.text]));
  const index = messages.findIndex((_, i) => !answered.has(i));
  if (index < 0) return undefined;
  const conversation: ChatCompletionMessageParam[] = instructions
    ? [{ role: "system", content: instructions }]
    : [];
  for (const [i, message] of messages.slice(0, index + 1).entries()) {
    conversation.push({ role: "user", content: message.text });
    const answer = answered.get(i);
    if (answer !== undefined) conversation.push({ role: "assistant", content: answer });
  }
  return { index, messages: conversation };
}
