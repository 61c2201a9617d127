/**
 * The parts of an OpenAI Responses request the scripted model reads, parsed once at the boundary, and
 * the same conversation as Chat Completions messages, so one script plays on either wire: the
 * assistant's output items between two inputs (messages, reasoning, `function_call`s) are one assistant
 * message — one step — and a `function_call_output` is the tool message answering its `call_id`.
 */
import { z } from "zod";
import type { ChatMessage } from "./conversation.ts";
import { qualifiedToolName } from "./play.ts";

const Part = z.looseObject({ type: z.string(), text: z.string().optional() });
const Content = z.union([z.string(), z.array(Part), z.null()]);

/** One input item (loose: unknown items and fields of real clients are kept out of the way). */
export const ResponsesInputItem = z.looseObject({
  type: z.string().optional(),
  role: z.string().optional(),
  content: Content.optional(),
  call_id: z.string().optional(),
  name: z.string().optional(),
  arguments: z.string().optional(),
  /** A custom tool call's input. */
  input: z.string().optional(),
  output: Content.optional(),
});
export type ResponsesInputItem = z.infer<typeof ResponsesInputItem>;

const OfferedTool = z.looseObject({
  type: z.string(),
  name: z.string().optional(),
  tools: z.array(z.looseObject({ type: z.string(), name: z.string().optional() })).optional(),
});

/** `POST /v1/responses` body, as far as the scripted model cares. */
export const ResponsesRequest = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(ResponsesInputItem)]),
  instructions: z.string().nullish(),
  tools: z.array(OfferedTool).nullish(),
  stream: z.boolean().nullish(),
});
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

/**
 * Names of the tools a request offers: functions and custom tools, top-level or in a namespace (there
 * by their name and by `<namespace>/<name>`).
 */
export function offeredTools(request: ResponsesRequest): Set<string> {
  const names = new Set<string>();
  for (const tool of request.tools ?? []) {
    for (const each of tool.type === "namespace" ? (tool.tools ?? []) : [tool]) {
      if ((each.type === "function" || each.type === "custom") && each.name) {
        names.add(each.name);
        if (tool.type === "namespace" && tool.name) names.add(qualifiedToolName(tool.name, each.name));
      }
    }
  }
  return names;
}

const ROLES = new Set(["system", "developer", "user", "assistant"]);
/** Items the assistant produced: the ones one step of a script answers with. */
const ASSISTANT_ITEMS = new Set(["function_call", "custom_tool_call", "reasoning"]);

function textOf(content: z.infer<typeof Content> | undefined): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("");
}

/** The request's instructions and input as Chat Completions messages (see the file comment). */
export function chatMessagesOf(request: ResponsesRequest): ChatMessage[] {
  const messages: ChatMessage[] = request.instructions
    ? [{ role: "developer", content: request.instructions }]
    : [];
  const items: ResponsesInputItem[] =
    typeof request.input === "string" ? [{ role: "user", content: request.input }] : request.input;
  /** The assistant message the latest output items went into, while no input came after them. */
  let open:
    | (ChatMessage & { content: string; tool_calls: NonNullable<ChatMessage["tool_calls"]> })
    | undefined;
  const assistant = () => {
    if (!open) {
      open = { role: "assistant", content: "", tool_calls: [] };
      messages.push(open);
    }
    return open;
  };
  for (const item of items) {
    const type = item.type ?? "message";
    if (type === "message" && item.role === "assistant") {
      assistant().content += textOf(item.content);
    } else if (ASSISTANT_ITEMS.has(type)) {
      if (type === "reasoning") assistant();
      else {
        const args = type === "function_call" ? item.arguments : item.input;
        assistant().tool_calls.push({
          id: item.call_id ?? "",
          function: { name: item.name ?? "", arguments: args ?? "" },
        });
      }
    } else if (type === "function_call_output" || type === "custom_tool_call_output") {
      open = undefined;
      messages.push({ role: "tool", tool_call_id: item.call_id, content: textOf(item.output) });
    } else if (type === "message" && item.role && ROLES.has(item.role)) {
      open = undefined;
      messages.push({ role: item.role as ChatMessage["role"], content: textOf(item.content) });
    }
  }
  return messages;
}
