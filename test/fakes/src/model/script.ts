/**
 * Scripts of the scripted model: YAML files `<scriptsDir>/<name>.yaml`, chosen by the request's model
 * name `scripted/<name>` (or just `<name>`). A script is a list of steps; the step played is the number
 * of assistant messages already in the conversation, so a resumed conversation continues where it was.
 *
 * ```yaml
 * description: what the script plays
 * steps:
 *   - call:                              # tool calls (parallel calls when several)
 *       - tool: aps_schedule_read        # must be one of the request's tools
 *         arguments: { planId: plan-2026-w49 }   # serialized as a JSON string
 *         id: read_a                     # optional; default call_<step>_<index> (reuse ids on purpose to test)
 *         namespace: mcp__gatehouse      # optional, Responses only: a tool of that namespace tool
 *     say: optional text sent alongside the calls
 *   - wait: previous                     # played only once every call of the latest tool-calling
 *                                        # assistant message has its tool message; or name them:
 *                                        # wait: { calls: [read_a], tools: [aps_schedule_read] }
 *     call:
 *       - tool: aps_schedule_publish
 *         arguments: { planId: "{{last.planId}}", version: "{{calls.read_a.version}}" }
 *   - choose:                            # first alternative whose `when` holds (no `when` = always)
 *       - when: { lastToolContains: forbidden }
 *         say: The APS refused the publish.
 *       - when: { contains: { tools.aps_schedule_publish: conflict } }
 *         say: Someone published first.
 *       - when: { matches: { last.status: published } }
 *         say: Published version {{last.version}}.
 *       - say: "Something else happened: {{last}}"
 *     faults:                            # per step, see below
 *       - { kind: rate_limit, times: 1, retryAfterSeconds: 1 }
 *     usage: { promptTokens: 120, completionTokens: 30 }   # optional; default estimated from the text
 * ```
 * Templates: `{{last.<path>}}` reads the latest tool message (its content parsed as JSON; when the value
 * is not found and the content wraps it as `{result: …}`, the path is also tried inside `result`);
 * `{{tools.<tool_name>.<path>}}` reads the latest result of a given tool, `{{calls.<call_id>.<path>}}`
 * the latest result for a call id. A string that is exactly one placeholder takes the value's type (a
 * number stays a number); embedded placeholders are stringified.
 *
 * A `wait` that does not hold is answered as a real API answers a conversation missing tool results:
 * HTTP 400 `invalid_request_error` naming what is missing; the step is played by the request that holds
 * them.
 *
 * Scripts play the same on both wire APIs the server speaks. On the Responses API a step's text is a
 * `message` item and each call a `function_call` item (`call_id` = the call's id); the assistant's
 * output items between two inputs count as one assistant message, a `function_call_output` as the
 * tool message answering its `call_id` (responses-request.ts), so steps, waits and templates read the
 * conversation alike.
 *
 * Faults (per step; each the behaviour of some real model endpoint; on both wires unless said):
 *   - `rate_limit {times = 1, retryAfterSeconds = 1, retryAfterMs?}`: the first `times` requests of a
 *     conversation at this step get HTTP 429 with `Retry-After` (and `retry-after-ms` when given).
 *   - `server_error {times = 1, status = 500}`: the same with a 5xx and no retry advice.
 *   - `truncate_arguments {call = 0, keepChars?}`: the answer stops inside that call's arguments (cut to
 *     `keepChars`, default half: invalid JSON), later calls are not sent, `finish_reason: "length"`
 *     (Responses: the response and the call's item are `incomplete`, `max_output_tokens`).
 *   - `interleave_calls`: streamed, the deltas of parallel calls alternate by index (first deltas of
 *     all calls, then their argument pieces in turn) instead of one call after another (Responses:
 *     the calls' events alternate by `output_index`).
 *   - `split_first_delta`: streamed, each call is exactly the OpenAI layout, pinned whatever the default
 *     becomes: a first chunk of its own with `index`, `id`, `type`, `function.name` and
 *     `function.arguments: ""`, then chunks carrying only `index` and small `function.arguments` pieces
 *     (Responses always announces a call apart from its arguments: there it only makes the pieces small).
 *   Reused tool call ids need no fault: give calls the same `id`.
 * Transport faults count per conversation (model, step and messages), so a retried request succeeds
 * and a new conversation meets the fault again.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { parse } from "yaml";
import { z } from "zod";

/** One scripted tool call; `arguments` may hold templates. */
export const ScriptedCall = z.strictObject({
  tool: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).default({}),
  id: z.string().min(1).optional(),
  /** A tool inside the request's `namespace` tool of this name (the Responses API's tool groups). */
  namespace: z.string().min(1).optional(),
});
export type ScriptedCall = z.infer<typeof ScriptedCall>;

/** A fault injected on a step (see the file comment). */
export const Fault = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("rate_limit"),
    times: z.number().int().min(1).default(1),
    retryAfterSeconds: z.number().int().min(0).default(1),
    retryAfterMs: z.number().int().min(0).optional(),
  }),
  z.strictObject({
    kind: z.literal("server_error"),
    times: z.number().int().min(1).default(1),
    status: z.number().int().min(500).max(599).default(500),
  }),
  z.strictObject({
    kind: z.literal("truncate_arguments"),
    call: z.number().int().min(0).default(0),
    keepChars: z.number().int().min(0).optional(),
  }),
  z.strictObject({ kind: z.literal("interleave_calls") }),
  z.strictObject({ kind: z.literal("split_first_delta") }),
]);
export type Fault = z.infer<typeof Fault>;

/** A fault answered with an HTTP error instead of a completion. */
export type TransportFault = Extract<Fault, { kind: "rate_limit" | "server_error" }>;

/**
 * The tool results a step waits for: `previous` (every call of the latest assistant message that
 * made calls), or named call ids and tool names, each answered after the latest call that made it.
 */
export const Wait = z.union([
  z.literal("previous"),
  z
    .strictObject({
      calls: z.array(z.string().min(1)).default([]),
      tools: z.array(z.string().min(1)).default([]),
    })
    .refine((wait) => wait.calls.length + wait.tools.length > 0, {
      message: "a wait names at least one call or tool",
    }),
]);
export type Wait = z.infer<typeof Wait>;

/**
 * A condition on the conversation that picks an alternative; every given test must hold.
 * `lastToolContains`: the latest tool message contains the text. `contains`: the raw result each
 * expression names (`last`, `tools.<tool_name>`, `calls.<call_id>`) contains the text. `matches`: each
 * expression (template syntax without braces, e.g. `last.status`) names a value equal to the given one.
 */
export const When = z.strictObject({
  lastToolContains: z.string().min(1).optional(),
  contains: z.record(z.string(), z.string().min(1)).optional(),
  matches: z.record(z.string(), z.unknown()).optional(),
});
export type When = z.infer<typeof When>;

/** What the model answers at one step: text, tool calls, or both. */
export const Reply = z.strictObject({
  say: z.string().optional(),
  call: z.array(ScriptedCall).optional(),
});
export type Reply = z.infer<typeof Reply>;

/** An alternative of a `choose` step. */
export const Alternative = Reply.extend({ when: When.optional() });
export type Alternative = z.infer<typeof Alternative>;

/** Token counts a step reports instead of the estimate (for metering tests). */
export const ScriptedUsage = z.strictObject({
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
});
export type ScriptedUsage = z.infer<typeof ScriptedUsage>;

/** One step: a reply, or a choice of replies; either may wait, carry faults and fix its usage. */
export const Step = z
  .strictObject({
    wait: Wait.optional(),
    say: z.string().optional(),
    call: z.array(ScriptedCall).optional(),
    choose: z.array(Alternative).min(1).optional(),
    faults: z.array(Fault).default([]),
    usage: ScriptedUsage.optional(),
  })
  .refine((step) => step.choose === undefined || (step.say === undefined && step.call === undefined), {
    message: "a step has either `choose` or `say`/`call`, not both",
  })
  .refine((step) => step.choose !== undefined || step.say !== undefined || (step.call?.length ?? 0) > 0, {
    message: "a step must say something or call a tool",
  });
export type Step = z.infer<typeof Step>;

/** A whole script file. */
export const Script = z.strictObject({
  description: z.string().optional(),
  steps: z.array(Step).min(1),
});
export type Script = z.infer<typeof Script>;

/** Thrown when a model name has no valid script; `status` is the HTTP status to answer with. */
export class ScriptError extends Error {
  readonly status: number;

  constructor(status: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ScriptError";
    this.status = status;
  }
}

const scriptName = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** The script name of a model name: `scripted/reference-story` → `reference-story`; rejects path tricks. */
export function scriptNameOf(model: string): string {
  const name = model.startsWith("scripted/") ? model.slice("scripted/".length) : model;
  if (!scriptName.test(name))
    throw new ScriptError(404, `model ${model} names no script (want scripted/<name>)`);
  return name;
}

/** Loads and validates `<scriptsDir>/<name>.yaml` (read on every request, so edits apply at once). */
export async function loadScript(scriptsDir: string, model: string): Promise<Script> {
  const name = scriptNameOf(model);
  let text: string;
  try {
    text = await readFile(path.join(scriptsDir, `${name}.yaml`), "utf8");
  } catch (error) {
    throw new ScriptError(404, `model ${model}: no script ${name}.yaml in ${scriptsDir}`, { cause: error });
  }
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new ScriptError(500, `script ${name}.yaml is not valid YAML`, { cause: error });
  }
  const parsed = Script.safeParse(document);
  if (!parsed.success) {
    throw new ScriptError(500, `script ${name}.yaml is invalid: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** Model ids of every script in `scriptsDir` (`scripted/<name>`). */
export async function listScriptModels(scriptsDir: string): Promise<string[]> {
  const files = await readdir(scriptsDir);
  return files
    .filter((file) => file.endsWith(".yaml") && scriptName.test(file.slice(0, -5)))
    .map((file) => `scripted/${file.slice(0, -5)}`)
    .sort();
}
