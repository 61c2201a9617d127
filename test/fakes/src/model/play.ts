/**
 * Picks the scripted step for a conversation and turns it into a concrete answer: alternatives chosen,
 * templates filled, tool arguments serialized, argument faults applied. Pure; the server adds transport
 * faults (429) and framing.
 */
import type { ConversationView } from "./conversation.ts";
import { type Fault, type Reply, type Script, ScriptError, type When } from "./script.ts";
import { fill, lookup } from "./template.ts";

/** A tool call as it goes on the wire: arguments are a JSON string. */
export interface PlayedCall {
  id: string;
  name: string;
  arguments: string;
}

/** What the model answers for one request. */
export interface PlayedAnswer {
  step: number;
  text: string | null;
  calls: PlayedCall[];
  faults: Fault[];
}

function holds(when: When | undefined, view: ConversationView): boolean {
  if (!when) return true;
  if (when.lastToolContains !== undefined && !(view.last?.content ?? "").includes(when.lastToolContains))
    return false;
  return Object.entries(when.matches ?? {}).every(
    ([expression, expected]) => lookup(expression, view) === expected,
  );
}

/**
 * The answer of `script` at the conversation's step. Errors (as ScriptError, HTTP 400): the script is
 * exhausted, no alternative holds, or a call names a tool the request does not offer.
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
  let reply: Reply | undefined = step;
  if (step.choose) {
    reply = step.choose.find((alternative) => holds(alternative.when, view));
    if (!reply) throw new ScriptError(400, `step ${view.step}: no alternative of choose holds`);
  }
  const calls = (reply.call ?? []).map((call, index): PlayedCall => {
    if (!offeredTools.has(call.tool)) {
      throw new ScriptError(
        400,
        `step ${view.step}: the script calls ${call.tool}, which the request does not offer`,
      );
    }
    return {
      id: call.id ?? `call_${view.step}_${index}`,
      name: call.tool,
      arguments: JSON.stringify(fill(call.arguments, view)),
    };
  });
  for (const fault of step.faults) {
    if (fault.kind === "truncate_arguments" && calls[fault.call]) {
      const call = calls[fault.call]!;
      call.arguments = call.arguments.slice(0, Math.floor(call.arguments.length / 2));
    }
  }
  const text = reply.say === undefined ? null : (fill(reply.say, view) as string);
  return { step: view.step, text, calls, faults: step.faults };
}
