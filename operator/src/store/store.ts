/**
 * Opens the operator's Postgres store: resolves the database (`connection.ts`), migrates it as the
 * owner (`migrate.ts`), and builds the Postgres-backed ports on a pool connected as the operator role
 * whenever one can be had (`roles.ts`):
 *   - `GATEHOUSE_OPERATOR_DATABASE_URL` set → the operator pool uses it (production);
 *   - local or embedded server → `gatehouse_operator` is given LOGIN with `GATEHOUSE_OPERATOR_PASSWORD`
 *     (default `gatehouse-operator-local`; loopback only) and the operator pool uses it;
 *   - otherwise (`DATABASE_URL` only) → the `DATABASE_URL` pool, with a warning: the audit tables
 *     are append-only for that login only if it is not the owner or a superuser.
 * It also starts the periodic audit checkpoints (`checkpointer.ts`), stopped by `stop()`.
 */
import type pg from "pg";
import type { BudgetLedger } from "../core/ports.ts";
import { createPostgresAuditLog, type PostgresAuditLog } from "./audit-log.ts";
import { createPostgresBudgetLedger } from "./budget-ledger.ts";
import type { CheckpointPublisher } from "./checkpoint-publisher.ts";
import { type Checkpointer, startCheckpointer } from "./checkpointer.ts";
import { createPool, type Database, type ResolveDatabaseOptions, resolveDatabase } from "./connection.ts";
import { createPostgresExecutionStore, type PostgresExecutionStore } from "./executions.ts";
import { migrate } from "./migrate.ts";
import { enableOperatorLogin, operatorUrl } from "./roles.ts";
import { createPostgresTranscriptStore, type TranscriptStore } from "./transcripts.ts";

/** Options of {@link openStore}: where the database is, and how audit checkpoints are taken. */
export interface OpenStoreOptions extends ResolveDatabaseOptions {
  /** Period of audit checkpoints in milliseconds (default 60 000). */
  checkpointIntervalMs?: number;
  /** Publishes checkpoints outside Postgres (the operator's ConfigMap); none → Postgres only. */
  checkpointPublisher?: CheckpointPublisher;
}

/** The opened store. `stop()` stops the checkpointer and closes both pools (and an embedded server started for it). */
export interface Store {
  database: Database;
  /** Pool connected as `gatehouse_operator` (or the owner pool, see `runsAsOperatorRole`). */
  operatorPool: pg.Pool;
  runsAsOperatorRole: boolean;
  executions: PostgresExecutionStore;
  budget: BudgetLedger;
  audit: PostgresAuditLog;
  transcripts: TranscriptStore;
  checkpointer: Checkpointer;
  stop(): Promise<void>;
}

/**
 * Resolves, migrates and opens the store. Errors: those of `resolveDatabase` and `migrate`.
 */
export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  const env = options.env ?? process.env;
  const database = await resolveDatabase(options);
  try {
    await migrate(database.url, options.logger ? { logger: options.logger } : {});
    let url: string | undefined = env.GATEHOUSE_OPERATOR_DATABASE_URL;
    if (!url && database.source !== "env") {
      const password = env.GATEHOUSE_OPERATOR_PASSWORD || "gatehouse-operator-local";
      await enableOperatorLogin(database.pool, password);
      url = operatorUrl(database.url, password);
    }
    if (!url) {
      options.logger?.warn(
        {},
        "GATEHOUSE_OPERATOR_DATABASE_URL is not set: running as the database owner, whom the audit triggers do not bind",
      );
    }
    const operatorPool = url
      ? createPool(url, { max: options.poolMax ?? 10, ...(options.logger ? { logger: options.logger } : {}) })
      : database.pool;
    const audit = createPostgresAuditLog(operatorPool);
    const checkpointer = startCheckpointer(audit, {
      ...(options.checkpointIntervalMs !== undefined ? { intervalMs: options.checkpointIntervalMs } : {}),
      ...(options.checkpointPublisher ? { publisher: options.checkpointPublisher } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    return {
      database,
      operatorPool,
      runsAsOperatorRole: url !== undefined,
      executions: createPostgresExecutionStore(operatorPool),
      budget: createPostgresBudgetLedger(operatorPool),
      audit,
      transcripts: createPostgresTranscriptStore(operatorPool),
      checkpointer,
      stop: async () => {
        await checkpointer.stop();
        if (operatorPool !== database.pool) await operatorPool.end();
        await database.stop();
      },
    };
  } catch (error) {
    await database.stop();
    throw error;
  }
}
