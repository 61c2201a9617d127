/**
 * verify() over a chain many pages long, its records' content checked on worker threads while the
 * chain is walked in order (`store/audit/verify.ts`), in a real Postgres: a tampered row is named at
 * exactly its seq whichever page and worker it fell to, and the report is the one a walk of one
 * record at a time gives (`ChainVerifier.push` over every row).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChainVerifier } from "../../operator/src/core/audit.ts";
import { createPostgresAuditLog, type PostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { AUDIT_COLUMN_LIST, sealedFromRow } from "../../operator/src/store/audit/row.ts";
import { auditEntry } from "./audit-entry.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

const RECORDS = 2_500;
const PAGE = 100;

let db: FreshDatabase;
let log: PostgresAuditLog;
beforeEach(async () => {
  db = await freshDatabase();
  log = createPostgresAuditLog(db.operator, { clock: { nowMicros: () => 1_800_000_000_000_000 } });
  for (let n = 1; n <= RECORDS; n += 500) {
    await log.appendBatch(Array.from({ length: 500 }, (_, i) => auditEntry(n + i)));
  }
  await log.checkpoint();
});
afterEach(async () => {
  await db?.drop();
});

/** Runs `sql` as the owner with the audit triggers disabled, in one transaction. */
async function tamper(sql: string): Promise<void> {
  const client = await db.owner.connect();
  try {
    await client.query("BEGIN");
    await client.query("ALTER TABLE audit_log DISABLE TRIGGER USER");
    await client.query(sql);
    await client.query("ALTER TABLE audit_log ENABLE TRIGGER USER");
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

/** The report of pushing every stored row, in seq order, into one `ChainVerifier`. */
async function oneAtATime() {
  const last = await db.admin.query(
    "SELECT seq, encode(head_hash, 'hex') AS hash, at_us FROM audit_checkpoints ORDER BY seq DESC LIMIT 1",
  );
  const checkpoint = last.rows[0];
  const verifier = new ChainVerifier([
    { seq: Number(checkpoint.seq), headHash: checkpoint.hash, atMicros: Number(checkpoint.at_us) },
  ]);
  const rows = await db.operator.query(`SELECT ${AUDIT_COLUMN_LIST} FROM audit_log ORDER BY seq`);
  for (const row of rows.rows) verifier.push(sealedFromRow(row));
  return verifier.finish();
}

describe("verify() over many pages", () => {
  it("passes the intact chain with its checkpoint, on workers and without", async () => {
    for (const workers of [0, 2]) {
      expect(await log.verify({ pageSize: PAGE, workers })).toMatchObject({
        ok: true,
        records: RECORDS,
        badRows: 0,
        gaps: [],
        head: { seq: RECORDS },
        checkpoints: [expect.objectContaining({ status: "ok", source: "postgres" })],
      });
    }
  });

  it("names a row rewritten in the middle at exactly its seq: the first of a page, its predecessor checked by another worker", async () => {
    // Page 13 (seqs 1201..1300) goes to worker 0 of 2, page 12 to worker 1. The owner may drop the
    // CHECK that the stored hash covers the stored bytes.
    await tamper(
      `ALTER TABLE audit_log DROP CONSTRAINT audit_log_hash_links;
       UPDATE audit_log SET canonical = convert_to(replace(convert_from(canonical, 'UTF8'), '"alice"', '"alicf"'), 'UTF8') WHERE seq = 1201`,
    );

    const report = await log.verify({ pageSize: PAGE, workers: 2 });
    expect(report).toMatchObject({ ok: false, records: RECORDS, badRows: 1, gaps: [] });
    expect(report.firstBadRow).toEqual({
      seq: 1201,
      reason: "hash_mismatch",
      message: "hash ≠ sha256(prev_hash || canonical): the bytes were changed",
    });
  });

  it("gives the one-record-at-a-time report for a chain tampered in several ways, whatever the pages and workers", async () => {
    await tamper("UPDATE audit_log SET outcome = 'failure' WHERE seq = 1300");
    await tamper("DELETE FROM audit_log WHERE seq IN (1700, 1701, 2100)");
    await tamper("UPDATE audit_log SET actor = 'mallory' WHERE seq = 2500");
    const expected = await oneAtATime();
    expect(expected).toMatchObject({
      badRows: 4,
      gaps: [
        { from: 1700, to: 1701 },
        { from: 2100, to: 2100 },
      ],
    });

    for (const [pageSize, workers] of [
      [PAGE, 0],
      [PAGE, 1],
      [PAGE, 3],
      [7, 2],
      [5_000, 2],
    ] as const) {
      const report = await log.verify({ pageSize, workers });
      expect({ pageSize, workers, ...report }).toEqual({
        pageSize,
        workers,
        ...expected,
        checkpoints: expected.checkpoints.map((check) => ({ ...check, source: "postgres" })),
        signatures: [],
        fromSeq: 1,
      });
    }
  });

  it("stops with the column's error when a worker meets a value it cannot read, as on one thread", async () => {
    await tamper("UPDATE audit_log SET at_us = 9007199254740993 WHERE seq = 1850");

    for (const workers of [0, 2]) {
      await expect(log.verify({ pageSize: PAGE, workers })).rejects.toMatchObject({
        kind: "internal",
        message: expect.stringMatching(/9007199254740993 is not a safe integer/),
      });
    }
  });
});
