/**
 * Checkpoints of the audit chain head in Postgres (`audit_checkpoints`, DESIGN §6): (seq, head hash,
 * time). One per seq; writing the same head twice keeps the first. Their copies outside Postgres are
 * published through a `CheckpointPublisher` (see `checkpointer.ts`).
 */
import type pg from "pg";
import { type AuditCheckpoint, toHex } from "../../core/audit.ts";
import type { Clock } from "../../core/ports.ts";
import { toBytes, toSafeInteger } from "../sql-values.ts";
import { readHead } from "./append.ts";

/**
 * Stores a checkpoint of the current head, timestamped `clock.nowMicros()`, unless one exists for
 * that seq, and returns the stored one. The empty chain checkpoints as seq 0 with the genesis hash.
 * Errors: pg errors propagate.
 */
export async function writeCheckpoint(pool: pg.Pool, clock: Clock): Promise<AuditCheckpoint> {
  const head = await readHead(pool);
  await pool.query(
    "INSERT INTO audit_checkpoints (seq, head_hash, at_us) VALUES ($1, $2, $3) ON CONFLICT (seq) DO NOTHING",
    [head.seq, Buffer.from(head.hash), clock.nowMicros()],
  );
  const stored = await pool.query("SELECT seq, head_hash, at_us FROM audit_checkpoints WHERE seq = $1", [
    head.seq,
  ]);
  return checkpointFromRow(stored.rows[0]);
}

/** The checkpoint with the highest seq, or undefined when none was written. */
export async function readLastCheckpoint(pool: pg.Pool): Promise<AuditCheckpoint | undefined> {
  const result = await pool.query(
    "SELECT seq, head_hash, at_us FROM audit_checkpoints ORDER BY seq DESC LIMIT 1",
  );
  return result.rows[0] ? checkpointFromRow(result.rows[0]) : undefined;
}

function checkpointFromRow(row: Record<string, unknown>): AuditCheckpoint {
  return {
    seq: toSafeInteger(row.seq, "seq"),
    headHash: toHex(toBytes(row.head_hash, "head_hash")),
    atMicros: toSafeInteger(row.at_us, "at_us"),
  };
}
