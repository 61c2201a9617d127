/**
 * The chain's side of a witness publication (DESIGN §6, `core/witness-continuity.ts`): the hash the
 * chain holds at each seq the witness kept, and the records after the last kept checkpoint verified up
 * to the candidate. Incremental: one indexed lookup of the kept seqs, and only the records the witness
 * has not yet seen (all of them once, for a witness that keeps nothing yet).
 */
import type pg from "pg";
import {
  type AuditCheckpoint,
  type ChainHead,
  ChainVerifier,
  EMPTY_CHAIN_HEAD,
  GENESIS_PREV_HASH,
  toHex,
} from "../../core/audit.ts";
import type { ChainEvidence } from "../../core/witness-continuity.ts";
import { toBytes, toSafeInteger } from "../sql-values.ts";
import { AUDIT_COLUMN_LIST, sealedFromRow } from "./row.ts";

/** Rows per page of the stretch. */
const PAGE_SIZE = 5000;

/**
 * What the chain on `pool` says about `kept` and the records after the last of them up to
 * `candidate.seq`. Errors: pg errors propagate.
 */
export async function readChainEvidence(
  pool: pg.Pool,
  kept: readonly AuditCheckpoint[],
  candidate: AuditCheckpoint,
): Promise<ChainEvidence> {
  const hashes = new Map<number, string>();
  const seqs = [...new Set(kept.map((c) => c.seq))];
  if (seqs.includes(0)) hashes.set(0, toHex(GENESIS_PREV_HASH));
  const positive = seqs.filter((seq) => seq > 0);
  if (positive.length > 0) {
    const result = await pool.query("SELECT seq, hash FROM audit_log WHERE seq = ANY($1::bigint[])", [
      positive.map(String),
    ]);
    for (const row of result.rows)
      hashes.set(toSafeInteger(row.seq, "seq"), toHex(toBytes(row.hash, "hash")));
  }
  const last = [...kept].sort((a, b) => a.seq - b.seq).at(-1);
  if (last && last.seq >= candidate.seq) return { hashes };
  // Anchored at the witness's own hash, so the first record must link to what the witness kept.
  const start: ChainHead = last
    ? { seq: last.seq, hash: Buffer.from(last.headHash, "hex") }
    : EMPTY_CHAIN_HEAD;
  const verifier = new ChainVerifier([candidate], start);
  let after = start.seq;
  for (;;) {
    const { rows } = await pool.query({
      name: `gatehouse-witness-stretch-${PAGE_SIZE}`,
      text: `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT ${PAGE_SIZE}`,
      values: [after, candidate.seq],
    });
    for (const row of rows) verifier.push(sealedFromRow(row));
    if (rows.length < PAGE_SIZE) break;
    after = toSafeInteger(rows[rows.length - 1].seq, "seq");
  }
  return { hashes, stretch: { fromSeq: start.seq + 1, toSeq: candidate.seq, report: verifier.finish() } };
}
