/**
 * Picks the scripted step for a conversation and turns it into a concrete answer: the wait checked,
 * alternatives chosen, templates filled, tool arguments serialized, argument faults applied. Pure; the
 * server adds transport faults (429, 5xx) and framing.
 */
import type { ConversationView } from "./conversation.ts";
import {
  type Reply,
  type Script,
  ScriptError,
  type ScriptedUsage,
  type TransportFault,
  type Wait,
  type When,
} from "./script.ts";
import { fill, lookup, resultOf } from "./template.ts";

/** A tool call as it goes on the wire: arguments are a JSON string. */
export interface PlayedCall {
  id: string;
  name: string;
  arguments: string;
  /** The namespace tool it belongs to (Responses only). */
  namespace?: string;
}

/** How the offered tools name a tool inside a namespace tool (responses-request.ts offeredTools). */
export function qualifiedToolName(namespace: string, tool: string): string {
  return `${namespace}/${tool}`;
}

/**
 * How a streamed answer lays out its tool-call deltas: `sequential` (one call after another, OpenAI's
 * layout), `interleaved` (calls alternate by index) or `split` (OpenAI's layout pinned, small pieces).
 */
export type DeltaLayout = "sequential" | "interleaved" | "split";

/** What the model answers for one request. */
export interface PlayedAnswer {
  step: number;
  text: string | null;
  calls: PlayedCall[];
  /** `length` when the answer was cut off (truncate_arguments). */
  finishReason: "stop" | "tool_calls" | "length";
  layout: DeltaLayout;
  /** HTTP errors to answer before the completion is given (the server counts them). */
  transportFaults: TransportFault[];
  /** Token counts the script fixes; the server estimates them otherwise. */
  usage: ScriptedUsage | undefined;
}

function holds(when: When | undefined, view: ConversationView): boolean {
  if (!when) return true;
  if (when.lastToolContains !== undefined && !(view.last?.content ?? "").includes(when.lastToolContains))
    return false;
  const containsAll = Object.entries(when.contains ?? {}).every(
    ([expression, text]) => resultOf(expression, view).result?.content.includes(text) ?? false,
  );
  return (
    containsAll &&
    Object.entries(when.matches ?? {}).every(
      ([expression, expected]) => lookup(expression, view) === expected,
    )
  );
}

/** Whether a tool message answers call `id` after message `position`. */
function answeredAfter(view: ConversationView, id: string, position: number, needed = 1): boolean {
  return view.results.filter((result) => result.callId === id && result.position > position).length >= needed;
}

/**
 * What a `wait` still misses in the conversation, as readable names (`call_0_0`, `tool
 * aps_schedule_read`); empty when it holds. A call answered before it was last made does not count.
 */
export function unanswered(wait: Wait, view: ConversationView): string[] {
  if (wait === "previous") {
    const position = view.calls.at(-1)?.position;
    if (position === undefined) return ["a tool call (the conversation made none)"];
    // Counted per id: an answer that reuses an id for two calls needs two tool messages for it.
    const needed = new Map<string, number>();
    for (const call of view.calls.filter((each) => each.position === position)) {
      needed.set(call.id, (needed.get(call.id) ?? 0) + 1);
    }
    return [...needed].filter(([id, count]) => !answeredAfter(view, id, position, count)).map(([id]) => id);
  }
  const missing: string[] = [];
  for (const id of wait.calls) {
    const made = view.calls.findLast((call) => call.id === id);
    if (!made || !answeredAfter(view, id, made.position)) missing.push(id);
  }
  for (const tool of wait.tools) {
    const made = view.calls.findLast((call) => call.name === tool);
    if (!made || !answeredAfter(view, made.id, made.position)) missing.push(`tool ${tool}`);
  }
  return missing;
}

/**
 * The answer of `script` at the conversation's step. Errors (as ScriptError, HTTP 400): the script is
 * exhausted, the step's wait does not hold, no alternative holds, or a call names a tool the request
 * does not offer.
 */
export function play(
  script: Script,
  view: ConversationView,
  offeredTools: ReadonlySet<string>,
): PlayedAnswer {
  const step = script.steps[view.step];
  if (!step) {
    throw new ScriptError(
      400,
      `the script has ${script.steps.length} steps and the conversation asks for step ${view.step + 1}`,
    );
  }
  const missing = step.wait ? unanswered(step.wait, view) : [];
  if (missing.length > 0) {
    // Worded like OpenAI's refusal of a conversation with unanswered tool calls.
    throw new ScriptError(
      400,
      `step ${view.step} waits for tool results the conversation does not hold; ` +
        `the following tool_call_ids did not have response messages: ${missing.join(", ")}`,
    );
  }
  let reply: Reply | undefined = step;
  if (step.choose) {
    reply = step.choose.find((alternative) => holds(alternative.when, view));
    if (!reply) throw new ScriptError(400, `step ${view.step}: no alternative of choose holds`);
  }
  let calls = (reply.call ?? []).map((call, index): PlayedCall => {
    const offered = call.namespace === undefined ? call.tool : qualifiedToolName(call.namespace, call.tool);
    if (!offeredTools.has(offered)) {
      throw new ScriptError(
        400,
        `step ${view.step}: the script calls ${offered}, which the request does not offer`,
      );
    }
    return {
      id: call.id ?? `call_${view.step}_${index}`,
      name: call.tool,
      arguments: JSON.stringify(fill(call.arguments, view)),
      ...(call.namespace === undefined ? {} : { namespace: call.namespace }),
    };
  });
  let finishReason: PlayedAnswer["finishReason"] = calls.length > 0 ? "tool_calls" : "stop";
  let layout: DeltaLayout = "sequential";
  const transportFaults: TransportFault[] = [];
  for (const fault of step.faults) {
    if (fault.kind === "truncate_arguments") {
      const cut = calls[fault.call];
      if (!cut) continue;
      // The model ran out of tokens inside this call: nothing after it was generated.
      const keep = fault.keepChars ?? Math.floor(cut.arguments.length / 2);
      calls = [...calls.slice(0, fault.call), { ...cut, arguments: cut.arguments.slice(0, keep) }];
      finishReason = "length";
    }
    if (fault.kind === "interleave_calls") layout = "interleaved";
    if (fault.kind === "split_first_delta") layout = "split";
    if (fault.kind === "rate_limit" || fault.kind === "server_error") transportFaults.push(fault);
  }
  const text = reply.say === undefined ? null : (fill(reply.say, view) as string);
  return { step: view.step, text, calls, finishReason, layout, transportFaults, usage: step.usage };
}
