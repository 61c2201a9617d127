/**
 * The audit chain in Postgres (DESIGN §6): the `AuditLog` port of Core, plus reading, checkpoints and
 * verification. The pieces live beside it: one append transaction in `append.ts`, group commit
 * in `append-batcher.ts`, checkpoints in `checkpoints.ts`, verification in `verify.ts`;
 * encoding and hashing are pure and live in `core/audit.ts`.
 *
 * Appends are serialized across connections, processes and replicas by `pg_advisory_xact_lock`, the
 * head is read after the lock inside the inserting transaction (seq = head + 1), and `UNIQUE(prev_hash)`
 * refuses a fork even if the lock were bypassed. Concurrent `append` calls in one process share
 * transactions.
 */
import type pg from "pg";
import { type AuditCheckpoint, assertEncodable, decodeAuditRecord, toHex } from "../../core/audit.ts";
import { GatehouseError } from "../../core/errors.ts";
import type { AppendedRecord, AuditEntry, AuditLog, ChainedRecord, Clock } from "../../core/ports.ts";
import type { ChainEvidence } from "../../core/witness-continuity.ts";
import { appendInOneTransaction, MAX_ROWS_PER_INSERT, readHead } from "./append.ts";
import { AppendBatcher } from "./append-batcher.ts";
import { readChainEvidence } from "./chain-evidence.ts";
import { readLastCheckpoint, writeCheckpoint } from "./checkpoints.ts";
import { AUDIT_COLUMN_LIST, type StoredAuditRecord, sealedFromRow, storedFromSealed } from "./row.ts";
import { type ChainVerifyReport, type VerifyOptions, verifyAuditChain } from "./verify.ts";

/** Entries per transaction when many appends are waiting. */
const DEFAULT_MAX_BATCH = 500;

/** The Postgres audit log: the `AuditLog` port plus reading, checkpoints and verification. */
export interface PostgresAuditLog extends AuditLog {
  /**
   * Appends `entries` in order in one transaction (bypassing the batcher; for imports and
   * benchmarks) and returns their seqs. Errors: `invalid_arguments` for more than
   * {@link MAX_ROWS_PER_INSERT} entries or an entry that cannot be stored; pg errors.
   */
  appendBatch(entries: AuditEntry[]): Promise<AppendedRecord[]>;
  /** The current head: seq (0 when empty) and hash as hex (genesis hash when empty). */
  head(): Promise<{ seq: number; hash: string }>;
  /** Stores a checkpoint of the current head (idempotent per seq) and returns it. */
  checkpoint(): Promise<AuditCheckpoint>;
  /** What the chain says about a witness's kept checkpoints and the stretch to `candidate` (`chain-evidence.ts`). */
  chainEvidence(kept: readonly AuditCheckpoint[], candidate: AuditCheckpoint): Promise<ChainEvidence>;
  /** The checkpoint with the highest seq, if any. */
  lastCheckpoint(): Promise<AuditCheckpoint | undefined>;
  /** Verifies the chain; see `verifyAuditChain` in `verify.ts`. */
  verify(options?: VerifyOptions): Promise<ChainVerifyReport>;
  /** Records with seq > `afterSeq` (default 0), ascending, at most `limit` (default 100). */
  read(options?: { afterSeq?: number; limit?: number; sessionUid?: string }): Promise<StoredAuditRecord[]>;
}

/**
 * A Postgres-backed audit log on `pool` (connect as a runtime login in production; checkpoints need `gatehouse_controller`).
 * `clock` timestamps checkpoints (default `Date.now() * 1000`); `maxBatch` bounds the entries one
 * transaction carries under load (default 500, at most {@link MAX_ROWS_PER_INSERT}).
 * Errors of `append`: `invalid_arguments` for an entry that cannot be stored (checked before it is
 * queued); pg errors of its transaction.
 */
export function createPostgresAuditLog(
  pool: pg.Pool,
  options: { clock?: Clock; maxBatch?: number } = {},
): PostgresAuditLog {
  const clock = options.clock ?? { nowMicros: () => Date.now() * 1000 };
  const maxBatch = Math.min(options.maxBatch ?? DEFAULT_MAX_BATCH, MAX_ROWS_PER_INSERT);
  const batcher = new AppendBatcher((entries) => appendInOneTransaction(pool, entries), maxBatch);

  return {
    async append(entry) {
      assertEncodable(entry);
      return batcher.append(entry);
    },

    async appendAll(entries) {
      for (const entry of entries) assertEncodable(entry);
      return batcher.appendAll(entries);
    },

    async appendBatch(entries) {
      if (entries.length > MAX_ROWS_PER_INSERT) {
        throw new GatehouseError(
          "invalid_arguments",
          `appendBatch takes at most ${MAX_ROWS_PER_INSERT} entries, not ${entries.length}`,
        );
      }
      for (const entry of entries) assertEncodable(entry);
      return entries.length === 0 ? [] : appendInOneTransaction(pool, entries);
    },

    async head() {
      const head = await readHead(pool);
      return { seq: head.seq, hash: toHex(head.hash) };
    },

    checkpoint: () => writeCheckpoint(pool, clock),

    lastCheckpoint: () => readLastCheckpoint(pool),

    chainEvidence: (kept, candidate) => readChainEvidence(pool, kept, candidate),

    verify: (verifyOptions) => verifyAuditChain(pool, verifyOptions),

    async recordsOf(executionId) {
      const result = await pool.query(
        `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log WHERE execution_id = $1 ORDER BY seq`,
        [executionId],
      );
      return result.rows.map((row): ChainedRecord => {
        const sealed = sealedFromRow(row);
        return { ...decodeAuditRecord(sealed.canonical).entry, seq: sealed.seq, hash: toHex(sealed.hash) };
      });
    },

    async recentOfKind(kind, sinceMicros, limit) {
      // audit_log_by_kind (kind, at_us) serves the look-back.
      const result = await pool.query(
        `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log WHERE kind = $1 AND at_us >= $2 ORDER BY seq DESC LIMIT $3`,
        [kind, sinceMicros, limit],
      );
      return result.rows.map((row): ChainedRecord => {
        const sealed = sealedFromRow(row);
        return { ...decodeAuditRecord(sealed.canonical).entry, seq: sealed.seq, hash: toHex(sealed.hash) };
      });
    },

    async read(readOptions = {}) {
      const params: unknown[] = [readOptions.afterSeq ?? 0, readOptions.limit ?? 100];
      let where = "seq > $1";
      if (readOptions.sessionUid !== undefined) {
        params.push(readOptions.sessionUid);
        where += " AND session_uid = $3";
      }
      const result = await pool.query(
        `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log WHERE ${where} ORDER BY seq LIMIT $2`,
        params,
      );
      return result.rows.map((row) => storedFromSealed(sealedFromRow(row)));
    },
  };
}
