/**
 * Opens the operator's Postgres store: resolves the database (`connection.ts`), migrates it as the
 * owner (`migrate.ts`), and builds the Postgres-backed ports on a pool connected as the operator role
 * whenever one can be had (`operator-role.ts`):
 *   - `GATEHOUSE_OPERATOR_DATABASE_URL` set → the operator pool uses it (production);
 *   - local or embedded server → `gatehouse_operator` is given LOGIN with `GATEHOUSE_OPERATOR_PASSWORD`
 *     (default `gatehouse-operator-local`; loopback only) and the operator pool uses it;
 *   - otherwise (`DATABASE_URL` only) → the owner pool, with a warning: triggers and REVOKE do not
 *     bind the table owner, so the audit tables are append-only only by convention.
 */
import type pg from "pg";
import { createPostgresAuditLog, type PostgresAuditLog } from "./audit-log.ts";
import { createPool, type Database, type ResolveDatabaseOptions, resolveDatabase } from "./connection.ts";
import { createPostgresExecutionStore, type PostgresExecutionStore } from "./executions.ts";
import { migrate } from "./migrate.ts";
import { enableOperatorLogin, operatorUrl } from "./operator-role.ts";
import { createPostgresTranscriptStore, type TranscriptStore } from "./transcripts.ts";

/** The opened store. `stop()` closes both pools (and an embedded server started for it). */
export interface Store {
  database: Database;
  /** Pool connected as `gatehouse_operator` (or the owner pool, see `runsAsOperatorRole`). */
  operatorPool: pg.Pool;
  runsAsOperatorRole: boolean;
  executions: PostgresExecutionStore;
  audit: PostgresAuditLog;
  transcripts: TranscriptStore;
  stop(): Promise<void>;
}

/**
 * Resolves, migrates and opens the store. Errors: those of `resolveDatabase` and `migrate`.
 */
export async function openStore(options: ResolveDatabaseOptions = {}): Promise<Store> {
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
    return {
      database,
      operatorPool,
      runsAsOperatorRole: url !== undefined,
      executions: createPostgresExecutionStore(operatorPool),
      audit: createPostgresAuditLog(operatorPool),
      transcripts: createPostgresTranscriptStore(operatorPool),
      stop: async () => {
        if (operatorPool !== database.pool) await operatorPool.end();
        await database.stop();
      },
    };
  } catch (error) {
    await database.stop();
    throw error;
  }
}
