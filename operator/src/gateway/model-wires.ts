/**
 * The two OpenAI wire APIs the model proxy serves (gateway/model-proxy.ts), one record each — what
 * differs between them, while authentication, the key, budgets, relaying and metering stay one path:
 *   Chat Completions  POST <base>/chat/completions  a stream is asked for its usage
 *                     (`stream_options.include_usage`); usage `prompt_tokens`/`completion_tokens` in the
 *                     body or the last chunk; `web_search_options` (the endpoint searches) is refused
 *   Responses         POST <base>/responses          usage `input_tokens`/`output_tokens` in the body or
 *                     in `response.completed` (also `response.incomplete`/`failed`); a background
 *                     response is refused (its usage would come after the answer, unmetered), and so is
 *                     a tool the endpoint runs itself (web search, remote MCP, code interpreter, …): it
 *                     would reach the outside from the endpoint, past the gateway, Core and the budget
 * The path is the same under the proxy (`/v1/model<path>`) and at the endpoint (`<baseURL><path>`).
 */
import type { ResponseStreamEvent, ResponseUsage, Tool } from "openai/resources/responses/responses";
import { z } from "zod";
import type { AnswerReader, AnswerReading, TokenCounts } from "./model-usage.ts";

/** A request as the proxy reads it and sends it on. */
export interface UpstreamModelRequest {
  model: string;
  stream: boolean;
  /** The body's top-level fields as the pod sent them. */
  fields: Record<string, unknown>;
  /** The JSON text sent upstream. */
  body: string;
}

/** Why a wire refuses a request: a message for the agent and the OpenAI error `code`. */
export interface WireRefusal {
  message: string;
  code: string;
}

/** One wire API: its path, how a request is read and changed, how its answers are metered. */
export interface ModelWire {
  /** As refusals name it. */
  name: string;
  /** After the base URL, e.g. `/responses`. */
  path: string;
  /** The request to send upstream, or why it is refused (not this API's shape, a field it may not use). */
  parse(body: unknown): { request: UpstreamModelRequest } | { refused: WireRefusal };
  /** Reads one streamed event's data. */
  readEvent: AnswerReader;
  /** Reads a whole non-streamed answer. */
  readBody: AnswerReader;
}

/** The upstream URL of `wire` at `baseURL` (e.g. `https://api.openai.com/v1` → `…/v1/responses`). */
export function upstreamUrl(baseURL: string, wire: ModelWire): string {
  return `${baseURL.replace(/\/+$/, "")}${wire.path}`;
}

/** The refusal of a request offering tools the endpoint runs itself, named in `tools`. */
function endpointToolRefusal(tools: string[]): WireRefusal {
  return {
    message: `The request offers tools the model endpoint would run itself (${tools.join(", ")}); an agent's tools run through Gatehouse: offer them as functions.`,
    code: "endpoint_tool_not_allowed",
  };
}

const notThis = (wire: string, error: z.ZodError) => ({
  refused: { message: `Not a ${wire} request: ${z.prettifyError(error)}`, code: "invalid_request" },
});

// ---- Chat Completions ----

/** The fields of a Chat Completions request the proxy reads; everything else passes through as sent. */
export const ProxiedChatRequest = z.looseObject({
  model: z.string().min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({}).nullish(),
  /** Search models search the web at the endpoint when this is set. */
  web_search_options: z.unknown().optional(),
});
export type ProxiedChatRequest = z.infer<typeof ProxiedChatRequest>;

/** `request` as the endpoint gets it: unchanged, except that a streamed request asks for usage. */
export function upstreamChatRequest(request: ProxiedChatRequest): UpstreamModelRequest {
  const stream = request.stream === true;
  const body = stream
    ? { ...request, stream_options: { ...(request.stream_options ?? {}), include_usage: true } }
    : request;
  return { model: request.model, stream, fields: request, body: JSON.stringify(body) };
}

const ChatUsage = z.looseObject({
  prompt_tokens: z.number().int().min(0).optional(),
  completion_tokens: z.number().int().min(0).optional(),
  total_tokens: z.number().int().min(0).optional(),
});

/** A Chat Completions `usage` as input/output tokens, or undefined when it carries none. */
export function usageFrom(value: unknown): TokenCounts | undefined {
  const parsed = ChatUsage.safeParse(value);
  if (!parsed.success) return undefined;
  const { prompt_tokens, completion_tokens, total_tokens } = parsed.data;
  if (prompt_tokens === undefined && completion_tokens === undefined) {
    return total_tokens === undefined ? undefined : { inputTokens: total_tokens, outputTokens: 0 };
  }
  return { inputTokens: prompt_tokens ?? 0, outputTokens: completion_tokens ?? 0 };
}

/** Characters of the string fields `names` of `part`. */
function charsOf(part: Record<string, unknown> | null | undefined, names: readonly string[]): number {
  let chars = 0;
  for (const name of names) {
    const value = part?.[name];
    if (typeof value === "string") chars += value.length;
  }
  return chars;
}

const ChatChoice = z.looseObject({
  delta: z.looseObject({}).nullish(),
  message: z.looseObject({}).nullish(),
});
const ChatAnswer = z.looseObject({ choices: z.array(ChatChoice).nullish(), usage: z.unknown().optional() });
const ChatToolCall = z.looseObject({ function: z.looseObject({}).nullish() });

/** Characters the model produced in a message or delta: text, reasoning, tool names and arguments. */
function chatOutputChars(part: Record<string, unknown> | null | undefined): number {
  let chars = charsOf(part, ["content", "reasoning_content", "refusal"]);
  const calls = z.array(ChatToolCall).safeParse(part?.tool_calls);
  for (const call of calls.success ? calls.data : []) chars += charsOf(call.function, ["name", "arguments"]);
  return chars;
}

/** A completion or a chunk: the same fields, `message` or `delta`. */
function readChat(value: unknown): AnswerReading {
  const parsed = ChatAnswer.safeParse(value);
  if (!parsed.success) return { usage: undefined, outputChars: 0 };
  let outputChars = 0;
  for (const choice of parsed.data.choices ?? []) {
    outputChars += chatOutputChars(choice.delta) + chatOutputChars(choice.message);
  }
  return { usage: usageFrom(parsed.data.usage), outputChars };
}

/** OpenAI Chat Completions. */
export const chatCompletions: ModelWire = {
  name: "Chat Completions",
  path: "/chat/completions",
  parse(body) {
    const parsed = ProxiedChatRequest.safeParse(body);
    if (!parsed.success) return notThis("Chat Completions", parsed.error);
    if (parsed.data.web_search_options != null)
      return { refused: endpointToolRefusal(["web_search_options"]) };
    return { request: upstreamChatRequest(parsed.data) };
  },
  readEvent: readChat,
  readBody: readChat,
};

// ---- Responses ----

const ProxiedTool = z.looseObject({
  type: z.string(),
  environment: z.looseObject({ type: z.string() }).nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
});

/** The fields of a Responses request the proxy reads; everything else passes through as sent. */
export const ProxiedResponsesRequest = z.looseObject({
  model: z.string().min(1),
  stream: z.boolean().nullish(),
  background: z.boolean().nullish(),
  tools: z.array(ProxiedTool).nullish(),
});
export type ProxiedResponsesRequest = z.infer<typeof ProxiedResponsesRequest>;

/** Tool types whose calls come back to the agent to run (through Gatehouse); the others run at the endpoint. */
const AGENT_RUN_TOOLS: ReadonlySet<Tool["type"]> = new Set<Tool["type"]>([
  "function",
  "custom",
  "namespace",
  "tool_search",
  "local_shell",
  "shell",
  "apply_patch",
  "computer",
  "computer_use_preview",
]);

/** The tools of `request` the endpoint would run itself, named by type. */
export function endpointRunTools(tools: ProxiedResponsesRequest["tools"]): string[] {
  const found: string[] = [];
  for (const tool of tools ?? []) {
    if (!AGENT_RUN_TOOLS.has(tool.type as Tool["type"])) found.push(tool.type);
    // A shell in an endpoint-hosted container runs at the endpoint.
    else if (tool.type === "shell" && tool.environment && tool.environment.type !== "local") {
      found.push(`shell (${tool.environment.type})`);
    } else if (tool.type === "namespace") found.push(...endpointRunTools(tool.tools));
  }
  return found;
}

function parseResponses(body: unknown): { request: UpstreamModelRequest } | { refused: WireRefusal } {
  const parsed = ProxiedResponsesRequest.safeParse(body);
  if (!parsed.success) return notThis("Responses", parsed.error);
  const request = parsed.data;
  if (request.background === true) {
    return {
      refused: {
        message:
          "Background responses are not proxied: their usage would arrive after the answer, past the token budget. Send the request without `background`.",
        code: "background_not_allowed",
      },
    };
  }
  const hosted = [...new Set(endpointRunTools(request.tools))];
  if (hosted.length > 0) return { refused: endpointToolRefusal(hosted) };
  const stream = request.stream === true;
  return { request: { model: request.model, stream, fields: request, body: JSON.stringify(request) } };
}

/** The usage fields the proxy reads, checked against the openai package's type. */
const ResponsesUsage = z.looseObject({
  input_tokens: z.number().int().min(0).optional(),
  output_tokens: z.number().int().min(0).optional(),
  total_tokens: z.number().int().min(0).optional(),
}) satisfies z.ZodType<Partial<Pick<ResponseUsage, "input_tokens" | "output_tokens" | "total_tokens">>>;

/** A Responses `usage` as input/output tokens, or undefined when it carries none. */
export function responsesUsageFrom(value: unknown): TokenCounts | undefined {
  const parsed = ResponsesUsage.safeParse(value);
  if (!parsed.success) return undefined;
  const { input_tokens, output_tokens, total_tokens } = parsed.data;
  if (input_tokens === undefined && output_tokens === undefined) {
    return total_tokens === undefined ? undefined : { inputTokens: total_tokens, outputTokens: 0 };
  }
  return { inputTokens: input_tokens ?? 0, outputTokens: output_tokens ?? 0 };
}

const OutputItem = z.looseObject({
  content: z.array(z.looseObject({})).nullish(),
  summary: z.array(z.looseObject({})).nullish(),
});
const ResponseBody = z.looseObject({
  usage: z.unknown().optional(),
  output: z.array(OutputItem).nullish(),
});

/** Characters the model produced in an output item: text, refusals, reasoning, tool names and input. */
function itemOutputChars(item: z.infer<typeof OutputItem>): number {
  let chars = charsOf(item, ["name", "arguments", "input"]);
  for (const part of [...(item.content ?? []), ...(item.summary ?? [])])
    chars += charsOf(part, ["text", "refusal"]);
  return chars;
}

/** A whole `response` object: its usage, and its output for the estimate. */
function readResponse(value: unknown): AnswerReading {
  const parsed = ResponseBody.safeParse(value);
  if (!parsed.success) return { usage: undefined, outputChars: 0 };
  const outputChars = (parsed.data.output ?? []).reduce((sum, item) => sum + itemOutputChars(item), 0);
  return { usage: responsesUsageFrom(parsed.data.usage), outputChars };
}

/** Stream events whose `delta` is text the model produced. */
const OUTPUT_DELTAS: ReadonlySet<ResponseStreamEvent["type"]> = new Set<ResponseStreamEvent["type"]>([
  "response.output_text.delta",
  "response.refusal.delta",
  "response.function_call_arguments.delta",
  "response.custom_tool_call_input.delta",
  "response.reasoning_text.delta",
  "response.reasoning_summary_text.delta",
]);
/** Stream events carrying the whole response, with its usage once it ended. */
const LIFECYCLE: ReadonlySet<ResponseStreamEvent["type"]> = new Set<ResponseStreamEvent["type"]>([
  "response.completed",
  "response.incomplete",
  "response.failed",
]);
const StreamEvent = z.looseObject({
  type: z.string(),
  delta: z.unknown().optional(),
  response: z.unknown().optional(),
});

/**
 * One streamed event: the usage of the response it ends, or the output characters of a delta (the
 * ending event's output repeats the deltas, so it is not counted again).
 */
function readResponsesEvent(value: unknown): AnswerReading {
  const parsed = StreamEvent.safeParse(value);
  if (!parsed.success) return { usage: undefined, outputChars: 0 };
  const type = parsed.data.type as ResponseStreamEvent["type"];
  if (LIFECYCLE.has(type)) return { usage: readResponse(parsed.data.response).usage, outputChars: 0 };
  const delta = parsed.data.delta;
  return {
    usage: undefined,
    outputChars: OUTPUT_DELTAS.has(type) && typeof delta === "string" ? delta.length : 0,
  };
}

/** OpenAI Responses. */
export const responses: ModelWire = {
  name: "Responses",
  path: "/responses",
  parse: parseResponses,
  readEvent: readResponsesEvent,
  readBody: readResponse,
};

/** Every wire the proxy serves. */
export const MODEL_WIRES: readonly ModelWire[] = [chatCompletions, responses];
