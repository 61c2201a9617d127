/**
 * Opens the operator's Postgres store as a runtime login, never migrating it (DESIGN §6): checks the
 * login (`startup-checks.ts`: not a superuser, not the owner, not able to become it) and that the
 * schema is at the latest migration, then builds the Postgres-backed ports on one pool. Migrating and
 * creating roles is the migrate program's job (`cli/gatehouse-migrate.ts`), run before the processes
 * start (the chart's hook Job, the demo's and e2e environment's init step).
 * It also starts the periodic audit checkpoints (`audit/checkpointer.ts`) unless told not to (the gateway),
 * and the watch of whether the database answers (`readiness.ts`), both stopped by `stop()`.
 */
import type pg from "pg";
import type { Component } from "../api/well-known.ts";
import type { BudgetLedger } from "../core/ports.ts";
import type { CheckpointPublisher } from "./audit/checkpoint-publisher.ts";
import { type Checkpointer, startCheckpointer } from "./audit/checkpointer.ts";
import { createPostgresAuditLog, type PostgresAuditLog } from "./audit/log.ts";
import { createPostgresBudgetLedger } from "./budget-ledger.ts";
import { createPostgresExecutionStore, type PostgresExecutionStore } from "./executions.ts";
import { createPool, type PoolOptions, type StoreLogger } from "./pool.ts";
import { type DatabaseWatchOptions, watchDatabase } from "./readiness.ts";
import { assertRuntimeLogin, assertSchemaCurrent } from "./startup-checks.ts";
import { createPostgresTranscriptStore, type TranscriptStore } from "./transcripts.ts";

/** Options of {@link openStore}: where the database is, and how audit checkpoints are taken. */
export interface OpenStoreOptions {
  /** Postgres URL of this process's runtime login (a member of `gatehouse_controller` or `gatehouse_gateway`). */
  url: string;
  /** The variable `url` came from, named in refusals. Default `DATABASE_URL`. */
  variable?: string;
  /** Pool size. Default 10. */
  poolMax?: number;
  /** The pool's bounds on waits (`pool.ts`); each defaults to the constant named there. */
  poolTimeouts?: Pick<PoolOptions, "connectTimeoutMs" | "statementTimeoutMs" | "idleInTransactionTimeoutMs">;
  logger?: StoreLogger;
  /** The component this process runs as; its login must hold that component's role only (`startup-checks.ts`). */
  component?: Component;
  /**
   * Periodic audit checkpoints: their period (default 60 000 ms) and where they are published outside
   * Postgres (the controller's ConfigMap; none = Postgres only). `false`: none — the gateway's role may
   * not write checkpoints. Default: checkpoints every minute, Postgres only.
   */
  checkpoints?: false | { intervalMs?: number; publisher?: CheckpointPublisher };
  /** The probe behind {@link Store.available} (period, timeout). Default every 2 s, 2 s each. */
  probe?: Omit<DatabaseWatchOptions, "logger">;
}

/** The opened store. `stop()` stops the checkpointer and closes the pool. */
export interface Store {
  /** Pool connected as the runtime login. */
  pool: pg.Pool;
  /** The runtime login's name. */
  login: string;
  executions: PostgresExecutionStore;
  budget: BudgetLedger;
  audit: PostgresAuditLog;
  transcripts: TranscriptStore;
  /** The periodic checkpoints; absent when opened with `checkpoints: false`. */
  checkpointer?: Checkpointer;
  /** Whether the database answered the last probe (readiness.ts): the `database` readiness check. */
  available(): boolean;
  stop(): Promise<void>;
}

/**
 * Checks and opens the store. Errors: `forbidden` for a login the audit triggers would not bind,
 * `unavailable` for a database never migrated or behind the latest migration (each message names
 * the variable, the fix and gatehouse-migrate); pg errors (unreachable server, bad password) propagate.
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const pool = createPool(options.url, {
    max: options.poolMax ?? 10,
    ...options.poolTimeouts,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  try {
    const checks = {
      ...(options.variable ? { variable: options.variable } : {}),
      ...(options.component ? { component: options.component } : {}),
    };
    const login = await assertRuntimeLogin(pool, checks);
    const unknown = await assertSchemaCurrent(pool, checks);
    if (unknown.length > 0) {
      options.logger?.warn(
        { migrations: unknown },
        "the schema has migrations newer than this version (a newer version migrated it); running on",
      );
    }
    const audit = createPostgresAuditLog(pool);
    const checkpoints = options.checkpoints ?? {};
    const checkpointer =
      checkpoints === false
        ? undefined
        : startCheckpointer(audit, {
            ...(checkpoints.intervalMs !== undefined ? { intervalMs: checkpoints.intervalMs } : {}),
            ...(checkpoints.publisher ? { publisher: checkpoints.publisher } : {}),
            ...(options.logger ? { logger: options.logger } : {}),
          });
    const watch = watchDatabase(pool, {
      ...options.probe,
      ...(options.logger ? { logger: options.logger } : {}),
    });
    return {
      pool,
      login,
      executions: createPostgresExecutionStore(pool),
      budget: createPostgresBudgetLedger(pool),
      audit,
      transcripts: createPostgresTranscriptStore(pool),
      ...(checkpointer ? { checkpointer } : {}),
      available: () => watch.available(),
      stop: async () => {
        await checkpointer?.stop();
        await watch.stop();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end();
    throw error;
  }
}
