/**
 * Applies the schema with node-pg-migrate's programmatic runner. Run it as the database owner (the
 * role that owns the tables), never as `gatehouse_operator`. Migrations are the `.sql` files in
 * `./migrations/` (node-pg-migrate's SQL format: `-- Up Migration` / `-- Down Migration`), applied in
 * one transaction under node-pg-migrate's advisory lock, so replicas starting together wait for each
 * other instead of failing.
 */
import { fileURLToPath } from "node:url";
import { runner } from "node-pg-migrate";
import type { StoreLogger } from "./connection.ts";

/** Directory of the migration files. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

/** Table in which node-pg-migrate records applied migrations. */
export const MIGRATIONS_TABLE = "pgmigrations";

/**
 * Migrates the database at `databaseUrl` up to the latest version (or down by `count` with
 * `direction: "down"`). Returns the names of the migrations applied, e.g. `["0001_executions"]`.
 * Errors: pg errors propagate (e.g. 42501 when the owner may not create the operator role).
 */
export async function migrate(
  databaseUrl: string,
  options: { direction?: "up" | "down"; count?: number; logger?: StoreLogger } = {},
): Promise<string[]> {
  const logger = options.logger;
  const applied = await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    migrationsTable: MIGRATIONS_TABLE,
    direction: options.direction ?? "up",
    count: options.count ?? (options.direction === "down" ? 1 : Number.POSITIVE_INFINITY),
    singleTransaction: true,
    advisoryLockMode: "wait",
    checkOrder: true,
    log: () => {},
    logger: {
      debug: () => {},
      info: (message: string) => logger?.info({ component: "migrate" }, message),
      warn: (message: string) => logger?.warn({ component: "migrate" }, message),
      error: (message: string) => logger?.warn({ component: "migrate" }, message),
    },
  });
  return applied.map((migration) => migration.name);
}
