/**
 * The rows verification reads, as Postgres sends them: one keyset page of `audit_log` with every value
 * left as the server's text (`pg` parses nothing, builds no row objects; bytea comes as base64), and
 * the two ways a row is taken apart — its link (seq, prev_hash, hash) on the thread that walks the chain, and the whole
 * record on whichever thread checks its content (`checkContent` in `core/audit-verifier.ts`).
 */
import type pg from "pg";
import type { SealedAuditRecord } from "../../core/audit.ts";
import { type AuditProblem, type ChainLink, checkContent } from "../../core/audit-verifier.ts";
import { GatehouseError } from "../../core/errors.ts";
import { toBytes, toSafeInteger } from "../sql-values.ts";
import { AUDIT_COLUMNS } from "./row.ts";

const BYTEA_COLUMNS = new Set<string>(["prev_hash", "hash", "canonical"]);

type Text = string | null;
/** One `audit_log` row in `AUDIT_COLUMNS` order: the server's text (null for NULL), bytea as base64. */
export type RawAuditRow = [Text, Text, Text, Text, Text, Text, Text, Text, Text, Text];

/** Problems found on a page: [index in the page, problem], ascending by index. */
export type PageProblems = Array<[number, AuditProblem]>;

/** Every column as the text Postgres sent: rows are parsed where they are checked. */
const SERVER_TEXT: pg.CustomTypesConfig = {
  getTypeParser: (() => (text: string) => text) as unknown as pg.CustomTypesConfig["getTypeParser"],
};

/**
 * The columns in `AUDIT_COLUMNS` order, the bytea ones as base64 (`encode`): a third shorter than
 * bytea's hex output to send, copy to a worker and decode (Node decodes base64 several times faster
 * than hex, ignoring the line breaks `encode` puts every 76 characters), and the same whatever the
 * server's `bytea_output`.
 */
const RAW_COLUMNS = AUDIT_COLUMNS.map((column) =>
  BYTEA_COLUMNS.has(column) ? `encode(${column}, 'base64')` : column,
).join(", ");

/**
 * Up to `pageSize` rows with `seq > afterSeq`, ascending. Errors: pg errors. The statement is prepared
 * once per connection and page size.
 */
export async function readRawPage(pool: pg.Pool, afterSeq: number, pageSize: number): Promise<RawAuditRow[]> {
  const result = await pool.query<RawAuditRow>({
    name: `gatehouse-audit-verify-b64-${pageSize}`,
    text: `SELECT ${RAW_COLUMNS} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT ${pageSize}`,
    values: [afterSeq],
    rowMode: "array",
    types: SERVER_TEXT,
  });
  return result.rows;
}

/** The seq of a raw row. Errors: `internal` if it is not a safe integer. */
export function seqOf(row: RawAuditRow): number {
  return toSafeInteger(row[0], "seq");
}

/** A raw row as a sealed record (as `sealedFromRow` maps a parsed one). Errors: as {@link linkFromRaw}. */
export function recordFromRaw(row: RawAuditRow): SealedAuditRecord {
  return {
    seq: seqOf(row),
    prevHash: bytes(row[1], "prev_hash"),
    hash: bytes(row[2], "hash"),
    canonical: bytes(row[3], "canonical"),
    kind: String(row[4]),
    actor: String(row[5]),
    outcome: row[6],
    sessionUid: row[7],
    executionId: row[8],
    atMicros: toSafeInteger(row[9], "at_us"),
  };
}

/**
 * A page after its content check: the failing rows' problems, and what the chain walk needs of every
 * row — its seq, and its prev_hash and hash (64 bytes a row) — in buffers a worker hands back without
 * copying.
 */
export interface CheckedPage {
  problems: PageProblems;
  seqs: Float64Array<ArrayBuffer>;
  hashes: Uint8Array<ArrayBuffer>;
}

/**
 * `checkContent` of every row of a page, each row taken apart once. Errors: `internal` for a column
 * of the wrong type (the page's first such row).
 */
export function checkPage(rows: readonly RawAuditRow[]): CheckedPage {
  const problems: PageProblems = [];
  const seqs = new Float64Array(rows.length);
  const hashes = new Uint8Array(rows.length * 64);
  rows.forEach((row, i) => {
    const record = recordFromRaw(row);
    seqs[i] = record.seq;
    hashes.set(record.prevHash, i * 64);
    hashes.set(record.hash, i * 64 + 32);
    const problem = checkContent(record);
    if (problem) problems.push([i, problem]);
  });
  return { problems, seqs, hashes };
}

/** The links of a checked page, in order (views into its buffers). */
export function linksOf(page: CheckedPage): ChainLink[] {
  return Array.from(page.seqs, (seq, i) => ({
    seq,
    prevHash: page.hashes.subarray(i * 64, i * 64 + 32),
    hash: page.hashes.subarray(i * 64 + 32, i * 64 + 64),
  }));
}

function bytes(text: string | null, column: string): Uint8Array {
  if (text === null) throw new GatehouseError("internal", `column ${column}: expected bytea, got NULL`);
  return toBytes(Buffer.from(text, "base64"), column);
}
