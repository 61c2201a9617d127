/**
 * Applies the schema with node-pg-migrate's programmatic runner, as the owner role (DESIGN §6).
 *
 * The connection given (`databaseUrl`: the local superuser, or a platform's administrative login)
 * first makes sure both roles exist (`roles.ts`), then `SET ROLE gatehouse_owner` and hands the
 * connection to the runner, so every table, function and the `pgmigrations` table itself belong to
 * the owner. Migrations are the `.sql` files in `./migrations/` (node-pg-migrate's SQL format:
 * `-- Up Migration` / `-- Down Migration`), applied in one transaction under node-pg-migrate's
 * advisory lock, so migrate programs started together wait for each other instead of failing.
 * Only the migrate program (`cli/gatehouse-migrate.ts`) and tests call it; the long-running
 * processes never migrate (`startup-checks.ts`).
 */
import { runner } from "node-pg-migrate";
import pg from "pg";
import type { Component } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import { MIGRATIONS_DIR, MIGRATIONS_TABLE } from "./migration-files.ts";
import type { StoreLogger } from "./pool.ts";
import { ensureRoles, ensureRuntimeLogin, OWNER_ROLE, restrictDatabaseConnect } from "./roles.ts";

export { MIGRATIONS_DIR, MIGRATIONS_TABLE } from "./migration-files.ts";

/**
 * Migrates the database at `databaseUrl` up to the latest version (or down by `count`, default 1,
 * with `direction: "down"`). Returns the names of the migrations applied, e.g. `["0001_executions"]`.
 * Errors: `forbidden` from `ensureRoles` when the login may not create or assume the roles;
 * `conflict` when the database was migrated by someone other than `gatehouse_owner`; pg and
 * node-pg-migrate errors propagate.
 */
export async function migrate(
  databaseUrl: string,
  options: { direction?: "up" | "down"; count?: number; logger?: StoreLogger } = {},
): Promise<string[]> {
  const logger = options.logger;
  const client = new pg.Client({ connectionString: databaseUrl, application_name: "gatehouse-migrate" });
  await client.connect();
  try {
    await ensureRoles(client);
    await assertOwnedByOwnerRole(client);
    await client.query(`SET ROLE ${OWNER_ROLE}`);
    const applied = await runner({
      dbClient: client,
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
  } finally {
    await client.end();
  }
}

/**
 * A database whose `pgmigrations` belongs to another role was migrated before the owner role
 * existed (the pre-release skeleton ran migrations as the superuser). The owner could not read it,
 * and its tables would not be bound by the append-only triggers' premise; say so plainly.
 */
async function assertOwnedByOwnerRole(client: pg.Client): Promise<void> {
  const result = await client.query<{ owner: string; database: string }>(
    `SELECT pg_catalog.pg_get_userbyid(c.relowner) AS owner, current_database() AS database
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relname = $1`,
    [MIGRATIONS_TABLE],
  );
  const row = result.rows[0];
  if (row && row.owner !== OWNER_ROLE) {
    throw new GatehouseError(
      "conflict",
      `database ${row.database} was migrated as ${row.owner}, not ${OWNER_ROLE}; ` +
        `its schema predates the owner role. Drop it (DROP DATABASE ${row.database}) and start again`,
    );
  }
}

/**
 * Makes the login of `runtimeUrl` (the URL a component will connect with: its user and password) a
 * member of `component`'s runtime role, creating it when missing (`ensureRuntimeLogin`), connected as
 * `ownerUrl`'s login (the migrate program's), and lets it — and no PUBLIC — connect to the database
 * (`restrictDatabaseConnect`). Returns the login's name and what was done. Errors:
 * those of `ensureRuntimeLogin` (`forbidden` when `ownerUrl`'s login may not create roles: create the
 * login as an administrator); pg errors propagate.
 */
export async function provisionRuntimeLogin(
  ownerUrl: string,
  component: Component,
  runtimeUrl: string,
): Promise<{ login: string; outcome: "created" | "granted" | "unchanged" }> {
  const parsed = new URL(runtimeUrl);
  const login = decodeURIComponent(parsed.username);
  const password = parsed.password ? decodeURIComponent(parsed.password) : undefined;
  const admin = new pg.Client({ connectionString: ownerUrl, application_name: "gatehouse-migrate" });
  await admin.connect();
  try {
    const outcome = await ensureRuntimeLogin(admin, component, login, password);
    await restrictDatabaseConnect(admin, [login]);
    return { login, outcome };
  } finally {
    await admin.end();
  }
}
