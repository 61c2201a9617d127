/**
 * Whether the store's database answers, for the `database` readiness check (/readyz, DESIGN §3): a
 * `SELECT 1` through the store's own pool every `intervalMs`, bounded by `timeoutMs` (pg's
 * `query_timeout`; the pool's `connectionTimeoutMillis` bounds the connect), never two at once; and
 * the pool's `error` event — an idle connection the server closed, as it does to all of them when it
 * stops — marks it unavailable at once (the next probe says whether it is back; probing at once could
 * take another idle connection the stopping server has not closed yet, and flap). So readiness follows
 * an outage within one period and a recovery within one more. Transitions are logged once each.
 */
import type pg from "pg";
import type { StoreLogger } from "./pool.ts";
import { isDatabaseUnavailable } from "./unavailable.ts";

/** Options of {@link watchDatabase}. */
export interface DatabaseWatchOptions {
  /** Period of the probe in milliseconds. Default 2000. */
  intervalMs?: number;
  /** How long one probe may take in milliseconds. Default 2000. */
  timeoutMs?: number;
  logger?: StoreLogger;
}

/** A running watch. */
export interface DatabaseWatch {
  /** True while the last observation was an answer (false before the first). */
  available(): boolean;
  stop(): Promise<void>;
}

/** Starts watching `pool`'s server; the first probe runs at once. */
export function watchDatabase(pool: pg.Pool, options: DatabaseWatchOptions = {}): DatabaseWatch {
  const intervalMs = options.intervalMs ?? 2_000;
  const timeoutMs = options.timeoutMs ?? 2_000;
  const log = options.logger;
  let available = false;
  let observed = false;
  let stopped = false;
  let probing: Promise<void> | undefined;

  const note = (answered: boolean, error?: unknown) => {
    if (observed && answered === available) return;
    if (answered) log?.info({}, "the database answers; ready");
    else log?.warn({ err: error }, "the database does not answer; not ready until it does");
    observed = true;
    available = answered;
  };
  const probe = () => {
    if (stopped || probing) return;
    // pg reads `query_timeout` per query too (lib/client.js); @types/pg knows it only per client.
    const query = { text: "SELECT 1", query_timeout: timeoutMs } as pg.QueryConfig;
    probing = pool
      .query(query)
      .then(
        () => note(true),
        (error: unknown) => note(false, error),
      )
      .finally(() => {
        probing = undefined;
      });
  };
  // Only an outage's errors: a connection ended for its own sake (idle_session_timeout, 57P05) is not one.
  const onPoolError = (error: Error) => {
    if (isDatabaseUnavailable(error)) note(false, error);
  };
  pool.on("error", onPoolError);
  const timer = setInterval(probe, intervalMs);
  timer.unref();
  probe();
  return {
    available: () => available,
    async stop() {
      stopped = true;
      clearInterval(timer);
      pool.off("error", onPoolError);
      await probing;
    },
  };
}
