/**
 * The migrate program (`gatehouse-migrate`, or `main.ts migrate` in the operator image): the only
 * thing that connects as the database owner (DESIGN §6). It creates the roles, applies the migrations
 * and makes the runtime logins it is given members of their component roles, then exits; the chart
 * runs it as a pre-install/pre-upgrade hook Job, the demo and e2e environment as their init step.
 * Idempotent and safe to run concurrently (node-pg-migrate's advisory lock; role races retried).
 * Exit codes: 0 migrated (or already current), 1 the database refused or failed, 2 a bad configuration.
 */
import { environmentProblems, environmentUsage, type HowToSet } from "@gatehouse/provider-sdk";
import { z } from "zod";
import type { Component } from "../api/well-known.ts";
import { migrate, provisionRuntimeLogin } from "../store/migrate.ts";

/** Exit codes of the migrate program. */
export const MIGRATE_EXIT = { ok: 0, failed: 1, configuration: 2 } as const;

const PostgresUrl = z.string().regex(/^postgres(ql)?:\/\/[^/]/, "not a postgres:// URL");
const RuntimeLoginUrl = PostgresUrl.refine((url) => URL.canParse(url) && new URL(url).username !== "", {
  message: "a postgres:// URL naming its login (postgres://LOGIN:PASSWORD@host/database)",
});

const MigrateEnvironment = z.object({
  DATABASE_OWNER_URL: PostgresUrl.describe(
    "Postgres URL of the database owner or an administrator (CREATEROLE, or a member of gatehouse_owner), who migrates (required)",
  ),
  CONTROLLER_DATABASE_URL: RuntimeLoginUrl.optional().describe(
    "the controller's runtime URL: its login is created (with the URL's password) or granted gatehouse_controller; unset = the login is managed elsewhere",
  ),
  GATEWAY_DATABASE_URL: RuntimeLoginUrl.optional().describe(
    "the gateway's runtime URL: its login is created (with the URL's password) or granted gatehouse_gateway; unset = the login is managed elsewhere",
  ),
});

/** The `--help` text. */
export const MIGRATE_USAGE = environmentUsage(
  "gatehouse-migrate [--help]   (in the operator image: node operator/src/main.ts migrate)",
  "Creates the Gatehouse database roles, applies the schema's migrations as gatehouse_owner, and makes the runtime logins it is given members of gatehouse_controller / gatehouse_gateway. The long-running processes never migrate; run this before starting or upgrading them (docs/upgrading.md).",
  [MigrateEnvironment],
);

const setInMigrateEnvironment: HowToSet = (name) =>
  `set ${name} in the migrate program's environment (the chart's migrate Job: values database.*)`;

/** Output streams (process.stdout / process.stderr, or a test's buffers). */
export interface MigrateOutput {
  out(line: string): void;
  err(line: string): void;
}

/**
 * Runs the migrate program with `argv` (after the program name) and `env`; returns its exit code.
 * Prints one line per applied migration and per runtime login, or one line per problem on `err`.
 */
export async function runMigrate(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  output: MigrateOutput,
): Promise<number> {
  if (argv.includes("--help")) {
    output.out(MIGRATE_USAGE);
    return MIGRATE_EXIT.ok;
  }
  if (argv.length > 0) {
    output.err(`gatehouse-migrate: unexpected argument ${JSON.stringify(argv[0])}; it takes only --help`);
    return MIGRATE_EXIT.configuration;
  }
  const parsed = MigrateEnvironment.safeParse(env);
  if (!parsed.success) {
    for (const line of environmentProblems(parsed.error, MigrateEnvironment, env, setInMigrateEnvironment)) {
      output.err(`gatehouse-migrate: ${line}`);
    }
    return MIGRATE_EXIT.configuration;
  }
  const config = parsed.data;
  const ownerUrl = config.DATABASE_OWNER_URL;
  try {
    const applied = await migrate(ownerUrl);
    for (const name of applied) output.out(`applied ${name}`);
    if (applied.length === 0) output.out("schema already at the latest migration");
  } catch (error) {
    const host = new URL(ownerUrl).host;
    output.err(
      `gatehouse-migrate: migrating the database at ${host} (DATABASE_OWNER_URL) failed: ${describe(error)}`,
    );
    return MIGRATE_EXIT.failed;
  }
  const logins: Array<[Component, string, string | undefined]> = [
    ["controller", "CONTROLLER_DATABASE_URL", config.CONTROLLER_DATABASE_URL],
    ["gateway", "GATEWAY_DATABASE_URL", config.GATEWAY_DATABASE_URL],
  ];
  for (const [component, variable, url] of logins) {
    if (!url) continue;
    try {
      const { login, outcome } = await provisionRuntimeLogin(ownerUrl, component, url);
      output.out(`${component} login ${login}: ${outcome}`);
    } catch (error) {
      output.err(`gatehouse-migrate: the ${component}'s runtime login (${variable}): ${describe(error)}`);
      return MIGRATE_EXIT.failed;
    }
  }
  return MIGRATE_EXIT.ok;
}

/** One line: a pg error's message with its SQLSTATE, else the error's message. */
function describe(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  // A connection refused on every address of a host name is an AggregateError without a message.
  const message =
    error instanceof AggregateError && !error.message
      ? error.errors.map((e) => (e instanceof Error ? e.message : String(e))).join("; ")
      : error instanceof Error
        ? error.message
        : String(error);
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? `${message} (SQLSTATE ${code})` : message;
}
