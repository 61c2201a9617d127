/**
 * The store pool's bounds (store/pool.ts) against real Postgres, from the side of whoever makes the
 * database hang: a pool kept busy, a lock held by another session, a transaction left idle. Each wait
 * ends within its bound with a GatehouseError `unavailable` that names the bound — which the gateway
 * answers 503 with that message and the controllers retry (store/unavailable.ts) — and each has a
 * positive control: the same call, without the obstacle, succeeds.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatehouseError } from "../../operator/src/core/errors.ts";
import { errorReply } from "../../operator/src/gateway/error-reply.ts";
import { AUDIT_CHAIN_LOCK } from "../../operator/src/store/audit/append.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import {
  createPool,
  IDLE_IN_TRANSACTION_TIMEOUT_MS,
  STATEMENT_TIMEOUT_MS,
} from "../../operator/src/store/pool.ts";
import { openStore } from "../../operator/src/store/store.ts";
import { isDatabaseUnavailable } from "../../operator/src/store/unavailable.ts";
import { auditEntry } from "./audit-entry.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

/** The rejection of `promise` and how long it took; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  if (!outcome) throw new Error("expected a rejection, got a result");
  return { error: outcome.error, ms: Date.now() - started };
}

/** Asserts `error` is the pool's `unavailable` naming `bound`, classified and answered as an outage. */
function expectBound(error: unknown, bound: RegExp): void {
  expect(error).toBeInstanceOf(GatehouseError);
  expect((error as GatehouseError).kind).toBe("unavailable");
  expect((error as Error).message).toMatch(bound);
  expect(isDatabaseUnavailable(error)).toBe(true);
  const reply = errorReply(error);
  expect(reply.code).toBe(503);
  expect(reply.body.message).toMatch(bound);
}

describe("the store pool's timeouts", () => {
  let db: FreshDatabase;
  const pools: pg.Pool[] = [];
  const pool = (options: Parameters<typeof createPool>[1]) => {
    const created = createPool(db.operatorUrl, options);
    pools.push(created);
    return created;
  };

  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await db?.drop();
  });

  it("sets statement_timeout and idle_in_transaction_session_timeout on every connection by default", async () => {
    const defaults = pool({ max: 1 });
    const shown = await defaults.query<{ statement: string; idle: string }>(
      "SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle",
    );
    expect(shown.rows[0]).toEqual({
      statement: `${STATEMENT_TIMEOUT_MS / 1000}s`,
      idle: `${IDLE_IN_TRANSACTION_TIMEOUT_MS / 1000}s`,
    });
  });

  it("takes the bounds openStore is given (the processes' configuration)", async () => {
    const store = await openStore({
      url: db.operatorUrl,
      component: "controller",
      checkpoints: false,
      poolTimeouts: { statementTimeoutMs: 700, idleInTransactionTimeoutMs: 900 },
    });
    try {
      const shown = await store.pool.query<{ statement: string; idle: string }>(
        "SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle",
      );
      expect(shown.rows[0]).toEqual({ statement: "700ms", idle: "900ms" });
    } finally {
      await store.stop();
    }
  });

  it("gives up waiting for a free connection of an exhausted pool within the acquire timeout, and says so", async () => {
    const small = pool({ max: 1, connectTimeoutMs: 300 });
    const held = await small.connect();
    try {
      // Both ways in: pool.query and pool.connect.
      for (const attempt of [() => small.query("SELECT 1"), () => small.connect()]) {
        const { error, ms } = await rejection(attempt());
        expectBound(
          error,
          /no Postgres connection became free within 300 ms.*all 1 of the pool's connections/,
        );
        expect(ms).toBeGreaterThanOrEqual(250);
        expect(ms).toBeLessThan(3_000);
      }
    } finally {
      held.release();
    }
    // Positive control: with the connection back, the same query answers.
    expect((await small.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  });

  it("cancels an audit append blocked by another session holding the chain lock, naming statement_timeout", async () => {
    const bounded = pool({ max: 2, statementTimeoutMs: 500 });
    const audit = createPostgresAuditLog(bounded);
    const intruder = await db.admin.connect();
    try {
      await intruder.query("BEGIN");
      await intruder.query("SELECT pg_advisory_xact_lock($1, $2)", [...AUDIT_CHAIN_LOCK]);
      const { error, ms } = await rejection(audit.append(auditEntry(1)));
      expectBound(error, /longer than 500 ms \(statement_timeout\)/);
      expect(((error as Error).cause as { code?: string }).code).toBe("57014");
      expect(ms).toBeLessThan(5_000);
    } finally {
      await intruder.query("ROLLBACK");
      intruder.release();
    }
    // Positive control: the lock released, the same append goes through, and a statement shorter
    // than the bound is not cancelled.
    await audit.append(auditEntry(1));
    await bounded.query("SELECT pg_sleep(0.1)");
    expect((await bounded.query("SELECT count(*)::int AS n FROM audit_log")).rows[0]).toEqual({ n: 1 });
  });

  it("rolls back a transaction left idle past the bound, naming idle_in_transaction_session_timeout", async () => {
    const bounded = pool({ max: 1, idleInTransactionTimeoutMs: 300 });
    const client = await bounded.connect();
    let broken: unknown;
    try {
      await client.query("BEGIN");
      await client.query("SELECT 1");
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      // The server ended the connection while it sat idle; no listener of ours was on it, and the
      // process lives on. The next statement says why it cannot run.
      const { error } = await rejection(client.query("SELECT 1"));
      broken = error;
      expectBound(error, /idle longer than 300 ms \(idle_in_transaction_session_timeout\)/);
    } finally {
      client.release(broken as Error | undefined);
    }
    // Positive control: a transaction whose statements follow each other within the bound commits.
    const next = await bounded.connect();
    try {
      await next.query("BEGIN");
      await new Promise((resolve) => setTimeout(resolve, 100));
      await next.query("SELECT 1");
      await next.query("COMMIT");
    } finally {
      next.release();
    }
  });
});
