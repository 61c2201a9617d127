/**
 * One append transaction of the audit chain (DESIGN §6):
 *
 *   BEGIN                             ┐
 *   pg_advisory_xact_lock(chain)      │ one round trip; serializes appenders across connections,
 *   head = last row (seq, hash)       ┘ processes, replicas; the head is read after the lock
 *   seal each entry after the head    ; seq = head.seq + 1, prev_hash = head.hash, hash = sha256(…)
 *   INSERT all rows                   ; UNIQUE(prev_hash) would refuse a fork even without the lock
 *   COMMIT
 *
 * A failed transaction is rolled back; a connection that broke on the way is destroyed instead of
 * being returned to the pool, so the next append starts on a healthy one and re-reads the head.
 */
import type pg from "pg";
import {
  type ChainHead,
  EMPTY_CHAIN_HEAD,
  type SealedAuditRecord,
  sealAuditRecord,
  toHex,
} from "../../core/audit.ts";
import type { AppendedRecord, AuditEntry } from "../../core/ports.ts";
import { toBytes, toSafeInteger } from "../sql-values.ts";
import { AUDIT_COLUMN_LIST, AUDIT_COLUMNS, auditRowValues } from "./row.ts";

/**
 * Advisory lock key (two-int form) held by every append transaction: classid 0x47415445 ("GATE"),
 * objid 1. `store/transcripts.ts` uses classid 0x47415446 for per-session locks.
 */
export const AUDIT_CHAIN_LOCK: readonly [number, number] = [0x47415445, 1];

/** Most rows one INSERT may carry: Postgres allows 65535 bind parameters, a row takes 10. */
export const MAX_ROWS_PER_INSERT = Math.floor(65_535 / AUDIT_COLUMNS.length);

/**
 * Appends `entries` (in order, at least one, at most {@link MAX_ROWS_PER_INSERT}) after the current
 * head in one transaction on a connection from `pool`. Returns their seqs and hashes. Entries must have passed
 * `assertEncodable`. Errors: pg errors (the transaction is rolled back and nothing is appended).
 */
export async function appendInOneTransaction(
  pool: pg.Pool,
  entries: readonly AuditEntry[],
): Promise<AppendedRecord[]> {
  const client = await pool.connect();
  // A broken connection emits "error" outside any query; without a listener that would crash the process.
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  try {
    // One round trip for three statements. Under READ COMMITTED every statement of a multi-statement
    // query takes its own snapshot, so the head is read after the lock is held: it is the real head.
    const opened = (await client.query(BEGIN_LOCK_READ_HEAD)) as unknown as pg.QueryResult[];
    let head = headFromRows(opened[2]?.rows ?? []);
    const records: SealedAuditRecord[] = [];
    for (const entry of entries) {
      const record = sealAuditRecord(head, entry);
      records.push(record);
      head = { seq: record.seq, hash: record.hash };
    }
    await client.query(insertStatement(records.length), records.flatMap(auditRowValues));
    await client.query("COMMIT");
    return records.map((r) => ({ seq: r.seq, hash: toHex(r.hash) }));
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      broken ??= rollbackError as Error;
    }
    throw error;
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}

const READ_HEAD = "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1";

/** Opens the append transaction: a simple (multi-statement) query, hence the lock key inlined. */
const BEGIN_LOCK_READ_HEAD = `BEGIN; SELECT pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK[0]}, ${AUDIT_CHAIN_LOCK[1]}); ${READ_HEAD}`;

/** The chain head: the last row's seq and hash, or seq 0 and the genesis hash for an empty chain. */
export async function readHead(db: pg.Pool | pg.PoolClient): Promise<ChainHead> {
  return headFromRows((await db.query(READ_HEAD)).rows);
}

function headFromRows(rows: Array<Record<string, unknown>>): ChainHead {
  const row = rows[0];
  return row ? { seq: toSafeInteger(row.seq, "seq"), hash: toBytes(row.hash, "hash") } : EMPTY_CHAIN_HEAD;
}

const statements = new Map<number, string>();

/** `INSERT INTO audit_log (…) VALUES ($1 … $10), ($11 …), …` for `rows` rows (cached per size). */
function insertStatement(rows: number): string {
  let sql = statements.get(rows);
  if (sql === undefined) {
    const width = AUDIT_COLUMNS.length;
    const tuples = Array.from(
      { length: rows },
      (_, i) => `(${Array.from({ length: width }, (_, k) => `$${i * width + k + 1}`).join(", ")})`,
    );
    sql = `INSERT INTO audit_log (${AUDIT_COLUMN_LIST}) VALUES ${tuples.join(", ")}`;
    if (statements.size < 1024) statements.set(rows, sql);
  }
  return sql;
}
