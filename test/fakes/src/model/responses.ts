/**
 * OpenAI Responses framing of a played answer: the non-streamed `response` object, and the event
 * sequence of a stream as OpenAI sends it (each event `event: <type>` + `data: {…}`, `sequence_number`
 * counting from 0, no `[DONE]`):
 *   response.created, response.in_progress
 *   a `message` item: output_item.added, content_part.added, output_text.delta…, output_text.done,
 *     content_part.done, output_item.done
 *   per call a `function_call` item: output_item.added (arguments ""), function_call_arguments.delta…,
 *     function_call_arguments.done, output_item.done
 *   response.completed with `usage` — or response.incomplete (`max_output_tokens`) for an answer cut
 *   off (truncate_arguments: the cut call's item is `incomplete`)
 * Item ids (`msg_…`, `fc_…`) are unique per answer; a call's `call_id` is the script's. The answer's
 * layout applies to the calls' events as to Chat Completions deltas: `interleaved` alternates the
 * calls' events, `split` sends the arguments in small pieces.
 */
import type {
  Response,
  ResponseFunctionToolCall,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseStreamEvent,
  ResponseUsage,
} from "openai/resources/responses/responses";
import { type CompletionMeta, split, type Usage } from "./completion.ts";
import type { PlayedAnswer } from "./play.ts";

/** A response as the wire carries it (`output_text` is the SDK's convenience, not sent). */
export type WireResponse = Omit<Response, "output_text">;

/** Chat Completions usage counts as a Responses `usage` block. */
export function responseUsage(usage: Usage): ResponseUsage {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

function message(meta: CompletionMeta, text: string): ResponseOutputMessage {
  return {
    id: `msg_${meta.id}`,
    type: "message",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
}

/** The answer's output items: its text as a message, then one function_call per call. */
export function outputItems(meta: CompletionMeta, answer: PlayedAnswer): ResponseOutputItem[] {
  const cut = answer.finishReason === "length";
  const calls = answer.calls.map(
    (call, index): ResponseFunctionToolCall => ({
      id: `fc_${meta.id}_${index}`,
      type: "function_call",
      status: cut && index === answer.calls.length - 1 ? "incomplete" : "completed",
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      ...(call.namespace === undefined ? {} : { namespace: call.namespace }),
    }),
  );
  return [...(answer.text === null ? [] : [message(meta, answer.text)]), ...calls];
}

/** The `response` object of an answer: `in_progress` with no output, or as it ended. */
export function responseBody(
  meta: CompletionMeta,
  answer: PlayedAnswer,
  ended: { output: ResponseOutputItem[]; usage: Usage } | undefined,
): WireResponse {
  const cut = answer.finishReason === "length";
  return {
    id: meta.id,
    object: "response",
    created_at: meta.created,
    status: !ended ? "in_progress" : cut ? "incomplete" : "completed",
    model: meta.model,
    output: ended?.output ?? [],
    error: null,
    incomplete_details: ended && cut ? { reason: "max_output_tokens" } : null,
    instructions: null,
    metadata: null,
    access_programs: null,
    parallel_tool_calls: true,
    temperature: null,
    top_p: null,
    tool_choice: "auto",
    tools: [],
    ...(ended ? { usage: responseUsage(ended.usage) } : {}),
  };
}

/** An event before its `sequence_number` is given. */
type Unnumbered = ResponseStreamEvent extends infer E
  ? E extends ResponseStreamEvent
    ? Omit<E, "sequence_number">
    : never
  : never;

function messageEvents(item: ResponseOutputMessage, outputIndex: number): Unnumbered[] {
  const text = item.content[0]?.type === "output_text" ? item.content[0].text : "";
  const at = { item_id: item.id, output_index: outputIndex, content_index: 0 };
  const part = { type: "output_text" as const, text: "", annotations: [] };
  return [
    {
      type: "response.output_item.added",
      output_index: outputIndex,
      item: { ...item, status: "in_progress", content: [] },
    },
    { type: "response.content_part.added", ...at, part },
    ...split(text, Math.ceil(text.length / 12)).map(
      (delta): Unnumbered => ({ type: "response.output_text.delta", ...at, delta, logprobs: [] }),
    ),
    { type: "response.output_text.done", ...at, text, logprobs: [] },
    { type: "response.content_part.done", ...at, part: { ...part, text } },
    { type: "response.output_item.done", output_index: outputIndex, item },
  ];
}

function callEvents(item: ResponseFunctionToolCall, outputIndex: number, pieces: number): Unnumbered[] {
  const at = { item_id: item.id ?? "", output_index: outputIndex };
  return [
    {
      type: "response.output_item.added",
      output_index: outputIndex,
      item: { ...item, status: "in_progress", arguments: "" },
    },
    ...split(item.arguments, pieces).map(
      (delta): Unnumbered => ({ type: "response.function_call_arguments.delta", ...at, delta }),
    ),
    { type: "response.function_call_arguments.done", ...at, arguments: item.arguments },
    { type: "response.output_item.done", output_index: outputIndex, item },
  ];
}

/** The events of a streamed answer, in order (see the file comment). */
export function responseEvents(
  meta: CompletionMeta,
  answer: PlayedAnswer,
  usage: Usage,
): ResponseStreamEvent[] {
  const output = outputItems(meta, answer);
  // The SDK's types count `output_text` in a response; it derives it and the wire never carries it.
  const started = responseBody(meta, answer, undefined) as Response;
  const events: Unnumbered[] = [
    { type: "response.created", response: started },
    { type: "response.in_progress", response: started },
  ];
  const perCall: Unnumbered[][] = [];
  output.forEach((item, index) => {
    if (item.type === "message") events.push(...messageEvents(item, index));
    if (item.type === "function_call") {
      const pieces = answer.layout === "split" ? Math.max(3, Math.ceil(item.arguments.length / 4)) : 3;
      perCall.push(callEvents(item, index, pieces));
    }
  });
  if (answer.layout !== "interleaved") events.push(...perCall.flat());
  else {
    const longest = Math.max(0, ...perCall.map((each) => each.length));
    for (let turn = 0; turn < longest; turn += 1) {
      for (const each of perCall) if (each[turn]) events.push(each[turn]!);
    }
  }
  const ended = responseBody(meta, answer, { output, usage }) as Response;
  events.push(
    answer.finishReason === "length"
      ? { type: "response.incomplete", response: ended }
      : { type: "response.completed", response: ended },
  );
  return events.map((event, sequence) => ({ ...event, sequence_number: sequence }) as ResponseStreamEvent);
}
