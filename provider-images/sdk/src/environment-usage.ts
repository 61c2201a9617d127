/**
 * The `--help` text of a process configured only by environment variables, generated from the zod
 * schemas that parse them, so the text cannot drift from the parser: every variable is a key of one of
 * the schemas and its line is that key's `.describe()` text.
 */
import type { z } from "zod";

/** What {@link environmentUsage} prints for a variable without a `.describe()` text (test/images.test.ts refuses it). */
export const UNDOCUMENTED = "(undocumented: give it a .describe() text)";

/**
 * Usage text: `Usage: <command>`, the `summary` paragraph, then `Environment variables:` with one
 * line per key of `schemas` (in order) and its description. `schemas` are zod objects whose keys are
 * variable names. A variable without a `.describe()` text gets {@link UNDOCUMENTED} rather than an
 * error, so a missing text never stops a process from starting; the images test fails on it instead.
 */
export function environmentUsage(
  command: string,
  summary: string,
  schemas: readonly z.ZodObject<z.ZodRawShape>[],
): string {
  const rows = schemas.flatMap((schema) =>
    Object.entries(schema.shape).map(([name, field]) => {
      return [name, (field as z.ZodType).description ?? UNDOCUMENTED] as const;
    }),
  );
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, description]) => `  ${name.padEnd(width)}  ${description}`);
  return `Usage: ${command}\n\n${summary}\n\nEnvironment variables:\n${lines.join("\n")}\n`;
}
