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
 *         id: call_a                     # optional; default call_<step>_<index> (reuse ids on purpose to test)
 *     say: optional text sent alongside the calls
 *   - call:
 *       - tool: aps_schedule_publish
 *         arguments: { planId: "{{last.planId}}", version: "{{last.version}}" }
 *   - choose:                            # first alternative whose `when` holds (no `when` = always)
 *       - when: { lastToolContains: forbidden }
 *         say: The APS refused the publish.
 *       - when: { matches: { last.status: published } }
 *         say: Published version {{last.version}}.
 *       - say: "Something else happened: {{last}}"
 *     faults:                            # per step, see below
 *       - { kind: rate_limit, times: 1, retryAfterMs: 0 }
 * ```
 * Templates: `{{last.<path>}}` reads the latest tool message (its content parsed as JSON; when the value
 * is not found and the content wraps it as `{result: …}`, the path is also tried inside `result`);
 * `{{tools.<tool_name>.<path>}}` reads the latest result of a given tool. A string that is exactly one
 * placeholder takes the value's type (a number stays a number); embedded placeholders are stringified.
 *
 * Faults (per step):
 *   - `rate_limit {times = 1, retryAfterMs = 0}`: the first `times` requests for the step get HTTP 429
 *     with `retry-after-ms`, so clients retry with backoff.
 *   - `truncate_arguments {call = 0}`: that call's arguments string is cut in half (invalid JSON).
 *   - Reused tool call ids need no fault: give two calls the same `id`.
 *   Planned, same shape: `server_error {status, times}`, `interleave` (deltas of parallel calls
 *   alternate), `drop_stream` (connection closed mid-stream).
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
});
export type ScriptedCall = z.infer<typeof ScriptedCall>;

/** A fault injected on a step (see the file comment). */
export const Fault = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("rate_limit"),
    times: z.number().int().min(1).default(1),
    retryAfterMs: z.number().int().min(0).default(0),
  }),
  z.strictObject({ kind: z.literal("truncate_arguments"), call: z.number().int().min(0).default(0) }),
]);
export type Fault = z.infer<typeof Fault>;

/**
 * A condition on the conversation that picks an alternative; every given test must hold.
 * `lastToolContains`: the latest tool message contains the text. `matches`: each expression (template
 * syntax without braces, e.g. `last.status`) names a value equal to the given one.
 */
export const When = z.strictObject({
  lastToolContains: z.string().min(1).optional(),
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

/** One step: a reply, or a choice of replies; either may carry faults. */
export const Step = z
  .strictObject({
    say: z.string().optional(),
    call: z.array(ScriptedCall).optional(),
    choose: z.array(Alternative).min(1).optional(),
    faults: z.array(Fault).default([]),
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
