/**
 * Fills `{{last.<path>}}`, `{{tools.<tool_name>.<path>}}` and `{{calls.<call_id>.<path>}}` placeholders
 * of a scripted step from the conversation's tool results (see `script.ts` for the rules). A
 * placeholder that names nothing is an error: a script that cannot say what it means should fail
 * loudly, not call a tool with `undefined`.
 */
import type { ConversationView, ToolResult } from "./conversation.ts";
import { ScriptError } from "./script.ts";

const placeholder = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;
const whole = /^\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}$/;

function at(value: unknown, keys: string[]): unknown {
  let current = value;
  for (const key of keys) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function fromResult(result: ToolResult | undefined, keys: string[]): unknown {
  if (!result) return undefined;
  if (keys.length === 0) return result.value;
  return at(result.value, keys) ?? at(result.value, ["result", ...keys]);
}

/**
 * The tool result an expression's head names, and the path after it: `last.…`, `tools.<tool_name>.…`,
 * `calls.<call_id>.…`; undefined when the conversation holds no such result.
 */
export function resultOf(
  expression: string,
  view: ConversationView,
): { result: ToolResult | undefined; keys: string[] } {
  const [root, name = "", ...rest] = expression.split(".");
  if (root === "last") return { result: view.last, keys: expression.split(".").slice(1) };
  if (root === "tools") return { result: view.byTool.get(name), keys: rest };
  if (root === "calls") return { result: view.byCall.get(name), keys: rest };
  return { result: undefined, keys: [] };
}

/** The value an expression (`last.version`, `tools.aps_schedule_draft.version`) names, or undefined. */
export function lookup(expression: string, view: ConversationView): unknown {
  const { result, keys } = resultOf(expression, view);
  return fromResult(result, keys);
}

function resolve(expression: string, view: ConversationView): unknown {
  const value = lookup(expression, view);
  if (value === undefined) {
    throw new ScriptError(
      500,
      `step ${view.step}: placeholder {{${expression}}} names no value in the conversation`,
    );
  }
  return value;
}

/** Returns `value` with every placeholder in its strings filled; objects and arrays are copied. */
export function fill(value: unknown, view: ConversationView): unknown {
  if (typeof value === "string") {
    const single = whole.exec(value);
    if (single) return resolve(single[1]!, view);
    return value.replace(placeholder, (_, expression: string) => {
      const found = resolve(expression, view);
      return typeof found === "string" ? found : JSON.stringify(found);
    });
  }
  if (Array.isArray(value)) return value.map((item) => fill(item, view));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fill(item, view)]));
  }
  return value;
}
