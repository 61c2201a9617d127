/**
 * Whether a capability's JSON Schemas are usable as a model-facing tool definition: each must compile
 * with ajv (JSON Schema 2020-12, strict mode, formats from ajv-formats), have `type: "object"` at the
 * top for the arguments (function calling passes a JSON object), and every array schema must say what
 * its items are (`items` or `prefixItems`) — OpenAI function calling rejects arrays without `items`
 * (https://platform.openai.com/docs/guides/function-calling, "Supported schemas"). A problem makes only
 * that Capability Ready=False with reason InvalidSchema.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** The problems of `input` and `output`, each naming the schema and JSON pointer; empty when usable. */
export function schemaProblems(input: unknown, output: unknown): string[] {
  return [...problemsOf("inputSchema", input, true), ...problemsOf("outputSchema", output, false)];
}

function problemsOf(name: string, schema: unknown, mustBeObject: boolean): string[] {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    return [`${name} is not a JSON Schema object`];
  }
  const problems: string[] = [];
  if (mustBeObject && (schema as { type?: unknown }).type !== "object") {
    problems.push(`${name}: the top level must be {"type": "object"} (tool arguments are a JSON object)`);
  }
  try {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    ajv.compile(schema);
  } catch (error) {
    problems.push(`${name} does not compile: ${error instanceof Error ? error.message : String(error)}`);
  }
  walk(schema, "", (node, pointer) => {
    const type = node.type;
    const isArray = type === "array" || (Array.isArray(type) && type.includes("array"));
    if (isArray && node.items === undefined && node.prefixItems === undefined) {
      problems.push(`${name} at ${pointer || "/"}: an array must declare its items ("items": {...})`);
    }
  });
  return problems;
}

/** Visits every object nested in `value` with its JSON pointer (RFC 6901). */
function walk(
  value: unknown,
  pointer: string,
  visit: (node: Record<string, unknown>, pointer: string) => void,
): void {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) walk(item, `${pointer}/${index}`, visit);
    return;
  }
  if (typeof value !== "object" || value === null) return;
  const node = value as Record<string, unknown>;
  visit(node, pointer);
  for (const [key, child] of Object.entries(node)) {
    if (key === "enum" || key === "const" || key === "examples" || key === "default") continue;
    walk(child, `${pointer}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`, visit);
  }
}
