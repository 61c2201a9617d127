/**
 * Whether an error means the database could not be reached or answered no more — an outage that
 * ends by itself (a restart, a failover, a network break) — as opposed to a refusal retrying cannot
 * change (a constraint, a permission, a bad statement). The one classifier the controllers and the
 * readiness check share. Recognised:
 * - SQLSTATE class 08 (connection exception), 57P01 admin_shutdown, 57P02 crash_shutdown,
 *   57P03 cannot_connect_now (the server starts or stops), 53300 too_many_connections, 57014
 *   query_canceled (statement_timeout fired, or an administrator cancelled the statement: the server
 *   is overloaded or a lock is held), 25P03 idle_in_transaction_session_timeout;
 * - the socket errors pg passes through as they are (ECONNREFUSED, ECONNRESET, …; a Node system error,
 *   with `syscall`), also inside an AggregateError (a host name of several addresses);
 * - pg's and pg-pool's own messages for a lost connection or a timeout (they carry no code);
 * - the pool's own bounds (`pool.ts`): a GatehouseError naming the bound, whose cause is one of the above.
 * Causes are followed through GatehouseErrors only: an HTTP client's `fetch failed` wraps the same
 * socket errors for the API server, which is not the database.
 * SQLSTATE codes: https://www.postgresql.org/docs/current/errcodes-appendix.html
 */
import { GatehouseError } from "../core/errors.ts";

const UNAVAILABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300", "57014", "25P03"]);

const SOCKET_ERRORS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** Messages of pg (lib/client.js) and pg-pool (index.js) for a connection lost, refused or timed out. */
const PG_MESSAGES = [
  "Connection terminated unexpectedly",
  "Connection terminated due to connection timeout",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error and is not queryable",
  "Query read timeout",
  "timeout expired",
];

/** True when `error` says the database is unavailable (see the file comment). Never throws. */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 8 || typeof error !== "object" || error === null) return false;
  const { code, syscall, message } = error as { code?: unknown; syscall?: unknown; message?: unknown };
  if (typeof code === "string") {
    if (code.startsWith("08") && code.length === 5) return true;
    if (UNAVAILABLE_SQLSTATES.has(code)) return true;
    if (SOCKET_ERRORS.has(code) && typeof syscall === "string") return true;
  }
  if (typeof message === "string" && PG_MESSAGES.includes(message)) return true;
  if (error instanceof AggregateError) return error.errors.some((e) => isDatabaseUnavailable(e, depth + 1));
  if (error instanceof GatehouseError) return isDatabaseUnavailable(error.cause, depth + 1);
  return false;
}
