#!/usr/bin/env node
/**
 * `gatehouse-migrate` — migrates the Gatehouse database as its owner and provisions the runtime
 * logins (`migrate-command.ts`), then exits. Reads DATABASE_OWNER_URL, CONTROLLER_DATABASE_URL and
 * GATEWAY_DATABASE_URL; `--help` lists them. Exit codes: 0 migrated, 1 failed, 2 bad configuration.
 */
import { runMigrate } from "./migrate-command.ts";

process.exitCode = await runMigrate(process.argv.slice(2), process.env, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
