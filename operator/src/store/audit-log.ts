/**
 * The audit chain in Postgres (DESIGN §6): append, checkpoint, verify. Encoding, hashing and the
 * verification rules are pure and live in `core/audit.ts`; this file holds the SQL.
 *
 * Appends are serialized across replicas with `pg_advisory_xact_lock` (the head is read after the lock
 * is taken, inside the inserting transaction) and batched: concurrent `append` calls in one process
 * share one transaction. `UNIQUE(prev_hash)` makes a fork impossible even if the lock were bypassed.
 */
import type pg from "pg";
import {
  type AuditCheckpoint,
  type AuditVerifyReport,
  assertEncodable,
  type ChainHead,
  ChainVerifier,
  EMPTY_CHAIN_HEAD,
  type SealedAuditRecord,
  sealAuditRecord,
  toHex,
} from "../core/audit.ts";
import type { AuditEntry, AuditLog, Clock } from "../core/ports.ts";
import { toBytes, toSafeInteger } from "./sql-values.ts";

/**
 * Advisory lock key (two-int form) held while appending: classid 0x47415445 ("GATE"), objid 1.
 * `store/transcripts.ts` uses classid 0x47415446 for per-session locks.
 */
const AUDIT_LOCK: readonly [number, number] = [0x47415445, 1];

/** Records per transaction when many appends are waiting. */
const DEFAULT_MAX_BATCH = 200;

/** The Postgres audit log: the `AuditLog` port plus verification and checkpoints. */
export interface PostgresAuditLog extends AuditLog {
  /** Appends several entries in order, in one transaction. Returns their seqs. */
  appendBatch(entries: AuditEntry[]): Promise<Array<{ seq: number }>>;
  /** The current head (seq 0 / genesis hash when empty), hash as hex. */
  head(): Promise<{ seq: number; hash: string }>;
  /** Stores a checkpoint of the current head (idempotent per seq) and returns it. */
  checkpoint(): Promise<AuditCheckpoint>;
  /** The checkpoint with the highest seq, if any. */
  lastCheckpoint(): Promise<AuditCheckpoint | undefined>;
  /**
   * Verifies the whole chain in batches of `batchSize` rows (default 1000): every hash, every link,
   * every queryable column against the hashed bytes, sequence gaps, and the head against the last
   * stored checkpoint plus any `checkpoints` kept outside Postgres (the ConfigMap copy).
   */
  verify(options?: { checkpoints?: AuditCheckpoint[]; batchSize?: number }): Promise<AuditVerifyReport>;
  /** Records with seq > `afterSeq` (default 0), ascending, at most `limit` (default 100). */
  read(options?: { afterSeq?: number; limit?: number; sessionUid?: string }): Promise<StoredAuditRecord[]>;
}

/** A stored record with its hashes as hex (for display and APIs). */
export interface StoredAuditRecord {
  seq: number;
  prevHash: string;
  hash: string;
  kind: string;
  actor: string;
  sessionUid: string | null;
  executionId: string | null;
  atMicros: number;
  /** The exact hashed bytes, decoded as UTF-8 JSON text. */
  canonical: string;
}

interface Pending {
  entry: AuditEntry;
  resolve: (value: { seq: number }) => void;
  reject: (error: unknown) => void;
}

/**
 * A Postgres-backed audit log on `pool` (connect as `gatehouse_operator` in production).
 * `clock` timestamps checkpoints (default: `Date.now() * 1000`).
 */
export function createPostgresAuditLog(
  pool: pg.Pool,
  options: { clock?: Clock; maxBatch?: number } = {},
): PostgresAuditLog {
  const clock = options.clock ?? { nowMicros: () => Date.now() * 1000 };
  const maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
  const queue: Pending[] = [];
  let flushing = false;

  async function flush(): Promise<void> {
    flushing = true;
    try {
      while (queue.length > 0) {
        const batch = queue.splice(0, maxBatch);
        try {
          const seqs = await insertBatch(
            pool,
            batch.map((p) => p.entry),
          );
          batch.forEach((p, i) => {
            p.resolve(seqs[i]!);
          });
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      flushing = false;
    }
  }

  return {
    append(entry) {
      assertEncodable(entry);
      return new Promise((resolve, reject) => {
        queue.push({ entry, resolve, reject });
        if (!flushing) void flush();
      });
    },

    async appendBatch(entries) {
      for (const entry of entries) assertEncodable(entry);
      return entries.length === 0 ? [] : insertBatch(pool, entries);
    },

    async head() {
      const head = await readHead(pool);
      return { seq: head.seq, hash: toHex(head.hash) };
    },

    async checkpoint() {
      const head = await readHead(pool);
      const atMicros = clock.nowMicros();
      await pool.query(
        "INSERT INTO audit_checkpoints (seq, head_hash, at_us) VALUES ($1, $2, $3) ON CONFLICT (seq) DO NOTHING",
        [head.seq, head.hash, atMicros],
      );
      const stored = await pool.query("SELECT seq, head_hash, at_us FROM audit_checkpoints WHERE seq = $1", [
        head.seq,
      ]);
      return checkpointFromRow(stored.rows[0]);
    },

    async lastCheckpoint() {
      const result = await pool.query(
        "SELECT seq, head_hash, at_us FROM audit_checkpoints ORDER BY seq DESC LIMIT 1",
      );
      return result.rows[0] ? checkpointFromRow(result.rows[0]) : undefined;
    },

    async verify(verifyOptions = {}) {
      const batchSize = verifyOptions.batchSize ?? 1000;
      const last = await this.lastCheckpoint();
      const verifier = new ChainVerifier([...(last ? [last] : []), ...(verifyOptions.checkpoints ?? [])]);
      let afterSeq = 0;
      for (;;) {
        const result = await pool.query(
          `SELECT seq, prev_hash, hash, canonical, kind, actor, session_uid, execution_id, at_us
             FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2`,
          [afterSeq, batchSize],
        );
        for (const row of result.rows) verifier.push(sealedFromRow(row));
        if (result.rows.length < batchSize) break;
        afterSeq = toSafeInteger(result.rows[result.rows.length - 1].seq, "seq");
      }
      return verifier.finish();
    },

    async read(readOptions = {}) {
      const params: unknown[] = [readOptions.afterSeq ?? 0, readOptions.limit ?? 100];
      let where = "seq > $1";
      if (readOptions.sessionUid !== undefined) {
        params.push(readOptions.sessionUid);
        where += " AND session_uid = $3";
      }
      const result = await pool.query(
        `SELECT seq, prev_hash, hash, canonical, kind, actor, session_uid, execution_id, at_us
           FROM audit_log WHERE ${where} ORDER BY seq LIMIT $2`,
        params,
      );
      return result.rows.map((row) => {
        const sealed = sealedFromRow(row);
        return {
          seq: sealed.seq,
          prevHash: toHex(sealed.prevHash),
          hash: toHex(sealed.hash),
          kind: sealed.kind,
          actor: sealed.actor,
          sessionUid: sealed.sessionUid,
          executionId: sealed.executionId,
          atMicros: sealed.atMicros,
          canonical: new TextDecoder().decode(sealed.canonical),
        };
      });
    },
  };
}

/** Appends `entries` after the current head in one transaction, holding the chain lock. */
async function insertBatch(pool: pg.Pool, entries: AuditEntry[]): Promise<Array<{ seq: number }>> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1, $2)", [...AUDIT_LOCK]);
    let head = await readHead(client);
    const records: SealedAuditRecord[] = [];
    for (const entry of entries) {
      const record = sealAuditRecord(head, entry);
      records.push(record);
      head = { seq: record.seq, hash: record.hash };
    }
    const values: unknown[] = [];
    const tuples = records.map((r, i) => {
      values.push(
        r.seq,
        r.prevHash,
        r.hash,
        r.canonical,
        r.kind,
        r.actor,
        r.sessionUid,
        r.executionId,
        r.atMicros,
      );
      const base = i * 9;
      return `(${Array.from({ length: 9 }, (_, k) => `$${base + k + 1}`).join(", ")})`;
    });
    await client.query(
      `INSERT INTO audit_log (seq, prev_hash, hash, canonical, kind, actor, session_uid, execution_id, at_us)
       VALUES ${tuples.join(", ")}`,
      values.map((v) => (v instanceof Uint8Array ? Buffer.from(v) : v)),
    );
    await client.query("COMMIT");
    return records.map((r) => ({ seq: r.seq }));
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

async function readHead(db: pg.Pool | pg.PoolClient): Promise<ChainHead> {
  const result = await db.query("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1");
  const row = result.rows[0];
  return row ? { seq: toSafeInteger(row.seq, "seq"), hash: toBytes(row.hash, "hash") } : EMPTY_CHAIN_HEAD;
}

function sealedFromRow(row: Record<string, unknown>): SealedAuditRecord {
  return {
    seq: toSafeInteger(row.seq, "seq"),
    prevHash: toBytes(row.prev_hash, "prev_hash"),
    hash: toBytes(row.hash, "hash"),
    canonical: toBytes(row.canonical, "canonical"),
    kind: String(row.kind),
    actor: String(row.actor),
    sessionUid: row.session_uid === null ? null : String(row.session_uid),
    executionId: row.execution_id === null ? null : String(row.execution_id),
    atMicros: toSafeInteger(row.at_us, "at_us"),
  };
}

function checkpointFromRow(row: Record<string, unknown>): AuditCheckpoint {
  return {
    seq: toSafeInteger(row.seq, "seq"),
    headHash: toHex(toBytes(row.head_hash, "head_hash")),
    atMicros: toSafeInteger(row.at_us, "at_us"),
  };
}
