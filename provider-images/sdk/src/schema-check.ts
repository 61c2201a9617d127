/**
 * Whether one capability's schemas are usable as a model-facing tool: each compiles with the strict
 * compiler (`schema-compiler.ts`), the input schema is `{"type": "object"}` at the top (tool arguments
 * are a JSON object), and every array schema says what its items are (`items` or `prefixItems`) —
 * OpenAI function calling rejects arrays without `items`
 * (https://platform.openai.com/docs/guides/function-calling, "Supported schemas"); DESIGN §2 names this
 * case `InvalidSchema`.
 */
import type { CapabilityOffer } from "./contract.ts";
import { strictSchemaCompiler } from "./schema-compiler.ts";

/** Problems of an offer's `inputSchema` and `outputSchema`, each naming the schema and JSON pointer; empty when usable. */
export function capabilitySchemaProblems(
  offer: Pick<CapabilityOffer, "inputSchema" | "outputSchema">,
): string[] {
  return [
    ...problemsOf("inputSchema", offer.inputSchema, true),
    ...problemsOf("outputSchema", offer.outputSchema, false),
  ];
}

function problemsOf(name: string, schema: Record<string, unknown>, mustBeObject: boolean): string[] {
  const problems: string[] = [];
  if (mustBeObject && schema.type !== "object") {
    problems.push(`${name}: the top level must be {"type": "object"} (tool arguments are a JSON object)`);
  }
  try {
    strictSchemaCompiler().compile(schema);
  } catch (error) {
    problems.push(`${name} does not compile: ${error instanceof Error ? error.message : String(error)}`);
  }
  visitSchemas(schema, "", (node, pointer) => {
    const type = node.type;
    const isArray = type === "array" || (Array.isArray(type) && type.includes("array"));
    if (isArray && node.items === undefined && node.prefixItems === undefined) {
      problems.push(`${name} at ${pointer || "/"}: an array must declare its items ("items": {...})`);
    }
  });
  return problems;
}

/** Visits every object nested in `value` with its JSON pointer (RFC 6901), skipping literal values. */
function visitSchemas(
  value: unknown,
  pointer: string,
  visit: (node: Record<string, unknown>, pointer: string) => void,
): void {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) visitSchemas(item, `${pointer}/${index}`, visit);
    return;
  }
  if (typeof value !== "object" || value === null) return;
  const node = value as Record<string, unknown>;
  visit(node, pointer);
  for (const [key, child] of Object.entries(node)) {
    // Literal JSON values, not schemas: an enum of objects is not an array schema.
    if (key === "enum" || key === "const" || key === "examples" || key === "default") continue;
    visitSchemas(child, `${pointer}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`, visit);
  }
}
