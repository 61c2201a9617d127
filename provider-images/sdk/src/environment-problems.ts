/**
 * What a process configured by environment variables prints when a variable is missing or bad: one
 * line per variable naming it, what is wrong, where to set it, and what it means — built from zod's own
 * issue list (`error.issues`) and the schema's `.describe()` texts, the same texts `--help` prints
 * (`environment-usage.ts`). No stack trace: the person reading it needs the fix, not the code path.
 */
import type { z } from "zod";

/** How a person sets variable `name` for this process, e.g. `set spec.config.ERP_URL on the ProviderInstance`. */
export type HowToSet = (name: string) => string;

/** Where a provider's own variables come from: the ProviderInstance's `spec.config` (DESIGN §2). */
export const setOnProviderInstance: HowToSet = (name) => `set spec.config.${name} on the ProviderInstance`;

/** A configuration the process cannot start with; `problems` holds one line per bad variable. */
export class EnvironmentError extends Error {
  override readonly name = "EnvironmentError";
  readonly problems: readonly string[];
  constructor(problems: readonly string[], options?: { cause?: unknown }) {
    super(problems.join("\n"), options);
    this.problems = problems;
  }
}

/**
 * One line per issue of `error` (a failed parse of `env` with `schema`, a zod object whose keys are the
 * variable names): `NAME is required: <howToSet> (<meaning>)` when the variable is unset, else
 * `NAME is invalid (<zod's message>): <howToSet> (<meaning>)`. The meaning is the key's `.describe()`
 * text without a trailing `(required…)` / `(default…)` remark; a variable's value is never echoed (it may
 * be a secret). Issues not under a key of the schema are listed with their path and message.
 */
export function environmentProblems(
  error: z.ZodError,
  schema: z.ZodObject<z.ZodRawShape>,
  env: Record<string, string | undefined>,
  howToSet: HowToSet,
): string[] {
  return error.issues.map((issue) => {
    const name = String(issue.path[0] ?? "");
    const field = schema.shape[name] as z.ZodType | undefined;
    if (!field) return `${issue.path.join(".") || "environment"}: ${issue.message}`;
    const meaning = meaningOf(field.description);
    const where = `${howToSet(name)}${meaning ? ` (${meaning})` : ""}`;
    return env[name] === undefined || env[name] === ""
      ? `${name} is required: ${where}`
      : `${name} is invalid (${issue.message}): ${where}`;
  });
}

/**
 * Parses `env` with `schema`. Errors: throws an {@link EnvironmentError} with
 * {@link environmentProblems}' lines (the ZodError as its cause).
 */
export function parseEnvironment<S extends z.ZodObject<z.ZodRawShape>>(
  schema: S,
  env: Record<string, string | undefined>,
  howToSet: HowToSet,
): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  throw new EnvironmentError(environmentProblems(parsed.error, schema, env, howToSet), {
    cause: parsed.error,
  });
}

/** A `.describe()` text without its trailing help remark: `base URL of the ERP (required)` → `base URL of the ERP`. */
function meaningOf(description: string | undefined): string {
  if (!description) return "";
  const remark = description.lastIndexOf(" (");
  if (remark < 0 || !description.endsWith(")")) return description;
  const tail = description.slice(remark + 2);
  return tail.startsWith("required") || tail.startsWith("default")
    ? description.slice(0, remark)
    : description;
}

/**
 * Runs every reader of `readers` (e.g. `{ config: () => loadConfig(env), verifyGrant: () => …(env) }`)
 * and returns their results by the same keys. When any throws an {@link EnvironmentError}, the lines
 * of all of them are written to stderr and the process exits 1 — every bad variable at once, no stack
 * trace. Any other error is rethrown.
 */
export function configureOrExit<R extends Record<string, () => unknown>>(
  readers: R,
): { [K in keyof R]: ReturnType<R[K]> } {
  const results: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, read] of Object.entries(readers)) {
    try {
      results[key] = read();
    } catch (error) {
      if (!(error instanceof EnvironmentError)) throw error;
      problems.push(...error.problems);
    }
  }
  if (problems.length > 0) {
    process.stderr.write(`${problems.join("\n")}\n`);
    process.exit(1);
  }
  return results as { [K in keyof R]: ReturnType<R[K]> };
}
